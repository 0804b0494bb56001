// The example kernel through the raw CPython API: PyArg_ParseTuple with arrayport's O& converter.
#include <arrayport/bind/capi.hpp>

#include "scale.hpp"

namespace {

PyObject* scale(PyObject*, PyObject* args) {
  arrayport::capi::arg<float, 1> x("x");
  float f = 0.f;
  if (!PyArg_ParseTuple(args, "O&f:scale", arrayport::capi::convert<float, 1>, &x, &f)) return nullptr;
  try {
    example::scale(x.view(), f, arrayport::python::current_stream());
  } catch (...) {
    arrayport::python::set_error_from_current_exception();
    return nullptr;
  }
  Py_RETURN_NONE;
}

// How a kernel's CUDA failure leaves an extension: caught, and set as arrayport.CudaError (or
// OutOfMemoryError) with the code, name, api and sticky attributes arrayport's own errors carry.
// Raises the error a failed call with `status` and `name` would (for the tests).
PyObject* raise_cuda_error(PyObject*, PyObject* args) {
  int status = 0;
  const char* name = nullptr;
  if (!PyArg_ParseTuple(args, "is:raise_cuda_error", &status, &name)) return nullptr;
  try {
    if (status == 2)  // cudaErrorMemoryAllocation, as arrayport's runtime shim throws it
      throw arrayport::out_of_memory(status, name, "out of memory", "cudaMalloc(&p, n)", __FILE__,
                                     __LINE__);
    throw arrayport::cuda_error(status, name, "made up for the test", "scale_kernel<<<...>>>",
                                __FILE__, __LINE__);
  } catch (...) {
    arrayport::python::set_error_from_current_exception();
    return nullptr;
  }
}

PyMethodDef methods[] = {
    {"scale", scale, METH_VARARGS, "scale(x, f): x *= f in place."},
    {"raise_cuda_error", raise_cuda_error, METH_VARARGS,
     "raise_cuda_error(status, name): the CudaError a failed CUDA call raises."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "scale_capi", "The example kernel, CPython API.", -1,
                      methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_scale_capi() { return PyModule_Create(&module); }
