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

enum class reduce_op : std::uint8_t {
  sum,
  mean,
  min,
  max,
  prod,
  any,
  all,
  argmin,
  argmax,
  dot,
  count
};
inline constexpr int reduce_op_count = static_cast<int>(reduce_op::count);

/// One reduction, type-erased. dot reduces x * y over one axis of two inputs; argmin and argmax
/// give the index of the first extreme (or NaN) in the C order of the reduced dimensions.
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
    case reduce_op::prod:
      if (t == type_id::bool_ || t == type_id::int32 || t == type_id::int64) return type_id::int64;
      if (t == type_id::uint8) return type_id::uint64;
      return t;
    case reduce_op::mean:
      if (t == type_id::bool_ || is_integer(t)) return type_id::float64;
      return t;
    case reduce_op::min:
    case reduce_op::max: return is_complex(t) ? invalid_type : t;
    case reduce_op::any:
    case reduce_op::all: return type_id::bool_;
    case reduce_op::argmin:
    case reduce_op::argmax: return type_id::int64;
    case reduce_op::dot: return t;
    default: return invalid_type;
  }
}

constexpr bool is_arg_reduce(reduce_op op) noexcept {
  return op == reduce_op::argmin || op == reduce_op::argmax;
}

/// An argmin/argmax accumulator: the extreme so far and its index (-1: no element yet).
template <class V>
struct arg_pair {
  V value;
  std::int64_t index;
};

template <reduce_op Op, type_id T>
struct acc_of {
  using type = compute_t<storage_t<reduce_result_type(Op, T)>>;
};
template <type_id T>
struct acc_of<reduce_op::argmin, T> {
  using type = arg_pair<compute_t<storage_t<T>>>;
};
template <type_id T>
struct acc_of<reduce_op::argmax, T> {
  using type = arg_pair<compute_t<storage_t<T>>>;
};

/// The accumulator: the result's compute type (float for 16-bit floats), double for means of
/// integers, bool for any/all, the input's compute type and an index for argmin/argmax.
template <reduce_op Op, type_id T>
using acc_t = typename acc_of<Op, T>::type;

/// Reduced element `i` of value `v` as an accumulator.
template <reduce_op Op, class Acc, class V>
ARRAYPORT_HOST_DEVICE inline Acc to_acc_value(V v, std::int64_t i) {
  if constexpr (is_arg_reduce(Op))
    return Acc{convert<decltype(Acc::value)>(v), i};
  else
    return convert<Acc>(v);
}

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

template <class Acc>
struct prod_reduce {
  ARRAYPORT_HOST_DEVICE static Acc identity() { return convert<Acc>(std::int32_t{1}); }
  ARRAYPORT_HOST_DEVICE Acc operator()(Acc a, Acc b) const { return multiply_fn{}(a, b); }
};
struct any_reduce {
  ARRAYPORT_HOST_DEVICE static bool identity() { return false; }
  ARRAYPORT_HOST_DEVICE bool operator()(bool a, bool b) const { return a || b; }
};
struct all_reduce {
  ARRAYPORT_HOST_DEVICE static bool identity() { return true; }
  ARRAYPORT_HOST_DEVICE bool operator()(bool a, bool b) const { return a && b; }
};
// The first NaN, else the first extreme: ties and NaNs go to the lower index, so that the result
// is NumPy's whatever order the partial results are combined in.
template <class V, bool Max>
struct arg_reduce {
  using pair = arg_pair<V>;
  ARRAYPORT_HOST_DEVICE static pair identity() { return pair{V{}, -1}; }
  ARRAYPORT_HOST_DEVICE pair operator()(pair a, pair b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    const bool a_nan = detail::is_nan(a.value), b_nan = detail::is_nan(b.value);
    if (a_nan != b_nan) return a_nan ? a : b;
    if (!a_nan) {
      if (Max ? detail::greater(b.value, a.value) : detail::greater(a.value, b.value)) return b;
      if (Max ? detail::greater(a.value, b.value) : detail::greater(b.value, a.value)) return a;
    }
    return b.index < a.index ? b : a;
  }
  // a combined with b where b's index is above every index in a: fewer tests than operator().
  ARRAYPORT_HOST_DEVICE void step(pair& a, pair b) const {
    if (a.index >= 0 && detail::is_nan(a.value)) return;
    if (a.index < 0 || detail::is_nan(b.value) ||
        (Max ? detail::greater(b.value, a.value) : detail::greater(a.value, b.value)))
      a = b;
  }
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
template <class Acc>
struct reducer_of<reduce_op::prod, Acc> {
  using type = prod_reduce<Acc>;
};
template <class Acc>
struct reducer_of<reduce_op::any, Acc> {
  using type = any_reduce;
};
template <class Acc>
struct reducer_of<reduce_op::all, Acc> {
  using type = all_reduce;
};
template <class V>
struct reducer_of<reduce_op::argmin, arg_pair<V>> {
  using type = arg_reduce<V, false>;
};
template <class V>
struct reducer_of<reduce_op::argmax, arg_pair<V>> {
  using type = arg_reduce<V, true>;
};
template <reduce_op Op, class Acc>
using reducer_t = typename reducer_of<Op, Acc>::type;

/// The value written for an accumulated `acc` over `len` elements: the mean divides, argmin and
/// argmax give the index.
template <reduce_op Op, class Out, class Acc>
ARRAYPORT_HOST_DEVICE inline Out finish(Acc acc, std::int64_t len) {
  if constexpr (is_arg_reduce(Op)) {
    return acc.index;
  } else if constexpr (Op == reduce_op::mean) {
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
