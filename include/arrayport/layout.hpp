// Layout arithmetic: element count, nbytes, byte span, offsets and contiguity, overflow-checked.
//
// The one place these numbers are computed; every view, Array, import, copy and export calls it.
// A layout is `ndim` extents and strides (in elements, or in bytes with stride_unit::bytes) of
// `itemsize`-byte items. It is *addressable* when every number derived from it fits in int64:
//   count  = the product of the extents (0 when any is 0);
//   nbytes = count * itemsize: NumPy's nbytes, the bytes a packed copy needs. For zero or
//            overlapping strides (a broadcast view) it is larger than the memory spanned, and it
//            must still fit: size, nbytes, len(memoryview) and copy() all report or allocate it;
//   each stride in bytes (a stride of an extent-1 axis too: .strides and exports show it);
//   span   = the bytes from the lowest byte reached to one past the highest (0 when empty).
// The host-device functions are noexcept and report a layout_status; check_layout() throws
// value_error (ValueError in Python) naming the argument and the exact numbers.
#pragma once

#include <arrayport/c/view.h>
#include <arrayport/detail/big_uint.hpp>
#include <arrayport/config.hpp>
#include <arrayport/dtype.hpp>
#include <arrayport/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace arrayport {

/// Why a layout is not addressable (ok when it is). Checked in this order.
enum class layout_status : std::uint8_t {
  ok = 0,
  bad_rank,           ///< ndim outside [0, ARRAYPORT_MAX_NDIM]
  bad_itemsize,       ///< itemsize < 1
  negative_extent,    ///< an extent below 0 (layout_info::axis says which)
  too_many_elements,  ///< the product of the extents is 2^63 or more
  too_many_bytes,     ///< count * itemsize is 2^63 bytes or more
  stride_too_large,   ///< a stride in bytes is outside int64 (layout_info::axis says which)
  span_too_large      ///< the bytes spanned, lowest to one past highest, are 2^63 or more
};

/// Units of the strides handed to these functions.
enum class stride_unit : std::uint8_t {
  elements,  ///< the C view ABI, DLPack, arrayport.Array internally
  bytes      ///< NumPy .strides, the buffer protocol, __cuda_array_interface__, copy operands
};

/// A layout's measures, valid when status == ok. Offsets are in bytes from the first element.
struct layout_info {
  std::int64_t count = 0;   ///< elements
  std::int64_t nbytes = 0;  ///< count * itemsize
  std::int64_t lo = 0;      ///< lowest byte reached, <= 0 (0 when empty)
  std::int64_t hi = 0;      ///< one past the highest byte reached, >= 0 (0 when empty)
  layout_status status = layout_status::ok;
  std::int32_t axis = -1;  ///< the offending axis of negative_extent / stride_too_large

  ARRAYPORT_HOST_DEVICE constexpr bool ok() const noexcept { return status == layout_status::ok; }
  /// hi - lo: the bytes a view touches (a pointer range), at most nbytes for distinct elements.
  ARRAYPORT_HOST_DEVICE constexpr std::int64_t span() const noexcept { return hi - lo; }
};

namespace detail {

inline constexpr std::int64_t int64_max = 0x7fffffffffffffffLL;
inline constexpr std::int64_t int64_min = -int64_max - 1;

// Overflow-checked int64 arithmetic: true on overflow (then *out is unspecified). GCC and Clang
// builtins (one instruction and a flag test); a portable form elsewhere: MSVC, and nvcc, whose
// front end neither evaluates the builtins in constant expressions nor promises them on device.
ARRAYPORT_HOST_DEVICE constexpr bool mul_overflow(std::int64_t a, std::int64_t b,
                                                  std::int64_t* out) noexcept {
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
  return __builtin_mul_overflow(a, b, out);
#else
  if (a == 0 || b == 0) {
    *out = 0;
    return false;
  }
  const bool negative = (a < 0) != (b < 0);
  const std::uint64_t ua =
      a < 0 ? 0 - static_cast<std::uint64_t>(a) : static_cast<std::uint64_t>(a);
  const std::uint64_t ub =
      b < 0 ? 0 - static_cast<std::uint64_t>(b) : static_cast<std::uint64_t>(b);
  const std::uint64_t limit = static_cast<std::uint64_t>(int64_max) + (negative ? 1u : 0u);
  if (ua > limit / ub) return true;
  const std::uint64_t p = ua * ub;
  *out = negative ? (p == limit ? int64_min : -static_cast<std::int64_t>(p))
                  : static_cast<std::int64_t>(p);
  return false;
#endif
}

ARRAYPORT_HOST_DEVICE constexpr bool add_overflow(std::int64_t a, std::int64_t b,
                                                  std::int64_t* out) noexcept {
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
  return __builtin_add_overflow(a, b, out);
#else
  if ((b > 0 && a > int64_max - b) || (b < 0 && a < int64_min - b)) return true;
  *out = a + b;
  return false;
#endif
}

ARRAYPORT_HOST_DEVICE constexpr bool sub_overflow(std::int64_t a, std::int64_t b,
                                                  std::int64_t* out) noexcept {
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
  return __builtin_sub_overflow(a, b, out);
#else
  if ((b < 0 && a > int64_max + b) || (b > 0 && a < int64_min + b)) return true;
  *out = a - b;
  return false;
#endif
}

}  // namespace detail

/// The number of elements: the product of the extents, 0 when any is 0 (whatever the others
/// multiply to). negative_extent or too_many_elements when there is no such int64.
ARRAYPORT_HOST_DEVICE constexpr layout_status element_count(const std::int64_t* shape, int ndim,
                                                            std::int64_t& count) noexcept {
  if (ndim < 0 || ndim > ARRAYPORT_MAX_NDIM) return layout_status::bad_rank;
  std::int64_t n = 1;
  bool overflow = false, empty = false;
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0) return layout_status::negative_extent;
    empty = empty || shape[i] == 0;
    overflow = overflow || detail::mul_overflow(n, shape[i], &n);
  }
  if (empty)
    n = 0;
  else if (overflow)
    return layout_status::too_many_elements;
  count = n;
  return layout_status::ok;
}

/// The number of elements, or -1 when it is not an int64 (a negative extent, 2^63 or more): for
/// noexcept code without an error channel (kernels). A loop `i < count` then runs no iteration.
ARRAYPORT_HOST_DEVICE constexpr std::int64_t element_count_or_minus_one(const std::int64_t* shape,
                                                                        int ndim) noexcept {
  std::int64_t n = 0;
  return element_count(shape, ndim, n) == layout_status::ok ? n : -1;
}

/// count * itemsize: the bytes a packed copy of `shape` needs.
ARRAYPORT_HOST_DEVICE constexpr layout_status byte_count(const std::int64_t* shape, int ndim,
                                                         std::int64_t itemsize,
                                                         std::int64_t& nbytes) noexcept {
  if (itemsize < 1) return layout_status::bad_itemsize;
  std::int64_t n = 0;
  const layout_status s = element_count(shape, ndim, n);
  if (s != layout_status::ok) return s;
  if (detail::mul_overflow(n, itemsize, &nbytes)) return layout_status::too_many_bytes;
  return layout_status::ok;
}

/// Every measure of a layout, checked. `strides` may be nullptr: compact row-major strides.
ARRAYPORT_HOST_DEVICE constexpr layout_info measure_layout(
    const std::int64_t* shape, const std::int64_t* strides, int ndim, std::int64_t itemsize,
    stride_unit unit = stride_unit::elements) noexcept {
  layout_info r;
  if (ndim < 0 || ndim > ARRAYPORT_MAX_NDIM) {
    r.status = layout_status::bad_rank;
    return r;
  }
  if (itemsize < 1) {
    r.status = layout_status::bad_itemsize;
    return r;
  }
  std::int64_t count = 1;
  bool overflow = false, empty = false;
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0) {
      r.status = layout_status::negative_extent;
      r.axis = i;
      return r;
    }
    empty = empty || shape[i] == 0;
    overflow = overflow || detail::mul_overflow(count, shape[i], &count);
  }
  if (empty) {
    count = 0;
  } else if (overflow) {
    r.status = layout_status::too_many_elements;
    return r;
  }
  if (detail::mul_overflow(count, itemsize, &r.nbytes)) {
    r.status = layout_status::too_many_bytes;
    return r;
  }
  r.count = count;
  if (!strides) {  // compact: no stride exceeds count * itemsize, and the span is nbytes
    r.hi = r.nbytes;
    return r;
  }
  // One pass over the axes (this runs on every consume): every stride in bytes, and the bytes
  // reached below and above the first element; a stride error outranks a span error.
  const std::int64_t scale = unit == stride_unit::elements ? itemsize : 1;
  std::int64_t lo = 0, hi = 0;
  int bad_stride = -1;
  bool span_overflow = false;
  for (int i = 0; i < ndim; ++i) {
    std::int64_t bytes = 0, reach = 0;
    if (detail::mul_overflow(strides[i], scale, &bytes)) {
      if (bad_stride < 0) bad_stride = i;
      continue;
    }
    span_overflow = span_overflow || detail::mul_overflow(shape[i] - 1, bytes, &reach) ||
                    detail::add_overflow(reach >= 0 ? hi : lo, reach, reach >= 0 ? &hi : &lo);
  }
  if (bad_stride >= 0) {
    r.status = layout_status::stride_too_large;
    r.axis = bad_stride;
    return r;
  }
  if (count == 0) return r;  // an empty layout reaches no byte
  std::int64_t span = 0;
  if (span_overflow || detail::add_overflow(hi, itemsize, &hi) ||
      detail::sub_overflow(hi, lo, &span)) {
    r.status = layout_status::span_too_large;
    return r;
  }
  r.lo = lo;
  r.hi = hi;
  return r;
}

/// measure_layout of a C view (strides in elements; itemsize from its dtype).
ARRAYPORT_HOST_DEVICE constexpr layout_info measure_layout(const arrayport_view_t& v) noexcept {
  return measure_layout(v.shape, v.strides, v.ndim,
                        static_cast<std::int64_t>(dtype::from_c(v.dtype).itemsize()));
}

/// The axes from the largest |stride| to the smallest into `order` (ndim entries): the layout's
/// memory order, outermost first, as NumPy's order 'K' reads it. Extents of 1 count as outermost;
/// ties keep the axes' order. True where that is not C's order (0, 1, ..., ndim - 1).
ARRAYPORT_HOST_DEVICE constexpr bool axis_order(const std::int64_t* shape,
                                                const std::int64_t* strides, int ndim,
                                                int* order) noexcept {
  auto key = [&](int d) {
    const auto s = static_cast<std::uint64_t>(strides[d]);
    return shape[d] == 1 ? ~std::uint64_t(0) : strides[d] < 0 ? std::uint64_t(0) - s : s;
  };
  bool moved = false;
  for (int i = 0; i < ndim; ++i) {  // insertion sort: stable, and ranks are small
    int j = i;
    for (; j > 0 && key(order[j - 1]) < key(i); --j) order[j] = order[j - 1];
    order[j] = i;
    moved = moved || j != i;
  }
  return moved;
}

/// Whether the strides nest: along the extents above 1, sorted by |stride|, each is nonzero and
/// at least the span of the one below it, so no two indices reach one element (interleaved strides
/// may be unique and still not nest: false). Any stride unit; true for a layout with no element.
/// What layout_stride's preconditions ask (mdspan.hpp), and what an out= must be to be written
/// element for element.
ARRAYPORT_HOST_DEVICE constexpr bool strides_nest(const std::int64_t* shape,
                                                  const std::int64_t* strides, int ndim) noexcept {
  std::int64_t s[ARRAYPORT_MAX_NDIM > 0 ? ARRAYPORT_MAX_NDIM : 1] = {};
  std::int64_t e[ARRAYPORT_MAX_NDIM > 0 ? ARRAYPORT_MAX_NDIM : 1] = {};
  int n = 0;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] == 0) return true;  // no elements
    if (shape[d] == 1) continue;     // its stride is never multiplied by a nonzero index
    s[n] = strides[d] < 0 ? -strides[d] : strides[d];
    e[n++] = shape[d];
  }
  for (int i = 1; i < n; ++i)  // insertion sort: ranks are small
    for (int j = i; j > 0 && s[j - 1] > s[j]; --j) {
      const std::int64_t st = s[j - 1], ex = e[j - 1];
      s[j - 1] = s[j];
      e[j - 1] = e[j];
      s[j] = st;
      e[j] = ex;
    }
  for (int i = 0; i < n; ++i) {
    std::int64_t below = 0;  // the span of the stride below; past int64: it cannot nest
    if (s[i] == 0 || (i > 0 && (detail::mul_overflow(s[i - 1], e[i - 1], &below) || s[i] < below)))
      return false;
  }
  return true;
}

/// Compact row-major strides of `shape`, in units of `unit_bytes` bytes (the itemsize for strides
/// in elements, 1 for strides in bytes) starting at `first` units. False when one that is needed
/// does not fit in int64 bytes (nbytes would not either); for an empty shape the strides past the
/// overflow are 0 (no element is ever addressed through them).
ARRAYPORT_HOST_DEVICE constexpr bool compact_strides(const std::int64_t* shape, int ndim,
                                                     std::int64_t* strides,
                                                     std::int64_t unit_bytes = 1,
                                                     std::int64_t first = 1) noexcept {
  const std::int64_t limit = detail::int64_max / (unit_bytes > 0 ? unit_bytes : 1);
  std::int64_t stride = first;
  bool fits = stride <= limit, empty = false;
  for (int i = ndim; i-- > 0;) {
    strides[i] = fits ? stride : 0;
    empty = empty || shape[i] == 0;
    // Past the outermost axis the product is the count, not a stride: not this function's.
    if (i > 0 && fits &&
        (detail::mul_overflow(stride, shape[i] > 0 ? shape[i] : 1, &stride) || stride > limit))
      fits = false;
  }
  return fits || empty;
}

/// Row-major (c_order) or column-major contiguity, strides in elements (unit 1) or in bytes
/// (unit = itemsize). Extents of 1 may have any stride, and an empty layout is contiguous whatever
/// its strides (NumPy's flags agree).
ARRAYPORT_HOST_DEVICE constexpr bool is_contiguous(const std::int64_t* shape,
                                                   const std::int64_t* strides, int ndim,
                                                   bool c_order = true,
                                                   std::int64_t unit = 1) noexcept {
  for (int i = 0; i < ndim; ++i)
    if (shape[i] == 0) return true;
  std::int64_t expected = unit;
  bool overflowed = false;  // the extents so far hold 2^63 elements or more: no stride matches
  for (int k = 0; k < ndim; ++k) {
    const int i = c_order ? ndim - 1 - k : k;
    if (shape[i] == 1) continue;
    if (overflowed || strides[i] != expected) return false;
    overflowed = detail::mul_overflow(expected, shape[i], &expected);
  }
  return true;
}

/// Contiguity of a C view (strides in elements), in C and in Fortran order.
ARRAYPORT_HOST_DEVICE constexpr bool is_c_contiguous(const arrayport_view_t& v) noexcept {
  return is_contiguous(v.shape, v.strides, v.ndim, true);
}
ARRAYPORT_HOST_DEVICE constexpr bool is_f_contiguous(const arrayport_view_t& v) noexcept {
  return is_contiguous(v.shape, v.strides, v.ndim, false);
}

/// sum_k index[k] * strides[k]: the offset of an element in units of the strides. False on
/// overflow (never for in-bounds indices of an addressable layout).
ARRAYPORT_HOST_DEVICE constexpr bool element_offset(const std::int64_t* index,
                                                    const std::int64_t* strides, int ndim,
                                                    std::int64_t& offset) noexcept {
  std::int64_t sum = 0;
  for (int k = 0; k < ndim; ++k) {
    std::int64_t term = 0;
    if (detail::mul_overflow(index[k], strides[k], &term) || detail::add_overflow(sum, term, &sum))
      return false;
  }
  offset = sum;
  return true;
}

/// Whether [data + lo, data + hi) lies inside the address space (no wrap past 0 or the top).
ARRAYPORT_HOST_DEVICE inline bool fits_address_space(const void* data,
                                                     const layout_info& l) noexcept {
  const auto base = reinterpret_cast<std::uintptr_t>(data);
  const auto below = 0 - static_cast<std::uint64_t>(l.lo);  // lo <= 0
  const auto above = static_cast<std::uint64_t>(l.hi);
  return base >= below && static_cast<std::uint64_t>(~std::uintptr_t(0) - base) >= above;
}

// ---- messages (host) --------------------------------------------------------------------------

namespace detail {

inline std::uint64_t magnitude(std::int64_t v) noexcept {
  return v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
}

// "(3, 4)", "(5,)", "()": a tuple as Python prints it.
inline std::string tuple_string(const std::int64_t* values, int n, std::int64_t scale = 1) {
  std::string r = "(";
  for (int i = 0; i < n; ++i) {
    r += std::to_string(values[i] * scale);
    r += n == 1 ? "," : i + 1 < n ? ", " : "";
  }
  return r + ")";
}

}  // namespace detail

/// The message for a layout that measure_layout refused, prefixed with `what` (the argument or
/// operation): the exact number that does not fit, past 2^63 too.
inline std::string layout_message(const char* what, const layout_info& info,
                                  const std::int64_t* shape, const std::int64_t* strides, int ndim,
                                  std::int64_t itemsize, stride_unit unit = stride_unit::elements) {
  const std::string prefix = std::string(what) + ": ";
  const std::string limit = ", more than 2^63-1";
  const std::string shape_str = "shape " + detail::tuple_string(shape, ndim);
  auto count = [&] {
    detail::big_uint n(1);
    for (int i = 0; i < ndim; ++i) n *= static_cast<std::uint64_t>(shape[i]);
    return n;
  };
  const std::int64_t scale = unit == stride_unit::elements ? itemsize : 1;
  switch (info.status) {
    case layout_status::ok: return prefix + "the layout is addressable";
    case layout_status::bad_rank:
      return prefix + "expected at most " + std::to_string(ARRAYPORT_MAX_NDIM) +
             " dimensions, got " + std::to_string(ndim);
    case layout_status::bad_itemsize:
      return prefix + "expected a positive itemsize, got " + std::to_string(itemsize);
    case layout_status::negative_extent:
      return prefix + "expected non-negative extents, got " + shape_str;
    case layout_status::too_many_elements:
      return prefix + shape_str + " has " + count().str() + " elements" + limit;
    case layout_status::too_many_bytes: {
      detail::big_uint bytes = count();
      bytes *= static_cast<std::uint64_t>(itemsize);
      return prefix + shape_str + " has " + count().str() + " elements of " +
             std::to_string(itemsize) + " bytes, " + bytes.str() + " bytes in all (nbytes)" + limit;
    }
    case layout_status::stride_too_large: {
      const std::int64_t s = strides[info.axis];
      detail::big_uint bytes(detail::magnitude(s));
      bytes *= static_cast<std::uint64_t>(scale);
      return prefix + "the stride of axis " + std::to_string(info.axis) + " of " + shape_str +
             " is " + (s < 0 ? "-" : "") + bytes.str() + " bytes (" + std::to_string(s) +
             " elements of " + std::to_string(itemsize) + " bytes)" + limit;
    }
    case layout_status::span_too_large: {
      detail::big_uint span(static_cast<std::uint64_t>(itemsize));
      for (int i = 0; i < ndim; ++i) {
        detail::big_uint reach(static_cast<std::uint64_t>(shape[i] - 1));
        reach *= detail::magnitude(strides[i]);
        reach *= static_cast<std::uint64_t>(scale);
        span += reach;
      }
      return prefix + shape_str + " with byte strides " +
             detail::tuple_string(strides, ndim, scale) + " spans " + span.str() + " bytes" + limit;
    }
  }
  return prefix + "unknown layout status";
}

/// measure_layout, throwing value_error (ValueError in Python) with layout_message unless the
/// layout is addressable.
inline layout_info check_layout(const char* what, const std::int64_t* shape,
                                const std::int64_t* strides, int ndim, std::int64_t itemsize,
                                stride_unit unit = stride_unit::elements) {
  const layout_info info = measure_layout(shape, strides, ndim, itemsize, unit);
  if (!info.ok())
    throw value_error(layout_message(what, info, shape, strides, ndim, itemsize, unit));
  return info;
}

/// check_layout of a C view (strides in elements; itemsize from its dtype).
inline layout_info check_layout(const char* what, const arrayport_view_t& v) {
  return check_layout(what, v.shape, v.strides, v.ndim,
                      static_cast<std::int64_t>(dtype::from_c(v.dtype).itemsize()));
}

/// "(3, 4)", "(5,)", "()": a shape as Python prints it, for messages.
inline std::string shape_string(const std::int64_t* shape, int ndim) {
  return detail::tuple_string(shape, ndim);
}
inline std::string shape_string(const std::vector<std::int64_t>& shape) {
  return detail::tuple_string(shape.data(), static_cast<int>(shape.size()));
}

/// The fields of a C view other than its layout: where the memory is and who keeps it.
struct c_view_place {
  std::uint32_t memory_kind;  ///< an arrayport_memory_kind_t value
  arrayport_device_t device;
  void* stream = nullptr;   ///< the stream the data is ready on (nullptr: legacy default)
  std::uint32_t flags = 0;  ///< ARRAYPORT_VIEW_* bits
  void* owner = nullptr;
};

/// Fills `v` as a C view of the current ABI version: `shape` and `strides` (in elements) are the
/// caller's and must outlive it. The one place a view's fields are filled. Field by field: a view
/// returned by value went through the stack in halves that stalled store forwarding (~20 ns).
inline void fill_c_view(arrayport_view_t& v, void* data, arrayport_dtype_t dtype,
                        const std::int64_t* shape, const std::int64_t* strides, int ndim,
                        const c_view_place& place) noexcept {
  v.version = {ARRAYPORT_C_ABI_VERSION_MAJOR, ARRAYPORT_C_ABI_VERSION_MINOR};
  v.data = data;
  v.shape = shape;
  v.strides = strides;
  v.ndim = ndim;
  v.dtype = dtype;
  v.device = place.device;
  v.memory_kind = place.memory_kind;
  v.flags = place.flags;
  v.owner = place.owner;
  v.stream = place.stream;
}

}  // namespace arrayport
