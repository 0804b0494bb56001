// Exception translation: arrayport::error subclasses -> precise Python exceptions.
#include "common/errors.hpp"

#include <arrayport/error.hpp>
#include <arrayport/python/api.hpp>

#include <exception>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {

PyObject* g_cuda_error = nullptr;
PyObject* g_out_of_memory = nullptr;
PyObject* g_no_device = nullptr;

// Raises `type(message)` with .code, .name, .api and .sticky set.
void raise_cuda(PyObject* type, const char* message, int status, const char* status_name,
                const char* api_name) noexcept {
  PyObject* exc = PyObject_CallFunction(type, "s", message);
  if (!exc) return;  // the call already set an exception
  PyObject* code = PyLong_FromLong(status);
  PyObject* name = PyUnicode_FromString(status_name);
  PyObject* api = PyUnicode_FromString(api_name);
  const bool sticky = cuda_error::is_sticky_status(status);
  if (code && name && api && PyObject_SetAttrString(exc, "code", code) == 0 &&
      PyObject_SetAttrString(exc, "name", name) == 0 &&
      PyObject_SetAttrString(exc, "api", api) == 0 &&
      PyObject_SetAttrString(exc, "sticky", sticky ? Py_True : Py_False) == 0) {
    PyErr_SetObject(type, exc);
  }
  Py_XDECREF(code);
  Py_XDECREF(name);
  Py_XDECREF(api);
  Py_DECREF(exc);
}

// nanobind's translator: python::set_mapped_error's map (the one every extension uses);
// anything unmapped goes on to nanobind's own (std::bad_alloc -> MemoryError...).
void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (...) {
    if (!python::set_mapped_error()) throw;
  }
}

PyObject* new_exception(nb::module_& m, const char* name, PyObject* bases, const char* doc) {
  std::string qualified = std::string("arrayport.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (!type) throw nb::python_error();
  m.attr(name) = nb::borrow(type);
  return type;  // kept alive by the module attribute and by this reference, for the process
}

}  // namespace

void set_cuda_error_for_c(const char* message, int status, const char* status_name, const char* api,
                          int out_of_memory) noexcept {
  raise_cuda(out_of_memory ? g_out_of_memory : g_cuda_error, message ? message : "", status,
             status_name ? status_name : "", api ? api : "");
}

void raise_current_exception() noexcept {
  try {
    throw;
  } catch (nb::python_error& e) {
    e.restore();
  } catch (...) {
    python::set_error_from_current_exception();
  }
}

void register_errors(nb::module_& m) {
  g_cuda_error = new_exception(m, "CudaError", PyExc_RuntimeError,
                               "A CUDA runtime call failed. Attributes: code (cudaError_t), name "
                               "(e.g. 'cudaErrorIllegalAddress'), api (the call), sticky (the "
                               "context is corrupted: restart the process).");
  nb::object oom_bases = nb::make_tuple(nb::borrow(g_cuda_error), nb::borrow(PyExc_MemoryError));
  g_out_of_memory = new_exception(m, "OutOfMemoryError", oom_bases.ptr(),
                                  "A device, managed or pinned allocation failed for lack of "
                                  "memory. Also a MemoryError.");
  g_no_device = new_exception(m, "NoDeviceError", PyExc_RuntimeError,
                              "No usable CUDA device: CPU-only build, no driver, or no device. "
                              "The message says which.");
  nb::register_exception_translator(translate);
}

}  // namespace arrayport::ext
