// A pointer and a count over contiguous elements: what std::span is in C++20, for operand lists
// (the library is C++17).
#pragma once

#include <cstddef>
#include <type_traits>

namespace arrayport::ops {

/// A view of `size()` elements at `data()`; it never owns them. Built from an array or a pointer
/// and a count.
template <class T>
class span {
 public:
  constexpr span() noexcept = default;
  constexpr span(T* data, std::size_t size) noexcept : m_data(data), m_size(size) {}
  template <std::size_t N>
  constexpr span(T (&array)[N]) noexcept : m_data(array), m_size(N) {}
  /// A span of non-const elements is one of const elements too.
  template <class U, std::enable_if_t<std::is_same_v<const U, T>, int> = 0>
  constexpr span(span<U> other) noexcept : m_data(other.data()), m_size(other.size()) {}

  constexpr T* data() const noexcept { return m_data; }
  constexpr std::size_t size() const noexcept { return m_size; }
  constexpr bool empty() const noexcept { return m_size == 0; }
  constexpr T* begin() const noexcept { return m_data; }
  constexpr T* end() const noexcept { return m_data + m_size; }
  constexpr T& operator[](std::size_t i) const noexcept { return m_data[i]; }
  /// The elements from `offset` on.
  constexpr span subspan(std::size_t offset) const noexcept {
    return {m_data + offset, m_size - offset};
  }

 private:
  T* m_data = nullptr;
  std::size_t m_size = 0;
};

}  // namespace arrayport::ops
