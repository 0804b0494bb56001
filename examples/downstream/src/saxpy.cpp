// saxpy's dispatch: the GPU for memory it reaches (CUDA builds), the CPU loop for host memory.
#include "saxpy.hpp"

#include <arrayport/error.hpp>
#include <arrayport/runtime.hpp>

#include <cstdint>
#include <string>

namespace my_kernels {

void saxpy(float a, arrayport::view<const float, 1> x, arrayport::view<float, 1> y,
           arrayport::stream_handle stream) {
  if (x.extent(0) != y.extent(0))
    throw arrayport::value_error("saxpy: x and y must have the same length, got " +
                                 std::to_string(x.extent(0)) + " and " + std::to_string(y.extent(0)));
#if MY_KERNELS_CUDA
  // Where the memory is, as CUDA sees it (host: pageable memory the GPU cannot reach).
  const arrayport::memory_kind xk = arrayport::runtime::query_pointer(x.data()).kind;
  const arrayport::memory_kind yk = arrayport::runtime::query_pointer(y.data()).kind;
  if (yk != arrayport::memory_kind::host) {
    if (xk == arrayport::memory_kind::host)
      throw arrayport::value_error("saxpy: y is in " + std::string(arrayport::to_string(yk)) +
                                   " memory, on the GPU, but x is in host memory");
    saxpy_cuda(a, x, y, stream);
    return;
  }
  if (xk == arrayport::memory_kind::device)
    throw arrayport::value_error("saxpy: y is in host memory, but x is in device memory");
#endif
  // Without CUDA, the bindings take only memory the host reaches, which may be managed or pinned:
  // GPU work ordered before `stream` (the producers') may still write it. Wait for that first.
  arrayport::runtime::stream_synchronize(stream);
  for (std::int64_t i = 0; i < y.extent(0); ++i) y[i] = a * x[i] + y[i];
}

}  // namespace my_kernels
