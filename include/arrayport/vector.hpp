// arrayport::vector<T>: a std::vector-like container on any memory kind (CuVec's idea, for every
// kind and without touching the pages on allocation).
#pragma once

#include <arrayport/buffer.hpp>
#include <arrayport/detail/fill.hpp>
#include <arrayport/error.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/view.hpp>

#include <algorithm>
#include <cstdint>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace arrayport {

/// Contiguous elements of trivially copyable T in a buffer of one memory kind.
///
/// Unlike std::vector, `vector(n)` and `resize(n)` leave new elements uninitialised (the memory
/// may be on a device, and first touch decides where managed pages live). Element access through
/// operator[], iterators and push_back is for host-accessible kinds only; copies between kinds go
/// through the runtime and are ordered on the vector's stream.
template <class T>
class vector {
  static_assert(std::is_trivially_copyable_v<T>, "arrayport::vector<T> needs trivially copyable T");

 public:
  using value_type = T;
  using size_type = std::size_t;
  using iterator = T*;
  using const_iterator = const T*;

  explicit vector(memory_kind kind = default_memory_kind(), int device = -1,
                  stream_handle stream = nullptr)
      : m_kind(kind), m_device(device), m_stream(stream) {}

  /// `n` uninitialised elements.
  explicit vector(size_type n, memory_kind kind = default_memory_kind(), int device = -1,
                  stream_handle stream = nullptr)
      : vector(kind, device, stream) {
    reserve(n);
    m_size = n;
  }

  /// `n` copies of `value`.
  vector(size_type n, const T& value, memory_kind kind = default_memory_kind(), int device = -1,
         stream_handle stream = nullptr)
      : vector(n, kind, device, stream) {
    fill(value);
  }

  vector(std::initializer_list<T> values, memory_kind kind = default_memory_kind(), int device = -1,
         stream_handle stream = nullptr)
      : vector(values.size(), kind, device, stream) {
    runtime::memcpy_async(data(), this->kind(), values.begin(), memory_kind::host,
                          values.size() * sizeof(T), m_stream, "vector");
    runtime::stream_synchronize(m_stream);  // the initializer list dies at the end of the call
  }

  vector(vector&& other) noexcept
      : m_buffer(std::move(other.m_buffer)),
        m_size(std::exchange(other.m_size, 0)),
        m_kind(other.m_kind),
        m_device(other.m_device),
        m_stream(other.m_stream) {}
  vector& operator=(vector&& other) noexcept {
    m_buffer = std::move(other.m_buffer);
    m_size = std::exchange(other.m_size, 0);
    m_kind = other.m_kind;
    m_device = other.m_device;
    m_stream = other.m_stream;
    return *this;
  }
  vector(const vector&) = delete;  // copies are explicit: copy()
  vector& operator=(const vector&) = delete;

  /// A deep copy on the same kind, device and stream.
  vector copy() const {
    vector out(m_size, kind(), device(), m_stream);
    runtime::memcpy_async(out.data(), out.kind(), data(), kind(), m_size * sizeof(T), m_stream,
                          "vector::copy");
    return out;
  }

  T* data() noexcept { return static_cast<T*>(m_buffer.data()); }
  const T* data() const noexcept { return static_cast<const T*>(m_buffer.data()); }
  size_type size() const noexcept { return m_size; }
  size_type capacity() const noexcept { return m_buffer.size() / sizeof(T); }
  bool empty() const noexcept { return m_size == 0; }

  /// The kind delivered (managed/pinned are host memory on a machine without a GPU).
  memory_kind kind() const noexcept { return m_buffer.data() ? m_buffer.kind() : resolved_kind(); }
  int device() const noexcept { return m_buffer.data() ? m_buffer.device() : m_device; }
  stream_handle stream() const noexcept { return m_stream; }
  const buffer& storage() const noexcept { return m_buffer; }
  /// Gives up the storage (e.g. to hand it to a Python Array); the vector becomes empty.
  buffer release() noexcept {
    m_size = 0;
    return std::move(m_buffer);
  }

  iterator begin() noexcept { return data(); }
  iterator end() noexcept { return data() + m_size; }
  const_iterator begin() const noexcept { return data(); }
  const_iterator end() const noexcept { return data() + m_size; }

  /// Unchecked element access; host-accessible kinds only.
  T& operator[](size_type i) noexcept { return data()[i]; }
  const T& operator[](size_type i) const noexcept { return data()[i]; }

  /// Checked element access: value_error out of range, buffer_error on device memory.
  T& at(size_type i) {
    check_host("at");
    if (i >= m_size)
      throw value_error("vector::at: index " + std::to_string(i) + " out of range for size " +
                        std::to_string(m_size));
    return data()[i];
  }

  void reserve(size_type n) {
    if (n <= capacity()) return;
    if (n > max_size())
      throw value_error("vector: " + std::to_string(n) + " elements of " +
                        std::to_string(sizeof(T)) + " bytes overflow the address space");
    buffer grown(n * sizeof(T), m_kind, m_device, m_stream);
    runtime::memcpy_async(grown.data(), grown.kind(), m_buffer.data(), kind(), m_size * sizeof(T),
                          m_stream, "vector::reserve");
    m_buffer = std::move(grown);  // the old storage is released on m_stream, after the copy
  }

  /// Keeps the first min(n, size()) elements; new ones are uninitialised.
  void resize(size_type n) {
    if (n > capacity()) reserve(std::max(n, 2 * capacity()));
    m_size = n;
  }

  void resize(size_type n, const T& value) {
    size_type old = m_size;
    resize(n);
    if (n > old) fill_range(old, n - old, value);
  }

  void clear() noexcept { m_size = 0; }

  void shrink_to_fit() {
    if (capacity() == m_size) return;
    vector tight = copy();
    *this = std::move(tight);
  }

  /// Host-accessible kinds only (buffer_error otherwise).
  void push_back(const T& value) {
    check_host("push_back");
    if (m_size == capacity()) reserve(std::max<size_type>(1, 2 * capacity()));
    runtime::stream_synchronize(m_stream);  // a reserve on a device stream may still be copying
    data()[m_size++] = value;
  }

  /// Sets every element to `value`, on any kind (stream-ordered for device memory).
  void fill(const T& value) { fill_range(0, m_size, value); }

  /// Copies the elements to a std::vector on the host (waits for the copy).
  std::vector<T> to_host() const {
    std::vector<T> out(m_size);
    runtime::memcpy_async(out.data(), memory_kind::host, data(), kind(), m_size * sizeof(T),
                          m_stream, "vector::to_host");
    runtime::stream_synchronize(m_stream);
    return out;
  }

  /// A view of the elements, valid while the vector is neither resized nor destroyed.
  arrayport::view<T, 1> view() noexcept {
    return arrayport::view<T, 1>(data(), static_cast<std::int64_t>(m_size));
  }
  arrayport::view<const T, 1> view() const noexcept {
    return arrayport::view<const T, 1>(data(), static_cast<std::int64_t>(m_size));
  }

  static constexpr size_type max_size() noexcept {
    return static_cast<size_type>(PTRDIFF_MAX) / sizeof(T);
  }

 private:
  memory_kind resolved_kind() const noexcept {
    return runtime::is_available() || m_kind == memory_kind::device ? m_kind : memory_kind::host;
  }

  void check_host(const char* what) const {
    if (!is_host_accessible(kind()))
      throw buffer_error(std::string("vector::") + what +
                         ": the elements are in device memory, which host code cannot access");
  }

  void fill_range(size_type first, size_type count, const T& value) {
    detail::fill_pattern(data() + first, &value, sizeof(T), count, kind(), m_stream,
                         "vector::fill");
  }

  buffer m_buffer;
  size_type m_size = 0;
  memory_kind m_kind;
  int m_device;
  stream_handle m_stream;
};

}  // namespace arrayport
