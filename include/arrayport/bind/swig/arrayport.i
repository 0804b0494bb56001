/* SWIG typemaps: any Python array (NumPy, CuPy, PyTorch, arrayport, ...) for a C signature
 *   (T* data, int64_t n, int64_t stride)   or   (const T* data, int64_t n, int64_t stride)
 * (stride in elements), T one of float, double, int8_t ... uint64_t, through arrayport's C API
 * (arrayport/python/api.h). In your .i:  %include "arrayport/bind/swig/arrayport.i"  then
 *   %apply (float* ARRAYPORT_INOUT, int64_t ARRAYPORT_N, int64_t ARRAYPORT_STRIDE) { (float* x, int64_t n, int64_t stride) };
 * The patterns: ARRAYPORT_INOUT (writable), ARRAYPORT_IN (const: read-only arrays too), and
 * ARRAYPORT_HOST_INOUT / ARRAYPORT_HOST_IN / ARRAYPORT_DEVICE_INOUT / ARRAYPORT_DEVICE_IN, which
 * also require memory the host (CPU code) or the device (a kernel) can reach. Each has a
 * typecheck, so functions overloaded by element type dispatch on the array's dtype.
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

/* NumPy's name of a DLPack (code, bits), as every arrayport message spells dtypes. */
static const char* arrayport_swig_dtype_name(int code, int bits) {
  switch (code * 1000 + bits) {
    case 1 * 1000 + 8: return "uint8";
    case 1 * 1000 + 16: return "uint16";
    case 1 * 1000 + 32: return "uint32";
    case 1 * 1000 + 64: return "uint64";
    case 0 * 1000 + 8: return "int8";
    case 0 * 1000 + 16: return "int16";
    case 0 * 1000 + 32: return "int32";
    case 0 * 1000 + 64: return "int64";
    case 2 * 1000 + 16: return "float16";
    case 2 * 1000 + 32: return "float32";
    case 2 * 1000 + 64: return "float64";
    case 4 * 1000 + 16: return "bfloat16";
    case 5 * 1000 + 64: return "complex64";
    case 5 * 1000 + 128: return "complex128";
    case 6 * 1000 + 8: return "bool";
    default: return "an unnamed dtype";
  }
}

/* Acquires a 1-d array of DLPack (code, bits) under `flags`; 0 on success, -1 with a Python
 * error that names the argument, the dtype expected and the dtype and rank that came. */
static int arrayport_swig_acquire_1d(PyObject* obj, const char* name, unsigned flags, int code,
                                     int bits, arrayport_view_t* v, void** handle) {
  const arrayport_python_api_t* api = arrayport_swig_api();
  if (!api || api->acquire(obj, name, flags, v, handle) != 0) return -1;
  if (v->ndim != 1 || v->dtype.code != code || v->dtype.bits != bits || v->dtype.lanes != 1) {
    PyErr_Format(PyExc_TypeError, "%s: expected a 1-dimensional %s array, got a %d-dimensional %s one",
                 name, arrayport_swig_dtype_name(code, bits), (int)v->ndim,
                 v->dtype.lanes == 1 ? arrayport_swig_dtype_name(v->dtype.code, v->dtype.bits)
                                     : "vector-typed");
    api->release(*handle);
    *handle = NULL;
    return -1;
  }
  return 0;
}

/* The overload check: whether `obj` would be taken (no error left set). */
static int arrayport_swig_takes_1d(PyObject* obj, unsigned flags, int code, int bits) {
  arrayport_view_t v;
  void* handle = NULL;
  if (arrayport_swig_acquire_1d(obj, "argument", flags, code, bits, &v, &handle) != 0) {
    PyErr_Clear();
    return 0;
  }
  arrayport_swig_api()->release(handle);
  return 1;
}
%}

%define ARRAYPORT_SWIG_PATTERN(QUALIFIED, PATTERN, FLAGS, CODE, BITS)
%typemap(in) (QUALIFIED* PATTERN, int64_t ARRAYPORT_N, int64_t ARRAYPORT_STRIDE)
    (arrayport_view_t view, void* handle = NULL) {
  if (arrayport_swig_acquire_1d($input, "$1_name", FLAGS, CODE, BITS, &view, &handle) != 0)
    SWIG_fail;
  $1 = ($1_ltype)view.data;
  $2 = view.shape[0];
  $3 = view.strides[0];
}
%typemap(freearg) (QUALIFIED* PATTERN, int64_t ARRAYPORT_N, int64_t ARRAYPORT_STRIDE) {
  if (handle$argnum) arrayport_swig_api()->release(handle$argnum);
}
%typemap(typecheck, precedence=SWIG_TYPECHECK_POINTER)
    (QUALIFIED* PATTERN, int64_t ARRAYPORT_N, int64_t ARRAYPORT_STRIDE) {
  $1 = arrayport_swig_takes_1d($input, FLAGS, CODE, BITS);
}
%enddef

%define ARRAYPORT_SWIG_TYPEMAPS(CTYPE, CODE, BITS)
ARRAYPORT_SWIG_PATTERN(CTYPE, ARRAYPORT_INOUT, ARRAYPORT_ACQUIRE_WRITABLE, CODE, BITS)
ARRAYPORT_SWIG_PATTERN(const CTYPE, ARRAYPORT_IN, 0, CODE, BITS)
ARRAYPORT_SWIG_PATTERN(CTYPE, ARRAYPORT_HOST_INOUT, ARRAYPORT_ACQUIRE_WRITABLE | ARRAYPORT_ACQUIRE_HOST,
                       CODE, BITS)
ARRAYPORT_SWIG_PATTERN(const CTYPE, ARRAYPORT_HOST_IN, ARRAYPORT_ACQUIRE_HOST, CODE, BITS)
ARRAYPORT_SWIG_PATTERN(CTYPE, ARRAYPORT_DEVICE_INOUT,
                       ARRAYPORT_ACQUIRE_WRITABLE | ARRAYPORT_ACQUIRE_DEVICE, CODE, BITS)
ARRAYPORT_SWIG_PATTERN(const CTYPE, ARRAYPORT_DEVICE_IN, ARRAYPORT_ACQUIRE_DEVICE, CODE, BITS)
%enddef

ARRAYPORT_SWIG_TYPEMAPS(float, 2, 32)
ARRAYPORT_SWIG_TYPEMAPS(double, 2, 64)
ARRAYPORT_SWIG_TYPEMAPS(int8_t, 0, 8)
ARRAYPORT_SWIG_TYPEMAPS(int16_t, 0, 16)
ARRAYPORT_SWIG_TYPEMAPS(int32_t, 0, 32)
ARRAYPORT_SWIG_TYPEMAPS(int64_t, 0, 64)
ARRAYPORT_SWIG_TYPEMAPS(uint8_t, 1, 8)
ARRAYPORT_SWIG_TYPEMAPS(uint16_t, 1, 16)
ARRAYPORT_SWIG_TYPEMAPS(uint32_t, 1, 32)
ARRAYPORT_SWIG_TYPEMAPS(uint64_t, 1, 64)
