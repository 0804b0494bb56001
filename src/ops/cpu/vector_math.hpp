// float32 exp, log, sin, cos and tanh eight lanes at a time, through the C library's vector
// functions (glibc's libmvec, AVX2), found at run time: the scalar libm call per element is what
// left these ops at 0.14-0.77x NumPy's SIMD loops (docs/benchmarks.md).
#pragma once

#include "ops/functors.hpp"

#include <cstdint>

namespace arrayport::ops::cpu {

/// y[i] = op(x[i]) for i < n (x and y may be the same array).
using float_map = void (*)(const float* x, float* y, std::int64_t n);

/// The vector loop of op for float32, or nullptr where op has none, or this CPU (AVX2 and FMA)
/// or C library (libmvec.so.1 with the function) lacks it: the scalar loop applies then.
float_map vector_math(op_id op) noexcept;

}  // namespace arrayport::ops::cpu
