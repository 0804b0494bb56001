// stream and event RAII: creation, ordering between streams, timing; errors without a device.
#include <arrayport/buffer.hpp>
#include <arrayport/event.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/stream.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "gpu.hpp"

TEST(StreamEvent, WithoutADeviceCreationThrowsNoDeviceErrorButBorrowingWorks) {
  if (arrayport::runtime::is_available()) GTEST_SKIP() << "this machine has a CUDA device";
  EXPECT_THROW(arrayport::stream(), arrayport::no_device_error);
  EXPECT_THROW(arrayport::event(), arrayport::no_device_error);
  arrayport::stream legacy = arrayport::stream::borrow(nullptr);
  EXPECT_EQ(legacy.handle(), nullptr);
  EXPECT_FALSE(legacy.owning());
  EXPECT_TRUE(legacy.query());
  EXPECT_NO_THROW(legacy.synchronize());
}

TEST(StreamEvent, StreamsAreCreatedQueriedAndMoved) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  arrayport::stream s;
  EXPECT_NE(s.handle(), nullptr);
  EXPECT_TRUE(s.owning());
  EXPECT_EQ(s.device(), arrayport::runtime::get_device());
  s.synchronize();
  EXPECT_TRUE(s.query());
  arrayport::stream t = std::move(s);
  EXPECT_EQ(s.handle(), nullptr);
  EXPECT_NE(t.handle(), nullptr);
  arrayport::stream low_priority(0, 0, true);
  EXPECT_NE(low_priority.handle(), t.handle());
}

TEST(StreamEvent, AnEventWaitOrdersWorkAcrossStreams) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  constexpr std::size_t n = std::size_t{64} << 20;  // 64 MiB: long enough to be in flight
  arrayport::stream a, b;
  arrayport::buffer src(n, arrayport::memory_kind::pinned);
  arrayport::buffer mid(n, arrayport::memory_kind::device, 0, a.handle());
  arrayport::buffer dst(n, arrayport::memory_kind::pinned);
  std::memset(src.data(), 0x5a, n);
  std::memset(dst.data(), 0, n);
  arrayport::runtime::memcpy_async(mid.data(), src.data(), n, a.handle());  // on A
  arrayport::event written;
  written.record(a.handle());
  b.wait(written);
  arrayport::runtime::memcpy_async(dst.data(), mid.data(), n, b.handle());  // on B, after A
  b.synchronize();
  const auto* out = static_cast<const std::uint8_t*>(dst.data());
  for (std::size_t i = 0; i < n; i += 4093) ASSERT_EQ(out[i], 0x5a) << "at " << i;
  EXPECT_EQ(out[n - 1], 0x5a);
}

TEST(StreamEvent, TimingEventsMeasureACopy) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  constexpr std::size_t n = std::size_t{256} << 20;
  arrayport::stream s;
  arrayport::buffer x(n, arrayport::memory_kind::device, 0, s.handle());
  arrayport::buffer y(n, arrayport::memory_kind::device, 0, s.handle());
  arrayport::event start(true), stop(true);
  start.record(s.handle());
  arrayport::runtime::memcpy_async(y.data(), x.data(), n, s.handle());
  stop.record(s.handle());
  stop.synchronize();
  EXPECT_TRUE(stop.query());
  float ms = start.elapsed_ms(stop);
  EXPECT_GT(ms, 0.f);
  // 512 MB of traffic: well under a second on any supported GPU, and not free.
  EXPECT_LT(ms, 1000.f);
}

TEST(StreamEvent, ManyCreateDestroyCyclesLeakNothing) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  auto before = arrayport::runtime::mem_get_info(0).first;
  for (int i = 0; i < 20000; ++i) {
    arrayport::stream s;
    arrayport::event e;
    e.record(s.handle());
  }
  auto after = arrayport::runtime::mem_get_info(0).first;
  // Device memory may move by the driver's granularity, never by the number of cycles.
  EXPECT_LE(before > after ? before - after : 0, std::size_t{4} << 20);
}

#if ARRAYPORT_HAS_CUDA
// cudaStreamBeginCapture on an arrayport stream: what a graph cannot hold (host waits, allocations
// that are not stream-ordered, copies of pageable memory) throws before any CUDA call that would
// end the capture; device work around it is captured, and the graph replays it.
TEST(StreamEvent, ACaptureRefusesWhatAGraphCannotHoldAndStaysValid) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
  using arrayport::memory_kind;
  constexpr std::size_t n = 4096;
  arrayport::stream s;
  arrayport::buffer d(n, memory_kind::device, s.device(), s.handle());
  arrayport::buffer out(n, memory_kind::pinned);
  std::vector<std::uint8_t> pageable(n);
  s.synchronize();
  ASSERT_EQ(
      cudaStreamBeginCapture(static_cast<cudaStream_t>(s.handle()), cudaStreamCaptureModeGlobal),
      cudaSuccess);
  EXPECT_TRUE(arrayport::runtime::stream_capturing(s.handle()));
  arrayport::runtime::memset_async(d.data(), memory_kind::device, 7, n, s.handle(), "memset");
  EXPECT_THROW(arrayport::buffer(n, memory_kind::managed, s.device(), s.handle()),
               arrayport::error);
  EXPECT_THROW(arrayport::buffer(n, memory_kind::pinned, -1, s.handle()), arrayport::error);
  EXPECT_THROW(s.synchronize(), arrayport::error);
  EXPECT_THROW(arrayport::runtime::memcpy_async(pageable.data(), memory_kind::host, d.data(),
                                                memory_kind::device, n, s.handle(), "copy"),
               arrayport::error);
  arrayport::runtime::memcpy_async(out.data(), memory_kind::pinned, d.data(), memory_kind::device,
                                   n, s.handle(), "copy");
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(static_cast<cudaStream_t>(s.handle()), &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 3; ++replay) {
    std::memset(out.data(), 0, n);
    ASSERT_EQ(cudaGraphLaunch(exec, static_cast<cudaStream_t>(s.handle())), cudaSuccess);
    s.synchronize();
    const auto* bytes = static_cast<const std::uint8_t*>(out.data());
    EXPECT_EQ(bytes[0], 7);
    EXPECT_EQ(bytes[n - 1], 7);
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}
#endif
