// The argument vocabulary of arrayport's Python functions, one parser per kind (dtype=, memory=,
// device=, stream=, shape=, ints, bools) and one set of messages, "[function: ]name: expected
// what, got what": every function that takes such an argument calls these.
#pragma once

#include <arrayport/dtype.hpp>
#include <arrayport/memory_kind.hpp>

#include <nanobind/nanobind.h>

#include <Python.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace arrayport::ext {

/// What the argument vocabulary needs from the cuda layer above it, installed by register_cuda
/// (common/ includes nothing of cuda/). Until then: no Device type, the legacy default stream.
struct cuda_argument_hooks {
  /// Whether `obj` is an arrayport.cuda.Device, and then its index (checked when it was made).
  bool (*device_index_of)(PyObject* obj, int& index) noexcept = nullptr;
  /// The calling thread's current stream: what stream=None means.
  stream_handle (*current_stream)() noexcept = nullptr;
  /// What keeps that stream alive (the innermost `with` block's Stream), or nullptr. Borrowed.
  PyObject* (*current_stream_object)() noexcept = nullptr;
};
void set_cuda_argument_hooks(const cuda_argument_hooks& hooks) noexcept;

/// "what: name: " (or "name: " when `what` is null or empty): how every message starts.
std::string arg_prefix(const char* what, const char* name);

/// The type name a message shows for `obj` ("str", "numpy.ndarray").
std::string type_name_of(PyObject* obj);

/// `obj` as a Python int through __index__ (never a bool): a type_error "<prefix>expected
/// <expected>, got <type>" for another type, and for an __index__ that raises (its message kept).
nanobind::object index_arg(PyObject* obj, const std::string& prefix, const char* expected);

/// An int argument: a Python int or anything with __index__ (NumPy integers), never a bool, in
/// [lo, hi]. TypeError for another type (or an __index__ that raises), ValueError out of range;
/// `expected` describes the valid values ("a device index >= 0").
std::int64_t int_arg(PyObject* obj, const char* what, const char* name, std::int64_t lo,
                     std::int64_t hi, const char* expected);

/// True or False (NumPy's bool too); anything else is a TypeError naming the argument.
bool bool_arg(PyObject* obj, const char* what, const char* name);

/// device=: None (nullopt), an int >= 0 or an arrayport.cuda.Device. With a GPU the index must
/// be < device_count(); without one, `needs_device` raises NoDeviceError (the probe's reason)
/// once the type is known to be right, and otherwise any index passes (memory kinds that fall
/// back to host memory ignore it; device memory raises NoDeviceError where it is allocated).
/// `none_ok` false: None is refused too (set_device).
std::optional<int> device_arg(PyObject* obj, const char* what, const char* name = "device",
                              bool needs_device = false, bool none_ok = true);

/// memory=: None (nullopt) or a memory kind name.
std::optional<memory_kind> memory_arg(PyObject* obj, const char* what = nullptr);
/// memory= with None meaning the default kind (device memory with a GPU, else host).
memory_kind parse_memory(PyObject* obj, const char* what = nullptr);

/// dtype=: a name ('float32', 'f4'), a NumPy dtype or scalar type, or a Python number type;
/// None means float64.
dtype parse_dtype(nanobind::handle d);

/// shape=: an int or a sequence of ints >= 0 (at most ARRAYPORT_MAX_NDIM of them).
std::vector<std::int64_t> parse_shape(nanobind::handle shape, const char* what = nullptr);

/// A stream handle (a cudaStream_t address as an int): >= 0 and fitting a pointer. `what` names
/// the function and argument ("Stream.from_handle", "stream").
std::uintptr_t handle_arg(PyObject* obj, const std::string& what);

/// stream=: None (the calling thread's current stream), an int handle >= 0, or an object with
/// __cuda_stream__.
stream_handle parse_stream(nanobind::handle stream, const char* what = nullptr);

/// What keeps the stream that parse_stream(stream) names alive: the object itself, the
/// innermost `with` block's stream for None, nothing (a null handle) for an int handle, which
/// its owner keeps.
/// An Array holds it until its memory is released on that stream.
nanobind::handle stream_owner(nanobind::handle stream) noexcept;

}  // namespace arrayport::ext
