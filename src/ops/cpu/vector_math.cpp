#include "ops/cpu/vector_math.hpp"

#include "ops/cpu/cpu_features.hpp"

#include <dlfcn.h>
#include <immintrin.h>

#include <cstring>
#include <type_traits>
#include <utility>

namespace arrayport::ops::cpu {
namespace {

// libmvec's AVX2 variants (x86-64 vector ABI names): __m256 f(__m256) or __m256d f(__m256d),
// as void* until called from AVX2 code.
constexpr struct {
  op_id op;
  bool f64;
  const char* symbol;
} vector_symbols[] = {{op_id::exp, false, "_ZGVdN8v_expf"},   {op_id::log, false, "_ZGVdN8v_logf"},
                      {op_id::sin, false, "_ZGVdN8v_sinf"},   {op_id::cos, false, "_ZGVdN8v_cosf"},
                      {op_id::tanh, false, "_ZGVdN8v_tanhf"},  // glibc >= 2.35
                      {op_id::tanh, true, "_ZGVdN4v_tanh"}};
constexpr int n_symbols = sizeof vector_symbols / sizeof vector_symbols[0];

struct resolved {
  void* fn[n_symbols] = {};
};

const resolved& functions() {
  static const resolved r = [] {
    resolved t;
#if defined(__x86_64__) && defined(__GNUC__)
    if (!has_avx2() || !__builtin_cpu_supports("fma")) return t;
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
template <class T, int K>
__attribute__((target("avx2,fma"))) void apply(const T* x, T* y, std::int64_t n) {
  constexpr int W = 32 / sizeof(T);
  typedef T V __attribute__((vector_size(32)));
  using fn = V (*)(V);
  const auto f = reinterpret_cast<fn>(functions().fn[K]);
  std::int64_t i = 0;
  V v;
  for (; i + W <= n; i += W) {
    std::memcpy(&v, x + i, sizeof v);
    v = f(v);
    std::memcpy(y + i, &v, sizeof v);
  }
  if (i < n) {  // the last lanes padded with ones (finite for every op here)
    T lanes[W];
    for (auto& l : lanes) l = T(1);
    std::memcpy(lanes, x + i, sizeof(T) * std::size_t(n - i));
    std::memcpy(&v, lanes, sizeof v);
    v = f(v);
    std::memcpy(y + i, &v, sizeof(T) * std::size_t(n - i));
  }
}

template <class T, int... K>
vector_map<T> pick(int k, std::integer_sequence<int, K...>) {
  constexpr vector_map<T> maps[] = {&apply<T, K>...};
  return maps[k];
}
#endif

}  // namespace

// The symbols are exactly the loops has_vector_loop names.
constexpr bool symbols_agree() noexcept {
  int named = 0;
  for (int i = 0; i < op_count; ++i)
    named += has_vector_loop<float>(op_id(i)) + has_vector_loop<double>(op_id(i));
  for (const auto& s : vector_symbols)
    if (!(s.f64 ? has_vector_loop<double>(s.op) : has_vector_loop<float>(s.op))) return false;
  return named == n_symbols;
}
static_assert(symbols_agree(), "vector_symbols and has_vector_loop name the same loops");

template <class T>
vector_map<T> vector_math(op_id op) noexcept {
#if defined(__x86_64__) && defined(__GNUC__)
  for (int k = 0; k < n_symbols; ++k)
    if (vector_symbols[k].op == op && vector_symbols[k].f64 == std::is_same_v<T, double>)
      return functions().fn[k] ? pick<T>(k, std::make_integer_sequence<int, n_symbols>{}) : nullptr;
#else
  (void)op;
#endif
  return nullptr;
}

template vector_map<float> vector_math<float>(op_id) noexcept;
template vector_map<double> vector_math<double>(op_id) noexcept;

}  // namespace arrayport::ops::cpu
