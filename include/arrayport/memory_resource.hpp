// Memory resources: host, pinned, device (stream-ordered pool) and managed (pooled), one per
// (kind, device), process-wide.
//
// Costs they exist to avoid, measured on an H100: cudaMallocManaged+cudaFree ~15 us a call,
// cudaMalloc+cudaFree 2.4 us, cudaMallocAsync+cudaFreeAsync 1.1 us. Device memory comes from the
// device's cudaMallocAsync pool (kept from shrinking); managed and pinned memory from a caching
// pool that reuses a block only once the work queued before its release has completed, because
// host code may touch those kinds outside any stream order.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/detail/caching_pool.hpp>
#include <arrayport/error.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace arrayport {

/// Alignment of every allocation: what cudaMalloc guarantees, and enough for any vector load.
inline constexpr std::size_t allocation_alignment = 256;

/// Allocates and frees memory of one kind on one device. Thread-safe.
class memory_resource {
 public:
  memory_resource(memory_kind kind, int device) noexcept : m_kind(kind), m_device(device) {}
  virtual ~memory_resource() = default;
  memory_resource(const memory_resource&) = delete;
  memory_resource& operator=(const memory_resource&) = delete;

  /// `bytes` > 0. Stream-ordered kinds make the memory usable on `stream`; others ignore it.
  virtual void* allocate(std::size_t bytes, stream_handle stream) = 0;
  /// Releases memory from allocate() with the same size; work queued on `stream` may still use it.
  virtual void deallocate(void* p, std::size_t bytes, stream_handle stream) noexcept = 0;
  /// Returns cached memory to the system.
  virtual void release_cached() noexcept {}

  memory_kind kind() const noexcept { return m_kind; }
  /// The CUDA device, or -1 for host kinds.
  int device() const noexcept { return m_device; }

 private:
  memory_kind m_kind;
  int m_device;
};

namespace detail {

inline std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// Large host blocks come straight from mmap, one page fault per 4 KiB page on first touch: a
// fresh 64 MiB result spent two thirds of an element-wise op in the kernel's page faults. Asking
// for transparent huge pages (where the system leaves them to madvise) makes that one fault per
// 2 MiB, as NumPy does for its allocations of 4 MiB and more.
inline constexpr std::size_t huge_page_threshold = std::size_t(1) << 22;

inline void advise_huge_pages(void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t page = 4096;
  const auto lo = (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
  const auto hi = reinterpret_cast<std::uintptr_t>(p) + bytes;
  if (hi > lo) (void)::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);  // a hint
#else
  (void)p;
  (void)bytes;
#endif
}

// Freed host blocks of up to 64 KiB, kept by the thread that frees them for its next
// allocations of the same size class: malloc and free of a 4 KiB block took 570 instructions of
// a 1,024-element op's 4,600, the cache 180 (NumPy keeps blocks of up to 1 KiB alike). A thread
// keeps at most `depth` blocks of each class (512 KiB in all), freed when it exits. Not under
// AddressSanitizer, which then sees every block's own bounds and every use after its free.
#if defined(__SANITIZE_ADDRESS__)
#define ARRAYPORT_HOST_BLOCK_CACHE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARRAYPORT_HOST_BLOCK_CACHE 0
#endif
#endif
#ifndef ARRAYPORT_HOST_BLOCK_CACHE
#define ARRAYPORT_HOST_BLOCK_CACHE 1
#endif
struct host_block_cache {
  static constexpr bool enabled = ARRAYPORT_HOST_BLOCK_CACHE;
  static constexpr int classes = 9;  // allocation_alignment << c bytes, c < classes: up to 64 KiB
  static constexpr int depth = 4;
  void* blocks[classes][depth];
  int count[classes];
  bool closed;  // the thread's exit freed the blocks: later ones go straight to free()

  void release() noexcept {
    for (int c = 0; c < classes; ++c)
      while (count[c] > 0) std::free(static_cast<void**>(blocks[c][--count[c]])[-1]);
  }
  /// The calling thread's cache; nullptr once the thread's exit has released it. The cache itself
  /// has no destructor, so that frees from later thread-exit code still find valid storage.
  static host_block_cache* mine() noexcept {
    static thread_local host_block_cache cache;  // zero-initialised
    struct closer {
      ~closer() {
        cache.release();
        cache.closed = true;
      }
    };
    static thread_local closer close_at_exit;
    (void)close_at_exit;
    return cache.closed ? nullptr : &cache;
  }
};

class host_resource final : public memory_resource {
 public:
  host_resource() noexcept : memory_resource(memory_kind::host, -1) {}
  // An aligned address inside a malloc block, the block's own address and its size class + 1 (0:
  // not cached) stored just below it: glibc's aligned_alloc splits off and frees a leading piece
  // on every call (55 ns a 256-byte allocation and free, against malloc's 15).
  void* allocate(std::size_t bytes, stream_handle) override {
    constexpr std::size_t pad = allocation_alignment + 2 * sizeof(void*);
    if (bytes > SIZE_MAX - 2 * pad) throw std::bad_alloc();
    std::size_t size = round_up(bytes, allocation_alignment);
    std::uintptr_t cls = 0;
    if (host_block_cache::enabled &&
        size <= (allocation_alignment << (host_block_cache::classes - 1))) {
      while ((allocation_alignment << cls) < size) ++cls;
      host_block_cache* cache = host_block_cache::mine();
      if (cache && cache->count[cls] > 0) return cache->blocks[cls][--cache->count[cls]];
      size = allocation_alignment << cls++;
    }
    void* block = std::malloc(size + pad);
    if (!block) throw std::bad_alloc();
    const auto at =
        round_up(reinterpret_cast<std::uintptr_t>(block) + 2 * sizeof(void*), allocation_alignment);
    void* p = reinterpret_cast<void*>(at);
    static_cast<void**>(p)[-1] = block;
    static_cast<std::uintptr_t*>(p)[-2] = cls;
    if (size >= huge_page_threshold) advise_huge_pages(p, size);
    return p;
  }
  void deallocate(void* p, std::size_t, stream_handle) noexcept override {
    if (!p) return;
    if (const std::uintptr_t cls = static_cast<std::uintptr_t*>(p)[-2]) {
      host_block_cache* cache = host_block_cache::mine();
      if (cache && cache->count[cls - 1] < host_block_cache::depth) {
        cache->blocks[cls - 1][cache->count[cls - 1]++] = p;
        return;
      }
    }
    std::free(static_cast<void**>(p)[-1]);
  }
  /// Frees the blocks the calling thread keeps (other threads free theirs when they exit).
  void release_cached() noexcept override {
    if (host_block_cache* cache = host_block_cache::mine()) cache->release();
  }
};

class device_resource final : public memory_resource {
 public:
  explicit device_resource(int device) : memory_resource(memory_kind::device, device) {
    runtime::retain_pool_memory(device);
  }
  ~device_resource() override { release_cached(); }

  void* allocate(std::size_t bytes, stream_handle stream) override {
    if (bytes <= max_cached) {
      // Every small block is of its full size class, so the cache may take it back whatever
      // stream it ends up released on (buffer::set_stream can move it).
      if (is_legacy(stream))
        if (void* p = m_cache.take(bytes)) return p;
      bytes = caching_pool::size_class(bytes);
    }
    try {
      return runtime::malloc_device_async(bytes, device(), stream);
    } catch (const out_of_memory&) {
      // What this pool holds unused may be what is missing: return it to the driver, retry once.
      release_cached();
      runtime::stream_synchronize(stream, device());
      runtime::trim_pool(device());
      try {
        return runtime::malloc_device_async(bytes, device(), stream);
      } catch (const out_of_memory&) {
        // A failed request can leave the pool holding what it reserved on the way (measured on
        // an H100: all of the card). Give it back, so that the process and every other library
        // in it can go on.
        try {
          runtime::trim_pool(device());
        } catch (...) {  // the out-of-memory error is the one to report
        }
        throw;
      }
    }
  }
  void deallocate(void* p, std::size_t bytes, stream_handle stream) noexcept override {
    if (is_legacy(stream) && bytes <= max_cached && m_cache.give(p, bytes)) return;
    runtime::free_device_async(p, stream, device());
  }
  void release_cached() noexcept override {
    m_cache.drain([this](void* p) { runtime::free_device_async(p, nullptr, device()); });
    try {
      runtime::trim_pool(device());
    } catch (...) {
    }
  }

  /// Blocks up to this size released on the device's legacy default stream are kept for the
  /// next allocation on that stream.
  static constexpr std::size_t max_cached = std::size_t{1} << 20;

 private:
  // nullptr or cudaStreamLegacy: one stream per device for the whole process, which never dies
  // (the per-thread default stream is one per thread: not the same stream from thread to thread).
  static bool is_legacy(stream_handle s) noexcept {
    return reinterpret_cast<std::uintptr_t>(s) <= 1;
  }

  // The small blocks last released on the device's legacy default stream, by size class. Handing
  // one out again for the next allocation ordered on the same stream is exactly the reuse the
  // cudaMallocAsync pool makes (stream order guarantees the earlier work is done first), without
  // its ~1 us round trip: measured on an H100, empty((1000,)) in device memory went from 1.3-1.8 us
  // to under 1 us. A stream that may die (every other one) goes to the pool directly.
  class stream_order_cache {
   public:
    void* take(std::size_t bytes) noexcept {
      std::lock_guard<std::mutex> lock(m_mutex);
      auto it = m_bins.find(caching_pool::size_class(bytes));
      if (it == m_bins.end() || it->second.empty()) return nullptr;
      void* p = it->second.back();
      it->second.pop_back();
      return p;
    }
    bool give(void* p, std::size_t bytes) noexcept {
      try {
        std::lock_guard<std::mutex> lock(m_mutex);
        auto& bin = m_bins[caching_pool::size_class(bytes)];
        if (bin.size() >= max_per_class) return false;
        bin.push_back(p);
        return true;
      } catch (...) {
        return false;
      }
    }
    template <class Free>
    void drain(Free free) noexcept {
      std::lock_guard<std::mutex> lock(m_mutex);
      for (auto& [size, bin] : m_bins)
        for (void* p : bin) free(p);
      m_bins.clear();
    }

   private:
    static constexpr std::size_t max_per_class = 64;
    std::mutex m_mutex;
    std::unordered_map<std::size_t, std::vector<void*>> m_bins;
  };
  stream_order_cache m_cache;
};

class managed_resource final : public memory_resource {
 public:
  explicit managed_resource(int device)
      : memory_resource(memory_kind::managed, device),
        m_pool([device](std::size_t n) { return runtime::malloc_managed(n, device); },
               [](void* p) noexcept { runtime::free_managed(p); }) {}
  void* allocate(std::size_t bytes, stream_handle stream) override {
    runtime::refuse_during_capture(stream, "allocating managed memory",
                                   "cudaMallocManaged is not stream-ordered; memory='device' is");
    return m_pool.allocate(bytes);
  }
  void deallocate(void* p, std::size_t bytes, stream_handle stream) noexcept override {
    m_pool.deallocate(p, bytes, stream, device());
  }
  void release_cached() noexcept override { m_pool.release_cached(); }

 private:
  caching_pool m_pool;
};

class pinned_resource final : public memory_resource {
 public:
  pinned_resource()
      : memory_resource(memory_kind::pinned, -1),
        m_pool([](std::size_t n) { return runtime::malloc_pinned(n); },
               [](void* p) noexcept { runtime::free_pinned(p); }) {}
  void* allocate(std::size_t bytes, stream_handle stream) override {
    runtime::refuse_during_capture(stream, "allocating pinned memory",
                                   "cudaHostAlloc is not stream-ordered; memory='device' is");
    return m_pool.allocate(bytes);
  }
  void deallocate(void* p, std::size_t bytes, stream_handle stream) noexcept override {
    m_pool.deallocate(p, bytes, stream, -1);
  }
  void release_cached() noexcept override { m_pool.release_cached(); }

 private:
  caching_pool m_pool;
};

/// The process-wide resources, created on first use and deliberately never destroyed: memory may
/// be freed from static destructors and at interpreter shutdown, after the CUDA runtime itself has
/// been torn down. Lookups of existing resources take no lock (they sit on every allocation).
struct resource_registry {
  static constexpr int max_devices = 64;

  std::mutex mutex;  // guards creation only
  host_resource host;
  std::atomic<memory_resource*> pinned{nullptr};
  std::atomic<memory_resource*> device[max_devices] = {};
  std::atomic<memory_resource*> managed[max_devices] = {};

  static resource_registry& instance() {
    static resource_registry* r = new resource_registry();
    return *r;
  }

  template <class Make>
  memory_resource& get_or_create(std::atomic<memory_resource*>& slot, Make make) {
    if (memory_resource* r = slot.load(std::memory_order_acquire)) return *r;
    std::lock_guard<std::mutex> lock(mutex);
    if (memory_resource* r = slot.load(std::memory_order_relaxed)) return *r;
    memory_resource* r = make();
    slot.store(r, std::memory_order_release);
    return *r;
  }

  template <class F>
  void for_each(F f) {
    if (memory_resource* r = pinned.load()) f(*r);
    for (int d = 0; d < max_devices; ++d) {
      if (memory_resource* r = device[d].load()) f(*r);
      if (memory_resource* r = managed[d].load()) f(*r);
    }
  }
};

}  // namespace detail

/// The memory kind an allocation gets when none is asked for: managed where a GPU is present,
/// host otherwise.
inline memory_kind default_memory_kind() {
  return runtime::is_available() ? memory_kind::managed : memory_kind::host;
}

/// The resource for `kind` on `device` (-1: the current device). Without a GPU, managed and pinned
/// requests fall back to host memory (check resource.kind()); device requests throw
/// no_device_error. A device index out of range is a value_error.
inline memory_resource& get_memory_resource(memory_kind kind, int device = -1) {
  auto& r = detail::resource_registry::instance();
  if (kind == memory_kind::host) return r.host;
  if (!runtime::is_available()) {
    if (kind == memory_kind::device) runtime::require_device("device memory");
    return r.host;
  }
  if (kind == memory_kind::pinned)
    return r.get_or_create(r.pinned, [] { return new detail::pinned_resource(); });
  if (device < 0) device = runtime::get_device();
  runtime::require_device_index(device,
                                kind == memory_kind::device ? "device memory" : "managed memory");
  if (device >= detail::resource_registry::max_devices)
    throw value_error("arrayport supports at most 64 devices per process, got device " +
                      std::to_string(device));
  if (kind == memory_kind::device)
    return r.get_or_create(r.device[device],
                           [device] { return new detail::device_resource(device); });
  return r.get_or_create(r.managed[device],
                         [device] { return new detail::managed_resource(device); });
}

/// Returns every pool's cached memory to the system (e.g. before handing the GPU to another
/// library, or after an out-of-memory error), and the host blocks the calling thread keeps.
inline void release_cached_memory() noexcept {
  detail::resource_registry::instance().host.release_cached();
  detail::resource_registry::instance().for_each([](memory_resource& r) { r.release_cached(); });
}

}  // namespace arrayport
