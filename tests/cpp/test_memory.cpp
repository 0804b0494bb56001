// Memory: resources and pools, buffer, vector — every kind, with and without a GPU.
#include <arrayport/buffer.hpp>
#include <arrayport/detail/caching_pool.hpp>
#include <arrayport/memory_resource.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/stream.hpp>
#include <arrayport/vector.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gpu.hpp"

using arrayport::memory_kind;
namespace rt = arrayport::runtime;

namespace {
bool aligned(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % arrayport::allocation_alignment == 0;
}
const memory_kind all_kinds[] = {memory_kind::host, memory_kind::pinned, memory_kind::device,
                                 memory_kind::managed};
}  // namespace

TEST(MemoryKind, NamesRoundTripAndBadNamesAreValueErrors) {
  for (memory_kind k : all_kinds)
    EXPECT_EQ(arrayport::parse_memory_kind(arrayport::to_string(k)), k);
  try {
    arrayport::parse_memory_kind("gpu");
    FAIL();
  } catch (const arrayport::value_error& e) {
    EXPECT_NE(std::string(e.what()).find("'gpu'"), std::string::npos) << e.what();
  }
}

TEST(MemoryKind, AccessibilityAndDLPackDevices) {
  EXPECT_TRUE(arrayport::is_host_accessible(memory_kind::managed));
  EXPECT_FALSE(arrayport::is_host_accessible(memory_kind::device));
  EXPECT_FALSE(arrayport::is_device_accessible(memory_kind::host));
  EXPECT_TRUE(arrayport::is_device_accessible(memory_kind::pinned));
  EXPECT_EQ(arrayport::dlpack_device(memory_kind::host, 3).device_type, ARRAYPORT_DEVICE_CPU);
  EXPECT_EQ(arrayport::dlpack_device(memory_kind::pinned, 3).device_type,
            ARRAYPORT_DEVICE_CUDA_HOST);
  EXPECT_EQ(arrayport::dlpack_device(memory_kind::device, 3).device_type, ARRAYPORT_DEVICE_CUDA);
  EXPECT_EQ(arrayport::dlpack_device(memory_kind::device, 3).device_id, 3);
  EXPECT_EQ(arrayport::dlpack_device(memory_kind::managed, 1).device_type,
            ARRAYPORT_DEVICE_CUDA_MANAGED);
}

TEST(Buffer, HostBufferIsAlignedWritableAndFreed) {
  arrayport::buffer b(1000, memory_kind::host);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_TRUE(aligned(b.data()));
  EXPECT_EQ(b.size(), 1000u);
  EXPECT_EQ(b.kind(), memory_kind::host);
  EXPECT_EQ(b.device(), -1);
  std::memset(b.data(), 7, b.size());
  EXPECT_EQ(static_cast<unsigned char*>(b.data())[999], 7);
  b.reset();
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(b.size(), 0u);
}

TEST(Buffer, HostBuffersOfEverySizeAreAlignedAndDistinct) {
  // The block's own address sits below the aligned one: each buffer must be aligned, writable to
  // its last byte without touching its neighbours, and freed back (ASan and the leak loops).
  std::vector<arrayport::buffer> live;
  for (std::size_t n : {1, 7, 8, 9, 255, 256, 257, 1000, 4096, 4097, 65536, 1 << 22}) {
    SCOPED_TRACE(n);
    for (int copy = 0; copy < 3; ++copy) {
      live.emplace_back(n, memory_kind::host);
      auto* p = static_cast<unsigned char*>(live.back().data());
      EXPECT_TRUE(aligned(p));
      std::memset(p, static_cast<int>(live.size()), n);
    }
  }
  for (std::size_t i = 0; i < live.size(); ++i) {
    const auto* p = static_cast<const unsigned char*>(live[i].data());
    EXPECT_EQ(p[0], static_cast<unsigned char>(i + 1));
    EXPECT_EQ(p[live[i].size() - 1], static_cast<unsigned char>(i + 1));
  }
}

TEST(Buffer, FreedSmallHostBlocksServeTheThreadsNextAllocationsOfTheirClass) {
  // Blocks of up to 64 KiB go back to the freeing thread's cache, by size class (powers of two
  // of the 256-byte alignment): the next allocation of the class gets the last one freed, whole.
  if (!arrayport::detail::host_block_cache::enabled)
    GTEST_SKIP() << "no host block cache under AddressSanitizer";
  auto& host = arrayport::get_memory_resource(memory_kind::host);
  void* p = host.allocate(3000, nullptr);  // class 4 KiB
  host.deallocate(p, 3000, nullptr);
  void* q = host.allocate(4096, nullptr);
  EXPECT_EQ(q, p);
  std::memset(q, 1, 4096);  // the whole class is the block's (ASan)
  host.deallocate(q, 4096, nullptr);
  // At most four blocks a class: of six freed, the first four are kept and come back newest
  // first; the other two went to free().
  std::vector<void*> six, again(4);
  for (int i = 0; i < 6; ++i) six.push_back(host.allocate(1000, nullptr));
  for (void* b : six) host.deallocate(b, 1000, nullptr);
  for (int i = 3; i >= 0; --i) {
    again[std::size_t(i)] = host.allocate(1024, nullptr);
    EXPECT_EQ(again[std::size_t(i)], six[std::size_t(i)]);
  }
  for (void* b : again) host.deallocate(b, 1024, nullptr);
  // Larger blocks are malloc's; release_cached_memory() frees this thread's blocks.
  void* big = host.allocate(std::size_t(1) << 20, nullptr);
  EXPECT_TRUE(aligned(big));
  host.deallocate(big, std::size_t(1) << 20, nullptr);
  arrayport::release_cached_memory();
}

TEST(Buffer, ThreadsKeepTheirOwnHostBlocksAndFreeThemWhenTheyExit) {
  // Blocks freed on another thread go to that thread's cache and are freed when it exits (the
  // leak loops see any that are not); the main thread's cache is untouched.
  if (!arrayport::detail::host_block_cache::enabled)
    GTEST_SKIP() << "no host block cache under AddressSanitizer";
  auto& host = arrayport::get_memory_resource(memory_kind::host);
  void* mine = host.allocate(512, nullptr);
  host.deallocate(mine, 512, nullptr);
  std::vector<void*> handed(8);
  for (auto& b : handed) b = host.allocate(2048, nullptr);
  std::thread([&] {
    for (void* b : handed) host.deallocate(b, 2048, nullptr);
    for (int round = 0; round < 100; ++round) {
      const std::size_t n = std::size_t(256) << (round % 9);
      void* b = host.allocate(n, nullptr);
      std::memset(b, round, n);
      host.deallocate(b, n, nullptr);
    }
  }).join();
  EXPECT_EQ(host.allocate(300, nullptr), mine);
  host.deallocate(mine, 300, nullptr);
}

TEST(Buffer, HostSizesPastTheAddressSpaceAreBadAlloc) {
  EXPECT_THROW(arrayport::buffer(SIZE_MAX, memory_kind::host), std::bad_alloc);
  EXPECT_THROW(arrayport::buffer(SIZE_MAX - 200, memory_kind::host), std::bad_alloc);
}

TEST(Buffer, ZeroBytesAllocatesNothing) {
  arrayport::buffer b(0, memory_kind::host);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_TRUE(b.empty());
}

TEST(Buffer, MoveTransfersOwnership) {
  arrayport::buffer a(64, memory_kind::host);
  void* p = a.data();
  arrayport::buffer b = std::move(a);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.data(), p);
  arrayport::buffer c(32, memory_kind::host);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 64u);
}

TEST(Buffer, EveryKindDeliversWhatTheMachineCanGive) {
  for (memory_kind k : all_kinds) {
    SCOPED_TRACE(std::string(arrayport::to_string(k)));
    if (!rt::is_available()) {
      if (k == memory_kind::device) {
        try {
          arrayport::buffer b(64, k);
          FAIL() << "device memory without a device";
        } catch (const arrayport::no_device_error& e) {
          EXPECT_NE(std::string(e.what()).find(rt::probe().reason), std::string::npos);
        }
        continue;
      }
      arrayport::buffer b(64, k);  // managed and pinned fall back to host memory
      EXPECT_EQ(b.kind(), memory_kind::host);
      EXPECT_EQ(b.dlpack_device().device_type, ARRAYPORT_DEVICE_CPU);
      continue;
    }
    arrayport::buffer b(4096, k, 0);
    EXPECT_EQ(b.kind(), k);
    EXPECT_TRUE(aligned(b.data()));
    rt::pointer_info info = rt::query_pointer(b.data());
    EXPECT_EQ(info.kind, k);
    if (k == memory_kind::device || k == memory_kind::managed) {
      EXPECT_EQ(b.device(), 0);
    }
  }
}

TEST(Buffer, DefaultKindIsManagedWithAGpuAndHostWithout) {
  EXPECT_EQ(arrayport::default_memory_kind(),
            rt::is_available() ? memory_kind::managed : memory_kind::host);
  arrayport::buffer b(16);
  EXPECT_EQ(b.kind(), arrayport::default_memory_kind());
}

TEST(Buffer, ManagedMemoryIsWrittenOnTheHostAndCopiedOnTheDevice) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  const std::size_t n = 1 << 20;
  arrayport::buffer m(n * sizeof(int), memory_kind::managed);
  arrayport::buffer d(n * sizeof(int), memory_kind::device);
  arrayport::buffer back(n * sizeof(int), memory_kind::pinned);
  int* mp = static_cast<int*>(m.data());
  std::iota(mp, mp + n, 0);
  rt::memcpy_async(d.data(), m.data(), n * sizeof(int), nullptr);
  rt::memcpy_async(back.data(), d.data(), n * sizeof(int), nullptr);
  rt::stream_synchronize(nullptr);
  const int* bp = static_cast<const int*>(back.data());
  for (std::size_t i = 0; i < n; i += 997) ASSERT_EQ(bp[i], static_cast<int>(i));
  EXPECT_EQ(bp[n - 1], static_cast<int>(n - 1));
}

TEST(CachingPool, ReusesAReleasedBlockOfTheSameSizeClass) {
  static int frees = 0;
  frees = 0;
  arrayport::detail::caching_pool pool([](std::size_t n) { return std::malloc(n); },
                                       [](void* p) noexcept {
                                         ++frees;
                                         std::free(p);
                                       });
  if (rt::is_available())
    GTEST_SKIP() << "with a device, reuse waits for events (GPU tests cover it)";
  void* a = pool.allocate(1000);
  pool.deallocate(a, 1000, nullptr, -1);
  EXPECT_EQ(pool.cached_bytes(), 1024u);
  void* b = pool.allocate(900);  // same 512-byte class
  EXPECT_EQ(a, b);
  EXPECT_EQ(pool.cached_bytes(), 0u);
  void* c = pool.allocate(5000);  // another class: a fresh block
  EXPECT_NE(c, b);
  pool.deallocate(b, 900, nullptr, -1);
  pool.deallocate(c, 5000, nullptr, -1);
  EXPECT_EQ(frees, 0);
  pool.release_cached();
  EXPECT_EQ(frees, 2);
  EXPECT_EQ(pool.cached_bytes(), 0u);
}

TEST(CachingPool, SizeClassesBoundTheWaste) {
  using pool = arrayport::detail::caching_pool;
  EXPECT_EQ(pool::size_class(1), 512u);
  EXPECT_EQ(pool::size_class(512), 512u);
  EXPECT_EQ(pool::size_class(513), 1024u);
  EXPECT_EQ(pool::size_class((1 << 20) - 1), std::size_t{1} << 20);
  EXPECT_EQ(pool::size_class((1 << 20) + 1), std::size_t{2} << 20);
  EXPECT_EQ(pool::size_class(std::size_t{5} << 20), std::size_t{6} << 20);
}

TEST(CachingPool, ManagedBlocksAreReusedOnceTheirLastUseCompleted) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  arrayport::memory_resource& r = arrayport::get_memory_resource(memory_kind::managed, 0);
  rt::stream_synchronize(nullptr);
  r.release_cached();
  void* a = r.allocate(4000, nullptr);
  r.deallocate(a, 4000, nullptr);
  rt::stream_synchronize(nullptr);  // the release event has completed
  void* b = r.allocate(4000, nullptr);
  EXPECT_EQ(a, b);
  r.deallocate(b, 4000, nullptr);
}

TEST(DeviceResource, SmallBlocksReleasedOnTheLegacyStreamAreReusedInStreamOrder) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  auto& r = arrayport::get_memory_resource(arrayport::memory_kind::device, 0);
  void* a = r.allocate(1000, nullptr);
  r.deallocate(a, 1000, nullptr);
  void* b = r.allocate(900, nullptr);  // the same 1024-byte class, the same stream: the same block
  EXPECT_EQ(a, b);
  EXPECT_EQ(rt::query_pointer(b).kind, arrayport::memory_kind::device);
  // Another stream never takes a block from the cache (it may run ahead of the legacy stream).
  arrayport::stream s(0);
  r.deallocate(b, 900, nullptr);
  void* c = r.allocate(1000, s.handle());
  EXPECT_NE(c, a);
  r.deallocate(c, 1000, s.handle());
  s.synchronize();
  // Released to the pool on request: the next allocation is a fresh one from the pool.
  arrayport::release_cached_memory();
  void* d = r.allocate(4 << 20, nullptr);  // above the cached sizes: straight from the pool
  r.deallocate(d, 4 << 20, nullptr);
  rt::device_synchronize();
}

TEST(Vector, UninitialisedConstructionResizeAndPushBackOnHost) {
  arrayport::vector<int> v(3, memory_kind::host);
  EXPECT_EQ(v.size(), 3u);
  v[0] = 1;
  v[1] = 2;
  v[2] = 3;
  v.resize(10);  // grows, keeps the first three
  EXPECT_EQ(v.size(), 10u);
  EXPECT_GE(v.capacity(), 10u);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[2], 3);
  v.resize(2);
  v.push_back(9);
  EXPECT_EQ(v.size(), 3u);
  EXPECT_EQ(v[2], 9);
  std::vector<int> h = v.to_host();
  EXPECT_EQ(h, (std::vector<int>{1, 2, 9}));
  v.shrink_to_fit();
  EXPECT_EQ(v.capacity(), 3u);
  EXPECT_EQ(v.to_host(), (std::vector<int>{1, 2, 9}));
}

TEST(Vector, AtChecksBoundsWithAValueError) {
  arrayport::vector<double> v(4, 0.5, memory_kind::host);
  EXPECT_EQ(v.at(3), 0.5);
  try {
    v.at(4);
    FAIL();
  } catch (const arrayport::value_error& e) {
    EXPECT_NE(std::string(e.what()).find("index 4 out of range for size 4"), std::string::npos);
  }
}

TEST(Vector, OverflowingSizesAreValueErrorsNotBadAllocs) {
  EXPECT_THROW(
      arrayport::vector<double>(arrayport::vector<double>::max_size() + 1, memory_kind::host),
      arrayport::value_error);
}

TEST(Vector, MovedFromVectorIsEmpty) {
  arrayport::vector<int> a{1, 2, 3};
  arrayport::vector<int> b = std::move(a);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.to_host(), (std::vector<int>{1, 2, 3}));
}

TEST(Vector, ReleaseHandsTheStorageOver) {
  arrayport::vector<float> v(8, 1.f, memory_kind::host);
  const void* p = v.data();
  arrayport::buffer b = v.release();
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.size(), 8 * sizeof(float));
  EXPECT_TRUE(v.empty());
}

TEST(Vector, ViewSeesTheElements) {
  arrayport::vector<int> v{5, 6, 7};
  auto view = v.view();
  EXPECT_EQ(view.extent(0), 3);
  if (arrayport::is_host_accessible(v.kind())) {
    EXPECT_EQ(view[2], 7);
  }
}

TEST(Vector, FillAndResizeWithValueWorkOnEveryKind) {
  for (memory_kind k : all_kinds) {
    if (k == memory_kind::device && !rt::is_available()) continue;
    SCOPED_TRACE(std::string(arrayport::to_string(k)));
    arrayport::vector<std::int64_t> v(1001, -3, k);
    v.resize(3000, 11);
    std::vector<std::int64_t> h = v.to_host();
    ASSERT_EQ(h.size(), 3000u);
    for (std::size_t i = 0; i < h.size(); ++i) ASSERT_EQ(h[i], i < 1001 ? -3 : 11) << i;
    arrayport::vector<std::int64_t> c = v.copy();
    EXPECT_NE(c.data(), v.data());
    EXPECT_EQ(c.to_host(), h);
  }
}

TEST(Vector, DeviceElementsAreNotTouchedFromTheHost) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  arrayport::vector<float> v(16, 2.f, memory_kind::device);
  EXPECT_EQ(v.kind(), memory_kind::device);
  EXPECT_THROW(v.at(0), arrayport::buffer_error);
  EXPECT_THROW(v.push_back(1.f), arrayport::buffer_error);
  EXPECT_EQ(v.to_host(), std::vector<float>(16, 2.f));
}
