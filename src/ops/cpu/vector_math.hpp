// float32 exp, log, sin, cos and tanh (and float64 tanh) a vector at a time, through the C
// library's vector functions (glibc's libmvec, AVX2), found at run time: the scalar libm call per
// element is what left these ops at 0.14-0.77x NumPy's SIMD loops (docs/benchmarks.md).
#pragma once

#include "ops/functors.hpp"

#include <cstdint>
#include <type_traits>

namespace arrayport::ops::cpu {

/// y[i] = op(x[i]) for i < n (x and y may be the same array).
template <class T>
using vector_map = void (*)(const T* x, T* y, std::int64_t n);

/// Whether libmvec has a vector loop of op for T: the ops vector_math may serve, known at compile
/// time so that the other unary ops do not ask.
template <class T>
constexpr bool has_vector_loop(op_id op) noexcept {
  if constexpr (std::is_same_v<T, float>)
    return op == op_id::exp || op == op_id::log || op == op_id::sin || op == op_id::cos ||
           op == op_id::tanh;
  else
    return std::is_same_v<T, double> && op == op_id::tanh;
}

/// The vector loop of op for T (float: exp, log, sin, cos, tanh; double: tanh only, where NumPy's
/// own loop is SIMD too: its other float64 functions are the C library's, which ours match bit
/// for bit), or nullptr where this CPU (AVX2 and FMA) or C library (libmvec.so.1 with the
/// function) lacks it: the scalar loop applies then.
template <class T>
vector_map<T> vector_math(op_id op) noexcept;

}  // namespace arrayport::ops::cpu
