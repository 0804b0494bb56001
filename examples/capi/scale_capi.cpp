// The example kernel through the raw CPython API: PyArg_ParseTuple with arrayport's O& converter.
#include <arrayport/capi.hpp>

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

PyMethodDef methods[] = {
    {"scale", scale, METH_VARARGS, "scale(x, f): x *= f in place."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "scale_capi", "The example kernel, CPython API.", -1,
                      methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_scale_capi() { return PyModule_Create(&module); }
