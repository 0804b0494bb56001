// arrayport.Array copies: get, fill, copy, copy_to, to and __setitem__, and the module functions
// copy and to_gpu. Every copy is one strided copy on a stream (default: the calling thread's
// current stream), ordered against the arrays' own streams with events (operand.hpp).
#include "array/array_internal.hpp"
#include "array/operand.hpp"
#include "array/strided_copy.hpp"
#include "common/arguments.hpp"
#include "common/errors.hpp"
#include "common/gil.hpp"
#include "common/scalars.hpp"
#include "array/from_foreign.hpp"
#include "cuda/current_stream.hpp"

#include <arrayport/buffer.hpp>
#include <arrayport/detail/fill.hpp>
#include <arrayport/detail/strided_copy.hpp>
#include <arrayport/error.hpp>
#include <arrayport/memory_resource.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/python/spellings.hpp>

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
    throw type_error(std::string(what) +
                     ": NumPy has no bfloat16 dtype, and this goes through NumPy: convert it "
                     "with arrayport.ops.astype(a, 'float32'), view it as uint16 "
                     "(a.view('uint16')) or export it through DLPack");
  nb::module_ np = import_numpy("get()");
  nb::object out =
      np.attr("empty")(nb::steal(tuple_of(a->view.shape, a->view.ndim)), to_typestr(dt));
  held_buffer target(out.ptr(), true);
  operand dst = target.to_operand("get()");
  copy_ordered(dst, operand_of(a), stream, what);
  {
    gil_release release;
    // The caller reads it on return: this stream only.
    runtime::stream_synchronize(stream, array_device(a));
  }
  return out;
}

// `value` converted to `to` on the host, as NumPy converts (what its __setitem__ and astype do).
// The GPU has no conversion kernel here: arrayport.ops.astype is the fast path.
nb::object converted(PyObject* value, dtype to, stream_handle stream, const char* what,
                     const char* op) {
  if (to == dtypes::bfloat16)
    throw type_error(std::string(what) +
                     ": converting to bfloat16 is not supported here (NumPy has no bfloat16): "
                     "convert with arrayport.ops.astype(x, 'bfloat16'), or give a bfloat16 "
                     "array");
  nb::module_ np = import_numpy(std::string(what) + ": converting to " + std::string(to.name()));
  // An Array goes through get(): device memory has no buffer protocol.
  nb::object host =
      is_array(value) ? to_numpy(as_array(value), stream, op, what) : nb::borrow(value);
  return np.attr("asarray")(host, to_typestr(to));
}

// ---- values to assign ---------------------------------------------------------------------------

bool is_python_scalar(PyObject* v) {
  return PyLong_Check(v) || PyFloat_Check(v) || PyComplex_Check(v);  // bool is an int
}

// Whether `value`'s type exports DLPack or the CUDA array interface: an array even when it also
// implements the number protocol, as a PyTorch tensor does.
bool speaks_array_protocol(PyObject* value) {
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(value));
  return PyObject_HasAttrString(type, "__dlpack__") == 1 ||
         PyObject_HasAttrString(type, "__cuda_array_interface__") == 1;
}

// dst[...] = value: a Python number, an arrayport Array, a buffer exporter (NumPy), an array that
// speaks DLPack or the CUDA array interface (CuPy, PyTorch, JAX, Numba; viewed, not copied), or a
// sequence, broadcast to dst's shape and converted to its dtype as NumPy would. `what` names the
// value argument, `op` the operation.
void assign(const operand& dst, PyObject* value, stream_handle stream, const char* what,
            const char* op) {
  runtime::require_reachable(dst.kind, op, "the array");
  if (dst.readonly) throw value_error(std::string(what) + ": assignment destination is read-only");
  if (!is_array(value) &&
      (is_python_scalar(value) || (!PyObject_CheckBuffer(value) && PyNumber_Check(value) &&
                                   !PySequence_Check(value) && !speaks_array_protocol(value)))) {
    alignas(16) unsigned char element[16] = {};  // aligned: the copy moves it in whole words
    scalar_to_bytes(value, dst.dt, element);
    fill_operand(dst, element, stream, op);
    return;
  }
  const auto unexpected = [&](PyObject* v) {
    return type_error(std::string(what) +
                      ": expected a number, an arrayport.Array, an object with "
                      "the buffer protocol, __dlpack__ or __cuda_array_interface__, or a sequence, "
                      "got " +
                      type_name_of(v));
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
  if (overlaps(dst, src))
    src = staged(src, stream, temporary, op);  // as NumPy does: a[1:] = a[:-1]
  copy_ordered(dst, broadcast_to(src, dst.shape, what), stream, op);
}

// ---- new arrays ---------------------------------------------------------------------------------

// A new C-contiguous Array of `kind` on `device` holding `src` (converted to `dt`), on `stream`
// (what the argument `stream_obj` named).
nb::object copy_to_new(PyObject* src_obj, const operand& src, dtype dt, memory_kind kind,
                       int device, stream_handle stream, nb::handle stream_obj, const char* what) {
  runtime::require_reachable(src.kind, what, "the source");  // before allocating
  const std::size_t bytes = src.packed_bytes(dt, what);      // count * itemsize of the new dtype
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
  return guarded_object([&] {
    return to_numpy(as_array(self), parse_stream(stream, "get"), "Array.get", "the array");
  });
}

PyObject* array_fill(PyObject* self, PyObject* value) {
  return guarded_object([&] {
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
          is_gpu_resident(kind) ? runtime::stream_device(a->view.stream, a->view.device.device_id)
                                : -1);
      ::arrayport::detail::strided_fill({a->view.data, nullptr, kind, array_device(a)},
                                        a->view.shape, a->view.ndim, element, dt.itemsize(),
                                        a->view.stream, fill_kernel, "Array.fill");
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
  return guarded_object([&] {
    const operand src = operand_of(as_array(self));
    runtime::require_reachable(src.kind, "Array.copy", "the array");
    const std::optional<memory_kind> mem = memory_arg(memory, "copy");
    const memory_kind kind = mem.value_or(src.kind);
    const int dev =
        device_arg(device, "copy").value_or(mem && kind != src.kind ? -1 : device_of(src));
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
  return guarded_object([&] {
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
      throw type_error(
          "copy_to: dst: expected an arrayport.Array or a writable object with the "
          "buffer protocol, got " +
          type_name_of(dst_obj));
    }
    runtime::require_reachable(dst.kind, "Array.copy_to", "dst");
    if (dst.readonly)
      throw value_error("copy_to: dst is read-only (assignment destination is read-only)");
    if (dst.shape != src.shape)
      throw value_error("copy_to: dst: expected shape " + shape_string(src.shape) +
                        " (the source's), got " + shape_string(dst.shape));
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
  return guarded_object([&]() -> nb::object {
    const operand src = operand_of(as_array(self));
    const std::optional<memory_kind> mem = memory_arg(memory, "to");
    const std::optional<int> dev_arg = device_arg(device, "to");
    const dtype dt = dtype_arg(dtype_obj).value_or(src.dt);
    const stream_handle s = parse_stream(stream, "to");  // checked even when nothing is copied
    const bool force_copy = bool_arg(copy, "to", "copy");
    const memory_kind asked = mem.value_or(src.kind);
    if (!runtime::is_reachable(src.kind)) {  // itself where nothing changes; no copy can be made
      if (asked == src.kind && dev_arg.value_or(src.device) == src.device && dt == src.dt &&
          !force_copy)
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

void register_copy_functions(nb::module_& m) {
  using namespace nb::literals;
  m.def(
      "copy",
      [](nb::handle a, nb::handle dtype_obj, nb::handle memory, nb::handle device,
         nb::handle stream) -> nb::object {
        if (is_array(a.ptr())) {
          nb::object method = a.attr("copy");
          return method("dtype"_a = dtype_obj, "memory"_a = memory, "device"_a = device,
                        "stream"_a = stream);
        }
        if (!PyObject_CheckBuffer(a.ptr()))
          throw type_error(
              "copy: a: expected an arrayport.Array or an object with the buffer "
              "protocol, got " +
              type_name_of(a.ptr()));
        held_buffer held(a.ptr(), false);
        const operand src = held.to_operand("copy: a");
        return copy_to_new(a.ptr(), src, dtype_arg(dtype_obj.ptr()).value_or(src.dt),
                           parse_memory(memory.ptr(), "copy"),
                           device_arg(device.ptr(), "copy").value_or(-1),
                           parse_stream(stream, "copy"), stream, "copy");
      },
      "a"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(), "device"_a = nb::none(),
      "stream"_a = nb::none(),
      "A C-contiguous copy of an Array (in its memory unless memory= is given) or of a "
      "buffer-protocol object such as a NumPy array (in the default memory), asynchronous on "
      "the stream.");
  m.def(
      "to_gpu",
      [](nb::handle a, nb::handle stream, nb::handle device, nb::handle dtype_obj) -> nb::object {
        const stream_handle s = parse_stream(stream, "to_gpu");
        const int dev = device_arg(device.ptr(), "to_gpu").value_or(-1);
        if (is_array(a.ptr())) {
          const operand src = operand_of(as_array(a.ptr()));
          runtime::require_reachable(src.kind, "to_gpu", "a");
          return copy_to_new(a.ptr(), src, dtype_arg(dtype_obj.ptr()).value_or(src.dt),
                             memory_kind::device, dev, s, stream, "to_gpu");
        }
        if (!PyObject_CheckBuffer(a.ptr()))
          throw type_error(
              "to_gpu: a: expected a NumPy array or another object with the buffer "
              "protocol, got " +
              type_name_of(a.ptr()));
        held_buffer held(a.ptr(), false);
        const operand src = held.to_operand("to_gpu: a");
        return copy_to_new(a.ptr(), src, dtype_arg(dtype_obj.ptr()).value_or(src.dt),
                           memory_kind::device, dev, s, stream, "to_gpu");
      },
      "a"_a.none(), "stream"_a = nb::none(), "device"_a = nb::none(), "dtype"_a = nb::none(),
      "A device-memory Array holding a copy of a host array (PyCUDA's gpuarray.to_gpu): any "
      "object with the buffer protocol, any strides.");
}

}  // namespace arrayport::ext
