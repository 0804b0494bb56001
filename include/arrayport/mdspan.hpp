// arrayport views as libcu++'s cuda::std::mdspan and back, so CCCL and CUB code takes them as they
// are. Needs <cuda/std/mdspan> (the CUDA toolkit's CCCL, or libcu++ on the include path).
//
//   arrayport::view<float, 2> v = ...;
//   auto m = arrayport::to_mdspan(v);          // mdspan<float, dextents<int64_t, 2>,
//   layout_stride> arrayport::view<float, 2> back = arrayport::from_mdspan(m);
//
// layout_stride holds only layouts where every stride is positive and no two indices share an
// element (its constructor's preconditions). A view with a negative stride (a reversed slice),
// a zero stride over more than one element (a broadcast) or overlapping elements has no such
// mdspan: to_mdspan refuses it with a value_error; mdspan_compatible() asks first. The other way
// always works: any mdspan whose mapping has strides (layout_right, layout_left, layout_stride).
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/error.hpp>
#include <arrayport/layout.hpp>
#include <arrayport/view.hpp>

#if !__has_include(<cuda/std/mdspan>)
#error \
    "arrayport/mdspan.hpp needs libcu++'s <cuda/std/mdspan>: the CUDA toolkit's include/cccl \
(nvcc adds it) or CCCL on the include path"
#endif
#include <cuda/std/array>
#include <cuda/std/mdspan>

#include <cstddef>
#include <climits>
#include <cstdint>
#include <string>

namespace arrayport {

/// The mdspan a view<T, Rank> becomes: int64 extents, layout_stride (strides in elements).
template <class T, std::size_t Rank>
using strided_mdspan =
    cuda::std::mdspan<T, cuda::std::dextents<std::int64_t, Rank>, cuda::std::layout_stride>;

namespace detail {

// The strides an mdspan gets: those of the view, except along an extent of 1, where no stride is
// ever multiplied by a nonzero index: there it is 1 (layout_stride needs every stride > 0). An
// empty view's strides address nothing: it gets C-order ones (extents of 0 counted as 1), and
// none (false) in the corner where those pass 2^63 - 1.
template <class T, std::size_t Rank, class Space>
ARRAYPORT_HOST_DEVICE constexpr bool mdspan_strides(
    const view<T, Rank, Space>& v, cuda::std::array<std::int64_t, Rank>& s) noexcept {
  if (v.size() != 0) {
    for (std::size_t r = 0; r != Rank; ++r) s[r] = v.extent(r) == 1 ? 1 : v.stride(r);
    return true;
  }
  std::int64_t next = 1;
  for (std::size_t r = Rank; r-- > 0;) {
    s[r] = next;
    const std::int64_t e = v.extent(r) > 1 ? v.extent(r) : 1;
    if (next > INT64_MAX / e) return false;
    next *= e;
  }
  return true;
}

}  // namespace detail

/// Whether `v` has a layout_stride mdspan: every stride along an extent above 1 is positive and
/// the strides nest (strides_nest, layout.hpp), as layout_stride's constructor checks them.
template <class T, std::size_t Rank, class Space>
ARRAYPORT_HOST_DEVICE constexpr bool mdspan_compatible(const view<T, Rank, Space>& v) noexcept {
  if (v.size() == 0) {  // strides address nothing: C-order ones, where those fit int64
    cuda::std::array<std::int64_t, Rank> s{};
    return detail::mdspan_strides(v, s);
  }
  for (std::size_t r = 0; r != Rank; ++r)
    if (v.extent(r) > 1 && v.stride(r) <= 0) return false;
  return strides_nest(v.shape(), v.strides(), static_cast<int>(Rank));
}

/// The view as a layout_stride mdspan over the same elements. A view without one
/// (mdspan_compatible) is a value_error naming its strides.
template <class T, std::size_t Rank, class Space>
strided_mdspan<T, Rank> to_mdspan(const view<T, Rank, Space>& v) {
  if (!mdspan_compatible(v))
    throw value_error("to_mdspan: shape " + shape_string(v.shape(), static_cast<int>(Rank)) +
                      " with strides " + shape_string(v.strides(), static_cast<int>(Rank)) +
                      " (in elements) has no layout_stride mdspan: expected positive strides "
                      "and no two indices at one element, got a negative, zero or overlapping "
                      "stride (copy the view, or reverse it back, first)");
  cuda::std::array<std::int64_t, Rank> extents{}, strides{};
  for (std::size_t r = 0; r != Rank; ++r) extents[r] = v.extent(r);
  (void)detail::mdspan_strides(v, strides);
  using mapping =
      typename cuda::std::layout_stride::template mapping<cuda::std::dextents<std::int64_t, Rank>>;
  return strided_mdspan<T, Rank>(
      v.data(), mapping(cuda::std::dextents<std::int64_t, Rank>(extents), strides));
}

/// An mdspan whose mapping has strides (layout_right, layout_left, layout_stride) as a view of
/// the same elements, in the memory space `Space` (the caller's word, as for any raw pointer).
template <class Space = any_space, class T, class Extents, class Layout, class Accessor>
ARRAYPORT_HOST_DEVICE view<T, Extents::rank(), Space> from_mdspan(
    const cuda::std::mdspan<T, Extents, Layout, Accessor>& m) noexcept {
  constexpr std::size_t Rank = Extents::rank();
  std::int64_t shape[Rank > 0 ? Rank : 1] = {}, strides[Rank > 0 ? Rank : 1] = {};
  if constexpr (Rank > 0) {  // a mapping's stride() exists from rank 1
    for (std::size_t r = 0; r != Rank; ++r) {
      shape[r] = static_cast<std::int64_t>(m.extent(r));
      strides[r] = static_cast<std::int64_t>(m.stride(r));
    }
  }
  return view<T, Rank, Space>(m.data_handle(), shape, strides);
}

}  // namespace arrayport
