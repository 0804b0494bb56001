// The scalar arithmetic the element-wise functors build on, for host and device code: NumPy's
// wrapping integer arithmetic, the C library's math by type, its floored division and remainder.
#pragma once

#include "ops/types.hpp"

#include <math.h>  // sqrtf/hypotf/fabsf: callable from host and device code alike

#include <cstdint>
#include <limits>
#include <type_traits>

namespace arrayport::ops {
namespace detail {

template <class C>
inline constexpr bool is_signed_int_v = std::is_integral_v<C>&& std::is_signed_v<C>;

// Signed integer arithmetic wraps modulo 2^n as in NumPy; computing in the unsigned type keeps
// C++ from calling overflow undefined.
template <class C>
ARRAYPORT_HOST_DEVICE C wrap_add(C a, C b) {
  if constexpr (is_signed_int_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
  } else if constexpr (std::is_same_v<C, bool>) {
    return a || b;
  } else {
    return static_cast<C>(a + b);
  }
}
template <class C>
ARRAYPORT_HOST_DEVICE C wrap_sub(C a, C b) {
  if constexpr (is_signed_int_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return static_cast<C>(a - b);
  }
}
template <class C>
ARRAYPORT_HOST_DEVICE C wrap_mul(C a, C b) {
  if constexpr (is_signed_int_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
  } else if constexpr (std::is_same_v<C, bool>) {
    return a && b;
  } else if constexpr (std::is_same_v<C, std::uint8_t>) {
    return static_cast<C>(static_cast<unsigned>(a) * static_cast<unsigned>(b));
  } else {
    return static_cast<C>(mul_rn(a, b));  // never fused into an add that follows (axpy), as NumPy
  }
}

ARRAYPORT_HOST_DEVICE inline float sqrt_(float x) { return sqrtf(x); }
ARRAYPORT_HOST_DEVICE inline double sqrt_(double x) { return sqrt(x); }
ARRAYPORT_HOST_DEVICE inline float hypot_(float x, float y) { return hypotf(x, y); }
ARRAYPORT_HOST_DEVICE inline double hypot_(double x, double y) { return hypot(x, y); }
ARRAYPORT_HOST_DEVICE inline float fabs_(float x) { return fabsf(x); }
ARRAYPORT_HOST_DEVICE inline double fabs_(double x) { return fabs(x); }
ARRAYPORT_HOST_DEVICE inline float copysign_(float x, float y) { return copysignf(x, y); }
ARRAYPORT_HOST_DEVICE inline double copysign_(double x, double y) { return copysign(x, y); }
ARRAYPORT_HOST_DEVICE inline float exp_(float x) { return expf(x); }
ARRAYPORT_HOST_DEVICE inline double exp_(double x) { return exp(x); }
ARRAYPORT_HOST_DEVICE inline float log_(float x) { return logf(x); }
ARRAYPORT_HOST_DEVICE inline double log_(double x) { return log(x); }
ARRAYPORT_HOST_DEVICE inline float sin_(float x) { return sinf(x); }
ARRAYPORT_HOST_DEVICE inline double sin_(double x) { return sin(x); }
ARRAYPORT_HOST_DEVICE inline float cos_(float x) { return cosf(x); }
ARRAYPORT_HOST_DEVICE inline double cos_(double x) { return cos(x); }
ARRAYPORT_HOST_DEVICE inline float tanh_(float x) { return tanhf(x); }
ARRAYPORT_HOST_DEVICE inline double tanh_(double x) { return tanh(x); }
// Forced inline on the CPU, so that a loop's AVX2 twin gets its own copy (an out-of-line
// helper is compiled for the SSE2 baseline: floor without roundss).
#if defined(__GNUC__) && !defined(__CUDACC__)
#define ARRAYPORT_OPS_INLINE __attribute__((always_inline)) inline
#else
#define ARRAYPORT_OPS_INLINE inline
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CUDA_ARCH__)
// fmod by the x87 partial remainder, exact as the C library's but about 3x faster; NumPy's
// compiler inlines it so. A NaN result goes back to the library, whose NaN has its sign.
template <class R>
ARRAYPORT_OPS_INLINE R fmod_x87_(R x, R y) {
  long double r = x;
  asm("1: fprem\n\tfnstsw %%ax\n\tsahf\n\tjp 1b"
      : "+t"(r)
      : "u"(static_cast<long double>(y))
      : "ax", "cc");
  const R m = static_cast<R>(r);
  if (m != m) return std::is_same_v<R, float> ? R(fmodf(float(x), float(y))) : R(fmod(x, y));
  return m;
}
inline float fmod_(float x, float y) { return fmod_x87_(x, y); }
inline double fmod_(double x, double y) { return fmod_x87_(x, y); }
#else
ARRAYPORT_HOST_DEVICE inline float fmod_(float x, float y) { return fmodf(x, y); }
ARRAYPORT_HOST_DEVICE inline double fmod_(double x, double y) { return fmod(x, y); }
#endif
// -x with a NaN's sign bit flipped too, as NumPy's negative does: in the bits on the GPU, whose
// negation is an arithmetic instruction (PTX leaves a NaN result's sign unspecified).
ARRAYPORT_HOST_DEVICE inline float negate_(float x) {
#ifdef __CUDA_ARCH__
  return __int_as_float(__float_as_int(x) ^ int(0x80000000u));
#else
  return -x;
#endif
}
ARRAYPORT_HOST_DEVICE inline double negate_(double x) {
#ifdef __CUDA_ARCH__
  return __longlong_as_double(__double_as_longlong(x) ^ (long long)(0x8000000000000000ull));
#else
  return -x;
#endif
}
ARRAYPORT_HOST_DEVICE inline float floor_(float x) { return floorf(x); }
ARRAYPORT_HOST_DEVICE inline double floor_(double x) { return floor(x); }
ARRAYPORT_HOST_DEVICE inline float pow_(float x, float y) { return powf(x, y); }
ARRAYPORT_HOST_DEVICE inline double pow_(double x, double y) { return pow(x, y); }

// NumPy's npy_remainder for a nonzero divisor: moves fmod's result `mod` to the divisor's sign;
// true where it added b, which divmod_'s quotient needs to know.
template <class R>
ARRAYPORT_HOST_DEVICE bool to_divisor_sign_(R b, R& mod) {
  if (mod == R(0)) {
    mod = copysign_(R(0), b);
    return false;
  }
  if ((b < R(0)) == (mod < R(0))) return false;
  mod += b;
  return true;
}
// NumPy's npy_divmod for floats: the floored quotient, and the remainder with the divisor's sign.
template <class R>
ARRAYPORT_HOST_DEVICE ARRAYPORT_OPS_INLINE R divmod_(R a, R b, R& mod) {
  mod = fmod_(a, b);
  if (b == R(0)) return a / b;
  R div = (a - mod) / b;
  if (to_divisor_sign_(b, mod)) div -= R(1);
  if (div == R(0)) return copysign_(R(0), a / b);
  R floordiv = floor_(div);
  if (div - floordiv > R(0.5)) floordiv += R(1);
  return floordiv;
}
// Without <cmath>'s overloads, which device code may lack.
template <class R>
ARRAYPORT_HOST_DEVICE inline bool isnan_(R x) {
  return x != x;
}
template <class R>
ARRAYPORT_HOST_DEVICE inline bool isinf_(R x) {
  return fabs_(x) > std::numeric_limits<R>::max();
}

template <class C>
ARRAYPORT_HOST_DEVICE bool is_nan(C x) {
  if constexpr (is_complex_v<C>)
    return x.re != x.re || x.im != x.im;
  else if constexpr (std::is_floating_point_v<C>)
    return x != x;
  else
    return false;
}

// NumPy orders complex numbers lexicographically (real part, then imaginary part).
template <class C>
ARRAYPORT_HOST_DEVICE bool greater(C a, C b) {
  if constexpr (is_complex_v<C>)
    return a.re > b.re || (a.re == b.re && a.im > b.im);
  else
    return a > b;
}

}  // namespace detail
}  // namespace arrayport::ops
