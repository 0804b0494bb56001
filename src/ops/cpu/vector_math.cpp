#include "ops/cpu/vector_math.hpp"

#include <dlfcn.h>
#include <immintrin.h>

#include <cstring>

namespace arrayport::ops::cpu {
namespace {

// libmvec's AVX2 variants (x86-64 vector ABI names): __m256 f(__m256), as void* until called
// from AVX2 code.
constexpr struct {
  op_id op;
  const char* symbol;
} vector_symbols[] = {{op_id::exp, "_ZGVdN8v_expf"},
                      {op_id::log, "_ZGVdN8v_logf"},
                      {op_id::sin, "_ZGVdN8v_sinf"},
                      {op_id::cos, "_ZGVdN8v_cosf"},
                      {op_id::tanh, "_ZGVdN8v_tanhf"}};  // glibc >= 2.35
constexpr int n_symbols = sizeof vector_symbols / sizeof vector_symbols[0];

struct resolved {
  void* fn[n_symbols] = {};
};

const resolved& functions() {
  static const resolved r = [] {
    resolved t;
#if defined(__x86_64__) && defined(__GNUC__)
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return t;
    // Never closed: the pointers live as long as the process.
    void* lib = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return t;
    for (int i = 0; i < n_symbols; ++i) t.fn[i] = dlsym(lib, vector_symbols[i].symbol);
#endif
    return t;
  }();
  return r;
}

#if defined(__x86_64__) && defined(__GNUC__)
template <int K>
__attribute__((target("avx2,fma"))) void apply(const float* x, float* y, std::int64_t n) {
  using m256_fn = __m256 (*)(__m256);
  const auto f = reinterpret_cast<m256_fn>(functions().fn[K]);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {  // the last lanes padded with ones (finite for every op here)
    float lanes[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    std::memcpy(lanes, x + i, sizeof(float) * std::size_t(n - i));
    _mm256_storeu_ps(lanes, f(_mm256_loadu_ps(lanes)));
    std::memcpy(y + i, lanes, sizeof(float) * std::size_t(n - i));
  }
}

template <int... K>
float_map pick(int k, std::integer_sequence<int, K...>) {
  constexpr float_map maps[] = {&apply<K>...};
  return maps[k];
}
#endif

}  // namespace

float_map vector_math(op_id op) noexcept {
#if defined(__x86_64__) && defined(__GNUC__)
  for (int k = 0; k < n_symbols; ++k)
    if (vector_symbols[k].op == op)
      return functions().fn[k] ? pick(k, std::make_integer_sequence<int, n_symbols>{}) : nullptr;
#else
  (void)op;
#endif
  return nullptr;
}

}  // namespace arrayport::ops::cpu
