// Memory kinds (host, pinned, device, managed) and how they map onto DLPack devices.
#pragma once

#include <arrayport/c/view.h>
#include <arrayport/config.hpp>
#include <arrayport/error.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace arrayport {

/// Where an allocation lives. Values equal the C ABI's arrayport_memory_kind_t.
enum class memory_kind : std::uint32_t {
  host = ARRAYPORT_MEMORY_HOST,       ///< pageable host memory
  pinned = ARRAYPORT_MEMORY_PINNED,   ///< page-locked host memory, device-accessible
  device = ARRAYPORT_MEMORY_DEVICE,   ///< device memory, not host-accessible
  managed = ARRAYPORT_MEMORY_MANAGED  ///< unified memory, host- and device-accessible
};

/// A cudaStream_t / cudaEvent_t without including the CUDA headers. nullptr is the legacy stream.
using stream_handle = void*;
using event_handle = void*;

constexpr std::string_view to_string(memory_kind kind) noexcept {
  switch (kind) {
    case memory_kind::host: return "host";
    case memory_kind::pinned: return "pinned";
    case memory_kind::device: return "device";
    case memory_kind::managed: return "managed";
  }
  return "unknown";
}

/// Parses "host" | "pinned" | "device" | "managed"; anything else is a value_error naming it.
inline memory_kind parse_memory_kind(std::string_view name) {
  for (memory_kind k :
       {memory_kind::host, memory_kind::pinned, memory_kind::device, memory_kind::managed})
    if (name == to_string(k)) return k;
  throw value_error("memory: expected one of 'device', 'managed', 'pinned', 'host', got '" +
                    std::string(name) + "'");
}

/// Can host code dereference memory of this kind?
constexpr bool is_host_accessible(memory_kind kind) noexcept { return kind != memory_kind::device; }

/// Can device code dereference memory of this kind (unified addressing assumed, as on every
/// 64-bit CUDA platform)?
constexpr bool is_device_accessible(memory_kind kind) noexcept { return kind != memory_kind::host; }

/// Does memory of this kind live on a GPU: device memory, and managed memory, whose pages the
/// driver migrates? Such memory names a CUDA device, is touched only with CUDA usable (see
/// runtime::is_reachable), and a CPU loop over it would fault pages across the bus.
constexpr bool is_gpu_resident(memory_kind kind) noexcept {
  return kind == memory_kind::device || kind == memory_kind::managed;
}

/// The kind of memory on a DLPack device: false for a device type arrayport does not take.
constexpr bool kind_of_dlpack_device(arrayport_device_t d, memory_kind& out) noexcept {
  switch (d.device_type) {
    case ARRAYPORT_DEVICE_CPU: out = memory_kind::host; return true;
    case ARRAYPORT_DEVICE_CUDA: out = memory_kind::device; return true;
    case ARRAYPORT_DEVICE_CUDA_HOST: out = memory_kind::pinned; return true;
    case ARRAYPORT_DEVICE_CUDA_MANAGED: out = memory_kind::managed; return true;
  }
  return false;
}

/// The DLPack device of memory of this kind on CUDA device `device` (ignored for host kinds).
constexpr arrayport_device_t dlpack_device(memory_kind kind, int device) noexcept {
  switch (kind) {
    case memory_kind::pinned: return {ARRAYPORT_DEVICE_CUDA_HOST, 0};
    case memory_kind::device: return {ARRAYPORT_DEVICE_CUDA, device};
    case memory_kind::managed: return {ARRAYPORT_DEVICE_CUDA_MANAGED, device};
    case memory_kind::host: break;
  }
  return {ARRAYPORT_DEVICE_CPU, 0};
}

}  // namespace arrayport
