// Eight threads at once on the core: the probe, the resource registry and pools, buffers, vectors,
// views, streams and events (the CPU fallback without a GPU). .ci/sanitize runs this file under
// ThreadSanitizer as well. Threads report failures as strings; the main thread asserts, so the
// checks do not depend on GoogleTest's own thread safety.
#include <arrayport/buffer.hpp>
#include <arrayport/detail/caching_pool.hpp>
#include <arrayport/event.hpp>
#include <arrayport/memory_resource.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/stream.hpp>
#include <arrayport/vector.hpp>
#include <arrayport/view.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "gpu.hpp"

using arrayport::memory_kind;
namespace rt = arrayport::runtime;

namespace {

constexpr int thread_count = 8;

// Runs body(t) for t in [0, thread_count) on as many threads, released together; returns what
// they reported ("" is success), one entry per failing thread.
template <class Body>
std::vector<std::string> run_together(Body body) {
  std::atomic<int> arrived{0};
  std::vector<std::string> reports(thread_count);
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t) {
    threads.emplace_back([&, t] {
      arrived.fetch_add(1);
      while (arrived.load() < thread_count) std::this_thread::yield();
      try {
        reports[std::size_t(t)] = body(t);
      } catch (const std::exception& e) {
        reports[std::size_t(t)] = std::string("threw: ") + e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<std::string> failures;
  for (int t = 0; t < thread_count; ++t)
    if (!reports[std::size_t(t)].empty())
      failures.push_back("thread " + std::to_string(t) + ": " + reports[std::size_t(t)]);
  return failures;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace

TEST(Threads, FirstUseOfTheProbeAndTheResourceRegistryIsOneAnswerForAll) {
  std::vector<const void*> probes(thread_count), resources(thread_count * 3);
  auto failures = run_together([&](int t) -> std::string {
    probes[std::size_t(t)] = &rt::probe();
    const bool available = rt::is_available();
    const memory_kind kinds[] = {memory_kind::host, memory_kind::pinned, memory_kind::managed};
    for (int k = 0; k < 3; ++k) {
      arrayport::memory_resource& r = arrayport::get_memory_resource(kinds[k], available ? 0 : -1);
      resources[std::size_t(t * 3 + k)] = &r;
      if (!available && r.kind() != memory_kind::host)
        return "without a GPU, " + std::string(arrayport::to_string(kinds[k])) +
               " memory must fall back to host, got " + std::string(arrayport::to_string(r.kind()));
    }
    if (!available) {
      try {
        arrayport::get_memory_resource(memory_kind::device);
        return "device memory without a GPU did not throw";
      } catch (const arrayport::no_device_error&) {
      }
    }
    return "";
  });
  EXPECT_TRUE(failures.empty()) << join(failures);
  for (int t = 1; t < thread_count; ++t) {
    EXPECT_EQ(probes[std::size_t(t)], probes[0]);
    for (int k = 0; k < 3; ++k)  // one resource per kind, however many threads asked first
      EXPECT_EQ(resources[std::size_t(t * 3 + k)], resources[std::size_t(k)]) << "kind " << k;
  }
}

TEST(Threads, VectorsAndBuffersOfEveryKindKeepEachThreadsValues) {
  const bool gpu = rt::is_available();
  auto failures = run_together([&](int t) -> std::string {
    const memory_kind kinds[] = {memory_kind::host, memory_kind::pinned, memory_kind::managed};
    for (int i = 0; i < 200; ++i) {
      const memory_kind kind = kinds[i % 3];
      // Sizes on both sides of the pools' 1 MiB small/large boundary, different per thread.
      const std::size_t n = (i % 40 == 0) ? (std::size_t{1} << 18) + std::size_t(t)
                                          : 100 + 37 * std::size_t(t) + std::size_t(i);
      const int value = t * 100000 + i;
      arrayport::vector<int> v(n, value, kind);
      v.push_back(-value);
      arrayport::host_view<int, 1> hv(v.data(), static_cast<std::int64_t>(v.size()));
      if (gpu) rt::stream_synchronize(v.stream());
      for (std::size_t j = 0; j + 1 < v.size(); j += 97)
        if (hv(static_cast<std::int64_t>(j)) != value)
          return "vector element " + std::to_string(j) + " is " + std::to_string(v[j]) +
                 ", expected " + std::to_string(value) + " (another thread's block?)";
      if (v[v.size() - 1] != -value) return "push_back lost its value";
      arrayport::buffer b(n * sizeof(int), kind);
      std::memset(b.data(), t, b.size());
      arrayport::vector<int> c = v.copy();
      if (gpu) rt::stream_synchronize(c.stream());
      if (c.size() != v.size() || c[n / 2] != value || c[c.size() - 1] != -value)
        return "copy differs";
      const auto* bytes = static_cast<const unsigned char*>(b.data());
      if (bytes[0] != t || bytes[b.size() - 1] != t) return "buffer bytes changed under us";
    }
    return "";
  });
  EXPECT_TRUE(failures.empty()) << join(failures);
}

TEST(Threads, TheCachingPoolNeverHandsOneBlockToTwoThreads) {
  static std::atomic<int> upstream_allocations{0}, upstream_frees{0};
  upstream_allocations = 0;
  upstream_frees = 0;
  {
    arrayport::detail::caching_pool pool(
        [](std::size_t n) {
          ++upstream_allocations;
          return std::aligned_alloc(256, n);
        },
        [](void* p) noexcept {
          ++upstream_frees;
          std::free(p);
        });
    auto failures = run_together([&](int t) -> std::string {
      for (int i = 0; i < 2000; ++i) {
        const std::size_t bytes = 512 * std::size_t(1 + (i + t) % 4);
        auto* p = static_cast<std::uint32_t*>(pool.allocate(bytes));
        const std::uint32_t mark = std::uint32_t(t) << 24 | std::uint32_t(i);
        for (std::size_t k = 0; k < bytes / 4; ++k) p[k] = mark;
        std::this_thread::yield();  // a block given out twice would be overwritten meanwhile
        for (std::size_t k = 0; k < bytes / 4; ++k)
          if (p[k] != mark)
            return "block " + std::to_string(reinterpret_cast<std::uintptr_t>(p)) +
                   " was written by another thread";
        pool.deallocate(p, bytes, nullptr, -1);
      }
      return "";
    });
    EXPECT_TRUE(failures.empty()) << join(failures);
    // Reuse: a size class grows only while all its blocks are out, so at most one block per
    // thread and size class (four of them) ever comes from upstream, not 16000.
    EXPECT_LE(upstream_allocations.load(), thread_count * 4);
    EXPECT_GT(pool.cached_bytes(), 0u);
  }
  EXPECT_EQ(upstream_frees.load(), upstream_allocations.load());  // the pool freed all it cached
}

TEST(Threads, StreamsAndEventsWorkPerThread) {
  const bool gpu = rt::is_available();
  auto failures = run_together([&](int t) -> std::string {
    for (int i = 0; i < 50; ++i) {
      if (!gpu) {
        // The CPU fallback: borrowing, waiting and ordering need no device; creating does.
        arrayport::stream legacy = arrayport::stream::borrow(nullptr);
        legacy.synchronize();
        if (!legacy.query()) return "the legacy stream has pending work without a GPU";
        rt::order_streams(nullptr, nullptr, -1);
        try {
          arrayport::stream s;
          return "stream creation without a GPU did not throw";
        } catch (const arrayport::no_device_error&) {
        }
        try {
          arrayport::event e;
          return "event creation without a GPU did not throw";
        } catch (const arrayport::no_device_error&) {
        }
        arrayport::vector<float> v(1000, float(t), memory_kind::host);
        arrayport::vector<float> w = v.copy();
        if (w[999] != float(t)) return "host copy on the legacy stream differs";
        continue;
      }
      constexpr std::size_t n = std::size_t{1} << 16;
      arrayport::stream a, b;
      arrayport::vector<int> src(n, t * 1000 + i, memory_kind::pinned, -1, a.handle());
      arrayport::buffer mid(n * sizeof(int), memory_kind::device, 0, a.handle());
      arrayport::vector<int> dst(n, -1, memory_kind::pinned, -1, b.handle());
      rt::memcpy_async(mid.data(), src.data(), n * sizeof(int), a.handle());
      arrayport::event written;
      written.record(a.handle());
      b.wait(written);
      rt::memcpy_async(dst.data(), mid.data(), n * sizeof(int), b.handle());
      rt::order_streams(b.handle(), a.handle(), 0);  // mid is freed on a, after b read it
      b.synchronize();
      if (dst[0] != t * 1000 + i || dst[n - 1] != t * 1000 + i)
        return "copy across streams differs";
    }
    return "";
  });
  EXPECT_TRUE(failures.empty()) << join(failures);
}
