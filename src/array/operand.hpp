// The two sides of a copy inside arrayport._core (an Array's memory, a buffer exporter's, a
// temporary's) and the stream-ordered copy and fill between them.
#pragma once

#include "array/array_internal.hpp"

#include <arrayport/buffer.hpp>
#include <arrayport/detail/strided_copy.hpp>
#include <arrayport/dtype.hpp>
#include <arrayport/layout.hpp>
#include <arrayport/memory_kind.hpp>

#include <Python.h>

#include <cstdint>
#include <vector>

namespace arrayport::ext {

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
    return check_layout(what, shape.data(), nullptr, ndim(),
                        static_cast<std::int64_t>(as.itemsize()));
  }
  std::size_t packed_bytes(dtype as, const char* what) const {
    return static_cast<std::size_t>(packed(as, what).nbytes);
  }
  ::arrayport::detail::copy_operand side() const noexcept {
    return {data, strides.data(), kind, device};
  }
};

/// C-order byte strides of `shape` (an operand's nbytes was checked, or it is empty).
std::vector<std::int64_t> c_strides(const std::vector<std::int64_t>& shape, std::size_t itemsize);

/// The operand of `a`'s memory, or of a part of it (`element_strides` in elements of its dtype).
operand operand_of(array_object* a, char* data, const std::vector<std::int64_t>& shape,
                   const std::vector<std::int64_t>& element_strides);
operand operand_of(array_object* a);

/// The CUDA device of an operand in GPU memory, -1 for host kinds.
int device_of(const operand& op);

// A buffer-protocol export held for the duration of a copy (PyBUF_RECORDS_RO: any strides, the
// format; PyBUF_RECORDS when it is written to).
class held_buffer {
 public:
  held_buffer(PyObject* obj, bool writable);
  ~held_buffer();
  held_buffer(const held_buffer&) = delete;
  held_buffer& operator=(const held_buffer&) = delete;

  /// The export as an operand; its dtype, layout and reach checked, messages naming `what`.
  operand to_operand(const char* what) const;

 private:
  Py_buffer m_view{};
  bool m_held = false;
};

/// Copies `src` into `dst` (equal shapes and dtypes, not overlapping) on `stream`, after the work
/// queued on either Array's stream; work queued on those streams afterwards comes after the copy
/// (a reader of `dst`, and the stream-ordered release of `src`'s memory). The GIL is released.
/// Between two GPUs the copy goes peer to peer where they can reach each other (peer access is
/// enabled once, on first use) and through pinned host memory otherwise. A side this process
/// cannot reach is no_device_error naming `what` (the operation), before anything is queued.
void copy_ordered(const operand& dst, const operand& src, stream_handle stream, const char* what);

/// Whether the bytes `a` and `b` reach overlap.
bool overlaps(const operand& a, const operand& b);

/// A C-contiguous copy of `src` in a temporary of the same memory kind, kept alive by `storage`,
/// which releases it in order on `stream`.
operand staged(const operand& src, stream_handle stream, buffer& storage, const char* what);

/// `value` broadcast to `shape` with NumPy's rules: axes are matched from the right, an extent of
/// 1 (or a missing axis) repeats with stride 0, and leading extents of 1 beyond the target's rank
/// go.
operand broadcast_to(operand v, const std::vector<std::int64_t>& shape, const char* what);

/// Writes one `dt` element everywhere in `dst`, any layout, on `stream` (after dst's own work, and
/// before dst's later work). GPU memory is filled in stream order without waiting: the element is
/// a memset's byte or a kernel's parameter, so it may live on the caller's stack.
void fill_operand(const operand& dst, const unsigned char* element, stream_handle stream,
                  const char* what);

}  // namespace arrayport::ext
