// arrayport.Array as a number: int(), float(), complex(), bool(), operator.index(), and __array__.
//
// NumPy 2's rules (the version installed when written: 2.4): int(), float() and complex() take a
// 0-d array only, bool() any array of one element, operator.index() a 0-d integer array. The
// element is read where the host can read it; device memory is refused rather than copied.
#include "array/array_internal.hpp"
#include "common/errors.hpp"
#include "common/gil.hpp"

#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime.hpp>

#include <cstring>
#include <string>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {

template <class T>
T load(const unsigned char* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// An integer element of `bits` bits, widened to the last type.
template <class T8, class T16, class T32, class T64>
T64 load_integer(const unsigned char* p, int bits) noexcept {
  switch (bits) {
    case 8: return load<T8>(p);
    case 16: return load<T16>(p);
    case 32: return load<T32>(p);
    default: return load<T64>(p);
  }
}

// The element of `a` (which has exactly one) as a Python bool, int, float or complex.
nb::object single_element(array_object* a, const char* what) {
  const auto kind = static_cast<memory_kind>(a->view.memory_kind);
  runtime::require_reachable(kind, what, "the array");  // managed memory without a device
  if (!is_host_accessible(kind))
    throw type_error(std::string(what) +
                     ": this array is in device memory, which the host cannot "
                     "read; copy it to the host first with .get() (" +
                     what + "(a.get()))");
  const dtype dt = dtype::from_c(a->view.dtype);
  alignas(16) unsigned char p[16] = {};
  if (runtime::is_available()) {  // device writes complete first; without a GPU there are none
    gil_release release;
    runtime::stream_synchronize(a->view.stream, array_device(a));
  }
  std::memcpy(p, a->view.data, dt.itemsize());
  return element_object(p, dt);
}

// int(), float() and complex(): a 0-d array's element; a complex one only for complex().
nb::object scalar_of(PyObject* self, const char* what, bool complex_ok) {
  array_object* a = as_array(self);
  if (a->view.ndim != 0)
    throw type_error(std::string(what) +
                     ": only 0-dimensional arrays can be converted to Python "
                     "scalars; this one has shape " +
                     shape_string(a->view.shape, a->view.ndim) +
                     " (index it, a[0], or use .get())");
  const dtype dt = dtype::from_c(a->view.dtype);
  if (dt.is_complex() && !complex_ok)
    throw type_error(std::string(what) + ": cannot convert an array of " + std::string(dt.name()) +
                     " to a real number (take .real of its .get(), or use complex())");
  return single_element(a, what);
}

}  // namespace

nb::object element_object(const unsigned char* p, dtype dt) {
  const element_value e = decode_element(p, dt);
  PyObject* v = nullptr;
  switch (e.kind) {
    case element_value::boolean: v = Py_NewRef(e.u ? Py_True : Py_False); break;
    case element_value::signed_int: v = PyLong_FromLongLong(e.i); break;
    case element_value::unsigned_int: v = PyLong_FromUnsignedLongLong(e.u); break;
    case element_value::complex: v = PyComplex_FromDoubles(e.re, e.im); break;
    case element_value::real: v = PyFloat_FromDouble(e.re); break;
  }
  if (!v) throw nb::python_error();
  return nb::steal(v);
}

element_value decode_element(const unsigned char* p, dtype dt) {
  element_value e{element_value::real};
  if (dt.is_bool()) {
    e.kind = element_value::boolean;
    e.u = *p != 0;
  } else if (dt.is_integer()) {
    e.kind = dt.is_signed() ? element_value::signed_int : element_value::unsigned_int;
    if (dt.is_signed())
      e.i = load_integer<std::int8_t, std::int16_t, std::int32_t, std::int64_t>(p, dt.bits);
    else
      e.u = load_integer<std::uint8_t, std::uint16_t, std::uint32_t, std::uint64_t>(p, dt.bits);
  } else if (dt.is_complex()) {
    e.kind = element_value::complex;
    if (dt.bits == 64) {
      e.re = load<float>(p);
      e.im = load<float>(p + 4);
    } else {
      e.re = load<double>(p);
      e.im = load<double>(p + 8);
    }
  } else if (dt == dtypes::float16) {
    e.re = static_cast<float>(load<float16_t>(p));
  } else if (dt == dtypes::bfloat16) {
    e.re = static_cast<float>(load<bfloat16_t>(p));
  } else if (dt == dtypes::float32) {
    e.re = load<float>(p);
  } else {
    e.re = load<double>(p);
  }
  return e;
}

PyObject* array_int(PyObject* self) {
  return guarded<PyObject*>(nullptr, [&] {
    return PyNumber_Long(scalar_of(self, "int", false).ptr());  // NaN and inf raise as for float
  });
}

PyObject* array_float(PyObject* self) {
  return guarded<PyObject*>(nullptr,
                            [&] { return PyNumber_Float(scalar_of(self, "float", false).ptr()); });
}

PyObject* array_complex(PyObject* self, PyObject*) {
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* {
    nb::object v = scalar_of(self, "complex", true);
    if (PyComplex_Check(v.ptr())) return v.release().ptr();
    const double d = PyFloat_AsDouble(v.ptr());  // ints round as float() rounds them
    if (d == -1.0 && PyErr_Occurred()) throw nb::python_error();
    return PyComplex_FromDoubles(d, 0.0);
  });
}

PyObject* array_index(PyObject* self) {
  return guarded<PyObject*>(nullptr, [&] {
    array_object* a = as_array(self);
    if (a->view.ndim != 0 || !dtype::from_c(a->view.dtype).is_integer())
      throw type_error(
          "only integer scalar arrays can be converted to a scalar index; this one "
          "has dtype " +
          std::string(dtype::from_c(a->view.dtype).name()) + " and shape " +
          shape_string(a->view.shape, a->view.ndim));
    return single_element(a, "operator.index").release().ptr();
  });
}

int array_bool(PyObject* self) {
  return guarded<int>(-1, [&] {
    array_object* a = as_array(self);
    const std::int64_t n = element_count(a->view);
    if (n > 1)
      throw value_error(
          "The truth value of an array with more than one element is ambiguous. "
          "Use a.any() or a.all()");
    if (n == 0)
      throw value_error(
          "The truth value of an empty array is ambiguous. Use `array.size > 0` to "
          "check that an array is not empty.");
    // The one element sits at the data pointer, whatever the strides.
    return PyObject_IsTrue(single_element(a, "bool").ptr());
  });
}

// __array__(dtype=None, copy=None), NumPy 2's protocol: host-readable memory as a NumPy array,
// without a copy unless dtype or copy=True asks for one (copy=False refuses one, as NumPy does).
// NumPy itself reads such memory through the buffer protocol first; this serves device memory
// (refused, saying how to copy) and callers of __array__ by name.
PyObject* array_array(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"dtype", "copy", nullptr};
  PyObject *dtype_obj = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:__array__", const_cast<char**>(keywords),
                                   &dtype_obj, &copy))
    return nullptr;
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* {
    array_object* a = as_array(self);
    if (copy != Py_None && !PyBool_Check(copy))
      throw type_error("__array__: copy: expected True, False or None, got " + type_name_of(copy));
    // Every argument checked before the memory is looked at.
    nb::module_ np = import_numpy("__array__");
    nb::object dt = nb::none();
    if (dtype_obj != Py_None) {
      try {
        dt = np.attr("dtype")(nb::handle(dtype_obj));
      } catch (nb::python_error& e) {
        if (!e.matches(PyExc_TypeError)) throw;
        throw type_error(std::string("__array__: dtype: ") + nb::str(e.value()).c_str());
      }
    }
    const auto kind = static_cast<memory_kind>(a->view.memory_kind);
    runtime::require_reachable(kind, "Array.__array__", "the array");
    if (!is_host_accessible(kind))
      throw type_error(
          "__array__: this array is in device memory, which NumPy cannot read; copy "
          "it to the host with .get() (np.asarray(a.get()))");
    if (dtype::from_c(a->view.dtype) == dtypes::bfloat16)
      throw type_error(
          "__array__: NumPy has no bfloat16 dtype; view it as uint16 "
          "(a.view('uint16')) or export it through DLPack");
    nb::object view = nb::steal(PyMemoryView_FromObject(self));
    if (!view.is_valid()) throw nb::python_error();
    using namespace nb::literals;
    return np.attr("asarray")(view, "dtype"_a = dt, "copy"_a = nb::handle(copy)).release().ptr();
  });
}

}  // namespace arrayport::ext
