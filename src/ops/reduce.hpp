// Reductions shared by the CPU and CUDA kernels: the call description, the accumulator and result
// dtype of each (op, input dtype), and the reduction functors.
//
// The dispatcher splits the input's axes into kept ones (one output element each, in C order)
// and reduced ones, collapses both groups, and hands the kernel byte strides for each.
#pragma once

#include "ops/functors.hpp"
#include "ops/types.hpp"

#include <arrayport/c/view.h>
#include <arrayport/memory_kind.hpp>

#include <cstdint>
#include <limits>

namespace arrayport::ops {

enum class reduce_op : std::uint8_t { sum, mean, min, max, dot, count };
inline constexpr int reduce_op_count = static_cast<int>(reduce_op::count);

/// One reduction, type-erased. dot reduces x * y over one axis of two inputs.
struct reduce_call {
  reduce_op op;
  type_id in_type;         ///< dtype of `in` (dot: the result dtype both inputs convert to)
  type_id in_types[2];     ///< dtypes of the inputs as stored (dot converts in its loads)
  const char* in[2];       ///< in[1] only for dot
  char* out;               ///< C-contiguous, n_out elements of the result dtype
  std::int64_t n_out;      ///< output elements (1 for a full reduction)
  std::int64_t len;        ///< elements reduced into each output (> 0 for min/max)
  int out_ndim, red_ndim;  ///< collapsed kept / reduced dimensions
  std::int64_t out_shape[ARRAYPORT_MAX_NDIM];
  std::int64_t out_strides[2][ARRAYPORT_MAX_NDIM];  ///< input byte strides of the kept dims
  std::int64_t red_shape[ARRAYPORT_MAX_NDIM];
  std::int64_t red_strides[2][ARRAYPORT_MAX_NDIM];  ///< input byte strides of the reduced dims
  bool contiguous;  ///< a full reduction of contiguous input(s) of the kernel's dtype
  stream_handle stream;
};

using reduce_fn = void (*)(const reduce_call&);

/// Result dtype of a reduction of input dtype t (NumPy's: integer sums widen to 64 bits, means of
/// integers are float64), or invalid_type when the op does not support t.
constexpr type_id reduce_result_type(reduce_op op, type_id t) noexcept {
  switch (op) {
    case reduce_op::sum:
      if (t == type_id::bool_ || t == type_id::int32 || t == type_id::int64) return type_id::int64;
      if (t == type_id::uint8) return type_id::uint64;
      return t;
    case reduce_op::mean:
      if (t == type_id::bool_ || is_integer(t)) return type_id::float64;
      return t;
    case reduce_op::min:
    case reduce_op::max: return is_complex(t) ? invalid_type : t;
    case reduce_op::dot: return t;
    default: return invalid_type;
  }
}

/// The accumulator: the result's compute type (float for 16-bit floats), double for means of
/// integers.
template <reduce_op Op, type_id T>
using acc_t = compute_t<storage_t<reduce_result_type(Op, T)>>;

template <class Acc>
struct sum_reduce {
  ARRAYPORT_HOST_DEVICE static Acc identity() { return Acc{}; }
  ARRAYPORT_HOST_DEVICE Acc operator()(Acc a, Acc b) const { return detail::wrap_add(a, b); }
};
template <class Acc>
struct max_reduce {
  ARRAYPORT_HOST_DEVICE static Acc identity() {
    if constexpr (std::is_floating_point_v<Acc>)
      return -std::numeric_limits<Acc>::infinity();
    else
      return std::numeric_limits<Acc>::lowest();
  }
  ARRAYPORT_HOST_DEVICE Acc operator()(Acc a, Acc b) const { return maximum_fn{}(a, b); }
};
template <class Acc>
struct min_reduce {
  ARRAYPORT_HOST_DEVICE static Acc identity() {
    if constexpr (std::is_floating_point_v<Acc>)
      return std::numeric_limits<Acc>::infinity();
    else
      return std::numeric_limits<Acc>::max();
  }
  ARRAYPORT_HOST_DEVICE Acc operator()(Acc a, Acc b) const { return minimum_fn{}(a, b); }
};

template <reduce_op Op, class Acc>
struct reducer_of {
  using type = sum_reduce<Acc>;
};
template <class Acc>
struct reducer_of<reduce_op::max, Acc> {
  using type = max_reduce<Acc>;
};
template <class Acc>
struct reducer_of<reduce_op::min, Acc> {
  using type = min_reduce<Acc>;
};
template <reduce_op Op, class Acc>
using reducer_t = typename reducer_of<Op, Acc>::type;

/// The value written for an accumulated `acc` over `len` elements: the mean divides.
template <reduce_op Op, class Out, class Acc>
ARRAYPORT_HOST_DEVICE inline Out finish(Acc acc, std::int64_t len) {
  if constexpr (Op == reduce_op::mean) {
    if constexpr (is_complex_v<Acc>) {
      using R = decltype(acc.re);
      return convert<Out>(Acc{acc.re / R(len), acc.im / R(len)});
    } else {
      return convert<Out>(acc / static_cast<Acc>(len));
    }
  } else {
    return convert<Out>(acc);
  }
}

}  // namespace arrayport::ops
