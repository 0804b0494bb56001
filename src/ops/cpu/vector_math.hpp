// float32 exp, log, sin, cos and tanh (and float64 tanh, and float64 exp and log on AVX-512) a
// vector at a time, through the C library's vector functions (glibc's libmvec, AVX2 or AVX-512),
// found at run time: the scalar libm call per element is what left these ops at 0.13-0.77x
// NumPy's SIMD loops (docs/benchmarks.md).
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
           op == op_id::tanh || op == op_id::power;
  else
    return std::is_same_v<T, double> &&
           (op == op_id::tanh || op == op_id::exp || op == op_id::log || op == op_id::power);
}

/// The vector loop of a one-argument op for T (float: exp, log, sin, cos, tanh; double: tanh,
/// and exp and log on AVX-512, where NumPy's own loops are SIMD too: its other float64 functions
/// are the C library's, which ours match bit for bit), or nullptr where this CPU (AVX2 and FMA) or
/// C library (libmvec.so.1 with the function) lacks it: the scalar loop applies then.
template <class T>
vector_map<T> vector_math(op_id op) noexcept;

/// y[i] = op(a[i * a_step], b[i * b_step]) for i < n, a step being 1 (an array) or 0 (a scalar).
template <class T>
using vector_map2 = void (*)(const T* a, std::int64_t a_step, const T* b, std::int64_t b_step, T* y,
                             std::int64_t n);

/// The loop of a two-argument op (power on AVX-512, where NumPy's is SIMD too: arrayport's own for
/// float, vector_powf.hpp, libmvec's for double; the C library's elsewhere), or nullptr as
/// vector_math's.
template <class T>
vector_map2<T> vector_math2(op_id op) noexcept;

}  // namespace arrayport::ops::cpu
