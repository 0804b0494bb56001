// The element-wise operations as host/device functors over compute types. Shared by the CPU and
// CUDA kernels, so both compute the same thing.
#pragma once

#include "ops/complex_math.hpp"
#include "ops/op_id.hpp"
#include "ops/scalar_math.hpp"
#include "ops/types.hpp"

#include <cstring>
#include <type_traits>

namespace arrayport::ops {

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
    else if constexpr (std::is_floating_point_v<C>)
      return detail::negate_(a);
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

/// The functor of each op but divide and axpy (make_functor builds those from the call).
template <op_id Op>
constexpr auto plain_functor() noexcept {
  if constexpr (Op == op_id::add)
    return add_fn{};
  else if constexpr (Op == op_id::subtract)
    return subtract_fn{};
  else if constexpr (Op == op_id::multiply)
    return multiply_fn{};
  else if constexpr (Op == op_id::maximum)
    return maximum_fn{};
  else if constexpr (Op == op_id::minimum)
    return minimum_fn{};
  else if constexpr (Op == op_id::negative)
    return negative_fn{};
  else if constexpr (Op == op_id::square)
    return square_fn{};
  else if constexpr (Op == op_id::sqrt)
    return sqrt_fn{};
  else if constexpr (Op == op_id::abs)
    return abs_fn{};
  else if constexpr (Op == op_id::copy)
    return copy_fn{};
  else if constexpr (Op == op_id::where)
    return where_fn{};
  else if constexpr (Op == op_id::equal)
    return equal_fn{};
  else if constexpr (Op == op_id::not_equal)
    return not_equal_fn{};
  else if constexpr (Op == op_id::less)
    return less_fn{};
  else if constexpr (Op == op_id::less_equal)
    return less_equal_fn{};
  else if constexpr (Op == op_id::logical_and)
    return logical_and_fn{};
  else if constexpr (Op == op_id::logical_or)
    return logical_or_fn{};
  else if constexpr (Op == op_id::logical_xor)
    return logical_xor_fn{};
  else if constexpr (Op == op_id::logical_not)
    return logical_not_fn{};
  else if constexpr (Op == op_id::bitwise_and)
    return bitwise_and_fn{};
  else if constexpr (Op == op_id::bitwise_or)
    return bitwise_or_fn{};
  else if constexpr (Op == op_id::bitwise_xor)
    return bitwise_xor_fn{};
  else if constexpr (Op == op_id::bitwise_invert)
    return bitwise_invert_fn{};
  else if constexpr (Op == op_id::isnan)
    return isnan_fn{};
  else if constexpr (Op == op_id::isinf)
    return isinf_fn{};
  else if constexpr (Op == op_id::isfinite)
    return isfinite_fn{};
  else if constexpr (Op == op_id::exp)
    return exp_fn{};
  else if constexpr (Op == op_id::log)
    return log_fn{};
  else if constexpr (Op == op_id::sin)
    return sin_fn{};
  else if constexpr (Op == op_id::cos)
    return cos_fn{};
  else if constexpr (Op == op_id::tanh)
    return tanh_fn{};
  else if constexpr (Op == op_id::clip)
    return clip_fn{};
  else if constexpr (Op == op_id::floor_divide)
    return floor_divide_fn{};
  else if constexpr (Op == op_id::remainder)
    return remainder_fn{};
  else if constexpr (Op == op_id::power)
    return power_fn{};
}

/// Builds the functor for result storage type S from the call's parameters.
template <op_id Op, class S>
auto make_functor(const op_params& p) {
  using C = compute_t<S>;
  if constexpr (Op == op_id::axpy) {
    (void)p;
    return axpy_fn<S>{};
  } else if constexpr (Op == op_id::divide) {
    S zero;
    std::memcpy(&zero, p.value, sizeof zero);
    return divide_fn<C>{convert<C>(zero), p.has_value};
  } else {
    (void)p;
    return plain_functor<Op>();
  }
}

/// The storage type argument I of op Op loads as, when the result storage type is S: where's
/// condition is bool, everything else is S.
template <op_id Op, int I, class S>
using arg_storage_t = std::conditional_t<Op == op_id::where && I == 0, bool, S>;

/// The storage type the op stores: bool for comparisons and predicates, abs of complex is real,
/// everything else S.
template <op_id Op, class S>
using result_storage_t = std::conditional_t<
    gives_bool(Op), bool,
    std::conditional_t<Op == op_id::abs && is_complex_v<S>,
                       std::conditional_t<std::is_same_v<S, complex<float>>, float, double>, S>>;

}  // namespace arrayport::ops
