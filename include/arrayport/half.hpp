// 16-bit float storage: float16_t (IEEE binary16) and bfloat16_t, with their conversions to and
// from float, bit-identical on host and device. dtype.hpp maps them to dtypes.
#pragma once

#include <arrayport/config.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

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

}  // namespace arrayport
