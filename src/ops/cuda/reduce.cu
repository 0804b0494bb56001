// CUDA reductions: public entry (the table) -> dispatch (one block, or the two vector kernels, for
// a full reduction of contiguous data; else a segmented block reduction in one or two passes) ->
// kernels. Threads accumulate strided slices and blocks combine them as a tree (cub::BlockReduce).
#include "ops/cuda/common.cuh"

#include "ops/kernels.hpp"

#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace arrayport::ops::cuda {
namespace {

struct gpu_reduce_args {
  const char* in[2];
  type_id in_types[2];
  std::int64_t n_out, len;
  int out_ndim, red_ndim;
  std::int64_t out_shape[max_gpu_dims], out_strides[2][max_gpu_dims];
  std::int64_t red_shape[max_gpu_dims], red_strides[2][max_gpu_dims];
};

__device__ inline std::int64_t offset_of(std::int64_t i, int nd, const std::int64_t* shape,
                                         const std::int64_t* strides) {
  std::int64_t off = 0;
  for (int d = nd - 1; d >= 0; --d) {
    off += (i % shape[d]) * strides[d];
    i /= shape[d];
  }
  return off;
}

// Element i of output o's reduction, converted to the accumulator.
template <reduce_op Op, class In, class Acc>
__device__ inline Acc reduce_load(const gpu_reduce_args& a, std::int64_t o, std::int64_t i) {
  const char* p0 = a.in[0] + offset_of(o, a.out_ndim, a.out_shape, a.out_strides[0]) +
                   offset_of(i, a.red_ndim, a.red_shape, a.red_strides[0]);
  if constexpr (Op == reduce_op::dot) {
    const char* p1 = a.in[1] + offset_of(o, a.out_ndim, a.out_shape, a.out_strides[1]) +
                     offset_of(i, a.red_ndim, a.red_shape, a.red_strides[1]);
    return convert<Acc>(
        multiply_fn{}(load_any<In>(p0, a.in_types[0]), load_any<In>(p1, a.in_types[1])));
  } else {  // every other reduction's entry is that of its input's dtype: nothing to convert
    return to_acc_value<Op, Acc>(load_direct(reinterpret_cast<const In*>(p0)), i);
  }
}

// Block b reduces chunk (b % chunks) of output (b / chunks); writes the result (final) or a
// partial. final is a parameter, not a template argument: one instance instead of two.
template <reduce_op Op, class In, class Acc, class Out>
__global__ void segment_kernel(gpu_reduce_args a, std::int64_t chunks, std::int64_t chunk_len,
                               bool final, void* dst) {
  using R = reducer_t<Op, Acc>;
  using block_reduce = cub::BlockReduce<Acc, block_threads>;
  __shared__ typename block_reduce::TempStorage temp;
  const R r{};
  for (std::int64_t b = blockIdx.x; b < a.n_out * chunks; b += gridDim.x) {
    const std::int64_t o = b / chunks, c = b % chunks;
    const std::int64_t lo = c * chunk_len;
    const std::int64_t hi = lo + chunk_len < a.len ? lo + chunk_len : a.len;
    Acc acc = R::identity();
    for (std::int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x)
      acc = r(acc, reduce_load<Op, In, Acc>(a, o, i));
    acc = block_reduce(temp).Reduce(acc, r);
    if (threadIdx.x == 0) {
      if (final)
        static_cast<Out*>(dst)[o] = finish<Op, Out>(acc, a.len);
      else
        static_cast<Acc*>(dst)[b] = acc;
    }
    __syncthreads();  // temp is reused by the next iteration
  }
}

// Outputs side by side in memory, each reduced along one strided axis (sum(a, axis=0) of a
// C-ordered matrix): a block takes 32 neighbouring outputs (threadIdx.x, so that a warp reads 32
// neighbours of a row at once) and rows [chunk * chunk_len, ...) split over threadIdx.y, combined
// through shared memory. One block per output read a column a row at a time: 6x PyTorch's time.
template <reduce_op Op, class In, class Acc, class Out>
__global__ void column_kernel(gpu_reduce_args a, std::int64_t chunks, std::int64_t chunk_len,
                              bool final, void* dst) {
  using R = reducer_t<Op, Acc>;
  constexpr int rows = block_threads / 32;
  __shared__ alignas(Acc) unsigned char raw[sizeof(Acc) * rows * 32];  // Acc may have a ctor
  Acc* part = reinterpret_cast<Acc*>(raw);
  const R r{};
  const std::int64_t tiles = (a.n_out + 31) / 32, step = a.red_strides[0][0];
  for (std::int64_t b = blockIdx.x; b < tiles * chunks; b += gridDim.x) {
    const std::int64_t o = b / chunks * 32 + threadIdx.x, c = b % chunks;
    const std::int64_t lo = c * chunk_len;
    const std::int64_t hi = lo + chunk_len < a.len ? lo + chunk_len : a.len;
    Acc acc = R::identity();
    if (o < a.n_out) {
      const char* p = a.in[0] + offset_of(o, a.out_ndim, a.out_shape, a.out_strides[0]);
      for (std::int64_t i = lo + threadIdx.y; i < hi; i += rows)
        acc = r(acc,
                to_acc_value<Op, Acc>(load_direct(reinterpret_cast<const In*>(p + i * step)), i));
    }
    part[threadIdx.y * 32 + threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && o < a.n_out) {
      for (int y = 1; y < rows; ++y) acc = r(acc, part[y * 32 + threadIdx.x]);
      if (final)
        static_cast<Out*>(dst)[o] = finish<Op, Out>(acc, a.len);
      else
        static_cast<Acc*>(dst)[o * chunks + c] = acc;
    }
    __syncthreads();  // part is reused by the next iteration
  }
}

// Second pass: output o from its `chunks` partials.
template <reduce_op Op, class Acc, class Out>
__global__ void combine_kernel(const Acc* partials, std::int64_t n_out, std::int64_t chunks,
                               std::int64_t len, Out* out) {
  using R = reducer_t<Op, Acc>;
  using block_reduce = cub::BlockReduce<Acc, block_threads>;
  __shared__ typename block_reduce::TempStorage temp;
  const R r{};
  for (std::int64_t o = blockIdx.x; o < n_out; o += gridDim.x) {
    Acc acc = R::identity();
    for (std::int64_t k = threadIdx.x; k < chunks; k += blockDim.x)
      acc = r(acc, partials[o * chunks + k]);
    acc = block_reduce(temp).Reduce(acc, r);
    if (threadIdx.x == 0) out[o] = finish<Op, Out>(acc, len);
    __syncthreads();
  }
}

// A bool is read as its byte: any nonzero byte is true, and a byte other than 0 or 1 read as a
// bool has no defined value (a sum could count 2 for it).
template <class In>
using load_t = std::conditional_t<std::is_same_v<In, bool>, std::uint8_t, In>;

template <reduce_op Op, class In, class Acc>
__device__ inline Acc element_value(const load_t<In>& x, std::int64_t i) {
  if constexpr (std::is_same_v<In, bool>)
    return to_acc_value<Op, Acc>(x != 0, i);
  else
    return to_acc_value<Op, Acc>(load_direct(&x), i);
}

// V elements of S read as one access: a 16-byte vector, or the element alone where V is 1.
template <class S, int V>
using chunk_t = std::conditional_t<V == 1, S, vec<S, V>>;

template <class S, int V>
__device__ inline const S& lane(const chunk_t<S, V>& x, int j) {
  if constexpr (V == 1)
    return x;
  else
    return x.v[j];
}

// Elements of S before the first 16-byte boundary at or after p (at most len), or -1 where
// that boundary falls inside an element, so that no vector can start there.
template <class S>
std::int64_t head_of(const void* p, std::int64_t len) {
  const auto gap = std::int64_t((16 - reinterpret_cast<std::uintptr_t>(p) % 16) % 16);
  if (gap % std::int64_t(sizeof(S)) != 0) return -1;
  return std::min<std::int64_t>(len, gap / std::int64_t(sizeof(S)));
}

// Element i of a contiguous reduction as an accumulator (argmin/argmax: (value, i)). fetch(k)
// loads the k-th chunk of V elements from element first() on (a 16-byte boundary), and each(x,
// k, f) passes its elements to f in index order, for the vector kernels below. Peel: the start
// may precede that boundary by `head` elements. argmin/argmax keep Peel off (vectors only from a
// 16-byte aligned start): with it, 253 -> 324 us at 2^28 float32 on an H200.
template <reduce_op Op, class In, class Acc, int Width = vec_width<load_t<In>>, bool Peel = true>
struct element_load {
  using S = load_t<In>;
  enum : int { V = Width };
  using chunk = chunk_t<S, V>;
  const S* p;
  std::int64_t head;
  __device__ std::int64_t first() const {
    if constexpr (Peel)
      return head;
    else
      return 0;
  }
  __device__ Acc operator()(std::int64_t i) const { return element_value<Op, In, Acc>(p[i], i); }
  __device__ chunk fetch(std::int64_t k) const {
    return reinterpret_cast<const chunk*>(p + first())[k];
  }
  template <class F>
  __device__ void each(const chunk& x, std::int64_t k, const F& f) const {
#pragma unroll
    for (int j = 0; j < V; ++j)
      f(element_value<Op, In, Acc>(lane<S, V>(x, j), first() + k * V + j));
  }
};

// dot over contiguous inputs of the result dtype: element i as the product x[i] * y[i]; vectors
// only from a 16-byte aligned start of both (peeled, 484 -> 495 us at 2^28 on an H200).
template <class In, class Acc, int Width = vec_width<In>>
struct product_load {
  enum : int { V = Width };
  struct chunk {
    chunk_t<In, V> a, b;
  };
  const In* x;
  const In* y;
  __device__ static constexpr std::int64_t first() { return 0; }
  __device__ Acc operator()(std::int64_t i) const {
    return convert<Acc>(multiply_fn{}(load_direct(x + i), load_direct(y + i)));
  }
  __device__ chunk fetch(std::int64_t k) const {
    return {reinterpret_cast<const chunk_t<In, V>*>(x)[k],
            reinterpret_cast<const chunk_t<In, V>*>(y)[k]};
  }
  template <class F>
  __device__ void each(const chunk& c, std::int64_t, const F& f) const {
#pragma unroll
    for (int j = 0; j < V; ++j)
      f(convert<Acc>(
          multiply_fn{}(load_direct(&lane<In, V>(c.a, j)), load_direct(&lane<In, V>(c.b, j)))));
  }
};

template <class Acc>
struct partial_load {
  const Acc* p;
  __device__ Acc operator()(std::int64_t i) const { return p[i]; }
};

// One block reduces get(i), i in [0, n), to the result of a reduction of len elements: a small
// full reduction (one launch, no scratch memory), or the partials of vector_partial_kernel.
inline constexpr std::int64_t single_block_max = std::int64_t(1) << 14;

template <reduce_op Op, class Acc, class Out, class Get>
__global__ void single_block_kernel(Get get, std::int64_t n, std::int64_t len, Out* out) {
  using R = reducer_t<Op, Acc>;
  using block_reduce = cub::BlockReduce<Acc, block_threads>;
  __shared__ typename block_reduce::TempStorage temp;
  const R r{};
  Acc acc = R::identity();
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) acc = r(acc, get(i));
  acc = block_reduce(temp).Reduce(acc, r);
  if (threadIdx.x == 0) *out = finish<Op, Out>(acc, len);
}

// A full reduction of contiguous operands in two kernels: each block reduces its grid-stride
// share of 16-byte vectors (from the first 16-byte boundary; the elements before it and after
// the last whole vector one at a time) to one partial, then single_block_kernel the partials.
// It replaced cub::DeviceReduce, whose instances took half of this file's compile time. A thread
// has two vectors in flight, and argmin/argmax take its elements in index order (step(), fewer
// tests than the general combination): 0.97x -> 1.01x CuPy at 2^28 float32 on an H200.
// Their reducer breaks ties by index, so the order of combination cannot change the answer.
inline constexpr int vector_partial_blocks = 1024;

template <reduce_op Op, class Acc, class Load>
__global__ void vector_partial_kernel(Load load, std::int64_t len, Acc* partial) {
  using R = reducer_t<Op, Acc>;
  using block_reduce = cub::BlockReduce<Acc, block_threads>;
  __shared__ typename block_reduce::TempStorage temp;
  const R r{};
  Acc acc = R::identity();
  const auto add = [&](Acc v) {
    if constexpr (is_arg_reduce(Op))
      r.step(acc, v);
    else
      acc = r(acc, v);
  };
  const std::int64_t tid = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  const std::int64_t head = load.first(), nvec = (len - head) / Load::V;
  std::int64_t k = tid;
  for (; k + stride < nvec; k += 2 * stride) {
    const auto x0 = load.fetch(k), x1 = load.fetch(k + stride);
    load.each(x0, k, add);
    load.each(x1, k + stride, add);
  }
  if (k < nvec) load.each(load.fetch(k), k, add);
  for (std::int64_t i = tid; i < head; i += stride) acc = r(acc, load(i));
  for (std::int64_t i = head + nvec * Load::V + tid; i < len; i += stride) acc = r(acc, load(i));
  acc = block_reduce(temp).Reduce(acc, r);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// Scratch memory on the stream, released in stream order.
struct scratch {
  void* p = nullptr;
  stream_handle s;
  scratch(std::size_t bytes, stream_handle stream) : s(stream) {
    p = runtime::malloc_device_async(bytes, runtime::get_device(), stream);
  }
  ~scratch() { runtime::free_device_async(p, s); }
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;
};

template <reduce_op Op, class Acc, class Out, class Load>
void vector_reduce(const Load& load, const reduce_call& c) {
  const cudaStream_t stream = to_stream(c.stream);
  const auto blocks = static_cast<int>(
      std::min<std::int64_t>(vector_partial_blocks, grid_for(c.len / Load::V + 1)));
  scratch partial(sizeof(Acc) * std::size_t(blocks), c.stream);
  Acc* acc = static_cast<Acc*>(partial.p);
  vector_partial_kernel<Op, Acc><<<blocks, block_threads, 0, stream>>>(load, c.len, acc);
  single_block_kernel<Op, Acc, Out><<<1, block_threads, 0, stream>>>(
      partial_load<Acc>{acc}, blocks, c.len, reinterpret_cast<Out*>(c.out));
  runtime::check_launch("arrayport.ops reduction kernel launch");
}

// A first pass `launch(final, dst)` over `chunks` chunks of each output: with one chunk it writes
// the results (final), else partials in scratch memory that combine_kernel finishes.
template <reduce_op Op, class Acc, class Out, class Launch>
void in_chunks(const reduce_call& c, std::int64_t chunks, const Launch& launch) {
  if (chunks == 1) {
    launch(true, c.out);
  } else {
    scratch partials(static_cast<std::size_t>(c.n_out * chunks) * sizeof(Acc), c.stream);
    launch(false, partials.p);
    runtime::check_launch("arrayport.ops reduction kernel launch");
    const unsigned out_blocks = static_cast<unsigned>(c.n_out < (1 << 20) ? c.n_out : (1 << 20));
    combine_kernel<Op, Acc, Out><<<out_blocks, block_threads, 0, to_stream(c.stream)>>>(
        static_cast<const Acc*>(partials.p), c.n_out, chunks, c.len, reinterpret_cast<Out*>(c.out));
  }
  runtime::check_launch("arrayport.ops reduction kernel launch");
}

template <reduce_op Op, type_id T>
void run(const reduce_call& c) {
  using Acc = acc_t<Op, T>;
  using Out = storage_t<reduce_result_type(Op, T)>;
  using In = storage_t<T>;
  const cudaStream_t stream = to_stream(c.stream);

  if constexpr (Op == reduce_op::dot) {
    constexpr auto item = std::int64_t(sizeof(In));
    if (c.n_out == 1 && c.red_ndim == 1 && c.in_types[0] == T && c.in_types[1] == T &&
        c.red_strides[0][0] == item && c.red_strides[1][0] == item) {
      const auto* x = reinterpret_cast<const In*>(c.in[0]);
      const auto* y = reinterpret_cast<const In*>(c.in[1]);
      if (vector_aligned(x) && vector_aligned(y))
        vector_reduce<Op, Acc, Out>(product_load<In, Acc>{x, y}, c);
      else
        vector_reduce<Op, Acc, Out>(product_load<In, Acc, 1>{x, y}, c);
      return;
    }
  } else {
    if (c.contiguous && c.in_types[0] == T && c.len > 0) {
      const auto* p = reinterpret_cast<const load_t<In>*>(c.in[0]);
      if (c.len <= single_block_max) {
        single_block_kernel<Op, Acc, Out><<<1, block_threads, 0, stream>>>(
            element_load<Op, In, Acc>{p, 0}, c.len, c.len, reinterpret_cast<Out*>(c.out));
        runtime::check_launch("arrayport.ops reduction kernel launch");
        return;
      }
      // argmin/argmax: vectors only from an aligned start, unpeeled (see element_load), else
      // one element at a time. The others peel up to the first 16-byte boundary; elements not
      // aligned to their size (rare) take the general kernel below, one instance fewer.
      constexpr bool peel = !is_arg_reduce(Op);
      using vectors = element_load<Op, In, Acc, vec_width<load_t<In>>, peel>;
      if constexpr (peel) {
        const std::int64_t head = head_of<load_t<In>>(p, c.len);
        if (head >= 0) return vector_reduce<Op, Acc, Out>(vectors{p, head}, c);
      } else {
        if (vector_aligned(p)) return vector_reduce<Op, Acc, Out>(vectors{p, 0}, c);
        return vector_reduce<Op, Acc, Out>(element_load<Op, In, Acc, 1>{p, 0}, c);
      }
    }
  }
  require_dims(c.out_ndim, "arrayport.ops reduction");
  require_dims(c.red_ndim, "arrayport.ops reduction");
  gpu_reduce_args a{};
  for (int k = 0; k < 2; ++k) {
    a.in[k] = c.in[k];
    a.in_types[k] = c.in_types[k];
  }
  a.n_out = c.n_out;
  a.len = c.len;
  a.out_ndim = c.out_ndim;
  a.red_ndim = c.red_ndim;
  for (int d = 0; d < c.out_ndim; ++d) {
    a.out_shape[d] = c.out_shape[d];
    for (int k = 0; k < 2; ++k) a.out_strides[k][d] = c.out_strides[k][d];
  }
  for (int d = 0; d < c.red_ndim; ++d) {
    a.red_shape[d] = c.red_shape[d];
    for (int k = 0; k < 2; ++k) a.red_strides[k][d] = c.red_strides[k][d];
  }
  if constexpr (Op != reduce_op::dot) {
    constexpr auto item = std::int64_t(sizeof(In));
    const int last = c.out_ndim - 1;
    if (c.red_ndim == 1 && last >= 0 && c.in_types[0] == T && c.out_strides[0][last] == item &&
        c.out_shape[last] >= 32 && c.red_strides[0][0] != item && c.len > 0) {
      // Enough blocks to fill the GPU: the rows split into chunks where outputs are few.
      const std::int64_t tiles = (c.n_out + 31) / 32;
      std::int64_t chunks = tiles >= 1024 ? 1 : (1024 + tiles - 1) / tiles;
      chunks = std::min<std::int64_t>({chunks, (c.len + 255) / 256, 64});
      const std::int64_t chunk_len = (c.len + chunks - 1) / chunks;
      const unsigned blocks =
          static_cast<unsigned>(std::min<std::int64_t>(tiles * chunks, std::int64_t(1) << 20));
      const dim3 threads(32, block_threads / 32);
      return in_chunks<Op, Acc, Out>(c, chunks, [&](bool final, void* dst) {
        column_kernel<Op, In, Acc, Out>
            <<<blocks, threads, 0, stream>>>(a, chunks, chunk_len, final, dst);
      });
    }
  }
  // Few outputs with long reductions: split each into chunks (pass 1) and combine (pass 2).
  std::int64_t chunks = 1;
  if (c.n_out < 1024 && c.len > 65536) {
    chunks = (c.len + 65535) / 65536;
    const std::int64_t cap = 2048 / c.n_out > 1 ? 2048 / c.n_out : 1;
    if (chunks > cap) chunks = cap;
  }
  const std::int64_t chunk_len = (c.len + chunks - 1) / chunks;
  const unsigned blocks =
      static_cast<unsigned>(c.n_out * chunks < (1 << 20) ? c.n_out * chunks : (1 << 20));
  in_chunks<Op, Acc, Out>(c, chunks, [&](bool final, void* dst) {
    segment_kernel<Op, In, Acc, Out>
        <<<blocks, block_threads, 0, stream>>>(a, chunks, chunk_len, final, dst);
  });
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

}  // namespace arrayport::ops::cuda
