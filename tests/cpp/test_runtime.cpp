// The runtime shim: availability, devices, pointer queries — on a GPU machine and without one.
#include <arrayport/device.hpp>
#include <arrayport/runtime.hpp>

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "gpu.hpp"

namespace rt = arrayport::runtime;

TEST(Runtime, ProbeIsConsistentAndExplainsAMissingDevice) {
  const rt::availability& a = rt::probe();
  EXPECT_EQ(&a, &rt::probe()) << "probed once, cached";
  EXPECT_EQ(rt::device_count(), a.device_count);
  EXPECT_EQ(rt::is_available(), a.device_count > 0);
  if (a.device_count == 0) {
    EXPECT_FALSE(a.reason.empty());
  } else {
    EXPECT_TRUE(a.reason.empty()) << a.reason;
  }
  if (!rt::compiled_with_cuda()) {
    EXPECT_EQ(a.device_count, 0);
    EXPECT_NE(a.reason.find("CPU-only build"), std::string::npos) << a.reason;
    EXPECT_EQ(rt::runtime_version(), 0);
  } else {
    EXPECT_GE(rt::runtime_version(), 12000);
  }
}

TEST(Runtime, WithoutADeviceEverythingThatNeedsOneThrowsNoDeviceErrorSayingWhy) {
  if (rt::is_available()) GTEST_SKIP() << "this machine has a CUDA device";
  const std::string reason = rt::probe().reason;
  try {
    rt::set_device(0);
    FAIL() << "expected no_device_error";
  } catch (const arrayport::no_device_error& e) {
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("set_device"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rt::get_device_properties(0), arrayport::no_device_error);
  EXPECT_THROW(rt::mem_get_info(0), arrayport::no_device_error);
  EXPECT_THROW(rt::device_synchronize(), arrayport::no_device_error);
  EXPECT_THROW(rt::malloc_pinned(16), arrayport::no_device_error);
  EXPECT_THROW(rt::malloc_managed(16, 0), arrayport::no_device_error);
  EXPECT_THROW(rt::malloc_device_async(16, 0, nullptr), arrayport::no_device_error);
  EXPECT_EQ(rt::get_device(), 0);
  EXPECT_EQ(arrayport::device_count(), 0);
  // Host-side operations keep working.
  int src = 42, dst = 0;
  rt::memcpy_async(&dst, &src, sizeof src, nullptr);
  EXPECT_EQ(dst, 42);
  rt::memset_async(&dst, 0, sizeof dst, nullptr);
  EXPECT_EQ(dst, 0);
  EXPECT_NO_THROW(rt::stream_synchronize(nullptr));
  EXPECT_TRUE(rt::stream_query(nullptr));
  { arrayport::device_guard guard(0); }  // a no-op without a device
}

TEST(Runtime, UnknownHostPointersAreHostMemory) {
  int x = 0;
  rt::pointer_info info = rt::query_pointer(&x);
  EXPECT_EQ(info.kind, arrayport::memory_kind::host);
  EXPECT_EQ(info.device, -1);
  EXPECT_EQ(rt::query_pointer(nullptr).kind, arrayport::memory_kind::host);
  EXPECT_FALSE(rt::cuda_knows_pointer(&x));
  EXPECT_FALSE(rt::cuda_knows_pointer(nullptr));
  std::vector<char> heap(1 << 20);
  EXPECT_FALSE(rt::cuda_knows_pointer(heap.data()));
}

TEST(Runtime, DeviceIndexOutOfRangeIsAValueError) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  try {
    rt::set_device(rt::device_count());
    FAIL() << "expected value_error";
  } catch (const arrayport::value_error& e) {
    EXPECT_NE(std::string(e.what()).find("got " + std::to_string(rt::device_count())),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(rt::get_device_properties(-1), arrayport::value_error);
}

TEST(Runtime, DevicePropertiesAreReal) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  for (int d = 0; d < rt::device_count(); ++d) {
    rt::device_properties p = rt::get_device_properties(d);
    EXPECT_EQ(p.index, d);
    EXPECT_FALSE(p.name.empty());
    EXPECT_GE(p.major, 7);
    EXPECT_GT(p.total_memory, std::size_t{1} << 30);
    EXPECT_GT(p.multiprocessor_count, 0);
    EXPECT_EQ(p.uuid.size(), 4u + 36u) << p.uuid;
    EXPECT_EQ(p.uuid.rfind("GPU-", 0), 0u) << p.uuid;
    EXPECT_EQ(p.pci_bus_id.size(), 12u) << p.pci_bus_id;
    auto [free_bytes, total_bytes] = rt::mem_get_info(d);
    EXPECT_GT(free_bytes, 0u);
    EXPECT_LE(free_bytes, total_bytes);
    EXPECT_EQ(total_bytes, p.total_memory);
  }
}

TEST(Runtime, DeviceGuardRestoresThePreviousDeviceEvenOnException) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  const int last = rt::device_count() - 1;
  rt::set_device(0);
  try {
    arrayport::device_guard guard(last);
    EXPECT_EQ(rt::get_device(), last);
    throw std::runtime_error("unwinding");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(rt::get_device(), 0);
}

TEST(Runtime, PointerQueryKnowsEveryKind) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  void* d = rt::malloc_device_async(256, 0, nullptr);
  void* m = rt::malloc_managed(256, 0);
  void* h = rt::malloc_pinned(256);
  EXPECT_EQ(rt::query_pointer(d).kind, arrayport::memory_kind::device);
  EXPECT_EQ(rt::query_pointer(d).device, 0);
  EXPECT_EQ(rt::query_pointer(m).kind, arrayport::memory_kind::managed);
  EXPECT_EQ(rt::query_pointer(h).kind, arrayport::memory_kind::pinned);
  // An interior pointer belongs to the same allocation.
  EXPECT_EQ(rt::query_pointer(static_cast<char*>(d) + 100).kind, arrayport::memory_kind::device);
  // The driver's one-attribute question agrees, on this thread and on a new one (no context made
  // current there yet).
  for (void* p : {d, m, h, static_cast<void*>(static_cast<char*>(d) + 100)}) {
    EXPECT_TRUE(rt::cuda_knows_pointer(p)) << p;
    bool known_elsewhere = false;
    std::thread([&] { known_elsewhere = rt::cuda_knows_pointer(p); }).join();
    EXPECT_TRUE(known_elsewhere) << p;
  }
  std::vector<char> pageable(1 << 20);
  EXPECT_FALSE(rt::cuda_knows_pointer(pageable.data()));
#if ARRAYPORT_HAS_CUDA
  // Those answers came from the driver itself (a failed lookup would fall back unseen), on a new
  // thread too.
  const rt::detail::pointer_attribute_fn get = rt::detail::driver_pointer_attribute();
  ASSERT_NE(get, nullptr);
  std::thread([&] {
    unsigned int type = 0;
    EXPECT_EQ(get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(d)),
              CUDA_SUCCESS);
    EXPECT_EQ(type, static_cast<unsigned int>(CU_MEMORYTYPE_DEVICE));
    EXPECT_EQ(get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                  reinterpret_cast<CUdeviceptr>(pageable.data())),
              CUDA_ERROR_INVALID_VALUE);
  }).join();
#endif
  rt::host_register(pageable.data(), pageable.size());
  EXPECT_TRUE(rt::cuda_knows_pointer(pageable.data() + 10));
  rt::host_unregister(pageable.data());
  EXPECT_FALSE(rt::cuda_knows_pointer(pageable.data()));
  rt::free_device_async(d, nullptr);
  rt::free_managed(m);
  rt::free_pinned(h);
  rt::stream_synchronize(nullptr);
}

TEST(Runtime, DeviceOutOfMemoryIsOutOfMemoryAndTheNextAllocationSucceeds) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  auto [free_bytes, total_bytes] = rt::mem_get_info(0);
  try {
    void* p = rt::malloc_device_async(total_bytes * 4, 0, nullptr);
    rt::free_device_async(p, nullptr);
    FAIL() << "allocating 4x the card's memory succeeded";
  } catch (const arrayport::out_of_memory& e) {
    EXPECT_EQ(e.status_name(), "cudaErrorMemoryAllocation");
    EXPECT_FALSE(e.is_sticky());
  }
  (void)free_bytes;
  void* p = rt::malloc_device_async(1 << 20, 0, nullptr);
  EXPECT_NE(p, nullptr);
  rt::free_device_async(p, nullptr);
  rt::stream_synchronize(nullptr);
}
