// Copies and memsets, and managed memory's prefetch and advice. Unified addressing lets the
// runtime infer the direction from the pointers. Each copy and memset names the memory kinds it
// touches and refuses memory this process cannot reach; without a device the CPU does the work.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime/check.hpp>
#include <arrayport/runtime/probe.hpp>
#include <arrayport/runtime/stream.hpp>

#include <cstddef>
#include <cstring>

namespace arrayport::runtime {

/// Advice for managed memory: the values of cudaMemoryAdvise.
enum class mem_advice : int {
  set_read_mostly = 1,
  unset_read_mostly = 2,
  set_preferred_location = 3,
  unset_preferred_location = 4,
  set_accessed_by = 5,
  unset_accessed_by = 6
};

#if ARRAYPORT_HAS_CUDA

namespace detail {
// Queue the copy or memset on `stream` where CUDA is usable; false leaves it to the CPU.
inline bool device_memcpy_async(void* dst, const void* src, std::size_t bytes,
                                stream_handle stream) {
  if (!is_available()) return false;
  ARRAYPORT_CUDA_CHECK(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, detail::to_cuda(stream)));
  return true;
}

inline bool device_memset_async(void* dst, int value, std::size_t bytes, stream_handle stream) {
  if (!is_available()) return false;
  ARRAYPORT_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, detail::to_cuda(stream)));
  return true;
}
}  // namespace detail

/// Prefetches managed memory to `device` (or to the host when device < 0).
inline void mem_prefetch_async(const void* p, std::size_t bytes, int device, stream_handle stream) {
  require_device("prefetch");
#if CUDART_VERSION >= 13000
  cudaMemLocation loc{};
  loc.type = device < 0 ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  loc.id = device < 0 ? 0 : device;
  ARRAYPORT_CUDA_CHECK(cudaMemPrefetchAsync(p, bytes, loc, 0, detail::to_cuda(stream)));
#else
  ARRAYPORT_CUDA_CHECK(cudaMemPrefetchAsync(p, bytes, device < 0 ? cudaCpuDeviceId : device,
                                            detail::to_cuda(stream)));
#endif
}

/// Advises the driver about managed memory; `device` < 0 names the host.
inline void mem_advise(const void* p, std::size_t bytes, mem_advice advice, int device) {
  require_device("advise");
  const auto a = static_cast<cudaMemoryAdvise>(static_cast<int>(advice));
#if CUDART_VERSION >= 13000
  cudaMemLocation loc{};
  loc.type = device < 0 ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  loc.id = device < 0 ? 0 : device;
  ARRAYPORT_CUDA_CHECK(cudaMemAdvise(p, bytes, a, loc));
#else
  ARRAYPORT_CUDA_CHECK(cudaMemAdvise(p, bytes, a, device < 0 ? cudaCpuDeviceId : device));
#endif
}

#else  // no GPU: the CPU copies and sets; managed memory cannot exist

namespace detail {
inline bool device_memcpy_async(void*, const void*, std::size_t, stream_handle) { return false; }
inline bool device_memset_async(void*, int, std::size_t, stream_handle) { return false; }
}  // namespace detail

inline void mem_prefetch_async(const void*, std::size_t, int, stream_handle) {
  require_device("prefetch");
}

inline void mem_advise(const void*, std::size_t, mem_advice, int) { require_device("advise"); }

#endif  // ARRAYPORT_HAS_CUDA

/// Copies `bytes` from `src` (memory of `src_kind`) to `dst` (of `dst_kind`) in order on `stream`:
/// cudaMemcpyAsync where CUDA is usable, else a CPU memcpy, which only host and pinned memory get
/// (no_device_error naming `what` for the others). Returns once queued; a copy into pageable host
/// memory is complete on return (CUDA's rule).
inline void memcpy_async(void* dst, memory_kind dst_kind, const void* src, memory_kind src_kind,
                         std::size_t bytes, stream_handle stream, const char* what) {
  require_reachable(dst_kind, what, "the destination");
  require_reachable(src_kind, what, "the source");
  if (bytes == 0) return;
  if (dst_kind == memory_kind::host || src_kind == memory_kind::host) {
    refuse_during_capture(stream, "a copy to or from pageable host memory",
                          "a graph may copy only GPU-reachable memory: use pinned memory");
    relaxed_capture_mode relaxed;  // a pageable copy waits, which a global capture forbids
    if (!detail::device_memcpy_async(dst, src, bytes, stream)) std::memcpy(dst, src, bytes);
    return;
  }
  if (!detail::device_memcpy_async(dst, src, bytes, stream)) std::memcpy(dst, src, bytes);
}

/// Sets `bytes` bytes at `dst` (memory of `kind`) to `value` in order on `stream`: cudaMemsetAsync
/// where CUDA is usable (the value travels with the call: nothing waits), else a CPU memset of host
/// or pinned memory (no_device_error naming `what` for the others).
inline void memset_async(void* dst, memory_kind kind, int value, std::size_t bytes,
                         stream_handle stream, const char* what) {
  require_reachable(kind, what, "the destination");
  if (bytes == 0) return;
  if (!detail::device_memset_async(dst, value, bytes, stream)) std::memset(dst, value, bytes);
}

/// The same for memory the caller knows to be host memory, or known to CUDA where CUDA is usable
/// (what arrayport's own allocations are): without a device both sides are taken as host memory.
inline void memcpy_async(void* dst, const void* src, std::size_t bytes, stream_handle stream) {
  if (bytes == 0) return;
  if (!detail::device_memcpy_async(dst, src, bytes, stream)) std::memcpy(dst, src, bytes);
}

inline void memset_async(void* dst, int value, std::size_t bytes, stream_handle stream) {
  memset_async(dst, memory_kind::host, value, bytes, stream, "memset_async");
}

}  // namespace arrayport::runtime
