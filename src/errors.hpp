// Translation of arrayport's C++ exceptions into the Python exceptions of arrayport._core.
#pragma once

#include <nanobind/nanobind.h>

namespace arrayport::ext {

/// Creates CudaError, OutOfMemoryError and NoDeviceError in `m` and registers the translator for
/// every arrayport exception type (see error.hpp for the mapping).
void register_errors(nanobind::module_& m);

}  // namespace arrayport::ext
