// DLPack tensors from __dlpack__ capsules: the stream handshake, the capsule's renaming (the
// holder calls the deleter exactly once), and the DLTensor reading the exchange API shares.
#include "bridge/dlpack.hpp"

#include "bridge/checks.hpp"
#include "bridge/jax.hpp"

#include <arrayport/dtype.hpp>
#include <arrayport/python/api.hpp>

#include <string>

namespace arrayport::bridge {
namespace {

memory_kind kind_of_dl_device(const python::constraints& c, PyObject* obj, arrayport_device_t d) {
  memory_kind kind;
  if (kind_of_dlpack_device(d, kind)) return kind;
  fail_value(c, obj,
             "unsupported DLPack device type " + std::to_string(d.device_type) + ": expected " +
                 dl_devices_taken);
}

void check_dl_dtype(const python::constraints& c, PyObject* obj, arrayport_dtype_t dt) {
  const arrayport::dtype d = arrayport::dtype::from_c(dt);
  if (!arrayport::is_supported(d))
    fail_type(c, obj,
              "unsupported DLPack dtype " + arrayport::detail::describe(d) + ": expected one of " +
                  std::string(arrayport::detail::supported_dtype_names));
}

// DLPack stream argument for a consumer stream (the protocol spells the legacy default stream 1).
PyObject* dlpack_stream_arg(stream_handle s) noexcept {
  return s ? PyLong_FromVoidPtr(s) : PyLong_FromLong(1);
}

// One call of obj.__dlpack__(stream=...): versioned first, legacy on TypeError (a producer from
// before DLPack 1.0 has no max_version), and legacy at once for a type known to need it. A new
// reference, or nullptr with the producer's error set.
PyObject* call_dlpack(PyObject* obj, PyObject* stream_arg, bool& legacy_only) {
  static PyObject* const dlpack_name = interned("__dlpack__");
  static PyObject* const kwnames_versioned = Py_BuildValue("(ss)", "stream", "max_version");
  static PyObject* const kwnames_legacy = Py_BuildValue("(s)", "stream");
  static PyObject* const max_version =
      Py_BuildValue("(ii)", ARRAYPORT_DLPACK_MAJOR_VERSION, ARRAYPORT_DLPACK_MINOR_VERSION);
  if (!dlpack_name || !kwnames_versioned || !kwnames_legacy || !max_version) return nullptr;
  PyObject* args[3] = {obj, stream_arg, max_version};
  const std::size_t nargs = 1 | PY_VECTORCALL_ARGUMENTS_OFFSET;
  if (!legacy_only) {
    PyObject* capsule = PyObject_VectorcallMethod(dlpack_name, args, nargs, kwnames_versioned);
    if (capsule || !PyErr_ExceptionMatches(PyExc_TypeError)) return capsule;
    PyErr_Clear();
    capsule = PyObject_VectorcallMethod(dlpack_name, args, nargs, kwnames_legacy);
    legacy_only = capsule != nullptr;  // a TypeError of another cause teaches nothing
    return capsule;
  }
  return PyObject_VectorcallMethod(dlpack_name, args, nargs, kwnames_legacy);
}

// Takes the tensor out of `capsule` (a new reference, consumed): renames the capsule so that its
// destructor leaves the tensor to `a`, whose release() calls the deleter exactly once.
const arrayport_dl_tensor_t& take_capsule(held& a, const python::constraints& c, PyObject* obj,
                                          PyObject* capsule, bool& readonly) {
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    auto* t = static_cast<arrayport_dl_managed_tensor_versioned_t*>(
        PyCapsule_GetPointer(capsule, "dltensor_versioned"));
    PyCapsule_SetName(capsule, "used_dltensor_versioned");
    Py_DECREF(capsule);
    return adopt_versioned(a, c, obj, t, "__dlpack__ returned a capsule holding NULL", readonly);
  }
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* t =
        static_cast<arrayport_dl_managed_tensor_t*>(PyCapsule_GetPointer(capsule, "dltensor"));
    PyCapsule_SetName(capsule, "used_dltensor");
    Py_DECREF(capsule);
    a.managed = t;
    a.from = held::source::dlpack_legacy;
    if (!t) fail_value(c, obj, "__dlpack__ returned a capsule holding NULL");
    readonly = false;
    return t->dl_tensor;
  }
  const char* name = PyCapsule_CheckExact(capsule) ? PyCapsule_GetName(capsule) : nullptr;
  std::string got = name ? "a capsule named '" + std::string(name) + "'"
                         : "a " + python::detail::type_name(capsule);
  PyErr_Clear();
  Py_DECREF(capsule);
  fail_value(c, obj,
             "__dlpack__ returned " + got +
                 ": expected a capsule named 'dltensor_versioned' or 'dltensor'");
}

}  // namespace

const arrayport_dl_tensor_t& adopt_versioned(held& a, const python::constraints& c, PyObject* obj,
                                             arrayport_dl_managed_tensor_versioned_t* t,
                                             const char* null_message, bool& readonly) {
  a.managed = t;
  a.from = held::source::dlpack_versioned;
  if (!t) fail_value(c, obj, null_message);
  if (t->version.major != ARRAYPORT_DLPACK_MAJOR_VERSION)
    fail_buffer(c, obj,
                "unsupported DLPack version " + std::to_string(t->version.major) + "." +
                    std::to_string(t->version.minor) + ": expected 1.x");
  readonly = (t->flags & ARRAYPORT_DLPACK_FLAG_READ_ONLY) != 0;
  return t->dl_tensor;
}

void from_dl_tensor(held& a, const python::constraints& c, PyObject* obj,
                    const arrayport_dl_tensor_t& t, bool readonly) {
  if (t.ndim < 0 || t.ndim > ARRAYPORT_MAX_NDIM)
    fail_value(c, obj,
               "expected at most " + std::to_string(ARRAYPORT_MAX_NDIM) + " dimensions, got " +
                   std::to_string(t.ndim));
  if (t.ndim > 0 && !t.shape) fail_value(c, obj, "DLPack tensor has a NULL shape");
  check_dl_dtype(c, obj, t.dtype);
  const memory_kind kind = kind_of_dl_device(c, obj, t.device);
  if (is_gpu_resident(kind) && t.device.device_id < 0)
    fail_value(c, obj, "expected a CUDA device id >= 0, got " + std::to_string(t.device.device_id));
  std::int64_t* ext = a.extents(t.ndim);
  for (int i = 0; i < t.ndim; ++i) {
    ext[i] = t.shape[i];
    if (t.strides) ext[t.ndim + i] = t.strides[i];
  }
  if (!t.strides)
    require_compact_strides(
        c, obj, ext, t.ndim, ext + t.ndim,
        static_cast<std::int64_t>(arrayport::dtype::from_c(t.dtype).itemsize()));
  // In integers: a byte_offset that wraps the address space is an error, not a pointer.
  std::uintptr_t address = 0;
  if (t.data &&
      __builtin_add_overflow(reinterpret_cast<std::uintptr_t>(t.data), t.byte_offset, &address))
    fail_value(c, obj,
               "DLPack byte_offset " + std::to_string(t.byte_offset) +
                   " takes the data pointer past the end of the address space");
  fill_view(a.view, reinterpret_cast<void*>(address), t.ndim, ext, t.dtype, kind,
            t.device.device_id, readonly, obj);
}

// The stream argument depends on where the data is: the consumer's stream for CUDA memory, None
// for host memory. __dlpack_device__ would say, at the price of a Python call (300 ns for CuPy,
// 2 us for JAX), so it is asked only the first time a type is seen: then the type's last answer
// is assumed and checked on the tensor that comes back.
void from_dlpack(held& a, const python::constraints& c, PyObject* obj, const type_entry& type,
                 stream_handle consumer, bool sync) {
  static PyObject* const device_name = interned("__dlpack_device__");
  if (!device_name) {
    if (!PyErr_Occurred()) PyErr_NoMemory();  // interning failed (once, and is kept)
    throw python::error_already_set();
  }
  bool legacy_only = type.dlpack_legacy;
  bool on_cuda = false;  // whether to pass the consumer's stream
  bool asked = false;
  if (sync && type.dlpack_cuda >= 0) {
    on_cuda = type.dlpack_cuda == 1;
  } else if (sync) {
    PyObject* args[1] = {obj};
    PyObject* dev =
        PyObject_VectorcallMethod(device_name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
    if (!dev) producer_failed(c, obj, "__dlpack_device__");
    long kind = PyTuple_Check(dev) && python::limited::tuple_size(dev) == 2
                    ? PyLong_AsLong(python::limited::tuple_item(dev, 0))
                    : -1;
    Py_DECREF(dev);
    if (kind == -1 && PyErr_Occurred()) PyErr_Clear();
    on_cuda = kind == ARRAYPORT_DEVICE_CUDA || kind == ARRAYPORT_DEVICE_CUDA_MANAGED;
    asked = true;
  }
  auto call = [&](bool cuda) -> PyObject* {
    PyObject* s = cuda ? dlpack_stream_arg(consumer) : (Py_INCREF(Py_None), Py_None);
    if (!s) throw python::error_already_set();
    PyObject* capsule = type.jax ? jax_dlpack(obj, s) : nullptr;
    if (!capsule) capsule = call_dlpack(obj, s, legacy_only);
    Py_DECREF(s);
    return capsule;
  };
  PyObject* capsule = call(on_cuda);
  if (!capsule && on_cuda && !asked &&
      (PyErr_ExceptionMatches(PyExc_BufferError) || PyErr_ExceptionMatches(PyExc_ValueError) ||
       PyErr_ExceptionMatches(PyExc_TypeError))) {
    // An assumed CUDA device may be stale: host data refuses a stream (NumPy raises).
    PyErr_Clear();
    on_cuda = false;
    capsule = call(false);
  }
  if (!capsule) producer_failed(c, obj, "__dlpack__");
  if (legacy_only != type.dlpack_legacy) remember_dlpack(Py_TYPE(obj), -1, legacy_only);
  bool readonly = false;
  const arrayport_dl_tensor_t* t = &take_capsule(a, c, obj, capsule, readonly);
  const bool cuda = t->device.device_type == ARRAYPORT_DEVICE_CUDA ||
                    t->device.device_type == ARRAYPORT_DEVICE_CUDA_MANAGED;
  if (sync && (cuda ? 1 : 0) != type.dlpack_cuda) remember_dlpack(Py_TYPE(obj), cuda, legacy_only);
  if (sync && cuda && !on_cuda) {
    // CUDA data exported without the consumer's stream is not ordered for it: ask again, with it.
    a.drop_tensor();
    capsule = call(true);
    if (!capsule) producer_failed(c, obj, "__dlpack__");
    t = &take_capsule(a, c, obj, capsule, readonly);
  }
  from_dl_tensor(a, c, obj, *t, readonly);
}

}  // namespace arrayport::bridge
