// The operands of an arrayport.ops call as the bindings read them: a Python object becomes an
// ops_arg (an array view or a Python scalar), its producer held for the call.
#pragma once

#include "ops/dispatch.hpp"
#include "ops/span.hpp"

#include <arrayport/python/acquire.hpp>

#include <nanobind/nanobind.h>

#include <optional>

namespace arrayport::ext {

/// One argument of an op: the Python object and the name its messages give it.
struct operand {
  nanobind::handle obj;
  const char* name;  // a static string, as read_operand's op_name: labels are kept by address
};

/// Keeps what an input's view points to alive for the call.
struct input_holder {
  // User-provided: for the implicit one GCC 12 zero-fills the whole object (328 bytes a slot,
  // every call); this one stores two words.
  input_holder() noexcept {}
  // Engaged only for operands taken through the bridge: an empty `acquired` zero-fills some
  // 400 bytes, which every Array and scalar operand (and every unused slot) would pay for.
  std::optional<python::acquired> held;
  PyObject* scalar = nullptr;  // borrowed: the Python scalar, converted once the dtype is known
};

/// An arrayport.Array (its view read directly), a Python scalar (bool, int, float, complex: weak
/// in NEP 50's sense) when `allow_scalar`, or any other array through the consume bridge, ordered
/// before `stream`. Messages name "<op_name>: argument '<name>'".
void read_operand(const operand& in, const char* op_name, stream_handle stream,
                  input_holder& holder, ops::ops_arg& arg, bool allow_scalar = true);

/// A scalar operand (argument `arg`, or zero_value when null) as one element of `dt`, with
/// scalar_to_bytes's checks and messages renamed after the op's argument.
void scalar_operand(PyObject* value, dtype dt, unsigned char* out, const char* op_name,
                    const char* arg);

/// A GPU call reads (and writes) foreign operands after the op returns and releases them: it
/// waits for `stream` first when any operand of `holders` came through the bridge.
void wait_before_release(ops::span<const input_holder> holders, const ops::placement& where,
                         stream_handle stream);

/// Whether the bytes two views touch overlap.
bool overlaps(const strided_view& a, const strided_view& b);

/// Whether an element-wise op may write `out` while it reads `in`: every element is read from
/// the place it is written to.
bool same_elements(const strided_view& in, const strided_view& out);

bool c_contiguous(const strided_view& v);

/// ValueError naming `op_name` and out= when several elements of `out` share memory (a zero or
/// overlapping stride), `why` saying why that has no defined result there.
void require_distinct_out_elements(const char* op_name, const strided_view& out, const char* why);

/// astype's dtype=, read as arrayport.empty reads it, with messages that name astype.
dtype parse_astype_dtype(nanobind::handle d);

/// Whether to release the GIL around a launch: for GPU launches (which may block) and CPU work
/// long enough to pay for it (docs/benchmarks.md, "Tuning constants of arrayport.ops").
inline bool release_gil(const ops::placement& where, std::int64_t elements) {
  return where.on_gpu || elements >= (std::int64_t(1) << 15);
}

}  // namespace arrayport::ext
