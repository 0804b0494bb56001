// arrayport::buffer: owning, untyped, uninitialised bytes of one memory kind on one device.
#pragma once

#include <arrayport/c/view.h>
#include <arrayport/memory_kind.hpp>
#include <arrayport/memory_resource.hpp>
#include <arrayport/runtime.hpp>

#include <cstddef>
#include <utility>

namespace arrayport {

/// Owns `size()` bytes from a memory_resource. Move-only. Allocation does not touch the pages.
/// Freed on its stream, so device work queued there before destruction may still read it.
class buffer {
 public:
  buffer() noexcept = default;

  /// `device` -1 means the current device. Without a GPU, managed and pinned requests give host
  /// memory (kind() says which kind was delivered); device requests throw no_device_error.
  explicit buffer(std::size_t bytes, memory_kind kind = default_memory_kind(), int device = -1,
                  stream_handle stream = nullptr)
      : m_resource(&get_memory_resource(kind, device)), m_size(bytes), m_stream(stream) {
    if (bytes > 0) m_data = m_resource->allocate(bytes, stream);
  }

  ~buffer() { reset(); }

  buffer(buffer&& other) noexcept
      : m_resource(std::exchange(other.m_resource, nullptr)),
        m_data(std::exchange(other.m_data, nullptr)),
        m_size(std::exchange(other.m_size, 0)),
        m_stream(std::exchange(other.m_stream, nullptr)) {}

  buffer& operator=(buffer&& other) noexcept {
    if (this != &other) {
      reset();
      m_resource = std::exchange(other.m_resource, nullptr);
      m_data = std::exchange(other.m_data, nullptr);
      m_size = std::exchange(other.m_size, 0);
      m_stream = std::exchange(other.m_stream, nullptr);
    }
    return *this;
  }

  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;

  void* data() noexcept { return m_data; }
  const void* data() const noexcept { return m_data; }
  std::size_t size() const noexcept { return m_size; }
  bool empty() const noexcept { return m_size == 0; }

  /// The kind actually delivered (managed/pinned become host on a machine without a GPU).
  memory_kind kind() const noexcept { return m_resource ? m_resource->kind() : memory_kind::host; }
  /// CUDA device of device/managed memory; -1 for host and pinned memory.
  int device() const noexcept { return m_resource ? m_resource->device() : -1; }
  /// The DLPack device (type and id) of the memory.
  arrayport_device_t dlpack_device() const noexcept {
    return arrayport::dlpack_device(kind(), device());
  }

  /// The stream the memory is ordered on: its release is queued there.
  stream_handle stream() const noexcept { return m_stream; }
  /// Moves the release onto `stream`. The caller orders `stream` after the old one's work.
  void set_stream(stream_handle stream) noexcept { m_stream = stream; }

  /// Frees the memory now (stream-ordered); the buffer becomes empty.
  void reset() noexcept {
    if (m_data) m_resource->deallocate(m_data, m_size, m_stream);
    m_data = nullptr;
    m_size = 0;
  }

 private:
  memory_resource* m_resource = nullptr;
  void* m_data = nullptr;
  std::size_t m_size = 0;
  stream_handle m_stream = nullptr;
};

}  // namespace arrayport
