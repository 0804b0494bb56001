// The dispatcher: the producer's type picks the protocol, fastest first, and the choice is cached
// per type (type_cache.hpp):
//   1. arrayport.Array (exact type; the view is read straight out of the object);
//   2. the DLPack C exchange API (exchange.hpp, PyTorch >= 2.10);
//   3. a CuPy ndarray from its struct, with __dlpack__'s stream semantics (cupy.hpp);
//   4. a ready JAX array for a call-scoped read-only view, through its interface (jax.hpp);
//   5. the buffer protocol (memoryview, bytes, array.array; NumPy arrays from their struct);
//   6. __dlpack__ (versioned first, legacy on TypeError; JAX's exporter for JAX) (dlpack.hpp);
//   7. __cuda_array_interface__ (v3, and PyTorch's v2) (cai.hpp).
// Then the geometry and the caller's constraints are checked (checks.hpp). This file also holds
// the C API's entries that reach the engine (python/api.h).
#include "bridge/consume.hpp"

#include "bridge/buffer.hpp"
#include "bridge/cai.hpp"
#include "bridge/checks.hpp"
#include "bridge/cupy.hpp"
#include "bridge/dlpack.hpp"
#include "bridge/exchange.hpp"
#include "bridge/jax.hpp"
#include "bridge/type_cache.hpp"
#include "common/errors.hpp"

#include <arrayport/python/api.hpp>
#include <arrayport/runtime/stream.hpp>

#include <cstdio>
#include <cstring>
#include <string>

namespace arrayport::bridge {

using python::protocol_array, python::protocol_exchange, python::protocol_buffer;
using python::protocol_dlpack, python::protocol_cai, python::protocol_cupy;

namespace {

// Whether the protocol's reader named the producer's own stream in the view, as it does with
// o.producer_stream: CuPy's struct, and the exchange API for memory a GPU works on. Every other
// producer is on arrayport's current stream, where it was ordered.
bool names_producer_stream(std::uint32_t protocol, const arrayport_view_t& v) noexcept {
  return protocol == protocol_cupy || (protocol == protocol_exchange &&
                                       is_gpu_resident(static_cast<memory_kind>(v.memory_kind)));
}

void from_array(held& a, PyObject* obj, const arrayport_python_api_t& api) {
  a.view = *reinterpret_cast<const arrayport_view_t*>(reinterpret_cast<const char*>(obj) +
                                                      api.array_view_offset);
  a.view.owner = obj;
  a.from = held::source::reference;
}

// The buffer protocol and the device protocols after it, for what the faster paths left.
void acquire_rest(held& a, PyObject* obj, const python::constraints& c,
                  const python::acquire_options& o, const type_entry& type, std::uint32_t offered) {
  std::uint32_t rest = offered & ~protocol_cupy;
  if (offered & protocol_cupy) {
    if (cupy().state < 0) forget_protocol(Py_TYPE(obj), protocol_cupy);
    if (!rest)
      fail_buffer(c, obj,
                  "this CuPy array cannot be read from its struct (a layout or dtype "
                  "arrayport does not know): expected another protocol to be allowed");
  }
  bool refused_buffer = false;
  if (rest & protocol_buffer) {
    try {
      if (!type.numpy || !from_numpy(a, c, obj)) from_buffer(a, c, obj);
      a.protocol = protocol_buffer;
    } catch (const python::error_already_set&) {
      // The exporter refused its buffer. CuPy does for memory the CPU cannot reach: take the
      // device protocols it also offers. NumPy refuses some dtypes (datetime64): its error
      // stands, and so does any error that is not a refusal (KeyboardInterrupt, MemoryError).
      if (!(rest & (protocol_dlpack | protocol_cai)) || type.numpy ||
          !(PyErr_ExceptionMatches(PyExc_BufferError) || PyErr_ExceptionMatches(PyExc_TypeError) ||
            PyErr_ExceptionMatches(PyExc_ValueError)))
        throw;
      PyErr_Clear();
      rest &= ~protocol_buffer;
      refused_buffer = true;
    }
  }
  if (a.protocol == 0 && (rest & protocol_dlpack)) {
    from_dlpack(a, c, obj, type, consumer_stream(o), o.sync);
    a.protocol = protocol_dlpack;
    const layout_status geometry = measure_layout(a.view).status;
    if ((rest & protocol_cai) && (geometry == layout_status::stride_too_large ||
                                  geometry == layout_status::span_too_large)) {
      // CuPy (14 and before) exports negative strides through DLPack divided as unsigned
      // numbers (2^62 - 1 for -1); its CUDA array interface states them right.
      a.drop_tensor();
      from_cai(a, c, obj, consumer_stream(o), o.sync);
      a.protocol = protocol_cai;
    }
  } else if (a.protocol == 0) {
    from_cai(a, c, obj, consumer_stream(o), o.sync);
    a.protocol = protocol_cai;
  }
  // Refused for memory the CPU cannot reach: this type's buffers are not asked for again.
  if (refused_buffer && !is_host_accessible(static_cast<memory_kind>(a.view.memory_kind)))
    forget_protocol(Py_TYPE(obj), protocol_buffer);
}

// acquire() with the producer type's entry looked up (once per call: borrow() takes it too).
void acquire_with(held& a, PyObject* obj, const python::constraints& c,
                  const python::acquire_options& o, const type_entry& type) {
  std::uint32_t available = type.protocols;
  if (!available) {
    // Duck-typed objects may carry the interface as an instance attribute (not cacheable).
    if (PyObject_HasAttrString(obj, "__dlpack__") == 1) available |= protocol_dlpack;
    if (PyObject_HasAttrString(obj, "__cuda_array_interface__") == 1) available |= protocol_cai;
  }
  const std::uint32_t offered = available & o.protocols;
  if (!offered) {
    std::string what = available ? "none of the protocols allowed here"
                                 : "no array protocol (buffer protocol, __dlpack__ or "
                                   "__cuda_array_interface__)";
    throw python::not_an_array(std::string(c.name) + ": expected an array, got " +
                               python::detail::type_name(obj) + ", which offers " + what);
  }
  Py_INCREF(obj);
  a.owner = obj;
  a.from = held::source::reference;
  if (offered & protocol_array) {
    from_array(a, obj, *python::loaded_api());
    a.protocol = protocol_array;
  } else if (offered & protocol_exchange) {
    from_exchange(a, c, obj, *type.exchange, o);
    a.protocol = protocol_exchange;
  } else if ((offered & protocol_cupy) && from_cupy(a, obj, o)) {
    a.protocol = protocol_cupy;
  } else if (type.jax && o.call_scoped && o.reads_only && !c.writable && (offered & protocol_cai) &&
             from_jax_ready(a, c, obj)) {
    a.protocol = protocol_cai;
  } else {
    acquire_rest(a, obj, c, o, type, offered);
  }
  // Asked before check_constraints, which may refine host memory to the kind CUDA says it is.
  const bool named = names_producer_stream(a.protocol, a.view);
  if (a.protocol != protocol_array) check_geometry(c, obj, a.view);
  check_constraints(c, obj, a.view);
  if (a.protocol == protocol_array && o.sync) order_array_stream(a.view, consumer_stream(o));
  if (o.producer_stream && !named) a.view.stream = consumer_stream(o);
}

// A typed call-scoped parameter's view with nothing held (CuPy from its struct, a ready JAX
// array's interface, the exchange API's non-owning tensor): its protocol bit, or 0 (no error
// set) when acquire() must decide.
std::uint32_t borrow_from(PyObject* obj, const python::constraints& c,
                          const python::acquire_options& o, const type_entry& type,
                          arrayport_view_t& v, std::int64_t* ext) noexcept {
  if (!borrowable(c) || !(o.protocols & (protocol_cupy | protocol_cai | protocol_exchange)))
    return 0;
  if (type.type == cupy().array_type)
    return (o.protocols & protocol_cupy) && cupy_borrow(obj, c, o, v, ext) ? protocol_cupy : 0;
  if (type.type == jax_array_type())
    return (o.protocols & protocol_cai) && jax_borrow(obj, c, v, ext) ? protocol_cai : 0;
  return type.exchange && (o.protocols & protocol_exchange) &&
                 exchange_borrow(obj, *type.exchange, c, o, v, ext)
             ? protocol_exchange
             : 0;
}

// borrow_from, with the view's stream named for o.producer_stream as acquire_with names it.
std::uint32_t borrow_with(PyObject* obj, const python::constraints& c,
                          const python::acquire_options& o, const type_entry& type,
                          arrayport_view_t& v, std::int64_t* ext) noexcept {
  const std::uint32_t p = borrow_from(obj, c, o, type, v, ext);
  if (p && o.producer_stream && !names_producer_stream(p, v)) v.stream = consumer_stream(o);
  return p;
}

std::string hex(std::uint32_t bits) {
  char text[9];
  std::snprintf(text, sizeof text, "%x", bits);
  return text;
}

}  // namespace

void order_array_stream(const arrayport_view_t& v, stream_handle consumer) {
  if (python::ready_on(v, consumer)) return;
  const bool on_a_gpu = is_gpu_resident(static_cast<memory_kind>(v.memory_kind));
  runtime::order_streams(v.stream, on_a_gpu ? v.device.device_id : -1, consumer, -1);
}

void acquire(held& a, PyObject* obj, const python::constraints& c,
             const python::acquire_options& o) {
  if (!obj) throw value_error(std::string(c.name) + ": expected an array, got NULL");
  acquire_with(a, obj, c, o, lookup_type(Py_TYPE(obj)));
}

python::acquired acquire_here(PyObject* obj, const python::constraints& c,
                              const python::acquire_options& o) {
  python::acquired a;
  if (obj && python::detail::acquire_access::inline_path(a, obj, c, o)) return a;
  held* h = make_held();
  try {
    acquire(*h, obj, c, o);
  } catch (...) {
    free_held(h);
    throw;
  }
  python::detail::acquire_access::adopt(a, h->view, h, h->protocol);
  return a;
}

void read_request(const arrayport_acquire_request_t* request, python::constraints& c,
                  python::acquire_options& o) {
  constexpr std::size_t known = sizeof(arrayport_acquire_request_t);
  if (!request || request->size < ARRAYPORT_ACQUIRE_REQUEST_SIZE_1_2)
    throw value_error("acquire_view: expected a request of at least " +
                      std::to_string(ARRAYPORT_ACQUIRE_REQUEST_SIZE_1_2) + " bytes, got " +
                      (request ? std::to_string(request->size) + " bytes" : std::string("NULL")));
  // A longer request is from a newer arrayport: its extra fields must be their defaults (zero).
  const auto* bytes = reinterpret_cast<const unsigned char*>(request);
  for (std::size_t i = known; i < request->size; ++i)
    if (bytes[i] != 0)
      throw value_error("acquire_view: the request (" + std::to_string(request->size) +
                        " bytes) asks for options this arrayport._core (C API " +
                        std::to_string(ARRAYPORT_PYTHON_API_MAJOR) + "." +
                        std::to_string(ARRAYPORT_PYTHON_API_MINOR) + ", " + std::to_string(known) +
                        " bytes) does not know: expected the installed arrayport to be as new "
                        "as the extension");
  arrayport_acquire_request_t r{};
  std::memcpy(&r, request, request->size < known ? request->size : known);
  const std::uint32_t f = r.flags;
  // A bit this _core does not know is a constraint or option it would silently not apply.
  constexpr std::uint32_t known_flags = ARRAYPORT_ACQUIRE_WRITABLE | ARRAYPORT_ACQUIRE_HOST |
                                        ARRAYPORT_ACQUIRE_DEVICE | ARRAYPORT_ACQUIRE_C_ORDER |
                                        ARRAYPORT_ACQUIRE_F_ORDER;
  constexpr std::uint32_t known_options =
      ARRAYPORT_REQUEST_STREAM | ARRAYPORT_REQUEST_NO_SYNC | ARRAYPORT_REQUEST_CALL_SCOPED |
      ARRAYPORT_REQUEST_READS_ONLY | ARRAYPORT_REQUEST_BORROW | ARRAYPORT_REQUEST_PRODUCER_STREAM;
  if ((f & ~known_flags) || (r.options & ~known_options))
    throw value_error("acquire_view: the request has flags 0x" + hex(f & ~known_flags) +
                      " and options 0x" + hex(r.options & ~known_options) +
                      " that this arrayport._core does not know: expected the installed "
                      "arrayport to be as new as the extension");
  if ((f & ARRAYPORT_ACQUIRE_HOST) && (f & ARRAYPORT_ACQUIRE_DEVICE))
    throw value_error("acquire_view: flags ask for both host-only and device-only reach");
  if ((f & ARRAYPORT_ACQUIRE_C_ORDER) && (f & ARRAYPORT_ACQUIRE_F_ORDER))
    throw value_error("acquire_view: flags ask for both C and Fortran order");
  if ((r.options & ARRAYPORT_REQUEST_STREAM) && (r.options & ARRAYPORT_REQUEST_PRODUCER_STREAM))
    throw value_error("acquire_view: options ask for both a given stream and the producer's");
  if (r.ndim < -1 || r.ndim > ARRAYPORT_MAX_NDIM || (r.n_dtypes && !r.dtypes))
    throw value_error("acquire_view: expected ndim -1 to 64 and dtypes for n_dtypes, got ndim " +
                      std::to_string(r.ndim) + " and " + std::to_string(r.n_dtypes) + " dtypes");
  c.name = r.name ? r.name : "array";
  static_assert(sizeof(arrayport::dtype) == sizeof(arrayport_dtype_t));  // dtype.hpp: one layout
  c.dtypes = reinterpret_cast<const arrayport::dtype*>(r.dtypes);
  c.n_dtypes = r.n_dtypes;
  c.ndim = r.ndim;
  c.shape = r.ndim >= 0 ? r.shape : nullptr;
  python::apply_acquire_flags(c, f);
  o.stream = r.stream;
  o.stream_given = (r.options & ARRAYPORT_REQUEST_STREAM) != 0;
  o.sync = (r.options & ARRAYPORT_REQUEST_NO_SYNC) == 0;
  o.call_scoped = (r.options & (ARRAYPORT_REQUEST_CALL_SCOPED | ARRAYPORT_REQUEST_BORROW)) != 0;
  o.reads_only = (r.options & ARRAYPORT_REQUEST_READS_ONLY) != 0;
  o.borrow = (r.options & ARRAYPORT_REQUEST_BORROW) != 0;
  o.producer_stream = (r.options & ARRAYPORT_REQUEST_PRODUCER_STREAM) != 0;
  o.protocols = r.protocols ? (r.protocols & python::protocol_all) : python::protocol_all;
}

namespace {

int acquire_view(PyObject* obj, const arrayport_acquire_request_t* request,
                 arrayport_acquired_t* out) noexcept {
  python::constraints c;
  python::acquire_options o;
  try {
    if (!out) throw value_error("acquire_view: out must not be NULL");
    read_request(request, c, o);
  } catch (...) {
    ext::raise_current_exception();
    return ARRAYPORT_ACQUIRE_FAILED;
  }
  held* h = nullptr;
  try {
    if (!obj) throw value_error(std::string(c.name) + ": expected an array, got NULL");
    const type_entry type = lookup_type(Py_TYPE(obj));
    // Fields a borrowed view leaves alone (version, stream) read as a fresh view's.
    fill_c_view(out->view, nullptr, {}, nullptr, nullptr, 0, {});
    out->reserved = 0;
    if (o.borrow) {
      if (const std::uint32_t p = borrow_with(obj, c, o, type, out->view, out->extents)) {
        out->handle = nullptr;
        out->protocol = p;
        return ARRAYPORT_ACQUIRE_OK;
      }
    }
    h = make_held();
    acquire_with(*h, obj, c, o, type);
    out->view = h->view;
    out->handle = h;
    out->protocol = h->protocol;
    return ARRAYPORT_ACQUIRE_OK;
  } catch (const python::not_an_array& e) {
    free_held(h);
    python::detail::set_message(PyExc_TypeError, e.what());
    return ARRAYPORT_ACQUIRE_NOT_AN_ARRAY;
  } catch (const type_error& e) {
    free_held(h);
    python::detail::set_message(PyExc_TypeError, e.what());
    return ARRAYPORT_ACQUIRE_REFUSED;
  } catch (const value_error& e) {
    free_held(h);
    python::detail::set_message(PyExc_ValueError, e.what());
    return ARRAYPORT_ACQUIRE_REFUSED;
  } catch (const buffer_error& e) {
    free_held(h);
    python::detail::set_message(PyExc_BufferError, e.what());
    return ARRAYPORT_ACQUIRE_REFUSED;
  } catch (...) {
    free_held(h);
    ext::raise_current_exception();
    return ARRAYPORT_ACQUIRE_FAILED;
  }
}

// The 1.0 entry: flags only, the stream ordering of arrayport.view().
int acquire_for_c(PyObject* obj, const char* name, std::uint32_t flags, arrayport_view_t* out,
                  void** handle) noexcept {
  if (!out || !handle) {
    PyErr_SetString(PyExc_ValueError, "acquire: out and handle must not be NULL");
    return -1;
  }
  if ((flags & ARRAYPORT_ACQUIRE_HOST) && (flags & ARRAYPORT_ACQUIRE_DEVICE)) {
    PyErr_SetString(PyExc_ValueError,
                    "acquire: flags ask for both host-only and device-only reach");
    return -1;
  }
  arrayport_acquire_request_t r{};
  r.size = sizeof r;
  r.flags = flags & ~ARRAYPORT_ACQUIRE_F_ORDER;
  r.name = name;
  r.ndim = -1;
  arrayport_acquired_t a;
  if (acquire_view(obj, &r, &a) != ARRAYPORT_ACQUIRE_OK) return -1;
  *out = a.view;
  *handle = a.handle;
  return 0;
}

// The 1.3 entry: borrow_with for a typed parameter, with no request to read and check.
int borrow_typed(PyObject* obj, arrayport_dtype_t dtype, std::int32_t ndim, std::uint32_t flags,
                 arrayport_view_t* view, std::int64_t* extents) noexcept {
  constexpr std::uint32_t known = ARRAYPORT_ACQUIRE_WRITABLE | ARRAYPORT_ACQUIRE_HOST |
                                  ARRAYPORT_ACQUIRE_DEVICE | ARRAYPORT_BORROW_PRODUCER_STREAM;
  if (!obj || !view || !extents || ndim < 0 || ndim > 8 || (flags & ~known) ||
      (flags & ARRAYPORT_ACQUIRE_HOST && flags & ARRAYPORT_ACQUIRE_DEVICE))
    return 0;
  const arrayport::dtype dt = arrayport::dtype::from_c(dtype);
  python::constraints c;
  c.dtypes = &dt;
  c.n_dtypes = 1;
  c.ndim = ndim;
  python::apply_acquire_flags(c, flags);
  python::acquire_options o;
  o.call_scoped = o.borrow = true;
  o.reads_only = !c.writable;
  o.producer_stream = (flags & ARRAYPORT_BORROW_PRODUCER_STREAM) != 0;
  try {
    const type_entry type = lookup_type(Py_TYPE(obj));
    const std::uint32_t p = borrow_with(obj, c, o, type, *view, extents);
    // Its next arguments are read inline (parameter.hpp), with no call into _core.
    if (p == protocol_exchange) publish_exchange_type(type.type, type.exchange);
    return p != 0;
  } catch (...) {  // describing a new type failed: acquire_view asks again and reports it
    PyErr_Clear();
    return 0;
  }
}

void release_for_c(void* handle) noexcept { free_held(static_cast<held*>(handle)); }

int traverse_for_c(void* handle, visitproc visit, void* arg) {
  return handle ? static_cast<const held*>(handle)->traverse(visit, arg) : 0;
}

}  // namespace

void fill_api(arrayport_python_api_t& api) noexcept {
  api.acquire = acquire_for_c;
  api.release = release_for_c;
  api.acquire_view = acquire_view;
  api.traverse = traverse_for_c;
  api.numpy_array_type = &numpy_exact_type();
  api.borrow_typed = borrow_typed;
  api.exchange_types = exchange_types();
}

}  // namespace arrayport::bridge
