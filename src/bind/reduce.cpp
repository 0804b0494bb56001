// The reductions of arrayport.ops: arguments, out=, and the launch.
#include "bind/reduce.hpp"

#include "bind/elementwise.hpp"
#include "bind/operands.hpp"
#include "bind/result.hpp"

#include "array/array.hpp"
#include "array/array_internal.hpp"
#include "cuda/cuda.hpp"
#include "cuda/current_stream.hpp"
#include "common/arguments.hpp"
#include "common/gil.hpp"

#include <arrayport/layout.hpp>
#include <arrayport/python/limited_api.hpp>

#include <Python.h>

#include <algorithm>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {

using ops::ops_arg;
using ops::type_id;

// axis: None (all), an int (anything with __index__ but a bool, as NumPy takes), or a tuple of
// them; negative counts from the end. Each error names the argument, the expected and the given.
std::vector<int> parse_axes(nb::handle axis, int ndim, const char* op_name) {
  std::vector<int> axes;
  if (axis.is_none()) {
    for (int d = 0; d < ndim; ++d) axes.push_back(d);
    return axes;
  }
  const std::string name = std::string(op_name) + ": axis";
  const bool is_tuple = PyTuple_Check(axis.ptr());
  std::vector<long long> given;
  auto one = [&](nb::handle h) {
    PyObject* o = h.ptr();
    if (PyBool_Check(o) || !PyIndex_Check(o))
      throw type_error(name + ": expected None, an int or a tuple of ints, got " +
                       (is_tuple ? "a tuple holding " : "") + python::detail::type_name(o));
    // An __index__ that raises: its message, after the argument's name.
    const nb::object i = index_arg(o, name + ": ", "None, an int or a tuple of ints");
    int overflow = 0;
    const long long a = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (a == -1 && PyErr_Occurred()) throw nb::python_error();
    if (overflow || a < -ndim || a >= ndim)
      throw value_error(name + ": " + nb::str(i).c_str() + " is out of bounds for an array of " +
                        std::to_string(ndim) + " dimension" + (ndim == 1 ? "" : "s") +
                        (ndim == 0 ? " (it has no axes)"
                                   : " (expected " + std::to_string(-ndim) + " to " +
                                         std::to_string(ndim - 1) + ")"));
    const int d = static_cast<int>(a < 0 ? a + ndim : a);
    const auto seen = std::find(axes.begin(), axes.end(), d);
    if (seen != axes.end())
      throw value_error(name + ": expected distinct axes, got axis " + std::to_string(d) +
                        " twice (as " + std::to_string(given[std::size_t(seen - axes.begin())]) +
                        " and " + std::to_string(a) + ")");
    axes.push_back(d);
    given.push_back(a);
  };
  if (is_tuple) {
    for (nb::handle h : nb::borrow<nb::tuple>(axis)) one(h);
  } else {
    one(axis);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// keepdims: a bool (Python's or NumPy's); anything else is a TypeError naming it, not a truth
// test.
bool parse_keepdims(nb::handle keepdims, const char* op_name) {
  PyObject* o = keepdims.ptr();
  if (o == Py_True) return true;
  if (o == Py_False) return false;
  const std::string type = python::limited::tp_name(Py_TYPE(o));
  if (type == "numpy.bool" || type == "numpy.bool_") {
    const int truth = PyObject_IsTrue(o);
    if (truth < 0) throw nb::python_error();
    return truth != 0;
  }
  throw type_error(std::string(op_name) + ": keepdims: expected a bool, got " +
                   python::detail::type_name(o));
}

// A reduction's out=: the result's shape and dtype exactly (no casting), writable.
void check_reduce_out(const char* op_name, const strided_view& out, dtype out_dt,
                      const std::vector<std::int64_t>& shape) {
  const int nd = static_cast<int>(shape.size());
  bool same = out.ndim() == nd;
  for (int d = 0; same && d < nd; ++d) same = out.extent(d) == shape[std::size_t(d)];
  if (!same)
    throw value_error(std::string(op_name) + ": out: expected shape " +
                      arrayport::detail::tuple_string(shape.data(), nd) + ", got " +
                      arrayport::detail::tuple_string(out.c_view().shape, out.ndim()));
  if (out.dtype() != out_dt)
    throw type_error(std::string(op_name) + ": out: expected dtype " + std::string(out_dt.name()) +
                     ", got " + arrayport::detail::describe(out.dtype()));
  if (out.readonly())
    throw value_error(std::string(op_name) +
                      ": out: expected a writable array, got a read-only one");
  // NumPy accumulates into such an out= in its loop's order; arrayport would write each result.
  require_distinct_out_elements(op_name, out,
                                "a reduction's result there depends on the order of its writes");
}

// The operands of a reduction: its N - 1 inputs, then out= when given.
template <int N>
struct reduce_operands {
  input_holder holders[N];
  ops_arg args[N];
  const ops_arg* all[N];
  int n = N - 1;
  bool has_out = false;

  reduce_operands() noexcept {
    for (int i = 0; i < N; ++i) all[i] = &args[i];
  }

  ops::arg_list inputs() const { return {all, std::size_t(n)}; }
  ops::arg_list with_out() const { return {all, std::size_t(n + has_out)}; }
  ops::span<const input_holder> held() const { return {holders, std::size_t(n + has_out)}; }
  const ops_arg* out() const { return has_out ? &args[n] : nullptr; }
};

template <int N>
void read_out(reduce_operands<N>& o, nb::handle out, const char* op_name, stream_handle stream) {
  o.has_out = !out.is_none();
  if (o.has_out)
    read_operand({out, "out"}, op_name, stream, o.holders[o.n], o.args[o.n],
                 /*allow_scalar=*/false);
}

// Runs the reduction into out (when it is C-contiguous and no input overlaps it) or into a new
// array, copied into out when there is one.
template <int N>
nb::object finish_reduce(ops::reduce_call& call, const char* op_name, const ops::placement& where,
                         const current_stream_state& cs, dtype out_dt,
                         const std::vector<std::int64_t>& shape, const reduce_operands<N>& o,
                         nb::handle out_obj) {
  const ops_arg* out = o.out();
  bool direct = out && c_contiguous(out->view);
  for (int i = 0; direct && i < o.n; ++i) direct = !overlaps(o.args[i].view, out->view);
  output_holder result;
  if (direct) {
    call.out = static_cast<char*>(out->view.data());
  } else {
    allocate_output(result, op_name, out_dt, shape.data(), static_cast<int>(shape.size()), where,
                    cs.handle);
    call.out = static_cast<char*>(result.storage.data());
  }
  if (release_gil(where, call.n_out * call.len)) {
    gil_release unlocked;
    ops::launch(call, where, {cs.handle, cs.device});
  } else {
    ops::launch(call, where, {cs.handle, cs.device});
  }
  if (direct) return nb::borrow(out_obj);
  nb::object r =
      make_owned_array(std::move(result.storage), out_dt, shape, current_stream_object());
  if (!out) return r;
  const operand source[] = {{r, "x"}};
  elementwise({ops::op_id::copy, op_name, source, out_obj});
  return nb::borrow(out_obj);
}

}  // namespace

const char* reduce_name(ops::reduce_op op) noexcept {
  switch (op) {
    case ops::reduce_op::sum: return "sum";
    case ops::reduce_op::mean: return "mean";
    case ops::reduce_op::min: return "min";
    case ops::reduce_op::max: return "max";
    case ops::reduce_op::prod: return "prod";
    case ops::reduce_op::any: return "any";
    case ops::reduce_op::all: return "all";
    case ops::reduce_op::argmin: return "argmin";
    case ops::reduce_op::argmax: return "argmax";
    default: return "dot";
  }
}

nb::object reduce(ops::reduce_op op, nb::handle x, nb::handle axis, nb::handle keepdims_obj,
                  nb::handle out_obj) {
  const char* op_name = reduce_name(op);
  const bool keepdims = parse_keepdims(keepdims_obj, op_name);
  const current_stream_state cs = current_stream();
  reduce_operands<2> o;
  read_operand({x, "x"}, op_name, cs.handle, o.holders[0], o.args[0], /*allow_scalar=*/false);
  const strided_view& in = o.args[0].view;
  const type_id t = ops::to_type_id(in.dtype());
  const type_id rt = (t == ops::invalid_type || int(t) >= ops::elementwise_type_count)
                         ? ops::invalid_type
                         : ops::reduce_result_type(op, t);
  if (rt == ops::invalid_type)
    throw type_error(std::string(op_name) + ": not supported for dtype " +
                     arrayport::detail::describe(in.dtype()));
  // As NumPy's: argmin and argmax take one axis or None.
  if (ops::is_arg_reduce(op) && PyTuple_Check(axis.ptr()))
    throw type_error(std::string(op_name) + ": axis: expected None or an int, got a tuple");
  const std::vector<int> axes = parse_axes(axis, in.ndim(), op_name);
  read_out(o, out_obj, op_name, cs.handle);
  const ops::placement where = ops::place(op_name, o.with_out(), {cs.handle, cs.device});
  ops::reduce_call call;
  call.op = op;
  call.in_type = t;
  const std::vector<std::int64_t> shape = ops::build_reduce(call, in, axes, keepdims);
  const dtype out_dt = ops::to_dtype(rt);
  if (o.has_out) check_reduce_out(op_name, o.out()->view, out_dt, shape);
  // As NumPy: a reduction over nothing has no value, even into an empty result.
  if (call.len == 0 && (op == ops::reduce_op::min || op == ops::reduce_op::max))
    throw value_error(std::string(op_name) + ": zero-size array to reduction operation " + op_name +
                      " which has no identity");
  if (call.len == 0 && ops::is_arg_reduce(op))
    throw value_error(std::string(op_name) + ": attempt to get " + op_name +
                      " of an empty sequence");
  nb::object r = finish_reduce(call, op_name, where, cs, out_dt, shape, o, out_obj);
  wait_before_release(o.held(), where, cs.handle);
  return r;
}

nb::object dot(nb::handle x, nb::handle y, nb::handle axis, nb::handle keepdims_obj,
               nb::handle out_obj) {
  const bool keepdims = parse_keepdims(keepdims_obj, "dot");
  const current_stream_state cs = current_stream();
  reduce_operands<3> o;
  read_operand({x, "x"}, "dot", cs.handle, o.holders[0], o.args[0], false);
  read_operand({y, "y"}, "dot", cs.handle, o.holders[1], o.args[1], false);
  const type_id rt = ops::result_type(ops::op_id::multiply, "dot", o.inputs());
  const std::vector<std::int64_t> full = ops::broadcast_shapes("dot", o.inputs());
  const std::vector<int> axes = parse_axes(axis, static_cast<int>(full.size()), "dot");
  read_out(o, out_obj, "dot", cs.handle);
  const ops::placement where = ops::place("dot", o.with_out(), {cs.handle, cs.device});
  ops::reduce_call call;
  call.op = ops::reduce_op::dot;
  call.in_type = rt;
  const std::vector<std::int64_t> shape =
      ops::build_reduce(call, o.args[0].view, o.args[1].view, full, axes, keepdims);
  const dtype out_dt = ops::to_dtype(rt);
  if (o.has_out) check_reduce_out("dot", o.out()->view, out_dt, shape);
  nb::object r = finish_reduce(call, "dot", where, cs, out_dt, shape, o, out_obj);
  wait_before_release(o.held(), where, cs.handle);
  return r;
}

}  // namespace arrayport::ext
