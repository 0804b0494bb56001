// CPU reductions: pairwise accumulation (blocks of 128 in 8 independent lanes, halves combined
// recursively, as NumPy does), over outputs in parallel or, for few outputs, over chunks of each;
// integer reductions whose result does not depend on the order, and argmin/argmax down columns,
// in memory order.
#include "ops/elementwise.hpp"
#include "ops/kernels.hpp"
#include "ops/cpu/cpu_features.hpp"
#include "ops/cpu/parallel.hpp"
#include "ops/cpu/reduce_loops.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace arrayport::ops::cpu {
namespace {

// dot's operands may differ in dtype and are converted as loaded; every other reduction's table
// entry is that of its input's dtype, so it loads directly.
template <class A>
compute_t<A> load_at(const char* p) {
  return load_direct(reinterpret_cast<const A*>(p));
}
template <class A>
compute_t<A> load_any(const char* p, type_id t) {
  return t == type_id_of<A> ? load_at<A>(p) : load_converting<A>(p, t);
}

// Pairwise reduction of get(i), i in [lo, lo + n).
template <class Acc, class R, class G>
Acc pairwise(const G& get, std::int64_t lo, std::int64_t n, const R& r) {
  if (n <= pairwise_block) {
    Acc lane[8];
    for (auto& l : lane) l = R::identity();
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k) lane[k] = r(lane[k], get(lo + i + k));
    Acc acc =
        r(r(r(lane[0], lane[1]), r(lane[2], lane[3])), r(r(lane[4], lane[5]), r(lane[6], lane[7])));
    for (; i < n; ++i) acc = r(acc, get(lo + i));
    return acc;
  }
  std::int64_t half = n / 2;
  half -= half % 8;
  return r(pairwise<Acc>(get, lo, half, r), pairwise<Acc>(get, lo + half, n - half, r));
}

// Byte offset of reduced element i (C order over the collapsed reduced dims) in input k.
inline std::int64_t red_offset(const reduce_call& c, int k, std::int64_t i) {
  std::int64_t off = 0;
  for (int d = c.red_ndim - 1; d >= 0; --d) {
    off += (i % c.red_shape[d]) * c.red_strides[k][d];
    i /= c.red_shape[d];
  }
  return off;
}
inline std::int64_t out_offset(const reduce_call& c, int k, std::int64_t o) {
  std::int64_t off = 0;
  for (int d = c.out_ndim - 1; d >= 0; --d) {
    off += (o % c.out_shape[d]) * c.out_strides[k][d];
    o /= c.out_shape[d];
  }
  return off;
}

// base + off as an address: an empty input may have no data (NULL) while its outputs still
// have offsets, and pointer arithmetic on NULL is undefined even when nothing is read.
inline const char* offset_of(const char* base, std::int64_t off) noexcept {
  return reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(base) +
                                       static_cast<std::uintptr_t>(off));
}

// Outputs along a contiguous kept dimension of `inner`, taken `width` of a row at a time: block k's
// first output o, its width w, and the address of its first row (run_strips and its columns).
inline const char* output_block(const reduce_call& c, std::int64_t inner, std::int64_t width,
                                std::int64_t k, std::int64_t& o, std::int64_t& w) {
  const std::int64_t per_row = (inner + width - 1) / width, j0 = k % per_row * width;
  o = k / per_row * inner + j0;
  w = std::min(width, inner - j0);
  return offset_of(c.in[0], out_offset(c, 0, o));
}

// Every reduction is chunked the same way whatever the path or thread count: up to 2^16 elements
// pairwise, longer ones in fixed chunks of 2^16 (multiples of the pairwise block) combined
// pairwise. dot reads two operands: its chunks are 2^14, so from 2^15 pairs on it uses two
// threads, as BLAS.
constexpr std::int64_t chunk_of_op(reduce_op op) noexcept {
  return std::int64_t(1) << (op == reduce_op::dot ? 14 : 16);
}

// The accumulators of a strip of W neighbouring outputs, combined lane by lane with R.
template <class Acc, int W>
struct strip {
  Acc v[W];
};
template <class R, class Acc, int W>
struct strip_reduce {
  static strip<Acc, W> identity() {
    strip<Acc, W> s;
    for (auto& x : s.v) x = R::identity();
    return s;
  }
  strip<Acc, W> operator()(const strip<Acc, W>& a, const strip<Acc, W>& b) const {
    strip<Acc, W> s;
    constexpr bool is_max = std::is_same_v<R, max_reduce<Acc>>;
    if constexpr (std::is_floating_point_v<Acc> && (is_max || std::is_same_v<R, min_reduce<Acc>>)) {
      // maximum_fn / minimum_fn as column_pairwise's selects, which the compiler vectorises.
      for (int j = 0; j < W; ++j) {
        s.v[j] = a.v[j];
        column_combine<is_max ? column_op::max : column_op::min>(s.v[j], b.v[j]);
      }
    } else {
      for (int j = 0; j < W; ++j) s.v[j] = R{}(a.v[j], b.v[j]);
    }
    return s;
  }
};

// run_strips' layout for float and double sum, mean, max and min, `inner` a multiple of the
// vector: blocks of up to column_bytes of a row's outputs, each row of a block read in one pass
// (column_pairwise), the same bits as one output at a time. False where inner is not.
template <reduce_op Op, type_id T>
bool run_columns(const reduce_call& c, std::int64_t inner, std::int64_t step) {
  using In = storage_t<T>;
  using Out = storage_t<reduce_result_type(Op, T)>;
  constexpr column_op op = Op == reduce_op::max   ? column_op::max
                           : Op == reduce_op::min ? column_op::min
                                                  : column_op::sum;
  const int vw = column_width<In>();
  if (inner % vw != 0) return false;
  constexpr std::int64_t B = column_bytes / std::int64_t(sizeof(In));
  const std::int64_t per_row = (inner + B - 1) / B, tasks = c.n_out / inner * per_row;
  const std::int64_t chunk = chunk_of_op(Op), chunks = (c.len + chunk - 1) / chunk;
  // Block k: its first output, its vectors, and where its first row starts.
  auto block = [&](std::int64_t k, std::int64_t& o, int& m) {
    std::int64_t w;
    const char* p = output_block(c, inner, B, k, o, w);
    m = int(w / vw);
    return p;
  };
  auto* out = reinterpret_cast<Out*>(c.out);
  if (chunks <= 1) {
    const std::int64_t grain = std::max<std::int64_t>(1, chunk / 2 / (c.len * B));
    parallel_for(tasks, grain, [&](std::int64_t b, std::int64_t e) {
      In acc[B];
      for (std::int64_t k = b; k < e; ++k) {
        std::int64_t o;
        int m;
        const char* p = block(k, o, m);
        column_pairwise<op, In>(p, step, 0, c.len, m, acc);
        for (int j = 0; j < m * vw; ++j) out[o + j] = finish<Op, Out>(acc[j], c.len);
      }
    });
    return true;
  }
  // Long columns: their chunks in parallel, then combined as run() combines them.
  std::vector<In> parts(static_cast<std::size_t>(tasks * chunks * B));
  parallel_for(tasks * chunks, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t t = b; t < e; ++t) {
      std::int64_t o;
      int m;
      const char* p = block(t / chunks, o, m);
      const std::int64_t lo = t % chunks * chunk;
      column_pairwise<op, In>(p, step, lo, std::min(chunk, c.len - lo), m,
                              &parts[std::size_t(t * B)]);
    }
  });
  const reducer_t<Op, In> r{};
  for (std::int64_t k = 0; k < tasks; ++k) {
    std::int64_t o;
    int m;
    block(k, o, m);
    for (int j = 0; j < m * vw; ++j)
      out[o + j] = finish<Op, Out>(
          pairwise<In>([&](std::int64_t q) { return parts[std::size_t((k * chunks + q) * B + j)]; },
                       0, chunks, r),
          c.len);
  }
  return true;
}

// The free_op of Op for an input T, where its result does not depend on the order: integer and
// bool sums and products, integer max and min, any and all of integers and bools.
template <reduce_op Op, type_id T>
constexpr std::optional<free_op> free_op_of() noexcept {
  if constexpr (!std::is_integral_v<storage_t<T>>) return std::nullopt;
  switch (Op) {
    case reduce_op::sum: return free_op::sum;
    case reduce_op::prod: return free_op::prod;
    case reduce_op::max: return T == type_id::bool_ ? std::nullopt : std::optional(free_op::max);
    case reduce_op::min: return T == type_id::bool_ ? std::nullopt : std::optional(free_op::min);
    case reduce_op::any: return free_op::any;
    case reduce_op::all: return free_op::all;
    default: return std::nullopt;
  }
}

// How run_free_columns and run_arg_columns split their work: blocks of up to B of a row's outputs
// as tasks, and with fewer tasks than threads each block's rows in parts of `rows` (none empty),
// each part at least 2^15 elements (fewer are not worth a thread).
struct column_split {
  const reduce_call& c;
  std::int64_t inner, B, tasks, parts, rows, grain;
  column_split(const reduce_call& call, std::int64_t inner_, std::int64_t B_)
      : c(call), inner(inner_), B(B_) {
    tasks = c.n_out / inner * ((inner + B - 1) / B);
    const std::int64_t width = std::min(inner, B), threads = thread_count();
    parts = tasks >= threads
                ? 1
                : std::clamp<std::int64_t>(c.len * width >> 15, 1, (threads + tasks - 1) / tasks);
    rows = (c.len + parts - 1) / parts;
    parts = (c.len + rows - 1) / rows;
    grain = std::max<std::int64_t>(1, (std::int64_t(1) << 15) / (rows * width));
  }
  // Block k: its first output o, its width w, and where its first row starts.
  const char* block(std::int64_t k, std::int64_t& o, int& w) const {
    std::int64_t width;
    const char* p = output_block(c, inner, B, k, o, width);
    w = int(width);
    return p;
  }
  // fn(t, p, o, w, lo, hi) for each task t in parallel: rows [lo, hi) of block t / parts.
  template <class F>
  void for_each_part(const F& fn) const {
    parallel_for(tasks * parts, grain, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t t = b; t < e; ++t) {
        std::int64_t o;
        int w;
        const char* p = block(t / parts, o, w);
        const std::int64_t lo = t % parts * rows;
        fn(t, p, o, w, lo, std::min(c.len, lo + rows));
      }
    });
  }
};

// run_strips' layout for the order-free reductions: blocks of up to 4 KiB of a row's accumulators,
// rows read in memory order and combined with no tree (the strips' pairwise loop ran integer
// column max at 0.5-0.65x NumPy). With fewer blocks than threads the rows are split too, and the
// parts combined after.
template <reduce_op Op, type_id T>
void run_free_columns(const reduce_call& c, std::int64_t inner, std::int64_t step) {
  using In = storage_t<T>;
  using Acc = acc_t<Op, T>;
  using Out = storage_t<reduce_result_type(Op, T)>;
  constexpr free_op f = *free_op_of<Op, T>();
  using A = free_acc_t<f, Acc>;
  constexpr std::int64_t B = 4096 / std::int64_t(sizeof(A));
  const column_split split(c, inner, B);
  const std::int64_t tasks = split.tasks, parts = split.parts;
  auto* out = reinterpret_cast<Out*>(c.out);
  auto store = [&](std::int64_t o, int w, const A* acc) {
    for (int j = 0; j < w; ++j) out[o + j] = finish<Op, Out>(static_cast<Acc>(acc[j]), c.len);
  };
  std::vector<A> partial(static_cast<std::size_t>(parts > 1 ? tasks * parts * B : 0));
  split.for_each_part(
      [&](std::int64_t t, const char* p, std::int64_t o, int w, std::int64_t lo, std::int64_t hi) {
        A local[B];
        A* acc = parts > 1 ? &partial[std::size_t(t * B)] : local;
        std::fill(acc, acc + w, free_identity<f, A>());
        free_rows<f, In>(p, step, lo, hi, w, acc);
        if (parts == 1) store(o, w, acc);
      });
  for (std::int64_t k = 0; parts > 1 && k < tasks; ++k) {
    std::int64_t o;
    int w;
    split.block(k, o, w);
    A* acc = &partial[std::size_t(k * parts * B)];
    for (std::int64_t q = 1; q < parts; ++q) {
      // One row of the parts' accumulators: the same combine as the rows'.
      free_rows<f, A>(reinterpret_cast<const char*>(acc + q * B), 0, 0, 1, w, acc);
    }
    store(o, w, acc);
  }
}

// The inputs run_arg_columns() and run_arg_transposed() take: numbers, whose arg_take() and
// arg_contiguous() vectorise.
template <class In>
constexpr bool arg_number = std::is_arithmetic_v<In> && !std::is_same_v<In, bool>;

// run_strips' layout for argmin and argmax: blocks of up to 1,024 of a row's outputs, rows read in
// order and each output's extreme and row kept (arg_rows). The per-output path read each column
// at a stride and left argmax(a, axis=0) at 0.1-0.3x NumPy. With fewer blocks than threads the
// rows are split too, and the parts taken in order.
template <reduce_op Op, type_id T, class I>
void run_arg_columns(const reduce_call& c, std::int64_t inner, std::int64_t step) {
  using In = storage_t<T>;
  constexpr bool Max = Op == reduce_op::argmax;
  constexpr std::int64_t B = 1024;
  const column_split split(c, inner, B);  // no part empty: each is seeded with its first row
  const std::int64_t tasks = split.tasks, parts = split.parts;
  auto* out = reinterpret_cast<std::int64_t*>(c.out);
  std::vector<In> part_best(static_cast<std::size_t>(parts > 1 ? tasks * parts * B : 0));
  std::vector<I> part_idx(part_best.size());
  split.for_each_part(
      [&](std::int64_t t, const char* p, std::int64_t o, int w, std::int64_t lo, std::int64_t hi) {
        In local_best[B];
        I local_idx[B];
        In* best = parts > 1 ? &part_best[std::size_t(t * B)] : local_best;
        I* idx = parts > 1 ? &part_idx[std::size_t(t * B)] : local_idx;
        std::memcpy(best, p + lo * step, std::size_t(w) * sizeof(In));
        std::fill(idx, idx + w, I(lo));
        arg_rows<Max>(p, step, lo + 1, hi, w, best, idx);
        if (parts == 1) std::copy(idx, idx + w, out + o);
      });
  for (std::int64_t k = 0; parts > 1 && k < tasks; ++k) {
    std::int64_t o;
    int w;
    split.block(k, o, w);
    In* best = &part_best[std::size_t(k * parts * B)];
    I* idx = &part_idx[std::size_t(k * parts * B)];
    for (std::int64_t q = 1; q < parts; ++q)
      for (int j = 0; j < w; ++j) arg_take<Max>(best[j], idx[j], best[q * B + j], idx[q * B + j]);
    std::copy(idx, idx + w, out + o);
  }
}

// argmin/argmax of all of a transposed matrix (two reduced dimensions, the outer one contiguous):
// each contiguous run searched by arg_contiguous, its index mapped back to C order, and the runs'
// results combined. The per-element path worked out every offset by division (0.1x NumPy).
template <reduce_op Op, type_id T>
bool run_arg_transposed(const reduce_call& c) {
  using In = storage_t<T>;
  using R = reducer_t<Op, acc_t<Op, T>>;
  if (c.red_ndim != 2 || c.n_out != 1 || c.in_types[0] != T || c.len < 2 ||
      c.red_strides[0][0] != std::int64_t(sizeof(In)))
    return false;
  const std::int64_t n0 = c.red_shape[0], n1 = c.red_shape[1], s1 = c.red_strides[0][1];
  const char* p = c.in[0];
  // Tasks of at least 2^15 elements, each combining its runs; then the tasks' results.
  const std::int64_t tasks =
      std::clamp<std::int64_t>(c.len >> 15, 1, std::min<std::int64_t>(n1, thread_count()));
  const auto first_of = [&](std::int64_t t) {  // task t's first run, without n1 * t
    return t * (n1 / tasks) + std::min(t, n1 % tasks);
  };
  std::vector<acc_t<Op, T>> found(static_cast<std::size_t>(tasks), R::identity());
  parallel_for(tasks, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t t = b; t < e; ++t)
      for (std::int64_t j = first_of(t); j < first_of(t + 1); ++j) {
        const auto* run = reinterpret_cast<const In*>(p + j * s1);
        auto a = arg_contiguous<Op == reduce_op::argmax>(run, 0, n0);
        a.index = a.index * n1 + j;
        found[std::size_t(t)] = R{}(found[std::size_t(t)], a);
      }
  });
  auto total = R::identity();
  for (const auto& a : found) total = R{}(total, a);
  *reinterpret_cast<std::int64_t*>(c.out) = total.index;
  return true;
}

// An order-free reduction of n contiguous values (free_contiguous in Op's accumulator).
template <reduce_op Op, type_id T>
acc_t<Op, T> free_total(const storage_t<T>* p, std::int64_t n) {
  constexpr free_op f = *free_op_of<Op, T>();
  return static_cast<acc_t<Op, T>>(
      free_contiguous<f, storage_t<T>, free_acc_t<f, acc_t<Op, T>>>(p, n));
}

// Outputs along a contiguous kept dimension, each reduced along a strided one (sum(a, axis=0) of a
// C-ordered matrix): W outputs at a time, each row's W elements loaded together, so the rows are
// read in order instead of a column at a time (13x NumPy's time at 2048^2 float32). Each output
// accumulates exactly as run()'s per-output path accumulates it (the same pairwise tree and
// chunks), so the result does not depend on the path. False where the layout is not that.
template <reduce_op Op, type_id T>
bool run_strips(const reduce_call& c) {
  using Acc = acc_t<Op, T>;
  using Out = storage_t<reduce_result_type(Op, T)>;
  using In = storage_t<T>;
  using R = reducer_t<Op, Acc>;
  constexpr auto item = std::int64_t(sizeof(In));
  if (c.red_ndim != 1 || c.out_ndim < 1 || c.in_types[0] != T || c.len < 2) return false;
  const int last = c.out_ndim - 1;
  const std::int64_t inner = c.out_shape[last], step = c.red_strides[0][0];
  if (c.out_strides[0][last] != item || inner < 2 || step == 0 || step == item) return false;
  if constexpr (is_arg_reduce(Op) && arg_number<In>) {
    if (c.len <= std::numeric_limits<std::int32_t>::max())
      run_arg_columns<Op, T, std::int32_t>(c, inner, step);
    else
      run_arg_columns<Op, T, std::int64_t>(c, inner, step);
    return true;
  }
  if constexpr (free_op_of<Op, T>().has_value()) {
    run_free_columns<Op, T>(c, inner, step);
    return true;
  }
  if constexpr (is_complex(T) && (Op == reduce_op::sum || Op == reduce_op::mean)) {
    // A complex sum adds its parts apart through the same tree: its columns are those of twice
    // as many floats, with the same bits (the strips ran complex64 at 0.8x NumPy).
    constexpr type_id F = T == type_id::complex64 ? type_id::float32 : type_id::float64;
    reduce_call parts = c;
    parts.n_out *= 2;
    parts.out_shape[last] *= 2;
    parts.out_strides[0][last] /= 2;
    if (run_columns<Op, F>(parts, 2 * inner, step)) return true;
  }
  if constexpr ((std::is_same_v<In, float> ||
                 std::is_same_v<In, double>)&&std::is_same_v<Acc, In> &&
                (Op == reduce_op::sum || Op == reduce_op::mean || Op == reduce_op::max ||
                 Op == reduce_op::min))
    if (run_columns<Op, T>(c, inner, step)) return true;
  constexpr int W = sizeof(Acc) >= 64 ? 1 : int(64 / sizeof(Acc));  // a cache line of results
  using S = strip<Acc, W>;
  const strip_reduce<R, Acc, W> r{};
  const std::int64_t per_row = (inner + W - 1) / W, strips = c.n_out / inner * per_row;
  const std::int64_t chunk = chunk_of_op(Op), chunks = (c.len + chunk - 1) / chunk;
  // Chunk q of strip k: rows [q * chunk, ...) of W outputs (fewer at the end of a row).
  auto part = [&](std::int64_t k, std::int64_t q) {
    std::int64_t o, w;
    const char* p = output_block(c, inner, W, k, o, w);
    auto get = [&](std::int64_t i) {
      S s;
      const In* row = reinterpret_cast<const In*>(p + i * step);
#if defined(__GNUC__)
      // Rows a page or more apart defeat the hardware prefetcher: ask for a later row's line.
      if (i + 8 < c.len) __builtin_prefetch(offset_of(p, (i + 8) * step));
#endif
      if (w == W) {
        for (int j = 0; j < W; ++j) s.v[j] = to_acc_value<Op, Acc>(load_direct(row + j), i);
      } else {
        s = decltype(r)::identity();
        for (int j = 0; j < w; ++j) s.v[j] = to_acc_value<Op, Acc>(load_direct(row + j), i);
      }
      return s;
    };
    const std::int64_t lo = q * chunk, n = std::min(chunk, c.len - q * chunk);
    return pairwise<S>(get, lo, n, r);
  };
  auto* out = reinterpret_cast<Out*>(c.out);
  auto store = [&](std::int64_t k, const S& acc) {
    std::int64_t o, w;
    output_block(c, inner, W, k, o, w);
    for (std::int64_t j = 0; j < w; ++j) out[o + j] = finish<Op, Out>(acc.v[j], c.len);
  };
  if (chunks <= 1) {
    const std::int64_t grain = std::max<std::int64_t>(1, chunk / 2 / (c.len * W));
    parallel_for(strips, grain, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t k = b; k < e; ++k) store(k, part(k, 0));
    });
    return true;
  }
  // Long columns: their chunks in parallel, then combined as run() combines them.
  std::vector<S> parts(static_cast<std::size_t>(strips * chunks));
  parallel_for(strips * chunks, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t t = b; t < e; ++t) parts[std::size_t(t)] = part(t / chunks, t % chunks);
  });
  for (std::int64_t k = 0; k < strips; ++k)
    store(k, pairwise<S>([&](std::int64_t q) { return parts[std::size_t(k * chunks + q)]; }, 0,
                         chunks, r));
  return true;
}

template <reduce_op Op, type_id T>
void run(const reduce_call& c) {
  using Acc = acc_t<Op, T>;
  using Out = storage_t<reduce_result_type(Op, T)>;
  using In = storage_t<T>;  // what loads convert to before accumulating
  using R = reducer_t<Op, Acc>;
  const R r{};
  auto* out = reinterpret_cast<Out*>(c.out);

  // The accumulation of output o over reduced elements [lo, lo + n).
  auto partial = [&](std::int64_t o, std::int64_t lo, std::int64_t n) -> Acc {
    const char* p0 = offset_of(c.in[0], out_offset(c, 0, o));
    if constexpr (Op == reduce_op::dot) {
      const char* p1 = offset_of(c.in[1], out_offset(c, 1, o));
      auto product = [&](const char* a, const char* b) -> Acc {
        return convert<Acc>(
            multiply_fn{}(load_any<In>(a, c.in_types[0]), load_any<In>(b, c.in_types[1])));
      };
      if (c.red_ndim <= 1) {
        const std::int64_t s0 = c.red_ndim ? c.red_strides[0][0] : 0;
        const std::int64_t s1 = c.red_ndim ? c.red_strides[1][0] : 0;
        if constexpr ((std::is_same_v<In, float> ||
                       std::is_same_v<In, double>)&&std::is_same_v<Acc, In>) {
          constexpr auto item = std::int64_t(sizeof(In));
          if (c.in_types[0] == T && c.in_types[1] == T && s0 == item && s1 == item)
            return pairwise_dot(reinterpret_cast<const In*>(p0) + lo,
                                reinterpret_cast<const In*>(p1) + lo, n);
        }
        return pairwise<Acc>([&](std::int64_t i) { return product(p0 + i * s0, p1 + i * s1); }, lo,
                             n, r);
      }
      return pairwise<Acc>(
          [&](std::int64_t i) {
            return product(p0 + red_offset(c, 0, i), p1 + red_offset(c, 1, i));
          },
          lo, n, r);
    } else if (c.red_ndim <= 1) {
      const std::int64_t s = c.red_ndim == 1 ? c.red_strides[0][0] : 0;
      if (s == std::int64_t(sizeof(In))) {  // contiguous
        const In* p = reinterpret_cast<const In*>(p0);
        if constexpr ((Op == reduce_op::max || Op == reduce_op::min) &&
                      (std::is_same_v<In, float> ||
                       std::is_same_v<In, double>)&&std::is_same_v<Acc, In>)
          return extreme_contiguous<Op == reduce_op::max>(p + lo, n);
        if constexpr ((Op == reduce_op::sum || Op == reduce_op::mean) &&
                      (std::is_same_v<In, float> ||
                       std::is_same_v<In, double>)&&std::is_same_v<Acc, In>)
          return pairwise_sum(p + lo, n);
        if constexpr (Op == reduce_op::sum && std::is_same_v<In, bool>)
          return bool_sum<Acc>(p + lo, n);
        else if constexpr (free_op_of<Op, T>().has_value() && Op != reduce_op::any &&
                           Op != reduce_op::all)
          return free_total<Op, T>(p + lo, n);
        if constexpr ((Op == reduce_op::any || Op == reduce_op::all) && (std::is_arithmetic_v<In>))
          return truth_contiguous<Op == reduce_op::all>(p + lo, n);
        if constexpr (is_arg_reduce(Op) && arg_number<In>)
          return arg_contiguous<Op == reduce_op::argmax>(p, lo, n);
        return pairwise<Acc>(
            [&](std::int64_t i) { return to_acc_value<Op, Acc>(load_direct(p + i), i); }, lo, n, r);
      }
      return pairwise<Acc>(
          [&](std::int64_t i) { return to_acc_value<Op, Acc>(load_at<In>(p0 + i * s), i); }, lo, n,
          r);
    } else {
      return pairwise<Acc>(
          [&](std::int64_t i) {
            return to_acc_value<Op, Acc>(load_at<In>(p0 + red_offset(c, 0, i)), i);
          },
          lo, n, r);
    }
  };

  if constexpr (Op != reduce_op::dot)
    if (run_strips<Op, T>(c)) return;
  if constexpr (is_arg_reduce(Op) && arg_number<In>)
    if (run_arg_transposed<Op, T>(c)) return;
  // Threads take outputs when there are enough of them, else the chunks of each.
  const std::int64_t chunk = chunk_of_op(Op);
  const std::int64_t chunks = (c.len + chunk - 1) / chunk;
  auto chunk_of = [&](std::int64_t o, std::int64_t k) {
    return partial(o, k * chunk, std::min(chunk, c.len - k * chunk));
  };
  auto whole = [&](std::int64_t o) {
    if (chunks <= 1) return partial(o, 0, c.len);
    return pairwise<Acc>([&](std::int64_t k) { return chunk_of(o, k); }, 0, chunks, r);
  };
  if (chunks <= 1 || c.n_out >= thread_count()) {
    const std::int64_t grain =
        std::max<std::int64_t>(1, chunk / 2 / std::max<std::int64_t>(c.len, 1));
    parallel_for(c.n_out, grain, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t o = b; o < e; ++o) out[o] = finish<Op, Out>(whole(o), c.len);
    });
    return;
  }
  // Few long outputs: the chunks of each in parallel, then combined as whole() combines them.
  const std::unique_ptr<Acc[]> parts(new Acc[static_cast<std::size_t>(chunks)]);  // Acc may be bool
  for (std::int64_t o = 0; o < c.n_out; ++o) {
    parallel_for(chunks, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t k = b; k < e; ++k) parts[k] = chunk_of(o, k);
    });
    out[o] = finish<Op, Out>(pairwise<Acc>([&](std::int64_t k) { return parts[k]; }, 0, chunks, r),
                             c.len);
  }
}

struct kernels {
  template <reduce_op Op, type_id T>
  static constexpr reduce_fn entry() {
    if constexpr (reduce_result_type(Op, T) != invalid_type)
      return &run<Op, T>;
    else
      return nullptr;
  }
};

}  // namespace

const reduce_table_t reduce_table =
    make_kernel_table<kernels, reduce_op, reduce_fn, reduce_op_count>();

}  // namespace arrayport::ops::cpu
