// The kernel this project exposes to Python: y = a * x + y, in place, on strided float32 vectors.
// Replace it with yours: keep arrayport::view parameters, which the bindings fill from any array.
#pragma once

#include <arrayport/memory_kind.hpp>
#include <arrayport/view.hpp>

namespace my_kernels {

/// y = a * x + y. On the GPU, asynchronously on `stream`, when y is in memory the GPU reaches
/// (device, managed or pinned) and this project was compiled with CUDA; on the CPU otherwise.
/// Throws arrayport::value_error when the lengths differ or x is not where y is,
/// arrayport::cuda_error when the launch fails.
void saxpy(float a, arrayport::view<const float, 1> x, arrayport::view<float, 1> y,
           arrayport::stream_handle stream);

#if MY_KERNELS_CUDA
/// The launch (saxpy.cu), for x and y the GPU reaches.
void saxpy_cuda(float a, arrayport::view<const float, 1> x, arrayport::view<float, 1> y,
                arrayport::stream_handle stream);
#endif

}  // namespace my_kernels
