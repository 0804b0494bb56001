// CUDA status checks: a failed call becomes arrayport::cuda_error (or out_of_memory) carrying the
// status, the API text and the call site. Also the handle casts every other runtime/ file uses.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/error.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime/fork.hpp>

#if ARRAYPORT_HAS_CUDA
#include <cuda_runtime_api.h>

namespace arrayport::runtime {
namespace detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* api, const char* file,
                                          int line) {
  // Clear the (non-sticky) error so the next unrelated call does not report it again.
  if (!cuda_error::is_sticky_status(static_cast<int>(status))) (void)cudaGetLastError();
  const char* name = cudaGetErrorName(status);
  const char* text = cudaGetErrorString(status);
  if (status == cudaErrorMemoryAllocation)
    throw out_of_memory(static_cast<int>(status), name ? name : "cudaErrorMemoryAllocation",
                        text ? text : "out of memory", api, file, line);
  throw cuda_error(static_cast<int>(status), name ? name : "cudaErrorUnknown",
                   text ? text : "unknown error", api, file, line);
}

inline void check(cudaError_t status, const char* api, const char* file, int line) {
  if (status != cudaSuccess) throw_cuda_error(status, api, file, line);
}

inline cudaStream_t to_cuda(stream_handle s) noexcept { return static_cast<cudaStream_t>(s); }
inline cudaEvent_t to_cuda_event(event_handle e) noexcept { return static_cast<cudaEvent_t>(e); }

}  // namespace detail

/// Throws cuda_error for a failed kernel launch (bad configuration, no image for this GPU), naming
/// the kernel. Call right after a <<<...>>> launch; it does not wait for the kernel.
inline void check_launch(const char* kernel) {
  check_not_forked(kernel);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) detail::throw_cuda_error(status, kernel, __FILE__, __LINE__);
}

}  // namespace arrayport::runtime

/// Checks a cudaError_t and throws arrayport::cuda_error (or out_of_memory) with the API text and
/// the call site. For user code that calls the runtime itself.
#define ARRAYPORT_CUDA_CHECK(call) \
  ::arrayport::runtime::detail::check((call), #call, __FILE__, __LINE__)

#else  // no GPU: nothing was launched, so nothing can have failed

namespace arrayport::runtime {
inline void check_launch(const char*) {}
}  // namespace arrayport::runtime

#endif  // ARRAYPORT_HAS_CUDA
