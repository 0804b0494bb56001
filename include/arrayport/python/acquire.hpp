// The consume bridge's face: any Python array -> a checked strided_view, held by an RAII
// `acquired`.
//
// The engine (every protocol reader: the DLPack C exchange API, the buffer protocol, __dlpack__,
// __cuda_array_interface__, CuPy's and JAX's arrays, the per-type cache) is compiled once, in
// arrayport._core (src/bridge/), and reached through the C API's acquire_view (python/api.h),
// fetched once per process. Only producers with a public ABI are read here, inline: an exact
// arrayport.Array and an exact numpy.ndarray that meet the constraints; anything else, and any
// violation (whose message the engine writes), goes to the engine. The view stays valid, and the
// producer alive, for as long as the `acquired` lives. Violations are type_error / value_error /
// buffer_error naming the argument, what was expected and what came.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/python/api.hpp>
#include <arrayport/python/constraints.hpp>
#include <arrayport/python/numpy.hpp>
#include <arrayport/python/spellings.hpp>

#include <arrayport/c/view.h>
#include <arrayport/layout.hpp>
#include <arrayport/view.hpp>

#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

namespace ARRAYPORT_NAMESPACE {
namespace python {

class acquired;
acquired acquire(PyObject* obj, const constraints& c = {}, const acquire_options& o = {});

namespace detail {
struct acquire_access;
}

/// An acquired view: releases what the producer exported and the producer reference when it
/// dies. Move-only. Must be destroyed with the GIL held.
class acquired {
 public:
  acquired() noexcept { reset(); }
  ~acquired() { release(); }
  acquired(const acquired&) = delete;
  acquired& operator=(const acquired&) = delete;
  acquired(acquired&& other) noexcept { take(other); }
  acquired& operator=(acquired&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }

  explicit operator bool() const noexcept { return m_active; }
  strided_view view() const noexcept { return strided_view(m.view); }
  const arrayport_view_t& c_view() const noexcept { return m.view; }
  /// The producer (the object passed to acquire): a borrowed reference valid while this lives.
  PyObject* owner() const noexcept { return static_cast<PyObject*>(m.view.owner); }
  /// The protocol the view came through (one protocol bit).
  std::uint32_t protocol_used() const noexcept { return m.protocol; }

  /// The typed view (dtype, rank, space and writability checked again, cheaply).
  template <class T, std::size_t Rank, class Space = any_space>
  arrayport::view<T, Rank, Space> as(const char* what = "array") const {
    return view().template as<T, Rank, Space>(what);
  }

  /// Drops the view now (releases the buffer, calls the DLPack deleter, drops the producer).
  void release() noexcept {
    if (!m_active) return;
    if (m.handle) detail::api_slot()->release(m.handle);
    Py_CLEAR(m_ref);
    reset();
  }

  /// Visits the Python objects this holds strong references to (the producer, a buffer's
  /// exporter), for the tp_traverse of a GC-tracked object that keeps an `acquired`.
  int traverse(visitproc visit, void* arg) const {
    Py_VISIT(m_ref);
    if (m.handle && detail::api_slot()->traverse)
      return detail::api_slot()->traverse(m.handle, visit, arg);
    return 0;
  }

 private:
  friend struct detail::acquire_access;

  void reset() noexcept {
    std::memset(&m.view, 0, sizeof m.view);
    m.view.version = {ARRAYPORT_C_ABI_VERSION_MAJOR, ARRAYPORT_C_ABI_VERSION_MINOR};
    m.handle = nullptr;
    m.protocol = 0;
    m_active = false;
  }
  void take(acquired& other) noexcept {
    m.view = other.m.view;
    m.handle = other.m.handle;
    m.protocol = other.m.protocol;
    m_active = other.m_active;
    m_ref = std::exchange(other.m_ref, nullptr);
    if (other.m.view.shape == other.m.extents) {  // extents read inline or borrowed
      std::memcpy(m.extents, other.m.extents, sizeof(std::int64_t) * 2 * std::size_t(m.view.ndim));
      m.view.shape = m.extents;
      m.view.strides = m.extents + m.view.ndim;
    }
    other.reset();
  }

  arrayport_acquired_t m;     // the view, the engine's handle (or none), inline extents
  PyObject* m_ref = nullptr;  // the producer, for a view read inline here
  bool m_active = false;
};

namespace detail {

// The engine's table: C API 1.2 or newer, importing arrayport._core the first time.
inline const arrayport_python_api_t& engine_api() {
  const arrayport_python_api_t* api = api_slot();
  if (api && api->abi_minor >= 2) return *api;
  api = &import_api();
  if (api->abi_minor < 2) {
    PyErr_Format(PyExc_ImportError,
                 "arrayport._core exports C API version %u.%u, but this extension needs %d.%d or "
                 "newer (the compiled consume engine): upgrade arrayport",
                 api->abi_major, api->abi_minor, ARRAYPORT_PYTHON_API_MAJOR, 2);
    throw error_already_set();
  }
  return *api;
}

// Whether a view meets the constraints, without asking CUDA and without messages: the inline
// path takes only what it can decide alone; the engine decides, and says, the rest.
inline bool meets(const constraints& c, const arrayport_view_t& v) noexcept {
  if (c.n_dtypes) {
    const arrayport::dtype got = arrayport::dtype::from_c(v.dtype);
    bool ok = false;
    for (std::size_t i = 0; i < c.n_dtypes && !ok; ++i) ok = c.dtypes[i] == got;
    if (!ok) return false;
  }
  if (c.ndim >= 0 && v.ndim != c.ndim) return false;
  if (c.shape && c.ndim >= 0)
    for (int i = 0; i < c.ndim; ++i)
      if (c.shape[i] >= 0 && c.shape[i] != v.shape[i]) return false;
  if (c.layout != order::any && !is_contiguous(v.shape, v.strides, v.ndim, c.layout == order::c))
    return false;
  const auto kind = static_cast<memory_kind>(v.memory_kind);
  if ((c.where == reach::host && !is_host_accessible(kind)) ||
      (c.where == reach::device && !is_device_accessible(kind)))
    return false;
  return !(c.writable && (v.flags & ARRAYPORT_VIEW_READONLY));
}

struct acquire_access {
  // An exact Array or numpy.ndarray that meets `c`, read here; false for the engine to decide.
  ARRAYPORT_FLATTEN static bool inline_path(acquired& a, PyObject* obj, const constraints& c,
                                            const acquire_options& o) noexcept {
    const arrayport_python_api_t* api = api_slot();
    if (!api || (o.producer_stream && o.stream_given)) return false;  // the engine refuses that
    PyTypeObject* type = Py_TYPE(obj);
    arrayport_view_t& v = a.m.view;
    if (type == api->array_type) {
      if (!(o.protocols & protocol_array)) return false;
      // An Array's view was checked when the Array was made (geometry, dtype).
      v = *reinterpret_cast<const arrayport_view_t*>(reinterpret_cast<const char*>(obj) +
                                                     api->array_view_offset);
      v.owner = obj;
      a.m.protocol = protocol_array;
    } else if (api->abi_minor >= 2 && type == *api->numpy_array_type && type &&
               (o.protocols & protocol_buffer)) {
      const auto* n = reinterpret_cast<const numpy::array_fields*>(obj);
      arrayport::dtype dt;
      if (!numpy::described(n, dt) || n->nd > 8 ||
          !numpy::read_geometry(n, static_cast<std::int64_t>(dt.itemsize()), a.m.extents,
                                a.m.extents + n->nd))
        return false;
      v.data = n->data;
      v.ndim = n->nd;
      v.shape = a.m.extents;
      v.strides = a.m.extents + n->nd;
      v.dtype = dt.to_c();
      v.memory_kind = static_cast<std::uint32_t>(memory_kind::host);
      v.device = {ARRAYPORT_DEVICE_CPU, 0};
      v.flags = (n->flags & numpy::writeable) ? 0u : ARRAYPORT_VIEW_READONLY;
      v.owner = obj;
      a.m.protocol = protocol_buffer;
    } else {
      return false;
    }
    if (!meets(c, v)) return false;
    // An Array in GPU-reachable memory ready on another stream than the consumer's: the engine
    // makes the consumer's stream wait for it. arrayport's own producers state arrayport's
    // current stream as theirs.
    const bool host = v.memory_kind == static_cast<std::uint32_t>(memory_kind::host);
    if ((o.sync && !host) || o.producer_stream) {
      const stream_handle consumer = o.stream_given ? o.stream : current_stream();
      if (o.sync && !ready_on(v, consumer)) return false;
      if (o.producer_stream) v.stream = consumer;
    }
    Py_INCREF(obj);
    a.m_ref = obj;
    a.m_active = true;
    return true;
  }

  // A view and handle the engine made without a request (arrayport._core's own callers, which
  // reach it directly), as an acquired that releases the handle.
  static void adopt(acquired& a, const arrayport_view_t& v, void* handle,
                    std::uint32_t protocol) noexcept {
    a.m.view = v;
    a.m.handle = handle;
    a.m.protocol = protocol;
    a.m_active = true;
  }

  // Through the engine; throws what acquire() documents.
  static void engine_path(acquired& a, PyObject* obj, const constraints& c,
                          const acquire_options& o) {
    const arrayport_python_api_t& api = engine_api();
    arrayport_acquire_request_t r{};
    r.size = sizeof r;
    r.flags = acquire_flags(c);
    r.name = c.name;
    r.dtypes = reinterpret_cast<const arrayport_dtype_t*>(c.dtypes);  // one layout (dtype.hpp)
    r.n_dtypes = static_cast<std::uint32_t>(c.n_dtypes);
    r.ndim = c.ndim;
    r.shape = c.shape;
    r.options = (o.stream_given ? ARRAYPORT_REQUEST_STREAM : 0u) |
                (o.sync ? 0u : ARRAYPORT_REQUEST_NO_SYNC) |
                (o.call_scoped ? ARRAYPORT_REQUEST_CALL_SCOPED : 0u) |
                (o.reads_only ? ARRAYPORT_REQUEST_READS_ONLY : 0u) |
                (o.borrow && o.call_scoped ? ARRAYPORT_REQUEST_BORROW : 0u) |
                (o.producer_stream ? ARRAYPORT_REQUEST_PRODUCER_STREAM : 0u);
    r.protocols = o.protocols ? o.protocols : ARRAYPORT_PROTOCOL_NONE;
    r.stream = o.stream;
    const int rc = api.acquire_view(obj, &r, &a.m);
    if (rc == ARRAYPORT_ACQUIRE_OK) {
      a.m_active = true;
      return;
    }
    a.reset();
    rethrow(rc);
  }

  // The engine's failure as the C++ exception acquire() documents.
  [[noreturn]] static void rethrow(int rc) {
    if (rc != ARRAYPORT_ACQUIRE_NOT_AN_ARRAY && rc != ARRAYPORT_ACQUIRE_REFUSED)
      throw error_already_set();
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    const py_ref t = py_ref::steal(type), v = py_ref::steal(value), tb = py_ref::steal(trace);
    const py_ref text = py_ref::steal(v ? PyObject_Str(v.get()) : nullptr);
    const char* utf8 = text ? limited::utf8(text.get()) : nullptr;
    std::string message = utf8 ? utf8 : "array: refused";
    PyErr_Clear();
    if (rc == ARRAYPORT_ACQUIRE_NOT_AN_ARRAY) throw not_an_array(message);
    if (PyErr_GivenExceptionMatches(t.get(), PyExc_TypeError)) throw type_error(message);
    if (PyErr_GivenExceptionMatches(t.get(), PyExc_BufferError)) throw buffer_error(message);
    throw value_error(message);
  }
};

}  // namespace detail

/// Acquires a view of `obj`. Throws type_error / value_error / buffer_error for arrays that do not
/// meet `c` (or that no protocol describes: not_an_array), error_already_set when the producer
/// raised or arrayport._core could not be imported (ImportError).
inline acquired acquire(PyObject* obj, const constraints& c, const acquire_options& o) {
  acquired a;
  if (obj && detail::acquire_access::inline_path(a, obj, c, o)) return a;
  detail::acquire_access::engine_path(a, obj, c, o);
  return a;
}

/// A function argument as binding adapters (nanobind, pybind11) load it. Overloads: the strict
/// pass (convert == false) accepts only arrays that meet the constraints, so overloads on dtype
/// resolve; the convert pass accepts any array and keeps a violation to raise, with its precise
/// message, when the call starts. Objects that are not arrays are refused in both passes, for other
/// overloads to take.
class argument {
 public:
  bool load(PyObject* src, bool convert, const constraints& c, bool reads_only = false,
            bool borrow = false, bool producer_stream = false) noexcept {
    acquire_options o;
    o.call_scoped = true;
    o.reads_only = reads_only;
    o.borrow = borrow;
    o.producer_stream = producer_stream;
    try {
      m_held = acquire(src, c, o);
      m_error = nullptr;
      return true;
    } catch (const not_an_array&) {
      return false;
    } catch (const arrayport::error&) {
      if (!convert) return false;
      m_error = std::current_exception();
      return true;
    } catch (...) {
      PyErr_Clear();  // the producer raised, or memory ran out: not this overload
      return false;
    }
  }

  const acquired& held() const noexcept { return m_held; }
  bool failed() const noexcept { return m_error != nullptr; }

  /// Sets the Python error of a deferred violation; returns true if there was one (the adapter
  /// then throws its library's "error already set" exception).
  bool set_error_if_failed() const noexcept {
    if (!m_error) return false;
    try {
      std::rethrow_exception(m_error);
    } catch (...) {
      set_error_from_current_exception();
    }
    return true;
  }

 private:
  acquired m_held;
  std::exception_ptr m_error;
};

}  // namespace python
}  // namespace ARRAYPORT_NAMESPACE
