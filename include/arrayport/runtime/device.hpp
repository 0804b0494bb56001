// Devices: the current device, a device's properties and memory, peers, and a guard that makes a
// device current for a scope.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/runtime/check.hpp>
#include <arrayport/runtime/probe.hpp>

#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>

namespace arrayport::runtime {

/// Properties of one device, as the report and arrayport.cuda.Device show them.
struct device_properties {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;      ///< compute capability
  std::size_t total_memory = 0;  ///< bytes
  int multiprocessor_count = 0;
  std::string pci_bus_id;  ///< "0000:3b:00.0"
  std::string uuid;        ///< "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  bool managed_memory = false;
  bool concurrent_managed_access = false;
  bool memory_pools = false;  ///< cudaMallocAsync supported
};

#if ARRAYPORT_HAS_CUDA

/// The calling thread's current device (0 when none is available).
inline int get_device() {
  if (!is_available()) return 0;
  int d = 0;
  ARRAYPORT_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

inline void set_device(int device) {
  require_device_index(device, "set_device");
  ARRAYPORT_CUDA_CHECK(cudaSetDevice(device));
}

inline device_properties get_device_properties(int device) {
  require_device_index(device, "device properties");
  device_properties p;
  p.index = device;
  cudaDeviceProp prop{};
  ARRAYPORT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  p.name = prop.name;
  p.major = prop.major;
  p.minor = prop.minor;
  p.total_memory = prop.totalGlobalMem;
  p.multiprocessor_count = prop.multiProcessorCount;
  p.managed_memory = prop.managedMemory != 0;
  p.concurrent_managed_access = prop.concurrentManagedAccess != 0;
  int pools = 0;
  ARRAYPORT_CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device));
  p.memory_pools = pools != 0;
  char bus[32] = {};
  ARRAYPORT_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, static_cast<int>(sizeof bus), device));
  p.pci_bus_id = bus;
  // 16 bytes -> 36 characters plus the "GPU-" prefix; snprintf bounds every write.
  char uuid[64] = {};
  const auto* b = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
  std::snprintf(uuid, sizeof uuid,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  p.uuid = uuid;
  return p;
}

/// (free, total) bytes of `device`.
inline std::pair<std::size_t, std::size_t> mem_get_info(int device) {
  require_device_index(device, "mem_get_info");
  int previous = 0;
  ARRAYPORT_CUDA_CHECK(cudaGetDevice(&previous));
  if (previous != device) ARRAYPORT_CUDA_CHECK(cudaSetDevice(device));
  std::size_t free_bytes = 0, total_bytes = 0;
  cudaError_t status = cudaMemGetInfo(&free_bytes, &total_bytes);
  if (previous != device) (void)cudaSetDevice(previous);
  ARRAYPORT_CUDA_CHECK(status);
  return {free_bytes, total_bytes};
}

inline bool can_access_peer(int device, int peer) {
  require_device_index(device, "can_access_peer");
  require_device_index(peer, "can_access_peer");
  int ok = 0;
  ARRAYPORT_CUDA_CHECK(cudaDeviceCanAccessPeer(&ok, device, peer));
  return ok != 0;
}

inline void device_synchronize() {
  require_device("device_synchronize");
  ARRAYPORT_CUDA_CHECK(cudaDeviceSynchronize());
}

/// Makes `device` current for its lifetime and restores the previous device (even on exception).
/// A negative device, or a build or machine without CUDA, makes it a no-op.
class device_guard {
 public:
  explicit device_guard(int device) {
    if (device < 0 || !is_available()) return;
    ARRAYPORT_CUDA_CHECK(cudaGetDevice(&m_previous));
    if (m_previous != device) {
      ARRAYPORT_CUDA_CHECK(cudaSetDevice(device));
      m_restore = true;
    }
  }
  ~device_guard() {
    if (m_restore) (void)cudaSetDevice(m_previous);
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int m_previous = -1;
  bool m_restore = false;
};

#else  // no GPU: what needs a device throws (require_device says why); device 0 is "current"

inline int get_device() { return 0; }

inline void set_device(int device) { require_device_index(device, "set_device"); }

inline device_properties get_device_properties(int device) {
  require_device_index(device, "device properties");
  device_properties p;
  p.index = device;
  return p;
}

inline std::pair<std::size_t, std::size_t> mem_get_info(int device) {
  require_device_index(device, "mem_get_info");
  return {0, 0};
}

inline bool can_access_peer(int device, int peer) {
  require_device_index(device, "can_access_peer");
  require_device_index(peer, "can_access_peer");
  return false;
}

inline void device_synchronize() { require_device("device_synchronize"); }

class device_guard {
 public:
  explicit device_guard(int) {}
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
};

#endif  // ARRAYPORT_HAS_CUDA

}  // namespace arrayport::runtime
