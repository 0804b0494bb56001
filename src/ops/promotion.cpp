// NumPy 2's type promotion for arrayport.ops: the dtype table, NEP 50's weak Python scalars and
// each op's result dtype.
#include "ops/dispatch.hpp"

#include <optional>
#include <string>

namespace arrayport::ops {
namespace {
using T = type_id;
}  // namespace

type_id promote(type_id a, type_id b) noexcept {
  // NumPy 2's np.result_type over bool, uint8, int32, int64, float16, float32, float64, complex64,
  // complex128 (generated from NumPy 2.4), with the bfloat16 row and column added.
  constexpr T b_ = T::bool_, u8 = T::uint8, i32 = T::int32, i64 = T::int64, f16 = T::float16,
              bf = T::bfloat16, f32 = T::float32, f64 = T::float64, c64 = T::complex64,
              c128 = T::complex128;
  constexpr T table[10][10] = {
      /* bool */ {b_, u8, i32, i64, f16, bf, f32, f64, c64, c128},
      /* u8   */ {u8, u8, i32, i64, f16, bf, f32, f64, c64, c128},
      /* i32  */ {i32, i32, i32, i64, f64, f64, f64, f64, c128, c128},
      /* i64  */ {i64, i64, i64, i64, f64, f64, f64, f64, c128, c128},
      /* f16  */ {f16, f16, f64, f64, f16, f32, f32, f64, c64, c128},
      /* bf16 */ {bf, bf, f64, f64, f32, bf, f32, f64, c64, c128},
      /* f32  */ {f32, f32, f64, f64, f32, f32, f32, f64, c64, c128},
      /* f64  */ {f64, f64, f64, f64, f64, f64, f64, f64, c128, c128},
      /* c64  */ {c64, c64, c128, c128, c64, c64, c64, c128, c64, c128},
      /* c128 */ {c128, c128, c128, c128, c128, c128, c128, c128, c128, c128}};
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

namespace {

// NumPy's default dtype of a Python scalar's kind (what np.asarray gives it).
type_id default_type(weak_kind k) noexcept {
  switch (k) {
    case weak_kind::bool_: return T::bool_;
    case weak_kind::int_: return T::int64;
    case weak_kind::float_: return T::float64;
    default: return T::complex128;
  }
}

// NEP 50 over `args` (no op rule), starting from `strong` when given (a strong dtype).
type_id promote_args(const char* op_name, arg_list args, std::optional<type_id> strong) {
  weak_kind weakest = weak_kind::none;
  for (const ops_arg* a : args) {
    if (a->kind != weak_kind::none) {
      if (a->strong) {
        const type_id t = default_type(a->kind);
        strong = strong ? promote(*strong, t) : t;
      } else {
        weakest = std::max(weakest, a->kind);
      }
      continue;
    }
    const type_id t = to_type_id(a->view.dtype());
    if (t == invalid_type || static_cast<int>(t) >= elementwise_type_count)
      throw type_error(std::string(op_name) + ": argument '" + a->name + "' has dtype " +
                       arrayport::detail::describe(a->view.dtype()) +
                       ", expected one of bool, uint8, int32, int64, float16, bfloat16, float32, "
                       "float64, complex64, complex128");
    strong = strong ? promote(*strong, t) : t;
  }
  // NEP 50: a Python scalar takes the arrays' dtype when its kind fits in it, and otherwise the
  // default dtype of its kind (int64, float64, complex128) -- except that a Python complex with
  // float32 (or narrower) arrays gives complex64. Without arrays, the scalars' default dtype.
  if (!strong) return default_type(weakest);
  type_id r = *strong;
  if (weakest == weak_kind::int_ && r == T::bool_) r = T::int64;
  if (weakest == weak_kind::float_ && (r == T::bool_ || is_integer(r))) r = T::float64;
  if (weakest == weak_kind::complex_ && !is_complex(r))
    r = (r == T::float16 || r == T::bfloat16 || r == T::float32) ? T::complex64 : T::complex128;
  return r;
}

// The ops NumPy computes in int8 for bool operands (ops has no int8).
constexpr bool gives_int8_for_bool(op_id op) noexcept {
  return op == op_id::square || op == op_id::floor_divide || op == op_id::remainder ||
         op == op_id::power;
}

}  // namespace

type_id result_type(op_id op, const char* op_name, arg_list args) {
  type_id r;
  if (op == op_id::axpy && args.size() == 3 &&
      !(args[0]->kind != weak_kind::none && args[1]->kind != weak_kind::none)) {
    // NumPy computes a * x first: its dtype, strong (an array), is then promoted with y's. (Two
    // Python scalars multiply into a Python scalar: the caller computes that product first.)
    r = promote_args(op_name, args.subspan(2),
                     promote_args(op_name, arg_list(args.data(), 2), std::nullopt));
  } else {
    r = promote_args(op_name, args, std::nullopt);
  }
  if (op == op_id::divide && (r == T::bool_ || is_integer(r))) r = T::float64;
  if (op >= op_id::logical_and && op <= op_id::logical_not) r = T::bool_;
  // NumPy's loops of these take floats only: bool and uint8 go to float16, wider integers to
  // float64.
  const bool float_loop = op == op_id::sqrt || (op >= op_id::isnan && op <= op_id::tanh);
  if (float_loop && (r == T::bool_ || r == T::uint8)) r = T::float16;
  if (float_loop && is_integer(r)) r = T::float64;
  if (!supports(op, r)) {
    const char* hint = r != T::bool_ ? ""
                       : gives_int8_for_bool(op)
                           ? " (NumPy gives int8, which ops has not; cast first)"
                           : " (NumPy refuses it too; cast to an integer dtype "
                             "first)";
    throw type_error(std::string(op_name) + ": not supported for dtype " +
                     std::string(to_dtype(r).name()) + hint);
  }
  return r;
}

}  // namespace arrayport::ops
