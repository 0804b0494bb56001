// The strided copy (detail/strided_copy.hpp): how copies reduce, and host copies of random layouts
// checked against an element-by-element reference.
#include <arrayport/detail/strided_copy.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gpu.hpp"

using arrayport::memory_kind;
namespace detail = arrayport::detail;

namespace {

// Element (i_0, ..., i_{n-1}) of a view at data + sum i_k * strides[k] (bytes), copied one by one.
void reference_copy(char* dst, const std::int64_t* ds, const char* src, const std::int64_t* ss,
                    const std::vector<std::int64_t>& shape, std::size_t itemsize) {
  std::int64_t count = 1;
  for (std::int64_t e : shape) count *= e;
  std::vector<std::int64_t> index(shape.size(), 0);
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t d = 0, s = 0;
    for (std::size_t k = 0; k < shape.size(); ++k) {
      d += index[k] * ds[k];
      s += index[k] * ss[k];
    }
    std::memcpy(dst + d, src + s, itemsize);
    for (std::size_t k = shape.size(); k-- > 0;) {
      if (++index[k] < shape[k]) break;
      index[k] = 0;
    }
  }
}

alignas(256) unsigned char storage[4][1 << 16];

}  // namespace

TEST(StridedCopy, LayoutIsTriviallyCopyableForKernels) {
  static_assert(std::is_trivially_copyable_v<detail::copy_layout>);
  static_assert(sizeof(detail::copy_layout) < 4096, "kernel parameters are limited to 4 KB");
  SUCCEED();
}

TEST(StridedCopy, ContiguousViewsReduceToOneRunInWideWords) {
  std::int64_t shape[] = {4, 8, 2};
  detail::copy_operand dst{storage[0], nullptr, memory_kind::host, -1};
  detail::copy_operand src{storage[1], nullptr, memory_kind::host, -1};
  const detail::copy_layout l = detail::make_copy_layout(dst, src, shape, 3, 4);
  EXPECT_EQ(l.ndim, 1);
  EXPECT_EQ(l.word, 16);
  EXPECT_EQ(l.count, 4 * 8 * 2 * 4 / 16);
  EXPECT_TRUE(detail::is_contiguous(l));
}

TEST(StridedCopy, ReversedOnBothSidesIsStillOneRun) {
  std::int64_t shape[] = {10}, strides[] = {-8};
  detail::copy_operand dst{storage[0] + 72, strides, memory_kind::host, -1};
  detail::copy_operand src{storage[1] + 72, strides, memory_kind::host, -1};
  const detail::copy_layout l = detail::make_copy_layout(dst, src, shape, 1, 8);
  EXPECT_TRUE(detail::is_contiguous(l));
  EXPECT_EQ(l.dst, reinterpret_cast<char*>(storage[0]));
}

TEST(StridedCopy, TransposeKeepsTwoAxesInnermostByDestination) {
  std::int64_t shape[] = {3, 5}, dst_strides[] = {40, 8}, src_strides[] = {8, 24};
  detail::copy_operand dst{storage[0], dst_strides, memory_kind::host, -1};
  detail::copy_operand src{storage[1], src_strides, memory_kind::host, -1};
  const detail::copy_layout l = detail::make_copy_layout(dst, src, shape, 2, 8);
  ASSERT_EQ(l.ndim, 2);
  EXPECT_EQ(l.word, 8);
  EXPECT_EQ(l.dst_strides[1], 8);  // innermost: contiguous in the destination
  EXPECT_EQ(l.src_strides[1], 24);
  EXPECT_FALSE(detail::is_contiguous(l));
}

TEST(StridedCopy, MisalignedDataGetsNarrowerWords) {
  std::int64_t shape[] = {7};
  detail::copy_operand dst{storage[0] + 2, nullptr, memory_kind::host, -1};
  detail::copy_operand src{storage[1] + 6, nullptr, memory_kind::host, -1};
  EXPECT_EQ(detail::make_copy_layout(dst, src, shape, 1, 4).word, 2);
  detail::copy_operand odd{storage[1] + 1, nullptr, memory_kind::host, -1};
  EXPECT_EQ(detail::make_copy_layout(dst, odd, shape, 1, 4).word, 1);
}

TEST(StridedCopy, EmptyCopiesDoNothing) {
  std::int64_t shape[] = {3, 0};
  detail::copy_operand dst{nullptr, nullptr, memory_kind::host, -1};
  EXPECT_EQ(detail::make_copy_layout(dst, dst, shape, 2, 4).count, 0);
  detail::strided_copy(dst, dst, shape, 2, 4, nullptr, nullptr);
}

TEST(StridedCopy, ZeroDimensionalCopyMovesOneElement) {
  std::memset(storage[0], 0, 16);
  std::memcpy(storage[1], "0123456789abcdef", 16);
  detail::copy_operand dst{storage[0], nullptr, memory_kind::host, -1};
  detail::copy_operand src{storage[1], nullptr, memory_kind::host, -1};
  detail::strided_copy(dst, src, nullptr, 0, 16, nullptr, nullptr);
  EXPECT_EQ(std::memcmp(storage[0], storage[1], 16), 0);
}

TEST(StridedCopy, BroadcastSourceFillsTheDestination) {
  const double value = 2.5;
  std::int64_t shape[] = {4, 6}, zero[] = {0, 0},
               dst_strides[] = {-96, 16};  // rows reversed, every other column
  std::memset(storage[0], 0, 4 * 96);
  detail::copy_operand dst{storage[0] + 3 * 96, dst_strides, memory_kind::host, -1};
  detail::copy_operand src{const_cast<double*>(&value), zero, memory_kind::host, -1};
  detail::strided_copy(dst, src, shape, 2, 8, nullptr, nullptr);
  const auto* out = reinterpret_cast<const double*>(storage[0]);
  for (int i = 0; i < 4 * 12; ++i) EXPECT_EQ(out[i], i % 2 == 0 ? 2.5 : 0.0) << i;
}

TEST(StridedCopy, RandomHostLayoutsMatchTheReference) {
  std::mt19937_64 rng(20261123);
  const std::size_t itemsizes[] = {1, 2, 4, 8, 16};
  for (int trial = 0; trial < 2000; ++trial) {
    const std::size_t itemsize = itemsizes[rng() % 5];
    const int ndim = static_cast<int>(rng() % 5);
    std::vector<std::int64_t> shape(static_cast<std::size_t>(ndim));
    for (auto& e : shape) e = static_cast<std::int64_t>(rng() % 5);
    // each side: a permutation of C-order strides of a padded box, some axes reversed or broadcast
    auto strides_for = [&](bool allow_broadcast, std::int64_t& offset) {
      std::vector<std::int64_t> s(shape.size());
      std::vector<std::size_t> order(shape.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      std::int64_t stride =
          static_cast<std::int64_t>(itemsize) * static_cast<std::int64_t>(1 + rng() % 2);
      offset = 0;
      for (std::size_t i : order) {
        s[i] = stride;
        if (rng() % 4 == 0) {
          s[i] = -stride;
          offset += (shape[i] > 0 ? shape[i] - 1 : 0) * stride;
        }
        if (allow_broadcast && rng() % 6 == 0) s[i] = 0;
        stride *= shape[i] + static_cast<std::int64_t>(rng() % 2);
      }
      return s;
    };
    std::int64_t dst_offset = 0, src_offset = 0;
    const std::vector<std::int64_t> ds = strides_for(false, dst_offset);
    const std::vector<std::int64_t> ss = strides_for(true, src_offset);
    const std::size_t misalign =
        rng() % 2 ? 0 : itemsize / 2;  // sub-element offsets give narrower words
    for (std::size_t b = 0; b < sizeof storage[1]; ++b)
      storage[1][b] = static_cast<unsigned char>(rng());
    std::memset(storage[0], 0xAB, sizeof storage[0]);
    std::memset(storage[2], 0xAB, sizeof storage[2]);
    char* d = reinterpret_cast<char*>(storage[0]) + dst_offset + misalign;
    const char* s = reinterpret_cast<const char*>(storage[1]) + src_offset;
    char* r = reinterpret_cast<char*>(storage[2]) + dst_offset + misalign;
    reference_copy(r, ds.data(), s, ss.data(), shape, itemsize);
    detail::copy_operand dst{d, ds.data(), memory_kind::host, -1};
    detail::copy_operand src{const_cast<char*>(s), ss.data(), memory_kind::host, -1};
    detail::strided_copy(dst, src, shape.data(), ndim, itemsize, nullptr, nullptr);
    ASSERT_EQ(std::memcmp(storage[0], storage[2], sizeof storage[0]), 0) << "trial " << trial;
  }
}

TEST(StridedCopy, TransposesSpanningSeveralTilesMatchTheReference) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t itemsize = std::size_t{1} << (rng() % 5);
    const std::int64_t rows = 8 + static_cast<std::int64_t>(rng() % 70);
    const std::int64_t cols = 8 + static_cast<std::int64_t>(rng() % 70);
    const std::int64_t batch = 1 + static_cast<std::int64_t>(rng() % 3);
    const auto item = static_cast<std::int64_t>(itemsize);
    if (batch * rows * cols * item > static_cast<std::int64_t>(sizeof storage[0])) continue;
    // dst C-contiguous (batch, rows, cols); src the transpose of a (batch, cols, rows) array,
    // its column axis reversed half of the time
    const bool reverse = rng() % 2;
    std::vector<std::int64_t> shape = {batch, rows, cols};
    std::vector<std::int64_t> ds = {rows * cols * item, cols * item, item};
    std::vector<std::int64_t> ss = {rows * cols * item, reverse ? -item : item, rows * item};
    for (std::size_t b = 0; b < sizeof storage[1]; ++b)
      storage[1][b] = static_cast<unsigned char>(rng());
    std::memset(storage[0], 0, sizeof storage[0]);
    std::memset(storage[2], 0, sizeof storage[2]);
    const char* s = reinterpret_cast<const char*>(storage[1]) + (reverse ? (rows - 1) * item : 0);
    reference_copy(reinterpret_cast<char*>(storage[2]), ds.data(), s, ss.data(), shape, itemsize);
    detail::copy_operand dst{storage[0], ds.data(), memory_kind::host, -1};
    detail::copy_operand src{const_cast<char*>(s), ss.data(), memory_kind::host, -1};
    detail::strided_copy(dst, src, shape.data(), 3, itemsize, nullptr, nullptr);
    ASSERT_EQ(std::memcmp(storage[0], storage[2], sizeof storage[0]), 0) << "trial " << trial;
  }
}

TEST(StridedCopy, ByteSpanCoversNegativeAndZeroStrides) {
  std::int64_t shape[] = {3, 4}, strides[] = {-32, 8};
  detail::copy_operand op{storage[0] + 64, strides, memory_kind::host, -1};
  std::uintptr_t lo = 0, hi = 0;
  detail::byte_span(op, shape, 2, 8, lo, hi);
  EXPECT_EQ(lo, reinterpret_cast<std::uintptr_t>(storage[0]));
  EXPECT_EQ(hi, reinterpret_cast<std::uintptr_t>(storage[0] + 64 + 24 + 8));
  std::int64_t empty[] = {3, 0};
  detail::byte_span(op, empty, 2, 8, lo, hi);
  EXPECT_EQ(lo, hi);
}

TEST(StridedCopy, DeviceMemoryWithoutAKernelIsAClearError) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  arrayport::buffer device(4096, memory_kind::device);
  std::int64_t shape[] = {16}, strides[] = {16};
  detail::copy_operand dst{device.data(), strides, memory_kind::device, 0};
  detail::copy_operand src{storage[1], nullptr, memory_kind::host, -1};
  EXPECT_THROW(detail::strided_copy(dst, src, shape, 1, 8, nullptr, nullptr),
               arrayport::value_error);
  // contiguous copies need no kernel
  detail::strided_copy(dst, src, shape, 1, 16, nullptr, nullptr);
  arrayport::runtime::stream_synchronize(nullptr);
}
