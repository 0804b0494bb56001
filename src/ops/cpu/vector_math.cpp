#include "ops/cpu/vector_math.hpp"

#include "ops/cpu/cpu_features.hpp"
#include "ops/cpu/vector_powf.hpp"

#include <dlfcn.h>
#include <immintrin.h>

#include <cstring>
#include <type_traits>
#include <utility>

namespace arrayport::ops::cpu {
namespace {

// libmvec's variants (x86-64 vector ABI names): AVX2's take and return __m256 or __m256d,
// AVX-512's __m512 or __m512d; as void* until called from code of that ISA. float64 exp and log
// have no AVX2 entry: on a CPU without AVX-512, NumPy's loops are the C library's, which the
// scalar loop matches bit for bit; with it, NumPy's are its own AVX-512 ones.
constexpr struct {
  op_id op;
  bool f64;
  const char* avx2;
  const char* avx512;
} vector_symbols[] = {
    {op_id::exp, false, "_ZGVdN8v_expf", "_ZGVeN16v_expf"},
    {op_id::log, false, "_ZGVdN8v_logf", "_ZGVeN16v_logf"},
    {op_id::sin, false, "_ZGVdN8v_sinf", "_ZGVeN16v_sinf"},
    {op_id::cos, false, "_ZGVdN8v_cosf", "_ZGVeN16v_cosf"},
    {op_id::tanh, false, "_ZGVdN8v_tanhf", "_ZGVeN16v_tanhf"},  // tanh: glibc >= 2.35
    {op_id::tanh, true, "_ZGVdN4v_tanh", "_ZGVeN8v_tanh"},
    {op_id::exp, true, nullptr, "_ZGVeN8v_exp"},
    {op_id::log, true, nullptr, "_ZGVeN8v_log"},
    {op_id::power, true, nullptr, "_ZGVeN8vv_pow"}};  // two arguments, as power's below
constexpr int n_symbols = sizeof vector_symbols / sizeof vector_symbols[0];

// The loops arrayport has of its own, in place of libmvec's: float32 power (vector_powf.hpp).
constexpr bool own_loop(op_id op, bool f64) noexcept { return op == op_id::power && !f64; }

struct resolved {
  void* fn[n_symbols] = {};
  bool avx512[n_symbols] = {};  // fn is the AVX-512 variant
};

const resolved& functions() {
  static const resolved r = [] {
    resolved t;
#if defined(__x86_64__) && defined(__GNUC__)
    if (!has_avx2() || !__builtin_cpu_supports("fma")) return t;
    // Never closed: the pointers live as long as the process.
    void* lib = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return t;
    for (int i = 0; i < n_symbols; ++i) {
      const auto& s = vector_symbols[i];
      if (has_avx512() && (t.fn[i] = dlsym(lib, s.avx512))) {
        t.avx512[i] = true;
      } else if (s.avx2) {
        t.fn[i] = dlsym(lib, s.avx2);
      }
    }
#endif
    return t;
  }();
  return r;
}

// The index of op's entry for T, or -1.
template <class T>
constexpr int symbol_of(op_id op) noexcept {
  for (int k = 0; k < n_symbols; ++k)
    if (vector_symbols[k].op == op && vector_symbols[k].f64 == std::is_same_v<T, double>) return k;
  return -1;
}

#if defined(__x86_64__) && defined(__GNUC__)
// y = f(x) and y = f(a, b), `Bytes` bytes a vector; a step of 0 repeats a scalar. The last lanes
// are padded with ones (finite for every op here).
#define ARRAYPORT_VECTOR_APPLY(Target, Bytes)                                                      \
  template <class T, int K>                                                                        \
  __attribute__((target(Target))) void apply_##Bytes(const T* x, T* y, std::int64_t n) {           \
    constexpr int W = Bytes / sizeof(T);                                                           \
    typedef T V __attribute__((vector_size(Bytes)));                                               \
    const auto f = reinterpret_cast<V (*)(V)>(functions().fn[K]);                                  \
    std::int64_t i = 0;                                                                            \
    V v;                                                                                           \
    for (; i + W <= n; i += W) {                                                                   \
      std::memcpy(&v, x + i, sizeof v);                                                            \
      v = f(v);                                                                                    \
      std::memcpy(y + i, &v, sizeof v);                                                            \
    }                                                                                              \
    if (i < n) {                                                                                   \
      T lanes[W];                                                                                  \
      for (auto& l : lanes) l = T(1);                                                              \
      std::memcpy(lanes, x + i, sizeof(T) * std::size_t(n - i));                                   \
      std::memcpy(&v, lanes, sizeof v);                                                            \
      v = f(v);                                                                                    \
      std::memcpy(y + i, &v, sizeof(T) * std::size_t(n - i));                                      \
    }                                                                                              \
  }                                                                                                \
  template <class T, int K>                                                                        \
  __attribute__((target(Target))) void apply2_##Bytes(const T* a, std::int64_t a_step, const T* b, \
                                                      std::int64_t b_step, T* y, std::int64_t n) { \
    constexpr int W = Bytes / sizeof(T);                                                           \
    typedef T V __attribute__((vector_size(Bytes)));                                               \
    const auto f = reinterpret_cast<V (*)(V, V)>(functions().fn[K]);                               \
    V va, vb; /* a scalar in every lane (not V{} + *a: 0.0 + -0.0 is 0.0) */                       \
    for (int l = 0; l < W; ++l) va[l] = *a, vb[l] = *b;                                            \
    std::int64_t i = 0;                                                                            \
    for (; i + W <= n; i += W) {                                                                   \
      if (a_step) std::memcpy(&va, a + i, sizeof va);                                              \
      if (b_step) std::memcpy(&vb, b + i, sizeof vb);                                              \
      const V v = f(va, vb);                                                                       \
      std::memcpy(y + i, &v, sizeof v);                                                            \
    }                                                                                              \
    if (i < n) {                                                                                   \
      T la[W], lb[W];                                                                              \
      for (int l = 0; l < W; ++l) la[l] = lb[l] = T(1);                                            \
      for (std::int64_t l = 0; l < n - i; ++l) {                                                   \
        la[l] = a[(i + l) * a_step];                                                               \
        lb[l] = b[(i + l) * b_step];                                                               \
      }                                                                                            \
      std::memcpy(&va, la, sizeof va);                                                             \
      std::memcpy(&vb, lb, sizeof vb);                                                             \
      const V v = f(va, vb);                                                                       \
      std::memcpy(y + i, &v, sizeof(T) * std::size_t(n - i));                                      \
    }                                                                                              \
  }
ARRAYPORT_VECTOR_APPLY("avx2,fma", 32)
ARRAYPORT_VECTOR_APPLY("avx512f,avx2,fma", 64)
#undef ARRAYPORT_VECTOR_APPLY

// The loop of entry K for T as a Map (vector_map<T>: one argument, vector_map2<T>: two), of
// either width; nullptr where the entry's arity is not Map's.
template <class T, int K, class Map>
constexpr Map loop_at(bool avx512) {
  constexpr int args = std::is_same_v<Map, vector_map<T>> ? 1 : 2;
  if constexpr (arity(vector_symbols[K].op) != args)
    return nullptr;
  else if constexpr (args == 1)
    return avx512 ? &apply_64<T, K> : &apply_32<T, K>;
  else
    return avx512 ? &apply2_64<T, K> : &apply2_32<T, K>;
}

template <class T, class Map, int... K>
Map pick(int k, bool avx512, std::integer_sequence<int, K...>) {
  constexpr Map maps[2][n_symbols] = {{loop_at<T, K, Map>(false)...},
                                      {loop_at<T, K, Map>(true)...}};
  return maps[avx512][k];
}
#endif

// The Map of op for T where this CPU and C library have it, else nullptr.
template <class T, class Map>
Map lookup(op_id op) noexcept {
#if defined(__x86_64__) && defined(__GNUC__)
  const int k = symbol_of<T>(op);
  if (k >= 0 && functions().fn[k])
    return pick<T, Map>(k, functions().avx512[k], std::make_integer_sequence<int, n_symbols>{});
#else
  (void)op;
#endif
  return nullptr;
}

}  // namespace

// The symbols and own loops are exactly the loops has_vector_loop names.
constexpr bool symbols_agree() noexcept {
  int named = 0;
  for (int i = 0; i < op_count; ++i)
    for (const bool f64 : {false, true})
      named += (f64 ? has_vector_loop<double>(op_id(i)) : has_vector_loop<float>(op_id(i))) &&
               !own_loop(op_id(i), f64);
  for (const auto& s : vector_symbols)
    if (!(s.f64 ? has_vector_loop<double>(s.op) : has_vector_loop<float>(s.op)) || arity(s.op) > 2)
      return false;
  return named == n_symbols;
}
static_assert(symbols_agree(), "vector_symbols and has_vector_loop name the same loops");

template <class T>
vector_map<T> vector_math(op_id op) noexcept {
  return lookup<T, vector_map<T>>(op);
}

template <class T>
vector_map2<T> vector_math2(op_id op) noexcept {
#if defined(__x86_64__) && defined(__GNUC__)
  if constexpr (std::is_same_v<T, float>)
    if (own_loop(op, false))  // AVX-512DQ: every AVX-512 CPU but the Xeon Phi
      return has_avx512() && __builtin_cpu_supports("avx512dq") ? &powf_avx512 : nullptr;
#endif
  return lookup<T, vector_map2<T>>(op);
}

template vector_map2<float> vector_math2<float>(op_id) noexcept;
template vector_map2<double> vector_math2<double>(op_id) noexcept;
template vector_map<float> vector_math<float>(op_id) noexcept;
template vector_map<double> vector_math<double>(op_id) noexcept;

}  // namespace arrayport::ops::cpu
