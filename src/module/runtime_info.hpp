// Build and runtime information dictionaries for arrayport._core.
#pragma once

#include <nanobind/nanobind.h>

namespace arrayport::ext {

nanobind::dict build_info();
nanobind::dict runtime_info();
nanobind::list devices();

}  // namespace arrayport::ext
