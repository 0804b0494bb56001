// The element-wise entry of arrayport.ops: reads the operands, works out the result dtype and
// shape, checks out=, allocates the result and hands one type-erased call to the dispatcher.
#pragma once

#include "bind/operands.hpp"

#include <nanobind/nanobind.h>

#include <cstdint>

namespace arrayport::ext {

/// One element-wise call as a binding receives it.
struct ew_request {
  ops::op_id op;
  const char* op_name;
  ops::span<const operand> inputs;
  nanobind::handle out;                            ///< None: a new result
  nanobind::handle zero_value = nanobind::none();  ///< divide's; None otherwise
  const dtype* cast_to = nullptr;                  ///< astype's target dtype; null otherwise
  /// clip's: a Python int bound beyond an integer result's range is that range's end (NumPy 2).
  bool clamp_int_scalars = false;
};

/// Runs `r` where its operands live, on the current stream; returns the result (or out=).
nanobind::object elementwise(const ew_request& r);

/// Runs `r` (no out=) on GPU `device` with its host operands staged through pinned memory in
/// chunks of about `chunk_bytes` (ops::launch_staged); returns the result as NumPy, or a null
/// object when the call does not fit that path (an operand not contiguous host memory of the
/// result's shape, a current stream of another device, no array operand).
nanobind::object elementwise_staged(const ew_request& r, int device, std::int64_t chunk_bytes);

}  // namespace arrayport::ext
