// CUDA element-wise kernels: public entry (the table) -> dispatch (flat or strided, launch shape,
// error check) -> kernels. The flat kernel moves 16 bytes per operand per thread and iteration
// (vector loads), which is what a copy needs to approach HBM bandwidth; the strided kernel walks
// any collapsed layout with converting loads. Enqueued on the call's stream, never synchronised.
// Included by the two translation units that instantiate them (elementwise.cu,
// elementwise_more.cu).
#pragma once

#include "ops/cuda/common.cuh"

#include "ops/kernels.hpp"

#include <array>
#include <cstring>
#include <utility>

namespace arrayport::ops::cuda {
namespace {

struct gpu_operand {
  const char* data;  // nullptr: scalar
  type_id type;
  alignas(16) unsigned char scalar[16];
};

template <int N>
struct gpu_args {
  char* out;
  std::int64_t size;
  gpu_operand in[N > 0 ? N : 1];
  int ndim;
  std::int64_t shape[max_gpu_dims];
  std::int64_t strides[N + 1][max_gpu_dims];  // bytes; [0] the output
  bool aligned;  // flat path: every array 16-byte aligned and of its argument's storage type
};

template <class A>
__device__ inline compute_t<A> scalar_of(const gpu_operand& o) {
  A v;
  memcpy(&v, o.scalar, sizeof v);
  return load_direct(&v);
}

// E elements of A as vectors of at most 16 bytes, so that no access asks for more alignment than
// the flat path checks (a 64-byte struct could become one 256-bit access on newer chips).
template <class A, int E>
struct lanes {
  static constexpr int W = E * int(sizeof(A)) > 16 ? int(16 / sizeof(A)) : E;
  static_assert(E % W == 0, "lanes: whole vectors");
  vec<A, W> part[E / W];
  __device__ A& operator[](int e) { return part[e / W].v[e % W]; }
  __device__ const A& operator[](int e) const { return part[e / W].v[e % W]; }
  __device__ static lanes load(const A* p, std::int64_t k) {  // elements [k E, (k + 1) E)
    lanes r;
    const auto* q = reinterpret_cast<const vec<A, W>*>(p) + k * (E / W);
#pragma unroll
    for (int c = 0; c < E / W; ++c) r.part[c] = q[c];
    return r;
  }
  __device__ void store(A* p, std::int64_t k) const {
    auto* q = reinterpret_cast<vec<A, W>*>(p) + k * (E / W);
#pragma unroll
    for (int c = 0; c < E / W; ++c) q[c] = part[c];
  }
};

// Operand I's k-th group of E elements (a scalar repeated), of its argument's storage type.
template <op_id Op, int I, class S, int E, int N>
__device__ inline lanes<arg_storage_t<Op, I, S>, E> lanes_get(const gpu_args<N>& a,
                                                              std::int64_t k) {
  using A = arg_storage_t<Op, I, S>;
  const gpu_operand& o = a.in[I];
  if (o.data) return lanes<A, E>::load(reinterpret_cast<const A*>(o.data), k);
  lanes<A, E> r;
#pragma unroll
  for (int j = 0; j < E; ++j) memcpy(&r[j], o.scalar, sizeof(A));
  return r;
}

template <class O, int E, class F, class... Ls>
__device__ inline void store_lanes(const F& f, O* out, std::int64_t k, const Ls&... in) {
  lanes<O, E> r;
#pragma unroll
  for (int j = 0; j < E; ++j) r[j] = convert<O>(f(load_direct(&in[j])...));
  r.store(out, k);
}

// 16-byte vectors of S a thread and step, adjacent in memory. More than one where the result is
// narrower than S (a bool of float32: 4-byte stores ran at 0.93x PyTorch on an H200, 8-byte
// ones at 1.0x) and for power, whose arithmetic bounds it there (0.88x -> 1.0x at 2^28).
template <op_id Op, class S>
constexpr int vectors_per_step() {
  using O = result_storage_t<Op, S>;
  if constexpr (Op == op_id::power) {
    return 4;
  } else if constexpr (sizeof(O) < sizeof(S)) {
    constexpr int u = 8 / (vec_width<S> * int(sizeof(O)));
    return u < 1 ? 1 : u > 4 ? 4 : u;
  } else {
    return 1;
  }
}

// Threads a block of the flat kernel: 128 for the float32 transcendental functions, with which
// sin/cos/log went from 0.98-0.99x to 1.00x PyTorch at 2^28 on an H200 (docs/benchmarks.md).
template <op_id Op, class S>
constexpr int flat_block_threads() {
  constexpr bool transcendental = Op == op_id::exp || Op == op_id::log || Op == op_id::sin ||
                                  Op == op_id::cos || Op == op_id::tanh;
  return transcendental && std::is_same_v<S, float> ? 128 : block_threads;
}

template <op_id Op, int I, class S, int N>
__device__ inline compute_t<arg_storage_t<Op, I, S>> flat_get(const gpu_args<N>& a,
                                                              std::int64_t i) {
  using A = arg_storage_t<Op, I, S>;
  const gpu_operand& o = a.in[I];
  if (o.data) return load_direct(reinterpret_cast<const A*>(o.data) + i);
  return scalar_of<A>(o);
}

// Arrays: every operand is an array, so the vector loop need not test for scalars.
template <op_id Op, class S, bool Arrays, class F, std::size_t... I>
__global__ void flat_kernel(F f, gpu_args<sizeof...(I)> a, std::index_sequence<I...>) {
  using O = result_storage_t<Op, S>;
  constexpr int E = vec_width<S> * vectors_per_step<Op, S>();
  O* out = reinterpret_cast<O*>(a.out);
  const std::int64_t tid = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  std::int64_t tail = 0;
  if (a.aligned) {  // E elements of S a step (where's condition: E bools)
    const std::int64_t groups = a.size / E;
    for (std::int64_t k = tid; k < groups; k += stride) {
      if constexpr (Arrays)
        store_lanes<O, E>(
            f, out, k,
            lanes<arg_storage_t<Op, int(I), S>, E>::load(
                reinterpret_cast<const arg_storage_t<Op, int(I), S>*>(a.in[I].data), k)...);
      else
        store_lanes<O, E>(f, out, k, lanes_get<Op, int(I), S, E>(a, k)...);
    }
    tail = groups * E;
  }
  for (std::int64_t i = tail + tid; i < a.size; i += stride)
    out[i] = convert<O>(f(flat_get<Op, int(I), S>(a, i)...));
}

template <op_id Op, int I, class S, int N>
__device__ inline compute_t<arg_storage_t<Op, I, S>> strided_get(const gpu_args<N>& a,
                                                                 const std::int64_t* off) {
  using A = arg_storage_t<Op, I, S>;
  const gpu_operand& o = a.in[I];
  if (!o.data) return scalar_of<A>(o);
  return load_any<A>(o.data + off[I + 1], o.type);
}

template <op_id Op, class S, class F, std::size_t... I>
__global__ void strided_kernel(F f, gpu_args<sizeof...(I)> a, std::index_sequence<I...>) {
  using O = result_storage_t<Op, S>;
  constexpr int N = sizeof...(I);
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < a.size;
       i += stride) {
    std::int64_t off[N + 1] = {};
    if (a.ndim == 1) {  // no 64-bit division (tens of instructions) for the common 1-d walk
#pragma unroll
      for (int k = 0; k <= N; ++k) off[k] = i * a.strides[k][0];
    } else {
      std::int64_t rest = i;
      for (int d = a.ndim - 1; d >= 0; --d) {
        const std::int64_t x = rest % a.shape[d];
        rest /= a.shape[d];
#pragma unroll
        for (int k = 0; k <= N; ++k) off[k] += x * a.strides[k][d];
      }
    }
    *reinterpret_cast<O*>(a.out + off[0]) = convert<O>(f(strided_get<Op, int(I), S>(a, off)...));
  }
}

// astype over contiguous memory: V elements a thread and step, loaded as one vector of the
// narrower dtype's 16 bytes (the strided kernel would ask each element which load applies).
template <class In, class Out, int V>
__global__ void convert_kernel(const In* in, Out* out, std::int64_t size, bool aligned) {
  const std::int64_t tid = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  std::int64_t tail = 0;
  if (aligned) {
    const std::int64_t nvec = size / V;
    for (std::int64_t k = tid; k < nvec; k += stride) {
      const vec<In, V> x = reinterpret_cast<const vec<In, V>*>(in)[k];
      vec<Out, V> r;
#pragma unroll
      for (int j = 0; j < V; ++j) r.v[j] = convert<Out>(load_direct(&x.v[j]));
      reinterpret_cast<vec<Out, V>*>(out)[k] = r;
    }
    tail = nvec * V;
  }
  for (std::int64_t i = tail + tid; i < size; i += stride)
    out[i] = convert<Out>(load_direct(in + i));
}

template <class S>
bool convert_contiguous(const ew_call& c, cudaStream_t stream) {
  if (!is_contiguous_conversion(c, sizeof(S))) return false;
  const auto launch = [&](auto tag) {
    using In = typename decltype(tag)::type;
    constexpr int V = vec_width<std::conditional_t<(sizeof(In) < sizeof(S)), In, S>>;
    const bool aligned = reinterpret_cast<std::uintptr_t>(c.in[0].data) % sizeof(vec<In, V>) == 0 &&
                         reinterpret_cast<std::uintptr_t>(c.out) % sizeof(vec<S, V>) == 0;
    convert_kernel<In, S, V><<<grid_for((c.size + V - 1) / V), block_threads, 0, stream>>>(
        reinterpret_cast<const In*>(c.in[0].data), reinterpret_cast<S*>(c.out), c.size, aligned);
    return true;
  };
  return visit_storage(c.in[0].type, launch, false);
}

// Dispatch: packs the call into by-value parameters and picks the kernel.
template <op_id Op, type_id T>
void run(const ew_call& c) {
  using S = storage_t<T>;
  constexpr int N = arity(Op);
  const cudaStream_t stream = to_stream(c.stream);
  if constexpr (Op == op_id::copy) {
    if (!c.flat && convert_contiguous<S>(c, stream)) {
      runtime::check_launch("arrayport.ops astype kernel launch");
      return;
    }
  }
  const auto f = make_functor<Op, S>(c.params);
  gpu_args<N> a{};
  a.out = c.out;
  a.size = c.size;
  bool aligned = vector_aligned(c.out);
  for (int k = 0; k < N; ++k) {
    a.in[k].data = c.in[k].data;
    a.in[k].type = c.in[k].type;
    std::memcpy(a.in[k].scalar, c.in[k].scalar, sizeof a.in[k].scalar);
    if (c.in[k].data && !vector_aligned(c.in[k].data)) aligned = false;
  }
  a.aligned = aligned;
  if (c.flat) {
    constexpr int E = vec_width<S> * vectors_per_step<Op, S>();
    constexpr int B = flat_block_threads<Op, S>();
    const unsigned grid = grid_for((c.size + E - 1) / E, B);
    // power of two arrays has a kernel without the scalar test: faster for it, slower for other
    // ops and for scalar exponents (docs/benchmarks.md, "Tuning constants of arrayport.ops").
    if constexpr (Op == op_id::power) {
      if (c.in[0].data && c.in[1].data) {
        flat_kernel<Op, S, true><<<grid, B, 0, stream>>>(f, a, std::make_index_sequence<N>{});
        runtime::check_launch("arrayport.ops element-wise kernel launch");
        return;
      }
    }
    flat_kernel<Op, S, false><<<grid, B, 0, stream>>>(f, a, std::make_index_sequence<N>{});
  } else {
    require_dims(c.layout.ndim, "arrayport.ops");
    a.ndim = c.layout.ndim;
    for (int d = 0; d < a.ndim; ++d) {
      a.shape[d] = c.layout.shape[d];
      for (int k = 0; k <= N; ++k) a.strides[k][d] = c.layout.strides[k][d];
    }
    strided_kernel<Op, S>
        <<<grid_for(c.size), block_threads, 0, stream>>>(f, a, std::make_index_sequence<N>{});
  }
  runtime::check_launch("arrayport.ops element-wise kernel launch");
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
}  // namespace arrayport::ops::cuda
