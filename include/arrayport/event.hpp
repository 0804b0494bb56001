// arrayport::event: a CUDA event, RAII, for ordering streams and timing.
#pragma once

#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime.hpp>

#include <utility>

namespace arrayport {

/// A CUDA event. Construction needs a device (no_device_error otherwise).
class event {
 public:
  /// `timing`: can measure elapsed time (costs a little per record). `blocking`: synchronize()
  /// sleeps instead of spinning.
  explicit event(bool timing = false, bool blocking = false)
      : m_handle(runtime::event_create(timing, blocking)) {}
  ~event() { runtime::event_destroy(m_handle); }
  event(event&& other) noexcept : m_handle(std::exchange(other.m_handle, nullptr)) {}
  event& operator=(event&& other) noexcept {
    if (this != &other) {
      runtime::event_destroy(m_handle);
      m_handle = std::exchange(other.m_handle, nullptr);
    }
    return *this;
  }
  event(const event&) = delete;
  event& operator=(const event&) = delete;

  event_handle handle() const noexcept { return m_handle; }

  /// Captures the work queued on `s` so far.
  void record(stream_handle s = nullptr) { runtime::event_record(m_handle, s); }
  void synchronize() const { runtime::event_synchronize(m_handle); }
  bool query() const { return runtime::event_query(m_handle); }
  /// Milliseconds from this event to `end` (both recorded, both with timing).
  float elapsed_ms(const event& end) const {
    return runtime::event_elapsed_ms(m_handle, end.handle());
  }

 private:
  event_handle m_handle;
};

}  // namespace arrayport
