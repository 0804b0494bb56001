// What the Python fuzz targets share: an embedded interpreter with arrayport._core built in, and
// the checks that turn a wrong outcome into a crash libFuzzer records.
#pragma once

#include <Python.h>

#include "bridge/type_cache.hpp"

#include <arrayport/error.hpp>
#include <arrayport/python/acquire.hpp>

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" PyObject* PyInit__core(void);

namespace arrayport::fuzz {

/// The Python object the current input was decoded into (borrowed), printed with a finding.
inline PyObject*& current_input() {
  static PyObject* input = nullptr;
  return input;
}

/// A finding: say what, show the pending Python error and the decoded input, and crash so
/// libFuzzer keeps the input.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "\n==== arrayport fuzz finding: %s\n", what.c_str());
  if (PyErr_Occurred()) PyErr_Print();
  if (PyObject* input = current_input()) {
    std::fprintf(stderr, "==== decoded input: ");
    PyObject_Print(input, stderr, 0);
    std::fprintf(stderr, "\n");
    PyErr_Clear();
  }
  std::fflush(stderr);
  __builtin_trap();
}

#define ARRAYPORT_FUZZ_CHECK(cond, what)                               \
  do {                                                                 \
    if (!(cond)) ::arrayport::fuzz::finding(std::string(what) + " [" #cond "]"); \
  } while (0)

/// Starts Python once: malloc as the object allocator (so ASan sees every Python object), no
/// signal handlers (libFuzzer owns them), the arrayport package of this tree with the built-in,
/// instrumented _core.
inline void init_python() {
  if (Py_IsInitialized()) return;
  if (PyImport_AppendInittab("arrayport._core", PyInit__core) != 0) finding("AppendInittab failed");
  PyPreConfig pre;
  PyPreConfig_InitPythonConfig(&pre);
  pre.allocator = PYMEM_ALLOCATOR_MALLOC;
  if (PyStatus_Exception(Py_PreInitialize(&pre))) finding("Py_PreInitialize failed");
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;
  config.parse_argv = 0;
  config.site_import = 0;
  const char* home = std::getenv("ARRAYPORT_FUZZ_PYTHONHOME");
  PyConfig_SetBytesString(&config, &config.home, home ? home : ARRAYPORT_FUZZ_PYTHONHOME);
  PyStatus status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) finding("Py_InitializeFromConfig failed");
  const char* path = std::getenv("ARRAYPORT_FUZZ_PYTHONPATH");
  const std::string code = std::string("import sys\nsys.path[:0] = '") +
                           (path ? path : ARRAYPORT_FUZZ_PYTHONPATH) +
                           "'.split(':')\nimport arrayport, numpy\n";
  if (PyRun_SimpleString(code.c_str()) != 0) finding("could not import arrayport and numpy");
}

/// Runs Python source in __main__ and returns the named global (a new reference).
inline PyObject* define(const char* source, const char* name) {
  PyObject* main = PyImport_AddModule("__main__");  // borrowed
  PyObject* globals = PyModule_GetDict(main);        // borrowed
  PyObject* r = PyRun_String(source, Py_file_input, globals, globals);
  if (!r) finding(std::string("could not define ") + name);
  Py_DECREF(r);
  PyObject* obj = PyDict_GetItemString(globals, name);
  if (!obj) finding(std::string("no global ") + name);
  Py_INCREF(obj);
  return obj;
}

/// The classes bad input may raise: anything else (SystemError, RuntimeError, KeyError, ...) is a
/// finding. `also` is one more class a scripted producer raised itself, or nullptr.
inline bool is_input_error(PyObject* also = nullptr) {
  if (PyErr_ExceptionMatches(PyExc_SystemError)) return false;
  return PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError) ||
         PyErr_ExceptionMatches(PyExc_BufferError) || PyErr_ExceptionMatches(PyExc_IndexError) ||
         PyErr_ExceptionMatches(PyExc_OverflowError) || (also && PyErr_ExceptionMatches(also));
}

/// After a call that failed: a Python error of an expected class is set; it is cleared.
inline void expect_input_error(const char* call, PyObject* also = nullptr) {
  if (!PyErr_Occurred()) finding(std::string(call) + " failed without setting an error");
  if (!is_input_error(also)) finding(std::string(call) + " raised an unexpected exception class");
  PyErr_Clear();
}

/// Calls acquire and classifies the outcome: true with `out` set on success; false after an
/// error that names the argument (arrayport's own) or a producer's error of an expected class.
/// Everything else is a finding.
inline bool try_acquire(python::acquired& out, PyObject* obj, const python::constraints& c,
                        const python::acquire_options& o, PyObject* producer_error = nullptr) {
  try {
    out = python::acquire(obj, c, o);
  } catch (const python::error_already_set&) {
    expect_input_error("acquire", producer_error);
    return false;
  } catch (const arrayport::error& e) {
    const std::string prefix = std::string(c.name) + ": ";
    if (std::strncmp(e.what(), prefix.c_str(), prefix.size()) != 0)
      finding(std::string("an acquire error does not name the argument: ") + e.what());
    const bool expected_kind = dynamic_cast<const type_error*>(&e) ||
                               dynamic_cast<const value_error*>(&e) ||
                               dynamic_cast<const buffer_error*>(&e);
    if (!expected_kind) finding(std::string("acquire threw an unexpected error class: ") + e.what());
    if (PyErr_Occurred()) finding(std::string("acquire threw and left a Python error set: ") + e.what());
    return false;
  } catch (const std::exception& e) {
    finding(std::string("acquire threw a foreign exception: ") + e.what());
  } catch (...) {
    finding("acquire threw something that is not an exception");
  }
  if (PyErr_Occurred()) finding("acquire succeeded with a Python error set");
  return true;
}

/// Integers where parsers break: around 0, the int32/int64/uint64 limits, and beyond 64 bits.
inline PyObject* edge_int(FuzzedDataProvider& in) {
  static const char* const edges[] = {
      "0", "1", "-1", "2", "3", "4", "7", "8", "16", "-8", "2147483647", "2147483648",
      "-2147483649", "4294967296", "4611686018427387904", "9223372036854775807",
      "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
      "18446744073709551615", "18446744073709551616", "340282366920938463463374607431768211456"};
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return PyLong_FromLong(in.ConsumeIntegralInRange<long>(-4, 16));
    case 1: return PyLong_FromLongLong(in.ConsumeIntegral<long long>());
    case 2: return PyLong_FromUnsignedLongLong(in.ConsumeIntegral<unsigned long long>());
    default:
      return PyLong_FromString(edges[in.ConsumeIntegralInRange<std::size_t>(
                                   0, sizeof edges / sizeof edges[0] - 1)],
                               nullptr, 10);
  }
}

/// Any Python value of the kinds producers and callers pass by mistake: ints of every size,
/// bools, None, floats, strings (malformed UTF-8 and lone surrogates included), bytes, tuples and
/// lists of values, dicts, Ellipsis, slices. A new reference.
inline PyObject* any_value(FuzzedDataProvider& in, int depth = 0) {
  switch (in.ConsumeIntegralInRange<int>(0, depth > 2 ? 8 : 12)) {
    case 0: case 1: return edge_int(in);
    case 2: return PyBool_FromLong(in.ConsumeBool());
    case 3: Py_RETURN_NONE;
    case 4: return PyFloat_FromDouble(in.ConsumeFloatingPoint<double>());
    case 5: {
      const std::string s = in.ConsumeRandomLengthString(12);
      return PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
    }
    case 6: {
      const std::string s = in.ConsumeRandomLengthString(12);
      return PyBytes_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
    }
    case 7: return Py_NewRef(Py_Ellipsis);
    case 8: return PyLong_FromLong(in.ConsumeIntegralInRange<long>(0, 3));
    case 9: case 10: {
      const int n = in.ConsumeIntegralInRange<int>(0, 4);
      PyObject* t = PyTuple_New(n);
      for (int i = 0; i < n; ++i) PyTuple_SET_ITEM(t, i, any_value(in, depth + 1));
      if (!in.ConsumeBool()) return t;
      PyObject* l = PySequence_List(t);
      Py_DECREF(t);
      return l;
    }
    case 11: {
      PyObject* d = PyDict_New();
      PyObject* k = any_value(in, depth + 1);
      PyObject* v = any_value(in, depth + 1);
      if (PyDict_SetItem(d, k, v) != 0) PyErr_Clear();  // unhashable keys: an empty dict
      Py_DECREF(k);
      Py_DECREF(v);
      return d;
    }
    default: {
      PyObject* a = any_value(in, depth + 1);
      PyObject* b = any_value(in, depth + 1);
      PyObject* c = any_value(in, depth + 1);
      PyObject* s = PySlice_New(a, b, c);
      Py_DECREF(a);
      Py_DECREF(b);
      Py_DECREF(c);
      return s;
    }
  }
}

/// Forgets what the bridge learned about producer types, so that every input starts from the
/// same state (the cache would otherwise carry one input's protocol choices into the next).
inline void reset_type_cache() { bridge::clear_type_cache(); }

}  // namespace arrayport::fuzz
