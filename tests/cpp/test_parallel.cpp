// The CPU kernels' thread pool (src/ops/cpu/parallel.cpp): every index covered exactly once, by
// jobs back to back (workers polling), jobs after a pause (workers asleep and woken), and jobs
// submitted from several threads at once (the pool busy: the caller runs them alone), and each
// thread's range kept from job to job. Also run under ThreadSanitizer by .ci/sanitize.
#include "ops/cpu/parallel.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace cpu = arrayport::ops::cpu;

namespace {

// Runs parallel_for over n with `grain` and checks each index was visited once.
void covers_once(std::int64_t n, std::int64_t grain) {
  const auto hits = std::make_unique<std::atomic<int>[]>(static_cast<std::size_t>(n > 0 ? n : 1));
  for (std::int64_t i = 0; i < n; ++i) hits[i].store(0, std::memory_order_relaxed);
  cpu::parallel_for(n, grain, [&](std::int64_t b, std::int64_t e) {
    ASSERT_LE(0, b);
    ASSERT_LE(b, e);
    ASSERT_LE(e, n);
    for (std::int64_t i = b; i < e; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
  });
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i << " of " << n;
}

TEST(ThreadPool, BackToBackJobsCoverEveryIndexOnce) {
  for (int round = 0; round < 200; ++round)
    for (std::int64_t n : {0, 1, 2, 7, 64, 1000, 4097, 100003}) covers_once(n, 1 + round % 5);
}

TEST(ThreadPool, JobsAfterTheWorkersSleptCoverEveryIndexOnce) {
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(std::chrono::microseconds(round % 2 ? 300 : 50));
    covers_once(50000, 16);
  }
}

TEST(ThreadPool, JobsFromSeveralThreadsAtOnceCoverEveryIndexOnce) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 100; ++round) {
        const std::int64_t n = 1000 + 37 * t + round;
        std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
        cpu::parallel_for(n, 8, [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t i = b; i < e; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
        });
        for (auto& h : hits)
          if (h.load() != 1) failures.fetch_add(1);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// A thread keeps its part of the data from job to job, so what is in its cache stays there: the
// chunks are in one contiguous range a thread, the caller's first. 2T chunks over T threads: the
// caller runs chunks 0 and 1 (taken in turn, it ran 0 and another). Each chunk is long enough
// that no worker finishes its own range first; one job in ten may miss, for a descheduled caller.
TEST(ThreadPool, TheCallerRunsTheFirstRangeJobAfterJob) {
  const int threads = cpu::thread_count();
  if (threads < 2) GTEST_SKIP() << "one thread: nothing to share";
  const std::thread::id caller = std::this_thread::get_id();
  int kept = 0;
  constexpr int jobs = 50;
  for (int job = 0; job < jobs; ++job) {
    std::atomic<unsigned> by_caller{0};  // bit k: the caller ran chunk k
    cpu::parallel_for(2 * threads, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t k = b; k < e; ++k)
        if (std::this_thread::get_id() == caller && k < 32) by_caller.fetch_or(1u << k);
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    });
    kept += by_caller.load() == 3u;
  }
  EXPECT_GE(kept, jobs * 9 / 10);
}

TEST(ThreadPool, ReportsAtLeastOneThread) { EXPECT_GE(cpu::thread_count(), 1); }

}  // namespace
