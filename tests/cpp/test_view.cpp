// view<T, Rank, Space> and strided_view: zero-cost layout, indexing, strides, checked conversion.
#include <arrayport/view.hpp>

#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>

using arrayport::view;

// Zero-cost: a pointer and two extents arrays, trivially copyable, standard layout.
static_assert(std::is_trivially_copyable_v<view<float, 1>>);
static_assert(std::is_trivially_copyable_v<view<const double, 4, arrayport::device_space>>);
static_assert(std::is_standard_layout_v<view<std::int8_t, 3>>);
static_assert(sizeof(view<float, 2>) == 8 + 2 * 2 * 8);
static_assert(sizeof(arrayport::host_view<float, 2>) == sizeof(view<float, 2>));
static_assert(std::is_convertible_v<view<float, 2>, view<const float, 2>>);
static_assert(!std::is_convertible_v<view<const float, 2>, view<float, 2>>);
static_assert(std::is_convertible_v<arrayport::device_view<float, 1>, view<float, 1>>);
static_assert(!std::is_convertible_v<view<float, 1>, arrayport::device_view<float, 1>>);

TEST(View, ContiguousViewComputesCOrderStrides) {
  float data[24] = {};
  view<float, 3> v(data, {2, 3, 4});
  EXPECT_EQ(v.stride(0), 12);
  EXPECT_EQ(v.stride(1), 4);
  EXPECT_EQ(v.stride(2), 1);
  EXPECT_EQ(v.size(), 24);
  EXPECT_TRUE(v.is_contiguous());
  v(1, 2, 3) = 7.f;
  EXPECT_EQ(data[12 + 8 + 3], 7.f);
}

TEST(View, RankOneSubscriptAndExtent) {
  int data[5] = {10, 11, 12, 13, 14};
  view<int, 1> v(data, 5);
  EXPECT_EQ(v.extent(0), 5);
  EXPECT_EQ(v[3], 13);
  EXPECT_EQ(v(4), 14);
}

TEST(View, NegativeStridesWalkBackwards) {
  int data[5] = {0, 1, 2, 3, 4};
  view<int, 1> reversed(data + 4, {5}, {-1});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(reversed(i), 4 - i);
  EXPECT_FALSE(reversed.is_contiguous());
}

TEST(View, TransposedStridesAreNotContiguous) {
  double data[6] = {0, 1, 2, 3, 4, 5};  // 2x3 C order
  view<double, 2> t(data, {3, 2}, {1, 3});
  EXPECT_EQ(t(2, 1), 5.0);
  EXPECT_EQ(t(0, 1), 3.0);
  EXPECT_FALSE(t.is_contiguous());
}

TEST(View, ZeroStrideBroadcasts) {
  float x = 3.f;
  view<float, 2> b(&x, {4, 5}, {0, 0});
  EXPECT_EQ(b(3, 4), 3.f);
  EXPECT_EQ(b.size(), 20);
}

TEST(View, SizeOneDimensionsIgnoreTheirStrideForContiguity) {
  float data[3] = {};
  view<float, 2> v(data, {1, 3}, {999, 1});
  EXPECT_TRUE(v.is_contiguous());
}

TEST(View, RankZeroHoldsOneElement) {
  float x = 2.5f;
  view<float, 0> s(&x);
  EXPECT_EQ(s.size(), 1);
  EXPECT_EQ(s(), 2.5f);
}

TEST(View, ZeroExtentIsEmpty) {
  view<float, 2> v(nullptr, {3, 0});
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(v.size(), 0);
}

TEST(View, ConvertsToConstAndToAnySpace) {
  float data[2] = {1, 2};
  arrayport::host_view<float, 1> h(data, 2);
  view<const float, 1> c = h;
  EXPECT_EQ(c[1], 2.f);
  EXPECT_EQ(c.data(), data);
}

namespace {
arrayport_view_t make_c_view(void* data, const std::int64_t* shape, const std::int64_t* strides,
                             int ndim, arrayport::dtype dt, arrayport::memory_kind kind,
                             bool readonly) {
  arrayport_view_t v{};
  v.version = {ARRAYPORT_C_ABI_VERSION_MAJOR, ARRAYPORT_C_ABI_VERSION_MINOR};
  v.data = data;
  v.shape = shape;
  v.strides = strides;
  v.ndim = ndim;
  v.dtype = dt.to_c();
  v.device = arrayport::dlpack_device(kind, 0);
  v.memory_kind = static_cast<std::uint32_t>(kind);
  v.flags = readonly ? ARRAYPORT_VIEW_READONLY : 0u;
  return v;
}
}  // namespace

TEST(StridedView, AsReturnsTheTypedViewWithTheSameLayout) {
  std::int32_t data[6] = {0, 1, 2, 3, 4, 5};
  const std::int64_t shape[2] = {3, 2}, strides[2] = {1, 3};
  arrayport::strided_view sv(make_c_view(data, shape, strides, 2, arrayport::dtypes::int32,
                                         arrayport::memory_kind::host, false));
  auto v = sv.as<std::int32_t, 2>("x");
  EXPECT_EQ(v.data(), data);
  EXPECT_EQ(v.extent(0), 3);
  EXPECT_EQ(v.stride(1), 3);
  EXPECT_EQ(v(2, 1), 5);
  EXPECT_EQ(sv.size(), 6);
}

TEST(StridedView, WrongDtypeIsATypeErrorNamingArgumentExpectedAndGot) {
  float data[2] = {};
  const std::int64_t shape[1] = {2}, strides[1] = {1};
  arrayport::strided_view sv(make_c_view(data, shape, strides, 1, arrayport::dtypes::float32,
                                         arrayport::memory_kind::host, false));
  try {
    (void)sv.as<double, 1>("weights");
    FAIL() << "expected type_error";
  } catch (const arrayport::type_error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("weights"), std::string::npos) << msg;
    EXPECT_NE(msg.find("float64"), std::string::npos) << msg;
    EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
  }
}

TEST(StridedView, WrongRankIsATypeError) {
  float data[2] = {};
  const std::int64_t shape[1] = {2}, strides[1] = {1};
  arrayport::strided_view sv(make_c_view(data, shape, strides, 1, arrayport::dtypes::float32,
                                         arrayport::memory_kind::host, false));
  try {
    (void)sv.as<float, 2>("x");
    FAIL() << "expected type_error";
  } catch (const arrayport::type_error& e) {
    EXPECT_NE(std::string(e.what()).find("expected 2-dimensional array, got 1"), std::string::npos)
        << e.what();
  }
}

TEST(StridedView, DeviceMemoryIntoAHostViewIsAValueError) {
  float data[1] = {};
  const std::int64_t shape[1] = {1}, strides[1] = {1};
  arrayport::strided_view sv(make_c_view(data, shape, strides, 1, arrayport::dtypes::float32,
                                         arrayport::memory_kind::device, false));
  EXPECT_THROW((sv.as<float, 1, arrayport::host_space>("x")), arrayport::value_error);
  EXPECT_NO_THROW((sv.as<float, 1, arrayport::device_space>("x")));
}

TEST(StridedView, HostMemoryIntoADeviceViewIsAValueError) {
  float data[1] = {};
  const std::int64_t shape[1] = {1}, strides[1] = {1};
  arrayport::strided_view sv(make_c_view(data, shape, strides, 1, arrayport::dtypes::float32,
                                         arrayport::memory_kind::host, false));
  EXPECT_THROW((sv.as<float, 1, arrayport::device_space>("x")), arrayport::value_error);
  // Managed and pinned memory are reachable from both sides.
  arrayport::strided_view managed(make_c_view(data, shape, strides, 1, arrayport::dtypes::float32,
                                              arrayport::memory_kind::managed, false));
  EXPECT_NO_THROW((managed.as<float, 1, arrayport::device_space>("x")));
  EXPECT_NO_THROW((managed.as<float, 1, arrayport::host_space>("x")));
}

TEST(StridedView, ReadOnlyIntoAWritableViewIsABufferErrorButConstIsFine) {
  std::complex<float> data[1] = {};
  const std::int64_t shape[1] = {1}, strides[1] = {1};
  arrayport::strided_view sv(make_c_view(data, shape, strides, 1, arrayport::dtypes::complex64,
                                         arrayport::memory_kind::host, true));
  EXPECT_THROW((sv.as<std::complex<float>, 1>("x")), arrayport::buffer_error);
  EXPECT_NO_THROW((sv.as<const std::complex<float>, 1>("x")));
}

TEST(StridedView, DefaultIsAnEmptyRankZeroViewOfTheCurrentAbi) {
  arrayport::strided_view sv;
  EXPECT_EQ(sv.ndim(), 0);
  EXPECT_EQ(sv.data(), nullptr);
  EXPECT_EQ(sv.c_view().version.major, ARRAYPORT_C_ABI_VERSION_MAJOR);
}
