// Complex exp, log, sin, cos, tanh and power for the element-wise functors: the C library's on the
// host, libcu++'s or glibc's algorithms on the device (see below), NumPy's npy_cpow for power.
#pragma once

#include "ops/scalar_math.hpp"
#include "ops/types.hpp"

#include <complex>
#include <type_traits>

#if defined(__CUDACC__)
#include <cuda/std/complex>
#endif

namespace arrayport::ops {
namespace detail {

// Complex exp, log, sin, cos and tanh: on the host the C library's (cexp, ...: NumPy's own
// loops call them, so the results agree bit for bit). On the device libcu++'s, except where it
// overflows an intermediate that glibc scales (exp(800 + 1e-40i) is finite), and tanh, whose
// libcu++ formula loses 5e-5 relative in complex64: those follow glibc's algorithms.
#if defined(__CUDA_ARCH__)
template <class T>
__device__ void sincos_(T v, T& s, T& c) {
  if constexpr (std::is_same_v<T, float>)
    sincosf(v, &s, &c);
  else
    sincos(v, &s, &c);
}

// glibc's scaling step, (max exponent - 1) ln 2 rounded down: e^t is finite.
template <class T>
inline constexpr T exp_step_ = std::is_same_v<T, float> ? T(88) : T(709);

// (e^r c, e^r s) for r > 0 past e^r's overflow while the products fit: glibc's steps of e^t.
template <class T>
__device__ complex<T> exp_times_(T r, T c, T s) {
  const T t = exp_step_<T>;
  const T exp_t = exp_(t);
  for (int i = 0; i < 2 && r > t; ++i) r -= t, c *= exp_t, s *= exp_t;
  if (r > t) return {std::numeric_limits<T>::max() * c, std::numeric_limits<T>::max() * s};
  const T e = exp_(r);
  return {e * c, e * s};
}

// (cosh(a) c, sinh(a) s), scaled as glibc's ccosh and csin are for |a| beyond cosh's overflow.
template <class T>
__device__ complex<T> cosh_sinh_times_(T a, T c, T s) {
  const T t = exp_step_<T>;
  if (fabs_(a) <= t) {
    if constexpr (std::is_same_v<T, float>)
      return {coshf(a) * c, sinhf(a) * s};
    else
      return {cosh(a) * c, sinh(a) * s};
  }
  const T half_exp_t = exp_(t) / T(2);
  return exp_times_(fabs_(a) - t, c * half_exp_t, (a < T(0) ? -s : s) * half_exp_t);
}
#endif

#if defined(__CUDA_ARCH__)
#define ARRAYPORT_COMPLEX_FN(name, ...)                                \
  template <class T>                                                   \
  ARRAYPORT_HOST_DEVICE complex<T> c##name##_(complex<T> a) {          \
    if (a.re - a.re == T(0) && a.im - a.im == T(0)) {                  \
      __VA_ARGS__                                                      \
    }                                                                  \
    const auto r = cuda::std::name(cuda::std::complex<T>(a.re, a.im)); \
    return {r.real(), r.imag()};                                       \
  }
#else
#define ARRAYPORT_COMPLEX_FN(name, ...)                       \
  template <class T>                                          \
  ARRAYPORT_HOST_DEVICE complex<T> c##name##_(complex<T> a) { \
    const auto r = std::name(std::complex<T>(a.re, a.im));    \
    return {r.real(), r.imag()};                              \
  }
#endif
ARRAYPORT_COMPLEX_FN(exp, {
  T s, c;
  sincos_(a.im, s, c);
  if (a.re > T(0)) return exp_times_(a.re, c, s);
  const T e = exp_(a.re);
  return {e * c, e * s};
})
ARRAYPORT_COMPLEX_FN(log, {})
ARRAYPORT_COMPLEX_FN(sin, {  // sin x cosh y + i cos x sinh y
  T s, c;
  sincos_(a.re, s, c);
  return cosh_sinh_times_(a.im, s, c);
})
ARRAYPORT_COMPLEX_FN(cos, {  // ccosh(-y + ix): cos x cosh y - i sin x sinh y
  T s, c;
  sincos_(a.re, s, c);
  return cosh_sinh_times_(-a.im, c, s);
})
#undef ARRAYPORT_COMPLEX_FN

#if defined(__CUDA_ARCH__)
// glibc's csin where a component is not finite: C99 leaves some signs open (sin(inf - inf i)),
// which NumPy, calling glibc, fixes one way and libcu++ another.
template <class T>
__device__ complex<T> csin_special_(complex<T> a) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const T x = fabs_(a.re), y = a.im;
  const bool negate = copysign_(T(1), a.re) < T(0);  // signbit
  const bool x_finite = x - x == T(0), y_finite = y - y == T(0);
  if (y_finite) return y == T(0) ? complex<T>{x - x, y} : complex<T>{nan, nan};  // x not finite
  if (isinf_(y)) {
    if (x == T(0)) return {negate ? T(-0.0) : T(0), y};
    if (x_finite) {
      T s, c;
      sincos_(x, s, c);
      const T re = copysign_(inf, s), im = copysign_(inf, c);
      return {negate ? -re : re, y < T(0) ? -im : im};
    }
    return {x - x, inf};
  }
  return {x == T(0) ? (negate ? T(-0.0) : T(0)) : nan, nan};  // y is NaN
}
#endif

template <class T>
ARRAYPORT_HOST_DEVICE complex<T> csin_glibc_(complex<T> a) {
#if defined(__CUDA_ARCH__)
  if (!(a.re - a.re == T(0) && a.im - a.im == T(0))) return csin_special_(a);
#endif
  return csin_(a);
}

template <class T>
ARRAYPORT_HOST_DEVICE complex<T> ctanh_(complex<T> a) {
#if !defined(__CUDA_ARCH__)
  const auto r = std::tanh(std::complex<T>(a.re, a.im));
  return {r.real(), r.imag()};
#else
  constexpr bool f32 = std::is_same_v<T, float>;
  const T x = a.re, y = a.im;
  if (isinf_(x)) {
    T s = y, c = T(1);
    if (!isinf_(y) && !isnan_(y) && fabs_(y) > T(1)) sincos_(y, s, c);
    return {copysign_(T(1), x), copysign_(T(0), s * c)};
  }
  if (isnan_(x) || isinf_(y) || isnan_(y)) {
    if (y == T(0)) return a;
    const T nan = std::numeric_limits<T>::quiet_NaN();
    return {x == T(0) ? x : nan, nan};
  }
  T sy = y, cy = T(1);
  if (fabs_(y) > std::numeric_limits<T>::min()) sincos_(y, sy, cy);
  const T t = f32 ? T(44) : T(354);  // exp(2t) is finite; beyond it the real part is +-1
  if (fabs_(x) > t) {
    const T exp_2t = exp_(T(2) * t), rest = fabs_(x) - t;
    T im = T(4) * sy * cy / exp_2t;
    im /= rest > t ? exp_2t : exp_(T(2) * rest);
    return {copysign_(T(1), x), im};
  }
  T shx = x, chx = T(1);
  if (fabs_(x) > std::numeric_limits<T>::min()) {
    if constexpr (f32) {
      shx = sinhf(x), chx = coshf(x);
    } else {
      shx = sinh(x), chx = cosh(x);
    }
  }
  const T eps = std::numeric_limits<T>::epsilon();
  const T den = fabs_(shx) > fabs_(cy) * eps ? shx * shx + cy * cy : cy * cy;
  return {shx * chx / den, sy * cy / den};
#endif
}

// C's complex multiplication (Annex G, libgcc's __muldc3): infinities that the plain formula
// turns into NaN + NaN i are recovered. glibc's cpow multiplies so; NumPy's power calls it.
template <class T>
ARRAYPORT_HOST_DEVICE complex<T> mul_annex_g_(complex<T> z, complex<T> w) {
  T a = z.re, b = z.im, c = w.re, d = w.im;
  const T ac = mul_rn(a, c), bd = mul_rn(b, d), ad = mul_rn(a, d), bc = mul_rn(b, c);
  T x = ac - bd, y = ad + bc;
  if (isnan_(x) && isnan_(y)) {
    const auto box = [](T& v) { v = copysign_(isinf_(v) ? T(1) : T(0), v); };
    const auto zero_nan = [](T& v) {
      if (isnan_(v)) v = copysign_(T(0), v);
    };
    bool recalc = false;
    if (isinf_(a) || isinf_(b)) {
      box(a), box(b), zero_nan(c), zero_nan(d);
      recalc = true;
    }
    if (isinf_(c) || isinf_(d)) {
      box(c), box(d), zero_nan(a), zero_nan(b);
      recalc = true;
    }
    if (!recalc && (isinf_(ac) || isinf_(bd) || isinf_(ad) || isinf_(bc))) {
      zero_nan(a), zero_nan(b), zero_nan(c), zero_nan(d);
      recalc = true;
    }
    if (recalc) {
      const T inf = std::numeric_limits<T>::infinity();
      x = inf * (mul_rn(a, c) - mul_rn(b, d));
      y = inf * (mul_rn(a, d) + mul_rn(b, c));
    }
  }
  return {x, y};
}

// NumPy's complex power (npy_cpow): 1 for a zero exponent, 0 or NaN for a zero base, repeated
// multiplication for integer exponents below 100 in magnitude, else exp(b log a) as C's cpow.
template <class T>
ARRAYPORT_HOST_DEVICE complex<T> cpow_(complex<T> a, complex<T> b) {
  using C = complex<T>;
  if (b.re == T(0) && b.im == T(0)) return C{T(1), T(0)};
  if (a.re == T(0) && a.im == T(0)) {
    if (b.re > T(0)) return C{T(0), T(0)};
    const T nan = std::numeric_limits<T>::quiet_NaN();
    return C{nan, nan};
  }
  if (b.im == T(0) && b.re > T(-100) && b.re < T(100)) {
    const int n = static_cast<int>(b.re);
    if (T(n) == b.re) {
      if (n == 1) return a;
      if (n == 2) return a * a;
      if (n == 3) return a * a * a;
      C r{T(1), T(0)}, p = a;
      for (int m = n < 0 ? -n : n, mask = 1;; mask <<= 1) {
        if (m & mask) r = r * p;
        if (m < (mask << 1)) break;
        p = p * p;
      }
      return n < 0 ? C{T(1), T(0)} / r : r;
    }
  }
  return cexp_(mul_annex_g_(b, clog_(a)));
}

}  // namespace detail
}  // namespace arrayport::ops
