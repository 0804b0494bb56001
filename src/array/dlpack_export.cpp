// DLPack export: capsules that own a reference to the Array until the consumer's deleter runs.
#include "array/dlpack_export.hpp"

#include "array/array.hpp"
#include "common/arguments.hpp"
#include "array/array_internal.hpp"
#include "common/errors.hpp"

#include <arrayport/c/dlpack.h>
#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/python/limited_api.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace arrayport::ext {
namespace nb = nanobind;

namespace {

constexpr const char* versioned_name = "dltensor_versioned";
constexpr const char* legacy_name = "dltensor";

std::atomic<std::int64_t> g_live{0};

// Set by an atexit callback, which runs before finalisation starts: the stable ABI has no
// Py_IsFinalizing, and a reference dropped from then on is leaked instead (at exit, harmless).
std::atomic<bool> g_exiting{false};

bool interpreter_alive() noexcept {
  if (!Py_IsInitialized() || g_exiting.load(std::memory_order_acquire)) return false;
#if defined(Py_LIMITED_API)
  return true;
#elif PY_VERSION_HEX >= 0x030D0000
  return !Py_IsFinalizing();
#else
  return !_Py_IsFinalizing();
#endif
}

// One allocation per export: the managed tensor, its shape and strides, and the owner reference.
struct export_ctx {
  PyObject* owner = nullptr;  // strong reference, dropped by the deleter
  std::vector<std::int64_t> shape, strides;
  arrayport_dl_managed_tensor_t legacy{};
  arrayport_dl_managed_tensor_versioned_t versioned{};
};

// The consumer calls this exactly once, possibly from a thread without the GIL, possibly late.
template <class T>
void deleter(T* t) noexcept {
  auto* ctx = static_cast<export_ctx*>(t->manager_ctx);
  if (interpreter_alive()) {
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF(ctx->owner);
    PyGILState_Release(g);
  }  // else: the interpreter is gone and so is the owner's memory manager; leak rather than crash
  delete ctx;
  g_live.fetch_sub(1, std::memory_order_relaxed);
}

// An unconsumed capsule still owns its tensor: free it here. A consumed one was renamed.
void capsule_destructor(PyObject* capsule) noexcept {
  if (PyCapsule_IsValid(capsule, versioned_name)) {
    auto* t = static_cast<arrayport_dl_managed_tensor_versioned_t*>(
        PyCapsule_GetPointer(capsule, versioned_name));
    if (t && t->deleter) t->deleter(t);
  } else if (PyCapsule_IsValid(capsule, legacy_name)) {
    auto* t =
        static_cast<arrayport_dl_managed_tensor_t*>(PyCapsule_GetPointer(capsule, legacy_name));
    if (t && t->deleter) t->deleter(t);
  }
}

[[noreturn]] void buffer_error(const std::string& msg) {
  PyErr_SetString(PyExc_BufferError, msg.c_str());
  throw nanobind::python_error();
}

// Makes the array's data ready on the consumer's stream: an event on the producer's stream and a
// wait on the consumer's, never a device-wide synchronisation.
void stream_handshake(array_object* a, PyObject* stream) {
  auto kind = static_cast<memory_kind>(a->view.memory_kind);
  const bool cuda = is_device_accessible(kind) && runtime::is_available();
  // -1 (no synchronisation) or a handle: an int that fits 64 bits, signed or not.
  long long s = 0;
  bool above_int64 = false;  // a handle in [2**63, 2**64): s holds its bits
  if (stream != Py_None) {
    if (PyBool_Check(stream) || !PyLong_Check(stream))
      throw type_error("__dlpack__: stream: expected None, -1 or a stream handle (an int), got " +
                       type_name_of(stream));
    int overflow = 0;
    s = PyLong_AsLongLongAndOverflow(stream, &overflow);
    if (s == -1 && PyErr_Occurred()) throw nanobind::python_error();
    if (overflow < 0)
      s = -2;  // below -1: refused below
    else if (overflow > 0) {
      s = static_cast<long long>(handle_arg(stream, "__dlpack__: stream"));
      above_int64 = true;
    }
  }
  if (!cuda) {
    if (stream != Py_None && s != -1)
      buffer_error("__dlpack__: stream: expected None or -1 for a CPU array, got " +
                   std::string(nanobind::str(stream).c_str()));
    return;
  }
  stream_handle consumer = nullptr;  // None: the consumer uses the legacy default stream
  if (stream != Py_None) {
    if (s == -1) return;  // the consumer asked for no synchronisation
    if (s == 0)
      buffer_error(
          "__dlpack__: stream=0 is disallowed for CUDA (ambiguous); use 1 for the legacy "
          "default stream or 2 for the per-thread default stream");
    if (s < -1 && !above_int64)
      buffer_error("__dlpack__: stream: expected None, -1 or a stream handle, got " +
                   std::string(nanobind::str(stream).c_str()));
    consumer = s == 1 ? nullptr : reinterpret_cast<stream_handle>(static_cast<std::uintptr_t>(s));
  }
  // The array's default-stream handle is its own device's; the consumer's stream belongs to the
  // device __dlpack_device__ named, the array's.
  const int device = array_device(a);
  runtime::order_streams(a->view.stream, device, consumer, device);
}

bool same_device(const arrayport_device_t& a, int type, int id) {
  return a.device_type == type && a.device_id == id;
}

// A managed tensor of the array as `device`, holding a reference to it until its deleter runs.
void* new_tensor(PyObject* self, arrayport_device_t device, bool versioned) {
  auto* a = reinterpret_cast<array_object*>(self);
  auto owned = std::make_unique<export_ctx>();  // until nothing below can throw
  export_ctx* ctx = owned.get();
  ctx->shape.assign(a->view.shape, a->view.shape + a->view.ndim);
  ctx->strides.assign(a->view.strides, a->view.strides + a->view.ndim);
  arrayport_dl_tensor_t t{};
  t.data = a->view.data;
  t.device = device;
  t.ndim = a->view.ndim;
  t.dtype = a->view.dtype;
  t.shape = ctx->shape.data();
  t.strides = ctx->strides.data();
  t.byte_offset = 0;
  ctx->owner = Py_NewRef(self);
  g_live.fetch_add(1, std::memory_order_relaxed);
  owned.release();  // the deleter frees it
  if (versioned) {
    ctx->versioned.version = {ARRAYPORT_DLPACK_MAJOR_VERSION, ARRAYPORT_DLPACK_MINOR_VERSION};
    ctx->versioned.manager_ctx = ctx;
    ctx->versioned.deleter = deleter<arrayport_dl_managed_tensor_versioned_t>;
    ctx->versioned.flags = is_readonly(a) ? ARRAYPORT_DLPACK_FLAG_READ_ONLY : 0;
    ctx->versioned.dl_tensor = t;
    return &ctx->versioned;
  }
  ctx->legacy.dl_tensor = t;
  ctx->legacy.manager_ctx = ctx;
  ctx->legacy.deleter = deleter<arrayport_dl_managed_tensor_t>;
  return &ctx->legacy;
}

PyObject* export_impl(PyObject* self, PyObject* args, PyObject* kwargs);

// copy=True: a fresh copy (on the device dl_device names, else the array's memory kind and
// device), exported as itself. The copy is enqueued on the current stream, which the consumer's
// stream then waits for as for any export.
PyObject* export_copy(PyObject* self, PyObject* stream, PyObject* max_version,
                      PyObject* dl_device) {
  nb::object fresh;
  if (dl_device == Py_None) {
    fresh = nb::handle(self).attr("copy")();
  } else {
    if (!PyTuple_Check(dl_device) || python::limited::tuple_size(dl_device) != 2)
      throw type_error(
          "__dlpack__: dl_device: expected None or a (device_type, device_id) tuple of ints, "
          "got " +
          type_name_of(dl_device));
    const auto type = int_arg(python::limited::tuple_item(dl_device, 0), "__dlpack__",
                              "dl_device[0]", 0, INT32_MAX, "a DLPack device type");
    const auto id = int_arg(python::limited::tuple_item(dl_device, 1), "__dlpack__", "dl_device[1]",
                            0, INT32_MAX, "a device id >= 0");
    const char* memory = type == ARRAYPORT_DEVICE_CPU            ? "host"
                         : type == ARRAYPORT_DEVICE_CUDA         ? "device"
                         : type == ARRAYPORT_DEVICE_CUDA_HOST    ? "pinned"
                         : type == ARRAYPORT_DEVICE_CUDA_MANAGED ? "managed"
                                                                 : nullptr;
    if (!memory)
      buffer_error("__dlpack__: dl_device=(" + std::to_string(type) + ", " + std::to_string(id) +
                   "): arrayport copies only to CPU (1), CUDA (2), CUDA host (3) and CUDA "
                   "managed (13) memory");
    nb::object device = nb::none();
    if (type == ARRAYPORT_DEVICE_CUDA || type == ARRAYPORT_DEVICE_CUDA_MANAGED)
      device = nb::int_(id);
    fresh = nb::handle(self).attr("copy")(nb::arg("memory") = memory, nb::arg("device") = device);
  }
  nb::dict kw;
  kw["stream"] = nb::handle(stream);
  kw["max_version"] = nb::handle(max_version);
  kw["dl_device"] = nb::handle(dl_device);
  nb::object empty = nb::steal(PyTuple_New(0));
  return export_impl(fresh.ptr(), empty.ptr(), kw.ptr());
}

PyObject* export_impl(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"stream", "max_version", "dl_device", "copy", nullptr};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", const_cast<char**>(keywords),
                                   &stream, &max_version, &dl_device, &copy))
    return nullptr;
  auto* a = reinterpret_cast<array_object*>(self);

  bool versioned = false;
  if (max_version != Py_None) {
    long major = -1;
    if (!PyTuple_Check(max_version) || python::limited::tuple_size(max_version) != 2 ||
        (major = PyLong_AsLong(python::limited::tuple_item(max_version, 0))) == -1) {
      PyErr_Clear();
      buffer_error("__dlpack__: max_version: expected a (major, minor) tuple of ints, got " +
                   std::string(nanobind::str(max_version).c_str()));
    }
    versioned = major >= 1;
  }
  if (copy != Py_None && !PyBool_Check(copy))
    throw type_error("__dlpack__: copy: expected True, False or None, got " + type_name_of(copy));
  if (copy == Py_True) return export_copy(self, stream, max_version, dl_device);
  arrayport_device_t device = a->view.device;
  if (dl_device != Py_None) {
    if (!PyTuple_Check(dl_device) || python::limited::tuple_size(dl_device) != 2)
      throw type_error(
          "__dlpack__: dl_device: expected None or a (device_type, device_id) tuple "
          "of ints, got " +
          type_name_of(dl_device));
    const int type =
        static_cast<int>(int_arg(python::limited::tuple_item(dl_device, 0), "__dlpack__",
                                 "dl_device[0]", 0, INT32_MAX, "a DLPack device type"));
    const int id = static_cast<int>(int_arg(python::limited::tuple_item(dl_device, 1), "__dlpack__",
                                            "dl_device[1]", 0, INT32_MAX, "a device id >= 0"));
    auto kind = static_cast<memory_kind>(a->view.memory_kind);
    if (same_device(device, type, id)) {
      // what it is already
    } else if (type == ARRAYPORT_DEVICE_CPU && is_host_accessible(kind)) {
      runtime::require_reachable(kind, "Array.__dlpack__", "the array");  // managed memory
      device = {ARRAYPORT_DEVICE_CPU, 0};  // managed and pinned memory are readable as CPU memory
    } else if (type == ARRAYPORT_DEVICE_CUDA && kind == memory_kind::managed &&
               id == device.device_id) {
      // Managed memory is device memory to a CUDA consumer: what one that knows no
      // kDLCUDAManaged (PyTorch, JAX) can ask for.
      device = {ARRAYPORT_DEVICE_CUDA, id};
    } else {
      buffer_error("__dlpack__: dl_device=(" + std::to_string(type) + ", " + std::to_string(id) +
                   ") asks for another device than the array's (" +
                   std::to_string(device.device_type) + ", " + std::to_string(device.device_id) +
                   ")" +
                   (copy == Py_False ? "; copy=False forbids the copy that would need"
                                     : "; move it first with .to()"));
    }
  }
  const bool readonly = (a->view.flags & ARRAYPORT_VIEW_READONLY) != 0;
  if (readonly && !versioned)
    buffer_error(
        "__dlpack__: a read-only array cannot be exported through the legacy "
        "(unversioned) DLPack ABI, which has no read-only flag; pass max_version=(1, 0)");

  // A CPU consumer reads now; so may one that passes no stream for host-accessible memory
  // (NumPy's from_dlpack does): the host must see the producer's stream drained.
  const auto kind = static_cast<memory_kind>(a->view.memory_kind);
  const bool host_reader =
      device.device_type == ARRAYPORT_DEVICE_CPU || (stream == Py_None && is_host_accessible(kind));
  if (host_reader && kind != memory_kind::host) {
    runtime::stream_synchronize(a->view.stream, array_device(a));
  } else {
    stream_handshake(a, stream);
  }

  void* tensor = new_tensor(self, device, versioned);
  PyObject* capsule =
      PyCapsule_New(tensor, versioned ? versioned_name : legacy_name, capsule_destructor);
  if (!capsule) {
    if (versioned)
      deleter(static_cast<arrayport_dl_managed_tensor_versioned_t*>(tensor));
    else
      deleter(static_cast<arrayport_dl_managed_tensor_t*>(tensor));
    return nullptr;
  }
  return capsule;
}

}  // namespace

PyObject* dlpack_export(PyObject* self, PyObject* args, PyObject* kwargs) {
  return guarded<PyObject*>(nullptr, [&] { return export_impl(self, args, kwargs); });
}

PyObject* dlpack_device(PyObject* self, PyObject*) {
  const arrayport_device_t d = reinterpret_cast<array_object*>(self)->view.device;
  return Py_BuildValue("(ii)", d.device_type, d.device_id);
}

arrayport_dl_managed_tensor_versioned_t* versioned_tensor(PyObject* self) {
  return static_cast<arrayport_dl_managed_tensor_versioned_t*>(
      new_tensor(self, reinterpret_cast<array_object*>(self)->view.device, true));
}

std::int64_t dlpack_live_exports() noexcept { return g_live.load(std::memory_order_relaxed); }

void note_interpreter_exiting() noexcept { g_exiting.store(true, std::memory_order_release); }

}  // namespace arrayport::ext
