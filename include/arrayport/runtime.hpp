// The runtime shim: the one place in arrayport that calls the CUDA runtime.
//
// Every other header goes through these functions, so a CPU-only build (ARRAYPORT_HAS_CUDA == 0)
// compiles the same headers, and a HIP port is a mapping of this file. In a CUDA build the runtime
// is linked statically: on a machine with no driver or no GPU the calls here report that
// (is_available() is false, device_count() is 0) instead of failing to load.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/error.hpp>
#include <arrayport/memory_kind.hpp>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#if ARRAYPORT_HAS_CUDA
#include <cuda.h>  // the driver's types only: driver functions come through cudaGetDriverEntryPoint
#include <cuda_runtime_api.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#define ARRAYPORT_HAS_FORK 1
#else
#define ARRAYPORT_HAS_FORK 0
#endif

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

/// Checks a cudaError_t and throws arrayport::cuda_error (or out_of_memory) with the API text and
/// the call site. For user code that calls the runtime itself.
#define ARRAYPORT_CUDA_CHECK(call) \
  ::arrayport::runtime::detail::check((call), #call, __FILE__, __LINE__)
#endif  // ARRAYPORT_HAS_CUDA

// ---------------------------------------------------------------------------------------------
// fork(): a child of a process that has initialised the CUDA driver cannot use CUDA (the driver's
// state does not survive fork(); its calls fail or hang). The probe notes when it initialised the
// driver, and a pthread_atfork handler marks the child of such a process. There arrayport behaves
// as on a machine without a usable device (host work goes on) and whatever needs a device throws
// cuda_error naming fork() and the 'spawn' start method. The flags are per shared object: an
// extension that never probed does not know that another one did.

namespace detail {

struct fork_flags {
  std::atomic<bool> cuda_initialised{false};  ///< this process initialised the CUDA driver
  std::atomic<bool> forked_child{false};      ///< a fork() child of a process that had
};

inline fork_flags& fork_state() noexcept {
  static fork_flags flags;
  return flags;
}

/// The atfork child handler: async-signal-safe (two atomics).
inline void mark_fork_child() noexcept {
  fork_flags& f = fork_state();
  if (f.cuda_initialised.load(std::memory_order_relaxed))
    f.forked_child.store(true, std::memory_order_relaxed);
}

/// Records that this process initialised the CUDA driver, so that its fork() children refuse
/// CUDA. The probe calls it; tests call it to simulate a CUDA parent in a CPU-only build.
inline void note_cuda_initialised() noexcept {
#if ARRAYPORT_HAS_FORK
  static const bool registered = pthread_atfork(nullptr, nullptr, &mark_fork_child) == 0;
  (void)registered;
#endif
  fork_state().cuda_initialised.store(true, std::memory_order_relaxed);
}

inline const char* forked_reason() noexcept {
  return "CUDA cannot be used in this process: it is a fork() child of a process that had "
         "initialised CUDA, and the driver's state does not survive fork(). Start worker "
         "processes with the 'spawn' (or 'forkserver') start method instead: "
         "multiprocessing.set_start_method('spawn'), or "
         "multiprocessing.get_context('spawn') for a Pool or an executor";
}

}  // namespace detail

/// True in a fork() child of a process where arrayport had initialised CUDA: no device is
/// available here, and whatever needs one throws cuda_error naming fork().
inline bool forked_after_cuda_init() noexcept {
  return detail::fork_state().forked_child.load(std::memory_order_relaxed);
}

/// Throws cuda_error (cudaErrorInitializationError) for `what` in such a child.
inline void check_not_forked(const char* what) {
  if (!forked_after_cuda_init()) return;
  // 3 is cudaErrorInitializationError, what the runtime itself reports at best; a CPU-only build
  // has no cuda_runtime_api.h to name it from.
  throw cuda_error(3, "cudaErrorInitializationError", detail::forked_reason(), what, __FILE__,
                   __LINE__);
}

// ---------------------------------------------------------------------------------------------
// Availability

/// Probes the driver and devices once (thread-safe); later calls return the cached answer. In a
/// fork() child of a process that had initialised CUDA, the answer is "no device" and says why.
inline const availability& probe() {
  static const availability forked = [] {
    availability a;
    a.status = 3;  // cudaErrorInitializationError
    a.reason = detail::forked_reason();
    return a;
  }();
  static const availability result = [] {
    availability a;
#if ARRAYPORT_HAS_CUDA
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    (void)cudaGetLastError();
    if (status == cudaSuccess) detail::note_cuda_initialised();
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
#else
    a.reason = "arrayport was built without CUDA (CPU-only build)";
#endif
    return a;
  }();
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
  if (a.device_count == 0) throw no_device_error(std::string(what) + " needs a CUDA device, but " + a.reason);
}

// ---------------------------------------------------------------------------------------------
// Reachability: what memory this process may touch. Every copy, fill and read in arrayport asks
// here before it touches memory, so memory nothing here can reach is never dereferenced.

/// Can this process touch memory of `kind`? Host and pinned memory always (with the CPU);
/// GPU-resident memory (device, managed) only with a usable CUDA device, through CUDA: without
/// one, its address is no memory the CPU may read (a view of another process's or library's claim).
inline bool is_reachable(memory_kind kind) {
  return !is_gpu_resident(kind) || is_available();
}

/// Throws no_device_error unless memory of `kind` is reachable, naming the operation and whose
/// memory it is: "Array.fill: the array is in device memory, which this machine cannot reach: ...".
/// In a fork() child of a process that had initialised CUDA, throws cuda_error naming fork().
inline void require_reachable(memory_kind kind, const char* what, const char* whose) {
  if (!is_gpu_resident(kind)) return;
  check_not_forked(what);
  if (is_available()) return;
  throw no_device_error(std::string(what) + ": " + whose + " is in " +
                        std::string(to_string(kind)) + " memory, which this machine cannot reach: " +
                        probe().reason);
}

/// Throws value_error unless 0 <= device < device_count().
inline void require_device_index(int device, const char* what) {
  require_device(what);
  if (device < 0 || device >= device_count())
    throw value_error(std::string(what) + ": device must be in [0, " +
                      std::to_string(device_count()) + "), got " + std::to_string(device));
}

/// CUDA runtime version compiled in (e.g. 13000), or 0 in a CPU-only build.
inline int runtime_version() noexcept {
#if ARRAYPORT_HAS_CUDA
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) return 0;
  return v;
#else
  return 0;
#endif
}

/// Latest CUDA version the installed driver supports, or 0 without a driver.
inline int driver_version() noexcept {
#if ARRAYPORT_HAS_CUDA
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess) return 0;
  return v;
#else
  return 0;
#endif
}

// ---------------------------------------------------------------------------------------------
// Devices

/// The calling thread's current device (0 when none is available).
inline int get_device() {
#if ARRAYPORT_HAS_CUDA
  if (!is_available()) return 0;
  int d = 0;
  ARRAYPORT_CUDA_CHECK(cudaGetDevice(&d));
  return d;
#else
  return 0;
#endif
}

inline void set_device(int device) {
  require_device_index(device, "set_device");
#if ARRAYPORT_HAS_CUDA
  ARRAYPORT_CUDA_CHECK(cudaSetDevice(device));
#endif
}

/// Properties of one device, as the report and arrayport.cuda.Device show them.
struct device_properties {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;          ///< compute capability
  std::size_t total_memory = 0;      ///< bytes
  int multiprocessor_count = 0;
  std::string pci_bus_id;            ///< "0000:3b:00.0"
  std::string uuid;                  ///< "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  bool managed_memory = false;
  bool concurrent_managed_access = false;
  bool memory_pools = false;         ///< cudaMallocAsync supported
};

inline device_properties get_device_properties(int device) {
  require_device_index(device, "device properties");
  device_properties p;
  p.index = device;
#if ARRAYPORT_HAS_CUDA
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
#endif
  return p;
}

/// (free, total) bytes of `device`.
inline std::pair<std::size_t, std::size_t> mem_get_info(int device) {
  require_device_index(device, "mem_get_info");
#if ARRAYPORT_HAS_CUDA
  int previous = 0;
  ARRAYPORT_CUDA_CHECK(cudaGetDevice(&previous));
  if (previous != device) ARRAYPORT_CUDA_CHECK(cudaSetDevice(device));
  std::size_t free_bytes = 0, total_bytes = 0;
  cudaError_t status = cudaMemGetInfo(&free_bytes, &total_bytes);
  if (previous != device) (void)cudaSetDevice(previous);
  ARRAYPORT_CUDA_CHECK(status);
  return {free_bytes, total_bytes};
#else
  return {0, 0};
#endif
}

inline bool can_access_peer(int device, int peer) {
  require_device_index(device, "can_access_peer");
  require_device_index(peer, "can_access_peer");
#if ARRAYPORT_HAS_CUDA
  int ok = 0;
  ARRAYPORT_CUDA_CHECK(cudaDeviceCanAccessPeer(&ok, device, peer));
  return ok != 0;
#else
  return false;
#endif
}

inline void device_synchronize() {
  require_device("device_synchronize");
#if ARRAYPORT_HAS_CUDA
  ARRAYPORT_CUDA_CHECK(cudaDeviceSynchronize());
#endif
}

/// Makes `device` current for its lifetime and restores the previous device (even on exception).
/// A negative device, or a build or machine without CUDA, makes it a no-op.
class device_guard {
 public:
  explicit device_guard(int device) {
#if ARRAYPORT_HAS_CUDA
    if (device < 0 || !is_available()) return;
    ARRAYPORT_CUDA_CHECK(cudaGetDevice(&m_previous));
    if (m_previous != device) {
      ARRAYPORT_CUDA_CHECK(cudaSetDevice(device));
      m_restore = true;
    }
#else
    (void)device;
#endif
  }
  ~device_guard() {
#if ARRAYPORT_HAS_CUDA
    if (m_restore) (void)cudaSetDevice(m_previous);
#endif
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int m_previous = -1;
  bool m_restore = false;
};

// ---------------------------------------------------------------------------------------------
// Allocation: the raw upstream calls. memory_resource.hpp pools on top of these.

/// `device`'s default memory pool (a cudaMemPool_t), as an opaque handle.
inline void* default_pool(int device) {
  require_device_index(device, "default_pool");
#if ARRAYPORT_HAS_CUDA
  cudaMemPool_t pool = nullptr;
  ARRAYPORT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  return pool;
#else
  return nullptr;
#endif
}

/// Stream-ordered allocation from a memory pool (cudaMallocFromPoolAsync). The pool names the
/// device, so the current device does not matter.
inline void* malloc_from_pool_async(std::size_t bytes, void* pool, stream_handle stream) {
  void* p = nullptr;
#if ARRAYPORT_HAS_CUDA
  ARRAYPORT_CUDA_CHECK(cudaMallocFromPoolAsync(&p, bytes, static_cast<cudaMemPool_t>(pool),
                                               detail::to_cuda(stream)));
#else
  (void)bytes; (void)pool; (void)stream;
  require_device("device allocation");
#endif
  return p;
}

/// Is `stream` one of the handles that name "the default stream of whichever device is current"
/// (nullptr, cudaStreamLegacy, cudaStreamPerThread)? arrayport reads such a handle, held with
/// memory of device d, as device d's default stream, and calls CUDA with d current.
inline bool is_default_stream(stream_handle stream) noexcept {
  return reinterpret_cast<std::uintptr_t>(stream) <= 2;
}

/// The device `stream` belongs to; `fallback` for the default-stream handles.
inline int stream_device(stream_handle stream, int fallback) {
  if (is_default_stream(stream)) return fallback;
#if ARRAYPORT_HAS_CUDA
  int device = -1;
  ARRAYPORT_CUDA_CHECK(cudaStreamGetDevice(detail::to_cuda(stream), &device));
  return device;
#else
  return fallback;
#endif
}

/// Stream-ordered allocation of `device` memory, ordered on `stream` (cudaMallocAsync). A stream of
/// another device gets the memory from `device`'s pool all the same (cudaMallocFromPoolAsync:
/// cudaMallocAsync takes the stream's device's pool); a default-stream handle is `device`'s own.
/// Measured on an H100, cudaMallocAsync is ~300 ns cheaper than cudaMallocFromPoolAsync, and the
/// device check costs one cudaGetDevice (~40 ns); the device is switched only when it differs.
inline void* malloc_device_async(std::size_t bytes, int device, stream_handle stream) {
  void* p = nullptr;
#if ARRAYPORT_HAS_CUDA
  require_device_index(device, "device allocation");
  if (is_default_stream(stream)) {
    device_guard guard(device);
    ARRAYPORT_CUDA_CHECK(cudaMallocAsync(&p, bytes, detail::to_cuda(stream)));
  } else if (stream_device(stream, device) == device) {
    ARRAYPORT_CUDA_CHECK(cudaMallocAsync(&p, bytes, detail::to_cuda(stream)));
  } else {
    p = malloc_from_pool_async(bytes, default_pool(device), stream);
  }
#else
  (void)bytes; (void)stream;
  require_device_index(device, "device allocation");
#endif
  return p;
}

/// Stream-ordered release of memory from a pool (the pointer names its pool and device).
inline void free_device_async(void* p, stream_handle stream) noexcept {
#if ARRAYPORT_HAS_CUDA
  if (p && !forked_after_cuda_init()) (void)cudaFreeAsync(p, detail::to_cuda(stream));
#else
  (void)p; (void)stream;
#endif
}

/// The same for memory of `device`: a default-stream handle means `device`'s default stream.
inline void free_device_async(void* p, stream_handle stream, int device) noexcept {
#if ARRAYPORT_HAS_CUDA
  if (!p) return;
  if (!is_default_stream(stream) || device < 0) return free_device_async(p, stream);
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current == device) return free_device_async(p, stream);
  if (cudaSetDevice(device) == cudaSuccess) {
    free_device_async(p, stream);
    (void)cudaSetDevice(current);
  }
#else
  (void)p; (void)stream; (void)device;
#endif
}

/// Makes `device`'s default pool keep freed memory instead of returning it to the driver at each
/// synchronisation, which is what makes cudaMallocAsync cost about a microsecond.
inline void retain_pool_memory(int device) {
  require_device_index(device, "retain_pool_memory");
#if ARRAYPORT_HAS_CUDA
  cudaMemPool_t pool = nullptr;
  ARRAYPORT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t threshold = ~std::uint64_t{0};  // the attribute is a cuuint64_t
  ARRAYPORT_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
#endif
}

/// Returns the unused memory of `device`'s default pool to the driver.
inline void trim_pool(int device) {
  require_device_index(device, "trim_pool");
#if ARRAYPORT_HAS_CUDA
  cudaMemPool_t pool = nullptr;
  ARRAYPORT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  ARRAYPORT_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
#endif
}

/// Managed (unified) allocation attached globally; the caller pools it (each call costs ~15 us).
inline void* malloc_managed(std::size_t bytes, int device) {
  require_device_index(device, "managed allocation");
  void* p = nullptr;
#if ARRAYPORT_HAS_CUDA
  device_guard guard(device);
  ARRAYPORT_CUDA_CHECK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
#else
  (void)bytes;
#endif
  return p;
}

/// Page-locked host allocation, portable across devices.
inline void* malloc_pinned(std::size_t bytes) {
  require_device("pinned allocation");
  void* p = nullptr;
#if ARRAYPORT_HAS_CUDA
  ARRAYPORT_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
#else
  (void)bytes;
#endif
  return p;
}

/// Frees managed or device memory from cudaMalloc/cudaMallocManaged (synchronises the device).
inline void free_managed(void* p) noexcept {
#if ARRAYPORT_HAS_CUDA
  if (p && !forked_after_cuda_init()) (void)cudaFree(p);
#else
  (void)p;
#endif
}

inline void free_pinned(void* p) noexcept {
#if ARRAYPORT_HAS_CUDA
  if (p && !forked_after_cuda_init()) (void)cudaFreeHost(p);
#else
  (void)p;
#endif
}

/// Page-locks existing host memory (for the pipeline's zero-staging transfers).
inline void host_register(void* p, std::size_t bytes) {
  require_device("host_register");
#if ARRAYPORT_HAS_CUDA
  ARRAYPORT_CUDA_CHECK(cudaHostRegister(p, bytes, cudaHostRegisterPortable));
#else
  (void)p; (void)bytes;
#endif
}

inline void host_unregister(void* p) noexcept {
#if ARRAYPORT_HAS_CUDA
  if (p && !forked_after_cuda_init()) (void)cudaHostUnregister(p);
#else
  (void)p;
#endif
}

/// The memory kind and device of any pointer. Memory CUDA does not know is host memory.
struct pointer_info {
  memory_kind kind = memory_kind::host;
  int device = -1;  ///< the owning device for device/managed memory, -1 otherwise
};

inline pointer_info query_pointer(const void* p) noexcept {
  pointer_info info;
#if ARRAYPORT_HAS_CUDA
  if (!p || !is_available()) return info;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return info;
  }
  switch (attr.type) {
    case cudaMemoryTypeHost: info.kind = memory_kind::pinned; break;
    case cudaMemoryTypeDevice: info.kind = memory_kind::device; info.device = attr.device; break;
    case cudaMemoryTypeManaged: info.kind = memory_kind::managed; info.device = attr.device; break;
    default: break;
  }
#else
  (void)p;
#endif
  return info;
}

#if ARRAYPORT_HAS_CUDA
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
#endif

/// Whether CUDA knows `p`: device, managed or page-locked host memory (query_pointer's kind is
/// not host). Asked of the driver with one attribute, a third of cudaPointerGetAttributes' cost
/// (60 against 170 ns on an H100); any answer but "known" or "unknown" asks query_pointer.
inline bool cuda_knows_pointer(const void* p) noexcept {
#if ARRAYPORT_HAS_CUDA
  if (!p || !is_available()) return false;
  if (const detail::pointer_attribute_fn get = detail::driver_pointer_attribute()) {
    unsigned int type = 0;
    const CUresult r = get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(p));
    if (r == CUDA_SUCCESS) return true;
    if (r == CUDA_ERROR_INVALID_VALUE) return false;
  }
  return query_pointer(p).kind != memory_kind::host;
#else
  (void)p;
  return false;
#endif
}

// ---------------------------------------------------------------------------------------------
// Copies and memsets. Unified addressing lets the runtime infer the direction from the pointers.
// Each names the memory kinds it touches and refuses memory this process cannot reach.

/// Copies `bytes` from `src` (memory of `src_kind`) to `dst` (of `dst_kind`) in order on `stream`:
/// cudaMemcpyAsync where CUDA is usable, else a CPU memcpy, which only host and pinned memory get
/// (no_device_error naming `what` for the others). Returns once queued; a copy into pageable host
/// memory is complete on return (CUDA's rule).
inline void memcpy_async(void* dst, memory_kind dst_kind, const void* src, memory_kind src_kind,
                         std::size_t bytes, stream_handle stream, const char* what) {
  require_reachable(dst_kind, what, "the destination");
  require_reachable(src_kind, what, "the source");
  if (bytes == 0) return;
#if ARRAYPORT_HAS_CUDA
  if (is_available()) {
    ARRAYPORT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, detail::to_cuda(stream)));
    return;
  }
#endif
  (void)stream;
  std::memcpy(dst, src, bytes);
}

/// Sets `bytes` bytes at `dst` (memory of `kind`) to `value` in order on `stream`: cudaMemsetAsync
/// where CUDA is usable (the value travels with the call: nothing waits), else a CPU memset of host
/// or pinned memory (no_device_error naming `what` for the others).
inline void memset_async(void* dst, memory_kind kind, int value, std::size_t bytes,
                         stream_handle stream, const char* what) {
  require_reachable(kind, what, "the destination");
  if (bytes == 0) return;
#if ARRAYPORT_HAS_CUDA
  if (is_available()) {
    ARRAYPORT_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, detail::to_cuda(stream)));
    return;
  }
#endif
  (void)stream;
  std::memset(dst, value, bytes);
}

/// The same for memory the caller knows to be host memory, or known to CUDA where CUDA is usable
/// (what arrayport's own allocations are): without a device both sides are taken as host memory.
inline void memcpy_async(void* dst, const void* src, std::size_t bytes, stream_handle stream) {
  memcpy_async(dst, memory_kind::host, src, memory_kind::host, bytes, stream, "memcpy_async");
}

inline void memset_async(void* dst, int value, std::size_t bytes, stream_handle stream) {
  memset_async(dst, memory_kind::host, value, bytes, stream, "memset_async");
}

/// Prefetches managed memory to `device` (or to the host when device < 0).
inline void mem_prefetch_async(const void* p, std::size_t bytes, int device, stream_handle stream) {
  require_device("prefetch");
#if ARRAYPORT_HAS_CUDA
#if CUDART_VERSION >= 13000
  cudaMemLocation loc{};
  loc.type = device < 0 ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  loc.id = device < 0 ? 0 : device;
  ARRAYPORT_CUDA_CHECK(cudaMemPrefetchAsync(p, bytes, loc, 0, detail::to_cuda(stream)));
#else
  ARRAYPORT_CUDA_CHECK(cudaMemPrefetchAsync(p, bytes, device < 0 ? cudaCpuDeviceId : device,
                                            detail::to_cuda(stream)));
#endif
#else
  (void)p; (void)bytes; (void)device; (void)stream;
#endif
}

/// Advice for managed memory: the values of cudaMemoryAdvise.
enum class mem_advice : int {
  set_read_mostly = 1,
  unset_read_mostly = 2,
  set_preferred_location = 3,
  unset_preferred_location = 4,
  set_accessed_by = 5,
  unset_accessed_by = 6
};

/// Advises the driver about managed memory; `device` < 0 names the host.
inline void mem_advise(const void* p, std::size_t bytes, mem_advice advice, int device) {
  require_device("advise");
#if ARRAYPORT_HAS_CUDA
  const auto a = static_cast<cudaMemoryAdvise>(static_cast<int>(advice));
#if CUDART_VERSION >= 13000
  cudaMemLocation loc{};
  loc.type = device < 0 ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  loc.id = device < 0 ? 0 : device;
  ARRAYPORT_CUDA_CHECK(cudaMemAdvise(p, bytes, a, loc));
#else
  ARRAYPORT_CUDA_CHECK(cudaMemAdvise(p, bytes, a, device < 0 ? cudaCpuDeviceId : device));
#endif
#else
  (void)p; (void)bytes; (void)advice; (void)device;
#endif
}

// ---------------------------------------------------------------------------------------------
// Kernel launches (the launch itself is compiled by nvcc where the kernel is)

/// Throws cuda_error for a failed kernel launch (bad configuration, no image for this GPU), naming
/// the kernel. Call right after a <<<...>>> launch; it does not wait for the kernel.
inline void check_launch(const char* kernel) {
#if ARRAYPORT_HAS_CUDA
  check_not_forked(kernel);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) detail::throw_cuda_error(status, kernel, __FILE__, __LINE__);
#else
  (void)kernel;
#endif
}

// ---------------------------------------------------------------------------------------------
// Streams and events

inline stream_handle stream_create(int device, int priority, bool non_blocking) {
  require_device_index(device, "stream creation");
#if ARRAYPORT_HAS_CUDA
  device_guard guard(device);
  cudaStream_t s = nullptr;
  ARRAYPORT_CUDA_CHECK(cudaStreamCreateWithPriority(
      &s, non_blocking ? cudaStreamNonBlocking : cudaStreamDefault, priority));
  return s;
#else
  (void)priority; (void)non_blocking;
  return nullptr;
#endif
}

inline void stream_destroy(stream_handle s) noexcept {
#if ARRAYPORT_HAS_CUDA
  if (s && !forked_after_cuda_init()) (void)cudaStreamDestroy(detail::to_cuda(s));
#else
  (void)s;
#endif
}

inline void stream_synchronize(stream_handle s) {
#if ARRAYPORT_HAS_CUDA
  if (!is_available()) return;  // no device work can be pending
  ARRAYPORT_CUDA_CHECK(cudaStreamSynchronize(detail::to_cuda(s)));
#else
  (void)s;
#endif
}

/// Waits for `s`; a default-stream handle means `device`'s default stream (-1: the current device's).
inline void stream_synchronize(stream_handle s, int device) {
  device_guard guard(is_default_stream(s) ? device : -1);
  stream_synchronize(s);
}

/// True when all work on `s` has completed.
inline bool stream_query(stream_handle s) {
#if ARRAYPORT_HAS_CUDA
  if (!is_available()) return true;
  cudaError_t status = cudaStreamQuery(detail::to_cuda(s));
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  ARRAYPORT_CUDA_CHECK(status);
#else
  (void)s;
#endif
  return true;
}

inline event_handle event_create(bool timing, bool blocking) {
  require_device("event creation");
#if ARRAYPORT_HAS_CUDA
  cudaEvent_t e = nullptr;
  unsigned flags = (timing ? 0u : cudaEventDisableTiming) | (blocking ? cudaEventBlockingSync : 0u);
  ARRAYPORT_CUDA_CHECK(cudaEventCreateWithFlags(&e, flags));
  return e;
#else
  (void)timing; (void)blocking;
  return nullptr;
#endif
}

inline void event_destroy(event_handle e) noexcept {
#if ARRAYPORT_HAS_CUDA
  if (e && !forked_after_cuda_init()) (void)cudaEventDestroy(detail::to_cuda_event(e));
#else
  (void)e;
#endif
}

inline void event_record(event_handle e, stream_handle s) {
#if ARRAYPORT_HAS_CUDA
  check_not_forked("cudaEventRecord");
  ARRAYPORT_CUDA_CHECK(cudaEventRecord(detail::to_cuda_event(e), detail::to_cuda(s)));
#else
  (void)e; (void)s;
#endif
}

inline void event_synchronize(event_handle e) {
#if ARRAYPORT_HAS_CUDA
  check_not_forked("cudaEventSynchronize");
  ARRAYPORT_CUDA_CHECK(cudaEventSynchronize(detail::to_cuda_event(e)));
#else
  (void)e;
#endif
}

/// True when the work captured by the event's last record has completed.
inline bool event_query(event_handle e) {
#if ARRAYPORT_HAS_CUDA
  check_not_forked("cudaEventQuery");
  cudaError_t status = cudaEventQuery(detail::to_cuda_event(e));
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  ARRAYPORT_CUDA_CHECK(status);
#else
  (void)e;
#endif
  return true;
}

/// Milliseconds between two recorded timing events.
inline float event_elapsed_ms(event_handle start, event_handle end) {
#if ARRAYPORT_HAS_CUDA
  check_not_forked("cudaEventElapsedTime");
  float ms = 0.f;
  ARRAYPORT_CUDA_CHECK(cudaEventElapsedTime(&ms, detail::to_cuda_event(start), detail::to_cuda_event(end)));
  return ms;
#else
  (void)start; (void)end;
  return 0.f;
#endif
}

/// Makes future work on `s` wait for `e` (no host synchronisation).
inline void stream_wait_event(stream_handle s, event_handle e) {
#if ARRAYPORT_HAS_CUDA
  check_not_forked("cudaStreamWaitEvent");
  ARRAYPORT_CUDA_CHECK(cudaStreamWaitEvent(detail::to_cuda(s), detail::to_cuda_event(e), 0));
#else
  (void)s; (void)e;
#endif
}

/// Makes work enqueued later on `consumer` wait for the work enqueued so far on `producer`, both
/// streams of `device`: an event recorded on one and waited on by the other, never a host or
/// device-wide synchronisation. Nothing to do when they are the same stream. The event is one per
/// thread and device, reused: a wait captures the event's state when it is enqueued.
inline void order_streams(stream_handle producer, stream_handle consumer, int device) {
  if (producer == consumer) return;
#if ARRAYPORT_HAS_CUDA
  if (!is_available()) return;
  constexpr int cached_devices = 64;
  thread_local event_handle events[cached_devices] = {};  // created on their device, as
  // cudaEventRecord requires: the producer's (a default-stream handle is `device`'s)
  const int current = stream_device(producer, device >= 0 ? device : get_device());
  device_guard guard(current);
  if (current < cached_devices) {
    if (!events[current]) events[current] = event_create(false, false);
    event_record(events[current], producer);
    stream_wait_event(consumer, events[current]);
    return;
  }
  event_handle e = event_create(false, false);
  try {
    event_record(e, producer);
    stream_wait_event(consumer, e);
  } catch (...) {
    event_destroy(e);
    throw;
  }
  event_destroy(e);  // CUDA keeps it until the wait is done
#else
  (void)device;
#endif
}

/// The same across devices: `consumer` (a stream of `consumer_device`, or that device's default
/// stream) waits for the work queued so far on `producer` (of `producer_device`). -1 names the
/// current device. A stream may wait on another device's event; the event is recorded with its
/// own device current and the wait enqueued with the consumer's.
inline void order_streams(stream_handle producer, int producer_device, stream_handle consumer,
                          int consumer_device) {
#if ARRAYPORT_HAS_CUDA
  if (!is_available()) return;
  const int current = get_device();
  const int from = stream_device(producer, producer_device >= 0 ? producer_device : current);
  const int to = stream_device(consumer, consumer_device >= 0 ? consumer_device : current);
  if (from == to) return order_streams(producer, consumer, from);
  constexpr int cached_devices = 64;
  thread_local event_handle events[cached_devices] = {};
  event_handle e = nullptr;
  {
    device_guard guard(from);
    e = from < cached_devices && events[from] ? events[from] : event_create(false, false);
    if (from < cached_devices) events[from] = e;
    event_record(e, producer);
  }
  device_guard guard(to);
  try {
    stream_wait_event(consumer, e);
  } catch (...) {
    if (from >= cached_devices) event_destroy(e);
    throw;
  }
  if (from >= cached_devices) event_destroy(e);
#else
  (void)producer; (void)producer_device; (void)consumer; (void)consumer_device;
#endif
}

/// Lets kernels and copies on `device` reach `peer`'s memory directly (cudaDeviceEnablePeerAccess),
/// once per ordered pair and process. Returns false when the hardware cannot, or when the
/// ARRAYPORT_P2P_DISABLE environment variable is set to anything but 0 or empty (read once: for
/// tests, and for machines whose peer links are slower than staging through the host).
inline bool enable_peer_access(int device, int peer) {
  if (device == peer) return true;
#if ARRAYPORT_HAS_CUDA
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
    ARRAYPORT_CUDA_CHECK(cudaMemPoolSetAccess(static_cast<cudaMemPool_t>(default_pool(peer)), &access, 1));
  }
  state[device][peer].store(ok ? 1 : 2, std::memory_order_release);
  return ok;
#else
  return false;
#endif
}

}  // namespace arrayport::runtime
