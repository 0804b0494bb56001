// The floor of a small GPU op from the host, without arrayport: launches of an empty kernel and of
// a 1000-element add, back to back and then one synchronisation (what bench_ops.py's 1000-element
// rows time), per launch, on the legacy and on a non-blocking stream. Plain CUDA C++:
//   nvcc -O2 -arch=native -o bench_launch bench/cpp/bench_launch.cu && ./bench_launch
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

__global__ void empty_k() {}
__global__ void add_k(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

template <class F>
double per_call_us(F f, cudaStream_t s, int rep = 20000) {
  f();
  cudaStreamSynchronize(s);
  double best = 1e9;
  for (int r = 0; r < 7; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < rep; ++i) f();
    cudaStreamSynchronize(s);
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count() / rep);
  }
  return best;
}

template <class F>
double enqueue_us(F f, cudaStream_t s, int rep = 500) {
  double best = 1e9;
  for (int r = 0; r < 7; ++r) {
    cudaStreamSynchronize(s);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < rep; ++i) f();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count() / rep);
  }
  cudaStreamSynchronize(s);
  return best;
}

int main() {
  const int n = 1000;
  float *a, *b, *c;
  cudaMalloc(&a, n * 4);
  cudaMalloc(&b, n * 4);
  cudaMalloc(&c, n * 4);
  cudaStream_t nb;
  cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking);
  for (cudaStream_t s : {cudaStream_t(0), nb}) {
    const char* name = s ? "non-blocking stream" : "legacy stream";
    printf("%s: empty kernel %.2f us/launch (enqueue only %.2f)\n", name,
           per_call_us([&] { empty_k<<<1, 32, 0, s>>>(); }, s),
           enqueue_us([&] { empty_k<<<1, 32, 0, s>>>(); }, s));
    printf("%s: add 1000 %.2f us/launch (enqueue only %.2f)\n", name,
           per_call_us([&] { add_k<<<4, 256, 0, s>>>(a, b, c, n); }, s),
           enqueue_us([&] { add_k<<<4, 256, 0, s>>>(a, b, c, n); }, s));
    printf("%s: add 1000 + getdevice + getlasterror %.2f us/launch\n", name,
           per_call_us(
               [&] {
                 int d;
                 cudaGetDevice(&d);
                 add_k<<<4, 256, 0, s>>>(a, b, c, n);
                 (void)cudaGetLastError();
               },
               s));
  }
  int d;
  cudaGetDevice(&d);
  printf("cudaGetDevice %.3f us\n", enqueue_us([&] { cudaGetDevice(&d); }, nb, 100000));
  printf("cudaStreamIsCapturing %.3f us\n", enqueue_us(
                                                [&] {
                                                  cudaStreamCaptureStatus st;
                                                  cudaStreamIsCapturing(nb, &st);
                                                },
                                                nb, 100000));
  cudaEvent_t e;
  cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  printf("cudaEventRecord %.3f us\n", enqueue_us([&] { cudaEventRecord(e, nb); }, nb, 20000));
  printf("cudaStreamQuery %.3f us\n", enqueue_us([&] { cudaStreamQuery(nb); }, nb, 20000));
  return 0;
}
