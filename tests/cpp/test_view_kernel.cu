// One test body, run on the host and in a <<<1,1>>> kernel: a view indexes the same on both sides.
#include <arrayport/buffer.hpp>
#include <arrayport/layout.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/view.hpp>

#include <gtest/gtest.h>

#include "gpu.hpp"

namespace {

// Writes i*10+j through a transposed view, then counts elements that read back wrong.
ARRAYPORT_HOST_DEVICE int view_body(float* data) {
  arrayport::view<float, 2> rows(data, {3, 4});
  arrayport::view<float, 2> cols(data, {4, 3}, {1, 4});  // the transpose
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) cols(j, i) = static_cast<float>(i * 10 + j);
  int errors = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) errors += rows(i, j) != static_cast<float>(i * 10 + j);
  arrayport::view<float, 1> reversed(data + 11, {12}, {-1});
  errors += reversed(0) != 23.f;   // element (2, 3)
  errors += reversed(11) != 0.f;   // element (0, 0)
  return errors;
}

__global__ void view_kernel(float* data, int* errors) { *errors = view_body(data); }

// layout.hpp's arithmetic (the portable overflow helpers on the device) agrees on both sides.
ARRAYPORT_HOST_DEVICE int layout_body() {
  using arrayport::layout_status;
  int errors = 0;
  const std::int64_t p62 = std::int64_t(1) << 62, max64 = 0x7fffffffffffffffLL;
  const std::int64_t shape[2] = {3, 4}, strides[2] = {-4, 1};
  const arrayport::layout_info l = arrayport::measure_layout(shape, strides, 2, 8);
  errors += !(l.ok() && l.count == 12 && l.nbytes == 96 && l.lo == -64 && l.hi == 32);
  const std::int64_t issue19[2] = {p62 + 1, 4};  // reshape(2**62 + 1, 4)
  errors += arrayport::measure_layout(issue19, nullptr, 2, 8).status != layout_status::too_many_elements;
  errors += arrayport::element_count_or_minus_one(issue19, 2) != -1;
  const std::int64_t broadcast = p62 / 2, zero = 0;  // 2^61 float64 at stride 0: 2^64 bytes
  errors += arrayport::measure_layout(&broadcast, &zero, 1, 8).status != layout_status::too_many_bytes;
  const std::int64_t three = 3, wide = p62;
  errors += arrayport::measure_layout(&three, &wide, 1, 1, arrayport::stride_unit::bytes).status !=
            layout_status::span_too_large;
  errors += arrayport::measure_layout(&three, &wide, 1, 8).status != layout_status::stride_too_large;
  const std::int64_t top[2] = {max64, 1};
  errors += arrayport::measure_layout(top, nullptr, 2, 1).nbytes != max64;
  std::int64_t compact[2] = {};
  errors += !arrayport::compact_strides(shape, 2, compact, 8) || compact[0] != 4 || compact[1] != 1;
  arrayport::view<float, 2> v(nullptr, {2, 3});
  errors += v.size() != 6 || !v.is_contiguous();
  return errors;
}

__global__ void layout_kernel(int* errors) { *errors = layout_body(); }

}  // namespace

TEST(LayoutOnDevice, HostBodyPasses) { EXPECT_EQ(layout_body(), 0); }

TEST(LayoutOnDevice, KernelBodyPasses) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  arrayport::buffer errors(sizeof(int), arrayport::memory_kind::managed);
  *static_cast<int*>(errors.data()) = -1;
  layout_kernel<<<1, 1>>>(static_cast<int*>(errors.data()));
  ARRAYPORT_CUDA_CHECK(cudaGetLastError());
  ARRAYPORT_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(*static_cast<int*>(errors.data()), 0);
}

TEST(ViewOnDevice, HostBodyPasses) {
  float data[12] = {};
  EXPECT_EQ(view_body(data), 0);
}

TEST(ViewOnDevice, KernelBodyPassesOnDeviceMemory) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  arrayport::buffer data(12 * sizeof(float), arrayport::memory_kind::device);
  arrayport::buffer errors(sizeof(int), arrayport::memory_kind::managed);
  *static_cast<int*>(errors.data()) = -1;
  view_kernel<<<1, 1>>>(static_cast<float*>(data.data()), static_cast<int*>(errors.data()));
  ARRAYPORT_CUDA_CHECK(cudaGetLastError());
  ARRAYPORT_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(*static_cast<int*>(errors.data()), 0);
}

__global__ void scale_kernel(arrayport::device_view<float, 1> x, float factor) {
  for (std::int64_t i = threadIdx.x; i < x.extent(0); i += blockDim.x) x[i] *= factor;
}

TEST(ViewOnDevice, ViewPassesToAKernelByValueAndWritesManagedMemory) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  arrayport::buffer data(1000 * sizeof(float), arrayport::memory_kind::managed);
  float* p = static_cast<float*>(data.data());
  for (int i = 0; i < 1000; ++i) p[i] = static_cast<float>(i);
  // Every other element, through a strided view (the view struct itself is the parameter).
  arrayport::device_view<float, 1> evens(p, {500}, {2});
  scale_kernel<<<1, 128>>>(evens, 3.f);
  ARRAYPORT_CUDA_CHECK(cudaGetLastError());
  ARRAYPORT_CUDA_CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(p[i], i % 2 == 0 ? 3.f * i : static_cast<float>(i)) << "at " << i;
}
