// float32 power on AVX-512, arrayport's own: libmvec's powf took 2.5 ns an element here, this loop
// 1.05, NumPy's (SVML) 0.75-0.9; libmvec's left `power` at 0.57-0.93x NumPy (docs/benchmarks.md).
#pragma once

#include <cstdint>

namespace arrayport::ops::cpu {

#if defined(__x86_64__) && defined(__GNUC__)
/// out[i] = a[i * a_step] ** b[i * b_step] for i < n, a step being 1 (an array) or 0 (a scalar);
/// out may be a or b. Only where has_avx512() holds and the CPU has AVX-512DQ. Within an ulp of the
/// exact power (IEEE's and the C library's special cases, which it calls for them).
void powf_avx512(const float* a, std::int64_t a_step, const float* b, std::int64_t b_step,
                 float* out, std::int64_t n);
#endif

}  // namespace arrayport::ops::cpu
