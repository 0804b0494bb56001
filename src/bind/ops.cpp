// arrayport._core.ops: the Python entry points of the kernel library, one named function per op
// (or family of ops), registered from the tables below.
#include "bind/ops.hpp"

#include "bind/device.hpp"
#include "bind/elementwise.hpp"
#include "bind/reduce.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace arrayport::ext {
namespace {

using ops::op_id;
using ops::reduce_op;

// One op of a family: its Python name, the kernel it runs and its docstring.
template <class Op>
struct entry {
  const char* name;
  Op op;
  const char* doc;
};

constexpr entry<op_id> binary_ops[] = {
    {"add", op_id::add, "x1 + x2, element-wise, with NumPy broadcasting."},
    {"subtract", op_id::subtract, "x1 - x2, element-wise."},
    {"multiply", op_id::multiply, "x1 * x2, element-wise."},
    {"maximum", op_id::maximum, "Element-wise maximum; NaN propagates."},
    {"minimum", op_id::minimum, "Element-wise minimum; NaN propagates."},
    {"equal", op_id::equal, "x1 == x2, element-wise (bool)."},
    {"not_equal", op_id::not_equal, "x1 != x2, element-wise (bool)."},
    {"less", op_id::less, "x1 < x2, element-wise (bool; complex: lexicographic)."},
    {"less_equal", op_id::less_equal, "x1 <= x2, element-wise (bool)."},
    {"logical_and", op_id::logical_and, "x1 and x2, element-wise, any dtype as truth (bool)."},
    {"logical_or", op_id::logical_or, "x1 or x2, element-wise (bool)."},
    {"logical_xor", op_id::logical_xor, "x1 != x2 as truth values, element-wise (bool)."},
    {"bitwise_and", op_id::bitwise_and, "x1 & x2, element-wise (bool and integers)."},
    {"bitwise_or", op_id::bitwise_or, "x1 | x2, element-wise (bool and integers)."},
    {"bitwise_xor", op_id::bitwise_xor, "x1 ^ x2, element-wise (bool and integers)."},
    {"floor_divide", op_id::floor_divide,
     "x1 // x2, element-wise (floored; integers: 0 for a zero divisor, as NumPy)."},
    {"remainder", op_id::remainder,
     "x1 % x2, element-wise (the sign of x2, as Python's; integers: 0 for a zero divisor)."},
    {"power", op_id::power,
     "x1 ** x2, element-wise (complex: NumPy's integer-exponent rules). Integers to negative "
     "integer powers raise ValueError, as in NumPy."},
};
// x1 > x2 is x2 < x1: the same kernels with the operands swapped (NaN compares false either way).
constexpr entry<op_id> swapped_ops[] = {
    {"greater", op_id::less, "x1 > x2, element-wise (bool; complex: lexicographic)."},
    {"greater_equal", op_id::less_equal, "x1 >= x2, element-wise (bool)."},
};
constexpr entry<op_id> unary_ops[] = {
    {"negative", op_id::negative, "-x, element-wise."},
    {"square", op_id::square, "x * x, element-wise."},
    {"sqrt", op_id::sqrt, "Square root, element-wise (integers give floats)."},
    {"abs", op_id::abs, "Absolute value (complex: the modulus, a real dtype)."},
    {"copy", op_id::copy, "A copy of x (contiguous), or x written into out."},
    {"logical_not", op_id::logical_not, "not x, element-wise, any dtype as truth (bool)."},
    {"bitwise_invert", op_id::bitwise_invert, "~x, element-wise (bool: logical not)."},
    {"isnan", op_id::isnan, "Whether x is NaN, element-wise (bool)."},
    {"isinf", op_id::isinf, "Whether x is infinite, element-wise (bool)."},
    {"isfinite", op_id::isfinite, "Whether x is neither infinite nor NaN, element-wise (bool)."},
    {"exp", op_id::exp, "e ** x, element-wise (floats and complex; integers give floats)."},
    {"log", op_id::log,
     "Natural logarithm, element-wise (floats and complex; integers give floats)."},
    {"sin", op_id::sin, "Sine, element-wise (floats and complex; integers give floats)."},
    {"cos", op_id::cos, "Cosine, element-wise (floats and complex; integers give floats)."},
    {"tanh", op_id::tanh,
     "Hyperbolic tangent, element-wise (floats and complex; integers give floats)."},
};
constexpr entry<reduce_op> reductions[] = {
    {"sum", reduce_op::sum, "Sum over axis (None: all), pairwise/tree accumulated."},
    {"mean", reduce_op::mean, "Mean over axis (None: all); integers give float64."},
    {"min", reduce_op::min, "Minimum over axis; NaN propagates; empty is an error."},
    {"max", reduce_op::max, "Maximum over axis; NaN propagates; empty is an error."},
    {"prod", reduce_op::prod, "Product over axis (None: all); integers widen as sum's do."},
    {"any", reduce_op::any, "Whether any element over axis is true (nonzero, NaN too): bool."},
    {"all", reduce_op::all, "Whether every element over axis is true (nonzero, NaN too): bool."},
    {"argmin", reduce_op::argmin,
     "Index of the first minimum over axis (None: the flat C-order index; NaN wins): int64."},
    {"argmax", reduce_op::argmax,
     "Index of the first maximum over axis (None: the flat C-order index; NaN wins): int64."},
};

// An element-wise call, with device= or without.
nb::object run(const ew_request& r, nb::handle device) {
  if (device.is_none()) return elementwise(r);
  return elementwise_on_device(r, device, nb::dict());
}

void register_binary(nb::module_& m, const entry<op_id>& e) {
  m.def(
      e.name,
      [op = e.op, name = e.name](nb::handle x1, nb::handle x2, nb::handle out, nb::handle device) {
        const operand in[] = {{x1, "x1"}, {x2, "x2"}};
        return run({op, name, in, out}, device);
      },
      "x1"_a.none(), "x2"_a.none(), nb::kw_only(), "out"_a = nb::none(), "device"_a = nb::none(),
      e.doc);
}

void register_swapped(nb::module_& m, const entry<op_id>& e) {
  m.def(
      e.name,
      [op = e.op, name = e.name](nb::handle x1, nb::handle x2, nb::handle out, nb::handle device) {
        const operand in[] = {{x2, "x2"}, {x1, "x1"}};
        if (device.is_none()) return elementwise({op, name, in, out});
        return elementwise_on_device({op, name, in, out}, device, nb::dict(), nb::handle(),
                                     nb::make_tuple(x1, x2));
      },
      "x1"_a.none(), "x2"_a.none(), nb::kw_only(), "out"_a = nb::none(), "device"_a = nb::none(),
      e.doc);
}

void register_unary(nb::module_& m, const entry<op_id>& e) {
  m.def(
      e.name,
      [op = e.op, name = e.name](nb::handle x, nb::handle out, nb::handle device) {
        const operand in[] = {{x, "x"}};
        return run({op, name, in, out}, device);
      },
      "x"_a.none(), nb::kw_only(), "out"_a = nb::none(), "device"_a = nb::none(), e.doc);
}

nb::object divide(nb::handle x1, nb::handle x2, nb::handle out, nb::handle zero_value,
                  nb::handle device) {
  const operand in[] = {{x1, "x1"}, {x2, "x2"}};
  const ew_request r{op_id::divide, "divide", in, out, zero_value};
  if (device.is_none()) return elementwise(r);
  nb::dict params;
  params["zero_value"] = zero_value;
  return elementwise_on_device(r, device, params);
}

nb::object astype(nb::handle x, nb::handle dt, nb::handle out, nb::handle device) {
  const operand in[] = {{x, "x"}};
  if (!device.is_none()) {
    nb::dict params;
    params["dtype"] = dt;
    return elementwise_on_device({op_id::copy, "astype", in, out}, device, params, dt);
  }
  const dtype target = parse_astype_dtype(dt);
  return elementwise({op_id::copy, "astype", in, out, nb::none(), &target});
}

nb::object where(nb::handle condition, nb::handle x, nb::handle y, nb::handle out,
                 nb::handle device) {
  const operand in[] = {{condition, "condition"}, {x, "x"}, {y, "y"}};
  return run({op_id::where, "where", in, out}, device);
}

nb::object clip(nb::handle x, nb::handle min, nb::handle max, nb::handle out, nb::handle device) {
  // One bound alone is one comparison; neither gives x itself (a copy, or x into out).
  const operand all[] = {{x, "x"}, {min, "min"}, {max, "max"}};
  const operand one[] = {{x, "x"}, min.is_none() ? all[2] : all[1]};
  const ops::span<const operand> x_alone(one, 1);
  ew_request r =
      min.is_none() && max.is_none() ? ew_request{op_id::copy, "clip", x_alone, out}
      : !min.is_none() && !max.is_none()
          ? ew_request{op_id::clip, "clip", all, out}
          : ew_request{min.is_none() ? op_id::minimum : op_id::maximum, "clip", one, out};
  r.clamp_int_scalars = true;  // NumPy 2: clip(uint8_array, -1, 300) is the array
  if (device.is_none()) return elementwise(r);
  return elementwise_on_device(r, device, nb::dict(), nb::handle(), nb::make_tuple(x, min, max));
}

nb::object axpy(nb::handle a, nb::handle x, nb::handle y, nb::handle out, nb::handle device) {
  const operand in[] = {{a, "a"}, {x, "x"}, {y, "y"}};
  return run({op_id::axpy, "axpy", in, out}, device);
}

void register_reduction(nb::module_& m, const entry<reduce_op>& e) {
  m.def(
      e.name,
      [op = e.op, name = e.name](nb::handle x, nb::handle axis, nb::handle keepdims, nb::handle out,
                                 nb::handle device) {
        if (device.is_none()) return reduce(op, x, axis, keepdims, out);
        nb::dict params;
        params["axis"] = axis;
        params["keepdims"] = keepdims;
        return run_pipeline(name, nb::make_tuple(x), out, device, params);
      },
      "x"_a.none(), "axis"_a.none() = nb::none(), "keepdims"_a.none() = nb::bool_(false),
      nb::kw_only(), "out"_a = nb::none(), "device"_a = nb::none(), e.doc);
}

nb::object dot_on(nb::handle x, nb::handle y, nb::handle axis, nb::handle keepdims, nb::handle out,
                  nb::handle device) {
  if (device.is_none()) return dot(x, y, axis, keepdims, out);
  nb::dict params;
  params["axis"] = axis;
  params["keepdims"] = keepdims;
  return run_pipeline("dot", nb::make_tuple(x, y), out, device, params);
}

}  // namespace

void register_ops(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("ops", "Element-wise operations and reductions.");
  for (const auto& e : binary_ops) register_binary(m, e);
  for (const auto& e : swapped_ops) register_swapped(m, e);
  m.def("divide", &divide, "x1"_a.none(), "x2"_a.none(), nb::kw_only(), "out"_a = nb::none(),
        "zero_value"_a = nb::none(), "device"_a = nb::none(),
        "x1 / x2 (true division); where x2 == 0 gives zero_value when one is given.");
  for (const auto& e : unary_ops) register_unary(m, e);
  m.def("astype", &astype, "x"_a.none(), "dtype"_a.none(), nb::kw_only(), "out"_a = nb::none(),
        "device"_a = nb::none(),
        "x converted to dtype (NumPy's unsafe casting: wraps, truncates, drops imaginary parts).");
  m.def("where", &where, "condition"_a.none(), "x"_a.none(), "y"_a.none(), nb::kw_only(),
        "out"_a = nb::none(), "device"_a = nb::none(),
        "x where condition is true, else y (condition converted to bool).");
  m.def("clip", &clip, "x"_a.none(), "min"_a.none() = nb::none(), "max"_a.none() = nb::none(),
        nb::kw_only(), "out"_a = nb::none(), "device"_a = nb::none(),
        "x limited to [min, max] element-wise: minimum(maximum(x, min), max), NaN propagating; "
        "a bound of None is no bound.");
  m.def("axpy", &axpy, "a"_a.none(), "x"_a.none(), "y"_a.none(), nb::kw_only(),
        "out"_a = nb::none(), "device"_a = nb::none(),
        "a * x + y in one pass (rounded after the multiply and after the add, as NumPy would).");
  for (const auto& e : reductions) register_reduction(m, e);
  m.def("dot", &dot_on, "x"_a.none(), "y"_a.none(), "axis"_a.none() = nb::none(),
        "keepdims"_a.none() = nb::bool_(false), nb::kw_only(), "out"_a = nb::none(),
        "device"_a = nb::none(),
        "sum(x * y) over axis (None: all), x and y broadcast together; no conjugation. For 1-d "
        "arrays the inner product; not NumPy's matrix product for 2-d ones. The result has the "
        "dtype of x * y, as np.dot's and np.vecdot's (uint8 sums wrap in uint8).");
  // The package registers its staging of device= calls here (see bind/device.hpp).
  parent.def("_set_pipeline", &set_pipeline, "run"_a,
             "Registers arrayport._pipeline.run, the staging of device= calls (internal).");
}

}  // namespace arrayport::ext
