// Translation of arrayport's C++ exceptions into the Python exceptions of arrayport._core.
#pragma once

#include <nanobind/nanobind.h>

namespace arrayport::ext {

/// Creates CudaError, OutOfMemoryError and NoDeviceError in `m` and registers the translator for
/// every arrayport exception type (see error.hpp for the mapping).
void register_errors(nanobind::module_& m);

/// Sets the Python error for the exception being handled (call inside a catch block). For raw
/// CPython slots, which nanobind's translators do not wrap.
void raise_current_exception() noexcept;

/// The C API's set_cuda_error (api.h): raises CudaError / OutOfMemoryError from the fields of a
/// cuda_error that another extension module caught.
void set_cuda_error_for_c(const char* message, int status, const char* status_name, const char* api,
                          int out_of_memory) noexcept;

/// Runs `f` in a raw CPython slot: a C++ exception becomes the Python error and `fail` is returned.
template <class R, class F>
R guarded(R fail, F&& f) noexcept {
  try {
    return f();
  } catch (...) {
    raise_current_exception();
    return fail;
  }
}

}  // namespace arrayport::ext
