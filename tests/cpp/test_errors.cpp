// Error types: messages carry status, name, API and call site; sticky errors say so.
#include <arrayport/error.hpp>
#include <arrayport/runtime.hpp>

#include <gtest/gtest.h>

#include <string>
#include <type_traits>

static_assert(std::is_base_of_v<arrayport::cuda_error, arrayport::out_of_memory>);
static_assert(std::is_base_of_v<arrayport::error, arrayport::cuda_error>);
static_assert(std::is_base_of_v<std::runtime_error, arrayport::error>);

TEST(Errors, CudaErrorMessageNamesStatusApiAndCallSite) {
  arrayport::cuda_error e(2, "cudaErrorMemoryAllocation", "out of memory", "cudaMalloc(&p, n)",
                          "alloc.cpp", 42);
  std::string msg = e.what();
  EXPECT_EQ(e.status(), 2);
  EXPECT_EQ(e.status_name(), "cudaErrorMemoryAllocation");
  EXPECT_EQ(e.api(), "cudaMalloc(&p, n)");
  EXPECT_EQ(e.file(), "alloc.cpp");
  EXPECT_EQ(e.line(), 42);
  EXPECT_NE(msg.find("cudaMalloc(&p, n) failed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cudaErrorMemoryAllocation (2)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("alloc.cpp:42"), std::string::npos) << msg;
  EXPECT_FALSE(e.is_sticky());
  EXPECT_EQ(msg.find("sticky"), std::string::npos) << msg;
}

TEST(Errors, IllegalAddressIsStickyAndSaysWhatItMeans) {
  arrayport::cuda_error e(700, "cudaErrorIllegalAddress", "an illegal memory access",
                          "cudaStreamSynchronize(s)", "k.cu", 7);
  EXPECT_TRUE(e.is_sticky());
  EXPECT_NE(std::string(e.what()).find("sticky error"), std::string::npos);
  EXPECT_NE(std::string(e.what()).find("restart the process"), std::string::npos);
}

TEST(Errors, OnlyKernelFaultStatusesAreSticky) {
  for (int s : {700, 702, 710, 714, 715, 716, 717, 718, 719})
    EXPECT_TRUE(arrayport::cuda_error::is_sticky_status(s)) << s;
  for (int s : {0, 1, 2, 35, 100, 701, 704, 712, 720, 999})
    EXPECT_FALSE(arrayport::cuda_error::is_sticky_status(s)) << s;
}

#if ARRAYPORT_HAS_CUDA
TEST(Errors, CheckMacroThrowsCudaErrorWithTheCallText) {
  // No driver: cudaErrorInsufficientDriver; a driver: cudaErrorInvalidDevice. A cuda_error either
  // way.
  try {
    ARRAYPORT_CUDA_CHECK(cudaSetDevice(1 << 20));
    FAIL() << "expected cuda_error";
  } catch (const arrayport::cuda_error& e) {
    EXPECT_NE(e.api().find("cudaSetDevice(1 << 20)"), std::string::npos) << e.api();
    EXPECT_NE(e.file().find("test_errors"), std::string::npos) << e.file();
    EXPECT_NE(e.status(), 0);
    EXPECT_EQ(e.status_name().rfind("cudaError", 0), 0u) << e.status_name();
  }
  // A non-sticky error is cleared: the next check of a good call passes.
  int count = -1;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (arrayport::runtime::is_available()) {
    EXPECT_EQ(status, cudaSuccess);
  }
}
#endif
