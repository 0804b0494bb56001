// Dispatch for arrayport.ops: NumPy's result-type rules (NEP 50 for Python scalars), broadcasting
// and dimension collapsing, where a call runs (CPU or the GPU, from the operands' memory kinds),
// and the launch through the kernel tables. Python-free: the bindings (bind/) read the arguments
// and pass the stream.
#pragma once

#include "ops/elementwise.hpp"
#include "ops/reduce.hpp"
#include "ops/span.hpp"
#include "ops/types.hpp"

#include <arrayport/view.hpp>

#include <cstdint>
#include <vector>

namespace arrayport::ops {

/// The kind of a Python scalar operand. NEP 50 calls bool, int, float and complex themselves
/// "weak": they adapt to the arrays. NumPy scalars are arrays (0-d, strong) and never reach here.
enum class weak_kind : std::uint8_t { none, bool_, int_, float_, complex_ };

/// One argument of an op: an array view, or a Python scalar (kind only; its value is converted to
/// the argument's dtype by the caller once the result dtype is known).
struct ops_arg {
  strided_view view;  ///< valid when kind == weak_kind::none
  weak_kind kind = weak_kind::none;
  /// A scalar of a subclass of int, float or complex (an IntEnum): NumPy 2 gives it its kind's
  /// default dtype (int64, float64, complex128) as a strong type, as it would a 0-d array.
  bool strong = false;
  /// An arrayport Array: its data is ready on view.stream(), which the op is ordered after (and
  /// before again). Other arrays were ordered before the current stream by the consume bridge.
  bool ordered = false;
  const char* name = "x";  ///< the argument's name in error messages
};

/// A list of operands (pointers into the caller's arguments).
using arg_list = span<const ops_arg* const>;

/// The stream a call runs on and its device (-1: whichever device is current). The caller
/// passes it, as CUB's algorithms take theirs: the kernel library keeps no state of its own.
struct stream_ref {
  stream_handle handle = nullptr;  ///< nullptr: the legacy default stream
  int device = -1;
};

/// NumPy's promotion of two array dtypes (bfloat16 added: with float16 it gives float32, with
/// an integer wider than 8 bits float64, otherwise it acts as float16 does).
type_id promote(type_id a, type_id b) noexcept;

/// The result dtype of an element-wise op over `args` (where's condition excluded by the caller),
/// following NEP 50, then the op's own rule (true division and sqrt of integers give floats).
/// axpy's is that of a * x + y in NumPy: the product's dtype, then the sum's.
/// Throws type_error naming the op and dtype when the op does not support it.
type_id result_type(op_id op, const char* op_name, arg_list args);

/// Where a call runs and what it allocates.
struct placement {
  bool on_gpu = false;
  memory_kind out_kind = memory_kind::host;
  int device = -1;  ///< CUDA device of device/managed memory, -1 otherwise
  /// Some operand is memory the GPU can write (pinned or managed, as its producer reports it): a
  /// CPU call waits for the stream first. Operands reported as pageable host memory (NumPy
  /// arrays) skip the wait, as NumPy itself would: a NumPy array over pages the GPU writes
  /// (cuda.register, np.asarray of a pinned Array) is the caller's to synchronize first.
  bool gpu_reachable = false;
  /// The streams of the Array operands (ops_arg::ordered) in memory the GPU reaches, other than
  /// the call's: a GPU call's stream waits for each (an event) and each waits for it after
  /// (later readers of an input or out=, and stream-ordered frees); a CPU call waits for them.
  struct array_stream {
    stream_handle handle;
    int device;  ///< the device a default-stream handle names (-1: the current one)
  };
  int n_streams = 0;
  array_stream streams[max_inputs + 1];
};

/// Chooses the placement from the array operands' memory kinds (`out` included): device memory
/// runs on its GPU, pageable host memory on the CPU, pinned/managed on the GPU when there is one.
/// Mixing devices, or device-only with host-only memory, is a value_error naming the arguments;
/// so is a GPU call whose `stream` belongs to another device.
placement place(const char* op_name, arg_list arrays, stream_ref stream);

/// Broadcast shape of the arrays' shapes (scalars are 0-d) into `shape` (room for
/// ARRAYPORT_MAX_NDIM extents); returns its rank. value_error naming the arguments.
int broadcast_shapes(const char* op_name, arg_list arrays, std::int64_t* shape);
inline std::vector<std::int64_t> broadcast_shapes(const char* op_name, arg_list arrays) {
  std::int64_t shape[ARRAYPORT_MAX_NDIM];
  const int nd = broadcast_shapes(op_name, arrays, shape);
  return std::vector<std::int64_t>(shape, shape + nd);
}

/// Fills the layout of `call` (output + inputs broadcast to `shape`, collapsed) and `flat`.
/// `out` is the output view (already checked to have `shape`, of rank `nd`); `inputs` are the
/// call's n_inputs operands, each loaded as arg_type(call.op, i, call.compute).
void build_layout(ew_call& call, const strided_view& out, const std::int64_t* shape, int nd,
                  span<const ops_arg> inputs);

/// Runs (CPU) or enqueues (GPU, on `stream`) an element-wise call. GIL not needed.
void launch(ew_call& call, const placement& where, stream_ref stream);

/// device=N with array inputs in pageable host memory, which the GPU cannot read: `call` (one
/// flat dimension in which every array input is contiguous, `call.out` in memory the GPU writes)
/// runs on the GPU in chunks of about `chunk_bytes` per input. Each chunk of every array input is
/// copied by the CPU threads into one of three pinned slots while the GPU computes the chunks
/// before it (an event per slot says when it may be refilled). Returns once the GPU is done. GIL
/// not needed.
void launch_staged(const ew_call& call, const placement& where, std::int64_t chunk_bytes,
                   stream_ref stream);

/// Fills `call`'s layout for reducing `view` over `axes` (sorted, unique); returns the shape of
/// the output (with 1s for reduced axes when keepdims).
std::vector<std::int64_t> build_reduce(reduce_call& call, const strided_view& view,
                                       const std::vector<int>& axes, bool keepdims);

/// The same for dot: x and y broadcast to `shape` (broadcast_shapes of the two), reduced over
/// `axes` of it.
std::vector<std::int64_t> build_reduce(reduce_call& call, const strided_view& x,
                                       const strided_view& y,
                                       const std::vector<std::int64_t>& shape,
                                       const std::vector<int>& axes, bool keepdims);

/// Runs (CPU) or enqueues (GPU, on `stream`) a reduction. GIL not needed.
void launch(reduce_call& call, const placement& where, stream_ref stream);

}  // namespace arrayport::ops
