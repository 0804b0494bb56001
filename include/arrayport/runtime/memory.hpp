// Allocation: the raw upstream calls (stream-ordered pools, managed, pinned, registered host
// memory) and peer access. memory_resource.hpp pools on top of these.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime/check.hpp>
#include <arrayport/runtime/device.hpp>
#include <arrayport/runtime/fork.hpp>
#include <arrayport/runtime/probe.hpp>
#include <arrayport/runtime/stream.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace arrayport::runtime {

#if ARRAYPORT_HAS_CUDA

/// `device`'s default memory pool (a cudaMemPool_t), as an opaque handle.
inline void* default_pool(int device) {
  require_device_index(device, "default_pool");
  cudaMemPool_t pool = nullptr;
  ARRAYPORT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  return pool;
}

/// Stream-ordered allocation from a memory pool (cudaMallocFromPoolAsync). The pool names the
/// device, so the current device does not matter.
inline void* malloc_from_pool_async(std::size_t bytes, void* pool, stream_handle stream) {
  void* p = nullptr;
  ARRAYPORT_CUDA_CHECK(cudaMallocFromPoolAsync(&p, bytes, static_cast<cudaMemPool_t>(pool),
                                               detail::to_cuda(stream)));
  return p;
}

/// Stream-ordered allocation of `device` memory, ordered on `stream` (cudaMallocAsync). A stream of
/// another device gets the memory from `device`'s pool all the same (cudaMallocFromPoolAsync:
/// cudaMallocAsync takes the stream's device's pool); a default-stream handle is `device`'s own.
/// Measured on an H100, cudaMallocAsync is ~300 ns cheaper than cudaMallocFromPoolAsync, and the
/// device check costs one cudaGetDevice (~40 ns); the device is switched only when it differs.
inline void* malloc_device_async(std::size_t bytes, int device, stream_handle stream) {
  void* p = nullptr;
  require_device_index(device, "device allocation");
  if (is_default_stream(stream)) {
    device_guard guard(device);
    ARRAYPORT_CUDA_CHECK(cudaMallocAsync(&p, bytes, detail::to_cuda(stream)));
  } else if (stream_device(stream, device) == device) {
    ARRAYPORT_CUDA_CHECK(cudaMallocAsync(&p, bytes, detail::to_cuda(stream)));
  } else {
    p = malloc_from_pool_async(bytes, default_pool(device), stream);
  }
  return p;
}

/// Stream-ordered release of memory from a pool (the pointer names its pool and device).
inline void free_device_async(void* p, stream_handle stream) noexcept {
  if (p && !forked_after_cuda_init()) (void)cudaFreeAsync(p, detail::to_cuda(stream));
}

/// The same for memory of `device`: a default-stream handle means `device`'s default stream.
inline void free_device_async(void* p, stream_handle stream, int device) noexcept {
  if (!p) return;
  if (!is_default_stream(stream) || device < 0) return free_device_async(p, stream);
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current == device)
    return free_device_async(p, stream);
  if (cudaSetDevice(device) == cudaSuccess) {
    free_device_async(p, stream);
    (void)cudaSetDevice(current);
  }
}

/// Makes `device`'s default pool keep freed memory instead of returning it to the driver at each
/// synchronisation, which is what makes cudaMallocAsync cost about a microsecond.
inline void retain_pool_memory(int device) {
  require_device_index(device, "retain_pool_memory");
  cudaMemPool_t pool = nullptr;
  ARRAYPORT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t threshold = ~std::uint64_t{0};  // the attribute is a cuuint64_t
  ARRAYPORT_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
}

/// Returns the unused memory of `device`'s default pool to the driver.
inline void trim_pool(int device) {
  require_device_index(device, "trim_pool");
  cudaMemPool_t pool = nullptr;
  ARRAYPORT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  ARRAYPORT_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
}

/// Managed (unified) allocation attached globally; the caller pools it (each call costs ~15 us).
inline void* malloc_managed(std::size_t bytes, int device) {
  require_device_index(device, "managed allocation");
  void* p = nullptr;
  device_guard guard(device);
  ARRAYPORT_CUDA_CHECK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
  return p;
}

/// Page-locked host allocation, portable across devices.
inline void* malloc_pinned(std::size_t bytes) {
  require_device("pinned allocation");
  void* p = nullptr;
  ARRAYPORT_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
  return p;
}

/// Frees managed or device memory from cudaMalloc/cudaMallocManaged (synchronises the device).
inline void free_managed(void* p) noexcept {
  if (p && !forked_after_cuda_init()) (void)cudaFree(p);
}

inline void free_pinned(void* p) noexcept {
  if (p && !forked_after_cuda_init()) (void)cudaFreeHost(p);
}

/// Page-locks existing host memory (for the pipeline's zero-staging transfers).
inline void host_register(void* p, std::size_t bytes) {
  require_device("host_register");
  ARRAYPORT_CUDA_CHECK(cudaHostRegister(p, bytes, cudaHostRegisterPortable));
}

inline void host_unregister(void* p) noexcept {
  if (p && !forked_after_cuda_init()) (void)cudaHostUnregister(p);
}

/// Lets kernels and copies on `device` reach `peer`'s memory directly (cudaDeviceEnablePeerAccess),
/// once per ordered pair and process. Returns false when the hardware cannot, or when the
/// ARRAYPORT_P2P_DISABLE environment variable is set to anything but 0 or empty (read once: for
/// tests, and for machines whose peer links are slower than staging through the host).
inline bool enable_peer_access(int device, int peer) {
  if (device == peer) return true;
  static const bool disabled = [] {
    const char* v = std::getenv("ARRAYPORT_P2P_DISABLE");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  if (disabled || device < 0 || peer < 0) return false;
  constexpr int cached_devices = 64;
  if (device >= cached_devices || peer >= cached_devices) return false;
  // 0: not asked yet, 1: enabled, 2: impossible. A race between two threads enables twice, which
  // CUDA answers with cudaErrorPeerAccessAlreadyEnabled: taken as success.
  static std::atomic<signed char> state[cached_devices][cached_devices] = {};
  const signed char known = state[device][peer].load(std::memory_order_acquire);
  if (known) return known == 1;
  bool ok = can_access_peer(device, peer);
  if (ok) {
    device_guard guard(device);
    const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
    if (status == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();
    } else {
      ARRAYPORT_CUDA_CHECK(status);
    }
    // Stream-ordered (pool) memory is not covered by peer access: the pool grants it itself.
    cudaMemAccessDesc access{};
    access.location.type = cudaMemLocationTypeDevice;
    access.location.id = device;
    access.flags = cudaMemAccessFlagsProtReadWrite;
    ARRAYPORT_CUDA_CHECK(
        cudaMemPoolSetAccess(static_cast<cudaMemPool_t>(default_pool(peer)), &access, 1));
  }
  state[device][peer].store(ok ? 1 : 2, std::memory_order_release);
  return ok;
}

#else  // no GPU: allocations throw (require_device says why); releases have nothing to release

inline void* default_pool(int device) {
  require_device_index(device, "default_pool");
  return nullptr;
}

inline void* malloc_from_pool_async(std::size_t, void*, stream_handle) {
  require_device("device allocation");
  return nullptr;
}

inline void* malloc_device_async(std::size_t, int device, stream_handle) {
  require_device_index(device, "device allocation");
  return nullptr;
}

inline void free_device_async(void*, stream_handle) noexcept {}
inline void free_device_async(void*, stream_handle, int) noexcept {}

inline void retain_pool_memory(int device) { require_device_index(device, "retain_pool_memory"); }
inline void trim_pool(int device) { require_device_index(device, "trim_pool"); }

inline void* malloc_managed(std::size_t, int device) {
  require_device_index(device, "managed allocation");
  return nullptr;
}

inline void* malloc_pinned(std::size_t) {
  require_device("pinned allocation");
  return nullptr;
}

inline void free_managed(void*) noexcept {}
inline void free_pinned(void*) noexcept {}
inline void host_register(void*, std::size_t) { require_device("host_register"); }
inline void host_unregister(void*) noexcept {}

inline bool enable_peer_access(int device, int peer) { return device == peer; }

#endif  // ARRAYPORT_HAS_CUDA

}  // namespace arrayport::runtime
