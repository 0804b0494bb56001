// CUDA reductions: public entry (the table) -> dispatch (CUB for a full reduction of contiguous
// data, else a segmented block reduction in one or two passes) -> kernels. Threads accumulate
// strided slices and blocks combine them as a tree (cub::BlockReduce), as cub::DeviceReduce does.
#include "ops/cuda/common.cuh"

#include "ops/kernels.hpp"

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>

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
  } else {
    return to_acc_value<Op, Acc>(load_any<In>(p0, a.in_types[0]), i);
  }
}

// Block b reduces chunk (b % chunks) of output (b / chunks); writes a partial or the result.
template <reduce_op Op, class In, class Acc, class Out, bool Final>
__global__ void segment_kernel(gpu_reduce_args a, std::int64_t chunks, std::int64_t chunk_len,
                               void* dst) {
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
      if constexpr (Final)
        static_cast<Out*>(dst)[o] = finish<Op, Out>(acc, a.len);
      else
        static_cast<Acc*>(dst)[b] = acc;
    }
    __syncthreads();  // temp is reused by the next iteration
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

template <reduce_op Op, class Acc, class Out>
__global__ void finish_kernel(const Acc* acc, std::int64_t len, Out* out) {
  *out = finish<Op, Out>(*acc, len);
}

// What cub loads for storage type In: a bool as its byte. Any nonzero byte is true, and a byte
// other than 0 or 1 copied as a bool has no defined value (a sum could count 2 for it).
template <class In>
using cub_load_t = std::conditional_t<std::is_same_v<In, bool>, std::uint8_t, In>;

template <class In, class Acc>
struct to_acc {
  __device__ Acc operator()(const cub_load_t<In>& x) const {
    if constexpr (std::is_same_v<In, bool>)
      return convert<Acc>(x != 0);
    else
      return convert<Acc>(load_direct(&x));
  }
};

// Element i of a contiguous reduction as an accumulator (argmin/argmax: (value, i)); fetch(k)
// loads the k-th 16-byte vector and each(x, k, f) passes its elements to f, in index order, for
// the vector kernels below.
template <reduce_op Op, class In, class Acc>
struct element_load {
  enum : int { V = vec_width<In> };  // elements a vector
  using chunk = vec<In, V>;
  const In* p;
  __device__ Acc operator()(std::int64_t i) const {
    return to_acc_value<Op, Acc>(load_direct(p + i), i);
  }
  __device__ chunk fetch(std::int64_t k) const { return reinterpret_cast<const chunk*>(p)[k]; }
  template <class F>
  __device__ void each(const chunk& x, std::int64_t k, const F& f) const {
#pragma unroll
    for (int j = 0; j < V; ++j) f(to_acc_value<Op, Acc>(load_direct(&x.v[j]), k * V + j));
  }
};

// dot over contiguous inputs of the result dtype: element i as the product x[i] * y[i].
template <class In, class Acc>
struct product_load {
  enum : int { V = vec_width<In> };  // elements a vector
  struct chunk {
    vec<In, V> a, b;
  };
  const In* x;
  const In* y;
  __device__ Acc operator()(std::int64_t i) const {
    return convert<Acc>(multiply_fn{}(load_direct(x + i), load_direct(y + i)));
  }
  __device__ chunk fetch(std::int64_t k) const {
    return {reinterpret_cast<const vec<In, V>*>(x)[k], reinterpret_cast<const vec<In, V>*>(y)[k]};
  }
  template <class F>
  __device__ void each(const chunk& c, std::int64_t, const F& f) const {
#pragma unroll
    for (int j = 0; j < V; ++j)
      f(convert<Acc>(multiply_fn{}(load_direct(&c.a.v[j]), load_direct(&c.b.v[j]))));
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

// A full reduction of contiguous, 16-byte aligned operands in two kernels: each block reduces
// its grid-stride share of vectors to one partial, then single_block_kernel the partials. (cub
// over a counting iterator loads one element at a time: argmin 0.96x PyTorch at 2^28.) A thread
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
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x, nvec = len / Load::V;
  std::int64_t k = tid;
  for (; k + stride < nvec; k += 2 * stride) {
    const auto x0 = load.fetch(k), x1 = load.fetch(k + stride);
    load.each(x0, k, add);
    load.each(x1, k + stride, add);
  }
  if (k < nvec) load.each(load.fetch(k), k, add);
  for (std::int64_t i = nvec * Load::V + tid; i < len; i += stride) acc = r(acc, load(i));
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

// A full reduction of `c.len` elements of `in`, each made an accumulator by `load`.
template <reduce_op Op, class Acc, class Out, class It, class Load>
void cub_full_reduce(It in, Load load, const reduce_call& c) {
  using R = reducer_t<Op, Acc>;
  const cudaStream_t stream = to_stream(c.stream);
  std::size_t temp_bytes = 0;
  ARRAYPORT_CUDA_CHECK(cub::DeviceReduce::TransformReduce(nullptr, temp_bytes, in,
                                                          static_cast<Acc*>(nullptr), c.len, R{},
                                                          load, R::identity(), stream));
  if constexpr (std::is_same_v<Acc, Out> && Op != reduce_op::mean) {
    // The accumulator is the result: cub writes it, no second kernel.
    scratch temp(temp_bytes, c.stream);
    ARRAYPORT_CUDA_CHECK(cub::DeviceReduce::TransformReduce(temp.p, temp_bytes, in,
                                                            reinterpret_cast<Out*>(c.out), c.len,
                                                            R{}, load, R::identity(), stream));
    return;
  }
  const std::size_t acc_offset = (temp_bytes + 255) / 256 * 256;
  scratch temp(acc_offset + sizeof(Acc), c.stream);
  Acc* acc = reinterpret_cast<Acc*>(static_cast<char*>(temp.p) + acc_offset);
  ARRAYPORT_CUDA_CHECK(cub::DeviceReduce::TransformReduce(temp.p, temp_bytes, in, acc, c.len, R{},
                                                          load, R::identity(), stream));
  finish_kernel<Op, Acc, Out><<<1, 1, 0, stream>>>(acc, c.len, reinterpret_cast<Out*>(c.out));
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
      const product_load<In, Acc> load{reinterpret_cast<const In*>(c.in[0]),
                                       reinterpret_cast<const In*>(c.in[1])};
      if (vector_aligned(load.x) && vector_aligned(load.y))
        vector_reduce<Op, Acc, Out>(load, c);
      else
        cub_full_reduce<Op, Acc, Out>(thrust::counting_iterator<std::int64_t>(0), load, c);
      return;
    }
  } else {
    if (c.contiguous && c.in_types[0] == T && c.len > 0) {
      const element_load<Op, In, Acc> load{reinterpret_cast<const In*>(c.in[0])};
      if (c.len <= single_block_max) {
        single_block_kernel<Op, Acc, Out>
            <<<1, block_threads, 0, stream>>>(load, c.len, c.len, reinterpret_cast<Out*>(c.out));
        runtime::check_launch("arrayport.ops reduction kernel launch");
      } else if constexpr (is_arg_reduce(Op)) {
        // A long full reduction: the vector kernels where the start is 16-byte aligned, else
        // cub::DeviceReduce (through the index for argmin/argmax).
        if (vector_aligned(load.p))
          vector_reduce<Op, Acc, Out>(load, c);
        else
          cub_full_reduce<Op, Acc, Out>(thrust::counting_iterator<std::int64_t>(0), load, c);
      } else {
        cub_full_reduce<Op, Acc, Out>(reinterpret_cast<const cub_load_t<In>*>(c.in[0]),
                                      to_acc<In, Acc>{}, c);
      }
      return;
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
  if (chunks == 1) {
    segment_kernel<Op, In, Acc, Out, true>
        <<<blocks, block_threads, 0, stream>>>(a, 1, chunk_len, c.out);
  } else {
    scratch partials(static_cast<std::size_t>(c.n_out * chunks) * sizeof(Acc), c.stream);
    segment_kernel<Op, In, Acc, Out, false>
        <<<blocks, block_threads, 0, stream>>>(a, chunks, chunk_len, partials.p);
    runtime::check_launch("arrayport.ops reduction kernel launch");
    const unsigned out_blocks = static_cast<unsigned>(c.n_out < (1 << 20) ? c.n_out : (1 << 20));
    combine_kernel<Op, Acc, Out><<<out_blocks, block_threads, 0, stream>>>(
        static_cast<const Acc*>(partials.p), c.n_out, chunks, c.len, reinterpret_cast<Out*>(c.out));
  }
  runtime::check_launch("arrayport.ops reduction kernel launch");
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
