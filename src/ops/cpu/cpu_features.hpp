// Whether this CPU has AVX2 (AVX-512), for the kernels' AVX2 twins and the AVX-512 vector math:
// the build's baseline is SSE2, and code compiled with target("avx2") or target("avx512f") is
// taken at run time where the CPU allows it.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define ARRAYPORT_OPS_AVX2 1

#include <cstdlib>

namespace arrayport::ops::cpu {

/// False where the CPU lacks AVX2, or ARRAYPORT_DISABLE_AVX2 is set (to a value other than 0):
/// the baseline paths run then, as they do on such a CPU (NumPy: NPY_DISABLE_CPU_FEATURES).
inline bool has_avx2() noexcept {
  static const bool avx2 = [] {
    const char* off = std::getenv("ARRAYPORT_DISABLE_AVX2");
    if (off && *off && *off != '0') return false;
    return (__builtin_cpu_init(), __builtin_cpu_supports("avx2") != 0);
  }();
  return avx2;
}

/// False without AVX2 (as above), where the CPU lacks AVX-512F and BW (every AVX-512 CPU but the
/// Xeon Phi has both), or ARRAYPORT_DISABLE_AVX512 is set (to a value other than 0).
inline bool has_avx512() noexcept {
  static const bool avx512 = [] {
    const char* off = std::getenv("ARRAYPORT_DISABLE_AVX512");
    if (!has_avx2() || (off && *off && *off != '0')) return false;
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  }();
  return avx512;
}

}  // namespace arrayport::ops::cpu
#endif
