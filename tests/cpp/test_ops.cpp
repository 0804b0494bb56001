// The kernel library (src/ops) called without Python: the reductions and element-wise ops
// over every dtype, at lengths around the vector widths (0..70) and the block and chunk edges,
// against plain loops. Values are small integers, so every exact result is exactly comparable.
#include "ops/dispatch.hpp"
#include "ops/kernels.hpp"

#include <arrayport/buffer.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu.hpp"

namespace ops = arrayport::ops;
using arrayport::strided_view;
using ops::op_id;
using ops::reduce_op;
using ops::type_id;

namespace {

// 0..70 crosses every vector width (up to 64 bytes of uint8) and the 8 lanes; the rest are the
// pairwise block (128), the chunk of parallel reductions and element-wise grain (2^16), and
// the staging block (4096).
std::vector<std::int64_t> lengths() {
  std::vector<std::int64_t> n;
  for (std::int64_t i = 0; i <= 70; ++i) n.push_back(i);
  for (std::int64_t edge : {128, 256, 1024, 4096, 65536, 131072})
    for (std::int64_t d : {-1, 0, 1}) n.push_back(edge + d);
  n.push_back(200003);
  return n;
}

// The value of element i: small integers of either sign (unsigned and bool types wrap to their
// range), so sums of up to 2^20 elements are exact in every accumulator.
template <class S>
S value(std::int64_t i, int seed) {
  const auto x = static_cast<int>((i * 7919 + seed * 104729) % 17) - 8;
  if constexpr (std::is_same_v<S, bool>)
    return x > 0;
  else if constexpr (std::is_same_v<S, std::uint8_t>)
    return static_cast<S>(x + 8);
  else if constexpr (ops::is_complex_v<S>)
    return S{ops::detail::real_t<S>(x), ops::detail::real_t<S>(seed - x)};
  else
    return ops::convert<S>(static_cast<double>(x));
}

// What a result is compared as: complex<double> for complex types, double otherwise.
template <class S>
auto widen(S v) {
  if constexpr (ops::is_complex_v<S>)
    return ops::convert<ops::complex<double>>(v);
  else
    return ops::convert<double>(v);
}

template <class S>
bool same(S a, S b) {
  const auto x = widen(a), y = widen(b);
  if constexpr (ops::is_complex_v<S>)
    return x.re == y.re && x.im == y.im;
  else
    return x == y;
}

template <class S>
std::string describe(S v) {
  if constexpr (ops::is_complex_v<S>) {
    const auto c = widen(v);
    return "(" + std::to_string(c.re) + ", " + std::to_string(c.im) + ")";
  } else {
    return std::to_string(widen(v));
  }
}

// n elements of S, value-initialised (std::vector<bool> has no data()).
template <class S>
class host_vec {
 public:
  explicit host_vec(std::int64_t n) : m_data(new S[static_cast<std::size_t>(n)]()) {}
  S* data() const { return m_data.get(); }
  S& operator[](std::int64_t i) const { return m_data[static_cast<std::size_t>(i)]; }

 private:
  std::unique_ptr<S[]> m_data;
};

// A 1-d view of `n` elements of S at `data`, `step` elements apart.
template <class S>
struct view_of {
  std::int64_t shape[1], strides[1];
  arrayport_view_t c{};
  view_of(void* data, std::int64_t n, std::int64_t step = 1,
          arrayport::memory_kind kind = arrayport::memory_kind::host) {
    shape[0] = n;
    strides[0] = step;
    c.version = {ARRAYPORT_C_ABI_VERSION_MAJOR, ARRAYPORT_C_ABI_VERSION_MINOR};
    c.data = data;
    c.ndim = 1;
    c.shape = shape;
    c.strides = strides;
    c.dtype = ops::to_dtype(ops::type_id_of<S>).to_c();
    c.memory_kind = static_cast<std::uint32_t>(kind);
    if (kind == arrayport::memory_kind::managed) c.device = {ARRAYPORT_DEVICE_CUDA_MANAGED, 0};
  }
  strided_view view() const { return strided_view(c); }
};

// ---- reductions ------------------------------------------------------------------------------

template <reduce_op Op, class S>
void check_reduction(std::int64_t n, std::int64_t step) {
  constexpr type_id T = ops::type_id_of<S>;
  constexpr type_id R = ops::reduce_result_type(Op, T);
  using Out = ops::storage_t<R>;
  using Acc = ops::acc_t<Op, T>;
  const host_vec<S> in(n * step + 1);
  for (std::int64_t i = 0; i < n; ++i) in[i * step] = value<S>(i, 1);

  // The plain loop: in double (complex<double>), exact for these values.
  auto expected_acc = widen(ops::convert<S>(0.0));
  for (std::int64_t i = 0; i < n; ++i) {
    const auto v = widen(in[i * step]);
    if constexpr (Op == reduce_op::max)
      expected_acc = i == 0 || v > expected_acc ? v : expected_acc;
    else if constexpr (Op == reduce_op::min)
      expected_acc = i == 0 || v < expected_acc ? v : expected_acc;
    else
      expected_acc = expected_acc + v;
  }
  Out expected;
  if constexpr (Op == reduce_op::mean)
    expected = ops::finish<Op, Out>(ops::convert<Acc>(expected_acc), n);
  else
    expected = ops::convert<Out>(ops::convert<Acc>(expected_acc));

  const view_of<S> v(in.data(), n, step);
  ops::reduce_call call;
  call.op = Op;
  call.in_type = T;
  ops::build_reduce(call, v.view(), {0}, false);
  Out out;
  call.out = reinterpret_cast<char*>(&out);
  ops::cpu::reduce_table[std::size_t(Op)][std::size_t(T)](call);
  if (!same(out, expected))
    ADD_FAILURE() << describe(out) << " != " << describe(expected) << ": n=" << n
                  << " step=" << step << " dtype " << ops::to_dtype(T).name();
}

template <class S>
class Reductions : public ::testing::Test {};
using all_types = ::testing::Types<bool, std::uint8_t, std::int32_t, std::int64_t,
                                   arrayport::float16_t, arrayport::bfloat16_t, float, double,
                                   ops::complex<float>, ops::complex<double>>;
TYPED_TEST_SUITE(Reductions, all_types);

TYPED_TEST(Reductions, SumMatchesAPlainLoopAtEveryLength) {
  for (std::int64_t n : lengths())
    for (std::int64_t step : {1, 3}) check_reduction<reduce_op::sum, TypeParam>(n, step);
}

TYPED_TEST(Reductions, MeanMatchesAPlainLoopAtEveryLength) {
  for (std::int64_t n : lengths())
    if (n > 0) check_reduction<reduce_op::mean, TypeParam>(n, 1);
}

TYPED_TEST(Reductions, MinAndMaxMatchAPlainLoopAtEveryLength) {
  if constexpr (ops::is_complex_v<TypeParam>) {
    GTEST_SKIP() << "complex numbers have no order: min and max refuse them";
  } else {
    for (std::int64_t n : lengths()) {
      if (n == 0) continue;  // no identity: the bindings refuse it before the kernel
      for (std::int64_t step : {1, 2}) {
        check_reduction<reduce_op::min, TypeParam>(n, step);
        check_reduction<reduce_op::max, TypeParam>(n, step);
      }
    }
  }
}

template <class T>
void expect_nan_propagates(reduce_op op) {
  for (std::int64_t n : {1, 7, 8, 9, 33, 64, 65, 70, 4097}) {
    for (std::int64_t at : {std::int64_t(0), n / 2, n - 1}) {
      const host_vec<T> in(n);
      for (std::int64_t i = 0; i < n; ++i) in[i] = value<T>(i, 2);
      in[at] = std::numeric_limits<T>::quiet_NaN();
      const view_of<T> v(in.data(), n);
      ops::reduce_call call;
      call.op = op;
      call.in_type = ops::type_id_of<T>;
      ops::build_reduce(call, v.view(), {0}, false);
      T out = 0;
      call.out = reinterpret_cast<char*>(&out);
      ops::cpu::reduce_table[std::size_t(op)][std::size_t(call.in_type)](call);
      EXPECT_TRUE(out != out) << "n=" << n << " NaN at " << at << " gave " << out;
    }
  }
}

TEST(Reductions, MinAndMaxPropagateNaNFromAnyLane) {
  for (reduce_op op : {reduce_op::min, reduce_op::max}) {
    expect_nan_propagates<float>(op);
    expect_nan_propagates<double>(op);
  }
}

// One full reduction of n elements of S at `data`, `step` apart, by the CPU kernel.
template <reduce_op Op, class S>
ops::storage_t<ops::reduce_result_type(Op, ops::type_id_of<S>)> reduce_1d(const S* data,
                                                                          std::int64_t n,
                                                                          std::int64_t step = 1) {
  const view_of<S> v(const_cast<S*>(data), n, step);
  ops::reduce_call call;
  call.op = Op;
  call.in_type = ops::type_id_of<S>;
  ops::build_reduce(call, v.view(), {0}, false);
  ops::storage_t<ops::reduce_result_type(Op, ops::type_id_of<S>)> out{};
  call.out = reinterpret_cast<char*>(&out);
  ops::cpu::reduce_table[std::size_t(Op)][std::size_t(call.in_type)](call);
  return out;
}

TYPED_TEST(Reductions, ArgMinAndArgMaxGiveTheFirstExtremeAtEveryLength) {
  using S = TypeParam;
  for (std::int64_t n : lengths()) {
    if (n == 0) continue;  // refused by the bindings, as NumPy refuses it
    for (std::int64_t step : {1, 2}) {
      const host_vec<S> in(n * step);
      for (std::int64_t i = 0; i < n; ++i) in[i * step] = value<S>(i, 1);  // 17 values: ties
      std::int64_t lo = 0, hi = 0;
      for (std::int64_t i = 1; i < n; ++i) {
        const auto v = widen(in[i * step]);
        if (ops::detail::greater(widen(in[lo * step]), v)) lo = i;
        if (ops::detail::greater(v, widen(in[hi * step]))) hi = i;
      }
      EXPECT_EQ((reduce_1d<reduce_op::argmin>(in.data(), n, step)), lo)
          << "n=" << n << " step=" << step;
      EXPECT_EQ((reduce_1d<reduce_op::argmax>(in.data(), n, step)), hi)
          << "n=" << n << " step=" << step;
    }
  }
}

template <class T>
void expect_first_nan_index() {
  for (std::int64_t n : {1, 7, 8, 9, 33, 2047, 2048, 2049, 4097, 65537, 200003}) {
    for (std::int64_t at : {std::int64_t(0), n / 2, n - 1}) {
      const host_vec<T> in(n);
      for (std::int64_t i = 0; i < n; ++i) in[i] = value<T>(i, 2);
      in[at] = std::numeric_limits<T>::quiet_NaN();
      in[n - 1] = std::numeric_limits<T>::quiet_NaN();  // a later NaN does not win
      EXPECT_EQ(reduce_1d<reduce_op::argmax>(in.data(), n), at) << "n=" << n;
      EXPECT_EQ(reduce_1d<reduce_op::argmin>(in.data(), n), at) << "n=" << n;
    }
  }
}

TEST(Reductions, ArgMinAndArgMaxGiveTheFirstNaN) {
  expect_first_nan_index<float>();
  expect_first_nan_index<double>();
}

TYPED_TEST(Reductions, AnyAndAllAreDecidedByOneElementAnywhere) {
  using S = TypeParam;
  const S zero = ops::convert<S>(0.0), one = ops::convert<S>(1.0);
  for (std::int64_t n : lengths()) {
    EXPECT_FALSE(reduce_1d<reduce_op::any>(host_vec<S>(n).data(), n)) << "n=" << n;
    for (std::int64_t at : {std::int64_t(0), n / 2, n - 1}) {
      if (n == 0) break;
      const host_vec<S> zeros(n), ones(n);
      for (std::int64_t i = 0; i < n; ++i) ones[i] = one;
      zeros[at] = one;
      ones[at] = zero;
      EXPECT_TRUE(reduce_1d<reduce_op::any>(zeros.data(), n)) << "n=" << n << " at " << at;
      EXPECT_EQ(reduce_1d<reduce_op::all>(zeros.data(), n), n == 1) << "n=" << n << " at " << at;
      EXPECT_FALSE(reduce_1d<reduce_op::all>(ones.data(), n)) << "n=" << n << " at " << at;
      EXPECT_EQ(reduce_1d<reduce_op::any>(ones.data(), n), n > 1) << "n=" << n << " at " << at;
    }
  }
}

TEST(Reductions, AnyAndAllTakeNegativeZeroAsFalseAndNaNAndOddBoolBytesAsTrue) {
  for (std::int64_t n : {1, 9, 4097, 65537}) {
    std::vector<double> d(std::size_t(n), -0.0);
    EXPECT_FALSE(reduce_1d<reduce_op::any>(d.data(), n));
    d.assign(std::size_t(n), std::numeric_limits<double>::quiet_NaN());
    EXPECT_TRUE(reduce_1d<reduce_op::all>(d.data(), n));
    const host_vec<bool> b(n);
    std::memset(b.data(), 2, std::size_t(n));  // any nonzero byte is true, as NumPy reads one
    EXPECT_TRUE(reduce_1d<reduce_op::all>(b.data(), n));
    EXPECT_EQ(reduce_1d<reduce_op::prod>(b.data(), n), 1);
  }
}

TYPED_TEST(Reductions, ProdMatchesAPlainLoop) {
  using S = TypeParam;
  using Out = ops::storage_t<ops::reduce_result_type(reduce_op::prod, ops::type_id_of<S>)>;
  for (std::int64_t n : lengths()) {
    // Factors of 1, 2 and (signed types) -1, at most 40 of them 2: exact in every accumulator,
    // in any order.
    constexpr bool is_signed = !std::is_same_v<S, bool> && !std::is_same_v<S, std::uint8_t>;
    const host_vec<S> in(n);
    auto expected = widen(ops::convert<S>(1.0));
    for (std::int64_t i = 0; i < n; ++i) {
      const double f = i % (n / 40 + 1) == 1 ? 2.0 : (is_signed && i % 3 == 0 ? -1.0 : 1.0);
      in[i] = ops::convert<S>(f);
      expected = ops::multiply_fn{}(expected, widen(in[i]));
    }
    const Out got = reduce_1d<reduce_op::prod>(in.data(), n);
    EXPECT_TRUE(same(got, ops::convert<Out>(expected))) << describe(got) << " != expected, n=" << n;
  }
}

TEST(Reductions, AlongEitherAxisOfAMatrixMatchesPlainLoops) {
  const std::int64_t rows = 37, cols = 70;
  std::vector<std::int32_t> in(rows * cols);
  for (std::int64_t i = 0; i < rows * cols; ++i) in[std::size_t(i)] = value<std::int32_t>(i, 3);
  std::int64_t shape[2] = {rows, cols}, strides[2] = {cols, 1};
  arrayport_view_t c{};
  c.version = {ARRAYPORT_C_ABI_VERSION_MAJOR, ARRAYPORT_C_ABI_VERSION_MINOR};
  c.data = in.data();
  c.ndim = 2;
  c.shape = shape;
  c.strides = strides;
  c.dtype = arrayport::dtypes::int32.to_c();
  for (int axis : {0, 1}) {
    ops::reduce_call call;
    call.op = reduce_op::sum;
    call.in_type = type_id::int32;
    const auto out_shape = ops::build_reduce(call, strided_view(c), {axis}, false);
    ASSERT_EQ(out_shape.size(), 1u);
    std::vector<std::int64_t> out(static_cast<std::size_t>(out_shape[0]), -1);
    call.out = reinterpret_cast<char*>(out.data());
    ops::cpu::reduce_table[std::size_t(reduce_op::sum)][std::size_t(type_id::int32)](call);
    for (std::int64_t o = 0; o < out_shape[0]; ++o) {
      std::int64_t expected = 0;
      for (std::int64_t k = 0; k < (axis == 0 ? rows : cols); ++k)
        expected += axis == 0 ? in[std::size_t(k * cols + o)] : in[std::size_t(o * cols + k)];
      EXPECT_EQ(out[std::size_t(o)], expected) << "axis " << axis << ", output " << o;
    }
  }
}

// ---- element-wise ----------------------------------------------------------------------------

// The plain loop's value of op over widened operands (double or complex<double>).
template <class W>
W reference(op_id op, W a, W b) {
  switch (op) {
    case op_id::add: return a + b;
    case op_id::subtract: return a - b;
    case op_id::multiply: return a * b;
    default:
      if constexpr (std::is_same_v<W, double>)
        return op == op_id::maximum ? (a > b ? a : b) : (a < b ? a : b);
      return a;
  }
}

// How the second operand is given: an array like the first, every other element of a longer
// one (the strided walk), or a scalar.
enum class second { contiguous, strided, scalar };

template <class S>
void check_binary(op_id op, std::int64_t n, second how) {
  constexpr type_id T = ops::type_id_of<S>;
  const host_vec<S> x(n), y(2 * n + 1), out(n);
  for (std::int64_t i = 0; i < n; ++i) x[i] = value<S>(i, 4);
  const std::int64_t step = how == second::strided ? 2 : 1;
  for (std::int64_t i = 0; i < n; ++i) y[i * step] = value<S>(i, 5);
  const S scalar = value<S>(3, 6);

  ops::ops_arg args[2];
  const view_of<S> vx(x.data(), n), vy(y.data(), n, step), vo(out.data(), n);
  args[0].view = vx.view();
  args[1].view = vy.view();
  ops::ew_call call;
  call.op = op;
  call.compute = T;
  call.n_inputs = 2;
  call.params.has_value = false;
  if (how == second::scalar) {
    args[1].kind = ops::weak_kind::float_;  // any kind: the scalar's bytes are already of T
    std::memcpy(call.in[1].scalar, &scalar, sizeof scalar);
  }
  const std::int64_t shape[1] = {n};
  call.out = reinterpret_cast<char*>(out.data());
  ops::build_layout(call, vo.view(), shape, 1, args);
  EXPECT_EQ(call.flat, how != second::strided || n <= 1) << "n=" << n;
  ops::cpu::elementwise_table[std::size_t(op)][std::size_t(T)](call);
  for (std::int64_t i = 0; i < n; ++i) {
    const S b = how == second::scalar ? scalar : y[i * step];
    const S expected = ops::convert<S>(reference(op, widen(x[i]), widen(b)));
    if (!same(out[i], expected))
      FAIL() << describe(out[i]) << " != " << describe(expected) << "op " << int(op) << " n=" << n
             << " at " << i << " dtype " << ops::to_dtype(T).name();
  }
}

template <class S>
class Elementwise : public ::testing::Test {};
TYPED_TEST_SUITE(Elementwise, all_types);

TYPED_TEST(Elementwise, BinaryOpsMatchAPlainLoopAtEveryLength) {
  constexpr type_id T = ops::type_id_of<TypeParam>;
  for (op_id op : {op_id::add, op_id::subtract, op_id::multiply, op_id::maximum, op_id::minimum}) {
    if (!ops::supports(op, T)) continue;
    if (ops::is_complex(T) && (op == op_id::maximum || op == op_id::minimum)) continue;
    for (std::int64_t n : lengths())
      for (second how : {second::contiguous, second::strided, second::scalar})
        check_binary<TypeParam>(op, n, how);
  }
}

TEST(Elementwise, MixedDtypesConvertInTheirLoads) {
  // int32 + float64 computes in float64: the int32 input is converted as it is loaded.
  for (std::int64_t n : lengths()) {
    std::vector<std::int32_t> x(static_cast<std::size_t>(n));
    std::vector<double> y(x.size()), out(x.size());
    for (std::int64_t i = 0; i < n; ++i) {
      x[std::size_t(i)] = value<std::int32_t>(i, 7) * 1000003;
      y[std::size_t(i)] = value<double>(i, 8) / 4;
    }
    ops::ops_arg args[2];
    const view_of<std::int32_t> vx(x.data(), n);
    const view_of<double> vy(y.data(), n), vo(out.data(), n);
    args[0].view = vx.view();
    args[1].view = vy.view();
    ops::ew_call call;
    call.op = op_id::add;
    call.compute = type_id::float64;
    call.n_inputs = 2;
    call.params.has_value = false;
    call.out = reinterpret_cast<char*>(out.data());
    const std::int64_t shape[1] = {n};
    ops::build_layout(call, vo.view(), shape, 1, args);
    EXPECT_FALSE(call.flat && n > 1);
    ops::launch(call, ops::placement{}, ops::stream_ref{});
    for (std::int64_t i = 0; i < n; ++i)
      ASSERT_EQ(out[std::size_t(i)], double(x[std::size_t(i)]) + y[std::size_t(i)]) << i;
  }
}

// ---- the dispatcher's rules ------------------------------------------------------------------

TEST(Dispatch, PromotionFollowsNumPy) {
  EXPECT_EQ(ops::promote(type_id::uint8, type_id::int32), type_id::int32);
  EXPECT_EQ(ops::promote(type_id::int32, type_id::float32), type_id::float64);
  EXPECT_EQ(ops::promote(type_id::float16, type_id::bfloat16), type_id::float32);
  EXPECT_EQ(ops::promote(type_id::int64, type_id::complex64), type_id::complex128);
}

TEST(Dispatch, BroadcastingNamesTheArgumentsThatDoNotFit) {
  std::vector<float> a(6), b(4);
  const view_of<float> va(a.data(), 6), vb(b.data(), 4);
  ops::ops_arg x, y;
  x.view = va.view();
  x.name = "x1";
  y.view = vb.view();
  y.name = "x2";
  std::int64_t shape[ARRAYPORT_MAX_NDIM];
  try {
    const ops::ops_arg* both[] = {&x, &y};
    ops::broadcast_shapes("add", both, shape);
    FAIL() << "expected value_error";
  } catch (const arrayport::value_error& e) {
    EXPECT_STREQ(e.what(), "add: operands could not be broadcast together: 'x1' (6,) 'x2' (4,)");
  }
}

TEST(Dispatch, HostOperandsRunOnTheCpu) {
  std::vector<float> a(4);
  const view_of<float> va(a.data(), 4);
  ops::ops_arg x;
  x.view = va.view();
  const ops::ops_arg* arrays[] = {&x};
  const ops::placement p = ops::place("add", arrays, ops::stream_ref{});
  EXPECT_FALSE(p.on_gpu);
  EXPECT_EQ(p.out_kind, arrayport::memory_kind::host);
  EXPECT_EQ(p.n_streams, 0);
}

// ---- the same kernels on the GPU -------------------------------------------------------------

TEST(OpsGpu, AddAndSumOfManagedMemoryMatchTheCpu) {
  ARRAYPORT_SKIP_WITHOUT_GPU();
#if ARRAYPORT_HAS_CUDA
  for (std::int64_t n : {std::int64_t(1), std::int64_t(70), std::int64_t(65537)}) {
    const auto bytes = static_cast<std::size_t>(n) * sizeof(float);
    arrayport::buffer x(bytes, arrayport::memory_kind::managed, 0);
    arrayport::buffer out(bytes, arrayport::memory_kind::managed, 0);
    arrayport::buffer total(sizeof(float), arrayport::memory_kind::managed, 0);
    auto* xs = static_cast<float*>(x.data());
    for (std::int64_t i = 0; i < n; ++i) xs[i] = value<float>(i, 9);
    const view_of<float> vx(xs, n, 1, arrayport::memory_kind::managed),
        vo(out.data(), n, 1, arrayport::memory_kind::managed);
    ops::ops_arg args[2];
    args[0].view = vx.view();
    args[1].view = vx.view();
    const ops::ops_arg* arrays[] = {&args[0]};
    const ops::placement where = ops::place("add", arrays, ops::stream_ref{});
    ASSERT_TRUE(where.on_gpu);
    ops::ew_call call;
    call.op = op_id::add;
    call.compute = type_id::float32;
    call.n_inputs = 2;
    call.params.has_value = false;
    call.out = static_cast<char*>(out.data());
    const std::int64_t shape[1] = {n};
    ops::build_layout(call, vo.view(), shape, 1, args);
    ops::launch(call, where, ops::stream_ref{});
    ops::reduce_call sum;
    sum.op = reduce_op::sum;
    sum.in_type = type_id::float32;
    ops::build_reduce(sum, vx.view(), {0}, false);
    sum.out = static_cast<char*>(total.data());
    ops::launch(sum, where, ops::stream_ref{});
    arrayport::runtime::stream_synchronize(nullptr, 0);
    double expected = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(static_cast<float*>(out.data())[i], 2 * xs[i]) << "n=" << n << " at " << i;
      expected += xs[i];
    }
    EXPECT_EQ(*static_cast<float*>(total.data()), static_cast<float>(expected)) << "n=" << n;
  }
#else
  GTEST_SKIP() << "arrayport was built without CUDA";
#endif
}

}  // namespace
