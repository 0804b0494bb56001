// float32 exp, log, sin, cos and tanh (and float64 tanh) a vector at a time, through the C
// library's vector functions (glibc's libmvec, AVX2), found at run time: the scalar libm call per
// element is what left these ops at 0.14-0.77x NumPy's SIMD loops (docs/benchmarks.md).
#pragma once

#include "ops/functors.hpp"

#include <cstdint>

namespace arrayport::ops::cpu {

/// y[i] = op(x[i]) for i < n (x and y may be the same array).
template <class T>
using vector_map = void (*)(const T* x, T* y, std::int64_t n);

/// The vector loop of op for T (float: exp, log, sin, cos, tanh; double: tanh only, where NumPy's
/// own loop is SIMD too: its other float64 functions are the C library's, which ours match bit
/// for bit), or nullptr where this CPU (AVX2 and FMA) or C library (libmvec.so.1 with the
/// function) lacks it: the scalar loop applies then.
template <class T>
vector_map<T> vector_math(op_id op) noexcept;

}  // namespace arrayport::ops::cpu
