// C++ access to arrayport._core's C API (api.h): the Array type, the current stream, errors.
//
// Header-only and CPython-API-only, so that any extension (nanobind, pybind11, raw C API, Cython
// through api.h) shares the one Array type and the one current stream with arrayport._core.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/python/api.h>
#include <arrayport/python/limited_api.hpp>

#include <arrayport/error.hpp>
#include <arrayport/memory_kind.hpp>

#include <cstring>
#include <exception>
#include <new>
#include <string>

namespace ARRAYPORT_NAMESPACE {
namespace python {

/// Thrown by the bridge when a Python exception is already set (a producer's __dlpack__ raised,
/// an attribute lookup failed): the caller returns to Python with that error.
class error_already_set : public std::exception {
 public:
  const char* what() const noexcept override { return "a Python exception is set"; }
};

namespace detail {

/// An owned reference (nanobind's nb::object, for headers that cannot use nanobind): how the
/// bridge holds what a foreign object hands over across any call that can run Python code
/// (__bool__, __index__, a dict key's __eq__), which may free what a borrowed pointer names.
class py_ref {
 public:
  py_ref() noexcept = default;
  static py_ref steal(PyObject* p) noexcept { return py_ref(p); }
  static py_ref borrow(PyObject* p) noexcept {
    Py_XINCREF(p);
    return py_ref(p);
  }
  py_ref(py_ref&& other) noexcept : m_ptr(other.m_ptr) { other.m_ptr = nullptr; }
  py_ref& operator=(py_ref&& other) noexcept {
    if (this != &other) {
      PyObject* old = m_ptr;
      m_ptr = other.m_ptr;
      other.m_ptr = nullptr;
      Py_XDECREF(old);
    }
    return *this;
  }
  py_ref(const py_ref&) = delete;
  py_ref& operator=(const py_ref&) = delete;
  ~py_ref() { Py_XDECREF(m_ptr); }

  PyObject* get() const noexcept { return m_ptr; }
  explicit operator bool() const noexcept { return m_ptr != nullptr; }

 private:
  explicit py_ref(PyObject* p) noexcept : m_ptr(p) {}
  PyObject* m_ptr = nullptr;
};

/// Sets `type` with the message `what`: bytes a producer put in it (a buffer format, a typestr)
/// that are not UTF-8 are escaped, so the error is still `type`, naming the argument.
inline void set_message(PyObject* type, const char* what) noexcept {
  PyObject* text =
      PyUnicode_DecodeUTF8(what, static_cast<Py_ssize_t>(std::strlen(what)), "backslashreplace");
  if (!text) return;  // out of memory: that error stands
  PyErr_SetObject(type, text);
  Py_DECREF(text);
}

/// The producer's type as messages name it: "numpy.ndarray", "memoryview".
inline std::string type_name(PyObject* obj) {
  // Held: a metaclass's __module__ may run code that reassigns obj.__class__.
  const py_ref held = py_ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(obj)));
  auto* t = reinterpret_cast<PyTypeObject*>(held.get());
  PyObject* module = PyObject_GetAttrString(reinterpret_cast<PyObject*>(t), "__module__");
  std::string name;
  if (module && PyUnicode_Check(module)) {
    const char* m = limited::utf8(module);
    if (m && std::strcmp(m, "builtins") != 0) name = std::string(m) + ".";
  }
  Py_XDECREF(module);
  PyErr_Clear();
  const std::string full = limited::tp_name(t);
  const std::size_t dot = full.rfind('.');
  return name + (dot != std::string::npos && !name.empty() ? full.substr(dot + 1) : full);
}

/// After a C-API call or a producer's slot failed: makes sure a Python error is set (a C
/// producer may fail without one, which CPython itself does not catch everywhere), naming the
/// argument, the producer's type and what failed.
inline void ensure_error_set(const char* argument, PyObject* producer, const char* what) noexcept {
  if (PyErr_Occurred()) return;
  std::string type = "the producer";
  try {
    if (producer) type = type_name(producer);
  } catch (...) {  // out of memory: the message says "the producer"
  }
  PyErr_Format(PyExc_SystemError, "%s: %s of %s failed without setting an exception",
               argument ? argument : "array", what, type.c_str());
}

// One cached table per extension module (the header is compiled into each; symbols are hidden).
inline const arrayport_python_api_t*& api_slot() noexcept {
  static const arrayport_python_api_t* slot = nullptr;
  return slot;
}

inline const arrayport_python_api_t* api_from_module(PyObject* module) noexcept {
  PyObject* capsule = PyObject_GetAttrString(module, "_C_API");
  if (!capsule) return nullptr;
  auto* table = static_cast<const arrayport_python_api_t*>(
      PyCapsule_GetPointer(capsule, ARRAYPORT_PYTHON_API_CAPSULE));
  Py_DECREF(capsule);
  if (!table) return nullptr;
  if (table->abi_major != ARRAYPORT_PYTHON_API_MAJOR) {
    PyErr_Format(PyExc_ImportError,
                 "arrayport._core exports C API version %u.%u, but this extension was built "
                 "against version %d.%d: rebuild it against the installed arrayport",
                 table->abi_major, table->abi_minor, ARRAYPORT_PYTHON_API_MAJOR,
                 ARRAYPORT_PYTHON_API_MINOR);
    return nullptr;
  }
  return table;
}

}  // namespace detail

/// The API table if arrayport._core is already imported, else nullptr (no Array can exist and no
/// stream can be current before it is). Never imports and never leaves a Python error set.
inline const arrayport_python_api_t* loaded_api() noexcept {
  const arrayport_python_api_t*& slot = detail::api_slot();
  if (slot) return slot;
  static PyObject* const name = PyUnicode_InternFromString("arrayport._core");  // kept for good
  PyObject* module = name ? PyImport_GetModule(name) : nullptr;  // sys.modules only: no import
  if (!module) {
    PyErr_Clear();
    return nullptr;
  }
  slot = detail::api_from_module(module);
  Py_DECREF(module);
  if (!slot) PyErr_Clear();
  return slot;
}

/// The API table, importing arrayport._core if needed. Throws error_already_set on failure.
inline const arrayport_python_api_t& import_api() {
  if (const arrayport_python_api_t* table = loaded_api()) return *table;
  PyObject* module = PyImport_ImportModule("arrayport._core");
  if (!module) {
    // Said as NumPy's import_array says it: what is missing, and what needs it.
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    PyObject* text = value ? PyObject_Str(value) : nullptr;
    PyErr_Format(PyExc_ImportError,
                 "arrayport._core could not be imported (%s): this extension takes arrays "
                 "through it; install arrayport in this environment",
                 text && PyUnicode_Check(text) ? limited::utf8(text) : "unknown error");
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(trace);
    throw error_already_set();
  }
  const arrayport_python_api_t* table = detail::api_from_module(module);
  Py_DECREF(module);
  if (!table) throw error_already_set();
  detail::api_slot() = table;
  return *table;
}

/// The calling thread's current arrayport stream (what `with arrayport.cuda.Stream():` made
/// current in Python), so that C++ code launched from Python runs where the caller expects.
/// nullptr (the legacy default stream) when none was set or arrayport._core is not loaded.
inline stream_handle current_stream() noexcept {
  const arrayport_python_api_t* table = loaded_api();
  if (!table) return nullptr;
  void* stream = nullptr;
  int device = -1;
  table->current_stream(&stream, &device);
  return stream;
}

/// Sets the Python exception for the C++ exception being handled if arrayport maps it (call
/// inside a catch block): arrayport's exception types as error.hpp describes, and
/// error_already_set (the error stands). false, nothing set, for any other exception. The one map:
/// arrayport._core's own translator uses it too. A cuda_error is raised by _core (C API 1.1),
/// with the attributes its own errors carry.
inline bool set_mapped_error() noexcept {
  try {
    throw;
  } catch (const error_already_set&) {
    detail::ensure_error_set(nullptr, nullptr, "a call");
  } catch (const cuda_error& e) {
    const arrayport_python_api_t* table = loaded_api();
    const bool oom = dynamic_cast<const out_of_memory*>(&e) != nullptr;
    if (table && table->abi_minor >= 1 && table->set_cuda_error) {
      table->set_cuda_error(e.what(), e.status(), e.status_name().c_str(), e.api().c_str(), oom);
      return true;
    }
    // An arrayport._core older than C API 1.1: the type and the message only.
    PyObject* type = !table ? PyExc_RuntimeError
                     : oom  ? table->out_of_memory_error
                            : table->cuda_error;
    PyErr_SetString(type, e.what());
  } catch (const no_device_error& e) {
    const arrayport_python_api_t* table = loaded_api();
    PyErr_SetString(table ? table->no_device_error : PyExc_RuntimeError, e.what());
  } catch (const type_error& e) {
    detail::set_message(PyExc_TypeError, e.what());
  } catch (const value_error& e) {
    detail::set_message(PyExc_ValueError, e.what());
  } catch (const buffer_error& e) {
    detail::set_message(PyExc_BufferError, e.what());
  } catch (...) {
    return false;
  }
  return true;
}

/// Sets the Python exception for the C++ exception being handled (call inside a catch block):
/// set_mapped_error's map, then bad_alloc as MemoryError and anything else as RuntimeError.
inline void set_error_from_current_exception() noexcept {
  if (set_mapped_error()) return;
  try {
    throw;
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "arrayport: unknown C++ exception");
  }
}

}  // namespace python
}  // namespace ARRAYPORT_NAMESPACE
