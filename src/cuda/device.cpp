// arrayport.cuda.Device: a CUDA device by index, its properties, and `with device:` blocks.
#include "common/arguments.hpp"
#include "common/gil.hpp"
#include "cuda/cuda.hpp"
#include "cuda/cuda_internal.hpp"

#include <arrayport/device.hpp>
#include <arrayport/error.hpp>
#include <arrayport/runtime.hpp>

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace arrayport::ext {

void refuse_device_wait_during_capture(const char* what) {
  runtime::refuse_during_capture(current_stream().handle, what,
                                 "captured work runs only when the graph is launched");
}

namespace {

struct py_device {
  int index = 0;
  mutable std::optional<runtime::device_properties> props;  // fetched once: they never change

  const runtime::device_properties& properties() const {
    if (!props) props = runtime::get_device_properties(index);
    return *props;
  }
};

// What `with Device(i):` restores on exit: one entry per open block of this thread.
struct device_entry {
  int entered;
  int previous;
  // Entering another device than the current stream's makes that device's default stream current
  // (a stream cannot run work of another device); leaving restores the stream.
  bool stream_swapped;
  current_stream_state previous_stream;
};
thread_local std::vector<device_entry> t_device_stack;

constexpr const char* device_doc = R"(A CUDA device, by index.

Device(i=None): None is the current device. An index out of range raises ValueError naming it and
the valid range; on a machine without a device every index raises NoDeviceError.

As a context manager it makes the device current and restores the previous one on exit, even on
exception. Blocks nest, per thread. Equal (and hashed) by index.)";

void device_init(py_device* self, nb::handle i) {
  const int index =
      i.is_none() ? owned_device(i, "Device") : cuda_device_arg(i, "Device", true, "i");
  new (self) py_device{index, {}};
}

int device_index(const py_device& d) { return d.index; }
auto device_name(const py_device& d) { return d.properties().name; }
nb::tuple device_compute_capability(const py_device& d) {
  return nb::make_tuple(d.properties().major, d.properties().minor);
}
auto device_total_memory(const py_device& d) { return d.properties().total_memory; }
auto device_multiprocessor_count(const py_device& d) { return d.properties().multiprocessor_count; }
auto device_pci_bus_id(const py_device& d) { return d.properties().pci_bus_id; }
auto device_uuid(const py_device& d) { return d.properties().uuid; }
auto device_mem_info(const py_device& d) { return runtime::mem_get_info(d.index); }

bool device_can_access_peer(const py_device& d, nb::handle peer) {
  const int p = cuda_device_arg(peer, "Device.can_access_peer", false, "peer");
  return p != d.index && runtime::can_access_peer(d.index, p);  // not its own peer
}

void device_synchronize(const py_device& d) {
  refuse_device_wait_during_capture("Device.synchronize()");
  runtime::device_guard guard(d.index);
  runtime::device_synchronize();
}

nb::object device_enter(py_device& d) {
  const int previous = runtime::get_device();
  runtime::set_device(d.index);
  const current_stream_state cur = current_stream();
  const bool swap = cur.device >= 0 && cur.device != d.index;
  t_device_stack.push_back(
      {d.index, previous, swap, swap ? exchange_current_stream({nullptr, -1}) : cur});
  return nb::find(d);
}

void device_exit(py_device& d, nb::handle, nb::handle, nb::handle) {
  if (t_device_stack.empty() || t_device_stack.back().entered != d.index)
    throw std::runtime_error(
        "Device.__exit__: this device is not the innermost one entered on this thread "
        "('with' blocks of devices must nest and enter and exit on the same thread)");
  const device_entry e = t_device_stack.back();
  t_device_stack.pop_back();
  if (e.stream_swapped) exchange_current_stream(e.previous_stream);
  runtime::set_device(e.previous);
}

bool device_eq(const py_device& a, const py_device& b) { return a.index == b.index; }
int device_hash(const py_device& d) { return d.index; }

// device= as every function takes it (None, an int >= 0, a Device), for the package's own Python
// parsers: the same checks and messages as the compiled ones.
nb::object device_index_arg(nb::handle device, const std::string& what) {
  const std::optional<int> i = device_arg(device.ptr(), what.c_str());
  return i ? nb::object(nb::int_(*i)) : nb::none();
}

// A Device not checked against this machine's devices: the tests of a machine without a GPU
// pass it wherever device= takes one.
py_device unchecked_device(nb::handle i) {
  return py_device{static_cast<int>(int_arg(i.ptr(), "_unchecked_device", "i", 0, INT32_MAX,
                                            "a device index >= 0")),
                   {}};
}

std::string device_repr(const py_device& d) {
  std::string r = "<arrayport.cuda.Device " + std::to_string(d.index);
  try {
    const runtime::device_properties& p = d.properties();
    r += ": " + p.name + ", compute capability " + std::to_string(p.major) + "." +
         std::to_string(p.minor);
  } catch (const error&) {  // a repr never raises: the index alone will do
  }
  return r + ">";
}

}  // namespace

int cuda_device_arg(nb::handle obj, const char* what, bool none_ok, const char* name) {
  return *device_arg(obj.ptr(), what, name, true, none_ok);
}

int owned_device(nb::handle obj, const char* what) {
  if (obj.is_none()) {
    runtime::require_device(what);
    return runtime::get_device();
  }
  return cuda_device_arg(obj, what);
}

int borrowed_device(nb::handle obj, const char* what) {
  if (obj.is_none()) return runtime::is_available() ? runtime::get_device() : -1;
  return cuda_device_arg(obj, what);
}

bool device_index_of(nb::handle obj, int& index) noexcept {
  py_device* d = nullptr;
  if (!nb::try_cast<py_device*>(obj, d) || !d) return false;
  index = d->index;
  return true;
}

void register_device(nb::module_& m) {
  nb::class_<py_device>(m, "Device", device_doc)
      .def("__init__", &device_init, "i"_a.none() = nb::none(),
           nb::sig("def __init__(self, i: int | Device | None = None) -> None"))
      .def_prop_ro("index", &device_index, "The device index.")
      .def_prop_ro("name", &device_name, "The marketing name, e.g. 'NVIDIA H100 80GB HBM3'.")
      .def_prop_ro("compute_capability", &device_compute_capability,
                   nb::sig("def compute_capability(self) -> tuple[int, int]"),
                   "(major, minor), e.g. (9, 0) for Hopper.")
      .def_prop_ro("total_memory", &device_total_memory, "Global memory in bytes.")
      .def_prop_ro("multiprocessor_count", &device_multiprocessor_count,
                   "The number of streaming multiprocessors.")
      .def_prop_ro("pci_bus_id", &device_pci_bus_id, "The PCI address, e.g. '0000:3B:00.0'.")
      .def_prop_ro("uuid", &device_uuid,
                   "'GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx', as nvidia-smi -L prints it.")
      .def("mem_info", &device_mem_info, nb::sig("def mem_info(self) -> tuple[int, int]"),
           "(free, total) bytes of this device, as the driver reports them now.")
      .def("can_access_peer", &device_can_access_peer, "peer"_a.none(),
           nb::sig("def can_access_peer(self, peer: int | Device) -> bool"),
           "True when this device can access `peer`'s memory directly (peer access still has to "
           "be enabled). False for the device itself.")
      .def("synchronize", &device_synchronize, nb::call_guard<gil_release>(),
           "Waits for all work on this device, on every stream (releases the GIL). The current "
           "device is unchanged afterwards.")
      .def("__enter__", &device_enter, nb::sig("def __enter__(self) -> Device"))
      .def("__exit__", &device_exit, "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none(),
           nb::sig("def __exit__(self, exc_type: object, exc: object, tb: object) -> None"))
      .def("__eq__", &device_eq, nb::is_operator())
      .def("__hash__", &device_hash)
      .def("__repr__", &device_repr);
  m.def(
      "_device_index", &device_index_arg, "device"_a.none(), "what"_a,
      nb::sig("def _device_index(device: object, what: str) -> int | None"),
      "device= as arrayport's functions take it: None, or the index, checked; errors name `what`.");
  m.def("_unchecked_device", &unchecked_device, "i"_a.none(),
        nb::sig("def _unchecked_device(i: int) -> Device"),
        "Test hook: a Device of index i, not checked against this machine's devices (tests of "
        "device= on a machine without a GPU).");
}

}  // namespace arrayport::ext
