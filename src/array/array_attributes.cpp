// arrayport.Array's plain attributes (shape, strides, dtype, memory, device, base, ...) and len().
#include "array/array_internal.hpp"
#include "common/errors.hpp"
#include "array/from_foreign.hpp"

#include <arrayport/memory_kind.hpp>
#include <arrayport/python/spellings.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arrayport::ext {

PyObject* get_shape(PyObject* self, void*) {
  return tuple_of(as_array(self)->view.shape, as_array(self)->view.ndim);
}
PyObject* get_strides(PyObject* self, void*) {
  array_object* a = as_array(self);
  return tuple_of(a->view.strides, a->view.ndim, static_cast<std::int64_t>(itemsize_of(a)));
}
PyObject* get_ndim(PyObject* self, void*) { return PyLong_FromLong(as_array(self)->view.ndim); }
PyObject* get_size(PyObject* self, void*) {
  return PyLong_FromLongLong(element_count(as_array(self)->view));
}
PyObject* get_itemsize(PyObject* self, void*) {
  return PyLong_FromSize_t(itemsize_of(as_array(self)));
}
// size * itemsize, as NumPy's: also for a broadcast view, whose memory spans fewer bytes.
PyObject* get_nbytes(PyObject* self, void*) {
  return guarded<PyObject*>(nullptr, [&] {
    return PyLong_FromLongLong(check_layout("nbytes", as_array(self)->view).nbytes);
  });
}
PyObject* get_ptr(PyObject* self, void*) { return PyLong_FromVoidPtr(as_array(self)->view.data); }
PyObject* get_memory(PyObject* self, void*) {
  auto kind = static_cast<memory_kind>(as_array(self)->view.memory_kind);
  std::string_view name = to_string(kind);
  return PyUnicode_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
}
PyObject* get_device(PyObject* self, void*) {
  const arrayport_device_t d = as_array(self)->view.device;
  const char* type = d.device_type == ARRAYPORT_DEVICE_CUDA           ? "cuda"
                     : d.device_type == ARRAYPORT_DEVICE_CUDA_MANAGED ? "cuda_managed"
                     : d.device_type == ARRAYPORT_DEVICE_CUDA_HOST    ? "cuda_host"
                                                                      : "cpu";
  return Py_BuildValue("(si)", type, d.device_id);
}
PyObject* get_readonly(PyObject* self, void*) {
  return PyBool_FromLong((as_array(self)->view.flags & ARRAYPORT_VIEW_READONLY) != 0);
}
PyObject* get_base(PyObject* self, void*) {
  PyObject* base = as_array(self)->base;
  // A view of a foreign array holds it through an acquired-view capsule: show the producer.
  if (PyObject* producer = acquired_producer(base)) return Py_NewRef(producer);
  return Py_NewRef(base ? base : Py_None);
}
PyObject* get_c_contiguous(PyObject* self, void*) {
  return PyBool_FromLong(is_c_contiguous(as_array(self)->view));
}
PyObject* get_f_contiguous(PyObject* self, void*) {
  return PyBool_FromLong(is_f_contiguous(as_array(self)->view));
}

PyObject* get_dtype(PyObject* self, void*) {
  dtype dt = dtype::from_c(as_array(self)->view.dtype);
  if (dt != dtypes::bfloat16) {
    // A NumPy dtype where NumPy is installed; its name otherwise. NumPy's dtypes of native byte
    // order are its singletons: each is made once (under the GIL) and kept, not made per call
    // (a microsecond each).
    static std::vector<std::pair<dtype, PyObject*>> made;
    for (const auto& [d, obj] : made)
      if (d == dt) return Py_NewRef(obj);
    PyObject* numpy = PyImport_ImportModule("numpy");
    if (numpy) {
      std::string typestr = to_typestr(dt);
      PyObject* result = PyObject_CallMethod(numpy, "dtype", "s", typestr.c_str());
      Py_DECREF(numpy);
      if (result) made.emplace_back(dt, Py_NewRef(result));
      return result;
    }
    PyErr_Clear();
  }
  std::string_view name = dt.name();
  return PyUnicode_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
}

Py_ssize_t array_length(PyObject* self) {
  array_object* a = as_array(self);
  if (a->view.ndim == 0) {
    PyErr_SetString(PyExc_TypeError, "len() of a 0-d arrayport.Array");
    return -1;
  }
  return static_cast<Py_ssize_t>(a->view.shape[0]);
}

}  // namespace arrayport::ext
