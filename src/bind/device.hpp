// device=N of arrayport.ops: the op on GPU N wherever its operands live. The common element-wise
// case is staged here in C++; the rest goes to the Python package's staging function
// (arrayport._pipeline.run), which the package registers at import (set_pipeline), so the
// compiled module never imports its package.
#pragma once

#include "bind/elementwise.hpp"

#include <nanobind/nanobind.h>

namespace arrayport::ext {

/// Registers `run(name, operands, out, device, params)`, the staging of the device= calls that
/// C++ does not stage itself. TypeError when `run` is not callable.
void set_pipeline(nanobind::handle run);

/// `name`(*operands, out=out, device=device, **params) through the registered staging.
nanobind::object run_pipeline(const char* name, nanobind::tuple operands, nanobind::handle out,
                              nanobind::handle device, nanobind::dict params);

/// An element-wise call with device= given: staged in C++ when it fits (an int naming an
/// existing GPU, no out=, contiguous host operands of the result's shape), else run_pipeline
/// with the operands and `params`. `cast` is astype's dtype= (parsed only when staged).
/// `as_called`: the operands as the Python function takes them, where the request reorders or
/// drops them (greater, clip); the request's own operands otherwise.
nanobind::object elementwise_on_device(const ew_request& r, nanobind::handle device,
                                       nanobind::dict params,
                                       nanobind::handle cast = nanobind::handle(),
                                       nanobind::handle as_called = nanobind::handle());

}  // namespace arrayport::ext
