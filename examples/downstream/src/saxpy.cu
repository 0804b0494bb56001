// saxpy on the GPU: one grid-stride kernel over any strides, launched on the caller's stream.
#include "saxpy.hpp"

#include <arrayport/runtime.hpp>  // ARRAYPORT_CUDA_CHECK

#include <cuda_runtime.h>

#include <cstdint>

namespace my_kernels {

namespace {

// Views pass to kernels by value: a pointer plus extents and strides (in elements).
__global__ void saxpy_kernel(float a, arrayport::view<const float, 1> x, arrayport::view<float, 1> y) {
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < y.extent(0); i += step)
    y[i] = a * x[i] + y[i];
}

}  // namespace

void saxpy_cuda(float a, arrayport::view<const float, 1> x, arrayport::view<float, 1> y,
                arrayport::stream_handle stream) {
  const std::int64_t n = y.extent(0);
  if (n == 0) return;  // a grid of zero blocks is a launch error
  const int threads = 256;
  const std::int64_t blocks = (n + threads - 1) / threads;
  saxpy_kernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), threads, 0,
                 static_cast<cudaStream_t>(stream)>>>(a, x, y);
  ARRAYPORT_CUDA_CHECK(cudaGetLastError());  // arrayport::cuda_error, raised as arrayport.CudaError
}

}  // namespace my_kernels
