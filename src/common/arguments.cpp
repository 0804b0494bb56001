// The one parser of each argument kind (arguments.hpp); their messages are the ones docs/errors.md
// lists.
#include "common/arguments.hpp"

#include <arrayport/c/view.h>
#include <arrayport/error.hpp>
#include <arrayport/memory_resource.hpp>
#include <arrayport/python/spellings.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/python/limited_api.hpp>

#include <cstring>
#include <limits>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {
cuda_argument_hooks g_cuda;  // set once, at module init, before any argument is parsed
}  // namespace

void set_cuda_argument_hooks(const cuda_argument_hooks& hooks) noexcept { g_cuda = hooks; }

std::string arg_prefix(const char* what, const char* name) {
  std::string p = what && *what ? std::string(what) + ": " : std::string();
  return name && *name ? p + name + ": " : p;
}

std::string type_name_of(PyObject* obj) { return python::limited::tp_name(Py_TYPE(obj)); }

namespace {

std::string repr_of(PyObject* obj) {
  PyObject* r = PyObject_Repr(obj);
  if (!r) {
    PyErr_Clear();
    return type_name_of(obj);
  }
  const char* s = python::limited::utf8(r);
  std::string out = s ? s : type_name_of(obj);
  if (!s) PyErr_Clear();
  Py_DECREF(r);
  return out;
}

}  // namespace

// obj as a Python int (new reference), through __index__; TypeError naming the argument for any
// other type, and for an __index__ that raises (its message kept).
nb::object index_arg(PyObject* obj, const std::string& prefix, const char* expected) {
  if (PyBool_Check(obj) || !PyIndex_Check(obj))
    throw type_error(prefix + "expected " + expected + ", got " + type_name_of(obj));
  PyObject* v = PyNumber_Index(obj);
  if (!v) {
    if (!PyErr_ExceptionMatches(PyExc_Exception)) throw nb::python_error();  // KeyboardInterrupt
    nb::python_error e;  // fetched: reported by type and message, without the traceback
    nb::str message = nb::str(e.value());
    throw type_error(prefix + "expected " + expected + ", got " + type_name_of(obj) +
                     ", whose __index__ raised " + type_name_of(e.value().ptr()) + ": " +
                     message.c_str());
  }
  return nb::steal(v);
}

namespace {

// index_arg's result: an int is taken as it is (PyNumber_Index returns an int itself), anything
// else through `other` (an index_arg call), so that its message strings are made only then: the
// strings made on every call were half of empty()'s.
template <class Other>
nb::object index_of(PyObject* obj, Other other) {
  if (PyLong_Check(obj) && !PyBool_Check(obj)) return nb::borrow(obj);
  return other();
}

}  // namespace

std::int64_t int_arg(PyObject* obj, const char* what, const char* name, std::int64_t lo,
                     std::int64_t hi, const char* expected) {
  const auto prefix = [&] { return arg_prefix(what, name); };
  nb::object v = index_of(obj, [&] { return index_arg(obj, prefix(), expected); });
  int overflow = 0;
  const long long i = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (i == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow || i < lo || i > hi)
    throw value_error(prefix() + "expected " + expected + ", got " + repr_of(v.ptr()));
  return i;
}

bool bool_arg(PyObject* obj, const char* what, const char* name) {
  if (PyBool_Check(obj)) return obj == Py_True;
  const std::string t = python::limited::tp_name(Py_TYPE(obj));
  if (t == "numpy.bool" || t == "numpy.bool_") {
    const int truth = PyObject_IsTrue(obj);
    if (truth < 0) throw nb::python_error();
    return truth != 0;
  }
  throw type_error(arg_prefix(what, name) + "expected True or False, got " + repr_of(obj));
}

std::optional<int> device_arg(PyObject* obj, const char* what, const char* name, bool needs_device,
                              bool none_ok) {
  if (obj == Py_None && none_ok) return std::nullopt;
  const auto prefix = [&] { return arg_prefix(what, name); };
  nb::object v;
  int index = 0;
  if (g_cuda.device_index_of && g_cuda.device_index_of(obj, index)) {
    v = nb::int_(index);  // a Device: its index takes the int's path, so both behave alike
  } else {
    if (obj == Py_None || PyBool_Check(obj) || !PyIndex_Check(obj))
      throw type_error(prefix() + "expected " +
                       (none_ok ? "None, an int or an arrayport.cuda.Device"
                                : "an int or an arrayport.cuda.Device") +
                       ", got " + type_name_of(obj));
    v = index_of(obj, [&] { return index_arg(obj, prefix(), "a device index"); });
  }
  int overflow = 0;
  const long long i = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (i == -1 && PyErr_Occurred()) throw nb::python_error();
  // Wrong on every machine first: a negative index. (On overflow i is -1, not the value.)
  if (overflow < 0 || (overflow == 0 && i < 0))
    throw value_error(prefix() + "expected a device index >= 0, got " + repr_of(v.ptr()));
  const int n = runtime::device_count();
  const auto past_last = [&] {
    return value_error(prefix() + "expected a device index in [0, " + std::to_string(n) +
                       ") (this machine has " + std::to_string(n) +
                       (n == 1 ? " CUDA device" : " CUDA devices") + "), got " + repr_of(v.ptr()));
  };
  if (overflow > 0 || i > std::numeric_limits<int>::max()) {  // no machine has that many
    if (n > 0) throw past_last();
    throw value_error(prefix() + "expected a device index that fits an int, got " +
                      repr_of(v.ptr()));
  }
  if (needs_device) runtime::require_device(what);
  if (n > 0 && i >= n) throw past_last();
  return static_cast<int>(i);
}

std::optional<memory_kind> memory_arg(PyObject* obj, const char* what) {
  if (obj == Py_None) return std::nullopt;
  if (!PyUnicode_Check(obj))
    throw type_error(arg_prefix(what, "memory") +
                     "expected one of 'device', 'managed', 'pinned', 'host' or None, got " +
                     type_name_of(obj));
  const char* name = python::limited::utf8(obj);
  if (!name) throw nb::python_error();
  try {
    return parse_memory_kind(name);
  } catch (const value_error& e) {  // its message starts "memory: "
    throw value_error(arg_prefix(what, nullptr) + e.what());
  }
}

memory_kind parse_memory(PyObject* obj, const char* what) {
  return memory_arg(obj, what).value_or(default_memory_kind());
}

// ---- dtype= ------------------------------------------------------------------------------------

namespace {

std::string str_attr(nb::handle d, const char* attr) {
  nb::object v = d.attr(attr);
  if (!PyUnicode_Check(v.ptr()))
    throw type_error("expected a dtype name, a NumPy dtype or a Python number type, got " +
                     type_name_of(d.ptr()) + " whose ." + attr + " is a " + type_name_of(v.ptr()));
  return python::limited::utf8(v.ptr());
}

dtype parse_dtype_unprefixed(nb::handle d) {
  if (PyUnicode_Check(d.ptr())) {
    const char* utf8 = python::limited::utf8(d.ptr());
    if (!utf8) throw nb::python_error();
    std::string name = utf8;
    try {
      return parse_dtype_name(name);
    } catch (const type_error&) {
    }
    // A typestr: '<f4', '|b1', or 'f4', 'i8', ... as NumPy spells them without a byte order.
    const bool ordered = !name.empty() && std::strchr("<>|=", name[0]) != nullptr;
    try {
      return parse_typestr(ordered ? name : "<" + name);
    } catch (const type_error&) {
      throw type_error("dtype: unsupported dtype '" + name + "': expected a name (" +
                       std::string(arrayport::detail::supported_dtype_names) +
                       ") or a typestr such as '<f4' or 'f4'");
    }
  }
  if (d.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) return dtypes::float64;
  if (d.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) return dtypes::int64;
  if (d.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) return dtypes::bool_;
  if (d.ptr() == reinterpret_cast<PyObject*>(&PyComplex_Type)) return dtypes::complex128;
  if (nb::hasattr(d, "str") && nb::hasattr(d, "kind"))  // a NumPy dtype
    return parse_typestr(str_attr(d, "str"));
  if (nb::hasattr(d, "__name__"))  // NumPy scalar types (numpy.float32) and ml_dtypes' bfloat16
    return parse_dtype_name(str_attr(d, "__name__"));
  throw type_error("dtype: expected a dtype name, a NumPy dtype or a Python number type, got " +
                   type_name_of(d.ptr()));
}

// Every message names the argument: "dtype: ...".
std::string dtype_message(const char* what) {
  const std::string m = what;
  return m.rfind("dtype: ", 0) == 0 ? m : "dtype: " + m;
}

}  // namespace

dtype parse_dtype(nb::handle d) {
  if (d.is_none()) return dtypes::float64;
  try {
    return parse_dtype_unprefixed(d);
  } catch (const type_error& e) {
    throw type_error(dtype_message(e.what()));
  } catch (const value_error& e) {
    throw value_error(dtype_message(e.what()));
  }
}

// ---- shape= ------------------------------------------------------------------------------------

std::vector<std::int64_t> parse_shape(nb::handle shape, const char* what) {
  const auto prefix = [&] { return arg_prefix(what, "shape"); };
  std::vector<std::int64_t> out;
  auto extent = [&](nb::handle h, std::size_t i) {
    const auto at = [&] { return " at dimension " + std::to_string(i); };
    if (PyBool_Check(h.ptr()) || !PyIndex_Check(h.ptr()))
      throw type_error(prefix() + "expected ints, got " + type_name_of(h.ptr()) + at());
    nb::object v =
        index_of(h.ptr(), [&] { return index_arg(h.ptr(), prefix(), ("ints" + at()).c_str()); });
    int overflow = 0;
    const long long e = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (e == -1 && PyErr_Occurred()) throw nb::python_error();
    if (overflow > 0) throw value_error(prefix() + "extent" + at() + " overflows int64");
    if (overflow < 0 || e < 0)
      throw value_error(prefix() + "expected non-negative extents, got " + repr_of(v.ptr()) + at());
    out.push_back(e);
  };
  if (!PyBool_Check(shape.ptr()) && PyIndex_Check(shape.ptr())) {
    extent(shape, 0);
  } else if (PySequence_Check(shape.ptr()) && !PyUnicode_Check(shape.ptr()) &&
             !PyBytes_Check(shape.ptr())) {
    std::size_t i = 0;
    for (nb::handle h : nb::borrow<nb::sequence>(shape)) {
      if (i == ARRAYPORT_MAX_NDIM + 1) break;  // enough to say it has too many
      extent(h, i++);
    }
  } else {
    throw type_error(prefix() + "expected an int or a sequence of ints, got " +
                     type_name_of(shape.ptr()));
  }
  if (out.size() > ARRAYPORT_MAX_NDIM) {
    const Py_ssize_t n = PySequence_Size(shape.ptr());
    if (n < 0) throw nb::python_error();
    throw value_error(prefix() + "at most " + std::to_string(ARRAYPORT_MAX_NDIM) +
                      " dimensions, got " + std::to_string(n));
  }
  return out;
}

// ---- stream= -----------------------------------------------------------------------------------

std::uintptr_t handle_arg(PyObject* obj, const std::string& what) {
  if (PyBool_Check(obj) || !PyIndex_Check(obj))
    throw type_error(what + ": a stream handle must be an int (a cudaStream_t address), got '" +
                     type_name_of(obj) + "'");
  nb::object v = index_arg(obj, what + ": ", "a stream handle (an int)");
  int overflow = 0;
  const long long s = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (s == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow < 0 || (overflow == 0 && s < 0))
    throw value_error(what +
                      ": a stream handle must be non-negative (a cudaStream_t address), got " +
                      repr_of(v.ptr()));
  const unsigned long long u = PyLong_AsUnsignedLongLong(v.ptr());
  if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    throw value_error(what + ": a stream handle must fit in " +
                      std::to_string(8 * sizeof(std::uintptr_t)) + " bits, got " +
                      repr_of(v.ptr()));
  }
  return static_cast<std::uintptr_t>(u);
}

// None: the calling thread's current stream (what `with arrayport.cuda.Stream():` set).
stream_handle parse_stream(nb::handle stream, const char* what) {
  if (stream.is_none()) return g_cuda.current_stream ? g_cuda.current_stream() : nullptr;
  const std::string name = arg_prefix(what, "stream");
  const std::string label = name.substr(0, name.size() - 2);  // without the ": "
  if (nb::hasattr(stream, "__cuda_stream__")) {
    nb::object attr = stream.attr("__cuda_stream__");
    nb::object t = PyCallable_Check(attr.ptr()) ? attr() : attr;
    if (!PyTuple_Check(t.ptr()) || python::limited::tuple_size(t.ptr()) != 2)
      throw type_error(name + "__cuda_stream__() must return a (version, handle) tuple, got " +
                       repr_of(t.ptr()));
    return reinterpret_cast<stream_handle>(
        handle_arg(python::limited::tuple_item(t.ptr(), 1), label + ".__cuda_stream__()[1]"));
  }
  if (!PyBool_Check(stream.ptr()) && PyIndex_Check(stream.ptr()))
    return reinterpret_cast<stream_handle>(handle_arg(stream.ptr(), label));
  throw type_error(name + "expected None, an int handle or an object with __cuda_stream__, got " +
                   type_name_of(stream.ptr()));
}

nb::handle stream_owner(nb::handle stream) noexcept {
  if (stream.is_none())
    return g_cuda.current_stream_object ? nb::handle(g_cuda.current_stream_object()) : nb::handle();
  if (PyLong_Check(stream.ptr())) return nb::handle();
  return stream;
}

}  // namespace arrayport::ext
