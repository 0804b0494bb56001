// arrayport._core.ops: the Python entry points of the kernel library (nanobind). Reads the
// arguments, checks them, allocates the output and hands one type-erased call to the dispatcher.
#include "dispatch.hpp"
#include "kernels.hpp"
#include "python.hpp"

#include "array/array.hpp"
#include "array/array_internal.hpp"
#include "cuda/cuda.hpp"
#include "cuda/current_stream.hpp"
#include "common/gil.hpp"
#include "common/scalars.hpp"

#include <arrayport/buffer.hpp>
#include <arrayport/python/acquire.hpp>
#include <arrayport/runtime.hpp>

#include <nanobind/nanobind.h>

#include <Python.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {

using ops::ops_arg;
using ops::type_id;
using ops::weak_kind;

// Keeps what an input's view points to alive for the call: the acquired producer (its buffer,
// DLPack tensor or reference), and the label the bridge's messages name it by.
struct input_holder {
  // Engaged only for operands taken through the bridge: an empty `acquired` zero-fills some
  // 400 bytes, which every Array and scalar operand (and every unused slot) would pay for.
  std::optional<python::acquired> held;
  char label[96];              // "<op>: argument '<name>'", written only for the consume bridge
  PyObject* scalar = nullptr;  // borrowed: the Python scalar, converted once the dtype is known
};

// Writes "<op_name>: argument '<name>'" into `out` without touching the heap (every operand that
// is not an Array or a scalar needs it as the bridge's name for the argument).
void write_label(char (&out)[96], const char* op_name, const char* name) {
  std::size_t at = 0;
  auto put = [&](const char* text) {
    for (; *text && at + 1 < sizeof out; ++text) out[at++] = *text;
  };
  put(op_name);
  put(": argument '");
  put(name);
  put("'");
  out[at] = '\0';
}

// The one place that turns a Python object into an operand: an arrayport.Array (its view read
// directly: the bridge would take the same view, at the price of a type lookup and a reference),
// a Python scalar (bool, int, float, complex: weak in NEP 50's sense), or any other array through
// the consume bridge (buffer protocol, DLPack, __cuda_array_interface__), with its checks and
// messages. The producer's pending work is ordered before the current stream.
// GPU memory without a usable device (a view of a foreign claim) never reaches a CPU kernel.
void require_reachable_operand(const ops_arg& arg, input_holder& h, const char* op_name,
                               const char* name, PyObject* o) {
  const memory_kind kind = arg.view.kind();
  if (runtime::is_reachable(kind)) return;
  write_label(h.label, op_name, name);
  throw no_device_error(std::string(h.label) + ": expected memory the CPU can read (this machine has no "
                        "usable CUDA device: " + runtime::probe().reason + "), got " +
                        std::string(to_string(kind)) + " memory (from " +
                        python::detail::type_name(o) + ")");
}

void ops_input(nb::handle obj, const char* op_name, const char* name, input_holder& h,
               ops_arg& arg, bool allow_scalar = true) {
  arg.name = name;
  arg.kind = weak_kind::none;
  arg.strong = arg.ordered = false;
  PyObject* o = obj.ptr();
  if (is_array(o)) {
    arg.view = strided_view(reinterpret_cast<array_object*>(o)->view);
    require_reachable_operand(arg, h, op_name, name, o);
    arg.ordered = true;
    return;
  }
  if (allow_scalar) {
    // NEP 50: bool, int, float and complex themselves are weak. NumPy's scalars are 0-d arrays
    // (np.float64 is a float subclass): the buffer protocol below takes them, strong. Other
    // subclasses (an IntEnum) are strong too, of their kind's default dtype, as in NumPy 2.
    weak_kind k = weak_kind::none;
    bool strong = false;
    if (PyBool_Check(o)) k = weak_kind::bool_;
    else if (PyLong_CheckExact(o)) k = weak_kind::int_;
    else if (PyFloat_CheckExact(o)) k = weak_kind::float_;
    else if (PyComplex_CheckExact(o)) k = weak_kind::complex_;
    else if (!PyObject_CheckBuffer(o)) {
      strong = true;
      if (PyLong_Check(o)) k = weak_kind::int_;
      else if (PyFloat_Check(o)) k = weak_kind::float_;
      else if (PyComplex_Check(o)) k = weak_kind::complex_;
    }
    if (k != weak_kind::none) {
      arg.kind = k;
      arg.strong = strong;
      h.scalar = o;
      return;
    }
  }
  write_label(h.label, op_name, name);
  python::constraints c;
  c.name = h.label;
  python::acquire_options opts;
  opts.stream = current_stream().handle;
  opts.stream_given = true;
  opts.call_scoped = true;  // released before the op returns to Python
  try {
    h.held.emplace(python::acquire(o, c, opts));
  } catch (const python::not_an_array&) {
    throw type_error(std::string(h.label) + ": expected an arrayport.Array, any array (buffer protocol, "
                     "__dlpack__ or __cuda_array_interface__)" +
                     (allow_scalar ? " or a Python scalar" : "") + ", got " +
                     python::detail::type_name(o));
  }
  arg.view = h.held->view();
  require_reachable_operand(arg, h, op_name, name, o);
}

// A scalar operand (or zero_value) as one element of `dt`, with scalar_to_bytes's checks; its
// messages name its own parameter ("value: ..."), so they are renamed after the op's argument.
// `arg` names an operand ("<op>: argument '<arg>'"), or is null for zero_value; the message is
// built only on failure (this runs for every scalar operand).
void ops_scalar(PyObject* value, dtype dt, unsigned char* out, const char* op_name,
                const char* arg) {
  try {
    scalar_to_bytes(value, dt, out);
  } catch (nb::python_error& e) {
    std::string msg = nb::str(e.value()).c_str();
    if (msg.rfind("value: ", 0) == 0) msg.erase(0, 7);
    const std::string what = std::string(op_name) +
                             (arg ? std::string(": argument '") + arg + "'" : ": zero_value");
    const nb::object type = nb::borrow(e.type());
    PyErr_SetString(type.ptr(), (what + ": " + msg).c_str());
    throw nb::python_error();
  }
}

// Foreign arrays are released when the op returns, but a GPU kernel reads them (and writes a
// foreign out=) later, and their producer (CuPy's or PyTorch's caching allocator) could hand the
// memory out again meanwhile: wait for the op's stream first, as assignments from foreign arrays do.
void wait_before_release(const input_holder* hs, int n, const ops::placement& where) {
  if (!where.on_gpu) return;
  for (int i = 0; i < n; ++i)
    if (hs[i].held) {
      gil_release unlocked;
      runtime::stream_synchronize(current_stream().handle);
      return;
    }
}

std::string shape_str(const std::int64_t* s, int n) {
  std::string r = "(";
  for (int i = 0; i < n; ++i) r += std::to_string(s[i]) + (n == 1 ? "," : i + 1 < n ? ", " : "");
  return r + ")";
}

// The bytes [lo, hi) a view touches; false when it has no element.
bool byte_range(const strided_view& v, std::uintptr_t& lo, std::uintptr_t& hi) {
  const auto item = static_cast<std::int64_t>(v.dtype().itemsize());
  auto low = reinterpret_cast<std::intptr_t>(v.data()), high = low;
  for (int d = 0; d < v.ndim(); ++d) {
    const std::int64_t e = v.extent(d);
    if (e == 0) return false;
    const std::int64_t step = (e - 1) * v.stride(d) * item;  // fits: acquire checked the span
    (step > 0 ? high : low) += static_cast<std::intptr_t>(step);
  }
  lo = static_cast<std::uintptr_t>(low);
  hi = static_cast<std::uintptr_t>(high) + static_cast<std::uintptr_t>(item);
  return true;
}

bool overlaps(const strided_view& a, const strided_view& b) {
  std::uintptr_t alo, ahi, blo, bhi;
  return byte_range(a, alo, ahi) && byte_range(b, blo, bhi) && alo < bhi && blo < ahi;
}

// An element-wise op may write out while it reads `in` only when every element is read from the
// place it is written to: the same data pointer and dtype size, and in's strides (broadcast
// dimensions: 0) equal to out's wherever out has more than one element.
bool same_elements(const strided_view& in, const strided_view& out) {
  if (in.data() != out.data() || in.dtype().itemsize() != out.dtype().itemsize()) return false;
  const int off = out.ndim() - in.ndim();
  if (off < 0) return false;
  for (int d = 0; d < out.ndim(); ++d) {
    if (out.extent(d) == 1) continue;
    const std::int64_t s = d < off || in.extent(d - off) == 1 ? 0 : in.stride(d - off);
    if (s != out.stride(d)) return false;
  }
  return true;
}

bool c_contiguous(const strided_view& v) {
  return is_contiguous(v.c_view().shape, v.c_view().strides, v.ndim(), true);
}

// astype's dtype=, read as arrayport.empty reads it, with messages that name the function.
dtype parse_ops_dtype(nb::handle d) {
  if (d.is_none())
    throw type_error("astype: dtype: expected a dtype name, a NumPy dtype or a Python number "
                     "type, got None");
  try {
    return parse_dtype(d);
  } catch (const type_error& e) {
    throw type_error(std::string("astype: ") + e.what());
  } catch (const value_error& e) {
    throw value_error(std::string("astype: ") + e.what());
  }
}

// A freshly allocated C-contiguous output and its view.
struct output_holder {
  buffer storage;
  arrayport_view_t c{};
  std::int64_t extents[2 * ARRAYPORT_MAX_NDIM];
};

// Broadcasting can make a result far larger than any input (shapes (2^40, 1) and (1, 2^40) of
// zero-stride inputs): its size is checked before anything is computed from it.
void allocate_output(output_holder& h, const char* op_name, dtype dt, const std::int64_t* shape,
                     int nd, const ops::placement& where) {
  // nbytes (layout.hpp): count * itemsize, checked.
  const layout_info l = measure_layout(shape, nullptr, nd, static_cast<std::int64_t>(dt.itemsize()));
  if (!l.ok())
    throw value_error(std::string(op_name) + ": the result would have shape " +
                      shape_str(shape, nd) + " of " + std::string(dt.name()) +
                      ", 2^63 bytes or more");
  for (int i = 0; i < nd; ++i) h.extents[i] = shape[i];
  compact_strides(shape, nd, h.extents + nd, static_cast<std::int64_t>(dt.itemsize()));
  const auto bytes = static_cast<std::size_t>(l.nbytes);
  try {
    h.storage = buffer(bytes, where.out_kind, where.device, current_stream().handle);
  } catch (const std::bad_alloc&) {  // host memory; device memory throws out_of_memory
    const std::string msg = std::string(op_name) + ": out of memory for the result of shape " +
                            shape_str(shape, nd) + " of " + std::string(dt.name()) + " (" +
                            std::to_string(bytes) + " bytes of " +
                            std::string(to_string(where.out_kind)) + " memory)";
    PyErr_SetString(PyExc_MemoryError, msg.c_str());
    throw nb::python_error();
  }
  h.c.version = {ARRAYPORT_C_ABI_VERSION_MAJOR, ARRAYPORT_C_ABI_VERSION_MINOR};
  h.c.data = h.storage.data();
  h.c.ndim = nd;
  h.c.shape = h.extents;
  h.c.strides = h.extents + nd;
  h.c.dtype = dt.to_c();
  h.c.memory_kind = static_cast<std::uint32_t>(h.storage.kind());
}

// Releasing the GIL costs ~100 ns: worth it for GPU launches (which may block) and large CPU work.
bool release_gil(const ops::placement& where, std::int64_t elements) {
  return where.on_gpu || elements >= (std::int64_t(1) << 15);
}

// device=N for the common case of host data (every array operand in pageable host memory,
// contiguous and of the result's shape, no out=): the op runs on GPU N in chunks staged through
// pinned memory (ops::launch_staged), the result in pinned memory, returned as NumPy. The GPU
// and the CPU's copies overlap, so the host link, not the staging, sets the pace.
struct staging {
  int device = -1;  ///< -1: no staging
  std::int64_t chunk_bytes = 8 << 20;  // best of 1-16 MiB for 16M float32 on an H100
};

// The staging of a device= call, or none (-1) when _pipeline.run is to take it: out= given,
// device not a plain int naming an existing GPU, no GPU.
staging staging_for(nb::handle device, nb::handle out) {
  staging st;
  PyObject* d = device.ptr();
  if (!out.is_none() || !PyLong_CheckExact(d) || !runtime::is_available()) return st;
  const long i = PyLong_AsLong(d);
  if (i < 0 || i >= runtime::device_count()) {
    PyErr_Clear();
    return st;
  }
  st.device = static_cast<int>(i);
  if (const char* env = std::getenv("ARRAYPORT_STAGE_CHUNK_BYTES"))  // for tuning
    st.chunk_bytes = std::max<std::int64_t>(4096, std::atoll(env));
  return st;
}

// The element-wise entry: inputs (with their names), optional out=, op parameters. With a
// staging device it runs the staged path, or returns a null object when the call does not fit it.
nb::object elementwise(ops::op_id op, const char* op_name, const nb::handle* objs,
                       const char* const* names, int n, nb::handle out_obj,
                       nb::handle zero_value = nb::none(), const dtype* cast_to = nullptr,
                       const staging& stage = {}) {
  input_holder holders[ops::max_inputs + 1];
  ops_arg args[ops::max_inputs + 1];
  for (int i = 0; i < n; ++i) ops_input(objs[i], op_name, names[i], holders[i], args[i]);
  const bool has_out = !out_obj.is_none();
  if (has_out) ops_input(out_obj, op_name, "out", holders[n], args[n], /*allow_scalar=*/false);

  // Result dtype: where's condition does not take part; astype names it.
  const ops_arg* typed[ops::max_inputs];
  int n_typed = 0;
  for (int i = op == ops::op_id::where ? 1 : 0; i < n; ++i) typed[n_typed++] = &args[i];
  type_id rt;
  if (cast_to) {
    rt = ops::to_type_id(*cast_to);
    if (rt == ops::invalid_type || static_cast<int>(rt) >= ops::elementwise_type_count)
      throw type_error(std::string(op_name) + ": dtype " + arrayport::detail::describe(*cast_to) +
                       " is not supported; expected one of bool, uint8, int32, int64, float16, "
                       "bfloat16, float32, float64, complex64, complex128");
    ops::result_type(ops::op_id::copy, op_name, typed, n_typed);  // checks the input's dtype
  } else {
    rt = ops::result_type(op, op_name, typed, n_typed);
  }
  if (op == ops::op_id::axpy) {
    // a * x + y as NumPy computes it: fused when the product has the result's dtype already; else
    // the product first, in its own dtype (where it may wrap or round), then the sum. Two Python
    // scalars multiply in Python, as `a * x` does (exactly, into a Python scalar).
    static const char* const sum_names[] = {"a * x", "y"};
    nb::object product;
    if (args[0].kind != weak_kind::none && args[1].kind != weak_kind::none) {
      if (stage.device >= 0) return nb::object();  // _pipeline.run takes it
      product = nb::steal(PyNumber_Multiply(objs[0].ptr(), objs[1].ptr()));
      if (!product.is_valid()) throw nb::python_error();
    } else if (ops::result_type(ops::op_id::multiply, op_name, {&args[0], &args[1]}) != rt) {
      if (stage.device >= 0) return nb::object();
      product = elementwise(ops::op_id::multiply, op_name, objs, names, 2, nb::none());
    }
    if (product.is_valid()) {
      const nb::handle sum_objs[] = {product, objs[2]};
      return elementwise(ops::op_id::add, op_name, sum_objs, sum_names, 2, out_obj);
    }
  }
  type_id out_t = rt;
  if (op == ops::op_id::abs && ops::is_complex(rt))
    out_t = rt == type_id::complex64 ? type_id::float32 : type_id::float64;
  const dtype out_dt = ops::to_dtype(out_t);
  if (op == ops::op_id::where && args[0].kind == weak_kind::none &&
      ops::to_type_id(args[0].view.dtype()) == ops::invalid_type)
    throw type_error(std::string(op_name) + ": argument 'condition' has unsupported dtype " +
                     arrayport::detail::describe(args[0].view.dtype()));

  const ops_arg* arrays[ops::max_inputs + 1];
  int n_arrays = 0;
  for (int i = 0; i < n; ++i)
    if (args[i].kind == weak_kind::none) arrays[n_arrays++] = &args[i];
  std::int64_t shape[ARRAYPORT_MAX_NDIM];
  int nd = ops::broadcast_shapes(op_name, arrays, n_arrays, shape);
  if (has_out) {
    // The inputs broadcast to out's shape (as in NumPy), and out has the result dtype exactly.
    const strided_view& ov = args[n].view;
    const int off = ov.ndim() - nd;
    bool fits = off >= 0;
    for (int d = 0; fits && d < nd; ++d) fits = shape[d] == 1 || shape[d] == ov.extent(off + d);
    if (!fits)
      throw value_error(std::string(op_name) + ": out: expected shape " +
                        shape_str(shape, nd) + ", got " +
                        shape_str(ov.c_view().shape, ov.ndim()));
    if (ov.dtype() != out_dt)
      throw type_error(std::string(op_name) + ": out: expected dtype " +
                       std::string(out_dt.name()) + ", got " +
                       arrayport::detail::describe(ov.dtype()));
    if (ov.readonly())
      throw value_error(std::string(op_name) + ": out: expected a writable array, got a read-only one");
    nd = ov.ndim();
    for (int d = 0; d < nd; ++d) shape[d] = ov.extent(d);
    arrays[n_arrays++] = &args[n];
  }
  ops::placement where;
  if (stage.device < 0) {
    where = ops::place(op_name, arrays, n_arrays);
  } else {
    // Every array operand pageable host memory, and the current stream of the device asked for.
    if (n_arrays == 0) return nb::object();
    for (int i = 0; i < n_arrays; ++i)
      if (arrays[i]->view.kind() != memory_kind::host) return nb::object();
    const ext::current_stream_state cs = current_stream();
    if ((cs.device >= 0 ? cs.device : runtime::stream_device(cs.handle, stage.device)) != stage.device)
      return nb::object();
    where.on_gpu = true;
    where.out_kind = memory_kind::pinned;
    where.device = stage.device;
  }

  ops::ew_call call;
  call.op = op;
  call.compute = rt;
  call.n_inputs = n;
  type_id arg_types[ops::max_inputs];
  for (int i = 0; i < n; ++i)
    arg_types[i] = (op == ops::op_id::where && i == 0) ? type_id::bool_ : rt;
  for (int i = 0; i < n; ++i)
    if (args[i].kind != weak_kind::none)
      ops_scalar(holders[i].scalar, ops::to_dtype(arg_types[i]), call.in[i].scalar, op_name,
                 names[i]);
  call.params.has_value = !zero_value.is_none();
  if (call.params.has_value)
    ops_scalar(zero_value.ptr(), ops::to_dtype(rt), call.params.value, op_name, nullptr);

  // out= overlapping an input other than element for element (out=x[1:] of add(x[:-1], 1)): the
  // result goes to a temporary first, then into out, as NumPy does.
  bool through_temporary = false;
  for (int i = 0; has_out && i < n; ++i)
    if (args[i].kind == weak_kind::none && overlaps(args[i].view, args[n].view) &&
        !same_elements(args[i].view, args[n].view))
      through_temporary = true;
  // Staged: every array input C-contiguous with the result's shape (no broadcasting, nothing
  // strided), checked before the pinned result is allocated; the result is allocated, and on an
  // error released, with the device asked for current.
  std::optional<runtime::device_guard> stage_guard;
  if (stage.device >= 0) {
    for (int i = 0; i < n; ++i) {
      if (args[i].kind != weak_kind::none) continue;
      const strided_view& v = args[i].view;
      bool same = v.ndim() == nd && c_contiguous(v);
      for (int d = 0; same && d < nd; ++d) same = v.extent(d) == shape[d];
      if (!same) return nb::object();
    }
    stage_guard.emplace(stage.device);
  }
  output_holder result;
  strided_view out_view;
  if (has_out && !through_temporary) {
    out_view = args[n].view;
  } else {
    allocate_output(result, op_name, out_dt, shape, nd, where);
    result.c.device = result.storage.dlpack_device();
    out_view = strided_view(result.c);
  }
  call.out = static_cast<char*>(out_view.data());
  const ops_arg* inputs[ops::max_inputs] = {&args[0], n > 1 ? &args[1] : nullptr,
                                            n > 2 ? &args[2] : nullptr};
  ops::build_layout(call, out_view, shape, nd, inputs, arg_types);
  if (stage.device >= 0) {
    // One flat dimension in which every array input is contiguous (no broadcasting).
    if (call.layout.ndim != 1) return nb::object();
    for (int i = 0; i < n; ++i)
      if (call.in[i].data &&
          call.layout.strides[1 + i][0] != static_cast<std::int64_t>(args[i].view.dtype().itemsize()))
        return nb::object();
    {
      gil_release unlocked;
      ops::launch_staged(call, where, stage.chunk_bytes);
    }
    nb::object r = make_owned_array(std::move(result.storage), out_dt, shape, nd, current_stream_object());
    if (out_t == type_id::bfloat16) return r;  // NumPy has no bfloat16
    return nb::module_::import_("numpy").attr("asarray")(r);
  }
  if (release_gil(where, call.size)) {
    gil_release unlocked;
    ops::launch(call, where);
  } else {
    ops::launch(call, where);
  }
  if (through_temporary) {
    const nb::object temporary =
        make_owned_array(std::move(result.storage), out_dt, shape, nd, current_stream_object());
    const nb::handle source = temporary;
    static const char* const names[] = {"x"};
    elementwise(ops::op_id::copy, op_name, &source, names, 1, out_obj);
  }
  wait_before_release(holders, n + (has_out ? 1 : 0), where);
  if (has_out) return nb::borrow(out_obj);
  return make_owned_array(std::move(result.storage), out_dt, shape, nd, current_stream_object());
}

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
    const nb::object i = nb::steal(PyNumber_Index(o));
    if (!i.is_valid()) throw nb::python_error();
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

// keepdims: a bool (Python's or NumPy's); anything else is a TypeError naming it, not a truth test.
bool parse_keepdims(nb::handle keepdims, const char* op_name) {
  PyObject* o = keepdims.ptr();
  if (o == Py_True) return true;
  if (o == Py_False) return false;
  const std::string type = Py_TYPE(o)->tp_name;
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
    throw value_error(std::string(op_name) + ": out: expected shape " + shape_str(shape.data(), nd) +
                      ", got " + shape_str(out.c_view().shape, out.ndim()));
  if (out.dtype() != out_dt)
    throw type_error(std::string(op_name) + ": out: expected dtype " + std::string(out_dt.name()) +
                     ", got " + arrayport::detail::describe(out.dtype()));
  if (out.readonly())
    throw value_error(std::string(op_name) + ": out: expected a writable array, got a read-only one");
}

// Runs the reduction into out (when it is C-contiguous and no input overlaps it) or into a new
// array, copied into out when there is one.
nb::object finish_reduce(ops::reduce_call& call, const char* op_name, const ops::placement& where,
                         dtype out_dt, const std::vector<std::int64_t>& shape,
                         const ops_arg* inputs, int n_inputs, const ops_arg* out, nb::handle out_obj) {
  bool direct = out && c_contiguous(out->view);
  for (int i = 0; direct && i < n_inputs; ++i) direct = !overlaps(inputs[i].view, out->view);
  output_holder result;
  if (direct) {
    call.out = static_cast<char*>(out->view.data());
  } else {
    allocate_output(result, op_name, out_dt, shape.data(), static_cast<int>(shape.size()), where);
    call.out = static_cast<char*>(result.storage.data());
  }
  if (release_gil(where, call.n_out * call.len)) {
    gil_release unlocked;
    ops::launch(call, where);
  } else {
    ops::launch(call, where);
  }
  if (direct) return nb::borrow(out_obj);
  nb::object r = make_owned_array(std::move(result.storage), out_dt, shape, current_stream_object());
  if (!out) return r;
  const nb::handle source = r;
  static const char* const names[] = {"x"};
  elementwise(ops::op_id::copy, op_name, &source, names, 1, out_obj);
  return nb::borrow(out_obj);
}

const char* reduce_name(ops::reduce_op op) {
  switch (op) {
    case ops::reduce_op::sum: return "sum";
    case ops::reduce_op::mean: return "mean";
    case ops::reduce_op::min: return "min";
    case ops::reduce_op::max: return "max";
    default: return "dot";
  }
}

nb::object reduce(ops::reduce_op op, nb::handle x, nb::handle axis, nb::handle keepdims_obj,
                  nb::handle out_obj) {
  const char* op_name = reduce_name(op);
  const bool keepdims = parse_keepdims(keepdims_obj, op_name);
  input_holder hs[2];
  ops_arg args[2];
  ops_input(x, op_name, "x", hs[0], args[0], /*allow_scalar=*/false);
  const type_id t = ops::to_type_id(args[0].view.dtype());
  const type_id rt = (t == ops::invalid_type || int(t) >= ops::elementwise_type_count)
                         ? ops::invalid_type : ops::reduce_result_type(op, t);
  if (rt == ops::invalid_type)
    throw type_error(std::string(op_name) + ": not supported for dtype " +
                     arrayport::detail::describe(args[0].view.dtype()));
  const std::vector<int> axes = parse_axes(axis, args[0].view.ndim(), op_name);
  const bool has_out = !out_obj.is_none();
  if (has_out) ops_input(out_obj, op_name, "out", hs[1], args[1], /*allow_scalar=*/false);
  const ops::placement where =
      has_out ? ops::place(op_name, {&args[0], &args[1]}) : ops::place(op_name, {&args[0]});
  ops::reduce_call call;
  call.op = op;
  call.in_type = t;
  const std::vector<std::int64_t> shape = ops::build_reduce(call, args[0].view, axes, keepdims);
  const dtype out_dt = ops::to_dtype(rt);
  if (has_out) check_reduce_out(op_name, args[1].view, out_dt, shape);
  // As NumPy: a reduction over nothing has no value, even into an empty result.
  if (call.len == 0 && (op == ops::reduce_op::min || op == ops::reduce_op::max))
    throw value_error(std::string(op_name) + ": zero-size array to reduction operation " +
                      op_name + " which has no identity");
  nb::object r = finish_reduce(call, op_name, where, out_dt, shape, args, 1,
                               has_out ? &args[1] : nullptr, out_obj);
  wait_before_release(hs, has_out ? 2 : 1, where);
  return r;
}

// sum(x * y) over axis, x and y broadcast together: the inner product (no conjugation) of 1-d
// arrays, and along axes of n-d ones (np.vecdot's product without its conjugation; not np.dot's
// matrix product).
nb::object dot(nb::handle x, nb::handle y, nb::handle axis, nb::handle keepdims_obj,
               nb::handle out_obj) {
  const bool keepdims = parse_keepdims(keepdims_obj, "dot");
  input_holder hs[3];
  ops_arg args[3];
  ops_input(x, "dot", "x", hs[0], args[0], false);
  ops_input(y, "dot", "y", hs[1], args[1], false);
  const type_id rt = ops::result_type(ops::op_id::multiply, "dot", {&args[0], &args[1]});
  const std::vector<std::int64_t> full = ops::broadcast_shapes("dot", {&args[0], &args[1]});
  const std::vector<int> axes = parse_axes(axis, static_cast<int>(full.size()), "dot");
  const bool has_out = !out_obj.is_none();
  if (has_out) ops_input(out_obj, "dot", "out", hs[2], args[2], /*allow_scalar=*/false);
  const ops::placement where = has_out ? ops::place("dot", {&args[0], &args[1], &args[2]})
                                       : ops::place("dot", {&args[0], &args[1]});
  ops::reduce_call call;
  call.op = ops::reduce_op::dot;
  call.in_type = rt;
  const std::vector<std::int64_t> shape =
      ops::build_reduce(call, args[0].view, args[1].view, full, axes, keepdims);
  const dtype out_dt = ops::to_dtype(rt);
  if (has_out) check_reduce_out("dot", args[2].view, out_dt, shape);
  nb::object r = finish_reduce(call, "dot", where, out_dt, shape, args, 2,
                               has_out ? &args[2] : nullptr, out_obj);
  wait_before_release(hs, has_out ? 3 : 2, where);
  return r;
}

// device=N: the op on GPU N wherever its operands live (arrayport/_pipeline.py stages host
// memory for it); None keeps the placement rules.
nb::object on_device(const char* name, nb::tuple operands, nb::handle out, nb::handle device,
                     nb::dict params) {
  return nb::module_::import_("arrayport._pipeline")
      .attr("run")(name, operands, out, device, params);
}

// device=N for an element-wise op: staged in C++ when the call fits (see staging_for and the
// staged branch of elementwise), else _pipeline.run with the operands and `params`. `cast` is
// astype's dtype (read only when the call may be staged).
nb::object elementwise_on_device(ops::op_id op, const char* op_name, const nb::handle* objs,
                                 const char* const* names, int n, nb::handle out,
                                 nb::handle device, nb::dict params,
                                 nb::handle zero_value = nb::none(), nb::handle cast = nb::handle()) {
  const staging st = staging_for(device, out);
  if (st.device >= 0) {
    std::optional<dtype> target;
    if (cast) target = parse_ops_dtype(cast);
    if (nb::object r = elementwise(op, op_name, objs, names, n, out, zero_value,
                                   target ? &*target : nullptr, st))
      return r;
  }
  PyObject* operands = PyTuple_New(n);
  if (!operands) throw nb::python_error();
  for (int i = 0; i < n; ++i) {
    Py_INCREF(objs[i].ptr());
    PyTuple_SET_ITEM(operands, i, objs[i].ptr());
  }
  return on_device(op_name, nb::steal<nb::tuple>(operands), out, device, params);
}

}  // namespace

void register_ops(nb::module_& parent) {
  using namespace nb::literals;
  nb::module_ m = parent.def_submodule("ops", "Element-wise operations and reductions.");

  auto binary = [&](const char* name, ops::op_id op, const char* doc) {
    m.def(name, [op, name](nb::handle x1, nb::handle x2, nb::handle out, nb::handle device) {
            const nb::handle objs[] = {x1, x2};
            static const char* const names[] = {"x1", "x2"};
            if (!device.is_none())
              return elementwise_on_device(op, name, objs, names, 2, out, device, {});
            return elementwise(op, name, objs, names, 2, out);
          }, "x1"_a.none(), "x2"_a.none(), nb::kw_only(), "out"_a = nb::none(),
          "device"_a = nb::none(), doc);
  };
  binary("add", ops::op_id::add, "x1 + x2, element-wise, with NumPy broadcasting.");
  binary("subtract", ops::op_id::subtract, "x1 - x2, element-wise.");
  binary("multiply", ops::op_id::multiply, "x1 * x2, element-wise.");
  binary("maximum", ops::op_id::maximum, "Element-wise maximum; NaN propagates.");
  binary("minimum", ops::op_id::minimum, "Element-wise minimum; NaN propagates.");
  m.def("divide", [](nb::handle x1, nb::handle x2, nb::handle out, nb::handle zero_value,
                     nb::handle device) {
          const nb::handle objs[] = {x1, x2};
          static const char* const names[] = {"x1", "x2"};
          if (!device.is_none()) {
            nb::dict params;
            params["zero_value"] = zero_value;
            return elementwise_on_device(ops::op_id::divide, "divide", objs, names, 2, out, device,
                                         params, zero_value);
          }
          return elementwise(ops::op_id::divide, "divide", objs, names, 2, out, zero_value);
        }, "x1"_a.none(), "x2"_a.none(), nb::kw_only(), "out"_a = nb::none(),
        "zero_value"_a = nb::none(),
        "device"_a = nb::none(),
        "x1 / x2 (true division); where x2 == 0 gives zero_value when one is given.");

  auto unary = [&](const char* name, ops::op_id op, const char* doc) {
    m.def(name, [op, name](nb::handle x, nb::handle out, nb::handle device) {
            static const char* const names[] = {"x"};
            if (!device.is_none())
              return elementwise_on_device(op, name, &x, names, 1, out, device, {});
            return elementwise(op, name, &x, names, 1, out);
          }, "x"_a.none(), nb::kw_only(), "out"_a = nb::none(), "device"_a = nb::none(), doc);
  };
  unary("negative", ops::op_id::negative, "-x, element-wise.");
  unary("square", ops::op_id::square, "x * x, element-wise.");
  unary("sqrt", ops::op_id::sqrt, "Square root, element-wise (integers give floats).");
  unary("abs", ops::op_id::abs, "Absolute value (complex: the modulus, a real dtype).");
  unary("copy", ops::op_id::copy, "A copy of x (contiguous), or x written into out.");
  m.def("astype", [](nb::handle x, nb::handle dt, nb::handle out, nb::handle device) {
          static const char* const names[] = {"x"};
          if (!device.is_none()) {
            nb::dict params;
            params["dtype"] = dt;
            return elementwise_on_device(ops::op_id::copy, "astype", &x, names, 1, out, device,
                                         params, nb::none(), dt);
          }
          const dtype target = parse_ops_dtype(dt);
          return elementwise(ops::op_id::copy, "astype", &x, names, 1, out, nb::none(), &target);
        }, "x"_a.none(), "dtype"_a.none(), nb::kw_only(), "out"_a = nb::none(),
        "device"_a = nb::none(),
        "x converted to dtype (NumPy's unsafe casting: wraps, truncates, drops imaginary parts).");
  m.def("where", [](nb::handle condition, nb::handle x, nb::handle y, nb::handle out,
                    nb::handle device) {
          const nb::handle objs[] = {condition, x, y};
          static const char* const names[] = {"condition", "x", "y"};
          if (!device.is_none())
            return elementwise_on_device(ops::op_id::where, "where", objs, names, 3, out, device, {});
          return elementwise(ops::op_id::where, "where", objs, names, 3, out);
        }, "condition"_a.none(), "x"_a.none(), "y"_a.none(), nb::kw_only(), "out"_a = nb::none(),
        "device"_a = nb::none(), "x where condition is true, else y (condition converted to bool).");
  m.def("axpy", [](nb::handle a, nb::handle x, nb::handle y, nb::handle out, nb::handle device) {
          const nb::handle objs[] = {a, x, y};
          static const char* const names[] = {"a", "x", "y"};
          if (!device.is_none())
            return elementwise_on_device(ops::op_id::axpy, "axpy", objs, names, 3, out, device, {});
          return elementwise(ops::op_id::axpy, "axpy", objs, names, 3, out);
        }, "a"_a.none(), "x"_a.none(), "y"_a.none(), nb::kw_only(), "out"_a = nb::none(),
        "device"_a = nb::none(),
        "a * x + y in one pass (rounded after the multiply and after the add, as NumPy would).");

  auto reduction = [&](const char* name, ops::reduce_op op, const char* doc) {
    m.def(name, [op, name](nb::handle x, nb::handle axis, nb::handle keepdims, nb::handle out,
                           nb::handle device) {
            if (!device.is_none()) {
              nb::dict params;
              params["axis"] = axis;
              params["keepdims"] = keepdims;
              return on_device(name, nb::make_tuple(x), out, device, params);
            }
            return reduce(op, x, axis, keepdims, out);
          }, "x"_a.none(), "axis"_a.none() = nb::none(), "keepdims"_a.none() = nb::bool_(false),
          nb::kw_only(),
          "out"_a = nb::none(), "device"_a = nb::none(), doc);
  };
  reduction("sum", ops::reduce_op::sum, "Sum over axis (None: all), pairwise/tree accumulated.");
  reduction("mean", ops::reduce_op::mean, "Mean over axis (None: all); integers give float64.");
  reduction("min", ops::reduce_op::min, "Minimum over axis; NaN propagates; empty is an error.");
  reduction("max", ops::reduce_op::max, "Maximum over axis; NaN propagates; empty is an error.");
  m.def("dot", [](nb::handle x, nb::handle y, nb::handle axis, nb::handle keepdims, nb::handle out,
                  nb::handle device) {
          if (!device.is_none()) {
            nb::dict params;
            params["axis"] = axis;
            params["keepdims"] = keepdims;
            return on_device("dot", nb::make_tuple(x, y), out, device, params);
          }
          return dot(x, y, axis, keepdims, out);
        }, "x"_a.none(), "y"_a.none(), "axis"_a.none() = nb::none(),
        "keepdims"_a.none() = nb::bool_(false), nb::kw_only(),
        "out"_a = nb::none(), "device"_a = nb::none(),
        "sum(x * y) over axis (None: all), x and y broadcast together; no conjugation. For 1-d "
        "arrays the inner product; not NumPy's matrix product for 2-d ones.");
}

}  // namespace arrayport::ext
