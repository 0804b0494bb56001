// Is CUDA usable here, and what memory may this process touch? The probe runs once per process;
// every copy, fill and read in arrayport asks is_reachable before it touches memory, so memory
// nothing here can reach is never dereferenced. In a CUDA build the runtime is linked statically:
// with no driver or no GPU the probe reports that (device_count() is 0) instead of failing to load.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/error.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime/check.hpp>
#include <arrayport/runtime/fork.hpp>

#include <string>

namespace arrayport::runtime {

/// Was the CUDA runtime compiled in?
constexpr bool compiled_with_cuda() noexcept { return ARRAYPORT_HAS_CUDA != 0; }

/// The result of probing for CUDA, taken once per process.
struct availability {
  int device_count = 0;  ///< usable CUDA devices (0 without CUDA)
  int status = 0;        ///< the cudaError_t of the probe (0 when fine or CPU-only)
  std::string reason;    ///< why there is no device; empty when device_count > 0
};

#if ARRAYPORT_HAS_CUDA

namespace detail {
/// Asks the driver for devices and says why there are none.
inline availability probe_driver() {
  availability a;
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  if (status == cudaSuccess) note_cuda_initialised();
  if (status == cudaSuccess && count > 0) {
    a.device_count = count;
    return a;
  }
  a.status = static_cast<int>(status);
  int driver = 0;
  (void)cudaDriverGetVersion(&driver);
  if (status == cudaSuccess || status == cudaErrorNoDevice) {
    a.reason = "no CUDA device: the driver reports none";
  } else if (status == cudaErrorInsufficientDriver && driver == 0) {
    a.reason = "no CUDA driver: libcuda could not be loaded";
  } else if (status == cudaErrorInsufficientDriver) {
    a.reason = "the CUDA driver (" + std::to_string(driver) +
               ") is older than the CUDA runtime arrayport was built with (" +
               std::to_string(CUDART_VERSION) + ")";
  } else {
    const char* name = cudaGetErrorName(status);
    a.reason = std::string("CUDA is unusable: cudaGetDeviceCount failed with ") +
               (name ? name : "an unknown error");
  }
  return a;
}
}  // namespace detail

/// CUDA runtime version compiled in (e.g. 13000), or 0 in a CPU-only build.
inline int runtime_version() noexcept {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) return 0;
  return v;
}

/// Latest CUDA version the installed driver supports, or 0 without a driver.
inline int driver_version() noexcept {
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess) return 0;
  return v;
}

#else  // no GPU: no device, no versions

namespace detail {
inline availability probe_driver() {
  availability a;
  a.reason = "arrayport was built without CUDA (CPU-only build)";
  return a;
}
}  // namespace detail

inline int runtime_version() noexcept { return 0; }
inline int driver_version() noexcept { return 0; }

#endif  // ARRAYPORT_HAS_CUDA

/// Probes the driver and devices once (thread-safe); later calls return the cached answer. In a
/// fork() child of a process that had initialised CUDA, the answer is "no device" and says why.
inline const availability& probe() {
  static const availability forked = [] {
    availability a;
    a.status = 3;  // cudaErrorInitializationError
    a.reason = detail::forked_reason();
    return a;
  }();
  static const availability result = detail::probe_driver();
  if (forked_after_cuda_init()) return forked;
  return result;
}

inline int device_count() { return probe().device_count; }
inline bool is_available() { return device_count() > 0; }

/// Throws no_device_error saying why, when no CUDA device can be used for `what`.
/// In a fork() child of a process that had initialised CUDA, throws cuda_error naming fork().
inline void require_device(const char* what) {
  check_not_forked(what);
  const availability& a = probe();
  if (a.device_count == 0)
    throw no_device_error(std::string(what) + " needs a CUDA device, but " + a.reason);
}

/// Throws value_error unless 0 <= device < device_count().
inline void require_device_index(int device, const char* what) {
  require_device(what);
  if (device < 0 || device >= device_count())
    throw value_error(std::string(what) + ": device must be in [0, " +
                      std::to_string(device_count()) + "), got " + std::to_string(device));
}

/// Can this process touch memory of `kind`? Host and pinned memory always (with the CPU);
/// GPU-resident memory (device, managed) only with a usable CUDA device, through CUDA: without
/// one, its address is no memory the CPU may read (a view of another process's or library's claim).
inline bool is_reachable(memory_kind kind) { return !is_gpu_resident(kind) || is_available(); }

/// Throws no_device_error unless memory of `kind` is reachable, naming the operation and whose
/// memory it is: "Array.fill: the array is in device memory, which this machine cannot reach: ...".
/// In a fork() child of a process that had initialised CUDA, throws cuda_error naming fork().
inline void require_reachable(memory_kind kind, const char* what, const char* whose) {
  if (!is_gpu_resident(kind)) return;
  check_not_forked(what);
  if (is_available()) return;
  throw no_device_error(std::string(what) + ": " + whose + " is in " +
                        std::string(to_string(kind)) +
                        " memory, which this machine cannot reach: " + probe().reason);
}

}  // namespace arrayport::runtime
