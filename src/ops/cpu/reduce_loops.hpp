// The CPU reductions' loops over contiguous memory: min/max with NaN tracked apart, sums and dot
// products pairwise in vector lanes, columns of them, counts of nonzero bytes, any/all,
// argmin/argmax, and the order-free integer reductions, in GCC/Clang vectors (SSE2 or NEON, AVX2
// where the CPU has it). Included by reduce.cpp alone.
#pragma once

#include "ops/reduce.hpp"
#include "ops/cpu/cpu_features.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace arrayport::ops::cpu {
namespace {

constexpr std::int64_t pairwise_block = 128;  // pairwise()'s leaf: NumPy's block of 128

// Max or min of n contiguous floats or doubles in vectors of `Bytes` (GCC/Clang vector
// extensions: 16 bytes is SSE2 on x86-64 and NEON on Arm; 32 bytes is AVX2, used where the CPU
// has it). The branchy NaN-propagating scalar rule does not vectorise, so NaN is tracked apart: a
// compare with NaN is false, the running extreme skips it, and any NaN makes the result NaN, as
// in NumPy.
template <class T, int Bytes>
struct vec;
template <>
struct vec<float, 16> {
  typedef float type __attribute__((vector_size(16)));
  typedef std::int32_t mask __attribute__((vector_size(16)));
};
template <>
struct vec<double, 16> {
  typedef double type __attribute__((vector_size(16)));
  typedef std::int64_t mask __attribute__((vector_size(16)));
};
template <>
struct vec<float, 32> {
  typedef float type __attribute__((vector_size(32)));
  typedef std::int32_t mask __attribute__((vector_size(32)));
};
template <>
struct vec<double, 32> {
  typedef double type __attribute__((vector_size(32)));
  typedef std::int64_t mask __attribute__((vector_size(32)));
};

template <bool Max, class T, int Bytes>
__attribute__((always_inline)) inline T extreme_vectors(const T* p, std::int64_t n) {
  using V = typename vec<T, Bytes>::type;
  using M = typename vec<T, Bytes>::mask;
  constexpr int W = Bytes / sizeof(T), U = 4;  // lanes a vector, vectors a step
  const T start = Max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  V m[U];
  M nan[U];
  for (int k = 0; k < U; ++k) {
    for (int j = 0; j < W; ++j) m[k][j] = start;
    nan[k] = M{};
  }
  std::int64_t i = 0;
  for (; i + W * U <= n; i += W * U) {
    for (int k = 0; k < U; ++k) {
      V v;
      std::memcpy(&v, p + i + W * k, sizeof v);
      if constexpr (Max)
        m[k] = v > m[k] ? v : m[k];
      else
        m[k] = v < m[k] ? v : m[k];
      nan[k] |= v != v;
    }
  }
  T acc = start;
  bool any_nan = false;
  for (int k = 0; k < U; ++k)
    for (int j = 0; j < W; ++j) {
      const T v = m[k][j];
      if (Max ? v > acc : v < acc) acc = v;
      any_nan |= nan[k][j] != 0;
    }
  for (; i < n; ++i) {
    const T v = p[i];
    if (Max ? v > acc : v < acc) acc = v;
    any_nan |= v != v;
  }
  return any_nan ? std::numeric_limits<T>::quiet_NaN() : acc;
}

#ifdef ARRAYPORT_OPS_AVX2
template <bool Max, class T>
__attribute__((target("avx2"))) T extreme_avx2(const T* p, std::int64_t n) {
  return extreme_vectors<Max, T, 32>(p, n);
}
#endif

template <bool Max, class T>
T extreme_contiguous(const T* p, std::int64_t n) {
#ifdef ARRAYPORT_OPS_AVX2
  if (has_avx2()) return extreme_avx2<Max>(p, n);
#endif
  return extreme_vectors<Max, T, 16>(p, n);
}

// The sum of n contiguous floats or doubles by pairwise(), operation for operation (so the same
// bits), with its eight lanes in vectors of `Bytes`: pairwise() with a getter does not vectorise
// (docs/benchmarks.md, "Tuning constants of arrayport.ops").
template <class T, int Bytes>
struct lanes8 {
  using V = typename vec<T, Bytes>::type;
  static constexpr int W = Bytes / sizeof(T), N = 8 / W;  // lanes a vector, vectors for 8 lanes
  V v[N] = {};                                            // the identity, +0
  __attribute__((always_inline)) void add(const T* p) {
    for (int k = 0; k < N; ++k) {
      V x;
      std::memcpy(&x, p + W * k, sizeof x);
      v[k] = v[k] + x;
    }
  }
  // pairwise()'s ending: the lanes combined as a tree, then the remaining n % 8 in order.
  __attribute__((always_inline)) T finish(const T* tail, std::int64_t rest) const {
    T l[8];
    std::memcpy(l, v, sizeof l);
    T acc = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    for (std::int64_t i = 0; i < rest; ++i) acc = acc + tail[i];
    return acc;
  }
};

template <class T, int Bytes>
__attribute__((always_inline)) inline T pairwise_sum_step(const T* p, std::int64_t n,
                                                          T (*recurse)(const T*, std::int64_t)) {
  if (n <= pairwise_block) {
    lanes8<T, Bytes> a;
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8) a.add(p + i);
    return a.finish(p + i, n - i);
  }
  std::int64_t half = n / 2;
  half -= half % 8;
  return recurse(p, half) + recurse(p + half, n - half);
}

template <class T>
T pairwise_sum_sse(const T* p, std::int64_t n) {
  return pairwise_sum_step<T, 16>(p, n, &pairwise_sum_sse<T>);
}

#ifdef ARRAYPORT_OPS_AVX2
template <class T>
__attribute__((target("avx2"))) T pairwise_sum_avx2(const T* p, std::int64_t n) {
  return pairwise_sum_step<T, 32>(p, n, &pairwise_sum_avx2<T>);
}
#endif

template <class T>
T pairwise_sum(const T* p, std::int64_t n) {
#ifdef ARRAYPORT_OPS_AVX2
  if (has_avx2()) return pairwise_sum_avx2(p, n);
#endif
  return pairwise_sum_sse(p, n);
}

// The dot product of n contiguous pairs, pairwise over blocks of 4096 in four vectors of lanes.
// Unlike sum it has no NumPy order to follow (NumPy's dot is BLAS's, one pass in 16 lanes): two
// 8-lane vectors were latency-bound at half of OpenBLAS's speed in cache (docs/benchmarks.md).
constexpr std::int64_t dot_block = 4096;

template <class T, int Bytes>
__attribute__((always_inline)) inline T pairwise_dot_step(const T* p, const T* q, std::int64_t n,
                                                          T (*recurse)(const T*, const T*,
                                                                       std::int64_t)) {
  using V = typename vec<T, Bytes>::type;
  constexpr int W = Bytes / sizeof(T), N = 4;  // lanes a vector, vectors a step
  if (n <= dot_block) {
    V v[N] = {};
    std::int64_t i = 0;
    for (; i + N * W <= n; i += N * W)
      for (int k = 0; k < N; ++k) {
        V x, y;
        std::memcpy(&x, p + i + W * k, sizeof x);
        std::memcpy(&y, q + i + W * k, sizeof y);
        v[k] = v[k] + x * y;
      }
    const V s = (v[0] + v[1]) + (v[2] + v[3]);
    T l[W];
    std::memcpy(l, &s, sizeof l);
    T acc = T(0);
    for (int k = 0; k < W; ++k) acc = acc + l[k];
    for (; i < n; ++i) acc = acc + p[i] * q[i];
    return acc;
  }
  std::int64_t half = n / 2;
  half -= half % (N * W);
  return recurse(p, q, half) + recurse(p + half, q + half, n - half);
}

template <class T>
T pairwise_dot_sse(const T* p, const T* q, std::int64_t n) {
  return pairwise_dot_step<T, 16>(p, q, n, &pairwise_dot_sse<T>);
}

#ifdef ARRAYPORT_OPS_AVX2
template <class T>
__attribute__((target("avx2"))) T pairwise_dot_avx2(const T* p, const T* q, std::int64_t n) {
  return pairwise_dot_step<T, 32>(p, q, n, &pairwise_dot_avx2<T>);
}
#endif

template <class T>
T pairwise_dot(const T* p, const T* q, std::int64_t n) {
#ifdef ARRAYPORT_OPS_AVX2
  if (has_avx2()) return pairwise_dot_avx2(p, q, n);
#endif
  return pairwise_dot_sse(p, q, n);
}

// Sums of integers and bools are exact (modulo 2^64), so any order gives NumPy's result: one
// accumulator in a plain loop, and bools counted as nonzero bytes. Never pairwise()'s eight lanes:
// GCC 12's loop vectoriser miscompiles those lanes fed from bytes (ones(16, bool) summed to 8).
template <int Bytes>
struct byte_vec;  // explicit sizes: GCC drops a dependent vector_size
template <>
struct byte_vec<16> {
  typedef std::uint8_t type __attribute__((vector_size(16)));
};
template <>
struct byte_vec<32> {
  typedef std::uint8_t type __attribute__((vector_size(32)));
};

template <int Bytes>
__attribute__((always_inline)) inline std::int64_t count_nonzero_vectors(const std::uint8_t* p,
                                                                         std::int64_t n) {
  using V = typename byte_vec<Bytes>::type;
  std::int64_t total = 0, i = 0;
  while (i + Bytes <= n) {  // byte counters, emptied before they can wrap (255 steps)
    V acc = {};
    const std::int64_t end = i + std::min<std::int64_t>((n - i) / Bytes, 255) * Bytes;
    for (; i < end; i += Bytes) {
      V v;
      std::memcpy(&v, p + i, sizeof v);
      acc -= reinterpret_cast<V>(v != 0);  // -1 where nonzero
    }
    for (int j = 0; j < Bytes; ++j) total += acc[j];
  }
  for (; i < n; ++i) total += p[i] != 0;
  return total;
}

#ifdef ARRAYPORT_OPS_AVX2
__attribute__((target("avx2"))) std::int64_t count_nonzero_avx2(const std::uint8_t* p,
                                                                std::int64_t n) {
  return count_nonzero_vectors<32>(p, n);
}
#endif

// The number of nonzero bytes among n (a bool array's Trues: any nonzero byte is true).
std::int64_t count_nonzero(const std::uint8_t* p, std::int64_t n) {
#ifdef ARRAYPORT_OPS_AVX2
  if (has_avx2()) return count_nonzero_avx2(p, n);
#endif
  return count_nonzero_vectors<16>(p, n);
}

// The sum of n contiguous bools: their nonzero bytes.
template <class Acc>
Acc bool_sum(const bool* p, std::int64_t n) {
  return static_cast<Acc>(count_nonzero(reinterpret_cast<const std::uint8_t*>(p), n));
}

// any (All false) or all (All true) of n contiguous values, on their bits: a value is false when
// its bits are 0 (a float's apart from its sign: -0.0). Blocks are tested by integer loops the
// compiler vectorises, stopping at the first block that decides; a bool is any nonzero byte.
template <bool All, class In>
__attribute__((always_inline)) inline bool truth_blocks(const In* p, std::int64_t n) {
  using U = std::conditional_t<sizeof(In) == 1, std::uint8_t,
                               std::conditional_t<sizeof(In) == 4, std::uint32_t, std::uint64_t>>;
  static_assert(sizeof(U) == sizeof(In));
  constexpr U bits = std::is_floating_point_v<In> ? U(~(U(1) << (8 * sizeof(U) - 1))) : U(~U(0));
  constexpr std::int64_t block = 4096;
  for (std::int64_t lo = 0; lo < n; lo += block) {
    const std::int64_t hi = std::min(n, lo + block);
    U decided = 0;  // all: nonzero when a zero was seen; any: when a nonzero was
    for (std::int64_t i = lo; i < hi; ++i) {
      U u;
      std::memcpy(&u, p + i, sizeof u);
      decided |= All ? U((u & bits) == 0) : U(u & bits);
    }
    if (decided) return !All;
  }
  return All;
}

#ifdef ARRAYPORT_OPS_AVX2
template <bool All, class In>  // SSE2 has no 64-bit compare: AVX2 where the CPU has it
__attribute__((target("avx2"))) bool truth_avx2(const In* p, std::int64_t n) {
  return truth_blocks<All>(p, n);
}
#endif

template <bool All, class In>
bool truth_contiguous(const In* p, std::int64_t n) {
#ifdef ARRAYPORT_OPS_AVX2
  if (has_avx2()) return truth_avx2<All>(p, n);
#endif
  return truth_blocks<All>(p, n);
}

// Reductions whose result does not depend on the order of their operands: integer sums and
// products (wrapping), integer max and min, and any/all. Columns of them accumulate rows in
// memory order, acc[j] = op(acc[j], row[j]), a loop the compiler vectorises.
enum class free_op { sum, prod, max, min, any, all };

// The accumulator a free_op keeps for an input In whose reduction accumulates in Acc: unsigned
// for sums and products (wrapping without undefined behaviour), a byte for any and all.
template <free_op Op, class Acc>
struct free_acc {
  using type = Acc;
};
template <class Acc>
struct free_acc<free_op::sum, Acc> {
  using type = std::make_unsigned_t<Acc>;
};
template <class Acc>
struct free_acc<free_op::prod, Acc> {
  using type = std::make_unsigned_t<Acc>;
};
template <class Acc>
struct free_acc<free_op::any, Acc> {
  using type = std::uint8_t;
};
template <class Acc>
struct free_acc<free_op::all, Acc> {
  using type = std::uint8_t;
};
template <free_op Op, class Acc>
using free_acc_t = typename free_acc<Op, Acc>::type;

template <free_op Op, class A>
constexpr A free_identity() noexcept {
  if constexpr (Op == free_op::max) return std::numeric_limits<A>::lowest();
  if constexpr (Op == free_op::min) return std::numeric_limits<A>::max();
  return Op == free_op::prod || Op == free_op::all ? A(1) : A(0);
}

// acc = op(acc, x), x an element or (combining parts) an accumulator; a bool comes as 0 or 1.
template <free_op Op, class A, class L>
__attribute__((always_inline)) inline void free_step(A& acc, L x) {
  if constexpr (Op == free_op::any)
    acc |= A(x != 0);
  else if constexpr (Op == free_op::all)
    acc &= A(x != 0);
  else if constexpr (Op == free_op::max)
    acc = x > acc ? x : acc;
  else if constexpr (Op == free_op::min)
    acc = x < acc ? x : acc;
  else  // through the signed accumulator: int32 -1 is 2^64 - 1 as a uint64
    acc = Op == free_op::sum ? A(acc + A(std::make_signed_t<A>(x)))
                             : A(acc * A(std::make_signed_t<A>(x)));
}

// acc[j] = op(acc[j], row[j]) for j < w over rows [lo, hi), row i at p + i * step. A bool is read
// as its byte (any nonzero byte is true).
template <free_op Op, class In, class A>
__attribute__((always_inline)) inline void free_rows_step(const char* p, std::int64_t step,
                                                          std::int64_t lo, std::int64_t hi, int w,
                                                          A* __restrict__ acc) {
  using L = std::conditional_t<std::is_same_v<In, bool>, std::uint8_t, In>;
  for (std::int64_t i = lo; i < hi; ++i) {
    const L* __restrict__ row = reinterpret_cast<const L*>(p + i * step);
#if defined(__GNUC__)
    // Rows a page or more apart defeat the hardware prefetcher: ask for a later row.
    if (i + 8 < hi) __builtin_prefetch(p + (i + 8) * step);
#endif
    for (int j = 0; j < w; ++j) {
      L x = row[j];
      if constexpr (std::is_same_v<In, bool>) x = L(x != 0);
      free_step<Op>(acc[j], x);
    }
  }
}

template <free_op Op, class In, class A>
void free_rows_base(const char* p, std::int64_t step, std::int64_t lo, std::int64_t hi, int w,
                    A* acc) {
  free_rows_step<Op, In>(p, step, lo, hi, w, acc);
}

#ifdef ARRAYPORT_OPS_AVX2
template <free_op Op, class In, class A>
__attribute__((target("avx2"))) void free_rows_avx2(const char* p, std::int64_t step,
                                                    std::int64_t lo, std::int64_t hi, int w,
                                                    A* acc) {
  free_rows_step<Op, In>(p, step, lo, hi, w, acc);
}

// 64-bit max and min: AVX2 has no such compare-and-select (vpmaxsq is AVX-512's), and its
// emulation ran int64 max of 2^16 at 0.75x NumPy's AVX-512 loop.
template <free_op Op, class In, class A>
__attribute__((target("avx512f,avx512bw"))) void free_rows_avx512(const char* p, std::int64_t step,
                                                                  std::int64_t lo, std::int64_t hi,
                                                                  int w, A* acc) {
  free_rows_step<Op, In>(p, step, lo, hi, w, acc);
}
#endif

template <free_op Op, class In, class A>
void free_rows(const char* p, std::int64_t step, std::int64_t lo, std::int64_t hi, int w, A* acc) {
#ifdef ARRAYPORT_OPS_AVX2
  if constexpr (sizeof(A) == 8 && (Op == free_op::max || Op == free_op::min))
    if (has_avx512()) return free_rows_avx512<Op, In>(p, step, lo, hi, w, acc);
  if (has_avx2()) return free_rows_avx2<Op, In>(p, step, lo, hi, w, acc);
#endif
  free_rows_base<Op, In>(p, step, lo, hi, w, acc);
}

/// op over n contiguous values: rows of 64 lanes (a loop the compiler vectorises), the tail, then
/// the lanes.
template <free_op Op, class In, class A>
A free_contiguous(const In* p, std::int64_t n) {
  constexpr int W = 64;
  A acc[W];
  std::fill(acc, acc + W, free_identity<Op, A>());
  const std::int64_t rows = n / W;
  const auto* bytes = reinterpret_cast<const char*>(p);
  free_rows<Op, In>(bytes, W * std::int64_t(sizeof(In)), 0, rows, W, acc);
  free_rows<Op, In>(bytes + rows * W * std::int64_t(sizeof(In)), 0, 0, 1, int(n % W), acc);
  for (int j = 1; j < W; ++j) free_step<Op>(acc[0], acc[j]);
  return acc[0];
}

// The index of the first of n contiguous values equal to v (one is): blocks of 64 bytes tested
// at once in vectors, then the block that holds it element by element. The element-by-element
// search alone took a cycle a value and left argmax of rows at 0.1-0.2x NumPy.
template <class T, int Bytes>
__attribute__((always_inline)) inline std::int64_t first_equal_step(const T* p, std::int64_t n,
                                                                    T v) {
  // GCC leaves a bool loop over the block scalar (a ucomiss an element for floats): vectors,
  // and the block's hits folded to one word.
  typedef T V __attribute__((vector_size(Bytes)));
  using M = decltype(V{} == V{});
  constexpr int W = Bytes / int(sizeof(T)), C = 64 / int(sizeof(T));
  V vv;
  for (int l = 0; l < W; ++l) vv[l] = v;
  std::int64_t i = 0;
  for (; i + C <= n; i += C) {
    M hit{};
    for (int k = 0; k < C / W; ++k) {
      V x;
      std::memcpy(&x, p + i + k * W, sizeof x);
      hit |= x == vv;
    }
    std::uint64_t words[Bytes / 8], any = 0;
    std::memcpy(words, &hit, sizeof words);
    for (auto w : words) any |= w;
    if (any) break;
  }
  for (;; ++i)
    if (p[i] == v) return i;
}

// argmin/argmax of n > 0 contiguous values (n <= arg_segment) in vectors of `Bytes`: each lane
// keeps its extreme and the first block of 1,024 values that raised it (a strict compare), so the
// extreme's first block is the lowest of the lanes holding it, searched then for its index; a
// block with a NaN is searched for the first NaN instead. Per-block horizontal extremes cost about
// 120 cycles a block and left argmax of 2^16 floats at 0.8x NumPy.
constexpr std::int64_t arg_segment = std::int64_t(1) << 16;  // block numbers fit a byte lane

template <bool Max, class T, int Bytes>
__attribute__((always_inline)) inline arg_pair<T> arg_vectors(const T* p, std::int64_t n) {
  typedef T V __attribute__((vector_size(Bytes)));
  using M = decltype(V{} > V{});
  using L = std::conditional_t<sizeof(T) == 1, std::int8_t,
                               std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>>;
  constexpr int W = Bytes / int(sizeof(T)), U = 4, S = W * U;
  constexpr std::int64_t block = 1024;
  using lim = std::numeric_limits<T>;
  // The identity: a lane that never beats it holds block 0, right when every value equals it.
  constexpr T start = lim::has_infinity ? (Max ? -lim::infinity() : lim::infinity())
                                        : (Max ? lim::lowest() : lim::max());
  static_assert(arg_segment / block <= 127);
  const std::int64_t main = n - n % S;
  V best_lane = V{} + start;
  M best_block{};
  for (std::int64_t b = 0; b * block < main; ++b) {
    const std::int64_t lo = b * block, hi = std::min(main, lo + block);
    V m[U];
    M nan{};
    for (auto& v : m) v = V{} + start;
    for (std::int64_t i = lo; i < hi; i += S)
      for (int k = 0; k < U; ++k) {
        V x;  // no lambdas here: they would pass vectors outside this function's target
        std::memcpy(&x, p + i + k * W, sizeof x);
        m[k] = (Max ? x > m[k] : x < m[k]) ? x : m[k];
        if constexpr (std::is_floating_point_v<T>) nan |= x != x;
      }
    if constexpr (std::is_floating_point_v<T>) {
      std::uint64_t words[Bytes / 8], any = 0;
      std::memcpy(words, &nan, sizeof words);
      for (auto w : words) any |= w;
      if (any)  // the first NaN wins: it is in this block
        for (std::int64_t i = lo;; ++i)
          if (p[i] != p[i]) return {p[i], i};
    }
    for (int k = 1; k < U; ++k) m[0] = (Max ? m[k] > m[0] : m[k] < m[0]) ? m[k] : m[0];
    const M take = Max ? m[0] > best_lane : m[0] < best_lane;
    best_lane = take ? m[0] : best_lane;
    best_block = take ? M{} + L(b) : best_block;
  }
  arg_pair<T> found = arg_reduce<T, Max>::identity();
  if (main > 0) {
    T v = best_lane[0];
    for (int l = 1; l < W; ++l) v = (Max ? best_lane[l] > v : best_lane[l] < v) ? best_lane[l] : v;
    std::int64_t b = main;
    for (int l = 0; l < W; ++l)
      if (best_lane[l] == v) b = std::min<std::int64_t>(b, best_block[l]);
    const std::int64_t lo = b * block;
    found = {v, lo + first_equal_step<T, Bytes>(p + lo, std::min(block, main - lo), v)};
  }
  for (std::int64_t i = main; i < n; ++i)  // the last values, fewer than a step
    arg_reduce<T, Max>{}.step(found, {p[i], i});
  return found;
}

template <bool Max, class T>
arg_pair<T> arg_vectors_base(const T* p, std::int64_t n) {
  return arg_vectors<Max, T, 16>(p, n);
}

#ifdef ARRAYPORT_OPS_AVX2
template <bool Max, class T>
__attribute__((target("avx2"))) arg_pair<T> arg_vectors_avx2(const T* p, std::int64_t n) {
  return arg_vectors<Max, T, 32>(p, n);
}

template <bool Max, class T>
__attribute__((target("avx512f,avx512bw"))) arg_pair<T> arg_vectors_avx512(const T* p,
                                                                           std::int64_t n) {
  return arg_vectors<Max, T, 64>(p, n);
}
#endif

template <bool Max, class T>
arg_pair<T> arg_run(const T* p, std::int64_t n) {
#ifdef ARRAYPORT_OPS_AVX2
  // Integers only: GCC 12 lowers a float compare into a 64-byte mask vector (the NaN test) an
  // element at a time, and that loop ran at 0.1x.
  if constexpr (std::is_integral_v<T>)
    if (has_avx512()) return arg_vectors_avx512<Max>(p, n);
  if (has_avx2()) return arg_vectors_avx2<Max>(p, n);
#endif
  return arg_vectors_base<Max>(p, n);
}

// argmin/argmax of values [lo, lo + n), n > 0: segments of arg_segment in order, each taken by
// arg_reduce's in-order step (strictly better, or the first NaN).
template <bool Max, class T>
arg_pair<T> arg_contiguous(const T* p, std::int64_t lo, std::int64_t n) {
  arg_pair<T> best = arg_reduce<T, Max>::identity();
  for (std::int64_t s = lo; s < lo + n; s += arg_segment) {
    arg_pair<T> a = arg_run<Max>(p + s, std::min(arg_segment, lo + n - s));
    a.index += s;
    arg_reduce<T, Max>{}.step(best, a);
    if (best.value != best.value) break;  // the first NaN: no later segment can replace it
  }
  return best;
}

// (best, idx) takes (x, i), whose index is above idx's, where x is strictly better or is the first
// NaN: NumPy's first extreme, as selects the compiler vectorises.
template <bool Max, class T, class I>
__attribute__((always_inline)) inline void arg_take(T& best, I& idx, T x, I i) {
  bool take = Max ? x > best : x < best;
  if constexpr (std::is_floating_point_v<T>) take |= (x != x) & (best == best);
  best = take ? x : best;
  idx = take ? i : idx;
}

// argmin/argmax down w neighbouring columns over rows [lo, hi), row i at p + i * step, into
// (best[j], idx[j]) seeded from an earlier row: the rows in order, so no tree is needed.
template <bool Max, class T, class I>
__attribute__((always_inline)) inline void arg_rows_step(const char* p, std::int64_t step,
                                                         std::int64_t lo, std::int64_t hi, int w,
                                                         T* __restrict__ best,
                                                         I* __restrict__ idx) {
  for (std::int64_t i = lo; i < hi; ++i) {
    const T* __restrict__ row = reinterpret_cast<const T*>(p + i * step);
#if defined(__GNUC__)
    if (i + 8 < hi) __builtin_prefetch(p + (i + 8) * step);  // as free_rows_step
#endif
    for (int j = 0; j < w; ++j) arg_take<Max>(best[j], idx[j], row[j], I(i));
  }
}

template <bool Max, class T, class I>
void arg_rows_base(const char* p, std::int64_t step, std::int64_t lo, std::int64_t hi, int w,
                   T* best, I* idx) {
  arg_rows_step<Max>(p, step, lo, hi, w, best, idx);
}

#ifdef ARRAYPORT_OPS_AVX2
template <bool Max, class T, class I>
__attribute__((target("avx2"))) void arg_rows_avx2(const char* p, std::int64_t step,
                                                   std::int64_t lo, std::int64_t hi, int w, T* best,
                                                   I* idx) {
  arg_rows_step<Max>(p, step, lo, hi, w, best, idx);
}
#endif

template <bool Max, class T, class I>
void arg_rows(const char* p, std::int64_t step, std::int64_t lo, std::int64_t hi, int w, T* best,
              I* idx) {
#ifdef ARRAYPORT_OPS_AVX2
  if (has_avx2()) return arg_rows_avx2<Max>(p, step, lo, hi, w, best, idx);
#endif
  arg_rows_base<Max>(p, step, lo, hi, w, best, idx);
}

// pairwise() down neighbouring columns, m vectors of them (up to column_bytes), row i at
// p + i * step: each column accumulated operation for operation as pairwise() accumulates it
// alone (the same bits), its eight lanes and the tree in vectors, a row's columns read in one
// pass (pairwise() with a strip getter does not vectorise). sum adds; max and min are NumPy's
// maximum and minimum as selects: a NaN operand first, the left one's before the right one's,
// else the larger (smaller), the left one on ties.
enum class column_op { sum, max, min };
constexpr int column_bytes = 1024;  // a row's columns at once: 16 cache lines read in order

// a = op(a, b). Vectors travel by reference: by value, a 32-byte vector crosses a function that
// is not compiled for AVX (GCC's -Wpsabi).
template <column_op Op, class V>
__attribute__((always_inline)) inline void column_combine(V& a, const V& b) {
  if constexpr (Op == column_op::sum) {
    a = a + b;
  } else {
    const V m = (Op == column_op::max ? b > a : b < a) ? b : a;
    const V n = b != b ? b : m;
    a = a != a ? a : n;
  }
}

// column_combine() in the rows' loop of a leaf, where `Fast`: max and min as one select, which
// is the full rule for operands that are not NaN, and a record of whether a NaN went by (the leaf
// then runs again with the full rule). The full rule's three selects cost 12 uops a vector on
// this Intel Xeon (a blend is 3), and left column max at half sum's speed.
template <column_op Op, bool Fast, class V, class M>
__attribute__((always_inline)) inline void column_combine_row(V& a, const V& b, M& nan) {
  if constexpr (Op == column_op::sum || !Fast) {
    column_combine<Op>(a, b);
  } else {
    a = (Op == column_op::max ? b > a : b < a) ? b : a;
    nan |= b != b;
  }
}

// A leaf of at most pairwise_block rows into out; false where `Fast` met a NaN (out unwritten).
template <column_op Op, bool Fast, class T, int Bytes>
__attribute__((always_inline)) inline bool column_leaf(const char* p, std::int64_t step,
                                                       std::int64_t lo, std::int64_t n, int m,
                                                       T* out) {
  using V = typename vec<T, Bytes>::type;
  using M = typename vec<T, Bytes>::mask;
  constexpr int W = Bytes / int(sizeof(T)), max_m = column_bytes / Bytes;
  constexpr T identity = Op == column_op::sum   ? T(0)
                         : Op == column_op::max ? -std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::infinity();
  const auto at = [&](std::int64_t i, int v) { return p + i * step + v * Bytes; };
  V lane[8][max_m];
  for (int k = 0; k < 8; ++k)
    for (int v = 0; v < m; ++v) lane[k][v] = V{} + identity;  // +0 or an infinity: exact
  M nan{};
  std::int64_t i = 0;
  V x;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) {
#if defined(__GNUC__)
      // Rows a page or more apart defeat the hardware prefetcher: ask for a later row.
      if (i + k + 8 < n) __builtin_prefetch(p + (lo + i + k + 8) * step);
#endif
      for (int v = 0; v < m; ++v) {
        std::memcpy(&x, at(lo + i + k, v), sizeof x);
        column_combine_row<Op, Fast>(lane[k][v], x, nan);
      }
    }
  if constexpr (Fast && Op != column_op::sum)
    for (int l = 0; l < W; ++l)
      if (nan[l]) return false;
  for (int v = 0; v < m; ++v) {
    // pairwise()'s tree: ((0 1) (2 3)) ((4 5) (6 7)), then the rows left, in order.
    V a = lane[0][v], b = lane[2][v], c = lane[4][v], d = lane[6][v];
    column_combine<Op>(a, lane[1][v]);
    column_combine<Op>(b, lane[3][v]);
    column_combine<Op>(c, lane[5][v]);
    column_combine<Op>(d, lane[7][v]);
    column_combine<Op>(a, b);
    column_combine<Op>(c, d);
    column_combine<Op>(a, c);
    for (std::int64_t r = i; r < n; ++r) {
      std::memcpy(&x, at(lo + r, v), sizeof x);
      column_combine<Op>(a, x);
    }
    std::memcpy(out + v * W, &a, sizeof a);
  }
  return true;
}

template <column_op Op, class T, int Bytes>
__attribute__((always_inline)) inline void column_pairwise_step(
    const char* p, std::int64_t step, std::int64_t lo, std::int64_t n, int m, T* out,
    void (*recurse)(const char*, std::int64_t, std::int64_t, std::int64_t, int, T*)) {
  using V = typename vec<T, Bytes>::type;
  constexpr int W = Bytes / int(sizeof(T)), max_m = column_bytes / Bytes;
  if (n <= pairwise_block) {
    if (!column_leaf<Op, true, T, Bytes>(p, step, lo, n, m, out))
      column_leaf<Op, false, T, Bytes>(p, step, lo, n, m, out);
    return;
  }
  std::int64_t half = n / 2;
  half -= half % 8;
  T a[max_m * W], b[max_m * W];
  recurse(p, step, lo, half, m, a);
  recurse(p, step, lo + half, n - half, m, b);
  for (int v = 0; v < m; ++v) {
    V va, vb;
    std::memcpy(&va, a + v * W, sizeof va);
    std::memcpy(&vb, b + v * W, sizeof vb);
    column_combine<Op>(va, vb);
    std::memcpy(out + v * W, &va, sizeof va);
  }
}

template <column_op Op, class T>
void column_pairwise_sse(const char* p, std::int64_t step, std::int64_t lo, std::int64_t n, int m,
                         T* out) {
  column_pairwise_step<Op, T, 16>(p, step, lo, n, m, out, &column_pairwise_sse<Op, T>);
}

#ifdef ARRAYPORT_OPS_AVX2
template <column_op Op, class T>
__attribute__((target("avx2"))) void column_pairwise_avx2(const char* p, std::int64_t step,
                                                          std::int64_t lo, std::int64_t n, int m,
                                                          T* out) {
  column_pairwise_step<Op, T, 32>(p, step, lo, n, m, out, &column_pairwise_avx2<Op, T>);
}
#endif

/// The columns in one of column_pairwise()'s vectors (AVX2's where the CPU has it).
template <class T>
int column_width() noexcept {
#ifdef ARRAYPORT_OPS_AVX2
  if (has_avx2()) return int(32 / sizeof(T));
#endif
  return int(16 / sizeof(T));
}

/// The pairwise sum, max or min of rows [lo, lo + n) of m * column_width<T>() columns at p (row i
/// at p + i * step; m * column_width<T>() * sizeof(T) <= column_bytes), into out.
template <column_op Op, class T>
void column_pairwise(const char* p, std::int64_t step, std::int64_t lo, std::int64_t n, int m,
                     T* out) {
#ifdef ARRAYPORT_OPS_AVX2
  if (has_avx2()) return column_pairwise_avx2<Op, T>(p, step, lo, n, m, out);
#endif
  column_pairwise_sse<Op, T>(p, step, lo, n, m, out);
}

}  // namespace
}  // namespace arrayport::ops::cpu
