// Element types: dtype and the C++ type -> dtype mapping. The 16-bit float storage types are in
// half.hpp; the NumPy and PEP 3118 spellings in python/spellings.hpp.
#pragma once

#include <arrayport/c/view.h>
#include <arrayport/config.hpp>
#include <arrayport/error.hpp>
#include <arrayport/half.hpp>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace arrayport {

/// An element type: the C++ face of arrayport_dtype_t (and so of DLPack's DLDataType), with the
/// same layout so views can carry either. `dtype{}` is all zeros, which is no supported dtype.
class dtype {
 public:
  std::uint8_t code;    ///< an arrayport_dtype_code_t value (DLPack's DLDataTypeCode)
  std::uint8_t bits;    ///< width of one lane in bits (complex64: 64)
  std::uint16_t lanes;  ///< vector lanes; 1 for every dtype arrayport produces

  dtype() = default;
  ARRAYPORT_HOST_DEVICE constexpr dtype(std::uint8_t type_code, std::uint8_t bit_width,
                                        std::uint16_t lane_count = 1) noexcept
      : code(type_code), bits(bit_width), lanes(lane_count) {}

  /// Bytes per element, rounded up for sub-byte types (DLPack's rule).
  ARRAYPORT_HOST_DEVICE constexpr std::size_t itemsize() const noexcept {
    return (std::size_t(bits) * lanes + 7) / 8;
  }

  /// "float32", "complex64", ...; "unknown" for anything is_supported() rejects.
  constexpr std::string_view name() const noexcept {
    if (lanes != 1) return "unknown";
    switch (code) {
      case ARRAYPORT_DTYPE_BOOL:
        if (bits == 8) return "bool";
        break;
      case ARRAYPORT_DTYPE_INT:
        switch (bits) {
          case 8: return "int8";
          case 16: return "int16";
          case 32: return "int32";
          case 64: return "int64";
        }
        break;
      case ARRAYPORT_DTYPE_UINT:
        switch (bits) {
          case 8: return "uint8";
          case 16: return "uint16";
          case 32: return "uint32";
          case 64: return "uint64";
        }
        break;
      case ARRAYPORT_DTYPE_FLOAT:
        switch (bits) {
          case 16: return "float16";
          case 32: return "float32";
          case 64: return "float64";
        }
        break;
      case ARRAYPORT_DTYPE_BFLOAT:
        if (bits == 16) return "bfloat16";
        break;
      case ARRAYPORT_DTYPE_COMPLEX:
        switch (bits) {
          case 64: return "complex64";
          case 128: return "complex128";
        }
        break;
    }
    return "unknown";
  }

  // The predicates look at the type code only, so they also classify vector and odd widths.
  /// float or bfloat (not complex, following NumPy's `floating`).
  ARRAYPORT_HOST_DEVICE constexpr bool is_floating() const noexcept {
    return code == ARRAYPORT_DTYPE_FLOAT || code == ARRAYPORT_DTYPE_BFLOAT;
  }
  ARRAYPORT_HOST_DEVICE constexpr bool is_complex() const noexcept {
    return code == ARRAYPORT_DTYPE_COMPLEX;
  }
  /// Signed or unsigned integer; bool is not an integer here (NumPy agrees).
  ARRAYPORT_HOST_DEVICE constexpr bool is_integer() const noexcept {
    return code == ARRAYPORT_DTYPE_INT || code == ARRAYPORT_DTYPE_UINT;
  }
  /// Can hold negative values: signed integers, floating and complex (std::is_signed's sense).
  ARRAYPORT_HOST_DEVICE constexpr bool is_signed() const noexcept {
    return code == ARRAYPORT_DTYPE_INT || is_floating() || is_complex();
  }
  ARRAYPORT_HOST_DEVICE constexpr bool is_bool() const noexcept {
    return code == ARRAYPORT_DTYPE_BOOL;
  }

  ARRAYPORT_HOST_DEVICE constexpr bool operator==(const dtype& other) const noexcept {
    return code == other.code && bits == other.bits && lanes == other.lanes;
  }
  ARRAYPORT_HOST_DEVICE constexpr bool operator!=(const dtype& other) const noexcept {
    return !(*this == other);
  }

  ARRAYPORT_HOST_DEVICE constexpr arrayport_dtype_t to_c() const noexcept {
    return arrayport_dtype_t{code, bits, lanes};
  }
  ARRAYPORT_HOST_DEVICE static constexpr dtype from_c(arrayport_dtype_t c) noexcept {
    return dtype(c.code, c.bits, c.lanes);
  }
};

// A dtype is stored inside arrayport_view_t and passed to kernels by value.
static_assert(sizeof(dtype) == sizeof(arrayport_dtype_t) && sizeof(dtype) == 4,
              "dtype must match arrayport_dtype_t / DLDataType");
static_assert(offsetof(dtype, code) == offsetof(arrayport_dtype_t, code) &&
                  offsetof(dtype, bits) == offsetof(arrayport_dtype_t, bits) &&
                  offsetof(dtype, lanes) == offsetof(arrayport_dtype_t, lanes),
              "dtype must match arrayport_dtype_t / DLDataType field by field");
static_assert(std::is_standard_layout_v<dtype> && std::is_trivially_copyable_v<dtype>,
              "dtype must be a plain value");

/// The dtypes arrayport supports. bool is 8 bits (DLPack's convention); complex bits count both
/// parts (complex64 = two float32).
namespace dtypes {
inline constexpr dtype bool_{ARRAYPORT_DTYPE_BOOL, 8};
inline constexpr dtype int8{ARRAYPORT_DTYPE_INT, 8};
inline constexpr dtype int16{ARRAYPORT_DTYPE_INT, 16};
inline constexpr dtype int32{ARRAYPORT_DTYPE_INT, 32};
inline constexpr dtype int64{ARRAYPORT_DTYPE_INT, 64};
inline constexpr dtype uint8{ARRAYPORT_DTYPE_UINT, 8};
inline constexpr dtype uint16{ARRAYPORT_DTYPE_UINT, 16};
inline constexpr dtype uint32{ARRAYPORT_DTYPE_UINT, 32};
inline constexpr dtype uint64{ARRAYPORT_DTYPE_UINT, 64};
inline constexpr dtype float16{ARRAYPORT_DTYPE_FLOAT, 16};
inline constexpr dtype bfloat16{ARRAYPORT_DTYPE_BFLOAT, 16};
inline constexpr dtype float32{ARRAYPORT_DTYPE_FLOAT, 32};
inline constexpr dtype float64{ARRAYPORT_DTYPE_FLOAT, 64};
inline constexpr dtype complex64{ARRAYPORT_DTYPE_COMPLEX, 64};
inline constexpr dtype complex128{ARRAYPORT_DTYPE_COMPLEX, 128};
}  // namespace dtypes

namespace detail {

inline constexpr dtype supported_dtypes[] = {
    dtypes::bool_,    dtypes::int8,    dtypes::int16,   dtypes::int32,     dtypes::int64,
    dtypes::uint8,    dtypes::uint16,  dtypes::uint32,  dtypes::uint64,    dtypes::float16,
    dtypes::bfloat16, dtypes::float32, dtypes::float64, dtypes::complex64, dtypes::complex128};

inline constexpr const char* supported_dtype_names =
    "'bool', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32', 'uint64', "
    "'float16', 'bfloat16', 'float32', 'float64', 'complex64', 'complex128'";

// For messages: the name when there is one, else the raw fields, which are what a caller debugging
// a foreign DLPack tensor needs to see.
inline std::string describe(dtype dt) {
  if (dt.name() != "unknown") return std::string(dt.name());
  return "dtype(code=" + std::to_string(dt.code) + ", bits=" + std::to_string(dt.bits) +
         ", lanes=" + std::to_string(dt.lanes) + ")";
}

}  // namespace detail

/// True exactly for the 15 dtypes in arrayport::dtypes. A switch rather than a table lookup so
/// that device code can call it (host constexpr arrays are not addressable there).
ARRAYPORT_HOST_DEVICE constexpr bool is_supported(dtype dt) noexcept {
  if (dt.lanes != 1) return false;
  switch (dt.code) {
    case ARRAYPORT_DTYPE_BOOL: return dt.bits == 8;
    case ARRAYPORT_DTYPE_INT:
    case ARRAYPORT_DTYPE_UINT:
      return dt.bits == 8 || dt.bits == 16 || dt.bits == 32 || dt.bits == 64;
    case ARRAYPORT_DTYPE_FLOAT: return dt.bits == 16 || dt.bits == 32 || dt.bits == 64;
    case ARRAYPORT_DTYPE_BFLOAT: return dt.bits == 16;
    case ARRAYPORT_DTYPE_COMPLEX: return dt.bits == 64 || dt.bits == 128;
  }
  return false;
}

/// The inverse of dtype::name(): "bool", "int8", ..., "complex128"; anything else is a type_error.
inline dtype parse_dtype_name(std::string_view name) {
  for (const dtype& candidate : detail::supported_dtypes)
    if (candidate.name() == name) return candidate;
  throw type_error("unsupported dtype name '" + std::string(name) + "': expected one of " +
                   detail::supported_dtype_names);
}

// ---------------------------------------------------------------------------------------------
// C++ type -> dtype

/// Specialise with `static constexpr dtype value` to give a C++ type a dtype. Integer types are
/// specialised per fundamental type (not per <cstdint> alias) so that long and long long, which
/// are both 64-bit on LP64 while int64_t names only one of them, both map.
template <class T>
struct dtype_traits;

namespace detail {
template <class T>
struct integer_dtype_traits {
  static constexpr dtype value{
      std::is_signed_v<T> ? std::uint8_t(ARRAYPORT_DTYPE_INT) : std::uint8_t(ARRAYPORT_DTYPE_UINT),
      std::uint8_t(sizeof(T) * 8)};
};
}  // namespace detail

// char is int8 or uint8 according to the platform's char signedness (std::is_signed<char>).
template <>
struct dtype_traits<char> : detail::integer_dtype_traits<char> {};
template <>
struct dtype_traits<signed char> : detail::integer_dtype_traits<signed char> {};
template <>
struct dtype_traits<unsigned char> : detail::integer_dtype_traits<unsigned char> {};
template <>
struct dtype_traits<short> : detail::integer_dtype_traits<short> {};
template <>
struct dtype_traits<unsigned short> : detail::integer_dtype_traits<unsigned short> {};
template <>
struct dtype_traits<int> : detail::integer_dtype_traits<int> {};
template <>
struct dtype_traits<unsigned int> : detail::integer_dtype_traits<unsigned int> {};
template <>
struct dtype_traits<long> : detail::integer_dtype_traits<long> {};
template <>
struct dtype_traits<unsigned long> : detail::integer_dtype_traits<unsigned long> {};
template <>
struct dtype_traits<long long> : detail::integer_dtype_traits<long long> {};
template <>
struct dtype_traits<unsigned long long> : detail::integer_dtype_traits<unsigned long long> {};

// bool maps to an 8-bit dtype, so it must occupy one byte (true on every supported ABI).
static_assert(sizeof(bool) == 1, "arrayport requires a 1-byte bool");
template <>
struct dtype_traits<bool> {
  static constexpr dtype value = dtypes::bool_;
};
template <>
struct dtype_traits<float> {
  static constexpr dtype value = dtypes::float32;
};
template <>
struct dtype_traits<double> {
  static constexpr dtype value = dtypes::float64;
};
template <>
struct dtype_traits<float16_t> {
  static constexpr dtype value = dtypes::float16;
};
template <>
struct dtype_traits<bfloat16_t> {
  static constexpr dtype value = dtypes::bfloat16;
};
// std::complex<T> is guaranteed to be laid out as T[2] (real, imag), matching NumPy and DLPack.
template <>
struct dtype_traits<std::complex<float>> {
  static constexpr dtype value = dtypes::complex64;
};
template <>
struct dtype_traits<std::complex<double>> {
  static constexpr dtype value = dtypes::complex128;
};

#if defined(__CUDACC__)
static_assert(sizeof(__half) == 2 && sizeof(__nv_bfloat16) == 2, "CUDA 16-bit float storage");
template <>
struct dtype_traits<__half> {
  static constexpr dtype value = dtypes::float16;
};
template <>
struct dtype_traits<__nv_bfloat16> {
  static constexpr dtype value = dtypes::bfloat16;
};
#endif

namespace detail {
template <class T, class = void>
struct has_dtype_traits : std::false_type {};
template <class T>
struct has_dtype_traits<T, std::void_t<decltype(dtype_traits<T>::value)>> : std::true_type {};

template <class T>
constexpr dtype dtype_of_checked() noexcept {
  static_assert(has_dtype_traits<T>::value,
                "arrayport::dtype_of<T>: T has no arrayport dtype. Supported: bool, char and the "
                "signed/unsigned integers of 1, 2, 4 or 8 bytes, float, double, "
                "arrayport::float16_t, arrayport::bfloat16_t, std::complex<float>, "
                "std::complex<double> (and __half, __nv_bfloat16 under nvcc). To add a type, "
                "specialise arrayport::dtype_traits<T> with a static constexpr dtype member "
                "named value.");
  // Only the static_assert above fires for an unsupported T, not a cascade from ::value.
  if constexpr (has_dtype_traits<T>::value)
    return dtype_traits<T>::value;
  else
    return dtype{};
}
}  // namespace detail

/// Whether dtype_of<T> is defined (cv-qualifiers ignored); for SFINAE and if constexpr.
template <class T>
inline constexpr bool has_dtype = detail::has_dtype_traits<std::remove_cv_t<T>>::value;

/// The dtype of C++ type T, cv-qualifiers ignored: dtype_of<const float> == dtypes::float32.
template <class T>
inline constexpr dtype dtype_of = detail::dtype_of_checked<std::remove_cv_t<T>>();

}  // namespace arrayport
