// Fills (detail/fill.hpp) and memory reachability (runtime.hpp): every layout and element size
// checked against an element-by-element reference; GPU memory without a device is refused, never
// touched.
#include <arrayport/buffer.hpp>
#include <arrayport/detail/fill.hpp>
#include <arrayport/detail/strided_copy.hpp>
#include <arrayport/runtime.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gpu.hpp"

using arrayport::memory_kind;
namespace detail = arrayport::detail;
namespace rt = arrayport::runtime;

namespace {

// An address nothing maps: a dereference is a segfault, which fails the suite.
void* const bogus = reinterpret_cast<void*>(std::uintptr_t{0x10000});

void expect_refused(const std::function<void()>& touch, const std::string& op,
                    const std::string& whose, const char* kind) {
  try {
    touch();
    ADD_FAILURE() << op << ": no exception";
  } catch (const arrayport::no_device_error& e) {
    EXPECT_EQ(std::string(e.what()),
              op + ": " + whose + " is in " + kind +
                  " memory, which this machine cannot reach: " + rt::probe().reason);
  }
}

// `value` written at every element of (shape, byte strides) from data, one by one.
void reference_fill(unsigned char* data, const std::vector<std::int64_t>& shape,
                    const std::vector<std::int64_t>& strides, const unsigned char* value,
                    std::size_t itemsize) {
  std::int64_t count = 1;
  for (std::int64_t e : shape) count *= e;
  std::vector<std::int64_t> index(shape.size(), 0);
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t d = 0;
    for (std::size_t k = 0; k < shape.size(); ++k) d += index[k] * strides[k];
    std::memcpy(data + d, value, itemsize);
    for (std::size_t k = shape.size(); k-- > 0;) {
      if (++index[k] < shape[k]) break;
      index[k] = 0;
    }
  }
}

}  // namespace

TEST(Reachability, HostAndPinnedMemoryAreAlwaysReachableGpuMemoryNeedsADevice) {
  EXPECT_TRUE(rt::is_reachable(memory_kind::host));
  EXPECT_TRUE(rt::is_reachable(memory_kind::pinned));
  EXPECT_EQ(rt::is_reachable(memory_kind::device), rt::is_available());
  EXPECT_EQ(rt::is_reachable(memory_kind::managed), rt::is_available());
  EXPECT_TRUE(arrayport::is_gpu_resident(memory_kind::device));
  EXPECT_TRUE(arrayport::is_gpu_resident(memory_kind::managed));
  EXPECT_FALSE(arrayport::is_gpu_resident(memory_kind::pinned));
  EXPECT_FALSE(arrayport::is_gpu_resident(memory_kind::host));
}

TEST(Reachability, WithoutADeviceEveryEntryPointRefusesGpuMemoryWithoutTouchingIt) {
  if (rt::is_available()) GTEST_SKIP() << "this machine has a CUDA device";
  int host = 7;
  for (memory_kind kind : {memory_kind::device, memory_kind::managed}) {
    const char* name = kind == memory_kind::device ? "device" : "managed";
    expect_refused([&] { rt::require_reachable(kind, "op", "the array"); }, "op", "the array",
                   name);
    expect_refused(
        [&] { rt::memcpy_async(&host, memory_kind::host, bogus, kind, 4, nullptr, "copy"); },
        "copy", "the source", name);
    expect_refused(
        [&] { rt::memcpy_async(bogus, kind, &host, memory_kind::host, 4, nullptr, "copy"); },
        "copy", "the destination", name);
    expect_refused(
        [&] { rt::memcpy_async(bogus, kind, &host, memory_kind::host, 0, nullptr, "copy"); },
        "copy", "the destination", name);  // refused whatever the size
    expect_refused([&] { rt::memset_async(bogus, kind, 0, 4, nullptr, "set"); }, "set",
                   "the destination", name);
    const std::int64_t shape[2] = {2, 3};
    const detail::copy_operand gpu{bogus, nullptr, kind, 0},
        cpu{&host, nullptr, memory_kind::host, -1};
    const std::int64_t one[1] = {1};
    expect_refused([&] { detail::strided_copy(cpu, gpu, one, 1, 4, nullptr, nullptr, "get"); },
                   "get", "the source", name);
    expect_refused([&] { detail::strided_copy(gpu, cpu, one, 1, 4, nullptr, nullptr, "put"); },
                   "put", "the destination", name);
    const float value = 1.5f;
    for (std::size_t itemsize : {1u, 4u, 16u, 24u})
      expect_refused(
          [&] { detail::strided_fill(gpu, shape, 2, &value, itemsize, nullptr, nullptr, "fill"); },
          "fill", "the destination", name);
    expect_refused(
        [&] { detail::fill_pattern(bogus, &value, 4, 100, kind, nullptr, "vector::fill"); },
        "vector::fill", "the destination", name);
    expect_refused(
        [&] { detail::fill_pattern(bogus, &value, 4, 0, kind, nullptr, "vector::fill"); },
        "vector::fill", "the destination", name);
  }
  EXPECT_EQ(host, 7);
}

// Random strided layouts (any sign, gaps, extents of 0 and 1) of every element size, including
// sizes no kernel takes (24 bytes): the CPU's fill matches the reference byte for byte, and no byte
// outside the view changes.
TEST(Fill, HostFillsOfRandomLayoutsMatchTheReference) {
  std::mt19937 rng(19);
  std::vector<unsigned char> got(1 << 16), want(1 << 16);
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t itemsize = std::vector<std::size_t>{1, 2, 4, 8, 16, 24, 3}[trial % 7];
    const int ndim = static_cast<int>(rng() % 4);
    std::vector<std::int64_t> shape(static_cast<std::size_t>(ndim)), strides(shape.size());
    std::int64_t lo = 0, hi = 0;
    for (int k = 0; k < ndim; ++k) {
      shape[k] = static_cast<std::int64_t>(rng() % 5) + (trial % 11 == 0 ? 0 : 1);
      const std::int64_t step = static_cast<std::int64_t>(rng() % 7) - 3;  // elements, any sign
      strides[k] = step * static_cast<std::int64_t>(itemsize) * (k + 1) * 3;
      if (shape[k] > 0) (strides[k] < 0 ? lo : hi) += (shape[k] - 1) * strides[k];
    }
    // Elements may overlap (stride 0, or a stride smaller than the element): a fill writes the
    // same value to each, so any stride is fine.
    const std::int64_t misalign = trial % 3 == 0 ? 1 : 0;  // elements off their alignment
    const std::int64_t origin = 4096 - lo + misalign;
    ASSERT_LT(origin + hi + static_cast<std::int64_t>(itemsize),
              static_cast<std::int64_t>(got.size()));
    for (std::size_t i = 0; i < got.size(); ++i)
      got[i] = want[i] = static_cast<unsigned char>(i * 7);
    unsigned char value[24];
    for (std::size_t b = 0; b < itemsize; ++b)
      value[b] = trial % 5 == 0 ? 0x5a : static_cast<unsigned char>(rng());  // uniform: memset
    reference_fill(want.data() + origin, shape, strides, value, itemsize);
    detail::strided_fill({got.data() + origin, strides.data(), memory_kind::host, -1}, shape.data(),
                         ndim, value, itemsize, nullptr, nullptr, "fill");
    ASSERT_EQ(got, want) << "trial " << trial << ", itemsize " << itemsize << ", ndim " << ndim;
  }
}

TEST(Fill, ContiguousHostFillsOfEveryCount) {
  for (std::size_t itemsize : {1u, 2u, 8u, 16u, 24u})
    for (std::size_t count : {0u, 1u, 2u, 3u, 7u, 1000u}) {
      std::vector<unsigned char> got(count * itemsize + 8, 0xee), want = got;
      unsigned char value[24];
      for (std::size_t b = 0; b < itemsize; ++b) value[b] = static_cast<unsigned char>(b * 37 + 1);
      for (std::size_t i = 0; i < count; ++i)
        std::memcpy(want.data() + 4 + i * itemsize, value, itemsize);
      detail::fill_pattern(got.data() + 4, value, itemsize, count, memory_kind::host, nullptr);
      EXPECT_EQ(got, want) << itemsize << " x " << count;
    }
}

// Without the fill kernel (a header-only user), contiguous GPU memory is filled with memsets of the
// first element and device-side copies doubling it: every size and count, checked on the host.
TEST(Fill, GpuFillsWithoutAKernelAreRightForEveryElementSize) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  for (memory_kind kind : {memory_kind::device, memory_kind::managed})
    for (std::size_t itemsize : {1u, 2u, 4u, 8u, 16u, 24u})
      for (std::size_t count : {1u, 2u, 3u, 1000u, (1u << 20) + 7u}) {
        arrayport::buffer b(count * itemsize, kind, 0, nullptr);
        unsigned char value[24];
        for (std::size_t i = 0; i < itemsize; ++i)
          value[i] = static_cast<unsigned char>(i % 3 ? i * 29 : 0);
        detail::fill_pattern(b.data(), value, itemsize, count, kind, nullptr);
        std::vector<unsigned char> host(count * itemsize);
        rt::memcpy_async(host.data(), memory_kind::host, b.data(), kind, host.size(), nullptr,
                         "check");
        rt::stream_synchronize(nullptr);
        for (std::size_t i = 0; i < count; ++i)
          ASSERT_EQ(std::memcmp(host.data() + i * itemsize, value, itemsize), 0)
              << itemsize << " x " << count << " at " << i;
      }
  // A strided fill of GPU memory needs the kernel: refused, not done on the CPU.
  arrayport::buffer b(64, memory_kind::device, 0, nullptr);
  const std::int64_t shape[1] = {4}, strides[1] = {16};
  const float value = 2.0f;
  EXPECT_THROW(detail::strided_fill({b.data(), strides, memory_kind::device, 0}, shape, 1, &value,
                                    4, nullptr, nullptr, "fill"),
               arrayport::value_error);
}
