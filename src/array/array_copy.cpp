// arrayport.Array copies: get, fill, copy, copy_to, to, __setitem__, prefetch and advise, and the
// module functions copy and to_gpu. Every copy is one ::arrayport::detail::strided_copy on a stream (default:
// the calling thread's current stream), ordered against the arrays' own streams with events.
#include "array/array_internal.hpp"

#include "consume.hpp"
#include "cuda/current_stream.hpp"
#include "common/errors.hpp"
#include "common/gil.hpp"
#include "common/scalars.hpp"
#include "array/strided_copy.hpp"

#include <arrayport/buffer.hpp>
#include <arrayport/detail/fill.hpp>
#include <arrayport/detail/strided_copy.hpp>
#include <arrayport/error.hpp>
#include <arrayport/memory_resource.hpp>
#include <arrayport/runtime.hpp>

#include <nanobind/stl/string.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {

// ---- operands: the two sides of a copy --------------------------------------------------------

// A strided view to copy from or into: an Array's, a buffer exporter's, or a temporary's.
struct operand {
  char* data = nullptr;
  std::vector<std::int64_t> shape, strides;  // strides in BYTES
  dtype dt{};
  memory_kind kind = memory_kind::host;
  int device = -1;                 // CUDA device of device and managed memory
  stream_handle stream = nullptr;  // the stream the data is ordered on, when `ordered`
  bool ordered = false;            // an Array's memory: order the copy against `stream`
  bool foreign = false;            // a buffer exporter's memory, released when the call returns
  bool readonly = false;

  int ndim() const noexcept { return static_cast<int>(shape.size()); }
  std::int64_t size() const { return packed(dt, "copy").count; }
  /// The count and the bytes a packed copy as `as` needs: count * itemsize (layout.hpp, checked),
  /// never the span (a broadcast operand spans fewer). A value_error naming `what` past int64.
  layout_info packed(dtype as, const char* what) const {
    return check_layout(what, shape.data(), nullptr, ndim(), static_cast<std::int64_t>(as.itemsize()));
  }
  std::size_t packed_bytes(dtype as, const char* what) const {
    return static_cast<std::size_t>(packed(as, what).nbytes);
  }
  ::arrayport::detail::copy_operand side() const noexcept { return {data, strides.data(), kind, device}; }
};

// C-order byte strides (layout.hpp; an operand's nbytes was checked, or it is empty).
std::vector<std::int64_t> c_strides(const std::vector<std::int64_t>& shape, std::size_t itemsize) {
  std::vector<std::int64_t> strides(shape.size());
  compact_strides(shape.data(), static_cast<int>(shape.size()), strides.data(), 1,
                  static_cast<std::int64_t>(itemsize));
  return strides;
}

operand operand_of(array_object* a, char* data, const std::vector<std::int64_t>& shape,
                   const std::vector<std::int64_t>& element_strides) {
  operand op;
  op.data = data;
  op.dt = dtype::from_c(a->view.dtype);
  op.shape = shape;
  const auto item = static_cast<std::int64_t>(op.dt.itemsize());
  op.strides.resize(element_strides.size());
  for (std::size_t i = 0; i < element_strides.size(); ++i) op.strides[i] = element_strides[i] * item;
  op.kind = static_cast<memory_kind>(a->view.memory_kind);
  op.device = is_gpu_resident(op.kind) ? a->view.device.device_id : -1;
  op.stream = a->view.stream;
  op.ordered = true;
  op.readonly = is_readonly(a);
  return op;
}

operand operand_of(array_object* a) {
  return operand_of(a, static_cast<char*>(a->view.data),
                    std::vector<std::int64_t>(a->view.shape, a->view.shape + a->view.ndim),
                    std::vector<std::int64_t>(a->view.strides, a->view.strides + a->view.ndim));
}

std::string type_name(PyObject* o) { return Py_TYPE(o)->tp_name; }

// A buffer-protocol export held for the duration of a copy (PyBUF_RECORDS_RO: any strides, the
// format; PyBUF_RECORDS when it is written to).
class held_buffer {
 public:
  held_buffer(PyObject* obj, bool writable) {
    if (PyObject_GetBuffer(obj, &m_view, writable ? PyBUF_RECORDS : PyBUF_RECORDS_RO) != 0)
      throw nb::python_error();
    m_held = true;
  }
  ~held_buffer() {
    if (m_held) PyBuffer_Release(&m_view);
  }
  held_buffer(const held_buffer&) = delete;
  held_buffer& operator=(const held_buffer&) = delete;

  operand to_operand(const char* what) const {
    operand op;
    try {
      op.dt = parse_buffer_format(m_view.format, static_cast<std::size_t>(m_view.itemsize));
    } catch (const type_error& e) {
      throw type_error(std::string(what) + ": " + e.what());
    } catch (const value_error& e) {
      throw value_error(std::string(what) + ": " + e.what());
    }
    op.data = static_cast<char*>(m_view.buf);
    if (m_view.ndim < 0 || m_view.ndim > ARRAYPORT_MAX_NDIM || (m_view.ndim > 0 && !m_view.shape))
      throw value_error(std::string(what) + ": expected a buffer of 0 to " +
                        std::to_string(ARRAYPORT_MAX_NDIM) + " dimensions with a shape, got " +
                        std::to_string(m_view.ndim) + (m_view.shape ? "" : " without one"));
    op.shape.assign(m_view.shape, m_view.shape + m_view.ndim);
    if (m_view.strides) op.strides.assign(m_view.strides, m_view.strides + m_view.ndim);
    // A foreign exporter's layout is checked like any other import (layout.hpp).
    const layout_info l = check_layout(what, op.shape.data(), m_view.strides ? op.strides.data() : nullptr,
                                       m_view.ndim, static_cast<std::int64_t>(op.dt.itemsize()),
                                       stride_unit::bytes);
    if (l.count > 0 && (!m_view.buf || !fits_address_space(m_view.buf, l)))
      throw value_error(std::string(what) + ": the buffer's shape " +
                        shape_string(op.shape.data(), op.shape.size()) +
                        " and strides reach outside the address space");
    if (!m_view.strides) op.strides = c_strides(op.shape, op.dt.itemsize());
    // Registered or pinned host memory (and managed memory) is read by the GPU asynchronously.
    const runtime::pointer_info info = runtime::query_pointer(m_view.buf);
    op.kind = info.kind;
    op.device = info.device;
    op.readonly = m_view.readonly != 0;
    op.foreign = true;
    return op;
  }

 private:
  Py_buffer m_view{};
  bool m_held = false;
};

// ---- ordering and the copy itself --------------------------------------------------------------

// The device a default-stream handle held with `op` names: its memory's, or (host kinds) the
// current device's.
int stream_device_of(const operand& op) { return op.device; }

// The device a copy between `dst` and `src` runs on: the stream's own, or for a default-stream
// handle the GPU side's (the destination's first), so that the work never lands on a device that
// holds neither side, whichever device is current. -1: the current device.
int copy_device(const operand& dst, const operand& src, stream_handle stream) {
  if (!runtime::is_available()) return -1;
  const int data = is_gpu_resident(dst.kind)   ? dst.device
                   : is_gpu_resident(src.kind) ? src.device
                                                                  : -1;
  return runtime::stream_device(stream, data);
}

// A copy between two GPUs' memory that the copy's device cannot reach directly (no peer access, or
// ARRAYPORT_P2P_DISABLE): staged through pinned host memory. The source side is packed on its own
// device and waited for; the destination side is scattered on its device's default stream, which
// `stream` (of `device`) is then ordered after.
void copy_staged_between_devices(const operand& dst, const operand& src, stream_handle stream, int device,
                                 const char* what) {
  buffer host(src.packed_bytes(src.dt, what), memory_kind::pinned, -1, nullptr);
  operand packed = src;
  packed.data = static_cast<char*>(host.data());
  packed.strides = c_strides(src.shape, src.dt.itemsize());
  packed.kind = memory_kind::pinned;
  packed.device = -1;
  {
    runtime::device_guard guard(src.device);
    runtime::order_streams(stream, device, nullptr, src.device);  // earlier work on the copy's stream
    if (src.ordered) runtime::order_streams(src.stream, src.device, nullptr, src.device);
    ::arrayport::detail::strided_copy(packed.side(), src.side(), src.shape.data(), src.ndim(),
                                      src.dt.itemsize(), nullptr, copy_kernel, what);
    runtime::stream_synchronize(nullptr);
  }
  runtime::device_guard guard(dst.device);
  if (dst.ordered) runtime::order_streams(dst.stream, dst.device, nullptr, dst.device);
  ::arrayport::detail::strided_copy(dst.side(), packed.side(), dst.shape.data(), dst.ndim(),
                                    dst.dt.itemsize(), nullptr, copy_kernel, what);
  runtime::order_streams(nullptr, dst.device, stream, device);
  runtime::stream_synchronize(nullptr);  // `host` is released when this returns
}

// Copies `src` into `dst` (equal shapes and dtypes, not overlapping) on `stream`, after the work
// queued on either Array's stream; work queued on those streams afterwards comes after the copy
// (a reader of `dst`, and the stream-ordered release of `src`'s memory). The GIL is released.
// Between two GPUs the copy goes peer to peer where they can reach each other (peer access is
// enabled once, on first use) and through pinned host memory otherwise. A side this process cannot
// reach is no_device_error naming `what` (the operation), before anything is queued.
void copy_ordered(const operand& dst, const operand& src, stream_handle stream, const char* what) {
  runtime::require_reachable(dst.kind, what, "the destination");
  runtime::require_reachable(src.kind, what, "the source");
  gil_release release;
  const int device = copy_device(dst, src, stream);
  runtime::device_guard guard(device);
  if (dst.ordered) runtime::order_streams(dst.stream, stream_device_of(dst), stream, device);
  if (src.ordered) runtime::order_streams(src.stream, stream_device_of(src), stream, device);
  // The copy's device must reach every side in GPU memory: its own, or a peer's it has access to.
  const bool across = is_gpu_resident(dst.kind) &&
                      is_gpu_resident(src.kind) && dst.device != src.device;
  int elsewhere = -1;  // a GPU side the copy's device cannot reach
  for (const operand* side : {&dst, &src})
    if (is_gpu_resident(side->kind) && device >= 0 && side->device != device &&
        !runtime::enable_peer_access(device, side->device))
      elsewhere = side->device;
  if (elsewhere < 0) {
    ::arrayport::detail::strided_copy(dst.side(), src.side(), dst.shape.data(), dst.ndim(),
                                      dst.dt.itemsize(), stream, copy_kernel, what);
  } else if (across) {
    copy_staged_between_devices(dst, src, stream, device, what);
  } else {
    // One GPU side, on another device than the stream's, out of its reach: the copy runs on that
    // device's default stream, ordered after `stream` and before it again.
    runtime::order_streams(stream, device, nullptr, elsewhere);
    {
      runtime::device_guard on(elsewhere);
      ::arrayport::detail::strided_copy(dst.side(), src.side(), dst.shape.data(), dst.ndim(),
                                        dst.dt.itemsize(), nullptr, copy_kernel, what);
    }
    runtime::order_streams(nullptr, elsewhere, stream, device);
  }
  if (dst.ordered) runtime::order_streams(stream, device, dst.stream, stream_device_of(dst));
  if (src.ordered) runtime::order_streams(stream, device, src.stream, stream_device_of(src));
  // A foreign buffer is released when the call returns; the GPU may still be reading memory it
  // can address directly (pinned or managed), so wait for this stream (not the device).
  if ((src.foreign && src.kind != memory_kind::host) || (dst.foreign && dst.kind != memory_kind::host))
    runtime::stream_synchronize(stream);
}

bool overlaps(const operand& a, const operand& b) {
  std::uintptr_t lo_a, hi_a, lo_b, hi_b;
  ::arrayport::detail::byte_span(a.side(), a.shape.data(), a.ndim(), a.dt.itemsize(), lo_a, hi_a);
  ::arrayport::detail::byte_span(b.side(), b.shape.data(), b.ndim(), b.dt.itemsize(), lo_b, hi_b);
  return lo_a < hi_b && lo_b < hi_a;
}

// A C-contiguous copy of `src` in a temporary of the same memory kind, kept alive by `storage`,
// which releases it in order on `stream`.
operand staged(const operand& src, stream_handle stream, buffer& storage, const char* what) {
  storage = buffer(src.packed_bytes(src.dt, what), src.kind, src.device, stream);
  operand t = src;
  t.data = static_cast<char*>(storage.data());
  t.strides = c_strides(src.shape, src.dt.itemsize());
  t.kind = storage.kind();
  t.ordered = false;
  t.foreign = false;
  copy_ordered(t, src, stream, what);
  return t;
}

// `value` broadcast to `shape` with NumPy's rules: axes are matched from the right, an extent of 1
// (or a missing axis) repeats with stride 0, and leading extents of 1 beyond the target's rank go.
operand broadcast_to(operand v, const std::vector<std::int64_t>& shape, const char* what) {
  const auto fail = [&] {
    throw value_error(std::string(what) + ": could not broadcast input array from shape " +
                      shape_string(v.shape.data(), v.shape.size()) + " into shape " +
                      shape_string(shape.data(), shape.size()));
  };
  std::size_t drop = 0;
  while (v.shape.size() - drop > shape.size() && v.shape[drop] == 1) ++drop;
  if (v.shape.size() - drop > shape.size()) fail();
  operand out = v;
  out.shape = shape;
  out.strides.assign(shape.size(), 0);
  const std::size_t offset = shape.size() - (v.shape.size() - drop);
  for (std::size_t i = offset; i < shape.size(); ++i) {
    const std::size_t j = i - offset + drop;
    if (v.shape[j] == shape[i]) out.strides[i] = v.strides[j];
    else if (v.shape[j] != 1) fail();
  }
  return out;
}

// ---- arguments -----------------------------------------------------------------------------------

// A memory location for prefetch/advise: None (`fallback`), a device index, or the host as -1,
// 'cpu' or 'host'.
int location_arg(PyObject* device, int fallback, const char* what) {
  if (device == Py_None) return fallback;
  if (PyUnicode_Check(device)) {
    std::string name = nb::borrow<nb::str>(device).c_str();
    if (name == "cpu" || name == "host") return -1;
    throw value_error(std::string(what) + ": device: expected a device index, -1, 'cpu' or None, got '" +
                      name + "'");
  }
  if (!PyBool_Check(device) && PyLong_Check(device) && PyLong_AsLongLong(device) == -1 &&
      !PyErr_Occurred())
    return -1;  // the host
  PyErr_Clear();
  return *device_arg(device, what, "device", true);
}

std::optional<dtype> dtype_arg(PyObject* d) {
  if (d == Py_None) return std::nullopt;
  return parse_dtype(d);
}

// ---- NumPy, for host results and dtype conversions --------------------------------------------

// A NumPy array holding `a`'s values on the host, C-contiguous, complete when returned. `what`
// names the operation and `whose` the array, for memory this process cannot reach.
nb::object to_numpy(array_object* a, stream_handle stream, const char* what, const char* whose) {
  runtime::require_reachable(static_cast<memory_kind>(a->view.memory_kind), what, whose);
  const dtype dt = dtype::from_c(a->view.dtype);
  if (dt == dtypes::bfloat16)
    throw type_error("get(): NumPy has no bfloat16 dtype; view it as uint16 (a.view('uint16')) or "
                     "export it through DLPack");
  nb::module_ np = import_numpy("get()");
  nb::object out = np.attr("empty")(nb::steal(tuple_of(a->view.shape, a->view.ndim)), to_typestr(dt));
  held_buffer target(out.ptr(), true);
  operand dst = target.to_operand("get()");
  copy_ordered(dst, operand_of(a), stream, what);
  {
    gil_release release;
    runtime::stream_synchronize(stream, array_device(a));  // the caller reads it on return; this stream only
  }
  return out;
}

// `value` converted to `to` on the host, as NumPy converts (what its __setitem__ and astype do).
// The GPU has no conversion kernel here: arrayport.ops.astype is the fast path.
nb::object converted(PyObject* value, dtype to, stream_handle stream, const char* what,
                     const char* op) {
  if (to == dtypes::bfloat16)
    throw type_error(std::string(what) + ": converting to bfloat16 is not supported here; give a "
                     "bfloat16 array");
  nb::module_ np = import_numpy(std::string(what) + ": converting to " + std::string(to.name()));
  // An Array goes through get(): device memory has no buffer protocol.
  nb::object host = is_array(value) ? to_numpy(as_array(value), stream, op, what) : nb::borrow(value);
  return np.attr("asarray")(host, to_typestr(to));
}

// ---- values to assign ---------------------------------------------------------------------------

bool is_python_scalar(PyObject* v) {
  return PyLong_Check(v) || PyFloat_Check(v) || PyComplex_Check(v);  // bool is an int
}

// Writes one `dt` element everywhere in `dst`, any layout, on `stream` (after dst's own work, and
// before dst's later work). GPU memory is filled in stream order without waiting: the element is
// a memset's byte or a kernel's parameter, so it may live on the caller's stack.
void fill_operand(const operand& dst, const unsigned char* element, stream_handle stream, const char* what) {
  runtime::require_reachable(dst.kind, what, "the array");
  gil_release release;
  const int device = runtime::is_available() ? runtime::stream_device(stream, dst.device) : -1;
  runtime::device_guard guard(device);
  if (dst.ordered) runtime::order_streams(dst.stream, dst.device, stream, device);
  ::arrayport::detail::strided_fill(dst.side(), dst.shape.data(), dst.ndim(), element, dst.dt.itemsize(),
                                    stream, fill_kernel, what);
  if (dst.ordered) runtime::order_streams(stream, device, dst.stream, dst.device);
}

bool is_c_contiguous(const operand& op) {
  return is_contiguous(op.shape.data(), op.strides.data(), op.ndim(), true,
                       static_cast<std::int64_t>(op.dt.itemsize()));
}

// dst[...] = value: a Python number, an arrayport Array, a buffer exporter (NumPy), an array that
// speaks DLPack or the CUDA array interface (CuPy, PyTorch, JAX, Numba; viewed, not copied), or a
// sequence, broadcast to dst's shape and converted to its dtype as NumPy would.
// Whether `value`'s type exports DLPack or the CUDA array interface: an array even when it also
// implements the number protocol, as a PyTorch tensor does.
bool speaks_array_protocol(PyObject* value) {
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(value));
  return PyObject_HasAttrString(type, "__dlpack__") == 1 ||
         PyObject_HasAttrString(type, "__cuda_array_interface__") == 1;
}

// `what` names the value argument, `op` the operation.
void assign(const operand& dst, PyObject* value, stream_handle stream, const char* what, const char* op) {
  runtime::require_reachable(dst.kind, op, "the array");
  if (dst.readonly) throw value_error(std::string(what) + ": assignment destination is read-only");
  if (!is_array(value) && (is_python_scalar(value) ||
                           (!PyObject_CheckBuffer(value) && PyNumber_Check(value) &&
                            !PySequence_Check(value) && !speaks_array_protocol(value)))) {
    alignas(16) unsigned char element[16] = {};  // aligned: the copy moves it in whole words
    scalar_to_bytes(value, dst.dt, element);
    fill_operand(dst, element, stream, op);
    return;
  }
  const auto unexpected = [&](PyObject* v) {
    return type_error(std::string(what) + ": expected a number, an arrayport.Array, an object with "
                      "the buffer protocol, __dlpack__ or __cuda_array_interface__, or a sequence, "
                      "got " + type_name(v));
  };
  if (PyUnicode_Check(value)) throw unexpected(value);
  nb::object converted_value;  // alive until the copy is done
  std::optional<held_buffer> held;
  // A foreign array without a usable buffer (CuPy refuses it for device memory; PyTorch, JAX and
  // Numba have none) is viewed through the consume bridge, its pending work ordered before
  // `stream`, and then copied from like an Array. Lists and tuples go to NumPy below.
  nb::object viewed;
  if (!is_array(value) && PyObject_CheckBuffer(value)) {
    try {
      held.emplace(value, false);
    } catch (nb::python_error&) {
      viewed = view_foreign(value, stream);
      if (!viewed.is_valid()) throw;  // nothing to fall back on: the exporter's own error
    }
  } else if (!is_array(value) && speaks_array_protocol(value)) {
    viewed = view_foreign(value, stream);
  }
  if (viewed.is_valid()) value = viewed.ptr();
  operand src;
  if (is_array(value) && dtype::from_c(as_array(value)->view.dtype) == dst.dt) {
    src = operand_of(as_array(value));
    if (viewed.is_valid()) {
      // The bridge has ordered the producer's work before `stream`; the view is released when
      // this call returns, so copy_ordered waits for `stream` before that (device memory).
      src.ordered = false;
      src.foreign = true;
    }
  } else {
    if (held) src = held->to_operand(what);
    if (is_array(value) || !held || src.dt != dst.dt) {
      held.reset();
      if (!is_array(value) && !PyObject_CheckBuffer(value) && !PySequence_Check(value))
        throw unexpected(value);
      converted_value = converted(value, dst.dt, stream, what, op);
      held.emplace(converted_value.ptr(), false);
      src = held->to_operand(what);
    }
  }
  runtime::require_reachable(src.kind, op, what);
  buffer temporary;
  if (overlaps(dst, src)) src = staged(src, stream, temporary, op);  // as NumPy does: a[1:] = a[:-1]
  copy_ordered(dst, broadcast_to(src, dst.shape, what), stream, op);
}

// ---- new arrays ---------------------------------------------------------------------------------

// A new C-contiguous Array of `kind` on `device` holding `src` (converted to `dt`), on `stream`
// (what the argument `stream_obj` named).
nb::object copy_to_new(PyObject* src_obj, const operand& src, dtype dt, memory_kind kind, int device,
                       stream_handle stream, nb::handle stream_obj, const char* what) {
  runtime::require_reachable(src.kind, what, "the source");  // before allocating
  const std::size_t bytes = src.packed_bytes(dt, what);  // count * itemsize of the new dtype
  // The copy runs on `stream`; the new Array is ordered on a stream of its own device (`stream`
  // itself, or that device's default stream, which copy_ordered orders after the copy).
  const stream_handle ordered_on = array_stream(kind, device, stream, nb::none(), what);
  nb::object out = make_owned_array(buffer(bytes, kind, device, ordered_on), dt, src.shape,
                                    ordered_on == stream ? stream_owner(stream_obj) : nb::handle());
  operand dst = operand_of(as_array(out.ptr()));
  if (dt == src.dt) {
    copy_ordered(dst, src, stream, what);
  } else {
    nb::object host = converted(src_obj, dt, stream, what, what);
    held_buffer held(host.ptr(), false);
    copy_ordered(dst, held.to_operand(what), stream, what);
  }
  return out;
}

int device_of(const operand& op) { return is_gpu_resident(op.kind) ? op.device : -1; }

// ---- methods --------------------------------------------------------------------------------------

template <class F>
PyObject* method(F&& f) {
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* { return f().release().ptr(); });
}

}  // namespace

nb::module_ import_numpy(const std::string& why) {
  try {
    return nb::module_::import_("numpy");
  } catch (nb::python_error&) {
    throw type_error(why + " needs NumPy, which is not installed");
  }
}

PyObject* array_get(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"stream", nullptr};
  PyObject* stream = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:get", const_cast<char**>(keywords), &stream))
    return nullptr;
  return method([&] {
    return to_numpy(as_array(self), parse_stream(stream, "get"), "Array.get", "the array");
  });
}

PyObject* array_fill(PyObject* self, PyObject* value) {
  return method([&] {
    array_object* a = as_array(self);
    const auto kind = static_cast<memory_kind>(a->view.memory_kind);
    runtime::require_reachable(kind, "Array.fill", "the array");
    if (is_readonly(a)) throw value_error("fill(): assignment destination is read-only");
    const dtype dt = dtype::from_c(a->view.dtype);
    alignas(16) unsigned char element[16] = {};
    scalar_to_bytes(value, dt, element);
    // On the array's own stream, as the creation functions that call this fill.
    if (is_c_contiguous(a->view)) {  // zeros() and friends come here: no operand to build
      gil_release release;
      runtime::device_guard guard(
          is_gpu_resident(kind) ? runtime::stream_device(a->view.stream, a->view.device.device_id) : -1);
      ::arrayport::detail::strided_fill({a->view.data, nullptr, kind, array_device(a)}, a->view.shape,
                                        a->view.ndim, element, dt.itemsize(), a->view.stream,
                                        fill_kernel, "Array.fill");
    } else {
      fill_operand(operand_of(a), element, a->view.stream, "Array.fill");
    }
    return nb::none();
  });
}

int array_ass_subscript(PyObject* self, PyObject* key, PyObject* value) {
  if (!value) {
    PyErr_SetString(PyExc_ValueError, "cannot delete array elements");
    return -1;
  }
  return guarded<int>(-1, [&] {
    array_object* a = as_array(self);
    if (is_readonly(a)) throw value_error("assignment destination is read-only");
    basic_index target = resolve_basic_index(a, key);
    assign(operand_of(a, target.data, target.shape, target.strides), value, current_stream().handle,
           "value", "Array.__setitem__");
    return 0;
  });
}

PyObject* array_copy(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"dtype", "memory", "device", "stream", nullptr};
  PyObject *dtype_obj = Py_None, *memory = Py_None, *device = Py_None, *stream = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOO:copy", const_cast<char**>(keywords),
                                   &dtype_obj, &memory, &device, &stream))
    return nullptr;
  return method([&] {
    const operand src = operand_of(as_array(self));
    runtime::require_reachable(src.kind, "Array.copy", "the array");
    const std::optional<memory_kind> mem = memory_arg(memory, "copy");
    const memory_kind kind = mem.value_or(src.kind);
    const int dev = device_arg(device, "copy").value_or(mem && kind != src.kind ? -1 : device_of(src));
    return copy_to_new(self, src, dtype_arg(dtype_obj).value_or(src.dt), kind, dev,
                       parse_stream(stream, "copy"), stream, "copy");
  });
}

PyObject* array_copy_to(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"dst", "stream", nullptr};
  PyObject *dst_obj = nullptr, *stream = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:copy_to", const_cast<char**>(keywords),
                                   &dst_obj, &stream))
    return nullptr;
  return method([&] {
    const operand src = operand_of(as_array(self));
    runtime::require_reachable(src.kind, "Array.copy_to", "the array");
    std::optional<held_buffer> held;
    operand dst;
    if (is_array(dst_obj)) {
      dst = operand_of(as_array(dst_obj));
    } else if (PyObject_CheckBuffer(dst_obj)) {
      held.emplace(dst_obj, false);
      dst = held->to_operand("copy_to: dst");
    } else {
      throw type_error("copy_to: dst: expected an arrayport.Array or a writable object with the "
                       "buffer protocol, got " + type_name(dst_obj));
    }
    runtime::require_reachable(dst.kind, "Array.copy_to", "dst");
    if (dst.readonly) throw value_error("copy_to: dst is read-only (assignment destination is read-only)");
    if (dst.shape != src.shape)
      throw value_error("copy_to: dst: expected shape " + shape_string(src.shape.data(), src.shape.size()) +
                        " (the source's), got " + shape_string(dst.shape.data(), dst.shape.size()));
    if (dst.dt != src.dt)
      throw type_error("copy_to: dst: expected dtype " + std::string(src.dt.name()) +
                       " (the source's), got " + std::string(dst.dt.name()) +
                       "; convert with copy(dtype=...) or assign with dst[...] = src");
    buffer temporary;
    const stream_handle s = parse_stream(stream, "copy_to");
    copy_ordered(dst, overlaps(dst, src) ? staged(src, s, temporary, "Array.copy_to") : src, s,
                 "Array.copy_to");
    return nb::none();
  });
}

PyObject* array_to(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"memory", "device", "stream", "dtype", "copy", nullptr};
  PyObject *memory = Py_None, *device = Py_None, *stream = Py_None, *dtype_obj = Py_None;
  PyObject* copy = Py_False;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOOO:to", const_cast<char**>(keywords), &memory,
                                   &device, &stream, &dtype_obj, &copy))
    return nullptr;
  return method([&]() -> nb::object {
    const operand src = operand_of(as_array(self));
    const std::optional<memory_kind> mem = memory_arg(memory, "to");
    const std::optional<int> dev_arg = device_arg(device, "to");
    const dtype dt = dtype_arg(dtype_obj).value_or(src.dt);
    const stream_handle s = parse_stream(stream, "to");  // checked even when nothing is copied
    const bool force_copy = bool_arg(copy, "to", "copy");
    const memory_kind asked = mem.value_or(src.kind);
    if (!runtime::is_reachable(src.kind)) {  // itself where nothing changes; no copy can be made
      if (asked == src.kind && dev_arg.value_or(src.device) == src.device && dt == src.dt && !force_copy)
        return nb::borrow(self);
      runtime::require_reachable(src.kind, "Array.to", "the array");
    }
    // Where the memory would come from: managed and pinned requests are host memory without a GPU.
    const int dev = dev_arg.value_or(asked == src.kind ? device_of(src) : -1);
    const memory_resource& resource = get_memory_resource(asked, dev);
    const bool same_place = resource.kind() == src.kind &&
                            (!is_gpu_resident(src.kind) || resource.device() == src.device);
    if (same_place && dt == src.dt && !force_copy) return nb::borrow(self);
    return copy_to_new(self, src, dt, asked, dev, s, stream, "to");
  });
}

PyObject* array_prefetch(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"device", "stream", nullptr};
  PyObject *device = Py_None, *stream = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:prefetch", const_cast<char**>(keywords),
                                   &device, &stream))
    return nullptr;
  return method([&] {
    array_object* a = as_array(self);
    const operand op = operand_of(a);
    const int where = location_arg(device, op.device, "prefetch");  // arguments first
    const stream_handle s = parse_stream(stream, "prefetch");
    if (op.kind != memory_kind::managed)
      throw value_error("prefetch: needs managed memory, but this array is in " +
                        std::string(to_string(op.kind)) + " memory");
    runtime::require_reachable(op.kind, "Array.prefetch", "the array");
    std::uintptr_t lo, hi;
    ::arrayport::detail::byte_span(op.side(), op.shape.data(), op.ndim(), op.dt.itemsize(), lo, hi);
    if (hi > lo) {
      gil_release release;
      const int device = runtime::stream_device(s, op.device);
      runtime::device_guard guard(device);
      runtime::order_streams(op.stream, op.device, s, device);
      runtime::mem_prefetch_async(reinterpret_cast<const void*>(lo), hi - lo, where, s);
    }
    return nb::none();
  });
}

PyObject* array_advise(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"advice", "device", nullptr};
  PyObject *advice = nullptr, *device = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:advise", const_cast<char**>(keywords), &advice,
                                   &device))
    return nullptr;
  return method([&] {
    static const std::pair<const char*, runtime::mem_advice> names[] = {
        {"set_read_mostly", runtime::mem_advice::set_read_mostly},
        {"unset_read_mostly", runtime::mem_advice::unset_read_mostly},
        {"set_preferred_location", runtime::mem_advice::set_preferred_location},
        {"unset_preferred_location", runtime::mem_advice::unset_preferred_location},
        {"set_accessed_by", runtime::mem_advice::set_accessed_by},
        {"unset_accessed_by", runtime::mem_advice::unset_accessed_by}};
    const char* expected = "expected one of 'set_read_mostly', 'unset_read_mostly', "
                           "'set_preferred_location', 'unset_preferred_location', "
                           "'set_accessed_by', 'unset_accessed_by'";
    if (!PyUnicode_Check(advice))
      throw type_error(std::string("advise: advice: ") + expected + ", got " + type_name(advice));
    const std::string name = nb::borrow<nb::str>(advice).c_str();
    const runtime::mem_advice* chosen = nullptr;
    for (const auto& [n, v] : names)
      if (name == n) chosen = &v;
    if (!chosen) throw value_error(std::string("advise: advice: ") + expected + ", got '" + name + "'");
    array_object* a = as_array(self);
    const operand op = operand_of(a);
    const int where = location_arg(device, op.device, "advise");  // arguments first
    if (op.kind != memory_kind::managed)
      throw value_error("advise: needs managed memory, but this array is in " +
                        std::string(to_string(op.kind)) + " memory");
    runtime::require_reachable(op.kind, "Array.advise", "the array");
    std::uintptr_t lo, hi;
    ::arrayport::detail::byte_span(op.side(), op.shape.data(), op.ndim(), op.dt.itemsize(), lo, hi);
    if (hi > lo) runtime::mem_advise(reinterpret_cast<const void*>(lo), hi - lo, *chosen, where);
    return nb::none();
  });
}

std::vector<unsigned char> leading_elements(array_object* a, std::int64_t count) {
  const std::size_t itemsize = itemsize_of(a);
  std::vector<unsigned char> head(static_cast<std::size_t>(count) * itemsize);
  const auto kind = static_cast<memory_kind>(a->view.memory_kind);
  runtime::require_reachable(kind, "Array.__repr__", "the array");
  if (count <= 0) return head;
  const int ndim = a->view.ndim;
  std::vector<std::int64_t> index(static_cast<std::size_t>(ndim), 0);
  gil_release release;
  if (is_host_accessible(kind)) runtime::stream_synchronize(a->view.stream, array_device(a));
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t offset = 0;  // in bounds of the Array's checked layout: cannot overflow
    element_offset(index.data(), a->view.strides, ndim, offset);
    const char* element = static_cast<const char*>(a->view.data) + offset * static_cast<std::int64_t>(itemsize);
    unsigned char* out = head.data() + static_cast<std::size_t>(i) * itemsize;
    if (is_host_accessible(kind)) std::memcpy(out, element, itemsize);
    else runtime::memcpy_async(out, memory_kind::host, element, kind, itemsize, a->view.stream,
                               "Array.__repr__");  // a few bytes each
    for (int k = ndim - 1; k >= 0; --k) {  // the next index in C order
      if (++index[static_cast<std::size_t>(k)] < a->view.shape[k]) break;
      index[static_cast<std::size_t>(k)] = 0;
    }
  }
  if (!is_host_accessible(kind)) runtime::stream_synchronize(a->view.stream, array_device(a));
  return head;
}

void register_copy_functions(nb::module_& m) {
  using namespace nb::literals;
  m.def("copy", [](nb::handle a, nb::handle dtype_obj, nb::handle memory, nb::handle device,
                   nb::handle stream) -> nb::object {
          if (is_array(a.ptr())) {
            nb::object method = a.attr("copy");
            return method("dtype"_a = dtype_obj, "memory"_a = memory, "device"_a = device,
                          "stream"_a = stream);
          }
          if (!PyObject_CheckBuffer(a.ptr()))
            throw type_error("copy: a: expected an arrayport.Array or an object with the buffer "
                             "protocol, got " + type_name(a.ptr()));
          held_buffer held(a.ptr(), false);
          const operand src = held.to_operand("copy: a");
          return copy_to_new(a.ptr(), src, dtype_arg(dtype_obj.ptr()).value_or(src.dt),
                             parse_memory(memory.ptr(), "copy"),
                             device_arg(device.ptr(), "copy").value_or(-1),
                             parse_stream(stream, "copy"), stream, "copy");
        }, "a"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(), "device"_a = nb::none(),
        "stream"_a = nb::none(),
        "A C-contiguous copy of an Array (in its memory unless memory= is given) or of a "
        "buffer-protocol object such as a NumPy array (in the default memory), asynchronous on "
        "the stream.");
  m.def("to_gpu", [](nb::handle a, nb::handle stream, nb::handle device, nb::handle dtype_obj) -> nb::object {
          const stream_handle s = parse_stream(stream, "to_gpu");
          const int dev = device_arg(device.ptr(), "to_gpu").value_or(-1);
          if (is_array(a.ptr())) {
            const operand src = operand_of(as_array(a.ptr()));
            runtime::require_reachable(src.kind, "to_gpu", "a");
            return copy_to_new(a.ptr(), src, dtype_arg(dtype_obj.ptr()).value_or(src.dt),
                               memory_kind::device, dev, s, stream, "to_gpu");
          }
          if (!PyObject_CheckBuffer(a.ptr()))
            throw type_error("to_gpu: a: expected a NumPy array or another object with the buffer "
                             "protocol, got " + type_name(a.ptr()));
          held_buffer held(a.ptr(), false);
          const operand src = held.to_operand("to_gpu: a");
          return copy_to_new(a.ptr(), src, dtype_arg(dtype_obj.ptr()).value_or(src.dt),
                             memory_kind::device, dev, s, stream, "to_gpu");
        }, "a"_a.none(), "stream"_a = nb::none(), "device"_a = nb::none(), "dtype"_a = nb::none(),
        "A device-memory Array holding a copy of a host array (PyCUDA's gpuarray.to_gpu): any "
        "object with the buffer protocol, any strides.");
}

}  // namespace arrayport::ext
