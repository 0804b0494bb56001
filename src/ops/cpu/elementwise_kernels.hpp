// CPU element-wise kernels: a flat loop the compiler vectorises when every operand is contiguous,
// and a strided N-d walk otherwise; both chunked over the thread pool. Included by the two
// translation units that instantiate them (elementwise.cpp, elementwise_more.cpp).
#pragma once

#include "ops/kernels.hpp"
#include "ops/cpu/convert_run.hpp"
#include "ops/cpu/cpu_features.hpp"
#include "ops/cpu/parallel.hpp"
#include "ops/cpu/vector_math.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <utility>

#ifdef ARRAYPORT_OPS_AVX2
#include <immintrin.h>
#endif

namespace arrayport::ops::cpu {
namespace {

// Below this many elements a call stays on the calling thread: waking the workers costs more
// (docs/benchmarks.md, "Tuning constants of arrayport.ops"). The transcendental functions and
// power cost 0.3-20 ns an element instead of a fraction of one, so their calls split sooner.
template <op_id Op>
constexpr std::int64_t parallel_grain() noexcept {
  const bool costly = Op == op_id::exp || Op == op_id::log || Op == op_id::sin ||
                      Op == op_id::cos || Op == op_id::tanh || Op == op_id::power;
  return std::int64_t(1) << (costly ? 13 : 15);
}

template <class A>
struct array_get {
  const A* p;
  compute_t<A> operator()(std::int64_t i) const { return load_direct(p + i); }
};
template <class A>
struct scalar_get {
  compute_t<A> v;
  compute_t<A> operator()(std::int64_t) const { return v; }
};

#ifdef ARRAYPORT_OPS_AVX2
// x86-64: the flat loop is vectorised with AVX2 (no FMA: products round as NumPy's), as the
// baseline's SSE2 narrows compares to bools and tests floats 2-4x slower than NumPy's AVX2
// loops. A CPU without AVX2 (before 2013, and some low-end ones since) takes the strided loop:
// a second, SSE2 copy of every flat loop took 14% of these files' compile time.
// Every loop takes its functor and getters by value: through a reference, a store to out (bool,
// or a may_alias vector) could change the array pointers, which were then reloaded every step
// (docs/benchmarks.md, "Operands' getters by value").
template <class O, class F, class... G>
__attribute__((target("avx2"))) void flat_loop(O* __restrict__ out, std::int64_t begin,
                                               std::int64_t end, F f, G... get) {
  for (std::int64_t i = begin; i < end; ++i) out[i] = convert<O>(f(get(i)...));
}
inline bool has_flat_loops() noexcept { return has_avx2(); }
#else
template <class O, class F, class... G>
void flat_loop(O* __restrict__ out, std::int64_t begin, std::int64_t end, F f, G... get) {
  for (std::int64_t i = begin; i < end; ++i) out[i] = convert<O>(f(get(i)...));
}
constexpr bool has_flat_loops() noexcept { return true; }
#endif

#ifdef ARRAYPORT_OPS_AVX2
// Float comparisons and tests (bool results), 32 elements a step: the vector masks are narrowed
// to bools by packs. GCC's own narrowing of 64-bit masks ran float64 isnan at 0.6-0.8x NumPy.
template <op_id Op, class S, class O>
inline constexpr bool has_mask_loop =
    (std::is_same_v<S, float> || std::is_same_v<S, double>)&&std::is_same_v<O, bool> &&
    (Op == op_id::equal || Op == op_id::not_equal || Op == op_id::less || Op == op_id::less_equal ||
     Op == op_id::isnan || Op == op_id::isinf || Op == op_id::isfinite);

// One vector of an operand's elements from i, or its scalar in every lane: x - 0.0 is x for every
// x, -0.0 included (V{} + x makes it 0.0), and is a broadcast, which a loop over the lanes was not
// (clip of 2^16 floats 19 -> 45 us). For AVX2 (vector_at) and AVX-512 (vector512_at), one text.
#define ARRAYPORT_VECTOR_AT(Target, Name)                                              \
  template <class V, class A>                                                          \
  __attribute__((target(Target), always_inline)) inline V Name(const array_get<A>& g,  \
                                                               std::int64_t i) {       \
    V v;                                                                               \
    std::memcpy(&v, g.p + i, sizeof v);                                                \
    return v;                                                                          \
  }                                                                                    \
  template <class V, class A>                                                          \
  __attribute__((target(Target), always_inline)) inline V Name(const scalar_get<A>& g, \
                                                               std::int64_t) {         \
    return g.v - V{};                                                                  \
  }
ARRAYPORT_VECTOR_AT("avx2", vector_at)
ARRAYPORT_VECTOR_AT("avx512f,avx512bw", vector512_at)
#undef ARRAYPORT_VECTOR_AT

// The op's mask (all ones where true) of one vector of each operand, as 32-byte integers.
template <op_id Op, class V>
__attribute__((target("avx2"), always_inline)) inline __m256i mask_of(V a, V b = V{}) {
  if constexpr (Op == op_id::equal) return reinterpret_cast<__m256i>(a == b);
  if constexpr (Op == op_id::not_equal) return reinterpret_cast<__m256i>(a != b);
  if constexpr (Op == op_id::less) return reinterpret_cast<__m256i>(a < b);
  if constexpr (Op == op_id::less_equal) return reinterpret_cast<__m256i>(a <= b);
  if constexpr (Op == op_id::isnan) return reinterpret_cast<__m256i>(a != a);
  // isinf and isfinite on the bits: the exponent all ones (and, for inf, the mantissa zero).
  using U = std::conditional_t<sizeof(a[0]) == 4, std::uint32_t, std::uint64_t>;
  typedef U I __attribute__((vector_size(32)));
  constexpr U sign = U(1) << (8 * sizeof(U) - 1);
  constexpr U exponent = sizeof(U) == 4 ? U(0x7f800000u) : U(0x7ff0000000000000u);
  const I bits = reinterpret_cast<I>(a);
  if constexpr (Op == op_id::isfinite)
    return reinterpret_cast<__m256i>((bits & exponent) != exponent);
  if constexpr (Op == op_id::isinf) return reinterpret_cast<__m256i>((bits & ~sign) == exponent);
}

// Elements [begin, begin + 32k) of out; returns where the scalar loop takes over.
template <op_id Op, class S, class... G>
__attribute__((target("avx2"))) std::int64_t mask_loop_avx2(bool* out, std::int64_t begin,
                                                            std::int64_t end, G... get) {
  typedef S V __attribute__((vector_size(32)));
  constexpr int W = 32 / sizeof(S), K = 32 / W;  // lanes a vector, vectors a step
  const __m256i one = _mm256_set1_epi8(1);
  std::int64_t i = begin;
  for (; i + 32 <= end; i += 32) {
    __m256i m[K];
    for (int k = 0; k < K; ++k) m[k] = mask_of<Op, V>(vector_at<V>(get, i + W * k)...);
    __m256i r;
    if constexpr (K == 4) {  // floats: dword masks -> bytes, then the lanes' dwords in order
      r = _mm256_packs_epi16(_mm256_packs_epi32(m[0], m[1]), _mm256_packs_epi32(m[2], m[3]));
      r = _mm256_permutevar8x32_epi32(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    } else {  // doubles: qword masks -> bytes, then the lanes' byte pairs interleaved
      const __m256i lo =
          _mm256_packs_epi32(_mm256_packs_epi32(m[0], m[1]), _mm256_packs_epi32(m[2], m[3]));
      const __m256i hi =
          _mm256_packs_epi32(_mm256_packs_epi32(m[4], m[5]), _mm256_packs_epi32(m[6], m[7]));
      r = _mm256_permute4x64_epi64(_mm256_packs_epi16(lo, hi), 0xD8);
      r = _mm256_shuffle_epi8(
          r, _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15, 0, 1, 8, 9, 2,
                              3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_and_si256(r, one));
  }
  return i;
}
#endif

#ifdef ARRAYPORT_OPS_AVX2
// Float maximum, minimum and clip, two vectors a step: NumPy's NaN rules as vector selects. GCC's
// own vectorisation of the functors ran them at 0.5-0.65x NumPy at 2^16 elements.
template <op_id Op, class S, class O>
inline constexpr bool has_select_loop = (std::is_same_v<S, float> ||
                                         std::is_same_v<S, double>)&&std::is_same_v<O, S> &&
                                        (Op == op_id::maximum || Op == op_id::minimum ||
                                         Op == op_id::clip);

// The mask loop with AVX-512 (F and BW), 64 bytes a vector, where the CPU has it: NumPy's own
// loops are AVX-512 there, and at 2^16 elements (in L2) the wider loads and stores set the pace
// (float comparisons ran at 0.7-0.8x NumPy with AVX2). The select loop below has both widths.
//
// The op's lane mask (a bit a lane) of one vector of each operand: mask_of's tests.
template <op_id Op, class V>
__attribute__((target("avx512f,avx512bw"), always_inline)) inline std::uint64_t mask512_of(
    V a, V b = V{}) {
  constexpr bool f32 = sizeof(a[0]) == 4;
  if constexpr (Op == op_id::isinf || Op == op_id::isfinite) {
    using U = std::conditional_t<f32, std::uint32_t, std::uint64_t>;
    typedef U I __attribute__((vector_size(64)));
    constexpr U sign = U(1) << (8 * sizeof(U) - 1);
    constexpr U exponent = f32 ? U(0x7f800000u) : U(0x7ff0000000000000u);
    const I bits = reinterpret_cast<I>(a);
    const __m512i x =
        reinterpret_cast<__m512i>(Op == op_id::isinf ? bits & ~sign : bits & exponent);
    const __m512i e = reinterpret_cast<__m512i>(I{} + exponent);
    if constexpr (f32)
      return Op == op_id::isinf ? _mm512_cmpeq_epi32_mask(x, e) : _mm512_cmpneq_epi32_mask(x, e);
    else
      return Op == op_id::isinf ? _mm512_cmpeq_epi64_mask(x, e) : _mm512_cmpneq_epi64_mask(x, e);
  } else {
    constexpr int p = Op == op_id::equal        ? _CMP_EQ_OQ
                      : Op == op_id::not_equal  ? _CMP_NEQ_UQ
                      : Op == op_id::less       ? _CMP_LT_OQ
                      : Op == op_id::less_equal ? _CMP_LE_OQ
                                                : _CMP_UNORD_Q;  // isnan: a against itself
    if constexpr (Op == op_id::isnan) b = a;
    if constexpr (f32)
      return _mm512_cmp_ps_mask(reinterpret_cast<__m512>(a), reinterpret_cast<__m512>(b), p);
    else
      return _mm512_cmp_pd_mask(reinterpret_cast<__m512d>(a), reinterpret_cast<__m512d>(b), p);
  }
}

// mask_loop_avx2's elements, 64 a step: the vectors' masks joined into 64 bits, then a byte each.
template <op_id Op, class S, class... G>
__attribute__((target("avx512f,avx512bw"))) std::int64_t mask_loop_avx512(bool* out,
                                                                          std::int64_t begin,
                                                                          std::int64_t end,
                                                                          G... get) {
  typedef S V __attribute__((vector_size(64)));
  constexpr int W = 64 / sizeof(S);
  std::int64_t i = begin;
  for (; i + 64 <= end; i += 64) {
    std::uint64_t m = 0;
    for (int k = 0; k < 64 / W; ++k)
      m |= mask512_of<Op, V>(vector512_at<V>(get, i + W * k)...) << (W * k);
    _mm512_storeu_si512(out + i, _mm512_maskz_set1_epi8(m, 1));
  }
  return i;
}

// maximum_fn, minimum_fn and clip_fn of functors.hpp, lane by lane (a NaN in a, else one in b,
// else the larger or smaller of the two, a where they are equal), and the loop over elements
// [begin, begin + 2Wk) of out, which returns where the scalar loop takes over: one text for AVX2's
// 32-byte vectors and AVX-512's 64-byte ones.
#define ARRAYPORT_SELECT_LOOP(Target, Bytes, At)                                                \
  template <op_id Op, class V>                                                                  \
  __attribute__((target(Target), always_inline)) inline V select_##Bytes(V a, V b, V c = V{}) { \
    if constexpr (Op == op_id::clip) {                                                          \
      return select_##Bytes<op_id::minimum>(select_##Bytes<op_id::maximum>(a, b), c);           \
    } else {                                                                                    \
      V m = Op == op_id::maximum ? (b > a ? b : a) : (a > b ? b : a);                           \
      m = b != b ? b : m;                                                                       \
      return a != a ? a : m;                                                                    \
    }                                                                                           \
  }                                                                                             \
  template <op_id Op, class S, class... G>                                                      \
  __attribute__((target(Target)))                                                               \
  std::int64_t select_loop_##Bytes(S* out, std::int64_t begin, std::int64_t end, G... get) {    \
    typedef S V __attribute__((vector_size(Bytes)));                                            \
    constexpr int W = Bytes / sizeof(S);                                                        \
    std::int64_t i = begin;                                                                     \
    for (; i + 2 * W <= end; i += 2 * W) {                                                      \
      const V r0 = select_##Bytes<Op, V>(At<V>(get, i)...);                                     \
      const V r1 = select_##Bytes<Op, V>(At<V>(get, i + W)...);                                 \
      std::memcpy(out + i, &r0, sizeof r0);                                                     \
      std::memcpy(out + i + W, &r1, sizeof r1);                                                 \
    }                                                                                           \
    return i;                                                                                   \
  }
ARRAYPORT_SELECT_LOOP("avx2", 32, vector_at)
ARRAYPORT_SELECT_LOOP("avx512f,avx512bw", 64, vector512_at)
#undef ARRAYPORT_SELECT_LOOP
#endif

// Picks an array or scalar getter per operand (outside the loop, so each loop is branch-free).
// data[I]: operand I's contiguous elements of its argument's storage type, nullptr for a scalar.
// Only where has_flat_loops().
template <op_id Op, class S, int I, class O, class F, class... G>
void flat_select(const ew_call& c, const char* const* data, O* out, std::int64_t begin,
                 std::int64_t end, const F& f, const G&... get) {
  if constexpr (I == arity(Op)) {
#ifdef ARRAYPORT_OPS_AVX2
    if constexpr (has_mask_loop<Op, S, O>)
      begin = has_avx512() ? mask_loop_avx512<Op, S>(out, begin, end, get...)
                           : mask_loop_avx2<Op, S>(out, begin, end, get...);
    if constexpr (has_select_loop<Op, S, O>)
      begin = has_avx512() ? select_loop_64<Op, S>(out, begin, end, get...)
                           : select_loop_32<Op, S>(out, begin, end, get...);
#endif
    flat_loop(out, begin, end, f, get...);
  } else {
    using A = arg_storage_t<Op, I, S>;
    if (data[I])
      flat_select<Op, S, I + 1>(c, data, out, begin, end, f, get...,
                                array_get<A>{reinterpret_cast<const A*>(data[I])});
    else
      flat_select<Op, S, I + 1>(c, data, out, begin, end, f, get...,
                                scalar_get<A>{scalar_value<A>(c.in[I])});
  }
}

// Elements a piece where an operand is converted: a buffer of this many per such operand.
constexpr std::int64_t convert_piece = 512;

// Walks elements [begin, end) of the collapsed layout in C order: the innermost dimension as a
// tight loop, the outer ones as an odometer. An array operand not of the dtype its argument
// loads as is converted into a buffer a piece at a time (convert_run), so the loop itself always
// loads directly; where every piece is then contiguous, it is the flat loop's.
template <op_id Op, class S, class F, std::size_t... I>
void strided_chunk(const ew_call& c, const F& f, std::int64_t begin, std::int64_t end,
                   std::index_sequence<I...>) {
  using O = result_storage_t<Op, S>;
  constexpr int N = arity(Op);
  const auto& L = c.layout;
  const int nd = L.ndim;
  const char* base[N] = {
      (c.in[I].data ? c.in[I].data : reinterpret_cast<const char*>(c.in[I].scalar))...};
  constexpr type_id loads_as[N] = {type_id_of<arg_storage_t<Op, int(I), S>>...};
  constexpr std::int64_t item[N] = {std::int64_t(sizeof(arg_storage_t<Op, int(I), S>))...};
  const bool converts[N] = {(c.in[I].data && c.in[I].type != loads_as[I])...};
  const bool any_converts = (converts[I] || ...);
  // Contiguous after conversion: every array operand converted, or contiguous in the inner
  // dimension, and so the output (a fresh result, or out= in C order).
  const bool flat_pieces =
      L.strides[0][nd - 1] == std::int64_t(sizeof(O)) &&
      ((!c.in[I].data || converts[I] || L.strides[1 + I][nd - 1] == item[I]) && ...);
  alignas(32) unsigned char buffer[N][convert_piece * 16];  // 16: complex128's itemsize
  std::int64_t idx[ARRAYPORT_MAX_NDIM];
  std::int64_t rest = begin;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rest % L.shape[d];
    rest /= L.shape[d];
  }
  const std::int64_t inner_extent = L.shape[nd - 1];
  const std::int64_t so = L.strides[0][nd - 1];
  const std::int64_t si[N] = {L.strides[1 + I][nd - 1]...};
  std::int64_t i = begin;
  while (i < end) {
    std::int64_t off[N + 1] = {};
    for (int d = 0; d < nd; ++d)
      for (int k = 0; k <= N; ++k) off[k] += idx[d] * L.strides[k][d];
    const std::int64_t run = std::min(inner_extent - idx[nd - 1], end - i);
    for (std::int64_t piece = 0, n = 0; piece < run; piece += n) {
      n = any_converts ? std::min(convert_piece, run - piece) : run;
      char* o = c.out + off[0] + piece * so;
      const char* p[N] = {(base[I] + off[1 + I] + piece * si[I])...};
      std::int64_t sp[N] = {si[I]...};
      if (any_converts) {
        for (int k = 0; k < N; ++k) {
          if (!converts[k]) continue;
          convert_run(loads_as[k], buffer[k], p[k], si[k], n, c.in[k].type);
          p[k] = reinterpret_cast<const char*>(buffer[k]);
          sp[k] = item[k];
        }
        if (flat_pieces && has_flat_loops()) {
          const char* data[N] = {(c.in[I].data ? p[I] : nullptr)...};
          flat_select<Op, S, 0>(c, data, reinterpret_cast<O*>(o), 0, n, f);
          continue;
        }
      }
      const auto at = [&](std::int64_t j) {
        return convert<O>(f(load_direct(
            reinterpret_cast<const arg_storage_t<Op, int(I), S>*>(p[I] + j * sp[I]))...));
      };
      if (so == std::int64_t(sizeof(O))) {  // a contiguous output run (a fresh result): indexed
        O* out = reinterpret_cast<O*>(o);   // not restrict: out= may be an input, elementwise
        std::int64_t j = 0;
        for (; j + 4 <= n; j += 4) {  // unrolled: the strided loads do not vectorise
          const O r0 = at(j), r1 = at(j + 1), r2 = at(j + 2), r3 = at(j + 3);
          out[j] = r0;
          out[j + 1] = r1;
          out[j + 2] = r2;
          out[j + 3] = r3;
        }
        for (; j < n; ++j) out[j] = at(j);
      } else {
        for (std::int64_t j = 0; j < n; ++j) *reinterpret_cast<O*>(o + j * so) = at(j);
      }
    }
    i += run;
    idx[nd - 1] += run;
    for (int d = nd - 1; d > 0 && idx[d] == L.shape[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

struct identity_fn {
  template <class C>
  C operator()(C x) const {
    return x;
  }
};

// astype over contiguous memory (is_contiguous_conversion): false where it is not one such run.
template <class S>
bool convert_contiguous(const ew_call& c) {
  if (!has_flat_loops() || !is_contiguous_conversion(c, sizeof(S))) return false;
  S* out = reinterpret_cast<S*>(c.out);
  const auto loop = [&](auto tag) {
    using In = typename decltype(tag)::type;
    const In* p = reinterpret_cast<const In*>(c.in[0].data);
    parallel_for(c.size, parallel_grain<op_id::copy>(), [&](std::int64_t b, std::int64_t e) {
      // One rounding: what the strided path's load into S and store as S give.
      flat_loop(out, b, e, identity_fn{}, array_get<In>{p});
    });
    return true;
  };
  return visit_storage(c.in[0].type, loop, false);
}

// a / b without divide's zero_value: a loop GCC vectorises (with the select it reports control
// flow and divides one element at a time).
struct quotient_fn {
  template <class C>
  C operator()(C a, C b) const {
    return a / b;
  }
};

template <op_id Op, class S, class F>
void run_with(const ew_call& c, const F& f) {
  using O = result_storage_t<Op, S>;
  if (c.flat && has_flat_loops()) {
    O* out = reinterpret_cast<O*>(c.out);
    const char* data[arity(Op)];
    for (int k = 0; k < arity(Op); ++k) data[k] = c.in[k].data;
    parallel_for(c.size, parallel_grain<Op>(), [&](std::int64_t b, std::int64_t e) {
      flat_select<Op, S, 0>(c, data, out, b, e, f);
    });
  } else {
    if constexpr (Op == op_id::copy)
      if (convert_contiguous<S>(c)) return;
    parallel_for(c.size, parallel_grain<Op>(), [&](std::int64_t b, std::int64_t e) {
      strided_chunk<Op, S>(c, f, b, e, std::make_index_sequence<arity(Op)>{});
    });
  }
}

template <op_id Op, type_id T>
void run(const ew_call& c) {
  using S = storage_t<T>;
  if constexpr (has_vector_loop<S>(Op) && arity(Op) == 1) {
    const vector_map<S> map = c.flat && c.in[0].data ? vector_math<S>(Op) : nullptr;
    if (map) {
      const S* x = reinterpret_cast<const S*>(c.in[0].data);
      S* y = reinterpret_cast<S*>(c.out);
      parallel_for(c.size, parallel_grain<Op>(),
                   [&](std::int64_t b, std::int64_t e) { map(x + b, y + b, e - b); });
      return;
    }
  } else if constexpr (has_vector_loop<S>(Op)) {
    const vector_map2<S> map = c.flat ? vector_math2<S>(Op) : nullptr;
    if (map) {
      // A scalar operand (no data) is its converted value, repeated (a step of 0).
      const auto at = [&](int k) {
        const void* p = c.in[k].data ? static_cast<const void*>(c.in[k].data) : c.in[k].scalar;
        return static_cast<const S*>(p);
      };
      const std::int64_t as = c.in[0].data ? 1 : 0, bs = c.in[1].data ? 1 : 0;
      const S *a = at(0), *bv = at(1);
      S* y = reinterpret_cast<S*>(c.out);
      parallel_for(c.size, parallel_grain<Op>(), [&](std::int64_t b, std::int64_t e) {
        map(a + b * as, as, bv + b * bs, bs, y + b, e - b);
      });
      return;
    }
  }
  const auto f = make_functor<Op, S>(c.params);
  if constexpr (Op == op_id::divide)
    if (!f.has_zero_value) return run_with<Op, S>(c, quotient_fn{});
  run_with<Op, S>(c, f);
}

// The kernels of one translation unit (ew_unit): nullptr for the other unit's ops.
template <int Unit>
struct kernels {
  template <op_id Op, type_id T>
  static constexpr ew_fn entry() {
    if constexpr (ew_unit(Op) == Unit && supports(Op, T))
      return &run<Op, T>;
    else
      return nullptr;
  }
};

}  // namespace
}  // namespace arrayport::ops::cpu
