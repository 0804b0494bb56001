// The creation functions: empty, zeros, ones, full and their *_like forms, and the stream a new
// Array is ordered on.
#include "array/array_internal.hpp"
#include "common/arguments.hpp"
#include "common/scalars.hpp"
#include "cuda/current_stream.hpp"

#include <arrayport/buffer.hpp>
#include <arrayport/layout.hpp>
#include <arrayport/runtime.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace arrayport::ext {
namespace {

// The creation functions' arguments, parsed (and checked) before anything is allocated.
struct creation_args {
  std::vector<std::int64_t> shape;
  dtype dt;
  memory_kind kind;
  std::optional<int> device;
  stream_handle stream;
};

creation_args parse_creation(nb::handle shape, nb::handle dt, nb::handle memory, nb::handle device,
                             nb::handle stream, const char* what) {
  return {parse_shape(shape, what), parse_dtype(dt), parse_memory(memory.ptr(), what),
          device_arg(device.ptr(), what), parse_stream(stream, what)};
}

// *_like: shape, dtype, memory kind and device of `a` unless given.
creation_args parse_like(nb::handle a_obj, nb::handle dt, nb::handle memory, nb::handle device,
                         nb::handle stream, const char* what) {
  array_object* a = require_array(a_obj, (std::string(what) + ": a").c_str());
  creation_args c{std::vector<std::int64_t>(a->view.shape, a->view.shape + a->view.ndim),
                  dt.is_none() ? dtype::from_c(a->view.dtype) : parse_dtype(dt),
                  static_cast<memory_kind>(a->view.memory_kind), device_arg(device.ptr(), what),
                  parse_stream(stream, what)};
  if (!c.device && array_device(a) >= 0) c.device = array_device(a);
  if (std::optional<memory_kind> kind = memory_arg(memory.ptr(), what)) c.kind = *kind;
  return c;
}

nb::object create(const creation_args& c, nb::handle stream_obj, const char* what) {
  const std::int64_t nbytes =
      check_layout(what, c.shape.data(), nullptr, static_cast<int>(c.shape.size()),
                   static_cast<std::int64_t>(c.dt.itemsize()))
          .nbytes;
  const int device = c.device.value_or(-1);
  const stream_handle ordered_on = array_stream(c.kind, device, c.stream, stream_obj, what);
  buffer storage(static_cast<std::size_t>(nbytes), c.kind, device, ordered_on);
  return make_owned_array(std::move(storage), c.dt, c.shape,
                          ordered_on == c.stream ? stream_owner(stream_obj) : nb::handle());
}

// `value` is checked (as fill_value) before anything is allocated.
nb::object filled(const creation_args& c, nb::handle stream, nb::handle value, const char* what) {
  alignas(16) unsigned char element[16] = {};
  scalar_to_bytes(value.ptr(), c.dt, element, (std::string(what) + ": fill_value").c_str());
  nb::object a = create(c, stream, what);
  nb::object done = nb::steal(array_fill(a.ptr(), value.ptr()));
  if (!done.is_valid()) throw nb::python_error();
  return a;
}

nb::object empty(nb::handle shape, nb::handle dt, nb::handle memory, nb::handle device,
                 nb::handle stream) {
  return create(parse_creation(shape, dt, memory, device, stream, "empty"), stream, "empty");
}

nb::object zeros(nb::handle shape, nb::handle dt, nb::handle memory, nb::handle device,
                 nb::handle stream) {
  return filled(parse_creation(shape, dt, memory, device, stream, "zeros"), stream, nb::int_(0),
                "zeros");
}

nb::object ones(nb::handle shape, nb::handle dt, nb::handle memory, nb::handle device,
                nb::handle stream) {
  return filled(parse_creation(shape, dt, memory, device, stream, "ones"), stream, nb::int_(1),
                "ones");
}

nb::object full(nb::handle shape, nb::handle value, nb::handle dt, nb::handle memory,
                nb::handle device, nb::handle stream) {
  return filled(parse_creation(shape, dt, memory, device, stream, "full"), stream, value, "full");
}

nb::object empty_like(nb::handle a, nb::handle dt, nb::handle memory, nb::handle device,
                      nb::handle stream) {
  return create(parse_like(a, dt, memory, device, stream, "empty_like"), stream, "empty_like");
}

nb::object zeros_like(nb::handle a, nb::handle dt, nb::handle memory, nb::handle device,
                      nb::handle stream) {
  return filled(parse_like(a, dt, memory, device, stream, "zeros_like"), stream, nb::int_(0),
                "zeros_like");
}

nb::object ones_like(nb::handle a, nb::handle dt, nb::handle memory, nb::handle device,
                     nb::handle stream) {
  return filled(parse_like(a, dt, memory, device, stream, "ones_like"), stream, nb::int_(1),
                "ones_like");
}

nb::object full_like(nb::handle a, nb::handle value, nb::handle dt, nb::handle memory,
                     nb::handle device, nb::handle stream) {
  return filled(parse_like(a, dt, memory, device, stream, "full_like"), stream, value, "full_like");
}

}  // namespace

stream_handle array_stream(memory_kind kind, int device, stream_handle stream,
                           nb::handle stream_obj, const char* what) {
  if (!is_gpu_resident(kind) || !runtime::is_available()) return stream;
  if (device < 0) device = runtime::get_device();
  const current_stream_state cur = current_stream();
  const int stream_device = stream_obj.is_none() && cur.handle == stream && cur.device >= 0
                                ? cur.device
                                : runtime::stream_device(stream, device);
  if (stream_device == device) return stream;
  if (!stream_obj.is_none())
    throw value_error(std::string(what) + ": stream belongs to device " +
                      std::to_string(stream_device) + ", but the memory is on device " +
                      std::to_string(device) + "; pass a stream of device " +
                      std::to_string(device) + " or None");
  return nullptr;  // the current stream is another device's: this device's default stream
}

void register_creation_functions(nb::module_& m) {
  m.def("empty", &empty, "shape"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(),
        "device"_a = nb::none(), "stream"_a = nb::none(),
        "A new uninitialised Array (allocation does not touch the pages).");
  m.def("zeros", &zeros, "shape"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(),
        "device"_a = nb::none(), "stream"_a = nb::none(), "A new Array of zeros.");
  m.def("ones", &ones, "shape"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(),
        "device"_a = nb::none(), "stream"_a = nb::none(), "A new Array of ones.");
  m.def("full", &full, "shape"_a.none(), "fill_value"_a.none(), "dtype"_a = nb::none(),
        "memory"_a = nb::none(), "device"_a = nb::none(), "stream"_a = nb::none(),
        "A new Array filled with fill_value.");
  m.def("empty_like", &empty_like, "a"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(),
        "device"_a = nb::none(), "stream"_a = nb::none(), "An uninitialised Array shaped like a.");
  m.def("zeros_like", &zeros_like, "a"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(),
        "device"_a = nb::none(), "stream"_a = nb::none(), "Zeros shaped like a.");
  m.def("ones_like", &ones_like, "a"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(),
        "device"_a = nb::none(), "stream"_a = nb::none(), "Ones shaped like a.");
  m.def("full_like", &full_like, "a"_a.none(), "fill_value"_a.none(), "dtype"_a = nb::none(),
        "memory"_a = nb::none(), "device"_a = nb::none(), "stream"_a = nb::none(),
        "fill_value shaped like a.");
}

}  // namespace arrayport::ext
