// Shared pieces of the CUDA kernels of arrayport.ops: the by-value launch parameters and loads.
#pragma once

#include "ops/elementwise.hpp"
#include "ops/reduce.hpp"

#include <arrayport/error.hpp>
#include <arrayport/runtime.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace arrayport::ops::cuda {

/// Dimensions a GPU kernel walks after collapsing (the parameters travel by value, so bounded).
inline constexpr int max_gpu_dims = 12;
inline constexpr int block_threads = 256;

inline cudaStream_t to_stream(stream_handle s) { return static_cast<cudaStream_t>(s); }

/// V elements of A loaded or stored as one (16-byte) access.
template <class A, int V>
struct alignas(sizeof(A) * V) vec {
  A v[V];
};

/// Whether p may be read or written a 16-byte vector at a time.
inline bool vector_aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

/// Elements per 16-byte vector of S (1 for 16-byte complex128).
template <class S>
inline constexpr int vec_width = sizeof(S) >= 16 ? 1 : int(16 / sizeof(S));

/// Blocks of `threads` for `work` threads of work, capped so a grid-stride loop covers the rest.
inline unsigned grid_for(std::int64_t work, int threads = block_threads) {
  const std::int64_t blocks = (work + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > (1 << 20) ? (1 << 20) : blocks);
}

inline void require_dims(int ndim, const char* what) {
  if (ndim > max_gpu_dims)
    throw value_error(std::string(what) + ": " + std::to_string(ndim) +
                      " non-contiguous dimensions remain after collapsing; the GPU kernels "
                      "handle at most " +
                      std::to_string(max_gpu_dims) + " (make the input contiguous first)");
}

/// Loads element `p` of dtype `t` as the compute type of A: direct when the dtypes agree.
template <class A>
__device__ inline compute_t<A> load_any(const char* p, type_id t) {
  if (t == type_id_of<A>) return load_direct(reinterpret_cast<const A*>(p));
  return load_converting<A>(p, t);
}

}  // namespace arrayport::ops::cuda
