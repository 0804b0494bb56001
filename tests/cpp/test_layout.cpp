// layout.hpp: element count, nbytes, byte strides and span against a 128-bit reference, swept over
// extents and strides at the int32 / int64 edges, negative and zero strides, itemsizes 1 to 16.
#include <arrayport/layout.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using arrayport::layout_info;
using arrayport::layout_status;
using arrayport::stride_unit;

namespace {

constexpr std::int64_t max64 = INT64_MAX;
constexpr std::int64_t min64 = INT64_MIN;
constexpr std::int64_t p31 = std::int64_t(1) << 31;
constexpr std::int64_t p62 = std::int64_t(1) << 62;

const std::vector<std::int64_t> extents = {0,       1,       2,       3,   p31 - 1, p31,
                                           p31 + 1, 1 << 30, p62 - 1, p62, p62 + 1, max64};
const std::vector<std::int64_t> strides = {0,   1,    -1,    2,     -2, p31,    -p31,
                                           p62, -p62, max64, min64, 3,  p31 + 1};
const std::vector<std::int64_t> itemsizes = {1, 2, 4, 8, 16};

// The reference: exact arithmetic in unsigned 128 bits, saturated at 2^100 (far past int64).
using u128 = unsigned __int128;
constexpr u128 cap = u128(1) << 100;
u128 sat_mul(u128 a, u128 b) { return (a != 0 && b > cap / a) ? cap : (a * b > cap ? cap : a * b); }
u128 magnitude(std::int64_t v) { return v < 0 ? u128(-(v + 1)) + 1 : u128(v); }

layout_info reference(const std::int64_t* shape, const std::int64_t* st, int ndim,
                      std::int64_t itemsize, stride_unit unit) {
  layout_info r;
  for (int i = 0; i < ndim; ++i)
    if (shape[i] < 0) {
      r.status = layout_status::negative_extent;
      r.axis = i;
      return r;
    }
  u128 count = 1;
  bool empty = false;
  for (int i = 0; i < ndim; ++i) {
    empty = empty || shape[i] == 0;
    count = sat_mul(count, u128(shape[i]));
  }
  if (empty) count = 0;
  if (count > u128(max64)) return r.status = layout_status::too_many_elements, r;
  const u128 nbytes = sat_mul(count, u128(itemsize));
  if (nbytes > u128(max64)) return r.status = layout_status::too_many_bytes, r;
  r.count = static_cast<std::int64_t>(count);
  r.nbytes = static_cast<std::int64_t>(nbytes);
  if (!st) {
    r.hi = r.nbytes;
    return r;
  }
  const u128 scale = unit == stride_unit::elements ? u128(itemsize) : 1;
  for (int i = 0; i < ndim; ++i) {
    const u128 b = sat_mul(magnitude(st[i]), scale);
    if (st[i] >= 0 ? b > u128(max64) : b > u128(max64) + 1) {
      r.status = layout_status::stride_too_large;
      r.axis = i;
      return r;
    }
  }
  if (count == 0) return r;
  u128 lo = 0, hi = 0;
  for (int i = 0; i < ndim; ++i) {
    const u128 reach = sat_mul(u128(shape[i] - 1), sat_mul(magnitude(st[i]), scale));
    (st[i] < 0 ? lo : hi) += reach;
  }
  hi += u128(itemsize);
  if (hi + lo > u128(max64)) return r.status = layout_status::span_too_large, r;
  r.lo = -static_cast<std::int64_t>(lo);
  r.hi = static_cast<std::int64_t>(hi);
  return r;
}

void expect_same(const std::int64_t* shape, const std::int64_t* st, int ndim, std::int64_t itemsize,
                 stride_unit unit) {
  const layout_info got = arrayport::measure_layout(shape, st, ndim, itemsize, unit);
  const layout_info want = reference(shape, st, ndim, itemsize, unit);
  std::string where = "shape";
  for (int i = 0; i < ndim; ++i) where += " " + std::to_string(shape[i]);
  if (st)
    for (int i = 0; i < ndim; ++i) where += (i ? " " : " strides ") + std::to_string(st[i]);
  where += " itemsize " + std::to_string(itemsize);
  ASSERT_EQ(static_cast<int>(got.status), static_cast<int>(want.status)) << where;
  if (!want.ok()) {
    if (want.status == layout_status::stride_too_large ||
        want.status == layout_status::negative_extent) {
      EXPECT_EQ(got.axis, want.axis) << where;
    }
    return;
  }
  EXPECT_EQ(got.count, want.count) << where;
  EXPECT_EQ(got.nbytes, want.nbytes) << where;
  EXPECT_EQ(got.lo, want.lo) << where;
  EXPECT_EQ(got.hi, want.hi) << where;
  std::int64_t count = -2, nbytes = -2;
  EXPECT_EQ(arrayport::element_count(shape, ndim, count), layout_status::ok);
  EXPECT_EQ(count, want.count);
  EXPECT_EQ(arrayport::byte_count(shape, ndim, itemsize, nbytes), layout_status::ok);
  EXPECT_EQ(nbytes, want.nbytes);
}

}  // namespace

// Compile-time: the functions are constexpr (usable in static_asserts and on the device).
constexpr std::int64_t k_shape[3] = {2, 3, 4};
constexpr std::int64_t k_strides[3] = {-12, 4, 1};
static_assert(arrayport::measure_layout(k_shape, nullptr, 3, 8).nbytes == 192);
static_assert(arrayport::measure_layout(k_shape, k_strides, 3, 8).lo == -96);
static_assert(arrayport::measure_layout(k_shape, k_strides, 3, 8).hi == 96);
static_assert(arrayport::element_count_or_minus_one(k_shape, 3) == 24);
static_assert(arrayport::is_contiguous(k_shape + 1, k_strides + 1, 2));

TEST(Layout, OneAxisSweepMatchesTheReference) {
  for (std::int64_t item : itemsizes)
    for (std::int64_t n : extents) {
      expect_same(&n, nullptr, 1, item, stride_unit::elements);
      for (std::int64_t s : strides) {
        expect_same(&n, &s, 1, item, stride_unit::elements);
        expect_same(&n, &s, 1, item, stride_unit::bytes);
      }
    }
}

TEST(Layout, TwoAxisSweepMatchesTheReference) {
  for (std::int64_t item : itemsizes)
    for (std::int64_t n0 : extents)
      for (std::int64_t n1 : extents) {
        const std::int64_t shape[2] = {n0, n1};
        expect_same(shape, nullptr, 2, item, stride_unit::elements);
        for (std::int64_t s0 : strides)
          for (std::int64_t s1 : strides) {
            const std::int64_t st[2] = {s0, s1};
            expect_same(shape, st, 2, item, stride_unit::elements);
            expect_same(shape, st, 2, item, stride_unit::bytes);
          }
      }
}

TEST(Layout, RandomHigherRankLayoutsMatchTheReference) {
  std::mt19937_64 rng(19);
  auto pick = [&](const std::vector<std::int64_t>& from) { return from[rng() % from.size()]; };
  for (int trial = 0; trial < 200000; ++trial) {
    const int ndim = 3 + static_cast<int>(rng() % 4);
    std::int64_t shape[6], st[6];
    for (int i = 0; i < ndim; ++i) {
      shape[i] = rng() % 3 ? static_cast<std::int64_t>(rng() % 5) : pick(extents);
      st[i] = rng() % 3 ? static_cast<std::int64_t>(rng() % 41) - 20 : pick(strides);
    }
    expect_same(shape, st, ndim, pick(itemsizes),
                rng() % 2 ? stride_unit::elements : stride_unit::bytes);
    if (HasFatalFailure()) return;
  }
}

TEST(Layout, RankZeroIsOneElement) {
  const layout_info l = arrayport::measure_layout(nullptr, nullptr, 0, 16);
  EXPECT_TRUE(l.ok());
  EXPECT_EQ(l.count, 1);
  EXPECT_EQ(l.nbytes, 16);
  EXPECT_EQ(l.span(), 16);
}

TEST(Layout, BadRankNegativeExtentAndItemsizeAreReported) {
  std::int64_t shape[ARRAYPORT_MAX_NDIM + 1] = {};
  EXPECT_EQ(arrayport::measure_layout(shape, nullptr, -1, 4).status, layout_status::bad_rank);
  EXPECT_EQ(arrayport::measure_layout(shape, nullptr, ARRAYPORT_MAX_NDIM + 1, 4).status,
            layout_status::bad_rank);
  EXPECT_EQ(arrayport::measure_layout(shape, nullptr, ARRAYPORT_MAX_NDIM, 4).status,
            layout_status::ok);
  EXPECT_EQ(arrayport::measure_layout(shape, nullptr, 1, 0).status, layout_status::bad_itemsize);
  const std::int64_t negative[3] = {2, -1, 0};
  const layout_info l = arrayport::measure_layout(negative, nullptr, 3, 4);
  EXPECT_EQ(l.status, layout_status::negative_extent);
  EXPECT_EQ(l.axis, 1);
}

TEST(Layout, EmptyShapesCountZeroWhateverTheOtherExtents) {
  const std::int64_t shape[3] = {p62, 0, p62};
  const std::int64_t st[3] = {1, 1, 1};
  const layout_info l = arrayport::measure_layout(shape, st, 3, 16);
  EXPECT_TRUE(l.ok());
  EXPECT_EQ(l.count, 0);
  EXPECT_EQ(l.nbytes, 0);
  EXPECT_EQ(l.span(), 0);
  EXPECT_EQ(arrayport::element_count_or_minus_one(shape, 3), 0);
}

TEST(Layout, ZeroStridesCountEveryElementInNbytesButSpanOne) {
  // A broadcast view: nbytes is size * itemsize (NumPy's), the span is one element.
  const std::int64_t shape[2] = {p31, p31};
  const std::int64_t st[2] = {0, 0};
  const layout_info l = arrayport::measure_layout(shape, st, 2, 1);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l.nbytes, p62);
  EXPECT_EQ(l.span(), 1);
  // 2^61 float64 through stride 0: 2^64 bytes, which no int64 holds (issue 19)
  const std::int64_t n = std::int64_t(1) << 61, zero = 0;
  EXPECT_EQ(arrayport::measure_layout(&n, &zero, 1, 8).status, layout_status::too_many_bytes);
}

TEST(Layout, ProductsAtTheEdgesOfInt64) {
  std::int64_t count = 0;
  const std::int64_t fits[2] = {p62, 1};
  EXPECT_EQ(arrayport::element_count(fits, 2, count), layout_status::ok);
  EXPECT_EQ(count, p62);
  const std::int64_t max_count[2] = {max64, 1};
  EXPECT_EQ(arrayport::element_count(max_count, 2, count), layout_status::ok);
  EXPECT_EQ(count, max64);
  const std::int64_t just_over[2] = {p62, 2};  // 2^63
  EXPECT_EQ(arrayport::element_count(just_over, 2, count), layout_status::too_many_elements);
  const std::int64_t reshape_case[2] = {p62 + 1, 4};  // issue 19's reshape(2**62 + 1, 4)
  EXPECT_EQ(arrayport::element_count(reshape_case, 2, count), layout_status::too_many_elements);
  EXPECT_EQ(arrayport::element_count_or_minus_one(reshape_case, 2), -1);
  const std::int64_t int32_edge[2] = {p31, p31};
  EXPECT_EQ(arrayport::element_count(int32_edge, 2, count), layout_status::ok);
  EXPECT_EQ(count, p62);
  std::int64_t nbytes = 0;
  const std::int64_t half[1] = {p62};
  EXPECT_EQ(arrayport::byte_count(half, 1, 1, nbytes), layout_status::ok);
  EXPECT_EQ(arrayport::byte_count(half, 1, 2, nbytes), layout_status::too_many_bytes);
  const std::int64_t top[1] = {max64 / 16};
  EXPECT_EQ(arrayport::byte_count(top, 1, 16, nbytes), layout_status::ok);
  EXPECT_EQ(nbytes, max64 / 16 * 16);
}

TEST(Layout, NegativeStridesReachBackwards) {
  const std::int64_t shape[2] = {3, 4};
  const std::int64_t st[2] = {-4, -1};  // x[::-1, ::-1] of a 3 x 4 array, data at the last element
  const layout_info l = arrayport::measure_layout(shape, st, 2, 8);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l.lo, -(2 * 4 + 3) * 8);
  EXPECT_EQ(l.hi, 8);
  EXPECT_EQ(l.span(), 12 * 8);
  // the lowest reachable offset is INT64_MIN + 1 bytes away at most: the span must fit too
  const std::int64_t one = 2, far = min64 + 1;
  EXPECT_EQ(arrayport::measure_layout(&one, &far, 1, 1, stride_unit::bytes).status,
            layout_status::span_too_large);
}

TEST(Layout, CompactStridesAndContiguity) {
  const std::int64_t shape[3] = {2, 3, 4};
  std::int64_t st[3] = {};
  EXPECT_TRUE(arrayport::compact_strides(shape, 3, st));
  EXPECT_EQ(st[0], 12);
  EXPECT_EQ(st[1], 4);
  EXPECT_EQ(st[2], 1);
  EXPECT_TRUE(arrayport::is_contiguous(shape, st, 3, true));
  EXPECT_FALSE(arrayport::is_contiguous(shape, st, 3, false));
  EXPECT_TRUE(arrayport::compact_strides(shape, 3, st, 1, 8));  // in bytes of 8-byte items
  EXPECT_EQ(st[0], 96);
  EXPECT_TRUE(arrayport::is_contiguous(shape, st, 3, true, 8));
  // the strides of a shape past 2^63 elements do not exist; an empty one's are never used
  const std::int64_t huge[3] = {2, p62, 4};
  EXPECT_FALSE(arrayport::compact_strides(huge, 3, st));
  const std::int64_t empty_huge[3] = {0, p62, 4};
  EXPECT_TRUE(arrayport::compact_strides(empty_huge, 3, st));
  EXPECT_EQ(st[1], 4);
  EXPECT_EQ(st[2], 1);
  // element strides are bounded by their bytes: 2^62 - 1 elements of 4 bytes do not fit
  const std::int64_t wide[2] = {2, p62 - 1}, empty_wide[2] = {0, p62 - 1};
  EXPECT_TRUE(arrayport::compact_strides(wide, 2, st, 1));
  EXPECT_FALSE(arrayport::compact_strides(wide, 2, st, 4));
  EXPECT_TRUE(arrayport::compact_strides(empty_wide, 2, st, 4));
  EXPECT_EQ(st[0], 0);
  EXPECT_EQ(st[1], 1);
  EXPECT_TRUE(arrayport::measure_layout(empty_wide, st, 2, 4).ok());
  // extents of 1 take any stride; an empty layout is contiguous in both orders
  const std::int64_t ones[2] = {1, 5}, odd[2] = {max64, 1};
  EXPECT_TRUE(arrayport::is_contiguous(ones, odd, 2, true));
  const std::int64_t none[2] = {0, 5}, any[2] = {7, -3};
  EXPECT_TRUE(arrayport::is_contiguous(none, any, 2, true));
  EXPECT_TRUE(arrayport::is_contiguous(none, any, 2, false));
}

TEST(Layout, AxisOrderIsTheMemoryOrderOutermostFirst) {
  int order[4] = {};
  const std::int64_t shape[3] = {2, 3, 4};
  const std::int64_t c[3] = {12, 4, 1}, f[3] = {1, 2, 6}, mixed[3] = {4, -1, 12};
  EXPECT_FALSE(arrayport::axis_order(shape, c, 3, order));  // C order: nothing moves
  EXPECT_EQ((std::vector<int>(order, order + 3)), (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(arrayport::axis_order(shape, f, 3, order));
  EXPECT_EQ((std::vector<int>(order, order + 3)), (std::vector<int>{2, 1, 0}));
  EXPECT_TRUE(arrayport::axis_order(shape, mixed, 3, order));  // |stride|, largest first
  EXPECT_EQ((std::vector<int>(order, order + 3)), (std::vector<int>{2, 0, 1}));
  // extents of 1 count as outermost, ties keep the axes' order, and INT64_MIN has a magnitude
  const std::int64_t ones[4] = {3, 1, 4, 1}, st[4] = {1, 99, 3, 0};
  EXPECT_TRUE(arrayport::axis_order(ones, st, 4, order));
  EXPECT_EQ((std::vector<int>(order, order + 4)), (std::vector<int>{1, 3, 2, 0}));
  const std::int64_t two[2] = {2, 2}, tie[2] = {8, 8}, extreme[2] = {1, min64};
  EXPECT_FALSE(arrayport::axis_order(two, tie, 2, order));
  EXPECT_TRUE(arrayport::axis_order(two, extreme, 2, order));
  EXPECT_EQ((std::vector<int>(order, order + 2)), (std::vector<int>{1, 0}));
  EXPECT_FALSE(arrayport::axis_order(shape, c, 0, order));
}

TEST(Layout, ElementOffsetsAreChecked) {
  const std::int64_t index[2] = {2, 3}, st[2] = {-4, 1};
  std::int64_t offset = 0;
  EXPECT_TRUE(arrayport::element_offset(index, st, 2, offset));
  EXPECT_EQ(offset, -5);
  const std::int64_t big[2] = {p62, 2}, two[2] = {2, 0};
  EXPECT_FALSE(arrayport::element_offset(two, big, 2, offset));
}

TEST(Layout, AddressSpaceBounds) {
  layout_info l;
  l.lo = -16;
  l.hi = 8;
  EXPECT_TRUE(arrayport::fits_address_space(reinterpret_cast<void*>(std::uintptr_t(16)), l));
  EXPECT_FALSE(arrayport::fits_address_space(reinterpret_cast<void*>(std::uintptr_t(8)), l));
  EXPECT_FALSE(arrayport::fits_address_space(reinterpret_cast<void*>(~std::uintptr_t(0) - 4), l));
}

TEST(Layout, MessagesNameTheExactNumbers) {
  const std::int64_t shape[2] = {p62 + 1, 4};
  try {
    arrayport::check_layout("reshape", shape, nullptr, 2, 8);
    FAIL() << "expected a value_error";
  } catch (const arrayport::value_error& e) {
    EXPECT_STREQ(e.what(),
                 "reshape: shape (4611686018427387905, 4) has 18446744073709551620 "
                 "elements, more than 2^63-1");
  }
  const std::int64_t n = std::int64_t(1) << 61, zero = 0;
  EXPECT_EQ(
      arrayport::layout_message("obj", arrayport::measure_layout(&n, &zero, 1, 8), &n, &zero, 1, 8),
      "obj: shape (2305843009213693952,) has 2305843009213693952 elements of 8 bytes, "
      "18446744073709551616 bytes in all (nbytes), more than 2^63-1");
  const std::int64_t three = 3, wide = p62 - 1;
  EXPECT_EQ(arrayport::layout_message("x", arrayport::measure_layout(&three, &wide, 1, 8), &three,
                                      &wide, 1, 8),
            "x: the stride of axis 0 of shape (3,) is 36893488147419103224 bytes "
            "(4611686018427387903 elements of 8 bytes), more than 2^63-1");
  EXPECT_EQ(arrayport::layout_message(
                "y", arrayport::measure_layout(&three, &wide, 1, 8, stride_unit::bytes), &three,
                &wide, 1, 8, stride_unit::bytes),
            "y: shape (3,) with byte strides (4611686018427387903,) spans 9223372036854775814 "
            "bytes, more than 2^63-1");
  const std::int64_t negative[2] = {3, -2};
  EXPECT_EQ(arrayport::layout_message("z", arrayport::measure_layout(negative, nullptr, 2, 1),
                                      negative, nullptr, 2, 1),
            "z: expected non-negative extents, got shape (3, -2)");
}

TEST(Layout, ShapeStringsAreAsPythonPrintsTuples) {
  const std::int64_t shape[] = {3, 4};
  EXPECT_EQ(arrayport::shape_string(shape, 2), "(3, 4)");
  EXPECT_EQ(arrayport::shape_string(shape, 1), "(3,)");
  EXPECT_EQ(arrayport::shape_string(shape, 0), "()");
  EXPECT_EQ(arrayport::shape_string(std::vector<std::int64_t>{0, max64}),
            "(0, 9223372036854775807)");
}

TEST(Layout, FillCViewFillsEveryField) {
  const std::int64_t shape[] = {2, 3}, c_strides[] = {3, 1}, f_strides[] = {1, 2};
  int data[6] = {}, owner = 0, stream = 0;
  arrayport_view_t v, f;
  std::memset(&v, 0xab, sizeof v);  // whatever was there is overwritten, field by field
  std::memset(&f, 0xab, sizeof f);
  arrayport::fill_c_view(v, data, arrayport::dtypes::int32.to_c(), shape, c_strides, 2,
                         {ARRAYPORT_MEMORY_PINNED,
                          {ARRAYPORT_DEVICE_CUDA_HOST, 0},
                          &stream,
                          ARRAYPORT_VIEW_READONLY,
                          &owner});
  EXPECT_EQ(v.version.major, ARRAYPORT_C_ABI_VERSION_MAJOR);
  EXPECT_EQ(v.version.minor, ARRAYPORT_C_ABI_VERSION_MINOR);
  EXPECT_EQ(v.data, data);
  EXPECT_EQ(v.shape, shape);
  EXPECT_EQ(v.strides, c_strides);
  EXPECT_EQ(v.ndim, 2);
  EXPECT_EQ(arrayport::dtype::from_c(v.dtype), arrayport::dtypes::int32);
  EXPECT_EQ(v.memory_kind, static_cast<std::uint32_t>(ARRAYPORT_MEMORY_PINNED));
  EXPECT_EQ(v.device.device_type, ARRAYPORT_DEVICE_CUDA_HOST);
  EXPECT_EQ(v.flags, static_cast<std::uint32_t>(ARRAYPORT_VIEW_READONLY));
  EXPECT_EQ(v.stream, &stream);
  EXPECT_EQ(v.owner, &owner);
  EXPECT_TRUE(arrayport::is_c_contiguous(v));
  EXPECT_FALSE(arrayport::is_f_contiguous(v));
  arrayport::fill_c_view(f, data, v.dtype, shape, f_strides, 2, {ARRAYPORT_MEMORY_HOST, {1, 0}});
  EXPECT_FALSE(arrayport::is_c_contiguous(f));
  EXPECT_TRUE(arrayport::is_f_contiguous(f));
  EXPECT_EQ(f.stream, nullptr);
  EXPECT_EQ(f.flags, 0u);
  EXPECT_EQ(f.owner, nullptr);
}
