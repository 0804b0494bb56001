/* SWIG typemaps: any Python array (NumPy, CuPy, PyTorch, arrayport, ...) for a C signature
 *   (float* data, int64_t n, int64_t stride)    -- and the same for double, int32_t, int64_t
 * through arrayport's C API (arrayport/python/api.h). In your .i:  %include "arrayport/bind/swig/arrayport.i"
 * then  %apply (float* ARRAYPORT_INOUT, int64_t ARRAYPORT_N, int64_t ARRAYPORT_STRIDE) { (float* x, int64_t n, int64_t stride) };
 */
%{
#include <arrayport/python/api.h>

static const arrayport_python_api_t* arrayport_swig_api(void) {
  static const arrayport_python_api_t* api = NULL;
  if (!api) {
    PyObject* core = PyImport_ImportModule("arrayport._core");
    if (!core) return NULL;
    PyObject* capsule = PyObject_GetAttrString(core, "_C_API");
    Py_DECREF(core);
    if (!capsule) return NULL;
    api = (const arrayport_python_api_t*)PyCapsule_GetPointer(capsule, ARRAYPORT_PYTHON_API_CAPSULE);
    Py_DECREF(capsule);
    if (api && api->abi_major != ARRAYPORT_PYTHON_API_MAJOR) {
      PyErr_SetString(PyExc_ImportError, "arrayport._core exports another major C API version");
      api = NULL;
    }
  }
  return api;
}

/* Acquires a 1-d array of the given DLPack code/bits; 0 on success, -1 with a Python error. */
static int arrayport_swig_acquire_1d(PyObject* obj, const char* name, unsigned flags, int code,
                                     int bits, arrayport_view_t* v, void** handle) {
  const arrayport_python_api_t* api = arrayport_swig_api();
  if (!api || api->acquire(obj, name, flags, v, handle) != 0) return -1;
  if (v->ndim != 1 || v->dtype.code != code || v->dtype.bits != bits || v->dtype.lanes != 1) {
    PyErr_Format(PyExc_TypeError, "%s: expected a 1-dimensional array of DLPack type (%d, %d bits), "
                 "got %d dimensions of type (%d, %d bits)", name, code, bits, (int)v->ndim,
                 (int)v->dtype.code, (int)v->dtype.bits);
    api->release(*handle);
    *handle = NULL;
    return -1;
  }
  return 0;
}
%}

%define ARRAYPORT_SWIG_TYPEMAPS(CTYPE, CODE, BITS)
%typemap(in) (CTYPE* ARRAYPORT_INOUT, int64_t ARRAYPORT_N, int64_t ARRAYPORT_STRIDE)
    (arrayport_view_t view, void* handle = NULL) {
  if (arrayport_swig_acquire_1d($input, "$1_name", ARRAYPORT_ACQUIRE_WRITABLE, CODE, BITS, &view,
                                &handle) != 0) SWIG_fail;
  $1 = (CTYPE*)view.data;
  $2 = view.shape[0];
  $3 = view.strides[0];
}
%typemap(freearg) (CTYPE* ARRAYPORT_INOUT, int64_t ARRAYPORT_N, int64_t ARRAYPORT_STRIDE) {
  if (handle$argnum) arrayport_swig_api()->release(handle$argnum);
}
%enddef

ARRAYPORT_SWIG_TYPEMAPS(float, 2, 32)
ARRAYPORT_SWIG_TYPEMAPS(double, 2, 64)
ARRAYPORT_SWIG_TYPEMAPS(int32_t, 0, 32)
ARRAYPORT_SWIG_TYPEMAPS(int64_t, 0, 64)
