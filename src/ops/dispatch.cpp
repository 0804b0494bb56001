// Dispatch for arrayport.ops: promotion, broadcasting, collapsing, placement and launch.
#include "ops/dispatch.hpp"

#include "ops/cpu/parallel.hpp"
#include "ops/kernels.hpp"

#include <arrayport/buffer.hpp>
#include <arrayport/event.hpp>
#include <arrayport/layout.hpp>
#include <arrayport/runtime.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string>

namespace arrayport::ops {
namespace {

using T = type_id;

std::string shape_string(const strided_view& v) {
  return arrayport::detail::tuple_string(v.c_view().shape, v.ndim());
}

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

int broadcast_shapes(const char* op_name, arg_list arrays, std::int64_t* shape) {
  int nd = 0;
  for (const ops_arg* a : arrays) nd = std::max(nd, a->view.ndim());
  for (int d = 0; d < nd; ++d) shape[d] = 1;
  for (const ops_arg* a : arrays) {
    const int off = nd - a->view.ndim();
    for (int i = 0; i < a->view.ndim(); ++i) {
      std::int64_t& s = shape[off + i];
      const std::int64_t e = a->view.extent(i);
      if (e == s || e == 1) continue;
      if (s == 1) {
        s = e;
        continue;
      }
      std::string msg = std::string(op_name) + ": operands could not be broadcast together:";
      for (const ops_arg* b : arrays)
        msg += std::string(" '") + b->name + "' " + shape_string(b->view);
      throw value_error(msg);
    }
  }
  return nd;
}

placement place(const char* op_name, arg_list arrays, stream_ref stream) {
  placement p;
  const ops_arg* device_arg = nullptr;  // first device/managed operand (names the device)
  const ops_arg* host_arg = nullptr;    // first pageable host operand
  bool any_device_only = false, any_cuda = false;
  for (const ops_arg* a : arrays) {
    const memory_kind k = a->view.kind();
    if (k == memory_kind::host && !host_arg) host_arg = a;
    if (k == memory_kind::device) any_device_only = true;
    if (k != memory_kind::host) any_cuda = true;
    if (is_gpu_resident(k)) {
      if (!device_arg) {
        device_arg = a;
      } else if (a->view.device().device_id != device_arg->view.device().device_id) {
        throw value_error(std::string(op_name) + ": arguments on different devices: '" +
                          device_arg->name + "' is on device " +
                          std::to_string(device_arg->view.device().device_id) + ", '" + a->name +
                          "' on device " + std::to_string(a->view.device().device_id) +
                          "; copy one of them first");
      }
    }
  }
  if (any_device_only && host_arg) {
    const ops_arg* dev = *std::find_if(arrays.begin(), arrays.end(), [](const ops_arg* a) {
      return a->view.kind() == memory_kind::device;
    });
    throw value_error(std::string(op_name) + ": '" + dev->name +
                      "' is in device memory, which the CPU cannot read, and '" + host_arg->name +
                      "' in pageable host memory, which the GPU cannot read; copy one of them "
                      "(e.g. to managed or device memory) first");
  }
  p.device = device_arg ? device_arg->view.device().device_id : -1;
  p.gpu_reachable = any_cuda;
  for (const ops_arg* a : arrays) {
    const memory_kind k = a->view.kind();
    // Pageable host memory is complete when its producer returns (copies into it synchronise).
    if (!a->ordered || k == memory_kind::host) continue;
    const placement::array_stream s{a->view.stream(),
                                    is_gpu_resident(k) ? a->view.device().device_id : -1};
    bool seen = false;
    for (int j = 0; j < p.n_streams; ++j)
      seen |= p.streams[j].handle == s.handle && p.streams[j].device == s.device;
    if (!seen) p.streams[p.n_streams++] = s;
  }
  p.on_gpu = any_device_only || (!host_arg && any_cuda && runtime::is_available());
  if (p.on_gpu && p.device >= 0) {
    // The op runs on `stream` with its arguments' device current: a stream of another device
    // cannot run it.
    const int stream_device =
        stream.device >= 0 ? stream.device : runtime::stream_device(stream.handle, p.device);
    if (stream_device != p.device)
      throw value_error(
          std::string(op_name) + ": the arguments are on device " + std::to_string(p.device) +
          ", but the current stream belongs to device " + std::to_string(stream_device) +
          "; use a stream of device " + std::to_string(p.device) +
          " (e.g. `with arrayport.cuda.Device(" + std::to_string(p.device) +
          "):`) or copy the arguments with .to(device=" + std::to_string(stream_device) + ")");
  }
  if (any_device_only)
    p.out_kind = memory_kind::device;
  else if (!arrays.empty())
    p.out_kind = arrays[0]->view.kind();
  return p;
}

namespace {

// Drops extents of 1 and merges dimension d into d + 1 wherever every operand's strides allow it.
template <int K, int N>
void collapse(int& ndim, std::int64_t* shape, std::int64_t (*strides)[K]) {
  int w = 0;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] == 1) continue;
    if (w > 0) {
      bool mergeable = true;
      for (int k = 0; k < N; ++k)
        if (strides[k][w - 1] != strides[k][d] * shape[d]) mergeable = false;
      if (mergeable) {
        shape[w - 1] *= shape[d];
        for (int k = 0; k < N; ++k) strides[k][w - 1] = strides[k][d];
        continue;
      }
    }
    shape[w] = shape[d];
    for (int k = 0; k < N; ++k) strides[k][w] = strides[k][d];
    ++w;
  }
  ndim = w;
}

// The storage bytes of 1 in each dtype, indexed by type_id.
template <std::size_t... T>
constexpr std::array<void (*)(unsigned char*), sizeof...(T)> one_writers(
    std::index_sequence<T...>) {
  return {{[](unsigned char* out) {
    const auto one = convert<storage_t<type_id(T)>>(std::int32_t{1});
    std::memcpy(out, &one, sizeof one);
  }...}};
}
constexpr auto write_one = one_writers(std::make_index_sequence<elementwise_type_count>{});

// The logical ops compute in bool, each operand converted by its load. When the array operands
// share one dtype they are loaded in it instead (the flat, vectorised path), the functor testing
// each value against zero, and a scalar becomes 0 or 1 of that dtype.
void load_truths_in_their_dtype(ew_call& call, span<const ops_arg> inputs) {
  if (call.op < op_id::logical_and || call.op > op_id::logical_not) return;
  type_id shared = invalid_type;
  for (int i = 0; i < call.n_inputs; ++i) {
    const ops_arg& a = inputs[std::size_t(i)];
    if (a.kind != weak_kind::none) continue;
    const type_id t = to_type_id(a.view.dtype());
    if (shared != invalid_type && t != shared) return;
    shared = t;
  }
  if (shared == invalid_type || shared == type_id::bool_ ||
      static_cast<int>(shared) >= elementwise_type_count)
    return;
  for (int i = 0; i < call.n_inputs; ++i) {
    if (inputs[std::size_t(i)].kind == weak_kind::none) continue;
    unsigned char* scalar = call.in[i].scalar;
    const bool truth = scalar[0] != 0;
    std::memset(scalar, 0, sizeof call.in[i].scalar);
    if (truth) write_one[std::size_t(shared)](scalar);
  }
  call.compute = shared;
}

}  // namespace

void build_layout(ew_call& call, const strided_view& out, const std::int64_t* shape, int nd,
                  span<const ops_arg> inputs) {
  load_truths_in_their_dtype(call, inputs);
  auto& L = call.layout;
  L.ndim = nd;
  call.size = 1;
  for (int d = 0; d < nd; ++d) {
    L.shape[d] = shape[d];
    call.size *= L.shape[d];
  }
  const auto out_item = static_cast<std::int64_t>(out.dtype().itemsize());
  for (int d = 0; d < nd; ++d) L.strides[0][d] = out.stride(d) * out_item;
  bool flat = true;
  for (int i = 0; i < max_inputs; ++i) {
    for (int d = 0; d < nd; ++d) L.strides[1 + i][d] = 0;
    if (i >= call.n_inputs) continue;
    const ops_arg& a = inputs[std::size_t(i)];
    ew_operand& o = call.in[i];
    const type_id loads_as = arg_type(call.op, i, call.compute);
    if (a.kind != weak_kind::none) {  // scalar: the caller filled o.scalar
      o.data = nullptr;
      o.type = loads_as;
      continue;
    }
    o.data = static_cast<const char*>(a.view.data());
    o.type = to_type_id(a.view.dtype());
    if (o.type != loads_as) flat = false;
    const auto item = static_cast<std::int64_t>(a.view.dtype().itemsize());
    const int off = nd - a.view.ndim();
    for (int d = 0; d < a.view.ndim(); ++d)
      L.strides[1 + i][off + d] = a.view.extent(d) == 1 ? 0 : a.view.stride(d) * item;
  }
  collapse<ARRAYPORT_MAX_NDIM, max_inputs + 1>(L.ndim, L.shape, L.strides);
  if (L.ndim == 0) {  // one element: a 1-d layout of extent 1 keeps the kernels simple
    L.ndim = 1;
    L.shape[0] = 1;
    for (auto& s : L.strides) s[0] = 0;
  }
  // Flat: one dimension, every array contiguous in it.
  if (L.ndim != 1) flat = false;
  if (flat && L.strides[0][0] != out_item && call.size > 1) flat = false;
  for (int i = 0; flat && i < call.n_inputs; ++i)
    if (call.in[i].data && call.size > 1 &&
        L.strides[1 + i][0] != static_cast<std::int64_t>(to_dtype(call.in[i].type).itemsize()))
      flat = false;
  call.flat = flat;
}

namespace {

// The GPU side of a call on `stream` (of where.device): it waits for the streams its Array
// operands are ready on (an event each, no host wait), and they wait for it afterwards. One
// stream, the common case, costs a comparison.
[[maybe_unused]] void wait_for_arrays(const placement& where, stream_handle stream) {
  for (int i = 0; i < where.n_streams; ++i)
    if (where.streams[i].handle != stream)
      runtime::order_streams(where.streams[i].handle, where.streams[i].device, stream,
                             where.device);
}
[[maybe_unused]] void order_arrays_after(const placement& where, stream_handle stream) {
  for (int i = 0; i < where.n_streams; ++i)
    if (where.streams[i].handle != stream)
      runtime::order_streams_after(stream, where.device, where.streams[i].handle,
                                   where.streams[i].device);
}

// The CPU reads memory the GPU may still be writing (managed/pinned operands): it waits for the
// call's stream (foreign operands were ordered before it) and for each Array operand's stream.
void cpu_waits(const placement& where, stream_handle stream) {
  if (!where.gpu_reachable || !runtime::is_available()) return;
  runtime::stream_synchronize(stream, where.device);
  for (int i = 0; i < where.n_streams; ++i)
    if (where.streams[i].handle != stream)
      runtime::stream_synchronize(where.streams[i].handle, where.streams[i].device);
}

}  // namespace

void launch(ew_call& call, const placement& where, stream_ref stream) {
  const int op = static_cast<int>(call.op), t = static_cast<int>(call.compute);
  if (call.size == 0) return;
  if (where.on_gpu) {
#if ARRAYPORT_HAS_CUDA
    const ew_table& table =
        ew_unit(call.op) == 0 ? cuda::elementwise_table : cuda::elementwise_table_more;
    const ew_fn fn = table[std::size_t(op)][std::size_t(t)];
    runtime::device_guard guard(where.device);
    call.stream = stream.handle;
    wait_for_arrays(where, call.stream);
    fn(call);
    order_arrays_after(where, call.stream);
    return;
#else
    runtime::require_device("arrayport.ops on device memory");
#endif
  }
  cpu_waits(where, stream.handle);
  const ew_table& table =
      ew_unit(call.op) == 0 ? cpu::elementwise_table : cpu::elementwise_table_more;
  table[std::size_t(op)][std::size_t(t)](call);
}

void launch_staged(const ew_call& call, const placement& where, std::int64_t chunk_bytes,
                   stream_ref on) {
  constexpr int slots = 3;
  runtime::device_guard guard(where.device);
  const stream_handle stream = on.handle;
  // Chunks of whole 4096-element blocks (the kernels' vector loads stay aligned), sized by the
  // widest input; an input's stride is its itemsize.
  std::int64_t item[max_inputs] = {}, widest = 1;
  for (int i = 0; i < call.n_inputs; ++i)
    if (call.in[i].data) widest = std::max(widest, item[i] = call.layout.strides[1 + i][0]);
  const std::int64_t block = 4096;
  const std::int64_t chunk =
      std::min(call.size, std::max(block, chunk_bytes / widest / block * block));
  buffer slot[max_inputs];
  for (int i = 0; i < call.n_inputs; ++i)
    if (call.in[i].data)
      slot[i] = buffer(static_cast<std::size_t>(slots * chunk * item[i]), memory_kind::pinned,
                       where.device, stream);
  std::array<std::optional<event>, slots> done;
  for (std::int64_t lo = 0, k = 0; lo < call.size; lo += chunk, ++k) {
    const std::int64_t n = std::min(chunk, call.size - lo);
    std::optional<event>& ready = done[std::size_t(k % slots)];
    if (ready)
      ready->synchronize();  // the GPU has read this slot's previous chunk
    else
      ready.emplace();
    ew_call part = call;
    part.size = n;
    part.layout.shape[0] = n;
    part.out = call.out + lo * call.layout.strides[0][0];
    for (int i = 0; i < call.n_inputs; ++i) {
      if (!call.in[i].data) continue;  // a scalar
      const char* src = call.in[i].data + lo * item[i];
      char* dst = static_cast<char*>(slot[i].data()) + (k % slots) * chunk * item[i];
      cpu::parallel_for(n * item[i], std::int64_t{1} << 18, [&](std::int64_t b, std::int64_t e) {
        std::memcpy(dst + b, src + b, static_cast<std::size_t>(e - b));
      });
      part.in[i].data = dst;
    }
    launch(part, where, on);
    ready->record(stream);
  }
  runtime::stream_synchronize(stream, where.device);
}

namespace {

// The reduction layout of up to two inputs broadcast to `shape` (input k's stride is 0 along a
// dimension it is broadcast in).
std::vector<std::int64_t> reduce_layout(reduce_call& call, const strided_view* const* views, int n,
                                        const std::vector<std::int64_t>& shape,
                                        const std::vector<int>& axes, bool keepdims) {
  std::vector<std::int64_t> out_shape;
  const int nd = static_cast<int>(shape.size());
  call.out_ndim = call.red_ndim = 0;
  call.n_out = call.len = 1;
  for (int d = 0; d < nd; ++d) {
    const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    const std::int64_t e = shape[std::size_t(d)];
    std::int64_t strides[2] = {0, 0};
    for (int k = 0; k < n; ++k) {
      const strided_view& v = *views[k];
      const int vd = d - (nd - v.ndim());
      if (vd >= 0 && v.extent(vd) != 1)
        strides[k] = v.stride(vd) * static_cast<std::int64_t>(v.dtype().itemsize());
    }
    if (reduced) {
      call.red_shape[call.red_ndim] = e;
      for (int k = 0; k < 2; ++k) call.red_strides[k][call.red_ndim] = strides[k];
      ++call.red_ndim;
      call.len *= e;
      if (keepdims) out_shape.push_back(1);
    } else {
      call.out_shape[call.out_ndim] = e;
      for (int k = 0; k < 2; ++k) call.out_strides[k][call.out_ndim] = strides[k];
      ++call.out_ndim;
      call.n_out *= e;
      out_shape.push_back(e);
    }
  }
  collapse<ARRAYPORT_MAX_NDIM, 2>(call.out_ndim, call.out_shape, call.out_strides);
  collapse<ARRAYPORT_MAX_NDIM, 2>(call.red_ndim, call.red_shape, call.red_strides);
  for (int k = 0; k < 2; ++k) {
    call.in[k] = k < n ? static_cast<const char*>(views[k]->data()) : nullptr;
    call.in_types[k] = to_type_id(views[k < n ? k : 0]->dtype());
  }
  const auto item = static_cast<std::int64_t>(views[0]->dtype().itemsize());
  call.contiguous = n == 1 && call.n_out == 1 &&
                    (call.red_ndim == 0 || (call.red_ndim == 1 && call.red_strides[0][0] == item));
  return out_shape;
}

}  // namespace

std::vector<std::int64_t> build_reduce(reduce_call& call, const strided_view& view,
                                       const std::vector<int>& axes, bool keepdims) {
  const strided_view* views[] = {&view};
  const std::vector<std::int64_t> shape(view.c_view().shape, view.c_view().shape + view.ndim());
  return reduce_layout(call, views, 1, shape, axes, keepdims);
}

std::vector<std::int64_t> build_reduce(reduce_call& call, const strided_view& x,
                                       const strided_view& y,
                                       const std::vector<std::int64_t>& shape,
                                       const std::vector<int>& axes, bool keepdims) {
  const strided_view* views[] = {&x, &y};
  return reduce_layout(call, views, 2, shape, axes, keepdims);
}

void launch(reduce_call& call, const placement& where, stream_ref stream) {
  const int op = static_cast<int>(call.op), t = static_cast<int>(call.in_type);
  if (call.n_out == 0) return;
  if (where.on_gpu) {
#if ARRAYPORT_HAS_CUDA
    runtime::device_guard guard(where.device);
    call.stream = stream.handle;
    wait_for_arrays(where, call.stream);
    cuda::reduce_table[std::size_t(op)][std::size_t(t)](call);
    order_arrays_after(where, call.stream);
    return;
#else
    runtime::require_device("arrayport.ops on device memory");
#endif
  }
  cpu_waits(where, stream.handle);
  cpu::reduce_table[std::size_t(op)][std::size_t(t)](call);
}

}  // namespace arrayport::ops
