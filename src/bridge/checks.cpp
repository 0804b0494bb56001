// The checks every protocol reader shares. The layout arithmetic is arrayport/layout.hpp's; these
// name the argument and the producer.
#include "bridge/checks.hpp"

#include "cuda/current_stream.hpp"

#include <arrayport/dtype.hpp>
#include <arrayport/python/api.hpp>
#include <arrayport/runtime.hpp>

namespace arrayport::bridge {
namespace {

std::string from(PyObject* obj) { return " (from " + python::detail::type_name(obj) + ")"; }

[[noreturn]] void fail_layout(const constraints& c, PyObject* obj, const layout_info& l,
                              const std::int64_t* shape, const std::int64_t* strides, int ndim,
                              std::int64_t itemsize) {
  throw value_error(layout_message(c.name, l, shape, strides, ndim, itemsize) + from(obj));
}

}  // namespace

std::string shape_string(const std::int64_t* shape, int ndim) {
  std::string s = "(";
  for (int i = 0; i < ndim; ++i) {
    s += shape[i] < 0 ? std::string("*") : std::to_string(shape[i]);
    s += ndim == 1 ? "," : i + 1 < ndim ? ", " : "";
  }
  return s + ")";
}

void fail_type(const constraints& c, PyObject* obj, const std::string& msg) {
  throw type_error(std::string(c.name) + ": " + msg + from(obj));
}
void fail_value(const constraints& c, PyObject* obj, const std::string& msg) {
  throw value_error(std::string(c.name) + ": " + msg + from(obj));
}
void fail_buffer(const constraints& c, PyObject* obj, const std::string& msg) {
  throw buffer_error(std::string(c.name) + ": " + msg + from(obj));
}
void producer_failed(const constraints& c, PyObject* obj, const char* what) {
  python::detail::ensure_error_set(c.name, obj, what);
#if PY_VERSION_HEX >= 0x030B0000
  // The producer's exception stands; a note (PEP 678) names the argument and the call it made.
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  PyErr_NormalizeException(&type, &value, &trace);
  if (value) {
    const std::string note = std::string(c.name) + ": raised by " + what + " of " +
                             (obj ? python::detail::type_name(obj) : std::string("the producer"));
    if (PyObject* done = PyObject_CallMethod(value, "add_note", "s", note.c_str())) Py_DECREF(done);
    PyErr_Clear();  // an exception that takes no note keeps its own message alone
  }
  PyErr_Restore(type, value, trace);
#endif
  throw python::error_already_set();
}

void require_compact_strides(const constraints& c, PyObject* obj, const std::int64_t* shape,
                             int ndim, std::int64_t* strides, std::int64_t itemsize) {
  if (!compact_strides(shape, ndim, strides, itemsize))
    fail_layout(c, obj, measure_layout(shape, nullptr, ndim, itemsize), shape, nullptr, ndim,
                itemsize);
}

void check_geometry(const constraints& c, PyObject* obj, const arrayport_view_t& v) {
  const layout_info l = measure_layout(v);
  if (!l.ok())
    fail_layout(c, obj, l, v.shape, v.strides, v.ndim,
                static_cast<std::int64_t>(arrayport::dtype::from_c(v.dtype).itemsize()));
  if (l.count == 0) return;
  if (!v.data) fail_value(c, obj, "data pointer is NULL but the array has elements");
  if (!fits_address_space(v.data, l))
    fail_value(c, obj,
               "shape " + shape_string(v.shape, v.ndim) + " at address " +
                   std::to_string(reinterpret_cast<std::uintptr_t>(v.data)) + " reaches bytes " +
                   std::to_string(l.lo) + " to " + std::to_string(l.hi) +
                   " from it: past the ends of the address space");
}

void check_constraints(const constraints& c, PyObject* obj, arrayport_view_t& v) {
  if (c.n_dtypes) {
    const arrayport::dtype got = arrayport::dtype::from_c(v.dtype);
    bool ok = false;
    for (std::size_t i = 0; i < c.n_dtypes && !ok; ++i) ok = c.dtypes[i] == got;
    if (!ok) {
      std::string expected;
      for (std::size_t i = 0; i < c.n_dtypes; ++i)
        expected +=
            (i ? (i + 1 == c.n_dtypes ? " or " : ", ") : "") + std::string(c.dtypes[i].name());
      fail_type(c, obj, "expected dtype " + expected + ", got " + arrayport::detail::describe(got));
    }
  }
  if (c.ndim >= 0 && v.ndim != c.ndim)
    fail_type(c, obj,
              "expected a " + std::to_string(c.ndim) + "-dimensional array, got " +
                  std::to_string(v.ndim) + " dimensions (shape " + shape_string(v.shape, v.ndim) +
                  ")");
  if (c.shape && c.ndim >= 0) {
    for (int i = 0; i < c.ndim; ++i)
      if (c.shape[i] >= 0 && c.shape[i] != v.shape[i])
        fail_value(c, obj,
                   "expected shape " + shape_string(c.shape, c.ndim) + ", got " +
                       shape_string(v.shape, v.ndim));
  }
  if (c.layout == python::order::c && !is_contiguous(v.shape, v.strides, v.ndim, true))
    fail_value(c, obj, "expected a C-contiguous array, got strides that are not");
  if (c.layout == python::order::f && !is_contiguous(v.shape, v.strides, v.ndim, false))
    fail_value(c, obj, "expected a Fortran-contiguous array, got strides that are not");
  if (c.where != python::reach::any) {
    auto kind = static_cast<memory_kind>(v.memory_kind);
    const bool host_needed = c.where == python::reach::host;
    bool ok = host_needed ? is_host_accessible(kind) : is_device_accessible(kind);
    if (!ok && kind == memory_kind::host && v.data) {
      // Host memory from the buffer protocol or DLPack kCPU may really be pinned or managed
      // memory (a NumPy view of an arrayport array): ask CUDA before refusing it.
      const runtime::pointer_info info = runtime::query_pointer(v.data);
      if (info.kind != memory_kind::host) {
        v.memory_kind = static_cast<std::uint32_t>(info.kind);
        v.device = dlpack_device(info.kind, info.device < 0 ? 0 : info.device);
        ok = true;
      }
    }
    if (!ok)
      fail_value(c, obj,
                 std::string("expected memory reachable from the ") +
                     (host_needed ? "host" : "device") + ", got " + std::string(to_string(kind)) +
                     " memory");
  }
  if (c.writable && (v.flags & ARRAYPORT_VIEW_READONLY))
    fail_buffer(c, obj, "expected a writable array, got a read-only one");
}

stream_handle consumer_stream(const python::acquire_options& o) noexcept {
  return o.stream_given ? o.stream : ext::current_stream().handle;
}

void fill_view(arrayport_view_t& v, void* data, int ndim, std::int64_t* extents,
               arrayport_dtype_t dtype, memory_kind kind, int device, bool readonly,
               PyObject* owner) noexcept {
  c_view_place place{static_cast<std::uint32_t>(kind), dlpack_device(kind, device)};
  place.flags = readonly ? ARRAYPORT_VIEW_READONLY : 0u;
  place.owner = owner;
  fill_c_view(v, data, dtype, extents, extents + ndim, ndim, place);
}

}  // namespace arrayport::bridge
