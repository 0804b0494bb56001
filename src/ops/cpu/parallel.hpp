// A small process-wide thread pool for the CPU kernels: parallel_for over an index range in chunks.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace arrayport::ops::cpu {

/// Threads a parallel_for may use (the pool's workers plus the caller); at least 1.
int thread_count() noexcept;

namespace detail {
using chunk_fn = void (*)(void* context, std::int64_t begin, std::int64_t end);
void parallel_for_impl(std::int64_t n, std::int64_t grain, chunk_fn fn, void* context);
}  // namespace detail

/// Calls body(begin, end) on disjoint chunks covering [0, n), each of at least `grain` elements
/// except the last, on the pool's workers and the calling thread; returns when all are done.
/// Small ranges, and calls made while the pool is busy (another thread, or nested), run on the
/// caller alone, so it never deadlocks. `body` must not throw.
template <class Body>
void parallel_for(std::int64_t n, std::int64_t grain, Body&& body) {
  if (n <= 0) return;
  if (n <= grain || thread_count() == 1) {
    body(std::int64_t{0}, n);
    return;
  }
  using B = std::remove_reference_t<Body>;
  detail::parallel_for_impl(
      n, grain,
      [](void* context, std::int64_t begin, std::int64_t end) {
        (*static_cast<B*>(context))(begin, end);
      },
      const_cast<void*>(static_cast<const void*>(&body)));
}

}  // namespace arrayport::ops::cpu
