// The element-wise operations as host/device functors over compute types, and which dtypes each
// one is instantiated for. Shared by the CPU and CUDA kernels, so both compute the same thing.
#pragma once

#include "ops/types.hpp"

#include <math.h>  // sqrtf/hypotf/fabsf: callable from host and device code alike

#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__CUDACC__)
#include <cuda/std/complex>
#endif

namespace arrayport::ops {

/// Every element-wise operation, one dispatch-table row each.
enum class op_id : std::uint8_t {
  add,
  subtract,
  multiply,
  divide,
  maximum,
  minimum,  // binary
  negative,
  square,
  sqrt,
  abs,
  copy,  // unary (copy also casts: astype)
  where,
  axpy,  // ternary
  equal,
  not_equal,
  less,
  less_equal,  // comparisons: bool results (greater is less with the operands swapped)
  logical_and,
  logical_or,
  logical_xor,
  logical_not,  // in bool (the loads convert, x != 0) or the dtype the array operands share
  bitwise_and,
  bitwise_or,
  bitwise_xor,
  bitwise_invert,  // bool and integers
  isnan,
  isinf,
  isfinite,  // bool results
  exp,
  log,
  sin,
  cos,
  tanh,  // floating point and complex
  clip,  // ternary: minimum(maximum(x, lo), hi)
  floor_divide,
  remainder,
  power,  // negative integer exponents of integers are refused before the kernel
  count
};
inline constexpr int op_count = static_cast<int>(op_id::count);

constexpr int arity(op_id op) noexcept {
  switch (op) {
    case op_id::negative:
    case op_id::square:
    case op_id::sqrt:
    case op_id::abs:
    case op_id::copy:
    case op_id::logical_not:
    case op_id::bitwise_invert:
    case op_id::isnan:
    case op_id::isinf:
    case op_id::isfinite:
    case op_id::exp:
    case op_id::log:
    case op_id::sin:
    case op_id::cos:
    case op_id::tanh: return 1;
    case op_id::where:
    case op_id::axpy:
    case op_id::clip: return 3;
    default: return 2;
  }
}

/// Ops whose result is bool whatever dtype they compute in.
constexpr bool gives_bool(op_id op) noexcept {
  return (op >= op_id::equal && op <= op_id::logical_not) ||
         (op >= op_id::isnan && op <= op_id::isfinite);
}

/// The op's extra parameter (divide's zero_value), as one element of the result dtype.
struct op_params {
  alignas(16) unsigned char value[16];
  bool has_value;
};

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

// Each functor: `arity`, `template <class C> C operator()(C...)` in compute types, and (unary ones
// whose result type differs) a result type. Constructed once per call from op_params.

struct add_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a, C b) const {
    return detail::wrap_add(a, b);
  }
};
struct subtract_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a, C b) const {
    return detail::wrap_sub(a, b);
  }
};
struct multiply_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a, C b) const {
    return detail::wrap_mul(a, b);
  }
};
// NaN propagates (NumPy's maximum/minimum, not fmax/fmin).
// Selects rather than branches, so that the CPU loops vectorise.
struct maximum_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a, C b) const {
    const C m = detail::greater(b, a) ? b : a;
    return detail::is_nan(a) ? a : detail::is_nan(b) ? b : m;
  }
};
struct minimum_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a, C b) const {
    const C m = detail::greater(a, b) ? b : a;
    return detail::is_nan(a) ? a : detail::is_nan(b) ? b : m;
  }
};
struct negative_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a) const {
    if constexpr (std::is_integral_v<C>)
      return detail::wrap_sub(C(0), a);
    else
      return -a;
  }
};
struct square_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a) const {
    return detail::wrap_mul(a, a);
  }
};
struct sqrt_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a) const {
    if constexpr (is_complex_v<C>) {  // C99's csqrt (Annex G), which NumPy's sqrt is
      using R = decltype(a.re);
      const R inf = std::numeric_limits<R>::infinity(), nan = std::numeric_limits<R>::quiet_NaN();
      if (a.re == R(0) && a.im == R(0)) return C{R(0), a.im};
      if (detail::isinf_(a.im)) return C{inf, a.im};  // x + i inf, x even NaN
      if (detail::isinf_(a.re)) {
        if (a.re > R(0))  // +inf + iy -> +inf + i0 (sign of y); +inf + iNaN -> +inf + iNaN
          return C{a.re, detail::isnan_(a.im) ? a.im : detail::copysign_(R(0), a.im)};
        // -inf + iy -> 0 + i inf (sign of y); -inf + iNaN -> NaN + i inf
        return C{detail::isnan_(a.im) ? a.im : R(0), detail::copysign_(inf, a.im)};
      }
      if (detail::isnan_(a.re) || detail::isnan_(a.im)) return C{nan, nan};
      // |re| + hypot overflows from max/2: a quarter of z has half the root.
      const R big = R(0.25) * std::numeric_limits<R>::max();
      const bool scale = detail::fabs_(a.re) > big || detail::fabs_(a.im) > big;
      const R re = scale ? a.re * R(0.25) : a.re, im = scale ? a.im * R(0.25) : a.im;
      const R k = scale ? R(2) : R(1);
      const R t = detail::sqrt_((detail::fabs_(re) + detail::hypot_(re, im)) / R(2));
      if (re >= R(0)) return C{k * t, k * (im / (R(2) * t))};
      return C{k * (detail::fabs_(im) / (R(2) * t)), k * detail::copysign_(t, im)};
    } else {
      return detail::sqrt_(a);
    }
  }
};
struct abs_fn {  // complex -> its real type (the store converts the result)
  template <class C>
  ARRAYPORT_HOST_DEVICE auto operator()(C a) const {
    if constexpr (is_complex_v<C>)
      return detail::hypot_(a.re, a.im);
    else if constexpr (std::is_floating_point_v<C>)
      return detail::fabs_(a);
    else if constexpr (detail::is_signed_int_v<C>)
      return a < C(0) ? detail::wrap_sub(C(0), a) : a;
    else
      return a;
  }
};
struct copy_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a) const {
    return a;
  }
};
struct where_fn {  // the condition arrives as bool (a converting load for any other dtype)
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(bool c, C x, C y) const {
    return c ? x : y;
  }
};
/// a * x + y for storage type S: the product is rounded to S before the add (16-bit floats
/// compute in float), as NumPy's two operations round it.
template <class S>
struct axpy_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a, C x, C y) const {
    return detail::wrap_add(convert<C>(convert<S>(detail::wrap_mul(a, x))), y);
  }
};

// Comparisons compute in the operands' promoted dtype and give bool; complex numbers order
// lexicographically, as in NumPy, and NaN compares false (not_equal: true).
struct equal_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE bool operator()(C a, C b) const {
    return a == b;
  }
};
struct not_equal_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE bool operator()(C a, C b) const {
    return !(a == b);
  }
};
struct less_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE bool operator()(C a, C b) const {
    return detail::greater(b, a);
  }
};
struct less_equal_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE bool operator()(C a, C b) const {
    if constexpr (is_complex_v<C>)
      return !detail::is_nan(a) && !detail::is_nan(b) && !detail::greater(a, b);
    else
      return a <= b;  // false with a NaN, as IEEE compares
  }
};
// In bool, or in the operands' own dtype (their truth: nonzero, NaN included).
struct logical_and_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE bool operator()(C a, C b) const {
    return convert<bool>(a) && convert<bool>(b);
  }
};
struct logical_or_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE bool operator()(C a, C b) const {
    return convert<bool>(a) || convert<bool>(b);
  }
};
struct logical_xor_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE bool operator()(C a, C b) const {
    return convert<bool>(a) != convert<bool>(b);
  }
};
struct logical_not_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE bool operator()(C a) const {
    return !convert<bool>(a);
  }
};
struct bitwise_and_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a, C b) const {
    return static_cast<C>(a & b);
  }
};
struct bitwise_or_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a, C b) const {
    return static_cast<C>(a | b);
  }
};
struct bitwise_xor_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a, C b) const {
    return static_cast<C>(a ^ b);
  }
};
struct bitwise_invert_fn {  // NumPy's invert: logical not for bool
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a) const {
    if constexpr (std::is_same_v<C, bool>)
      return !a;
    else
      return static_cast<C>(~a);
  }
};
struct isnan_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE bool operator()(C a) const {
    return detail::is_nan(a);
  }
};
struct isinf_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE bool operator()(C a) const {
    if constexpr (is_complex_v<C>)
      return detail::isinf_(a.re) || detail::isinf_(a.im);
    else
      return detail::isinf_(a);
  }
};
struct isfinite_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE bool operator()(C a) const {
    if constexpr (is_complex_v<C>)
      return a.re - a.re == 0 && a.im - a.im == 0;
    else
      return a - a == 0;  // false for inf (inf - inf is NaN) and NaN
  }
};
struct exp_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a) const {
    if constexpr (is_complex_v<C>)
      return detail::cexp_(a);
    else
      return detail::exp_(a);
  }
};
struct log_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a) const {
    if constexpr (is_complex_v<C>)
      return detail::clog_(a);
    else
      return detail::log_(a);
  }
};
struct sin_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a) const {
    if constexpr (is_complex_v<C>)
      return detail::csin_glibc_(a);
    else
      return detail::sin_(a);
  }
};
struct cos_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a) const {
    if constexpr (is_complex_v<C>)
      return detail::ccos_(a);
    else
      return detail::cos_(a);
  }
};
struct tanh_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a) const {
    if constexpr (is_complex_v<C>)
      return detail::ctanh_(a);
    else
      return detail::tanh_(a);
  }
};
// NumPy 2's clip: minimum(maximum(x, lo), hi), NaN in any operand propagating.
struct clip_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C x, C lo, C hi) const {
    return minimum_fn{}(maximum_fn{}(x, lo), hi);
  }
};

// Integers: floored (Python's) division and remainder, 0 for a zero divisor as NumPy gives;
// floats: NumPy's npy_floor_divide and npy_remainder.
struct floor_divide_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == C(0)) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return detail::wrap_sub(C(0), a);  // the minimum wraps, as in NumPy
        const C q = static_cast<C>(a / b);
        return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<C>(q - 1) : q;
      } else {
        return static_cast<C>(a / b);
      }
    } else {
      if (b == C(0)) return a / b;
      C mod;
      return detail::divmod_(a, b, mod);
    }
  }
};
struct remainder_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == C(0)) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C(0);
        const C r = static_cast<C>(a % b);
        return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<C>(r + b) : r;
      } else {
        return static_cast<C>(a % b);
      }
    } else {
      C mod = detail::fmod_(a, b);
      if (b != C(0)) detail::to_divisor_sign_(b, mod);
      return mod;
    }
  }
};
// Integers by repeated squaring, wrapping as NumPy's do; a negative exponent never reaches here.
struct power_fn {
  template <class C>
  ARRAYPORT_HOST_DEVICE C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if constexpr (std::is_signed_v<C>)
        if (b < C(0)) return C(0);
      C r = 1;
      for (auto e = static_cast<std::make_unsigned_t<C>>(b); e; e >>= 1) {
        if (e & 1u) r = detail::wrap_mul(r, a);
        a = detail::wrap_mul(a, a);
      }
      return r;
    } else if constexpr (is_complex_v<C>) {
      return detail::cpow_(a, b);
    } else {
      return detail::pow_(a, b);
    }
  }
};

/// divide(a, b, zero_value=None): true division; with a zero_value, a zero divisor gives it
/// instead of inf/nan (NumCu's default-on-zero-divisor).
template <class C>
struct divide_fn {
  C zero_value;
  bool has_zero_value;
  ARRAYPORT_HOST_DEVICE C operator()(C a, C b) const {
    const C q = a / b;  // floats only: a zero divisor gives inf or NaN, then replaced
    return has_zero_value && b == C{} ? zero_value : q;
  }
};

/// Which result (compute) dtypes an op is instantiated for; the dispatcher promotes inputs into
/// one of these or raises TypeError.
constexpr bool supports(op_id op, type_id t) noexcept {
  if (static_cast<int>(t) >= elementwise_type_count) return false;
  const bool b = t == type_id::bool_;
  const bool inexact = is_floating(t) || is_complex(t);
  const bool integral = b || is_integer(t);
  switch (op) {
    case op_id::subtract:
    case op_id::negative:
    case op_id::square: return !b;
    case op_id::divide:
    case op_id::sqrt: return inexact;
    case op_id::logical_and:
    case op_id::logical_or:
    case op_id::logical_xor:
    case op_id::logical_not: return true;  // bool, or the dtype all array operands share
    case op_id::bitwise_and:
    case op_id::bitwise_or:
    case op_id::bitwise_xor:
    case op_id::bitwise_invert: return integral;
    case op_id::isnan:
    case op_id::isinf:
    case op_id::isfinite: return inexact;  // integers are loaded as floats (never NaN or inf)
    case op_id::exp:
    case op_id::log:
    case op_id::sin:
    case op_id::cos:
    case op_id::tanh: return inexact;
    case op_id::floor_divide:
    case op_id::remainder: return !b && !is_complex(t);  // bool: NumPy gives int8, not in ops
    case op_id::power: return !b;
    default: return true;
  }
}

/// The functor type of each op (divide is templated on its compute type for zero_value).
template <op_id Op, class C>
struct functor_of;
template <class C>
struct functor_of<op_id::add, C> {
  using type = add_fn;
};
template <class C>
struct functor_of<op_id::subtract, C> {
  using type = subtract_fn;
};
template <class C>
struct functor_of<op_id::multiply, C> {
  using type = multiply_fn;
};
template <class C>
struct functor_of<op_id::divide, C> {
  using type = divide_fn<C>;
};
template <class C>
struct functor_of<op_id::maximum, C> {
  using type = maximum_fn;
};
template <class C>
struct functor_of<op_id::minimum, C> {
  using type = minimum_fn;
};
template <class C>
struct functor_of<op_id::negative, C> {
  using type = negative_fn;
};
template <class C>
struct functor_of<op_id::square, C> {
  using type = square_fn;
};
template <class C>
struct functor_of<op_id::sqrt, C> {
  using type = sqrt_fn;
};
template <class C>
struct functor_of<op_id::abs, C> {
  using type = abs_fn;
};
template <class C>
struct functor_of<op_id::copy, C> {
  using type = copy_fn;
};
template <class C>
struct functor_of<op_id::where, C> {
  using type = where_fn;
};
template <class C>
struct functor_of<op_id::axpy, C> {
  using type = void;
};  // make_functor
template <class C>
struct functor_of<op_id::equal, C> {
  using type = equal_fn;
};
template <class C>
struct functor_of<op_id::not_equal, C> {
  using type = not_equal_fn;
};
template <class C>
struct functor_of<op_id::less, C> {
  using type = less_fn;
};
template <class C>
struct functor_of<op_id::less_equal, C> {
  using type = less_equal_fn;
};
template <class C>
struct functor_of<op_id::logical_and, C> {
  using type = logical_and_fn;
};
template <class C>
struct functor_of<op_id::logical_or, C> {
  using type = logical_or_fn;
};
template <class C>
struct functor_of<op_id::logical_xor, C> {
  using type = logical_xor_fn;
};
template <class C>
struct functor_of<op_id::logical_not, C> {
  using type = logical_not_fn;
};
template <class C>
struct functor_of<op_id::bitwise_and, C> {
  using type = bitwise_and_fn;
};
template <class C>
struct functor_of<op_id::bitwise_or, C> {
  using type = bitwise_or_fn;
};
template <class C>
struct functor_of<op_id::bitwise_xor, C> {
  using type = bitwise_xor_fn;
};
template <class C>
struct functor_of<op_id::bitwise_invert, C> {
  using type = bitwise_invert_fn;
};
template <class C>
struct functor_of<op_id::isnan, C> {
  using type = isnan_fn;
};
template <class C>
struct functor_of<op_id::isinf, C> {
  using type = isinf_fn;
};
template <class C>
struct functor_of<op_id::isfinite, C> {
  using type = isfinite_fn;
};
template <class C>
struct functor_of<op_id::exp, C> {
  using type = exp_fn;
};
template <class C>
struct functor_of<op_id::log, C> {
  using type = log_fn;
};
template <class C>
struct functor_of<op_id::sin, C> {
  using type = sin_fn;
};
template <class C>
struct functor_of<op_id::cos, C> {
  using type = cos_fn;
};
template <class C>
struct functor_of<op_id::tanh, C> {
  using type = tanh_fn;
};
template <class C>
struct functor_of<op_id::clip, C> {
  using type = clip_fn;
};
template <class C>
struct functor_of<op_id::floor_divide, C> {
  using type = floor_divide_fn;
};
template <class C>
struct functor_of<op_id::remainder, C> {
  using type = remainder_fn;
};
template <class C>
struct functor_of<op_id::power, C> {
  using type = power_fn;
};

/// Builds the functor for result storage type S from the call's parameters.
template <op_id Op, class S>
auto make_functor(const op_params& p) {
  using C = compute_t<S>;
  if constexpr (Op == op_id::axpy) {
    (void)p;
    return axpy_fn<S>{};
  } else if constexpr (Op == op_id::divide) {
    using F = typename functor_of<Op, C>::type;
    S zero;
    std::memcpy(&zero, p.value, sizeof zero);
    return F{convert<C>(zero), p.has_value};
  } else {
    (void)p;
    return typename functor_of<Op, C>::type{};
  }
}

/// The storage type argument I of op Op loads as, when the result storage type is S: where's
/// condition is bool, everything else is S.
template <op_id Op, int I, class S>
using arg_storage_t = std::conditional_t<Op == op_id::where && I == 0, bool, S>;

/// arg_storage_t as a dtype id, for the dispatcher.
constexpr type_id arg_type(op_id op, int i, type_id compute) noexcept {
  return op == op_id::where && i == 0 ? type_id::bool_ : compute;
}

/// The storage type the op stores: bool for comparisons and predicates, abs of complex is real,
/// everything else S.
template <op_id Op, class S>
using result_storage_t = std::conditional_t<
    gives_bool(Op), bool,
    std::conditional_t<Op == op_id::abs && is_complex_v<S>,
                       std::conditional_t<std::is_same_v<S, complex<float>>, float, double>, S>>;

/// result_storage_t as a dtype id: the dtype of the result of op computed in `compute`.
constexpr type_id result_storage_type(op_id op, type_id compute) noexcept {
  if (gives_bool(op)) return type_id::bool_;
  if (op != op_id::abs || !is_complex(compute)) return compute;
  return compute == type_id::complex64 ? type_id::float32 : type_id::float64;
}

}  // namespace arrayport::ops
