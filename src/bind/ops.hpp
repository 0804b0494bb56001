// Registration of arrayport._core.ops (the kernel library's Python entry points).
#pragma once

#include <nanobind/nanobind.h>

namespace arrayport::ext {

/// Creates the submodule `ops` of `m` with the element-wise ops and reductions, and `m`'s
/// _set_pipeline hook (see bind/device.hpp).
void register_ops(nanobind::module_& m);

}  // namespace arrayport::ext
