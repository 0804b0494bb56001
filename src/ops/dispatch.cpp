// Dispatch for arrayport.ops: broadcasting, collapsing, placement and launch (promotion is
// promotion.cpp's).
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

std::string shape_string(const strided_view& v) {
  return arrayport::detail::tuple_string(v.c_view().shape, v.ndim());
}

}  // namespace

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

// Reorders the dimensions into the memory order of strides[0] (largest first), as NumPy's iterator
// does: for an element-wise call the output's, so that a transposed output and inputs in its
// order collapse into one flat run (exp of a transposed 2048^2 float32 array took 20x NumPy's time
// walked in C order); for a reduction the input's reduced dimensions. Left as is where strides[0]
// repeats elements (a zero stride): there the order decides which write lands.
template <int K, int N>
void order_by_first(int ndim, std::int64_t* shape, std::int64_t (*strides)[K]) {
  for (int d = 0; d < ndim; ++d)
    if (strides[0][d] == 0 && shape[d] != 1) return;
  int perm[K];
  if (ndim < 2 || !axis_order(shape, strides[0], ndim, perm)) return;
  std::int64_t moved[K];
  for (int d = 0; d < ndim; ++d) moved[d] = shape[perm[d]];
  std::copy(moved, moved + ndim, shape);
  for (int k = 0; k < N; ++k) {
    for (int d = 0; d < ndim; ++d) moved[d] = strides[k][perm[d]];
    std::copy(moved, moved + ndim, strides[k]);
  }
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
  order_by_first<ARRAYPORT_MAX_NDIM, max_inputs + 1>(L.ndim, L.shape, L.strides);
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
  // The reduced elements in the input's memory order (a transposed array: one contiguous run),
  // except for argmin and argmax, whose first extreme is the first in C order.
  if (!is_arg_reduce(call.op))
    order_by_first<ARRAYPORT_MAX_NDIM, 2>(call.red_ndim, call.red_shape, call.red_strides);
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
