#include "ops/cpu/vector_powf.hpp"

#include "ops/functors.hpp"

#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <utility>

namespace arrayport::ops::cpu {

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 intrinsics pass a self-initialised _mm512_undefined_*() through their masked
// builtins: a false "may be used uninitialized" at every inlined call (fixed in GCC 13).
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
namespace {

// x^y = 2^(y log2 x), in double: its 53 bits leave the float result within 0.55 ulp of the exact
// power (NumPy's SVML and glibc's powf are within one). Every constant is worked out below, in
// long double, from what it stands for.
//
// log2 x = k + log2 c + log2(1 + r): z = x / 2^k in [0.703, 1.406), c the middle of z's
// sixteenth of that range (1 for the one around 1, so that logarithms near 0 keep their relative
// precision) and r = z / c - 1, |r| <= 1/32; log2(1 + r) = r q(r), q of degree 5 (relative error
// 2^-39). 2^t = 2^(n / 16) 2^f, n = round(16 t), |f| <= 1/32; 2^f = 1 + f p(f), p of degree 2
// (relative error 2^-28.7, 0.03 of a float's ulp).
constexpr std::uint32_t log_base = 0x3f340000;  // 0.703125: 1.0 lies mid-entry 9, at 9.5
constexpr int log_terms = 6, exp_terms = 3;

struct constants {
  double inv_c[16], log_c[16];  // 1 / c, and -log2 of that double (no error from its rounding)
  double exp2[16];              // 2^(j / 16)
  double log_q[log_terms];      // q(r) ~ log2(1 + r) / r
  double exp_p[exp_terms];      // p(f) ~ (2^f - 1) / f
};

// The coefficients of the polynomial of degree Terms - 1 through f at the Chebyshev nodes of
// [lo, hi] (within a few times the best polynomial's error), solved in long double.
template <int Terms, class F>
void chebyshev_fit(F f, long double lo, long double hi, double* out) {
  const long double pi = std::acos(-1.0L), h = (hi - lo) / 2;
  long double m[Terms][Terms + 1];  // rows of the scaled Vandermonde system [(r / h)^k | f(r)]
  for (int j = 0; j < Terms; ++j) {
    const long double r = lo + h + h * std::cos(pi * (j + 0.5L) / Terms);
    long double v = 1;
    for (int k = 0; k < Terms; ++k, v *= r / h) m[j][k] = v;
    m[j][Terms] = f(r);
  }
  for (int k = 0; k < Terms; ++k) {  // Gauss-Jordan with partial pivoting
    int p = k;
    for (int j = k + 1; j < Terms; ++j)
      if (std::fabs(m[j][k]) > std::fabs(m[p][k])) p = j;
    for (int l = 0; l <= Terms; ++l) std::swap(m[k][l], m[p][l]);
    for (int j = 0; j < Terms; ++j) {
      if (j == k) continue;
      const long double q = m[j][k] / m[k][k];
      for (int l = k; l <= Terms; ++l) m[j][l] -= q * m[k][l];
    }
  }
  long double scale = 1;
  for (int k = 0; k < Terms; ++k, scale *= h)
    out[k] = static_cast<double>(m[k][Terms] / m[k][k] / scale);
}

const constants& table() {
  static const constants t = [] {
    constants s{};
    const long double ln2 = std::log(2.0L);
    long double r_lo = 0, r_hi = 0;
    for (std::uint32_t i = 0; i < 16; ++i) {
      const std::uint32_t bits[2] = {log_base + (i << 19), log_base + ((i + 1) << 19)};
      float lo, hi;
      std::memcpy(&lo, &bits[0], 4);
      std::memcpy(&hi, &bits[1], 4);
      const long double c =
          lo <= 1.0f && 1.0f < hi ? 1.0L : (static_cast<long double>(lo) + hi) / 2;
      s.inv_c[i] = static_cast<double>(1 / c);
      s.log_c[i] = static_cast<double>(-std::log2(static_cast<long double>(s.inv_c[i])));
      r_lo = std::fmin(r_lo, lo * static_cast<long double>(s.inv_c[i]) - 1);
      r_hi = std::fmax(r_hi, hi * static_cast<long double>(s.inv_c[i]) - 1);
    }
    for (int j = 0; j < 16; ++j) s.exp2[j] = static_cast<double>(std::exp2(j / 16.0L));
    chebyshev_fit<log_terms>([&](long double r) { return std::log1p(r) / (r * ln2); }, r_lo, r_hi,
                             s.log_q);
    chebyshev_fit<exp_terms>([&](long double f) { return std::expm1(f * ln2) / f; }, -1.0L / 32,
                             1.0L / 32, s.exp_p);
    return s;
  }();
  return t;
}

#define ARRAYPORT_AVX512 __attribute__((target("avx512f,avx512dq,avx2,fma")))

// The eight powers z^y 2^(k y), from doubles z (in the table's range), k and y; `index` selects
// z's table entries in its lanes' low four bits.
ARRAYPORT_AVX512 __attribute__((always_inline)) inline __m256 pow8(__m512d z, __m512d k,
                                                                   __m512i index, __m512d y,
                                                                   const constants& c) {
#define ARRAYPORT_AT(v, i) _mm512_set1_pd(c.v[i])
  const __m512d inv_c =
      _mm512_permutex2var_pd(_mm512_loadu_pd(c.inv_c), index, _mm512_loadu_pd(c.inv_c + 8));
  const __m512d log_c =
      _mm512_permutex2var_pd(_mm512_loadu_pd(c.log_c), index, _mm512_loadu_pd(c.log_c + 8));
  const __m512d r = _mm512_fmsub_pd(z, inv_c, _mm512_set1_pd(1.0));
  const __m512d r2 = _mm512_mul_pd(r, r);
  const __m512d q01 = _mm512_fmadd_pd(r, ARRAYPORT_AT(log_q, 1), ARRAYPORT_AT(log_q, 0));
  const __m512d q23 = _mm512_fmadd_pd(r, ARRAYPORT_AT(log_q, 3), ARRAYPORT_AT(log_q, 2));
  const __m512d q45 = _mm512_fmadd_pd(r, ARRAYPORT_AT(log_q, 5), ARRAYPORT_AT(log_q, 4));
  const __m512d q = _mm512_fmadd_pd(r2, _mm512_fmadd_pd(r2, q45, q23), q01);
  const __m512d log2x = _mm512_fmadd_pd(r, q, _mm512_add_pd(k, log_c));

  // t + shift rounds t to sixteenths, n / 16 (1.5 2^52 / 16: n in the low bits; |t| < 2^47 as
  // y's magnitude is at most 2^39), f = t - n / 16; scalef multiplies by 2^floor(n / 16).
  const __m512d t = _mm512_mul_pd(y, log2x);
  const __m512d shift = _mm512_set1_pd(0x1.8p48);
  const __m512d kd = _mm512_add_pd(t, shift), n16 = _mm512_sub_pd(kd, shift);
  const __m512d f = _mm512_sub_pd(t, n16);
  const __m512d s = _mm512_permutex2var_pd(_mm512_loadu_pd(c.exp2), _mm512_castpd_si512(kd),
                                           _mm512_loadu_pd(c.exp2 + 8));
  const __m512d p =
      _mm512_fmadd_pd(f, _mm512_fmadd_pd(f, ARRAYPORT_AT(exp_p, 2), ARRAYPORT_AT(exp_p, 1)),
                      ARRAYPORT_AT(exp_p, 0));
  const __m512d e = _mm512_fmadd_pd(_mm512_mul_pd(f, s), p, s);
#undef ARRAYPORT_AT
  return _mm512_cvtpd_ps(_mm512_scalef_pd(e, n16));
}

// Half h (0: the low eight lanes, 1: the high eight) of a vector of sixteen.
ARRAYPORT_AVX512 __attribute__((always_inline)) inline __m256i half(__m512i v, int h) {
  return h ? _mm512_extracti64x4_epi64(v, 1) : _mm512_castsi512_si256(v);
}

}  // namespace

// Not instrumented by AddressSanitizer: with detect_stack_use_after_return, GCC 12 puts this
// frame in ASan's fake stack aligned to 32 bytes, where the aligned spills of its 64-byte vectors
// fault. Its loads are masked to the array's end and its stores end at out[n - 1].
ARRAYPORT_AVX512 __attribute__((no_sanitize_address)) void powf_avx512(const float* a,
                                                                       std::int64_t a_step,
                                                                       const float* b,
                                                                       std::int64_t b_step,
                                                                       float* out, std::int64_t n) {
  if (n <= 0) return;  // *a and *b are read below, which only an element allows
  const constants& c = table();
  const __m512 one = _mm512_set1_ps(1.0f);
  __m512 x = _mm512_set1_ps(*a), y = _mm512_set1_ps(*b);
  for (std::int64_t i = 0; i < n; i += 16) {
    const int m = n - i < 16 ? int(n - i) : 16;
    const __mmask16 live = __mmask16((1u << m) - 1);
    if (a_step) x = _mm512_mask_loadu_ps(one, live, a + i);  // 1 ** 1 in the dead lanes
    if (b_step) y = _mm512_mask_loadu_ps(one, live, b + i);
    const __m512i ix = _mm512_castps_si512(x), iy = _mm512_castps_si512(y);
    // y with its magnitude at most 2^39 (range: the smaller magnitude, y's sign) gives the same
    // power: x^y is then 1 (x = 1) or past the float range (|log2 x| >= 2^-22.5 otherwise).
    const __m512i y39 = _mm512_castps_si512(_mm512_range_ps(y, _mm512_set1_ps(0x1p39f), 0b0010));
    // x = z 2^k: k and z's entry from the bits above z's, z from the rest.
    const __m512i above = _mm512_sub_epi32(ix, _mm512_set1_epi32(int(log_base)));
    const __m512i iz = _mm512_sub_epi32(ix, _mm512_and_si512(above, _mm512_set1_epi32(-(1 << 23))));
    const __m512i k = _mm512_srai_epi32(above, 23), index = _mm512_srli_epi32(above, 19);
    float r[16];
    float* dst = m == 16 ? out + i : r;
    for (int h = 0; h < 2; ++h)
      _mm256_storeu_ps(dst + 8 * h,
                       pow8(_mm512_cvtps_pd(_mm256_castsi256_ps(half(iz, h))),
                            _mm512_cvtepi32_pd(half(k, h)), _mm512_cvtepi32_epi64(half(index, h)),
                            _mm512_cvtps_pd(_mm256_castsi256_ps(half(y39, h))), c));
    // Lanes whose x is not a positive normal float or whose y is not finite take the C
    // library's powf (its special cases; their results are mostly exact).
    const __mmask16 normal_x = _mm512_cmplt_epu32_mask(
        _mm512_sub_epi32(ix, _mm512_set1_epi32(1 << 23)), _mm512_set1_epi32(0x7f000000));
    const __mmask16 finite_y = _mm512_cmplt_epu32_mask(
        _mm512_and_si512(iy, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    if (unsigned other = live & ~(normal_x & finite_y)) {
      float xs[16], ys[16];  // from the registers: `out` may be `a` or `b`, now overwritten
      _mm512_storeu_ps(xs, x);
      _mm512_storeu_ps(ys, y);
      for (; other; other &= other - 1) {
        const int l = __builtin_ctz(other);
        dst[l] = power_fn{}(xs[l], ys[l]);
      }
    }
    if (m < 16) std::memcpy(out + i, r, sizeof(float) * std::size_t(m));
  }
}
#undef ARRAYPORT_AVX512
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

}  // namespace arrayport::ops::cpu
