// The example kernel: a grid-stride CUDA kernel, and the CPU loop for host memory.
#include "scale.hpp"

#include <arrayport/error.hpp>
#include <arrayport/runtime.hpp>

#include <cstdint>

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#endif

namespace example {


#if defined(__CUDACC__)
__global__ void scale_kernel(arrayport::view<float, 1> x, float f) {
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < x.extent(0); i += step)
    x[i] *= f;
}
#endif

void scale(arrayport::view<float, 1> x, float f, arrayport::stream_handle stream) {
  const arrayport::runtime::pointer_info where = arrayport::runtime::query_pointer(x.data());
#if defined(__CUDACC__)
  if (where.kind != arrayport::memory_kind::host) {
    if (x.extent(0) == 0) return;
    const int threads = 256;
    const std::int64_t blocks = (x.extent(0) + threads - 1) / threads;
    scale_kernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), threads, 0,
                   static_cast<cudaStream_t>(stream)>>>(x, f);
    ARRAYPORT_CUDA_CHECK(cudaGetLastError());
    return;
  }
#else
  (void)stream;
  if (where.kind == arrayport::memory_kind::device)
    throw arrayport::value_error("scale: x is in device memory, but this example was built "
                                 "without CUDA");
#endif
  for (std::int64_t i = 0; i < x.extent(0); ++i) x[i] *= f;
}

}  // namespace example
