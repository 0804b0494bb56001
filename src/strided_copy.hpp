// The CUDA kernel behind arrayport::detail::strided_copy, for _core (nullptr in a CPU-only build).
#pragma once

#include <arrayport/detail/strided_copy.hpp>

namespace arrayport::ext {

#if ARRAYPORT_HAS_CUDA
/// Runs `layout` on `stream` with a grid-stride kernel (src/strided_copy.cu). Both sides must be
/// device-accessible. Throws cuda_error when the launch fails.
void launch_strided_copy(const ::arrayport::detail::copy_layout& layout, stream_handle stream);
inline constexpr ::arrayport::detail::copy_kernel_launcher copy_kernel = &launch_strided_copy;
#else
inline constexpr ::arrayport::detail::copy_kernel_launcher copy_kernel = nullptr;
#endif

}  // namespace arrayport::ext
