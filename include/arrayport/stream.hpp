// arrayport::stream: an owning or borrowed CUDA stream, RAII.
#pragma once

#include <arrayport/error.hpp>
#include <arrayport/event.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime.hpp>

#include <utility>

namespace arrayport {

/// A CUDA stream. Created streams are destroyed with the object; borrowed ones (another library's,
/// or the legacy default stream) are not. Construction needs a device (no_device_error otherwise).
class stream {
 public:
  /// A new stream on `device` (-1: current device).
  explicit stream(int device = -1, int priority = 0, bool non_blocking = true)
      : m_device(device < 0 ? runtime::get_device() : device),
        m_handle(runtime::stream_create(m_device, priority, non_blocking)),
        m_owning(true) {}

  /// Wraps a stream someone else owns (nullptr: the legacy default stream). Not destroyed here.
  static stream borrow(stream_handle handle, int device = -1) noexcept {
    return stream(handle, device, false);
  }

  ~stream() {
    if (m_owning) runtime::stream_destroy(m_handle);
  }
  stream(stream&& other) noexcept
      : m_device(other.m_device),
        m_handle(std::exchange(other.m_handle, nullptr)),
        m_owning(std::exchange(other.m_owning, false)) {}
  stream& operator=(stream&& other) noexcept {
    if (this != &other) {
      if (m_owning) runtime::stream_destroy(m_handle);
      m_device = other.m_device;
      m_handle = std::exchange(other.m_handle, nullptr);
      m_owning = std::exchange(other.m_owning, false);
    }
    return *this;
  }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  stream_handle handle() const noexcept { return m_handle; }
  int device() const noexcept { return m_device; }
  bool owning() const noexcept { return m_owning; }

  /// Blocks until all work queued so far has completed.
  void synchronize() const { runtime::stream_synchronize(m_handle); }
  /// True when all work queued so far has completed.
  bool query() const { return runtime::stream_query(m_handle); }
  /// Future work on this stream waits for `e` (no host synchronisation).
  void wait(const event& e) const { runtime::stream_wait_event(m_handle, e.handle()); }

 private:
  stream(stream_handle handle, int device, bool owning) noexcept
      : m_device(device), m_handle(handle), m_owning(owning) {}

  int m_device;
  stream_handle m_handle;
  bool m_owning;
};

}  // namespace arrayport
