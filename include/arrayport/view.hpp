// Typed strided views (view<T, Rank, Space>) and the dtype-erased strided_view over the C ABI.
//
// A view is a pointer plus extents and strides in elements: trivially copyable, standard layout,
// passed to kernels by value, indexable on host and device. It owns nothing.
#pragma once

#include <arrayport/c/view.h>
#include <arrayport/config.hpp>
#include <arrayport/dtype.hpp>
#include <arrayport/error.hpp>
#include <arrayport/layout.hpp>
#include <arrayport/memory_kind.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace arrayport {

/// Where a view's memory must be reachable from; part of the view's type.
struct any_space {
  static constexpr const char* name = "any";
  static constexpr bool accepts(memory_kind) noexcept { return true; }
};
struct host_space {
  static constexpr const char* name = "host";
  static constexpr bool accepts(memory_kind k) noexcept { return is_host_accessible(k); }
};
struct device_space {
  static constexpr const char* name = "device";
  static constexpr bool accepts(memory_kind k) noexcept { return is_device_accessible(k); }
};

namespace detail {
// Rank-0 views still need an array member; it is never read.
template <std::size_t Rank>
struct extents_storage {
  std::int64_t shape[Rank];
  std::int64_t strides[Rank];
};
template <>
struct extents_storage<0> {
  std::int64_t shape[1];
  std::int64_t strides[1];
};
}  // namespace detail

/// A typed view of a Rank-dimensional strided array. `const T` for read-only data.
template <class T, std::size_t Rank, class Space = any_space>
class view {
  static_assert(Rank <= ARRAYPORT_MAX_NDIM, "view rank exceeds ARRAYPORT_MAX_NDIM");

 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using index_type = std::int64_t;
  using space = Space;
  static constexpr std::size_t rank = Rank;

  view() = default;

  /// A C-contiguous view of `data` with the given extents. The constructors trust the extents
  /// and strides they are given (check foreign ones with check_layout, as strided_view::as does).
  ARRAYPORT_HOST_DEVICE view(T* data, const index_type (&shape)[Rank > 0 ? Rank : 1]) noexcept
      : m_data(data) {
    for (std::size_t r = 0; r != Rank; ++r) m_ext.shape[r] = shape[r];
    (void)compact_strides(m_ext.shape, static_cast<int>(Rank), m_ext.strides,
                          static_cast<index_type>(sizeof(T)));
  }

  /// A view with explicit strides (in elements, may be negative or zero).
  ARRAYPORT_HOST_DEVICE view(T* data, const index_type (&shape)[Rank > 0 ? Rank : 1],
                             const index_type (&strides)[Rank > 0 ? Rank : 1]) noexcept
      : m_data(data) {
    for (std::size_t r = 0; r != Rank; ++r) {
      m_ext.shape[r] = shape[r];
      m_ext.strides[r] = strides[r];
    }
  }

  /// A view of one element (rank 0 only).
  template <std::size_t R = Rank, std::enable_if_t<R == 0, int> = 0>
  ARRAYPORT_HOST_DEVICE explicit view(T* data) noexcept : m_data(data) {}

  /// A view of `n` contiguous elements (rank 1 only).
  template <std::size_t R = Rank, std::enable_if_t<R == 1, int> = 0>
  ARRAYPORT_HOST_DEVICE view(T* data, index_type n) noexcept : m_data(data) {
    m_ext.shape[0] = n;
    m_ext.strides[0] = 1;
  }

  /// view<T> converts to view<const T>, and any space to any_space.
  template <class U, class S,
            std::enable_if_t<std::is_convertible_v<U (*)[], T (*)[]> &&
                                 (std::is_same_v<S, Space> || std::is_same_v<Space, any_space>),
                             int> = 0>
  ARRAYPORT_HOST_DEVICE view(const view<U, Rank, S>& other) noexcept : m_data(other.data()) {
    for (std::size_t r = 0; r != Rank; ++r) {
      m_ext.shape[r] = other.extent(r);
      m_ext.strides[r] = other.stride(r);
    }
  }

  ARRAYPORT_HOST_DEVICE T* data() const noexcept { return m_data; }
  ARRAYPORT_HOST_DEVICE index_type extent(std::size_t r) const noexcept { return m_ext.shape[r]; }
  ARRAYPORT_HOST_DEVICE index_type stride(std::size_t r) const noexcept { return m_ext.strides[r]; }
  ARRAYPORT_HOST_DEVICE const index_type* shape() const noexcept { return m_ext.shape; }
  ARRAYPORT_HOST_DEVICE const index_type* strides() const noexcept { return m_ext.strides; }

  /// Number of elements (1 for rank 0); -1 for extents that hold none as an int64 (negative, or
  /// 2^63 elements or more), which a view made through acquire() or strided_view::as() never has.
  ARRAYPORT_HOST_DEVICE index_type size() const noexcept {
    return element_count_or_minus_one(m_ext.shape, static_cast<int>(Rank));
  }
  ARRAYPORT_HOST_DEVICE bool empty() const noexcept { return size() == 0; }

  /// C-order contiguity (extents of 1 may have any stride, and an empty view is contiguous, as
  /// in NumPy).
  ARRAYPORT_HOST_DEVICE bool is_contiguous() const noexcept {
    return arrayport::is_contiguous(m_ext.shape, m_ext.strides, static_cast<int>(Rank), true);
  }

  /// Element at the given indices; no bounds check (this runs in kernels).
  template <class... I>
  ARRAYPORT_HOST_DEVICE T& operator()(I... idx) const noexcept {
    static_assert(sizeof...(I) == Rank, "view: one index per dimension");
    static_assert((std::is_integral_v<I> && ...), "view: indices must be integers");
    const index_type is[Rank > 0 ? Rank : 1] = {static_cast<index_type>(idx)...};
    index_type offset = 0;
    for (std::size_t r = 0; r != Rank; ++r) offset += is[r] * m_ext.strides[r];
    return m_data[offset];
  }

  /// Rank-1 subscript.
  template <std::size_t R = Rank, std::enable_if_t<R == 1, int> = 0>
  ARRAYPORT_HOST_DEVICE T& operator[](index_type i) const noexcept {
    return m_data[i * m_ext.strides[0]];
  }

 private:
  T* m_data = nullptr;
  detail::extents_storage<Rank> m_ext{};
};

template <class T, std::size_t Rank>
using host_view = view<T, Rank, host_space>;
template <class T, std::size_t Rank>
using device_view = view<T, Rank, device_space>;

/// A dtype-erased view over the C ABI struct. Does not own the shape/strides arrays it points to:
/// whoever filled the C struct keeps them alive at least as long as this view.
class strided_view {
 public:
  strided_view() noexcept : m_view{} {
    m_view.version = {ARRAYPORT_C_ABI_VERSION_MAJOR, ARRAYPORT_C_ABI_VERSION_MINOR};
  }
  explicit strided_view(const arrayport_view_t& v) noexcept : m_view(v) {}

  const arrayport_view_t& c_view() const noexcept { return m_view; }
  void* data() const noexcept { return m_view.data; }
  int ndim() const noexcept { return m_view.ndim; }
  std::int64_t extent(int r) const noexcept { return m_view.shape[r]; }
  std::int64_t stride(int r) const noexcept { return m_view.strides[r]; }
  arrayport::dtype dtype() const noexcept { return arrayport::dtype::from_c(m_view.dtype); }
  memory_kind kind() const noexcept { return static_cast<memory_kind>(m_view.memory_kind); }
  arrayport_device_t device() const noexcept { return m_view.device; }
  bool readonly() const noexcept { return (m_view.flags & ARRAYPORT_VIEW_READONLY) != 0; }
  void* owner() const noexcept { return m_view.owner; }
  stream_handle stream() const noexcept { return m_view.stream; }

  /// Number of elements; -1 for extents that hold none as an int64 (see view::size()).
  std::int64_t size() const noexcept {
    return element_count_or_minus_one(m_view.shape, m_view.ndim);
  }

  /// The typed view, after checking dtype (type_error), rank (type_error), an addressable layout
  /// (value_error, see layout.hpp), memory space (value_error) and writability for non-const T
  /// (buffer_error). `what` names the argument in the messages.
  template <class T, std::size_t Rank, class Space = any_space>
  view<T, Rank, Space> as(const char* what = "array") const {
    using U = std::remove_cv_t<T>;
    const arrayport::dtype expected = dtype_of<U>;
    if (dtype() != expected)
      throw type_error(std::string(what) + ": expected dtype " + std::string(expected.name()) +
                       ", got " + std::string(dtype().name()));
    if (m_view.ndim != static_cast<int>(Rank))
      throw type_error(std::string(what) + ": expected " + std::to_string(Rank) +
                       "-dimensional array, got " + std::to_string(m_view.ndim) + " dimensions");
    check_layout(what, m_view);
    if (!Space::accepts(kind()))
      throw value_error(std::string(what) + ": expected memory reachable from the " + Space::name +
                        ", got " + std::string(to_string(kind())) + " memory");
    if (!std::is_const_v<T> && readonly())
      throw buffer_error(std::string(what) + ": expected a writable array, got a read-only one");
    typename view<T, Rank, Space>::index_type shape[Rank > 0 ? Rank : 1] = {};
    typename view<T, Rank, Space>::index_type strides[Rank > 0 ? Rank : 1] = {};
    for (std::size_t r = 0; r != Rank; ++r) {
      shape[r] = m_view.shape[r];
      strides[r] = m_view.strides[r];
    }
    return view<T, Rank, Space>(static_cast<T*>(m_view.data), shape, strides);
  }

 private:
  arrayport_view_t m_view;
};

// The zero-cost claims: a view is a pointer and two arrays, copied bit for bit into kernels.
static_assert(std::is_trivially_copyable_v<view<float, 2>>);
static_assert(std::is_standard_layout_v<view<float, 2>>);
static_assert(sizeof(view<float, 1>) == sizeof(void*) + 2 * sizeof(std::int64_t));
static_assert(sizeof(view<double, 3>) == sizeof(void*) + 6 * sizeof(std::int64_t));
static_assert(std::is_trivially_copyable_v<strided_view>);

}  // namespace arrayport
