// What the stable ABI (Py_LIMITED_API, abi3) hides from an extension, read one way with it and
// without: arrayport._core is built on it for Python >= 3.12, and an extension that includes
// these headers may be too. Without Py_LIMITED_API each call is the field or macro it replaces.
#pragma once

#include <arrayport/config.hpp>

#include <Python.h>

#include <complex>
#include <string>

namespace ARRAYPORT_NAMESPACE {
namespace python {
namespace limited {

// Tuples: the macros read the object's fields, which the stable ABI does not show.
inline Py_ssize_t tuple_size(PyObject* t) noexcept {
#ifdef Py_LIMITED_API
  return PyTuple_Size(t);
#else
  return PyTuple_GET_SIZE(t);
#endif
}

/// A borrowed item of a tuple; `i` is in range.
inline PyObject* tuple_item(PyObject* t, Py_ssize_t i) noexcept {
#ifdef Py_LIMITED_API
  return PyTuple_GetItem(t, i);
#else
  return PyTuple_GET_ITEM(t, i);
#endif
}

/// Fills slot `i` of a new tuple, stealing `v`.
inline void tuple_fill(PyObject* t, Py_ssize_t i, PyObject* v) noexcept {
#ifdef Py_LIMITED_API
  PyTuple_SetItem(t, i, v);
#else
  PyTuple_SET_ITEM(t, i, v);
#endif
}

/// A Python float's value (`f` is a float).
inline double float_value(PyObject* f) noexcept {
#ifdef Py_LIMITED_API
  return PyFloat_AsDouble(f);
#else
  return PyFloat_AS_DOUBLE(f);
#endif
}

/// A str's UTF-8 bytes, or nullptr with an error set (PyUnicode_AsUTF8 is not in the stable ABI).
inline const char* utf8(PyObject* s) noexcept { return PyUnicode_AsUTF8AndSize(s, nullptr); }

inline PyTypeObject* type_base(PyTypeObject* t) noexcept {
#ifdef Py_LIMITED_API
  return static_cast<PyTypeObject*>(PyType_GetSlot(t, Py_tp_base));
#else
  return t->tp_base;
#endif
}

/// Whether instances of `t` export the buffer protocol.
inline bool has_buffer(PyTypeObject* t) noexcept {
#ifdef Py_LIMITED_API
  return PyType_GetSlot(t, Py_bf_getbuffer) != nullptr;
#else
  return t->tp_as_buffer && t->tp_as_buffer->bf_getbuffer;
#endif
}

namespace detail {

// A type attribute that is an int (__basicsize__, __weakrefoffset__), or -1; no error left set.
inline Py_ssize_t type_int(PyTypeObject* t, const char* name) noexcept {
  PyObject* v = PyObject_GetAttrString(reinterpret_cast<PyObject*>(t), name);
  const Py_ssize_t n = v && PyLong_Check(v) ? PyLong_AsSsize_t(v) : -1;
  Py_XDECREF(v);
  PyErr_Clear();
  return n;
}

// A type attribute that is a str, or "" (no error left set).
inline std::string type_str(PyTypeObject* t, const char* name) {
  PyObject* v = PyObject_GetAttrString(reinterpret_cast<PyObject*>(t), name);
  const char* s = v && PyUnicode_Check(v) ? utf8(v) : nullptr;
  std::string out = s ? s : "";
  Py_XDECREF(v);
  PyErr_Clear();
  return out;
}

// The deallocator CPython gives every class a class statement (or type()) makes, read off a
// probe class once; nullptr if the probe could not be made.
inline void* class_statement_dealloc() noexcept {
  static void* const dealloc = [] {
    PyObject* probe =
        PyObject_CallFunction(reinterpret_cast<PyObject*>(&PyType_Type), "s(O){}", "probe",
                              reinterpret_cast<PyObject*>(&PyBaseObject_Type));
    void* d =
        probe ? PyType_GetSlot(reinterpret_cast<PyTypeObject*>(probe), Py_tp_dealloc) : nullptr;
    Py_XDECREF(probe);
    PyErr_Clear();
    return d;
  }();
  return dealloc;
}

}  // namespace detail

/// Whether a class statement (or type()) made `t`: its layout is Python's, whatever its name
/// claims. Types made in C (static, or from a PyType_Spec) are not. Unsure is yes.
inline bool made_by_class_statement(PyTypeObject* t) noexcept {
  if (!(PyType_GetFlags(t) & Py_TPFLAGS_HEAPTYPE)) return false;
  void* const dealloc = detail::class_statement_dealloc();
  return !dealloc || PyType_GetSlot(t, Py_tp_dealloc) == dealloc;
}

/// The type's tp_name: "numpy.ndarray" for a C type, "list" for a builtin, the bare name for a
/// class statement's type. Rebuilt from __module__ and __name__ under the stable ABI.
inline std::string tp_name(PyTypeObject* t) {
#ifdef Py_LIMITED_API
  std::string name = detail::type_str(t, "__name__");
  if (made_by_class_statement(t)) return name;
  const std::string module = detail::type_str(t, "__module__");
  return module.empty() || module == "builtins" ? name : module + "." + name;
#else
  return t->tp_name;
#endif
}

/// tp_basicsize: the bytes of an instance before any variable part.
inline Py_ssize_t basic_size(PyTypeObject* t) noexcept {
#ifdef Py_LIMITED_API
  return detail::type_int(t, "__basicsize__");
#else
  return t->tp_basicsize;
#endif
}

/// tp_weaklistoffset: where an instance keeps its weak references (0: it has none).
inline Py_ssize_t weaklist_offset(PyTypeObject* t) noexcept {
#ifdef Py_LIMITED_API
  return detail::type_int(t, "__weakrefoffset__");
#else
  return t->tp_weaklistoffset;
#endif
}

/// PyComplex_AsCComplex: a complex, an object with __complex__, or a real number; on failure the
/// real part is -1.0 with an error set. (Py_complex is not in the stable ABI.)
inline std::complex<double> complex_value(PyObject* v) noexcept {
#ifdef Py_LIMITED_API
  if (PyComplex_Check(v)) return {PyComplex_RealAsDouble(v), PyComplex_ImagAsDouble(v)};
  if (PyObject_HasAttrString(reinterpret_cast<PyObject*>(Py_TYPE(v)), "__complex__") == 1) {
    PyObject* z = PyObject_CallMethod(v, "__complex__", nullptr);
    if (!z) return {-1.0, 0.0};
    if (!PyComplex_Check(z)) {
      PyErr_SetString(PyExc_TypeError, "__complex__ returned a non-complex");
      Py_DECREF(z);
      return {-1.0, 0.0};
    }
    const std::complex<double> out{PyComplex_RealAsDouble(z), PyComplex_ImagAsDouble(z)};
    Py_DECREF(z);
    return out;
  }
  return {PyFloat_AsDouble(v), 0.0};
#else
  const Py_complex c = PyComplex_AsCComplex(v);
  return {c.real, c.imag};
#endif
}

}  // namespace limited
}  // namespace python
}  // namespace ARRAYPORT_NAMESPACE
