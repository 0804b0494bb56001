// The CUDA kernels behind arrayport::detail::strided_copy and strided_fill, for _core (nullptr in a
// CPU-only build).
#pragma once

#include <arrayport/detail/fill.hpp>
#include <arrayport/detail/strided_copy.hpp>

namespace arrayport::ext {

#if ARRAYPORT_HAS_CUDA
/// Runs `layout` on `stream` with a grid-stride kernel (array/strided_copy.cu). Both sides must be
/// device-accessible. Throws cuda_error when the launch fails.
void launch_strided_copy(const ::arrayport::detail::copy_layout& layout, stream_handle stream);
inline constexpr ::arrayport::detail::copy_kernel_launcher copy_kernel = &launch_strided_copy;

/// Writes `value` through `layout` (a fill_kernel_launcher: its source side addresses `value`) on
/// `stream`, the element a kernel parameter: nothing waits. Throws cuda_error when the launch
/// fails.
void launch_strided_fill(const ::arrayport::detail::copy_layout& layout,
                         const ::arrayport::detail::fill_value& value, stream_handle stream);
inline constexpr ::arrayport::detail::fill_kernel_launcher fill_kernel = &launch_strided_fill;
#else
inline constexpr ::arrayport::detail::copy_kernel_launcher copy_kernel = nullptr;
inline constexpr ::arrayport::detail::fill_kernel_launcher fill_kernel = nullptr;
#endif

}  // namespace arrayport::ext
