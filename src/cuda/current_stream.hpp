// The calling thread's current stream: what `with stream:` in arrayport.cuda sets, and what the C++
// code of arrayport._core (copies, ops) enqueues its work on.
#pragma once

#include <arrayport/memory_kind.hpp>
#include <utility>

namespace arrayport::ext {

/// A stream and the device it belongs to.
struct current_stream_state {
  stream_handle handle = nullptr;  ///< nullptr: the legacy default stream
  int device = -1;                 ///< the stream's device; -1: whichever device is current
};

namespace detail {
// One slot per thread. The function is inline, so every translation unit of _core shares the one
// slot; _core's symbols are hidden, so another extension never sees (or clobbers) it.
inline current_stream_state& current_stream_slot() noexcept {
  thread_local current_stream_state slot;
  return slot;
}
}  // namespace detail

/// The calling thread's current stream: {nullptr, -1} (the legacy default stream of the current
/// device) until something sets one.
inline current_stream_state current_stream() noexcept { return detail::current_stream_slot(); }

/// Makes `next` the calling thread's current stream and returns the one it replaces.
inline current_stream_state exchange_current_stream(current_stream_state next) noexcept {
  return std::exchange(detail::current_stream_slot(), next);
}

/// Makes a stream current for the calling thread for its lifetime and restores the previous one,
/// for C++ code. It does not change the current device (the Python `with stream:` does).
class current_stream_scope {
 public:
  current_stream_scope(stream_handle handle, int device) noexcept
      : m_previous(exchange_current_stream({handle, device})) {}
  ~current_stream_scope() { exchange_current_stream(m_previous); }
  current_stream_scope(const current_stream_scope&) = delete;
  current_stream_scope& operator=(const current_stream_scope&) = delete;

 private:
  current_stream_state m_previous;
};

}  // namespace arrayport::ext
