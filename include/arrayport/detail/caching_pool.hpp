// A caching allocator for host-accessible CUDA memory (managed, pinned).
//
// A released block is cached by size class together with an event recorded on the releasing
// stream; it is handed out again only once that event has completed. Waiting for completion
// (rather than for stream order, as cudaMallocAsync does) is required here because host code can
// read and write these kinds outside any stream.
#pragma once

#include <arrayport/error.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime.hpp>

#include <cstddef>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace arrayport::detail {

class caching_pool {
 public:
  using allocate_fn = std::function<void*(std::size_t)>;
  using free_fn = void (*)(void*) noexcept;

  caching_pool(allocate_fn upstream_allocate, free_fn upstream_free)
      : m_allocate(std::move(upstream_allocate)), m_free(upstream_free) {}
  ~caching_pool() { release_cached(); }
  caching_pool(const caching_pool&) = delete;
  caching_pool& operator=(const caching_pool&) = delete;

  /// Small blocks round to 512 bytes, large ones to 2 MiB (the driver's own granularity), so a
  /// cached block is never more than that larger than asked for.
  static std::size_t size_class(std::size_t bytes) noexcept {
    constexpr std::size_t small = 512, large = std::size_t{2} << 20;
    std::size_t to = bytes < (std::size_t{1} << 20) ? small : large;
    return (bytes + to - 1) / to * to;
  }

  void* allocate(std::size_t bytes) {
    const std::size_t size = size_class(bytes);
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      auto it = m_bins.find(size);
      if (it != m_bins.end()) {
        auto& bin = it->second;
        for (std::size_t i = bin.size(); i-- > 0;) {
          if (bin[i].ready && !runtime::event_query(bin[i].ready)) continue;
          void* p = bin[i].ptr;
          if (bin[i].ready) m_spare_events[bin[i].event_device].push_back(bin[i].ready);
          bin.erase(bin.begin() + static_cast<std::ptrdiff_t>(i));
          m_cached_bytes -= size;
          return p;
        }
      }
    }
    try {
      return m_allocate(size);
    } catch (const out_of_memory&) {
      release_cached();
      return m_allocate(size);
    }
  }

  /// `device`: the device of the memory (-1 for pinned), whose default stream a default-stream
  /// handle names.
  void deallocate(void* p, std::size_t bytes, stream_handle stream, int device) noexcept {
    if (!p) return;
    const std::size_t size = size_class(bytes);
    std::lock_guard<std::mutex> lock(m_mutex);
    event_handle ready = nullptr;
    int event_device = -1;
    try {
      if (runtime::is_available()) {
        if (runtime::stream_capturing(stream)) {
          // Released inside a capture: the graph may write the block at every replay, for as
          // long as it lives, which nothing here can see. The block is never handed out again.
          m_captured.push_back(p);
          return;
        }
        // An event is recorded on a stream of its own device: the stream's, or for a default
        // stream the memory's (pinned memory: the current device's).
        event_device = runtime::stream_device(stream, device >= 0 ? device : runtime::get_device());
        runtime::device_guard guard(event_device);
        auto& spare = m_spare_events[event_device];
        if (spare.empty()) {
          ready = runtime::event_create(false, false);
        } else {
          ready = spare.back();
          spare.pop_back();
        }
        runtime::event_record(ready, stream);
      }
      // No device: no queued work can touch the block, so it is reusable at once.
    } catch (...) {
      // The context is unusable (or the stream is gone): nothing can be pending on the block,
      // but nothing can be recorded either. Hand it back to the driver instead of caching it.
      if (ready) runtime::event_destroy(ready);
      m_free(p);
      return;
    }
    m_bins[size].push_back(block{p, ready, event_device});
    m_cached_bytes += size;
  }

  /// Frees every cached block whose last use has completed.
  void release_cached() noexcept {
    std::lock_guard<std::mutex> lock(m_mutex);
    runtime::relaxed_capture_mode relaxed;
    for (auto& [size, bin] : m_bins) {
      std::vector<block> keep;
      for (block& b : bin) {
        bool done = true;
        try {
          done = !b.ready || runtime::event_query(b.ready);
        } catch (...) {
        }
        if (!done) {
          keep.push_back(b);
          continue;
        }
        if (b.ready) runtime::event_destroy(b.ready);
        m_free(b.ptr);
        m_cached_bytes -= size;
      }
      bin = std::move(keep);
    }
    for (auto& [device, events] : m_spare_events)
      for (event_handle e : events) runtime::event_destroy(e);
    m_spare_events.clear();
  }

  std::size_t cached_bytes() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_cached_bytes;
  }

 private:
  struct block {
    void* ptr;
    event_handle ready;  // completes when the work queued before the release has completed
    int event_device;    // the device `ready` was created on
  };

  allocate_fn m_allocate;
  free_fn m_free;
  std::vector<void*> m_captured;  // released during a CUDA-graph capture: kept, never reused
  mutable std::mutex m_mutex;
  std::unordered_map<std::size_t, std::vector<block>> m_bins;
  std::unordered_map<int, std::vector<event_handle>> m_spare_events;  // by device
  std::size_t m_cached_bytes = 0;
};

}  // namespace arrayport::detail
