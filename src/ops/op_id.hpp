// Every element-wise operation of arrayport.ops: its id, arity, result kind and the dtypes it is
// instantiated for. The dispatcher, both backends' tables and the functors share these.
#pragma once

#include "ops/types.hpp"

#include <cstdint>

namespace arrayport::ops {

/// Every element-wise operation, one dispatch-table row each.
enum class op_id : std::uint8_t {
  add,
  subtract,
  multiply,
  divide,
  maximum,
  minimum,  // binary
  negative,
  square,
  sqrt,
  abs,
  copy,  // unary (copy also casts: astype)
  where,
  axpy,  // ternary
  equal,
  not_equal,
  less,
  less_equal,  // comparisons: bool results (greater is less with the operands swapped)
  logical_and,
  logical_or,
  logical_xor,
  logical_not,  // in bool (the loads convert, x != 0) or the dtype the array operands share
  bitwise_and,
  bitwise_or,
  bitwise_xor,
  bitwise_invert,  // bool and integers
  isnan,
  isinf,
  isfinite,  // bool results
  exp,
  log,
  sin,
  cos,
  tanh,  // floating point and complex
  clip,  // ternary: minimum(maximum(x, lo), hi)
  floor_divide,
  remainder,
  power,  // negative integer exponents of integers are refused before the kernel
  count
};
inline constexpr int op_count = static_cast<int>(op_id::count);

constexpr int arity(op_id op) noexcept {
  switch (op) {
    case op_id::negative:
    case op_id::square:
    case op_id::sqrt:
    case op_id::abs:
    case op_id::copy:
    case op_id::logical_not:
    case op_id::bitwise_invert:
    case op_id::isnan:
    case op_id::isinf:
    case op_id::isfinite:
    case op_id::exp:
    case op_id::log:
    case op_id::sin:
    case op_id::cos:
    case op_id::tanh: return 1;
    case op_id::where:
    case op_id::axpy:
    case op_id::clip: return 3;
    default: return 2;
  }
}

/// Ops whose result is bool whatever dtype they compute in.
constexpr bool gives_bool(op_id op) noexcept {
  return (op >= op_id::equal && op <= op_id::logical_not) ||
         (op >= op_id::isnan && op <= op_id::isfinite);
}

/// The op's extra parameter (divide's zero_value), as one element of the result dtype.
struct op_params {
  alignas(16) unsigned char value[16];
  bool has_value;
};

/// Which result (compute) dtypes an op is instantiated for; the dispatcher promotes inputs into
/// one of these or raises TypeError.
constexpr bool supports(op_id op, type_id t) noexcept {
  if (static_cast<int>(t) >= elementwise_type_count) return false;
  const bool b = t == type_id::bool_;
  const bool inexact = is_floating(t) || is_complex(t);
  const bool integral = b || is_integer(t);
  switch (op) {
    case op_id::subtract:
    case op_id::negative:
    case op_id::square: return !b;
    case op_id::divide:
    case op_id::sqrt: return inexact;
    case op_id::logical_and:
    case op_id::logical_or:
    case op_id::logical_xor:
    case op_id::logical_not: return true;  // bool, or the dtype all array operands share
    case op_id::bitwise_and:
    case op_id::bitwise_or:
    case op_id::bitwise_xor:
    case op_id::bitwise_invert: return integral;
    case op_id::isnan:
    case op_id::isinf:
    case op_id::isfinite: return inexact;  // integers are loaded as floats (never NaN or inf)
    case op_id::exp:
    case op_id::log:
    case op_id::sin:
    case op_id::cos:
    case op_id::tanh: return inexact;
    case op_id::floor_divide:
    case op_id::remainder: return !b && !is_complex(t);  // bool: NumPy gives int8, not in ops
    case op_id::power: return !b;
    default: return true;
  }
}

/// arg_storage_t as a dtype id, for the dispatcher.
constexpr type_id arg_type(op_id op, int i, type_id compute) noexcept {
  return op == op_id::where && i == 0 ? type_id::bool_ : compute;
}

/// result_storage_t as a dtype id: the dtype of the result of op computed in `compute`.
constexpr type_id result_storage_type(op_id op, type_id compute) noexcept {
  if (gives_bool(op)) return type_id::bool_;
  if (op != op_id::abs || !is_complex(compute)) return compute;
  return compute == type_id::complex64 ? type_id::float32 : type_id::float64;
}

}  // namespace arrayport::ops
