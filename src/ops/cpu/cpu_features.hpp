// Whether this CPU has AVX2, for the kernels' AVX2 twins: the build's baseline is SSE2, and a
// twin compiled with target("avx2") is taken at run time where the CPU allows it.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define ARRAYPORT_OPS_AVX2 1

namespace arrayport::ops::cpu {

inline bool has_avx2() noexcept {
  static const bool avx2 = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
  return avx2;
}

}  // namespace arrayport::ops::cpu
#endif
