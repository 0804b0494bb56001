// The kernel tables the dispatcher picks from: one entry per (op, result dtype), CPU and CUDA.
#pragma once

#include "ops/elementwise.hpp"
#include "ops/reduce.hpp"

#include <array>
#include <cstddef>
#include <utility>

namespace arrayport::ops {

using ew_table = std::array<std::array<ew_fn, elementwise_type_count>, op_count>;
using reduce_table_t = std::array<std::array<reduce_fn, elementwise_type_count>, reduce_op_count>;

namespace table_detail {
template <class Kernels, class Op, class Fn, std::size_t O, std::size_t... T>
constexpr std::array<Fn, elementwise_type_count> row(std::index_sequence<T...>) {
  return {{Kernels::template entry<Op(O), type_id(T)>()...}};
}
template <class Kernels, class Op, class Fn, std::size_t... O>
constexpr std::array<std::array<Fn, elementwise_type_count>, sizeof...(O)> table(
    std::index_sequence<O...>) {
  return {{row<Kernels, Op, Fn, O>(std::make_index_sequence<elementwise_type_count>{})...}};
}
}  // namespace table_detail

/// A kernel table built at compile time: entry [op][dtype] is
/// Kernels::entry<Op(op), type_id(dtype)>(), which each backend (cpu/, cuda/) gives as its kernel
/// instance, or nullptr where the op does not take the dtype.
template <class Kernels, class Op, class Fn, std::size_t NOps>
constexpr std::array<std::array<Fn, elementwise_type_count>, NOps> make_kernel_table() {
  return table_detail::table<Kernels, Op, Fn>(std::make_index_sequence<NOps>{});
}

/// The element-wise kernels are compiled in two translation units per backend, which a parallel
/// build compiles at once: 0, the arithmetic ops (before op_id::equal); 1, the others.
constexpr int ew_unit(op_id op) noexcept { return op < op_id::equal ? 0 : 1; }

namespace cpu {
/// nullptr where the op does not support the dtype (see supports()) or is in the other unit.
extern const ew_table elementwise_table;       ///< ew_unit 0
extern const ew_table elementwise_table_more;  ///< ew_unit 1
/// Indexed by the INPUT dtype (the kernel converts to the accumulator in its load).
extern const reduce_table_t reduce_table;
}  // namespace cpu

#if ARRAYPORT_HAS_CUDA
namespace cuda {
extern const ew_table elementwise_table;
extern const ew_table elementwise_table_more;
extern const reduce_table_t reduce_table;
}  // namespace cuda
#endif

}  // namespace arrayport::ops
