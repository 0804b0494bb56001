// The DLPack C exchange API, produced: type(Array).__dlpack_c_exchange_api__ (DLPack 1.3, a
// capsule "dlpack_exchange_api") and __c_dlpack_exchange_api__ (DLPack 1.2, its address as an
// int), so an exchange-API consumer (TVM-FFI, cuda.core, a kernel library) takes an Array from C
// with no capsule per call and no Python call. Nothing waits on the host: an Array's own stream
// is ordered before the consumer's work stream on the GPU, as for every consumer of an Array.
#include "array/exchange_export.hpp"

#include "array/array_internal.hpp"
#include "array/dlpack_export.hpp"
#include "bridge/checks.hpp"
#include "bridge/consume.hpp"
#include "bridge/dlpack.hpp"
#include "cuda/current_stream.hpp"

#include <arrayport/buffer.hpp>
#include <arrayport/layout.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/python/limited_api.hpp>

#include <optional>
#include <string>
#include <utility>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {

using versioned_t = arrayport_dl_managed_tensor_versioned_t;

// The spec's "must have the same type as the one the table was found on", checked: a TypeError.
array_object* array_arg(void* py_object, const char* function) {
  auto* obj = static_cast<PyObject*>(py_object);
  if (!obj) throw value_error(std::string(function) + ": py_object: expected an Array, got NULL");
  if (!is_array(obj))
    throw type_error(std::string(function) + ": py_object: expected an arrayport.Array, got " +
                     type_name_of(obj));
  return as_array(obj);
}

// arrayport's current stream (arrayport.cuda's `with stream:`) when it is the device's, else the
// device's legacy default stream (NULL): where a consumer of the table works.
stream_handle work_stream(int device_id) {
  const current_stream_state s = current_stream();
  const int current = s.device >= 0             ? s.device
                      : runtime::is_available() ? runtime::get_device()
                                                : 0;
  return current == device_id ? s.handle : nullptr;
}

// The consumer works on current_work_stream(); an Array's data is ready on its own stream: that
// one is ordered first (an event, no host wait), as for every other consumer of an Array.
void order_for_consumer(const array_object* a) {
  const auto kind = static_cast<memory_kind>(a->view.memory_kind);
  if (kind == memory_kind::host) return;
  bridge::order_array_stream(a->view, is_gpu_resident(kind) ? work_stream(a->view.device.device_id)
                                                            : current_stream().handle);
}

int from_py_object(void* py_object, versioned_t** out) noexcept {
  return guarded<int>(-1, [&] {
    array_object* a = array_arg(py_object, "managed_tensor_from_py_object_no_sync");
    if (!out) throw value_error("managed_tensor_from_py_object_no_sync: out must not be NULL");
    order_for_consumer(a);
    *out = versioned_tensor(reinterpret_cast<PyObject*>(a));
    return 0;
  });
}

int dltensor_from_py_object(void* py_object, arrayport_dl_tensor_t* out) noexcept {
  return guarded<int>(-1, [&] {
    const array_object* a = array_arg(py_object, "dltensor_from_py_object_no_sync");
    if (!out) throw value_error("dltensor_from_py_object_no_sync: out must not be NULL");
    // A DLTensor has no read-only flag: a consumer would take a read-only Array as writable.
    if (is_readonly(a))
      throw buffer_error(
          "dltensor_from_py_object_no_sync: a read-only Array has no DLTensor, which cannot say "
          "read-only; take managed_tensor_from_py_object_no_sync, whose tensor is flagged");
    order_for_consumer(a);
    // The Array's own extents (strides in elements, as DLPack's): valid while it lives. DLPack
    // spells them non-const; a consumer never writes them.
    out->data = a->view.data;
    out->device = a->view.device;
    out->ndim = a->view.ndim;
    out->dtype = a->view.dtype;
    out->shape = a->view.ndim ? const_cast<std::int64_t*>(a->view.shape) : nullptr;
    out->strides = a->view.ndim ? const_cast<std::int64_t*>(a->view.strides) : nullptr;
    out->byte_offset = 0;
    return 0;
  });
}

// An owning tensor's deleter, run once when the Array over it lets go of this capsule.
void release_tensor(PyObject* capsule) noexcept {
  if (!PyCapsule_IsValid(capsule, "arrayport.dlpack_owner")) return;
  auto* t = static_cast<versioned_t*>(PyCapsule_GetPointer(capsule, "arrayport.dlpack_owner"));
  if (!t->deleter) return;
  // A dealloc may run while an exception propagates: the deleter (maybe Python code) runs
  // without it, and it is put back.
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  t->deleter(t);
  PyErr_Restore(type, value, trace);
}

int to_py_object(versioned_t* tensor, void** out) noexcept {
  // The tensor is ours from here on: every failure below still runs its deleter, once, before
  // the error is set (a deleter may be Python code, which must not start with an error set).
  PyObject* owner = nullptr;
  try {
    if (!tensor) throw value_error("managed_tensor_to_py_object_no_sync: tensor is NULL");
    if (!out) throw value_error("managed_tensor_to_py_object_no_sync: out must not be NULL");
    owner = PyCapsule_New(tensor, "arrayport.dlpack_owner", release_tensor);
    if (!owner) throw nb::python_error();
    python::constraints c;
    c.name = "managed_tensor_to_py_object_no_sync";
    if (tensor->version.major != ARRAYPORT_DLPACK_MAJOR_VERSION)
      bridge::fail_buffer(c, owner,
                          "expected a DLPack 1.x tensor, got version " +
                              std::to_string(tensor->version.major) + "." +
                              std::to_string(tensor->version.minor));
    // Read and checked as every DLPack import is (dtype, device, extents, address space).
    bridge::held scratch;  // only its extents: it holds nothing
    const bool readonly = (tensor->flags & ARRAYPORT_DLPACK_FLAG_READ_ONLY) != 0;
    bridge::from_dl_tensor(scratch, c, owner, tensor->dl_tensor, readonly);
    bridge::check_geometry(c, owner, scratch.view);
    PyObject* array = array_from_view(&scratch.view, owner);
    if (!array) throw nb::python_error();
    Py_DECREF(owner);  // the Array holds it
    *out = array;
    return 0;
  } catch (...) {
    if (owner)
      Py_DECREF(owner);  // its destructor runs the deleter
    else if (tensor && tensor->deleter)
      tensor->deleter(tensor);
    raise_current_exception();
    return -1;
  }
}

// The exception being handled as the allocator's SetError reports it: the Python exception it
// maps to (errors.cpp, the one map) by class name, and its message. Leaves no error set.
std::pair<std::string, std::string> take_current_exception() noexcept {
  raise_current_exception();
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  std::pair<std::string, std::string> out{"RuntimeError", "managed_tensor_allocator failed"};
  if (type && PyType_Check(type))
    out.first = python::limited::tp_name(reinterpret_cast<PyTypeObject*>(type));
  if (PyObject* text = value ? PyObject_Str(value) : nullptr) {
    if (const char* utf8 = python::limited::utf8(text)) out.second = utf8;
    Py_DECREF(text);
  }
  PyErr_Clear();
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  return out;
}

memory_kind kind_of(arrayport_device_t d) {
  memory_kind kind;
  if (!kind_of_dlpack_device(d, kind))
    throw value_error("managed_tensor_allocator: prototype: unsupported DLPack device type " +
                      std::to_string(d.device_type) + ": expected " + bridge::dl_devices_taken);
  return kind;
}

// A new C-contiguous Array of the prototype's dtype, shape and device, exported as an owning
// tensor (the Array lives until the tensor's deleter runs). May be called without the GIL.
int allocator(arrayport_dl_tensor_t* prototype, versioned_t** out, void* error_ctx,
              void (*set_error)(void*, const char*, const char*)) noexcept {
  PyGILState_STATE gil = PyGILState_Ensure();
  int rc = 0;
  try {
    if (!prototype) throw value_error("managed_tensor_allocator: prototype is NULL");
    if (!out) throw value_error("managed_tensor_allocator: out must not be NULL");
    const arrayport_dl_tensor_t& p = *prototype;
    const dtype dt = dtype::from_c(p.dtype);
    if (!is_supported(dt))
      throw type_error("managed_tensor_allocator: prototype: unsupported dtype " +
                       arrayport::detail::describe(dt) + ": expected one of " +
                       std::string(arrayport::detail::supported_dtype_names));
    if (p.ndim < 0 || p.ndim > ARRAYPORT_MAX_NDIM)
      throw value_error("managed_tensor_allocator: prototype: expected 0 to " +
                        std::to_string(ARRAYPORT_MAX_NDIM) + " dimensions, got " +
                        std::to_string(p.ndim));
    if (p.ndim > 0 && !p.shape)
      throw value_error("managed_tensor_allocator: prototype: shape is NULL");
    const memory_kind kind = kind_of(p.device);
    if (p.device.device_id < 0)
      throw value_error("managed_tensor_allocator: prototype: expected a device id >= 0, got " +
                        std::to_string(p.device.device_id));
    const int device = is_gpu_resident(kind) ? p.device.device_id : -1;
    const std::int64_t nbytes =
        check_layout("managed_tensor_allocator: prototype", p.shape, nullptr, p.ndim,
                     static_cast<std::int64_t>(dt.itemsize()))
            .nbytes;
    const stream_handle on =
        array_stream(kind, device, current_stream().handle, nb::none(), "managed_tensor_allocator");
    std::optional<buffer> storage;
    try {
      storage.emplace(static_cast<std::size_t>(nbytes), kind, device, on);
    } catch (const std::bad_alloc&) {
      PyErr_Format(PyExc_MemoryError,
                   "managed_tensor_allocator: could not allocate %lld bytes of %s memory",
                   static_cast<long long>(nbytes), std::string(to_string(kind)).c_str());
      throw nb::python_error();
    }
    nb::object array = make_owned_array(std::move(*storage), dt, p.shape, p.ndim);
    *out = versioned_tensor(array.ptr());
  } catch (...) {
    if (out) *out = nullptr;
    auto [kind, message] = take_current_exception();
    if (set_error) set_error(error_ctx, kind.c_str(), message.c_str());
    rc = -1;
  }
  PyGILState_Release(gil);
  return rc;
}

// work_stream() of the device; NULL for the CPU, as the spec allows.
int current_work_stream(std::int32_t device_type, std::int32_t device_id, void** out) noexcept {
  return guarded<int>(-1, [&] {
    if (!out) throw value_error("current_work_stream: out_current_stream must not be NULL");
    memory_kind kind;
    if (!kind_of_dlpack_device({device_type, device_id}, kind))
      throw value_error("current_work_stream: unsupported DLPack device type " +
                        std::to_string(device_type) + ": expected " + bridge::dl_devices_taken);
    if (device_id < 0)
      throw value_error("current_work_stream: expected a device id >= 0, got " +
                        std::to_string(device_id));
    *out = device_type == ARRAYPORT_DEVICE_CPU ? nullptr : work_stream(device_id);
    return 0;
  });
}

const arrayport_dlpack_exchange_api_t table = {
    {{ARRAYPORT_DLPACK_MAJOR_VERSION, ARRAYPORT_DLPACK_EXCHANGE_API_MINOR}, nullptr},
    allocator,
    from_py_object,
    to_py_object,
    dltensor_from_py_object,
    current_work_stream,
};

}  // namespace

void register_exchange_api(PyTypeObject* type) {
  auto* api = const_cast<arrayport_dlpack_exchange_api_t*>(&table);
  nb::object capsule = nb::steal(PyCapsule_New(api, "dlpack_exchange_api", nullptr));
  if (!capsule.is_valid()) throw nb::python_error();
  nb::object address = nb::steal(PyLong_FromVoidPtr(api));
  if (!address.is_valid()) throw nb::python_error();
  auto* t = reinterpret_cast<PyObject*>(type);
  if (PyObject_SetAttrString(t, "__dlpack_c_exchange_api__", capsule.ptr()) != 0 ||
      PyObject_SetAttrString(t, "__c_dlpack_exchange_api__", address.ptr()) != 0)
    throw nb::python_error();
}

}  // namespace arrayport::ext
