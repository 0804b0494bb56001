// The element-wise entry of arrayport.ops, one step a function: operands, result dtype, result
// shape and out=, the type-erased call, then the launch (in place, staged, or via a temporary).
#include "bind/elementwise.hpp"

#include "bind/reduce.hpp"
#include "bind/result.hpp"

#include "array/array.hpp"
#include "array/array_internal.hpp"
#include "cuda/cuda.hpp"
#include "cuda/current_stream.hpp"
#include "common/gil.hpp"

#include <arrayport/layout.hpp>
#include <arrayport/runtime.hpp>

#include <Python.h>

#include <optional>
#include <string>
#include <string_view>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {

using ops::ops_arg;
using ops::type_id;
using ops::weak_kind;

constexpr int max_operands = ops::max_inputs + 1;

// The operands of one call, read: the inputs, then out= when given.
struct ew_operands {
  input_holder holders[max_operands];
  nb::object by_value[max_operands];  // the elements of 0-d host operands passed by value
  nb::object clamped[max_operands];   // clip's bounds brought into the result's range
  ops_arg args[max_operands];
  const ops_arg* all[max_operands];     // &args[i]
  const ops_arg* arrays[max_operands];  // the array inputs, then out=
  int n = 0;                            // inputs
  int n_arrays = 0;
  bool has_out = false;

  ops::span<const ops_arg> inputs() const { return {args, std::size_t(n)}; }
  ops::arg_list array_list() const { return {arrays, std::size_t(n_arrays)}; }
  ops::span<const input_holder> held() const { return {holders, std::size_t(n + has_out)}; }
  const ops_arg& out() const { return args[n]; }
  bool is_scalar(int i) const { return args[i].kind != weak_kind::none; }
};

// The broadcast shape of a call's result.
struct result_shape {
  std::int64_t extents[ARRAYPORT_MAX_NDIM];
  int nd = 0;
};

void read_operands(const ew_request& r, stream_handle stream, ew_operands& o) {
  o.n = static_cast<int>(r.inputs.size());
  for (int i = 0; i < o.n; ++i) {
    read_operand(r.inputs[i], r.op_name, stream, o.holders[i], o.args[i]);
    o.all[i] = &o.args[i];
    if (!o.is_scalar(i)) o.arrays[o.n_arrays++] = &o.args[i];
  }
  o.has_out = !r.out.is_none();
  if (o.has_out)
    read_operand({r.out, "out"}, r.op_name, stream, o.holders[o.n], o.args[o.n],
                 /*allow_scalar=*/false);
}

// NumPy 2 compares an integer array with a Python int that its dtype cannot hold exactly (a uint8
// array < 300 is true throughout): such an int takes part as a strong int64, not an OverflowError
// (one beyond int64 still raises). clip takes a bound beyond the range that cannot act as the
// range's end.
void widen_unfitting_ints(const ew_request& r, ew_operands& o) {
  if ((r.op < ops::op_id::equal || r.op > ops::op_id::less_equal) && !r.clamp_int_scalars) return;
  if (r.clamp_int_scalars && o.is_scalar(0))
    o.args[0].strong = true;  // np.clip's x is an array (np.asanyarray(x)), strong as any
  bool weak_int = false;
  for (int i = 0; i < o.n; ++i) weak_int |= o.args[i].kind == weak_kind::int_ && !o.args[i].strong;
  if (!weak_int) return;
  const type_id t = ops::result_type(r.op, r.op_name, ops::arg_list(o.all, std::size_t(o.n)));
  if (t != type_id::uint8 && t != type_id::int32 && !(r.clamp_int_scalars && t == type_id::int64))
    return;
  const long long lo = t == type_id::uint8 ? 0 : t == type_id::int32 ? INT32_MIN : INT64_MIN;
  const long long hi = t == type_id::uint8 ? 255 : t == type_id::int32 ? INT32_MAX : INT64_MAX;
  for (int i = 0; i < o.n; ++i) {
    if (o.args[i].kind != weak_kind::int_ || o.args[i].strong) continue;
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o.holders[i].scalar, &overflow);
    if (v == -1 && PyErr_Occurred()) throw nb::python_error();
    if (!overflow && v >= lo && v <= hi) continue;
    if (!r.clamp_int_scalars) {
      o.args[i].strong = true;
      continue;
    }
    // A bound that cannot act (min below the range, max above it) is the range's end; the other
    // way it is the scalar conversion's OverflowError, as in NumPy.
    const bool below = overflow < 0 || (!overflow && v < lo);
    const std::string_view bound(o.args[i].name);
    if ((bound != "min" && bound != "max") || below != (bound == "min")) continue;
    o.clamped[i] = nb::steal(PyLong_FromLongLong(below ? lo : hi));
    if (!o.clamped[i].is_valid()) throw nb::python_error();
    o.holders[i].scalar = o.clamped[i].ptr();
  }
}

// The dtype the kernel computes in: NEP 50 over the inputs (where's condition takes no part),
// or astype's target, which the kernel table must have.
type_id compute_type(const ew_request& r, ew_operands& o) {
  widen_unfitting_ints(r, o);
  const int first = r.op == ops::op_id::where ? 1 : 0;
  const ops::arg_list typed(o.all + first, std::size_t(o.n - first));
  if (!r.cast_to) return ops::result_type(r.op, r.op_name, typed);
  const type_id t = ops::to_type_id(*r.cast_to);
  if (t == ops::invalid_type || static_cast<int>(t) >= ops::elementwise_type_count)
    throw type_error(std::string(r.op_name) + ": dtype " + arrayport::detail::describe(*r.cast_to) +
                     " is not supported; expected one of bool, uint8, int32, int64, float16, "
                     "bfloat16, float32, float64, complex64, complex128");
  ops::result_type(ops::op_id::copy, r.op_name, typed);  // checks the input's dtype
  return t;
}

void check_condition(const ew_request& r, const ew_operands& o) {
  if (r.op == ops::op_id::where && !o.is_scalar(0) &&
      ops::to_type_id(o.args[0].view.dtype()) == ops::invalid_type)
    throw type_error(std::string(r.op_name) + ": argument 'condition' has unsupported dtype " +
                     arrayport::detail::describe(o.args[0].view.dtype()));
}

// a * x + y as NumPy computes it is fused when the product has the result's dtype already;
// otherwise (and for two Python scalars, which multiply in Python) it takes two steps.
bool axpy_takes_two_steps(const ew_request& r, const ew_operands& o, type_id compute) {
  if (r.op != ops::op_id::axpy) return false;
  if (o.is_scalar(0) && o.is_scalar(1)) return true;
  return ops::result_type(ops::op_id::multiply, r.op_name, ops::arg_list(o.all, 2)) != compute;
}

// The product first, in its own dtype (where it may wrap or round), then the sum. Two Python
// scalars multiply as `a * x` does (exactly, into a Python scalar).
nb::object axpy_in_two_steps(const ew_request& r, const ew_operands& o) {
  nb::object product;
  if (o.is_scalar(0) && o.is_scalar(1)) {
    product = nb::steal(PyNumber_Multiply(r.inputs[0].obj.ptr(), r.inputs[1].obj.ptr()));
    if (!product.is_valid()) throw nb::python_error();
  } else {
    const ops::span<const operand> factors(r.inputs.data(), 2);
    product = elementwise({ops::op_id::multiply, r.op_name, factors, nb::none()});
  }
  const operand sum[] = {{product, "a * x"}, r.inputs[2]};
  return elementwise({ops::op_id::add, r.op_name, sum, r.out});
}

// A 0-d operand in pageable host memory (a NumPy scalar: np.float32(2)) beside memory only the
// GPU can read travels by value, as PyTorch passes a 0-d CPU tensor. Its dtype has already taken
// part in the promotion (strong, NEP 50); its element converts exactly to the compute dtype.
void pass_host_scalars_by_value(ew_operands& o) {
  bool device_only = o.has_out && o.out().view.kind() == memory_kind::device;
  for (int i = 0; i < o.n_arrays; ++i)
    device_only |= o.arrays[i]->view.kind() == memory_kind::device;
  if (!device_only) return;
  o.n_arrays = 0;
  for (int i = 0; i < o.n; ++i) {
    ops_arg& a = o.args[i];
    if (!o.is_scalar(i) && a.view.ndim() == 0 && a.view.kind() == memory_kind::host) {
      const auto* p = static_cast<const unsigned char*>(a.view.data());
      o.by_value[i] = element_object(p, a.view.dtype());
      o.holders[i].scalar = o.by_value[i].ptr();
      const dtype dt = a.view.dtype();
      a.kind = dt == dtypes::bool_ ? weak_kind::bool_
               : dt.is_complex()   ? weak_kind::complex_
               : dt.is_floating()  ? weak_kind::float_
                                   : weak_kind::int_;
      continue;
    }
    if (!o.is_scalar(i)) o.arrays[o.n_arrays++] = &a;
  }
}

// The broadcast shape of the array inputs; with out=, out's shape, which they must broadcast
// to (as in NumPy), and out must have the result dtype exactly and be writable.
result_shape shape_of_result(const ew_request& r, ew_operands& o, dtype out_dt) {
  result_shape s;
  s.nd = ops::broadcast_shapes(r.op_name, o.array_list(), s.extents);
  if (!o.has_out) return s;
  const strided_view& ov = o.out().view;
  const int off = ov.ndim() - s.nd;
  bool fits = off >= 0;
  for (int d = 0; fits && d < s.nd; ++d)
    fits = s.extents[d] == 1 || s.extents[d] == ov.extent(off + d);
  if (!fits)
    throw value_error(std::string(r.op_name) + ": out: expected shape " +
                      arrayport::detail::tuple_string(s.extents, s.nd) + ", got " +
                      arrayport::detail::tuple_string(ov.c_view().shape, ov.ndim()));
  if (ov.dtype() != out_dt)
    throw type_error(std::string(r.op_name) + ": out: expected dtype " +
                     std::string(out_dt.name()) + ", got " +
                     arrayport::detail::describe(ov.dtype()));
  if (ov.readonly())
    throw value_error(std::string(r.op_name) +
                      ": out: expected a writable array, got a read-only one");
  s.nd = ov.ndim();
  for (int d = 0; d < s.nd; ++d) s.extents[d] = ov.extent(d);
  o.arrays[o.n_arrays++] = &o.out();
  return s;
}

// The type-erased call without its output and layout: op, dtype and the scalars converted.
void start_call(ops::ew_call& call, const ew_request& r, const ew_operands& o, type_id compute) {
  call.op = r.op;
  call.compute = compute;
  call.n_inputs = o.n;
  for (int i = 0; i < o.n; ++i)
    if (o.is_scalar(i))
      scalar_operand(o.holders[i].scalar, ops::to_dtype(ops::arg_type(r.op, i, compute)),
                     call.in[i].scalar, r.op_name, r.inputs[i].name);
  call.params.has_value = !r.zero_value.is_none();
  if (call.params.has_value)
    scalar_operand(r.zero_value.ptr(), ops::to_dtype(compute), call.params.value, r.op_name,
                   nullptr);
}

// NumPy refuses integers to negative integer powers (its loop raises on meeting one), so a signed
// integer power is checked before the kernel: a Python int exponent by value, an array through
// min (on the GPU a reduction waited for). An empty result has no element to raise on.
void refuse_negative_exponents(const ew_request& r, const ew_operands& o, type_id compute,
                               const result_shape& s) {
  if (r.op != ops::op_id::power || (compute != type_id::int32 && compute != type_id::int64)) return;
  for (int d = 0; d < s.nd; ++d)
    if (s.extents[d] == 0) return;
  const ops_arg& e = o.args[1];
  bool negative = false;
  if (o.is_scalar(1)) {
    // Converted to the compute dtype already (start_call): a value out of range has raised.
    negative = e.kind == weak_kind::int_ && PyLong_Check(o.holders[1].scalar) &&
               PyLong_AsLongLong(o.holders[1].scalar) < 0;
  } else {
    const type_id t = ops::to_type_id(e.view.dtype());
    if (t != type_id::int32 && t != type_id::int64) return;  // bool and uint8: none negative
    const nb::object least =
        reduce(ops::reduce_op::min, r.inputs[1].obj, nb::none(), nb::bool_(false), nb::none());
    negative = nb::cast<long long>(least.attr("item")()) < 0;
  }
  if (negative)
    throw value_error(std::string(r.op_name) +
                      ": integers to negative integer powers are not allowed (NumPy refuses "
                      "them too; use a float exponent)");
}

// out= overlapping an input other than element for element (out=x[1:] of add(x[:-1], 1)), or
// an out= some of whose elements are one (a zero stride) over an input: the result goes to a
// temporary first, then into out, as NumPy does.
bool through_temporary(const ew_operands& o) {
  if (!o.has_out) return false;
  const arrayport_view_t& out = o.out().view.c_view();
  // Strides that do not nest may reach one element twice (surely so for a zero stride).
  const bool self_overlapping = !strides_nest(out.shape, out.strides, out.ndim);
  for (int i = 0; i < o.n; ++i)
    if (!o.is_scalar(i) && overlaps(o.args[i].view, o.out().view) &&
        (self_overlapping || !same_elements(o.args[i].view, o.out().view)))
      return true;
  return false;
}

// The result's axes from outermost to innermost in memory, as NumPy's order 'K' lays them out:
// those of the first input of the result's full shape (no broadcast or zero stride), when they
// are not in C order, so that a transposed input runs through the kernel as one flat run. False
// for C order, and for copy and astype, whose results are C-contiguous.
bool result_order(const ew_request& r, const ew_operands& o, const result_shape& s,
                  int (&order)[ARRAYPORT_MAX_NDIM]) {
  if (r.op == ops::op_id::copy || s.nd < 2) return false;
  for (int d = 0; d < s.nd; ++d)
    if (s.extents[d] == 0) return false;
  for (int i = 0; i < o.n; ++i) {
    if (o.is_scalar(i)) continue;
    const strided_view& v = o.args[i].view;
    bool full = v.ndim() == s.nd;
    for (int d = 0; full && d < s.nd; ++d)
      full = v.extent(d) == s.extents[d] && (v.extent(d) == 1 || v.stride(d) != 0);
    if (full) return axis_order(v.c_view().shape, v.c_view().strides, s.nd, order);
  }
  return false;
}

void run_call(ops::ew_call& call, const ops::placement& where, ops::stream_ref stream) {
  if (release_gil(where, call.size)) {
    gil_release unlocked;
    ops::launch(call, where, stream);
  } else {
    ops::launch(call, where, stream);
  }
}

// The staged path's placement: every array operand pageable host memory, and the current
// stream one of `device`.
std::optional<ops::placement> staged_placement(const ew_operands& o, int device,
                                               const current_stream_state& cs) {
  if (o.n_arrays == 0) return std::nullopt;
  for (int i = 0; i < o.n_arrays; ++i)
    if (o.arrays[i]->view.kind() != memory_kind::host) return std::nullopt;
  if ((cs.device >= 0 ? cs.device : runtime::stream_device(cs.handle, device)) != device)
    return std::nullopt;
  ops::placement where;
  where.on_gpu = true;
  where.out_kind = memory_kind::pinned;
  where.device = device;
  return where;
}

// Every array input C-contiguous with the result's shape (no broadcasting, nothing strided).
bool inputs_fit_staging(const ew_operands& o, const result_shape& s) {
  for (int i = 0; i < o.n; ++i) {
    if (o.is_scalar(i)) continue;
    const strided_view& v = o.args[i].view;
    bool same = v.ndim() == s.nd && c_contiguous(v);
    for (int d = 0; same && d < s.nd; ++d) same = v.extent(d) == s.extents[d];
    if (!same) return false;
  }
  return true;
}

// One flat dimension in which every array input is contiguous.
bool layout_fits_staging(const ops::ew_call& call, const ew_operands& o) {
  if (call.layout.ndim != 1) return false;
  for (int i = 0; i < o.n; ++i)
    if (call.in[i].data && call.layout.strides[1 + i][0] !=
                               static_cast<std::int64_t>(o.args[i].view.dtype().itemsize()))
      return false;
  return true;
}

}  // namespace

nb::object elementwise(const ew_request& r) {
  const current_stream_state cs = current_stream();
  const ops::stream_ref stream{cs.handle, cs.device};
  ew_operands o;
  read_operands(r, cs.handle, o);
  const type_id compute = compute_type(r, o);
  if (axpy_takes_two_steps(r, o, compute)) return axpy_in_two_steps(r, o);
  const dtype out_dt = ops::to_dtype(ops::result_storage_type(r.op, compute));
  check_condition(r, o);
  pass_host_scalars_by_value(o);
  const result_shape s = shape_of_result(r, o, out_dt);
  const ops::placement where = ops::place(r.op_name, o.array_list(), stream);
  ops::ew_call call;
  start_call(call, r, o, compute);
  refuse_negative_exponents(r, o, compute, s);

  if (o.has_out && where.on_gpu)
    require_distinct_out_elements(r.op_name, o.out().view,
                                  "on the GPU, the writes to one element race (pass a copy)");
  const bool via_temporary = through_temporary(o);
  output_holder result;
  strided_view out_view;
  if (o.has_out && !via_temporary) {
    out_view = o.out().view;
  } else {
    int order[ARRAYPORT_MAX_NDIM];
    allocate_output(result, r.op_name, out_dt, s.extents, s.nd, where, cs.handle,
                    result_order(r, o, s, order) ? order : nullptr);
    result.c.device = result.storage.dlpack_device();
    out_view = strided_view(result.c);
  }
  call.out = static_cast<char*>(out_view.data());
  ops::build_layout(call, out_view, s.extents, s.nd, o.inputs());
  run_call(call, where, stream);
  if (via_temporary) {
    const nb::object temporary = make_owned_array(std::move(result.storage), out_dt, s.extents,
                                                  s.nd, current_stream_object(), result.c.strides);
    const operand source[] = {{temporary, "x"}};
    elementwise({ops::op_id::copy, r.op_name, source, r.out});
  }
  wait_before_release(o.held(), where, cs.handle);
  if (o.has_out) return nb::borrow(r.out);
  return make_owned_array(std::move(result.storage), out_dt, s.extents, s.nd,
                          current_stream_object(), result.c.strides);
}

nb::object elementwise_staged(const ew_request& r, int device, std::int64_t chunk_bytes) {
  const current_stream_state cs = current_stream();
  ew_operands o;
  read_operands(r, cs.handle, o);
  const type_id compute = compute_type(r, o);
  if (axpy_takes_two_steps(r, o, compute)) return nb::object();  // _pipeline.run takes it
  const type_id out_t = ops::result_storage_type(r.op, compute);
  const dtype out_dt = ops::to_dtype(out_t);
  check_condition(r, o);
  const result_shape s = shape_of_result(r, o, out_dt);
  const std::optional<ops::placement> where = staged_placement(o, device, cs);
  if (!where) return nb::object();
  ops::ew_call call;
  start_call(call, r, o, compute);
  refuse_negative_exponents(r, o, compute, s);
  // Checked before the pinned result is allocated; it is allocated, and on an error released,
  // with the device asked for current.
  if (!inputs_fit_staging(o, s)) return nb::object();
  const runtime::device_guard guard(device);
  output_holder result;
  allocate_output(result, r.op_name, out_dt, s.extents, s.nd, *where, cs.handle);
  result.c.device = result.storage.dlpack_device();
  const strided_view out_view(result.c);
  call.out = static_cast<char*>(out_view.data());
  ops::build_layout(call, out_view, s.extents, s.nd, o.inputs());
  if (!layout_fits_staging(call, o)) return nb::object();
  {
    gil_release unlocked;
    ops::launch_staged(call, *where, chunk_bytes, {cs.handle, cs.device});
  }
  nb::object out =
      make_owned_array(std::move(result.storage), out_dt, s.extents, s.nd, current_stream_object());
  if (out_t == type_id::bfloat16) return out;  // NumPy has no bfloat16
  return nb::module_::import_("numpy").attr("asarray")(out);
}

}  // namespace arrayport::ext
