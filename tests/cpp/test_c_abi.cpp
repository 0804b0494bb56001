// The C ABI: layout frozen and identical in C and C++, and a C-filled view read through C++.
#include <arrayport/c/view.h>
#include <arrayport/view.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <type_traits>

extern "C" {
std::size_t arrayport_test_c_sizeof_view(void);
std::size_t arrayport_test_c_offsetof_view_stream(void);
std::size_t arrayport_test_c_offsetof_view_owner(void);
void arrayport_test_c_fill_view(arrayport_view_t* v, float* data, const std::int64_t* shape,
                                const std::int64_t* strides);
}

static_assert(std::is_standard_layout_v<arrayport_view_t>);
static_assert(std::is_trivially_copyable_v<arrayport_view_t>);

TEST(CAbi, LayoutIsTheSameInCAndCpp) {
  EXPECT_EQ(arrayport_test_c_sizeof_view(), sizeof(arrayport_view_t));
  EXPECT_EQ(arrayport_test_c_sizeof_view(), 72u);
  EXPECT_EQ(arrayport_test_c_offsetof_view_stream(), offsetof(arrayport_view_t, stream));
  EXPECT_EQ(arrayport_test_c_offsetof_view_owner(), offsetof(arrayport_view_t, owner));
}

TEST(CAbi, EnumValuesAreDLPacks) {
  // DLPack v1.x: kDLCPU=1, kDLCUDA=2, kDLCUDAHost=3, kDLCUDAManaged=13; kDLInt=0 ... kDLBool=6.
  EXPECT_EQ(ARRAYPORT_DEVICE_CPU, 1);
  EXPECT_EQ(ARRAYPORT_DEVICE_CUDA, 2);
  EXPECT_EQ(ARRAYPORT_DEVICE_CUDA_HOST, 3);
  EXPECT_EQ(ARRAYPORT_DEVICE_CUDA_MANAGED, 13);
  EXPECT_EQ(ARRAYPORT_DTYPE_INT, 0);
  EXPECT_EQ(ARRAYPORT_DTYPE_UINT, 1);
  EXPECT_EQ(ARRAYPORT_DTYPE_FLOAT, 2);
  EXPECT_EQ(ARRAYPORT_DTYPE_BFLOAT, 4);
  EXPECT_EQ(ARRAYPORT_DTYPE_COMPLEX, 5);
  EXPECT_EQ(ARRAYPORT_DTYPE_BOOL, 6);
}

TEST(CAbi, ViewFilledInCIsReadByTheTypedCppView) {
  float data[6] = {0, 1, 2, 3, 4, 5};
  const std::int64_t shape[2] = {2, 3};
  const std::int64_t strides[2] = {3, 1};
  arrayport_view_t c{};
  arrayport_test_c_fill_view(&c, data, shape, strides);
  arrayport::strided_view sv(c);
  EXPECT_TRUE(sv.readonly());
  EXPECT_EQ(sv.size(), 6);
  auto v = sv.as<const float, 2, arrayport::host_space>("x");
  EXPECT_EQ(v(1, 2), 5.f);
  EXPECT_EQ(v(1, 0), 3.f);
  EXPECT_THROW((sv.as<float, 2>("x")), arrayport::buffer_error);  // read-only
}
