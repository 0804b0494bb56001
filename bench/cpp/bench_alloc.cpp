// Allocation + release per call: arrayport's resources against the raw CUDA allocators, same run.
//
// Reference (H100, 2026-11-22): cudaMallocManaged+free 15 us, cudaMalloc+free 2.4 us,
// cudaMallocAsync+free 1.1 us. Goals: device pool ~ cudaMallocAsync, managed pool <= 2 us.
#include <arrayport/arrayport.hpp>

#include <benchmark/benchmark.h>

#include <cstdlib>

namespace {

constexpr std::size_t bytes = 1000 * sizeof(float);

bool skip_without_gpu(benchmark::State& state) {
  if (arrayport::runtime::is_available()) return false;
  state.SkipWithError(("needs a CUDA device: " + arrayport::runtime::probe().reason).c_str());
  return true;
}

void arrayport_buffer(benchmark::State& state, arrayport::memory_kind kind) {
  if (kind != arrayport::memory_kind::host && skip_without_gpu(state)) return;
  for (auto _ : state) {
    arrayport::buffer b(bytes, kind);
    benchmark::DoNotOptimize(b.data());
  }
  arrayport::runtime::stream_synchronize(nullptr);
}

void host_malloc(benchmark::State& state) {
  for (auto _ : state) {
    void* p = std::malloc(bytes);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
}

#if ARRAYPORT_HAS_CUDA
void cuda_malloc(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  for (auto _ : state) {
    void* p = nullptr;
    ARRAYPORT_CUDA_CHECK(cudaMalloc(&p, bytes));
    ARRAYPORT_CUDA_CHECK(cudaFree(p));
  }
}

void cuda_malloc_async(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  arrayport::runtime::retain_pool_memory(0);
  for (auto _ : state) {
    void* p = nullptr;
    ARRAYPORT_CUDA_CHECK(cudaMallocAsync(&p, bytes, nullptr));
    ARRAYPORT_CUDA_CHECK(cudaFreeAsync(p, nullptr));
  }
  ARRAYPORT_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

// The two calls inside arrayport's device path, priced alone (where the overhead over
// cudaMallocAsync goes).
void cuda_malloc_from_pool_async(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  void* pool = arrayport::runtime::default_pool(0);
  for (auto _ : state) {
    void* p = arrayport::runtime::malloc_from_pool_async(bytes, pool, nullptr);
    arrayport::runtime::free_device_async(p, nullptr);
  }
  ARRAYPORT_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

void cuda_get_device(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  for (auto _ : state) {
    int d = -1;
    ARRAYPORT_CUDA_CHECK(cudaGetDevice(&d));
    benchmark::DoNotOptimize(d);
  }
}

void cuda_malloc_managed(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  for (auto _ : state) {
    void* p = nullptr;
    ARRAYPORT_CUDA_CHECK(cudaMallocManaged(&p, bytes));
    ARRAYPORT_CUDA_CHECK(cudaFree(p));
  }
}

void cuda_malloc_host(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  for (auto _ : state) {
    void* p = nullptr;
    ARRAYPORT_CUDA_CHECK(cudaMallocHost(&p, bytes));
    ARRAYPORT_CUDA_CHECK(cudaFreeHost(p));
  }
}

BENCHMARK(cuda_malloc);
BENCHMARK(cuda_malloc_async);
BENCHMARK(cuda_malloc_from_pool_async);
BENCHMARK(cuda_get_device);
BENCHMARK(cuda_malloc_managed);
BENCHMARK(cuda_malloc_host);
#endif

BENCHMARK(host_malloc);
BENCHMARK_CAPTURE(arrayport_buffer, host, arrayport::memory_kind::host);
BENCHMARK_CAPTURE(arrayport_buffer, device, arrayport::memory_kind::device);
BENCHMARK_CAPTURE(arrayport_buffer, managed, arrayport::memory_kind::managed);
BENCHMARK_CAPTURE(arrayport_buffer, pinned, arrayport::memory_kind::pinned);

}  // namespace

BENCHMARK_MAIN();
