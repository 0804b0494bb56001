// Arrays made from foreign objects: arrayport.view(obj) (any array as an Array without a copy,
// through the consume engine of src/bridge/), cuda.register, and the C API table that other
// extension modules import (the engine fills its own entries).
#include "array/from_foreign.hpp"

#include "array/array.hpp"
#include "array/array_internal.hpp"
#include "cuda/current_stream.hpp"
#include "common/errors.hpp"
#include "bridge/consume.hpp"
#include "bridge/type_cache.hpp"

#include <arrayport/python/acquire.hpp>
#include <arrayport/python/limited_api.hpp>

#include <nanobind/stl/string.h>

#include <cstddef>
#include <new>
#include <string>
#include <utility>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {

// ---- the holder of an acquired view -----------------------------------------------------------
//
// What an Array over a foreign producer keeps as its base: the acquired view, and the producer
// with it. A GC-tracked object (a capsule is not), so that a producer that keeps a view of itself
// (x.me = arrayport.view(x)) makes a cycle the collector sees, frees, and releases exactly once.
struct holder_object {
  PyObject_HEAD bridge::held held;  // the engine acquires into it: no request, no C API hop
  arrayport_view_t view;  // what the Array views: held's, or cuda.register's pinned rewrite
  void* locked;           // pages cuda.register page-locked: unlocked before the producer goes
};

PyTypeObject* holder_type = nullptr;

void holder_release(holder_object* h) noexcept {
  runtime::host_unregister(std::exchange(h->locked, nullptr));
  h->held.release();  // the buffer or DLPack tensor, then the producer
}

int holder_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  return reinterpret_cast<holder_object*>(self)->held.traverse(visit, arg);
}

int holder_clear(PyObject* self) {
  holder_release(reinterpret_cast<holder_object*>(self));
  return 0;
}

void holder_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  auto* h = reinterpret_cast<holder_object*>(self);
  holder_release(h);
  h->held.~held();
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_Del(self);  // the type's tp_free: it has Py_TPFLAGS_HAVE_GC and no subclasses
  Py_DECREF(type);
}

PyObject* holder_new(PyTypeObject*, PyObject*, PyObject*) {
  PyErr_SetString(PyExc_TypeError, "cannot create arrayport._core._Held instances from Python");
  return nullptr;
}

PyType_Slot holder_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(holder_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(holder_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(holder_clear)},
    {Py_tp_new, reinterpret_cast<void*>(holder_new)},
    {Py_tp_doc, const_cast<char*>("What an Array over a foreign array holds: the acquired view "
                                  "and its producer (internal).")},
    {0, nullptr}};

PyType_Spec holder_spec = {"arrayport._core._Held", sizeof(holder_object), 0,
                           Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, holder_slots};

// A new holder with obj's view acquired straight into it (its view is the Array's until changed).
nb::object acquire_holder(PyObject* obj, const python::constraints& c,
                          const python::acquire_options& o) {
  auto* h = reinterpret_cast<holder_object*>(PyType_GenericAlloc(holder_type, 0));
  if (!h) throw nb::python_error();
  // PyType_GenericAlloc zeroed the object: held's constructor writes only the view's version.
  new (&h->held) bridge::held(bridge::held::zeroed_t{});
  nb::object holder = nb::steal(reinterpret_cast<PyObject*>(h));  // releases what a failure left
  bridge::acquire(h->held, obj, c, o);
  h->view = h->held.view;
  return holder;
}

holder_object* as_holder(nb::handle h) noexcept {
  return reinterpret_cast<holder_object*>(h.ptr());
}

// A producer's failure as nanobind's exception; one that set no error becomes a SystemError (a
// python_error without one would abort the process).
[[noreturn]] void throw_producer_error(nb::handle obj, const char* what) {
  python::detail::ensure_error_set(what, obj.ptr(), "a protocol call");
  throw nb::python_error();
}

std::uint32_t parse_protocol(nb::handle protocol) {
  if (protocol.is_none()) return python::protocol_all;
  const char* expected = "expected None, 'array', 'exchange', 'buffer', 'dlpack', 'cai' or 'cupy'";
  if (!PyUnicode_Check(protocol.ptr()))
    throw type_error(std::string("protocol: ") + expected + ", got " +
                     type_name_of(protocol.ptr()));
  const std::string name = nb::cast<std::string>(protocol);
  if (name == "array") return python::protocol_array;
  if (name == "exchange") return python::protocol_exchange;
  if (name == "buffer") return python::protocol_buffer;
  if (name == "dlpack") return python::protocol_dlpack;
  if (name == "cai") return python::protocol_cai;
  if (name == "cupy") return python::protocol_cupy;
  throw value_error(std::string("protocol: ") + expected + ", got '" + name + "'");
}

const char* protocol_name(std::uint32_t p) {
  switch (p) {
    case python::protocol_array: return "array";
    case python::protocol_exchange: return "exchange";
    case python::protocol_buffer: return "buffer";
    case python::protocol_dlpack: return "dlpack";
    case python::protocol_cai: return "cai";
    case python::protocol_cupy: return "cupy";
  }
  return "none";
}

// A holder of obj's view, acquired as view() and asarray() take foreign arrays.
nb::object holder_for_python(nb::handle obj, stream_handle stream, bool sync,
                             std::uint32_t protocols, bool call_scoped, bool reads_only = false) {
  python::acquire_options o;
  o.stream = stream;
  o.stream_given = true;
  o.sync = sync;
  o.call_scoped = call_scoped;
  o.reads_only = reads_only;
  o.protocols = protocols;
  python::constraints c;
  c.name = "obj";
  try {
    return acquire_holder(obj.ptr(), c, o);
  } catch (const python::error_already_set&) {
    throw_producer_error(obj, c.name);
  }
}

// An Array over a holder's view, keeping the holder (Array.base shows the producer).
nb::object array_holding(nb::handle holder) {
  PyObject* array = array_from_view(&as_holder(holder)->view, holder.ptr());
  if (!array) throw nb::python_error();
  return nb::steal(array);
}

nb::object register_host(nb::handle obj) {
  runtime::require_device("cuda.register");
  runtime::refuse_during_capture(current_stream().handle, "register (page-locking host memory)",
                                 "cudaHostRegister is not stream-ordered");
  python::constraints c;
  c.name = "register: obj";
  c.where = python::reach::any;  // device memory is refused below, naming what it is
  python::acquire_options o;
  o.protocols = python::protocol_all;
  // Page-locked in place for as long as an Array over it lives: the holder keeps the producer
  // alive and unlocks the pages before letting it go.
  nb::object holder;
  try {
    holder = acquire_holder(obj.ptr(), c, o);
  } catch (const python::error_already_set&) {
    throw_producer_error(obj, c.name);
  }
  holder_object* reg = as_holder(holder);
  arrayport_view_t v = reg->view;
  const auto kind = static_cast<memory_kind>(v.memory_kind);
  if (kind ==
      memory_kind::host) {  // refined: pageable, or pinned/managed the bridge did not ask about
    const runtime::pointer_info info = runtime::query_pointer(v.data);
    if (info.kind == memory_kind::pinned)
      throw value_error(
          "register: these pages are already page-locked (by another registration "
          "or a pinned allocation): expected pageable host memory, got pinned memory");
    if (info.kind != memory_kind::host)
      throw value_error("register: expected pageable host memory, got " +
                        std::string(to_string(info.kind)) +
                        " memory (already reachable from the GPU)");
  } else {
    throw value_error("register: expected pageable host memory, got " +
                      std::string(to_string(kind)) + " memory");
  }
  // The bytes the view spans (strides may be negative; layout.hpp); an empty view locks nothing.
  const layout_info span = check_layout("register: obj", v);
  const auto lo = reinterpret_cast<std::uintptr_t>(v.data) + static_cast<std::uintptr_t>(span.lo);
  if (span.count > 0) {
    try {
      runtime::host_register(reinterpret_cast<void*>(lo), static_cast<std::size_t>(span.span()));
    } catch (const cuda_error& e) {
      if (e.status_name() == "cudaErrorHostMemoryAlreadyRegistered")
        throw value_error(
            "register: these pages are already page-locked by another registration "
            "(small arrays can share pages: register the buffer they live in, or "
            "copy into pinned memory)");
      throw;
    }
    reg->locked = reinterpret_cast<void*>(lo);
  }
  reg->view = v;
  reg->view.memory_kind = static_cast<std::uint32_t>(memory_kind::pinned);
  reg->view.device = {ARRAYPORT_DEVICE_CUDA_HOST, 0};
  reg->view.stream = nullptr;
  return array_holding(holder);
}

// The view as an Array owning the holder; an Array is returned as it is.
nb::object view(nb::handle obj, nb::handle stream, nb::handle sync, nb::handle protocol) {
  const stream_handle s = parse_stream(stream, "view");
  const bool synced = bool_arg(sync.ptr(), "view", "sync");
  const std::uint32_t protocols = parse_protocol(protocol);
  if (is_array(obj.ptr()) && protocol.is_none()) {
    if (synced) bridge::order_array_stream(as_array(obj.ptr())->view, s);
    return nb::borrow(obj);
  }
  return array_holding(holder_for_python(obj, s, synced, protocols, false));
}

bool offers_array_protocol(nb::handle obj) {
  PyTypeObject* type = Py_TYPE(obj.ptr());
  if (is_array(obj.ptr()) || python::limited::has_buffer(type)) return true;
  // On the type first: a property that raises still offers the protocol, and view() reports
  // its error (an instance's hasattr would swallow it). Then the instance, for duck types.
  auto* t = reinterpret_cast<PyObject*>(type);
  for (const char* name : {"__dlpack__", "__cuda_array_interface__"})
    if (PyObject_HasAttrString(t, name) == 1) return true;
  return nb::hasattr(obj, "__dlpack__") || nb::hasattr(obj, "__cuda_array_interface__");
}

void current_stream_for_c(void** stream, int* device) {
  const current_stream_state s = current_stream();
  if (stream) *stream = s.handle;
  if (device) *device = s.device;
}

arrayport_python_api_t g_api{};

}  // namespace

nb::object view_foreign(PyObject* obj, stream_handle stream) {
  // Every protocol but the buffer protocol, which the caller has tried (CuPy refuses it for
  // device memory); the view lives only for the caller's call.
  constexpr std::uint32_t protocols = python::protocol_all & ~python::protocol_buffer;
  try {
    return array_holding(holder_for_python(obj, stream, true, protocols, true));
  } catch (const python::not_an_array&) {
    return nb::object();
  }
}

PyObject* acquired_producer(PyObject* base) noexcept {
  if (!base || Py_TYPE(base) != holder_type) return nullptr;
  return reinterpret_cast<holder_object*>(base)->held.owner;
}

void register_consume(nb::module_& m) {
  holder_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&holder_spec));  // kept for good
  if (!holder_type) throw nb::python_error();
  g_api.abi_major = ARRAYPORT_PYTHON_API_MAJOR;
  g_api.abi_minor = ARRAYPORT_PYTHON_API_MINOR;
  g_api.array_type = array_type;
  g_api.array_view_offset = static_cast<Py_ssize_t>(offsetof(array_object, view));
  g_api.current_stream = current_stream_for_c;
  g_api.array_from_view = array_from_view;
  g_api.cuda_error = m.attr("CudaError").ptr();
  g_api.out_of_memory_error = m.attr("OutOfMemoryError").ptr();
  g_api.no_device_error = m.attr("NoDeviceError").ptr();
  g_api.set_cuda_error = set_cuda_error_for_c;
  bridge::fill_api(g_api);
  python::detail::api_slot() = &g_api;  // this module's own acquire() calls reach the engine
  m.attr("_C_API") = nb::steal(PyCapsule_New(&g_api, ARRAYPORT_PYTHON_API_CAPSULE, nullptr));

  using namespace nb::literals;
  nb::module_ cuda = nb::borrow<nb::module_>(m.attr("cuda"));
  cuda.def("register", &register_host, nb::arg("obj").none(),
           "Page-locks obj's host memory in place (cudaHostRegister) and returns it as an Array "
           "of pinned memory, which the GPU reads and writes directly (no copy, no staging). The "
           "pages stay locked while the Array or a view of it lives, and obj stays alive. "
           "Locking costs about as much as copying the memory once: worth it for large buffers "
           "used on the GPU. ValueError for memory that is not pageable host memory, or whose "
           "pages another registration holds; NoDeviceError without a device.");
  m.def("view", &view, nb::arg("obj").none(), "stream"_a = nb::none(), nb::kw_only(),
        "sync"_a.none() = true, "protocol"_a = nb::none(),
        "Any array (NumPy, CuPy, PyTorch, JAX, Numba, memoryview, ...) as an arrayport.Array "
        "without a copy. The producer stays alive while the view lives; its pending work is "
        "ordered before `stream` (default: the current stream) unless sync=False. protocol= "
        "forces one exchange protocol: 'array', 'exchange', 'buffer', 'dlpack', 'cai' or 'cupy' "
        "(a CuPy ndarray read from its struct, ordered as __dlpack__ orders).");
  m.def("_offers_array_protocol", &offers_array_protocol, "obj"_a.none(),
        "Whether view() has a protocol to try on obj: an Array, a type with the buffer protocol "
        "(its slot, not an export: memoryview() of a hostile exporter can crash CPython), "
        "__dlpack__ or __cuda_array_interface__.");
  m.def(
      "_acquire_protocol",
      [](nb::handle obj, nb::handle protocol, bool reads_only) {
        nb::object h = holder_for_python(obj, parse_stream(nb::none()), true,
                                         parse_protocol(protocol), true, reads_only);
        return std::string(protocol_name(as_holder(h)->held.protocol));
      },
      "obj"_a, "protocol"_a = nb::none(), "reads_only"_a = false,
      "The protocol the bridge picks for obj as a function argument (reads_only: one the "
      "callee only reads), acquiring and releasing it once (for tests).");
  m.def("_unpublish_exchange_types", &bridge::unpublish_exchange_types,
        "Empties the C API's exchange_types, so that typed parameters borrow exchange-API "
        "arguments through the engine again (for tests).");
}

}  // namespace arrayport::ext
