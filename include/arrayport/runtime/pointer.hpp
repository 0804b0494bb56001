// What memory a pointer points to, asked of CUDA. Memory CUDA does not know is host memory.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime/check.hpp>
#include <arrayport/runtime/probe.hpp>

#if ARRAYPORT_HAS_CUDA
#include <cuda.h>  // the driver's types only: driver functions come through cudaGetDriverEntryPoint
#endif

namespace arrayport::runtime {

/// The memory kind and device of any pointer. Memory CUDA does not know is host memory.
struct pointer_info {
  memory_kind kind = memory_kind::host;
  int device = -1;  ///< the owning device for device/managed memory, -1 otherwise
};

#if ARRAYPORT_HAS_CUDA

inline pointer_info query_pointer(const void* p) noexcept {
  pointer_info info;
  if (!p || !is_available()) return info;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return info;
  }
  switch (attr.type) {
    case cudaMemoryTypeHost: info.kind = memory_kind::pinned; break;
    case cudaMemoryTypeDevice:
      info.kind = memory_kind::device;
      info.device = attr.device;
      break;
    case cudaMemoryTypeManaged:
      info.kind = memory_kind::managed;
      info.device = attr.device;
      break;
    default: break;
  }
  return info;
}

namespace detail {
// The driver's cuPointerGetAttribute, found once through the runtime (arrayport does not link the
// driver library); nullptr when the driver does not offer it.
using pointer_attribute_fn = CUresult(CUDAAPI*)(void*, CUpointer_attribute, CUdeviceptr);
inline pointer_attribute_fn driver_pointer_attribute() noexcept {
  static const pointer_attribute_fn fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuPointerGetAttribute", &f, 4000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return pointer_attribute_fn{};
    }
    return reinterpret_cast<pointer_attribute_fn>(f);
  }();
  return fn;
}
}  // namespace detail

/// Whether CUDA knows `p`: device, managed or page-locked host memory (query_pointer's kind is
/// not host). Asked of the driver with one attribute, a third of cudaPointerGetAttributes' cost
/// (60 against 170 ns on an H100); any answer but "known" or "unknown" asks query_pointer.
inline bool cuda_knows_pointer(const void* p) noexcept {
  if (!p || !is_available()) return false;
  if (const detail::pointer_attribute_fn get = detail::driver_pointer_attribute()) {
    unsigned int type = 0;
    const CUresult r =
        get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(p));
    if (r == CUDA_SUCCESS) return true;
    if (r == CUDA_ERROR_INVALID_VALUE) return false;
  }
  return query_pointer(p).kind != memory_kind::host;
}

#else  // no GPU: every pointer is host memory

inline pointer_info query_pointer(const void*) noexcept { return {}; }
inline bool cuda_knows_pointer(const void*) noexcept { return false; }

#endif  // ARRAYPORT_HAS_CUDA

}  // namespace arrayport::runtime
