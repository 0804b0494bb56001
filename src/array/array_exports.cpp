// arrayport.Array's zero-copy exports besides DLPack (dlpack_export.cpp): the buffer protocol
// and __array_interface__ for host-accessible memory, __cuda_array_interface__ for the GPU's.
#include "array/array_internal.hpp"
#include "common/errors.hpp"

#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/python/spellings.hpp>

#include <string>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {

PyObject* typestr_of(const array_object* a) {
  std::string s = to_typestr(dtype::from_c(a->view.dtype));
  return PyUnicode_FromString(s.c_str());
}

// Byte strides, or None when C-contiguous (both interfaces accept that spelling).
PyObject* interface_strides(const array_object* a) {
  if (is_c_contiguous(a->view)) Py_RETURN_NONE;
  return tuple_of(a->view.strides, a->view.ndim, static_cast<std::int64_t>(itemsize_of(a)));
}

PyObject* interface_dict(array_object* a, bool cuda) {
  nb::dict d;
  d["shape"] = nb::steal(tuple_of(a->view.shape, a->view.ndim));
  d["typestr"] = nb::steal(typestr_of(a));
  d["data"] = nb::make_tuple(nb::steal(PyLong_FromVoidPtr(a->view.data)),
                             nb::bool_((a->view.flags & ARRAYPORT_VIEW_READONLY) != 0));
  d["strides"] = nb::steal(interface_strides(a));
  d["version"] = 3;
  if (cuda) {
    // The stream on which the data is ready: the consumer waits on it. CAI v3 spells the legacy
    // default stream 1 (0 is disallowed).
    auto s = reinterpret_cast<std::uintptr_t>(a->view.stream);
    d["stream"] = s == 0 ? nb::int_(1) : nb::int_(s);
  } else {
    nb::list descr;
    descr.append(nb::make_tuple("", nb::steal(typestr_of(a))));
    d["descr"] = descr;
  }
  return d.release().ptr();
}

}  // namespace

PyObject* get_cuda_array_interface(PyObject* self, void*) {
  array_object* a = as_array(self);
  auto kind = static_cast<memory_kind>(a->view.memory_kind);
  if (!is_device_accessible(kind)) {
    PyErr_SetString(PyExc_AttributeError,
                    "__cuda_array_interface__: this array is in host memory, which CUDA cannot "
                    "address; use the buffer protocol or move it with .to(memory='device')");
    return nullptr;
  }
  return guarded<PyObject*>(nullptr, [&] { return interface_dict(a, true); });
}

PyObject* get_array_interface(PyObject* self, void*) {
  array_object* a = as_array(self);
  auto kind = static_cast<memory_kind>(a->view.memory_kind);
  if (!is_host_accessible(kind)) {
    PyErr_SetString(PyExc_AttributeError,
                    "__array_interface__: this array is in device memory, which the host cannot "
                    "read; use .get() for a NumPy copy");
    return nullptr;
  }
  if (dtype::from_c(a->view.dtype) == dtypes::bfloat16) {
    PyErr_SetString(PyExc_TypeError,
                    "__array_interface__: NumPy has no bfloat16 dtype; use DLPack or .view()");
    return nullptr;
  }
  return guarded<PyObject*>(nullptr, [&] {
    runtime::require_reachable(kind, "Array.__array_interface__", "the array");  // managed memory
    // Host readers see completed device writes.
    runtime::stream_synchronize(a->view.stream, array_device(a));
    return interface_dict(a, false);
  });
}

// ---- buffer protocol (host-accessible memory) -------------------------------------------------

int array_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  array_object* a = as_array(self);
  auto kind = static_cast<memory_kind>(a->view.memory_kind);
  const char* fail = nullptr;
  const bool readonly = (a->view.flags & ARRAYPORT_VIEW_READONLY) != 0;
  const bool c = is_c_contiguous(a->view), f = is_f_contiguous(a->view);
  if (!is_host_accessible(kind))
    fail =
        "arrayport.Array: the buffer protocol needs host-accessible memory, but this array is "
        "in device memory; use .get() for a NumPy copy, or __cuda_array_interface__ / __dlpack__";
  else if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && readonly)
    fail = "arrayport.Array: a writable buffer was requested from a read-only array";
  else if ((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !c)
    fail = "arrayport.Array: a C-contiguous buffer was requested from a non-C-contiguous array";
  else if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !f)
    fail =
        "arrayport.Array: a Fortran-contiguous buffer was requested from a non-Fortran-contiguous "
        "array";
  else if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS && !c && !f)
    fail = "arrayport.Array: a contiguous buffer was requested from a non-contiguous array";
  else if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !c)
    fail = "arrayport.Array: the request has no strides but the array is not C-contiguous";
  if (fail) {
    PyErr_SetString(PyExc_BufferError, fail);
    view->obj = nullptr;
    return -1;
  }
  const dtype dt = dtype::from_c(a->view.dtype);
  const char* format = nullptr;
  if (flags & PyBUF_FORMAT) {
    format = guarded<const char*>(nullptr, [&] { return to_buffer_format(dt); });
    if (!format) {
      view->obj = nullptr;
      return -1;
    }
  }
  if (guarded<int>(-1, [&] {
        runtime::require_reachable(kind, "Array (buffer protocol)", "the array");  // managed memory
        // Device writes complete before host reads.
        runtime::stream_synchronize(a->view.stream, array_device(a));
        return 0;
      }) != 0) {
    view->obj = nullptr;
    return -1;
  }
  const int ndim = a->view.ndim;
  const auto itemsize = static_cast<Py_ssize_t>(dt.itemsize());
  // len is nbytes (size * itemsize), as NumPy's buffers say, also for zero strides.
  const Py_ssize_t len = guarded<Py_ssize_t>(
      -1, [&] { return static_cast<Py_ssize_t>(check_layout("buffer", a->view).nbytes); });
  if (len < 0) {
    view->obj = nullptr;
    return -1;
  }
  // shape and strides in Py_ssize_t bytes, kept by the Array (its layout never changes).
  if (!a->buffer_extents) {
    auto* e = static_cast<Py_ssize_t*>(PyMem_Malloc(sizeof(Py_ssize_t) * (2 * ndim + 1)));
    if (!e) {
      PyErr_NoMemory();
      view->obj = nullptr;
      return -1;
    }
    for (int i = 0; i < ndim; ++i) {
      e[i] = static_cast<Py_ssize_t>(a->view.shape[i]);
      e[ndim + i] = static_cast<Py_ssize_t>(a->view.strides[i]) * itemsize;
    }
    a->buffer_extents = e;
  }
  Py_ssize_t* const extents = a->buffer_extents;
  view->buf = a->view.data;
  view->obj = Py_NewRef(self);
  view->len = len;
  view->readonly = readonly;
  view->itemsize = itemsize;
  view->format = const_cast<char*>(format);
  view->ndim = ndim;
  view->shape = (flags & PyBUF_ND) == PyBUF_ND ? extents : nullptr;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? extents + ndim : nullptr;
  view->suboffsets = nullptr;
  view->internal = nullptr;
  return 0;
}

}  // namespace arrayport::ext
