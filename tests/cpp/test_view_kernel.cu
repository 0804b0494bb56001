// One test body, run on the host and in a <<<1,1>>> kernel: a view indexes the same on both sides.
#include <arrayport/buffer.hpp>
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

}  // namespace

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
