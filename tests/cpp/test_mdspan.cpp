// view <-> cuda::std::mdspan (arrayport/mdspan.hpp): every layout a view can have either becomes a
// layout_stride mdspan that reaches the same element at every index, or is refused as
// layout_stride's preconditions say; every strided mdspan becomes a view. Built where libcu++'s
// headers are found (the CUDA toolkit's CCCL).
#include <arrayport/mdspan.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

using arrayport::view;

namespace {

// Every index of a rank-3 view and its mdspan reach the same element.
template <class M>
void expect_same_elements(const view<int, 3>& v, const M& m) {
  ASSERT_EQ(m.data_handle(), v.data());
  for (std::size_t r = 0; r != 3; ++r) ASSERT_EQ(m.extent(r), v.extent(r));
  for (std::int64_t i = 0; i < v.extent(0); ++i)
    for (std::int64_t j = 0; j < v.extent(1); ++j)
      for (std::int64_t k = 0; k < v.extent(2); ++k) ASSERT_EQ(&m(i, j, k), &v(i, j, k));
}

struct layout_case {
  std::int64_t shape[3], strides[3];
  bool compatible;
};

}  // namespace

TEST(Mdspan, EveryLayoutWithPositiveUniqueStridesConvertsAndReachesTheSameElements) {
  std::vector<int> data(4096);
  std::iota(data.begin(), data.end(), 0);
  const layout_case cases[] = {
      {{2, 3, 4}, {12, 4, 1}, true},             // C order
      {{2, 3, 4}, {1, 2, 6}, true},              // Fortran order
      {{2, 3, 4}, {4, 1, 12}, true},             // transposed
      {{2, 3, 4}, {40, 8, 2}, true},             // strided slice (every second element)
      {{2, 1, 4}, {4, 0, 1}, true},              // extent 1 with stride 0 (NumPy's broadcast of 1)
      {{2, 1, 4}, {4, -7, 1}, true},             // extent 1: its stride is never used
      {{2, 0, 4}, {-4, 0, 0}, true},             // empty: strides address nothing
      {{0, 1 << 30, 1 << 30}, {1, 1, 1}, true},  // empty, C-order strides still fit
      {{0, 1ll << 32, 1ll << 32}, {1, 1, 1}, false},  // empty, C-order strides pass 2^63
      {{1, 1, 1}, {0, 0, 0}, true},                   // one element
      {{2, 3, 4}, {12, 4, -1}, false},                // reversed (a negative stride)
      {{2, 3, 4}, {12, 0, 1}, false},                 // broadcast over 3 (zero stride)
      {{2, 3, 4}, {12, 2, 1}, false},                 // overlapping rows
      {{2, 3, 4}, {1, 1, 1}, false},                  // everything overlaps
      {{4, 4, 4}, {16, 4, 3}, false},  // unique but interleaved: strides that do not nest
  };
  for (const layout_case& c : cases) {
    const std::int64_t mid = 2048;  // room for negative strides either side
    view<int, 3> v(data.data() + mid, c.shape, c.strides);
    const std::string label = "shape " + arrayport::shape_string(c.shape, 3) + " strides " +
                              arrayport::shape_string(c.strides, 3);
    EXPECT_EQ(arrayport::mdspan_compatible(v), c.compatible) << label;
    if (c.compatible) {
      const auto m = arrayport::to_mdspan(v);
      static_assert(std::is_same_v<decltype(m)::layout_type, cuda::std::layout_stride>);
      EXPECT_TRUE(m.is_unique()) << label;
      expect_same_elements(v, m);
      const view<int, 3> back = arrayport::from_mdspan(m);
      expect_same_elements(back, m);
    } else {
      EXPECT_THROW((void)arrayport::to_mdspan(v), arrayport::value_error) << label;
    }
  }
}

TEST(Mdspan, TheRefusalNamesTheLayoutAndWhatToDo) {
  int data[24] = {};
  view<int, 2> reversed(data + 23, {4, 6}, {-6, -1});
  try {
    (void)arrayport::to_mdspan(reversed);
    FAIL() << "a reversed view was converted";
  } catch (const arrayport::value_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("shape (4, 6) with strides (-6, -1)"), std::string::npos) << what;
    EXPECT_NE(what.find("expected positive strides"), std::string::npos) << what;
  }
}

TEST(Mdspan, OverlapIsFoundWhateverTheStrideOrder) {
  // Sweep every stride triple in [1, 13]^3 over extents (3, 2, 4) and compare the check with
  // brute force: the layout is unique when no two indices reach one offset.
  const std::int64_t shape[3] = {3, 2, 4};
  int data[1] = {};
  for (std::int64_t a = 1; a <= 13; ++a)
    for (std::int64_t b = 1; b <= 13; ++b)
      for (std::int64_t c = 1; c <= 13; ++c) {
        const std::int64_t strides[3] = {a, b, c};
        std::vector<bool> seen(3 * 13 + 1 * 13 + 3 * 13 + 1);
        bool unique = true;
        for (std::int64_t i = 0; i < 3; ++i)
          for (std::int64_t j = 0; j < 2; ++j)
            for (std::int64_t k = 0; k < 4; ++k) {
              const auto off = static_cast<std::size_t>(i * a + j * b + k * c);
              unique = unique && !seen[off];
              seen[off] = true;
            }
        const view<int, 3> v(data, shape, strides);
        // layout_stride asks for more than uniqueness: the sorted strides must nest (a layout
        // such as strides (3, 1, 2)... interleaved yet unique is refused too). Nesting implies
        // uniqueness, so a compatible layout is always unique.
        if (arrayport::mdspan_compatible(v)) {
          EXPECT_TRUE(unique) << a << " " << b << " " << c;
        }
        if (!unique) {
          EXPECT_FALSE(arrayport::mdspan_compatible(v)) << a << " " << b << " " << c;
        }
      }
}

TEST(Mdspan, RightAndLeftLayoutsBecomeViews) {
  int data[24];
  std::iota(data, data + 24, 0);
  cuda::std::mdspan<int, cuda::std::extents<std::int64_t, 2, 3, 4>> right(data);
  const view<int, 3> r = arrayport::from_mdspan(right);
  EXPECT_EQ(r.stride(0), 12);
  EXPECT_EQ(r.stride(2), 1);
  EXPECT_EQ(r(1, 2, 3), 23);
  cuda::std::mdspan<int, cuda::std::dextents<int, 2>, cuda::std::layout_left> left(data, 4, 6);
  const view<const int, 2, arrayport::host_space> l = arrayport::from_mdspan<arrayport::host_space>(
      cuda::std::mdspan<const int, cuda::std::dextents<int, 2>, cuda::std::layout_left>(left));
  EXPECT_EQ(l.stride(0), 1);
  EXPECT_EQ(l.stride(1), 4);
  EXPECT_EQ(l(3, 5), 23);
}

TEST(Mdspan, RankZeroAndRankOne) {
  int x = 5;
  view<int, 0> scalar(&x);
  const auto m0 = arrayport::to_mdspan(scalar);
  EXPECT_EQ(m0(), 5);
  int data[10];
  std::iota(data, data + 10, 0);
  view<int, 1> every_third(data, {4}, {3});
  const auto m1 = arrayport::to_mdspan(every_third);
  EXPECT_EQ(m1(3), 9);
  EXPECT_EQ(arrayport::from_mdspan(m1).stride(0), 3);
}
