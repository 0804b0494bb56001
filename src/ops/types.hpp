// Element types of the kernel library: the dtype ids it dispatches on, the compute type of each
// storage type, a host/device complex, and the conversions used by converting loads and stores.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/dtype.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace arrayport::ops {

/// The dtypes the kernels are instantiated for, in one dense enumeration (a dispatch-table index).
/// uint64 is only ever a reduction result (NumPy sums uint8 into uint64).
enum class type_id : std::uint8_t {
  bool_,
  uint8,
  int32,
  int64,
  float16,
  bfloat16,
  float32,
  float64,
  complex64,
  complex128,
  uint64,
  count
};
inline constexpr int type_count = static_cast<int>(type_id::count);
/// Element-wise ops take the first ten; uint64 appears only as a reduction output.
inline constexpr int elementwise_type_count = 10;
inline constexpr type_id invalid_type = type_id::count;

/// The type_id of a dtype, or invalid_type for dtypes the kernels do not handle.
constexpr type_id to_type_id(dtype dt) noexcept {
  if (dt == dtypes::bool_) return type_id::bool_;
  if (dt == dtypes::uint8) return type_id::uint8;
  if (dt == dtypes::int32) return type_id::int32;
  if (dt == dtypes::int64) return type_id::int64;
  if (dt == dtypes::float16) return type_id::float16;
  if (dt == dtypes::bfloat16) return type_id::bfloat16;
  if (dt == dtypes::float32) return type_id::float32;
  if (dt == dtypes::float64) return type_id::float64;
  if (dt == dtypes::complex64) return type_id::complex64;
  if (dt == dtypes::complex128) return type_id::complex128;
  if (dt == dtypes::uint64) return type_id::uint64;
  return invalid_type;
}

constexpr dtype to_dtype(type_id t) noexcept {
  constexpr dtype table[] = {dtypes::bool_,      dtypes::uint8,   dtypes::int32,
                             dtypes::int64,      dtypes::float16, dtypes::bfloat16,
                             dtypes::float32,    dtypes::float64, dtypes::complex64,
                             dtypes::complex128, dtypes::uint64};
  return table[static_cast<int>(t)];
}

constexpr bool is_complex(type_id t) noexcept {
  return t == type_id::complex64 || t == type_id::complex128;
}
constexpr bool is_floating(type_id t) noexcept {
  return t == type_id::float16 || t == type_id::bfloat16 || t == type_id::float32 ||
         t == type_id::float64;
}
constexpr bool is_integer(type_id t) noexcept {
  return t == type_id::uint8 || t == type_id::int32 || t == type_id::int64 || t == type_id::uint64;
}

/// a * b rounded on its own: on the device never fused with the add that follows (FMA), so
/// complex products round as NumPy's do, and overflow to inf - inf = NaN where NumPy's do.
template <class T>
ARRAYPORT_HOST_DEVICE inline T mul_rn(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>)
    return __fmul_rn(a, b);
  else if constexpr (std::is_same_v<T, double>)
    return __dmul_rn(a, b);
  else
    return a * b;
#else
  return a * b;
#endif
}

/// complex<T> for host and device code, laid out as T[2] like std::complex, NumPy and DLPack.
/// Only what the kernels need; division is Smith's algorithm, as in NumPy.
template <class T>
struct complex {
  T re, im;

  ARRAYPORT_HOST_DEVICE friend complex operator+(complex a, complex b) {
    return {a.re + b.re, a.im + b.im};
  }
  ARRAYPORT_HOST_DEVICE friend complex operator-(complex a, complex b) {
    return {a.re - b.re, a.im - b.im};
  }
  ARRAYPORT_HOST_DEVICE friend complex operator-(complex a) { return {-a.re, -a.im}; }
  ARRAYPORT_HOST_DEVICE friend complex operator*(complex a, complex b) {
    return {mul_rn(a.re, b.re) - mul_rn(a.im, b.im), mul_rn(a.re, b.im) + mul_rn(a.im, b.re)};
  }
  ARRAYPORT_HOST_DEVICE friend complex operator/(complex a, complex b) {
    const T abs_br = b.re < T(0) ? -b.re : b.re;
    const T abs_bi = b.im < T(0) ? -b.im : b.im;
    if (abs_br >= abs_bi) {
      if (abs_br == T(0) && abs_bi == T(0)) {  // inf/nan, signed by a alone (b may be -0.0)
        const T zero = abs_br * abs_br;        // +0 (a literal 0 is an nvcc diagnostic)
        return {a.re / zero, a.im / zero};
      }
      const T rat = b.im / b.re;
      const T scl = T(1) / (b.re + mul_rn(b.im, rat));
      return {(a.re + mul_rn(a.im, rat)) * scl, (a.im - mul_rn(a.re, rat)) * scl};
    }
    const T rat = b.re / b.im;
    const T scl = T(1) / (b.im + mul_rn(b.re, rat));
    return {(mul_rn(a.re, rat) + a.im) * scl, (mul_rn(a.im, rat) - a.re) * scl};
  }
  ARRAYPORT_HOST_DEVICE friend bool operator==(complex a, complex b) {
    return a.re == b.re && a.im == b.im;
  }
  ARRAYPORT_HOST_DEVICE friend bool operator!=(complex a, complex b) { return !(a == b); }
};
static_assert(sizeof(complex<float>) == 8 && sizeof(complex<double>) == 16);
static_assert(std::is_trivially_copyable_v<complex<double>>);

template <class T>
struct is_complex_type : std::false_type {};
template <class T>
struct is_complex_type<complex<T>> : std::true_type {};
template <class T>
inline constexpr bool is_complex_v = is_complex_type<T>::value;

/// Storage type of each type_id (what sits in memory).
template <type_id>
struct storage_of;
template <>
struct storage_of<type_id::bool_> {
  using type = bool;
};
template <>
struct storage_of<type_id::uint8> {
  using type = std::uint8_t;
};
template <>
struct storage_of<type_id::int32> {
  using type = std::int32_t;
};
template <>
struct storage_of<type_id::int64> {
  using type = std::int64_t;
};
template <>
struct storage_of<type_id::float16> {
  using type = float16_t;
};
template <>
struct storage_of<type_id::bfloat16> {
  using type = bfloat16_t;
};
template <>
struct storage_of<type_id::float32> {
  using type = float;
};
template <>
struct storage_of<type_id::float64> {
  using type = double;
};
template <>
struct storage_of<type_id::complex64> {
  using type = complex<float>;
};
template <>
struct storage_of<type_id::complex128> {
  using type = complex<double>;
};
template <>
struct storage_of<type_id::uint64> {
  using type = std::uint64_t;
};
template <type_id T>
using storage_t = typename storage_of<T>::type;

/// A type as a value, for visit_storage's callbacks.
template <class T>
struct type_tag {
  using type = T;
};

/// f(type_tag<storage_t<t>>{}) for the kernels' dtypes t (elementwise_type_count of them);
/// `otherwise` for any other.
template <class F, class R>
R visit_storage(type_id t, F&& f, R otherwise) {
  switch (t) {
    case type_id::bool_: return f(type_tag<bool>{});
    case type_id::uint8: return f(type_tag<std::uint8_t>{});
    case type_id::int32: return f(type_tag<std::int32_t>{});
    case type_id::int64: return f(type_tag<std::int64_t>{});
    case type_id::float16: return f(type_tag<float16_t>{});
    case type_id::bfloat16: return f(type_tag<bfloat16_t>{});
    case type_id::float32: return f(type_tag<float>{});
    case type_id::float64: return f(type_tag<double>{});
    case type_id::complex64: return f(type_tag<complex<float>>{});
    case type_id::complex128: return f(type_tag<complex<double>>{});
    default: return otherwise;
  }
}

/// The type_id of a storage type (the inverse of storage_t).
template <class S>
inline constexpr type_id type_id_of = invalid_type;
template <>
inline constexpr type_id type_id_of<bool> = type_id::bool_;
template <>
inline constexpr type_id type_id_of<std::uint8_t> = type_id::uint8;
template <>
inline constexpr type_id type_id_of<std::int32_t> = type_id::int32;
template <>
inline constexpr type_id type_id_of<std::int64_t> = type_id::int64;
template <>
inline constexpr type_id type_id_of<float16_t> = type_id::float16;
template <>
inline constexpr type_id type_id_of<bfloat16_t> = type_id::bfloat16;
template <>
inline constexpr type_id type_id_of<float> = type_id::float32;
template <>
inline constexpr type_id type_id_of<double> = type_id::float64;
template <>
inline constexpr type_id type_id_of<complex<float>> = type_id::complex64;
template <>
inline constexpr type_id type_id_of<complex<double>> = type_id::complex128;
template <>
inline constexpr type_id type_id_of<std::uint64_t> = type_id::uint64;

/// The type arithmetic happens in: 16-bit floats compute in float and round once per result, as
/// NumPy's float16 loops do; everything else computes in its own type.
template <class S>
struct compute_of {
  using type = S;
};
template <>
struct compute_of<float16_t> {
  using type = float;
};
template <>
struct compute_of<bfloat16_t> {
  using type = float;
};
template <class S>
using compute_t = typename compute_of<S>::type;

// ---- conversions: value of compute/storage type From -> type To ------------------------------

namespace detail {
template <class T>
struct real_of {
  using type = T;
};
template <class T>
struct real_of<complex<T>> {
  using type = T;
};
template <class T>
using real_t = typename real_of<T>::type;

// Float -> integer without C++'s undefined behaviour. Signed targets: NaN and out-of-range values
// give the type's minimum (what x86 conversions give NumPy). Unsigned targets go through int64,
// so negative values wrap as they do in NumPy; beyond int64 they give 0.
template <class I, class F>
ARRAYPORT_HOST_DEVICE I float_to_int(F x) {
  constexpr F two63 = F(9223372036854775808.0);
  if constexpr (std::is_signed_v<I>) {
    constexpr F hi = F(std::numeric_limits<I>::max()) + F(1);  // exact: a power of two
    if (x >= -hi && x < hi) return static_cast<I>(x);
    return std::numeric_limits<I>::min();
  } else {
    if (x > -two63 && x < two63) return static_cast<I>(static_cast<std::int64_t>(x));
    if (x >= F(0) && x < F(2) * two63) return static_cast<I>(static_cast<std::uint64_t>(x));
    return I(0);
  }
}
// A double as the float nearest it with its last bit made odd when inexact ("round to odd"): a
// 16-bit float rounded from that is the double's own nearest, as NumPy's casts give; rounding
// through the nearest float instead is off by one unit now and then (twice rounded).
ARRAYPORT_HOST_DEVICE inline float to_float_round_to_odd(double x) {
  float f = static_cast<float>(x);
  // Exact, NaN, infinite, or 0 (far below the 16-bit floats' smallest: it rounds to 0 anyway).
  if (!(static_cast<double>(f) != x) || f - f != 0.0f || f == 0.0f) return f;
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((static_cast<double>(f) > x) == (f > 0.0f)) --bits;  // rounded away from zero: truncate
  bits |= 1u;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
}  // namespace detail

/// Converts between any two storage or compute types, with NumPy's casting semantics: to bool is
/// "!= 0", complex to real drops the imaginary part, 16-bit floats go through float.
template <class To, class From>
ARRAYPORT_HOST_DEVICE inline To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<From, float16_t> || std::is_same_v<From, bfloat16_t>) {
    return convert<To>(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, float16_t> || std::is_same_v<To, bfloat16_t>) {
    if constexpr (is_complex_v<From>)
      return convert<To>(x.re);
    else if constexpr (std::is_same_v<From, double>)
      return To(detail::to_float_round_to_odd(x));
    else if constexpr (std::is_integral_v<From> && !std::is_same_v<From, bool>)
      return To(detail::to_float_round_to_odd(static_cast<double>(x)));  // int32: exact in double
    else
      return To(static_cast<float>(x));
  } else if constexpr (is_complex_v<From>) {
    if constexpr (is_complex_v<To>) {
      using R = detail::real_t<To>;
      return To{static_cast<R>(x.re), static_cast<R>(x.im)};
    } else if constexpr (std::is_same_v<To, bool>) {
      return x.re != 0 || x.im != 0;
    } else {
      return convert<To>(x.re);
    }
  } else if constexpr (is_complex_v<To>) {
    using R = detail::real_t<To>;
    return To{convert<R>(x), R(0)};
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return detail::float_to_int<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace arrayport::ops
