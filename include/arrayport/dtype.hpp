// Element types: dtype, the C++ type -> dtype mapping, and the NumPy and PEP 3118 spellings.
#pragma once

#include <arrayport/c/view.h>
#include <arrayport/config.hpp>
#include <arrayport/error.hpp>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

// Every multi-byte spelling below ('<' typestrs, '=' and '@' buffer formats) assumes the host is
// little-endian; MSVC defines no __BYTE_ORDER__ but targets only little-endian platforms.
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "arrayport targets little-endian hosts only");
#endif

namespace arrayport {

namespace detail {

// Bit casts usable in host and device code: the CUDA intrinsics in the device pass, memcpy (which
// compilers fold to a register move) on the host. Both are well-defined, unlike union punning.
ARRAYPORT_HOST_DEVICE inline std::uint32_t float_to_bits(float value) noexcept {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}

ARRAYPORT_HOST_DEVICE inline float bits_to_float(std::uint32_t bits) noexcept {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

// Shifts `magnitude` right by `shift` (1..31) rounding to nearest, ties to even.
ARRAYPORT_HOST_DEVICE inline std::uint32_t shift_right_rne(std::uint32_t magnitude,
                                                          unsigned shift) noexcept {
  const std::uint32_t kept = magnitude >> shift;
  const std::uint32_t rest = magnitude & ((std::uint32_t(1) << shift) - 1u);
  const std::uint32_t half = std::uint32_t(1) << (shift - 1u);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

// IEEE binary32 -> binary16, round to nearest even. Written out rather than calling
// __float2half_rn so that host and device give bit-identical results without CUDA.
ARRAYPORT_HOST_DEVICE inline std::uint16_t float_to_half_bits(float value) noexcept {
  const std::uint32_t x = float_to_bits(value);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t magnitude = x & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u)  // NaN: keep the sign and top payload bits, force quiet
    return static_cast<std::uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));
  if (magnitude >= 0x477FF000u)  // >= 65520 (65504 + half an ulp, a tie that rounds to even = inf)
    return static_cast<std::uint16_t>(sign | 0x7C00u);
  if (magnitude >= 0x38800000u)  // >= 2^-14: normal half; rebias 127 -> 15, carry may bump exponent
    return static_cast<std::uint16_t>(sign | shift_right_rne(magnitude - 0x38000000u, 13));
  const std::uint32_t exponent = magnitude >> 23;
  if (exponent < 102)  // < 2^-25: below half of the smallest subnormal (float subnormals too)
    return static_cast<std::uint16_t>(sign);
  // Subnormal half: value * 2^24 = significand * 2^(exponent - 126); a carry into 0x400 yields
  // the smallest normal, which is the right encoding.
  const std::uint32_t significand = (magnitude & 0x7FFFFFu) | 0x800000u;
  return static_cast<std::uint16_t>(sign | shift_right_rne(significand, 126u - exponent));
}

ARRAYPORT_HOST_DEVICE inline float half_bits_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  std::uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1Fu)  // inf or NaN, payload kept
    return bits_to_float(sign | 0x7F800000u | (mantissa << 13));
  if (exponent != 0) return bits_to_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return bits_to_float(sign);
  std::uint32_t float_exponent = 113;  // 2^-14, the exponent of the smallest normal half
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --float_exponent;
  }
  return bits_to_float(sign | (float_exponent << 23) | ((mantissa & 0x3FFu) << 13));
}

// binary32 -> bfloat16, round to nearest even. NaN is handled first: rounding a NaN whose payload
// sits only in the low 16 bits would otherwise truncate or carry it into infinity.
ARRAYPORT_HOST_DEVICE inline std::uint16_t float_to_bfloat16_bits(float value) noexcept {
  const std::uint32_t x = float_to_bits(value);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);
  return static_cast<std::uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace detail

/// IEEE 754 binary16 storage. Only conversions, no arithmetic: it describes element memory shared
/// with NumPy's float16 and CUDA's __half. `float16_t{}` is +0; `float16_t h;` is uninitialised.
struct float16_t {
  std::uint16_t bits;

  float16_t() = default;
  /// Rounds to nearest even; overflow gives +-inf, NaN stays NaN (quieted).
  ARRAYPORT_HOST_DEVICE explicit float16_t(float value) noexcept
      : bits(detail::float_to_half_bits(value)) {}
  /// Exact.
  ARRAYPORT_HOST_DEVICE explicit operator float() const noexcept {
    return detail::half_bits_to_float(bits);
  }
  ARRAYPORT_HOST_DEVICE static constexpr float16_t from_bits(std::uint16_t raw) noexcept {
    float16_t result{};
    result.bits = raw;
    return result;
  }
};

/// bfloat16 storage (the top half of a binary32). Only conversions, no arithmetic: it describes
/// element memory shared with ml_dtypes' bfloat16, torch.bfloat16 and CUDA's __nv_bfloat16.
struct bfloat16_t {
  std::uint16_t bits;

  bfloat16_t() = default;
  /// Rounds to nearest even; overflow gives +-inf, NaN stays NaN (quieted).
  ARRAYPORT_HOST_DEVICE explicit bfloat16_t(float value) noexcept
      : bits(detail::float_to_bfloat16_bits(value)) {}
  /// Exact.
  ARRAYPORT_HOST_DEVICE explicit operator float() const noexcept {
    return detail::bits_to_float(std::uint32_t(bits) << 16);
  }
  ARRAYPORT_HOST_DEVICE static constexpr bfloat16_t from_bits(std::uint16_t raw) noexcept {
    bfloat16_t result{};
    result.bits = raw;
    return result;
  }
};

// They alias NumPy / CUDA element memory, so they must be exactly two plain bytes.
static_assert(sizeof(float16_t) == 2 && sizeof(bfloat16_t) == 2, "16-bit storage types");
static_assert(std::is_trivially_copyable_v<float16_t> && std::is_standard_layout_v<float16_t>,
              "float16_t must be a plain 2-byte value");
static_assert(std::is_trivially_copyable_v<bfloat16_t> && std::is_standard_layout_v<bfloat16_t>,
              "bfloat16_t must be a plain 2-byte value");

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
    dtypes::bool_,   dtypes::int8,     dtypes::int16,    dtypes::int32,    dtypes::int64,
    dtypes::uint8,   dtypes::uint16,   dtypes::uint32,   dtypes::uint64,   dtypes::float16,
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
template <> struct dtype_traits<char> : detail::integer_dtype_traits<char> {};
template <> struct dtype_traits<signed char> : detail::integer_dtype_traits<signed char> {};
template <> struct dtype_traits<unsigned char> : detail::integer_dtype_traits<unsigned char> {};
template <> struct dtype_traits<short> : detail::integer_dtype_traits<short> {};
template <> struct dtype_traits<unsigned short> : detail::integer_dtype_traits<unsigned short> {};
template <> struct dtype_traits<int> : detail::integer_dtype_traits<int> {};
template <> struct dtype_traits<unsigned int> : detail::integer_dtype_traits<unsigned int> {};
template <> struct dtype_traits<long> : detail::integer_dtype_traits<long> {};
template <> struct dtype_traits<unsigned long> : detail::integer_dtype_traits<unsigned long> {};
template <> struct dtype_traits<long long> : detail::integer_dtype_traits<long long> {};
template <>
struct dtype_traits<unsigned long long> : detail::integer_dtype_traits<unsigned long long> {};

// bool maps to an 8-bit dtype, so it must occupy one byte (true on every supported ABI).
static_assert(sizeof(bool) == 1, "arrayport requires a 1-byte bool");
template <> struct dtype_traits<bool> { static constexpr dtype value = dtypes::bool_; };
template <> struct dtype_traits<float> { static constexpr dtype value = dtypes::float32; };
template <> struct dtype_traits<double> { static constexpr dtype value = dtypes::float64; };
template <> struct dtype_traits<float16_t> { static constexpr dtype value = dtypes::float16; };
template <> struct dtype_traits<bfloat16_t> { static constexpr dtype value = dtypes::bfloat16; };
// std::complex<T> is guaranteed to be laid out as T[2] (real, imag), matching NumPy and DLPack.
template <> struct dtype_traits<std::complex<float>> {
  static constexpr dtype value = dtypes::complex64;
};
template <> struct dtype_traits<std::complex<double>> {
  static constexpr dtype value = dtypes::complex128;
};

#if defined(__CUDACC__)
static_assert(sizeof(__half) == 2 && sizeof(__nv_bfloat16) == 2, "CUDA 16-bit float storage");
template <> struct dtype_traits<__half> { static constexpr dtype value = dtypes::float16; };
template <> struct dtype_traits<__nv_bfloat16> { static constexpr dtype value = dtypes::bfloat16; };
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

// ---------------------------------------------------------------------------------------------
// NumPy array-interface typestr (__array_interface__ / __cuda_array_interface__ "typestr")

namespace detail {

// bfloat16 has no NumPy kind: ml_dtypes and the CUDA array interface spell it "<V2" (two opaque
// bytes). The spelling cannot be parsed back, since "<V2" says nothing about the contents.
inline const char* typestr_or_null(dtype dt) noexcept {
  if (dt == dtypes::bool_) return "|b1";
  if (dt == dtypes::int8) return "|i1";
  if (dt == dtypes::int16) return "<i2";
  if (dt == dtypes::int32) return "<i4";
  if (dt == dtypes::int64) return "<i8";
  if (dt == dtypes::uint8) return "|u1";
  if (dt == dtypes::uint16) return "<u2";
  if (dt == dtypes::uint32) return "<u4";
  if (dt == dtypes::uint64) return "<u8";
  if (dt == dtypes::float16) return "<f2";
  if (dt == dtypes::bfloat16) return "<V2";
  if (dt == dtypes::float32) return "<f4";
  if (dt == dtypes::float64) return "<f8";
  if (dt == dtypes::complex64) return "<c8";
  if (dt == dtypes::complex128) return "<c16";
  return nullptr;
}

inline constexpr const char* accepted_typestrs =
    "'|b1', '|i1', '<i2', '<i4', '<i8', '|u1', '<u2', '<u4', '<u8', '<f2', '<f4', '<f8', '<c8', "
    "'<c16' (byte order '<', '=' or '|')";

}  // namespace detail

/// Parses a NumPy typestr: byte order '<', '=' or '|' ('>' only for 1-byte types), then kind
/// b/i/u/f/c and the itemsize in bytes. Unsupported kinds or sizes (including "<V2") are a
/// type_error; big-endian multi-byte data is a value_error.
inline dtype parse_typestr(std::string_view typestr) {
  if (typestr.size() >= 3) {
    const char order = typestr[0];
    const std::string_view kind_and_size = typestr.substr(1);
    if (order == '<' || order == '>' || order == '=' || order == '|') {
      for (const dtype& candidate : detail::supported_dtypes) {
        if (candidate == dtypes::bfloat16) continue;
        if (std::string_view(detail::typestr_or_null(candidate)).substr(1) != kind_and_size)
          continue;
        if (order == '>' && candidate.itemsize() != 1)
          throw value_error("big-endian typestr '" + std::string(typestr) +
                            "' is not supported: arrayport targets little-endian hosts; expected "
                            "byte order '<', '=' or '|' (byte-swap the array first, e.g. "
                            "a.astype(a.dtype.newbyteorder('<')))");
        return candidate;
      }
    }
  }
  throw type_error("unsupported typestr '" + std::string(typestr) + "': expected one of " +
                   detail::accepted_typestrs);
}

/// The little-endian typestr of a supported dtype; bfloat16 gives "<V2" (see above). Anything
/// else is a type_error.
inline std::string to_typestr(dtype dt) {
  if (const char* typestr = detail::typestr_or_null(dt)) return typestr;
  throw type_error("dtype " + detail::describe(dt) + " has no typestr: expected one of " +
                   detail::supported_dtype_names);
}

// ---------------------------------------------------------------------------------------------
// PEP 3118 buffer-protocol format strings (Py_buffer.format)

namespace detail {

inline constexpr const char* accepted_buffer_formats =
    "'?', 'b', 'B', 'c', 'e', 'f', 'd', 'Zf', 'Zd', 'F', 'D', or an integer code 'h', 'H', 'i', "
    "'I', 'l', 'L', 'q', 'Q', 'n', 'N' with itemsize 1, 2, 4 or 8; optionally prefixed by '@', "
    "'=' or '<'";

inline std::string describe_buffer_format(std::string_view format, std::size_t itemsize) {
  return "buffer format '" + std::string(format) + "' (itemsize " + std::to_string(itemsize) +
         (format.empty() ? "; an empty format means 'B')" : ")");
}

inline dtype integer_of_itemsize(bool is_signed, std::size_t itemsize) noexcept {
  switch (itemsize) {
    case 1: return is_signed ? dtypes::int8 : dtypes::uint8;
    case 2: return is_signed ? dtypes::int16 : dtypes::uint16;
    case 4: return is_signed ? dtypes::int32 : dtypes::uint32;
    case 8: return is_signed ? dtypes::int64 : dtypes::uint64;
  }
  return dtype{};
}

}  // namespace detail

/// Parses a single-element PEP 3118 format together with Py_buffer.itemsize. An empty format is
/// "B" (CPython's contract for format == NULL). The integer codes are mapped by itemsize, not by
/// letter, because 'l'/'L' are 8 bytes on Linux and 4 on Windows and producers disagree on which
/// letter they emit; fixed-size codes must agree with itemsize. Unsupported formats (long double,
/// structs, repeat counts, pointers, ...) are a type_error; big-endian ('>' or '!') multi-byte
/// data is a value_error.
inline dtype parse_buffer_format(std::string_view format, std::size_t itemsize) {
  std::string_view code = format.empty() ? std::string_view("B") : format;
  char order = '@';
  if (code[0] == '@' || code[0] == '=' || code[0] == '<' || code[0] == '>' || code[0] == '!') {
    order = code[0];
    code.remove_prefix(1);
  }
  dtype result{};
  bool sized_by_itemsize = false;
  if (code.size() == 1) {
    switch (code[0]) {
      case '?': result = dtypes::bool_; break;
      case 'b': result = dtypes::int8; break;
      case 'B': case 'c': result = dtypes::uint8; break;
      case 'h': case 'i': case 'l': case 'q': case 'n':
      case 'H': case 'I': case 'L': case 'Q': case 'N':
        sized_by_itemsize = true;
        result = detail::integer_of_itemsize(code[0] >= 'a', itemsize);
        if (result == dtype{})
          throw type_error("unsupported " + detail::describe_buffer_format(format, itemsize) +
                           ": integer codes need itemsize 1, 2, 4 or 8");
        break;
      case 'e': result = dtypes::float16; break;
      case 'f': result = dtypes::float32; break;
      case 'd': result = dtypes::float64; break;
      case 'F': result = dtypes::complex64; break;  // NumPy's character codes, emitted by some
      case 'D': result = dtypes::complex128; break;
    }
  } else if (code == "Zf") {
    result = dtypes::complex64;
  } else if (code == "Zd") {
    result = dtypes::complex128;
  }
  if (result == dtype{})
    throw type_error("unsupported " + detail::describe_buffer_format(format, itemsize) +
                     ": expected one of " + detail::accepted_buffer_formats);
  if (!sized_by_itemsize && result.itemsize() != itemsize)
    throw type_error(detail::describe_buffer_format(format, itemsize) + " is inconsistent: '" +
                     std::string(code) + "' is " + std::string(result.name()) +
                     ", expected itemsize " + std::to_string(result.itemsize()));
  if ((order == '>' || order == '!') && itemsize != 1)
    throw value_error("big-endian " + detail::describe_buffer_format(format, itemsize) +
                      " is not supported: arrayport targets little-endian hosts; expected byte "
                      "order '@', '=' or '<'");
  return result;
}

/// Py_buffer.format may be NULL, which means "B".
inline dtype parse_buffer_format(const char* format, std::size_t itemsize) {
  return parse_buffer_format(format ? std::string_view(format) : std::string_view(), itemsize);
}

/// The native-order format for a supported dtype (static storage, fit for Py_buffer.format). 64-bit
/// integers use 'q'/'Q', whose size is 8 on every platform, unlike 'l'. bfloat16 and unsupported
/// dtypes are a buffer_error: PEP 3118 cannot describe them.
inline const char* to_buffer_format(dtype dt) {
  if (dt == dtypes::bool_) return "?";
  if (dt == dtypes::int8) return "b";
  if (dt == dtypes::int16) return "h";
  if (dt == dtypes::int32) return "i";
  if (dt == dtypes::int64) return "q";
  if (dt == dtypes::uint8) return "B";
  if (dt == dtypes::uint16) return "H";
  if (dt == dtypes::uint32) return "I";
  if (dt == dtypes::uint64) return "Q";
  if (dt == dtypes::float16) return "e";
  if (dt == dtypes::float32) return "f";
  if (dt == dtypes::float64) return "d";
  if (dt == dtypes::complex64) return "Zf";
  if (dt == dtypes::complex128) return "Zd";
  if (dt == dtypes::bfloat16)
    throw buffer_error("bfloat16 has no buffer-protocol format: PEP 3118 defines none; export it "
                       "through DLPack or __cuda_array_interface__ instead");
  throw buffer_error("dtype " + detail::describe(dt) +
                     " has no buffer-protocol format: expected one of " +
                     detail::supported_dtype_names + " except 'bfloat16'");
}

}  // namespace arrayport
