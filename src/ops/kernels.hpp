// The kernel tables the dispatcher picks from: one entry per (op, result dtype), CPU and CUDA.
#pragma once

#include "elementwise.hpp"
#include "reduce.hpp"

#include <array>

namespace arrayport::ops {

using ew_table = std::array<std::array<ew_fn, elementwise_type_count>, op_count>;
using reduce_table_t = std::array<std::array<reduce_fn, elementwise_type_count>, reduce_op_count>;

namespace cpu {
/// nullptr where the op does not support the dtype (see supports()).
extern const ew_table elementwise_table;
/// Indexed by the INPUT dtype (the kernel converts to the accumulator in its load).
extern const reduce_table_t reduce_table;
}  // namespace cpu

#if ARRAYPORT_HAS_CUDA
namespace cuda {
extern const ew_table elementwise_table;
extern const reduce_table_t reduce_table;
}  // namespace cuda
#endif

}  // namespace arrayport::ops
