// arrayport.view(obj): any array as an Array without a copy, through the bridge in
// <arrayport/python/acquire.hpp>; and the C API that other extension modules import.
#include "consume.hpp"

#include "array.hpp"
#include "array_internal.hpp"
#include "current_stream.hpp"
#include "errors.hpp"

#include <arrayport/python/acquire.hpp>

#include <nanobind/stl/string.h>

#include <cstddef>
#include <memory>
#include <string>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {

constexpr const char* holder_name = "arrayport.acquired";

void holder_destructor(PyObject* capsule) noexcept {
  delete static_cast<python::acquired*>(PyCapsule_GetPointer(capsule, holder_name));
}

std::uint32_t parse_protocol(nb::handle protocol) {
  if (protocol.is_none()) return python::protocol_all;
  const std::string name = nb::cast<std::string>(protocol);
  if (name == "array") return python::protocol_array;
  if (name == "exchange") return python::protocol_exchange;
  if (name == "buffer") return python::protocol_buffer;
  if (name == "dlpack") return python::protocol_dlpack;
  if (name == "cai") return python::protocol_cai;
  if (name == "cupy") return python::protocol_cupy;
  throw value_error("protocol: expected None, 'array', 'exchange', 'buffer', 'dlpack', 'cai' or "
                    "'cupy', got '" + name + "'");
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

python::acquired acquire_for_python(nb::handle obj, stream_handle stream, bool sync,
                                    std::uint32_t protocols, bool call_scoped,
                                    bool reads_only = false) {
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
    return python::acquire(obj.ptr(), c, o);
  } catch (const python::error_already_set&) {
    throw nb::python_error();
  }
}

// An Array over an acquired view, owning it through a capsule (Array.base shows the producer).
nb::object array_holding(python::acquired&& a) {
  auto* held = new python::acquired(std::move(a));
  PyObject* capsule = PyCapsule_New(held, holder_name, holder_destructor);
  if (!capsule) {
    delete held;
    throw nb::python_error();
  }
  PyObject* array = array_from_view(&held->c_view(), capsule);
  Py_DECREF(capsule);  // the Array holds it now (or, on failure, nobody does and it is freed)
  if (!array) throw nb::python_error();
  return nb::steal(array);
}

// Host memory page-locked in place for as long as an Array over it lives (cuda.register): the
// acquired view keeps the producer alive, the destructor unlocks the pages first.
struct registered_host {
  python::acquired held;
  arrayport_view_t view{};
  void* locked = nullptr;
  ~registered_host() { runtime::host_unregister(locked); }
};
constexpr const char* registered_name = "arrayport.registered_host";

void registered_destructor(PyObject* capsule) noexcept {
  delete static_cast<registered_host*>(PyCapsule_GetPointer(capsule, registered_name));
}

nb::object register_host(nb::handle obj) {
  runtime::require_device("cuda.register");
  python::constraints c;
  c.name = "register: obj";
  c.where = python::reach::any;  // device memory is refused below, naming what it is
  python::acquire_options o;
  o.protocols = python::protocol_all;
  auto reg = std::make_unique<registered_host>();
  try {
    reg->held = python::acquire(obj.ptr(), c, o);
  } catch (const python::error_already_set&) {
    throw nb::python_error();
  }
  arrayport_view_t v = reg->held.c_view();
  const auto kind = static_cast<memory_kind>(v.memory_kind);
  if (kind == memory_kind::host) {  // refined: pageable, or pinned/managed the bridge did not ask about
    const runtime::pointer_info info = runtime::query_pointer(v.data);
    if (info.kind == memory_kind::pinned)
      throw value_error("register: these pages are already page-locked (by another registration "
                        "or a pinned allocation): expected pageable host memory, got pinned memory");
    if (info.kind != memory_kind::host)
      throw value_error("register: expected pageable host memory, got " +
                        std::string(to_string(info.kind)) + " memory (already reachable from the GPU)");
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
        throw value_error("register: these pages are already page-locked by another registration "
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
  PyObject* capsule = PyCapsule_New(reg.get(), registered_name, registered_destructor);
  if (!capsule) throw nb::python_error();
  registered_host* raw = reg.release();
  PyObject* array = array_from_view(&raw->view, capsule);
  Py_DECREF(capsule);
  if (!array) throw nb::python_error();
  return nb::steal(array);
}

// The view as an Array owning the holder; an Array is returned as it is.
nb::object view(nb::handle obj, nb::handle stream, bool sync, nb::handle protocol) {
  if (is_array(obj.ptr()) && protocol.is_none()) return nb::borrow(obj);
  return array_holding(
      acquire_for_python(obj, parse_stream(stream), sync, parse_protocol(protocol), false));
}

void current_stream_for_c(void** stream, int* device) {
  const current_stream_state s = current_stream();
  if (stream) *stream = s.handle;
  if (device) *device = s.device;
}

int acquire_for_c(PyObject* obj, const char* name, std::uint32_t flags, arrayport_view_t* out,
                  void** handle) noexcept {
  return guarded<int>(-1, [&]() -> int {
    if (!out || !handle) throw value_error("acquire: out and handle must not be NULL");
    if ((flags & ARRAYPORT_ACQUIRE_HOST) && (flags & ARRAYPORT_ACQUIRE_DEVICE))
      throw value_error("acquire: flags ask for both host-only and device-only reach");
    python::constraints c;
    c.name = name ? name : "array";
    c.writable = (flags & ARRAYPORT_ACQUIRE_WRITABLE) != 0;
    c.where = (flags & ARRAYPORT_ACQUIRE_HOST)     ? python::reach::host
              : (flags & ARRAYPORT_ACQUIRE_DEVICE) ? python::reach::device
                                                   : python::reach::any;
    c.layout = (flags & ARRAYPORT_ACQUIRE_C_ORDER) ? python::order::c : python::order::any;
    auto* held = new python::acquired(python::acquire(obj, c));
    *out = held->c_view();
    *handle = held;
    return 0;
  });
}

void release_for_c(void* handle) noexcept { delete static_cast<python::acquired*>(handle); }

arrayport_python_api_t g_api{};

}  // namespace

nb::object view_foreign(PyObject* obj, stream_handle stream) {
  // Every protocol but the buffer protocol, which the caller has tried (CuPy refuses it for
  // device memory); the view lives only for the caller's call.
  constexpr std::uint32_t protocols = python::protocol_all & ~python::protocol_buffer;
  try {
    return array_holding(acquire_for_python(obj, stream, true, protocols, true));
  } catch (const python::not_an_array&) {
    return nb::object();
  }
}

PyObject* acquired_producer(PyObject* base) noexcept {
  if (!base || !PyCapsule_CheckExact(base)) return nullptr;
  auto* held = static_cast<python::acquired*>(PyCapsule_GetPointer(base, holder_name));
  if (!held) {
    PyErr_Clear();
    return nullptr;
  }
  return held->owner();
}

void register_consume(nb::module_& m) {
  g_api.abi_major = ARRAYPORT_PYTHON_API_MAJOR;
  g_api.abi_minor = ARRAYPORT_PYTHON_API_MINOR;
  g_api.array_type = array_type;
  g_api.array_view_offset = static_cast<Py_ssize_t>(offsetof(array_object, view));
  g_api.current_stream = current_stream_for_c;
  g_api.array_from_view = array_from_view;
  g_api.cuda_error = m.attr("CudaError").ptr();
  g_api.out_of_memory_error = m.attr("OutOfMemoryError").ptr();
  g_api.no_device_error = m.attr("NoDeviceError").ptr();
  g_api.acquire = acquire_for_c;
  g_api.release = release_for_c;
  g_api.set_cuda_error = set_cuda_error_for_c;
  m.attr("_C_API") = nb::steal(PyCapsule_New(&g_api, ARRAYPORT_PYTHON_API_CAPSULE, nullptr));

  using namespace nb::literals;
  nb::module_ cuda = nb::borrow<nb::module_>(m.attr("cuda"));
  cuda.def("register", &register_host, "obj"_a,
           "Page-locks obj's host memory in place (cudaHostRegister) and returns it as an Array "
           "of pinned memory, which the GPU reads and writes directly (no copy, no staging). The "
           "pages stay locked while the Array or a view of it lives, and obj stays alive. "
           "Locking costs about as much as copying the memory once: worth it for large buffers "
           "used on the GPU. ValueError for memory that is not pageable host memory, or whose "
           "pages another registration holds; NoDeviceError without a device.");
  m.def("view", &view, nb::arg("obj").none(), "stream"_a = nb::none(), nb::kw_only(), "sync"_a = true,
        "protocol"_a = nb::none(),
        "Any array (NumPy, CuPy, PyTorch, JAX, Numba, memoryview, ...) as an arrayport.Array "
        "without a copy. The producer stays alive while the view lives; its pending work is "
        "ordered before `stream` (default: the current stream) unless sync=False. protocol= "
        "forces one exchange protocol: 'array', 'exchange', 'buffer', 'dlpack', 'cai' or 'cupy' "
        "(a CuPy ndarray read from its struct, ordered as __dlpack__ orders).");
  m.def("_acquire_protocol", [](nb::handle obj, nb::handle protocol, bool reads_only) {
          python::acquired a = acquire_for_python(obj, parse_stream(nb::none()), true,
                                                  parse_protocol(protocol), true, reads_only);
          return std::string(protocol_name(a.protocol_used()));
        }, "obj"_a, "protocol"_a = nb::none(), "reads_only"_a = false,
        "The protocol the bridge picks for obj as a function argument (reads_only: one the "
        "callee only reads), acquiring and releasing it once (for tests).");
}

}  // namespace arrayport::ext
