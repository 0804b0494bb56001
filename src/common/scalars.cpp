// Python numbers -> element bytes for every supported dtype.
#include "common/scalars.hpp"

#include <arrayport/python/limited_api.hpp>

#include <nanobind/nanobind.h>

#include <complex>
#include <cstdint>
#include <cstring>
#include <string>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {

template <class T>
void store(unsigned char* out, T v) {
  std::memcpy(out, &v, sizeof v);
}

[[noreturn]] void fail(PyObject* type, const std::string& msg) {
  PyErr_SetString(type, msg.c_str());
  throw nb::python_error();
}

// An integer value of a Python int (or of a float, truncated as NumPy does).
PyObject* as_int(PyObject* value, dtype dt, const std::string& name) {
  if (PyFloat_Check(value)) {
    const double d = python::limited::float_value(value);
    if (d != d) fail(PyExc_ValueError, name + ": cannot convert NaN to " + std::string(dt.name()));
    if (d - d != 0.0)
      fail(PyExc_OverflowError, name + ": " + (d > 0 ? "inf" : "-inf") + " is out of range for " +
                                    std::string(dt.name()));
    return PyNumber_Long(value);
  }
  if (PyComplex_Check(value))
    fail(PyExc_TypeError, name + ": cannot convert a complex number to " + std::string(dt.name()));
  PyObject* i = PyNumber_Index(value);
  if (!i) {
    PyErr_Clear();
    fail(PyExc_TypeError, name + ": expected a number for dtype " + std::string(dt.name()) +
                              ", got " + python::limited::tp_name(Py_TYPE(value)));
  }
  return i;
}

// The value as a message shows it: a float as written (1e+300, not its 301 integer digits), an
// integer of many digits by its length.
std::string shown(PyObject* value, PyObject* as_integer) {
  nb::str text = nb::str(nb::handle(PyFloat_Check(value) ? value : as_integer));
  std::string s = text.c_str();
  if (s.size() <= 40) return s;
  return s.substr(0, 12) + "... (an integer of " + std::to_string(s.size() - (s[0] == '-')) +
         " digits)";
}

}  // namespace

void scalar_to_bytes(PyObject* value, dtype dt, unsigned char* out, const char* name_c) {
  const std::string name = name_c;
  if (dt.is_bool()) {
    int truth = PyObject_IsTrue(value);
    if (truth < 0) throw nb::python_error();
    *out = static_cast<unsigned char>(truth);
    return;
  }
  if (dt.is_integer()) {
    nb::object i = nb::steal(as_int(value, dt, name));
    if (!i.is_valid()) throw nb::python_error();
    const int bits = dt.bits;
    auto out_of_range = [&]() {
      fail(PyExc_OverflowError,
           name + ": " + shown(value, i.ptr()) + " is out of range for " + std::string(dt.name()));
    };
    if (dt.is_signed()) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
      long long lo = bits == 64 ? INT64_MIN : -(1LL << (bits - 1));
      long long hi = bits == 64 ? INT64_MAX : (1LL << (bits - 1)) - 1;
      if (overflow || v < lo || v > hi) out_of_range();
      switch (bits) {
        case 8: store(out, static_cast<std::int8_t>(v)); return;
        case 16: store(out, static_cast<std::int16_t>(v)); return;
        case 32: store(out, static_cast<std::int32_t>(v)); return;
        default: store(out, static_cast<std::int64_t>(v)); return;
      }
    }
    if (PyObject_RichCompareBool(i.ptr(), nb::int_(0).ptr(), Py_LT) == 1) out_of_range();
    unsigned long long v = PyLong_AsUnsignedLongLong(i.ptr());
    if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
      PyErr_Clear();
      out_of_range();
    }
    if (bits < 64 && v > (1ULL << bits) - 1) out_of_range();
    switch (bits) {
      case 8: store(out, static_cast<std::uint8_t>(v)); return;
      case 16: store(out, static_cast<std::uint16_t>(v)); return;
      case 32: store(out, static_cast<std::uint32_t>(v)); return;
      default: store(out, static_cast<std::uint64_t>(v)); return;
    }
  }
  if (dt.is_complex()) {
    const std::complex<double> c = python::limited::complex_value(value);
    if (c.real() == -1.0 && PyErr_Occurred()) {
      if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw nb::python_error();
      PyErr_Clear();
      fail(PyExc_TypeError, name + ": expected a number for dtype " + std::string(dt.name()) +
                                ", got " + python::limited::tp_name(Py_TYPE(value)));
    }
    if (dt.bits == 64)
      store(out, std::complex<float>(static_cast<float>(c.real()), static_cast<float>(c.imag())));
    else
      store(out, c);
    return;
  }
  if (PyComplex_Check(value))
    fail(PyExc_TypeError, name + ": cannot convert a complex number to " + std::string(dt.name()));
  double d = PyFloat_AsDouble(value);
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    fail(PyExc_TypeError, name + ": expected a number for dtype " + std::string(dt.name()) +
                              ", got " + python::limited::tp_name(Py_TYPE(value)));
  }
  if (dt == dtypes::float64)
    store(out, d);
  else if (dt == dtypes::float32)
    store(out, static_cast<float>(d));
  else if (dt == dtypes::float16)
    store(out, float16_t(static_cast<float>(d)));
  else
    store(out, bfloat16_t(static_cast<float>(d)));
}

}  // namespace arrayport::ext
