// Operands and the stream-ordered copy and fill between them (operand.hpp).
#include "array/operand.hpp"

#include "array/strided_copy.hpp"
#include "common/gil.hpp"

#include <arrayport/detail/fill.hpp>
#include <arrayport/error.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/python/spellings.hpp>

#include <string>

namespace arrayport::ext {

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
  for (std::size_t i = 0; i < element_strides.size(); ++i)
    op.strides[i] = element_strides[i] * item;
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

int device_of(const operand& op) { return is_gpu_resident(op.kind) ? op.device : -1; }

held_buffer::held_buffer(PyObject* obj, bool writable) {
  if (PyObject_GetBuffer(obj, &m_view, writable ? PyBUF_RECORDS : PyBUF_RECORDS_RO) != 0)
    throw nanobind::python_error();
  m_held = true;
}

held_buffer::~held_buffer() {
  if (m_held) PyBuffer_Release(&m_view);
}

operand held_buffer::to_operand(const char* what) const {
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
  const layout_info l =
      check_layout(what, op.shape.data(), m_view.strides ? op.strides.data() : nullptr, m_view.ndim,
                   static_cast<std::int64_t>(op.dt.itemsize()), stride_unit::bytes);
  if (l.count > 0 && (!m_view.buf || !fits_address_space(m_view.buf, l)))
    throw value_error(std::string(what) + ": the buffer's shape " + shape_string(op.shape) +
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

// ---- ordering and the copy itself --------------------------------------------------------------

namespace {

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
void copy_staged_between_devices(const operand& dst, const operand& src, stream_handle stream,
                                 int device, const char* what) {
  buffer host(src.packed_bytes(src.dt, what), memory_kind::pinned, -1, nullptr);
  operand packed = src;
  packed.data = static_cast<char*>(host.data());
  packed.strides = c_strides(src.shape, src.dt.itemsize());
  packed.kind = memory_kind::pinned;
  packed.device = -1;
  {
    runtime::device_guard guard(src.device);
    // Earlier work on the copy's stream.
    runtime::order_streams(stream, device, nullptr, src.device);
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

}  // namespace

void copy_ordered(const operand& dst, const operand& src, stream_handle stream, const char* what) {
  runtime::require_reachable(dst.kind, what, "the destination");
  runtime::require_reachable(src.kind, what, "the source");
  gil_release release;
  const int device = copy_device(dst, src, stream);
  runtime::device_guard guard(device);
  if (dst.ordered) runtime::order_streams(dst.stream, stream_device_of(dst), stream, device);
  if (src.ordered) runtime::order_streams(src.stream, stream_device_of(src), stream, device);
  // The copy's device must reach every side in GPU memory: its own, or a peer's it has access to.
  const bool across =
      is_gpu_resident(dst.kind) && is_gpu_resident(src.kind) && dst.device != src.device;
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
  if (dst.ordered) runtime::order_streams_after(stream, device, dst.stream, stream_device_of(dst));
  if (src.ordered) runtime::order_streams_after(stream, device, src.stream, stream_device_of(src));
  // A foreign buffer is released when the call returns; the GPU may still be reading memory it
  // can address directly (pinned or managed), so wait for this stream (not the device).
  if ((src.foreign && src.kind != memory_kind::host) ||
      (dst.foreign && dst.kind != memory_kind::host))
    runtime::stream_synchronize(stream);
}

bool overlaps(const operand& a, const operand& b) {
  std::uintptr_t lo_a, hi_a, lo_b, hi_b;
  ::arrayport::detail::byte_span(a.side(), a.shape.data(), a.ndim(), a.dt.itemsize(), lo_a, hi_a);
  ::arrayport::detail::byte_span(b.side(), b.shape.data(), b.ndim(), b.dt.itemsize(), lo_b, hi_b);
  return lo_a < hi_b && lo_b < hi_a;
}

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

operand broadcast_to(operand v, const std::vector<std::int64_t>& shape, const char* what) {
  const auto fail = [&] {
    throw value_error(std::string(what) + ": could not broadcast input array from shape " +
                      shape_string(v.shape) + " into shape " + shape_string(shape));
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
    if (v.shape[j] == shape[i])
      out.strides[i] = v.strides[j];
    else if (v.shape[j] != 1)
      fail();
  }
  return out;
}

void fill_operand(const operand& dst, const unsigned char* element, stream_handle stream,
                  const char* what) {
  runtime::require_reachable(dst.kind, what, "the array");
  gil_release release;
  const int device = runtime::is_available() ? runtime::stream_device(stream, dst.device) : -1;
  runtime::device_guard guard(device);
  if (dst.ordered) runtime::order_streams(dst.stream, dst.device, stream, device);
  ::arrayport::detail::strided_fill(dst.side(), dst.shape.data(), dst.ndim(), element,
                                    dst.dt.itemsize(), stream, fill_kernel, what);
  if (dst.ordered) runtime::order_streams_after(stream, device, dst.stream, dst.device);
}

}  // namespace arrayport::ext
