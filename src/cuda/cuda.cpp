// arrayport._core.cuda: devices, streams and events for Python (the arrayport.cuda module).
//
// Everything goes through the runtime shim (runtime.hpp) and the core's RAII stream/event, so the
// same code serves a machine with no driver: creation raises NoDeviceError with the probe's reason,
// borrowing a stream handle does not need a device. Blocking calls release the GIL.
#include "cuda/cuda.hpp"

#include "common/arguments.hpp"
#include "cuda/current_stream.hpp"
#include "common/gil.hpp"

#include <arrayport/device.hpp>
#include <arrayport/error.hpp>
#include <arrayport/event.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/stream.hpp>

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace arrayport::ext {
namespace {

// Stream handles with a fixed meaning in the CUDA runtime (driver_types.h). 0 is the default
// stream, which is the legacy stream for code compiled without --default-stream per-thread (as
// arrayport is); cudaStreamLegacy (1) names it explicitly; cudaStreamPerThread (2) is the calling
// thread's own default stream. All three mean "that stream of the current device".
constexpr std::uintptr_t legacy_handle = 0;
constexpr std::uintptr_t legacy_explicit_handle = 1;
constexpr std::uintptr_t per_thread_handle = 2;

std::uintptr_t to_int(stream_handle h) noexcept { return reinterpret_cast<std::uintptr_t>(h); }
stream_handle to_handle(std::uintptr_t h) noexcept { return reinterpret_cast<stream_handle>(h); }

std::string tp_name_of(nb::handle obj) { return Py_TYPE(obj.ptr())->tp_name; }
std::string repr_of(nb::handle obj) { return nb::repr(obj).c_str(); }

std::string hex(std::uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// An int or anything with __index__ (NumPy integers), but never a bool: True is not a device.
bool is_index(nb::handle obj) { return !PyBool_Check(obj.ptr()) && PyIndex_Check(obj.ptr()); }

nb::object to_pylong(nb::handle obj) {
  nb::object v = nb::steal(PyNumber_Index(obj.ptr()));
  if (!v.is_valid()) throw nb::python_error();
  return v;
}

// ---------------------------------------------------------------------------------------------
// Devices

struct py_device {
  int index = 0;
  mutable std::optional<runtime::device_properties> props;  // fetched once: they never change

  const runtime::device_properties& properties() const {
    if (!props) props = runtime::get_device_properties(index);
    return *props;
  }
};

// A device argument that is given (not None): an int or a Device (arguments.hpp's parser; a
// machine without a device raises NoDeviceError once the type is right). `none_ok`: the
// argument may be None too (handled by the caller).
int device_arg(nb::handle obj, const char* what, bool none_ok = true, const char* name = "device") {
  return *arrayport::ext::device_arg(obj.ptr(), what, name, true, none_ok);
}

// The device of something `what` creates: None is the current device, which must exist.
int owned_device(nb::handle obj, const char* what) {
  if (obj.is_none()) {
    runtime::require_device(what);
    return runtime::get_device();
  }
  return device_arg(obj, what);
}

// The device of a borrowed stream: None is the current device, or -1 ("whichever is current")
// on a machine without one, so that borrowing never needs a device.
int borrowed_device(nb::handle obj, const char* what) {
  if (obj.is_none()) return runtime::is_available() ? runtime::get_device() : -1;
  return device_arg(obj, what);
}

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

// ---------------------------------------------------------------------------------------------
// Streams and events

struct py_stream {
  arrayport::stream stream;
  int priority = 0;
  nb::object owner;  // the foreign stream object an adopted handle came from: kept alive

  std::uintptr_t handle() const noexcept { return to_int(stream.handle()); }
  int device() const noexcept { return stream.device(); }
};

struct py_event {
  arrayport::event event;
  bool timing = true;
  bool blocking = false;
  int device = 0;         // the device current at creation: CUDA ties the event to it
  bool recorded = false;  // elapsed_time() needs both events recorded
};

// What `with stream:` restores on exit: one entry per open block of this thread. `stream` is a
// strong reference, released on exit, so a stream stays alive while it is current. It is a raw
// pointer on purpose: a vector destroyed at thread exit must not touch Python objects.
struct stream_entry {
  PyObject* stream;
  current_stream_state previous;
  int previous_device;  // >= 0: the device to make current again on exit
};
thread_local std::vector<stream_entry> t_stream_stack;

py_stream borrow_stream(std::uintptr_t handle, int device, int priority = 0,
                        nb::object owner = {}) {
  return py_stream{arrayport::stream::borrow(to_handle(handle), device), priority,
                   std::move(owner)};
}

// The device and priority a foreign stream states (attribute `attr`), when it states one.
std::optional<int> foreign_int(nb::handle obj, const char* attr) {
  if (!nb::hasattr(obj, attr)) return std::nullopt;
  nb::object v = obj.attr(attr);
  if (!is_index(v)) return std::nullopt;
  int overflow = 0;
  long long i = PyLong_AsLongLongAndOverflow(to_pylong(v).ptr(), &overflow);
  if (overflow != 0 || i < INT32_MIN || i > INT32_MAX) return std::nullopt;
  return static_cast<int>(i);
}

// `what` and `name` name the caller and the argument in messages ("Stream.adopt", "obj").
nb::object adopt(nb::handle obj, nb::handle device, const char* what = "Stream.adopt",
                 const char* name = "obj") {
  const std::string label = std::string(what) + ": " + name;
  if (nb::isinstance<py_stream>(obj)) {
    const py_stream& s = nb::cast<const py_stream&>(obj);
    if (!device.is_none() && device_arg(device, what) != s.device())
      throw value_error(std::string(what) + ": the stream is on device " +
                        std::to_string(s.device()) + ", not on device " + repr_of(device));
    return nb::borrow(obj);
  }
  if (is_index(obj))
    return nb::cast(borrow_stream(handle_arg(obj.ptr(), label), borrowed_device(device, what)));

  std::uintptr_t handle = 0;
  if (nb::hasattr(obj, "__cuda_stream__")) {
    // cuda.core's protocol: a method returning (version, handle); its first release made it a
    // property, so a plain tuple is taken too.
    nb::object attr = obj.attr("__cuda_stream__");
    nb::object result = PyCallable_Check(attr.ptr()) ? attr() : attr;
    if (!nb::isinstance<nb::tuple>(result) || nb::len(result) != 2 || !is_index(result[0]))
      throw type_error(label + ": __cuda_stream__() must return a (version, handle) tuple of ints, got " +
                       repr_of(result));
    nb::object version = to_pylong(result[0]);
    if (!version.equal(nb::int_(0)))
      throw value_error(label + ": __cuda_stream__ protocol version " +
                        repr_of(version) + " is not supported (expected 0)");
    handle = handle_arg(nb::object(result[1]).ptr(), label + ".__cuda_stream__()[1]");
  } else if (nb::hasattr(obj, "cuda_stream")) {  // torch.cuda.Stream / ExternalStream
    handle = handle_arg(nb::object(obj.attr("cuda_stream")).ptr(), label + ".cuda_stream");
  } else if (nb::hasattr(obj, "ptr")) {  // cupy.cuda.Stream / ExternalStream
    handle = handle_arg(nb::object(obj.attr("ptr")).ptr(), label + ".ptr");
  } else {
    throw type_error(label + ": expected an object with __cuda_stream__ (the cuda.core protocol), a "
                     "PyTorch stream (.cuda_stream), a CuPy stream (.ptr), an "
                     "arrayport.cuda.Stream or an int handle, got '" +
                     tp_name_of(obj) + "'");
  }
  // What the owner states about its stream, whichever protocol gave the handle: PyTorch's
  // .device_index, CuPy's .device_id (-1 for its null stream: unknown), and both say .priority.
  std::optional<int> foreign_device = foreign_int(obj, "device_index");
  if (!foreign_device) foreign_device = foreign_int(obj, "device_id");
  std::optional<int> priority = foreign_int(obj, "priority");
  int dev;
  if (!device.is_none()) {
    dev = device_arg(device, what);
  } else if (foreign_device && *foreign_device >= 0) {
    dev = device_arg(nb::int_(*foreign_device), what);
  } else {
    dev = borrowed_device(device, what);
  }
  return nb::cast(borrow_stream(handle, dev, priority.value_or(0), nb::borrow(obj)));
}

// The stream an argument names: None is the current stream; anything else is adopted.
current_stream_state stream_arg(nb::handle obj, const char* what) {
  if (obj.is_none()) return current_stream();
  nb::object s = adopt(obj, nb::none(), what, "stream");
  const py_stream& ps = nb::cast<const py_stream&>(s);
  return {ps.stream.handle(), ps.device()};
}

nb::object py_current_stream() {
  current_stream_state cur = current_stream();
  if (!t_stream_stack.empty()) {
    // The innermost `with` block's own object (identity and ownership), unless C++ code has set
    // another stream since.
    PyObject* top = t_stream_stack.back().stream;
    const py_stream& s = nb::cast<const py_stream&>(nb::handle(top));
    if (s.stream.handle() == cur.handle && s.device() == cur.device) return nb::borrow(top);
  }
  int dev = cur.device >= 0 ? cur.device : (runtime::is_available() ? runtime::get_device() : -1);
  return nb::cast(borrow_stream(to_int(cur.handle), dev));
}

nb::object enter_stream(py_stream& s) {
  nb::object self = nb::find(s);
  int previous_device = -1;
  if (s.device() >= 0 && runtime::is_available()) {
    int current = runtime::get_device();
    if (current != s.device()) {
      runtime::set_device(s.device());
      previous_device = current;
    }
  }
  t_stream_stack.push_back(
      {self.ptr(), exchange_current_stream({s.stream.handle(), s.device()}), previous_device});
  self.inc_ref();  // released by exit_stream
  return self;
}

void exit_stream(py_stream& s) {
  nb::object self = nb::find(s);
  if (t_stream_stack.empty() || t_stream_stack.back().stream != self.ptr())
    throw std::runtime_error(
        "Stream.__exit__: this stream is not the innermost one entered on this thread ('with' "
        "blocks of streams must nest and enter and exit on the same thread)");
  stream_entry e = t_stream_stack.back();
  t_stream_stack.pop_back();
  exchange_current_stream(e.previous);
  nb::object released = nb::steal(e.stream);
  if (e.previous_device >= 0) runtime::set_device(e.previous_device);
}

// At interpreter exit, drops the references of `with` blocks the main thread never left (a bare
// __enter__ at the prompt), so that nanobind's leak check at shutdown reports real leaks only.
void release_open_stream_blocks() noexcept {
  while (!t_stream_stack.empty()) {
    stream_entry e = t_stream_stack.back();
    t_stream_stack.pop_back();
    exchange_current_stream(e.previous);
    Py_DECREF(e.stream);
  }
}

std::string stream_repr(const py_stream& s) {
  std::string r = "<arrayport.cuda.Stream " + hex(s.handle());
  if (s.handle() == legacy_handle || s.handle() == legacy_explicit_handle) r += " legacy default";
  if (s.handle() == per_thread_handle) r += " per-thread default";
  r += s.device() >= 0 ? ", device " + std::to_string(s.device()) : ", no device";
  r += ", priority " + std::to_string(s.priority);
  r += s.stream.owning() ? ", owned>" : ", borrowed>";
  return r;
}

py_event& event_arg(nb::handle obj, const char* what, const char* name) {
  py_event* e = nullptr;
  if (!nb::try_cast<py_event*>(obj, e) || !e)
    throw type_error(arg_prefix(what, name) + "expected an arrayport.cuda.Event, got " +
                     tp_name_of(obj));
  return *e;
}

py_event make_event(bool timing, bool blocking) {
  runtime::require_device("Event");
  int device = runtime::get_device();
  return py_event{arrayport::event(timing, blocking), timing, blocking, device, false};
}

void record(py_event& e, current_stream_state s) {
  // A default-stream handle with no device named means the current device's stream.
  if (s.device < 0 && runtime::is_available()) s.device = runtime::get_device();
  if (s.device >= 0 && s.device != e.device)
    throw value_error("Event.record: the event belongs to device " + std::to_string(e.device) +
                      " but the stream to device " + std::to_string(s.device) +
                      " (create the event with that device current)");
  runtime::device_guard guard(s.device);  // the default-stream handles mean "of the current device"
  e.event.record(s.handle);
  e.recorded = true;
}

std::string event_repr(const py_event& e) {
  std::string r = "<arrayport.cuda.Event " +
                  hex(reinterpret_cast<std::uintptr_t>(e.event.handle())) + ", device " +
                  std::to_string(e.device);
  if (!e.timing) r += ", timing disabled";
  if (e.blocking) r += ", blocking";
  r += e.recorded ? ", recorded>" : ", not recorded>";
  return r;
}

// ---------------------------------------------------------------------------------------------
// Docstrings: each states the choice it makes where the CUDA API leaves one.

constexpr const char* module_doc = R"(Devices, streams and events (public as arrayport.cuda).

Without a usable device (no GPU, no driver, or a CPU-only build) nothing here fails at import:
is_available() is False, device_count() is 0, and whatever needs a device raises
arrayport.NoDeviceError saying why. Borrowing a stream handle needs no device, so the default
streams and current_stream() work everywhere; their synchronize() and query() are no-ops there,
since no device work can be pending. Every blocking call releases the GIL.)";

constexpr const char* device_doc = R"(A CUDA device, by index.

Device(i=None): None is the current device. An index out of range raises ValueError naming it and
the valid range; on a machine without a device every index raises NoDeviceError.

As a context manager it makes the device current and restores the previous one on exit, even on
exception. Blocks nest, per thread. Equal (and hashed) by index.)";

constexpr const char* stream_doc = R"(A CUDA stream, owned or borrowed.

Stream(device=None, priority=0, non_blocking=True) creates a stream on `device` (None: the current
device) that is destroyed with the object. Lower priority numbers run first; CUDA clamps values to
the device's range, and `priority` reports the value asked for. non_blocking=True (the default)
means no implicit synchronisation with the legacy default stream.

Stream.from_handle, Stream.adopt, Stream.legacy and Stream.per_thread borrow a stream: it is never
destroyed here, and borrowing needs no device.

`with stream:` makes it the calling thread's current stream (see current_stream()) and, when the
stream belongs to a device other than the current one, makes that device current too, so that work
issued in the block runs where the stream lives; both are restored on exit. Blocks nest, per
thread; a block must exit on the thread that entered it. The stream is kept alive while current.

Equal when handle and device are equal (the default-stream handles 0, 1 and 2 name a different
stream on each device); hashed by handle.)";

// A Stream adopted from a foreign object keeps it (owner): a foreign object that keeps its own
// Stream (x.s = Stream.adopt(x)) is a cycle, which the collector sees through these.
int stream_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  Py_VISIT(nb::inst_ptr<py_stream>(self)->owner.ptr());
  return 0;
}

int stream_clear(PyObject* self) {
  if (nb::inst_ready(self)) nb::inst_ptr<py_stream>(self)->owner.reset();
  return 0;
}

PyType_Slot stream_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(stream_traverse)},
                              {Py_tp_clear, reinterpret_cast<void*>(stream_clear)},
                              {0, nullptr}};

constexpr const char* event_doc = R"(A CUDA event, for ordering streams and timing.

Event(timing=True, blocking=False): `timing` lets elapsed_time() measure between two events (it
costs a little per record; pass False for events used only to order streams). `blocking` makes
synchronize() sleep instead of spinning. The event belongs to the device current when it is
created, and can only be recorded on that device's streams. Needs a device (NoDeviceError).)";

}  // namespace

nb::handle current_stream_object() noexcept {
  if (t_stream_stack.empty()) return nb::handle();
  PyObject* top = t_stream_stack.back().stream;
  py_stream* s = nullptr;
  if (!nb::try_cast<py_stream*>(nb::handle(top), s) || s == nullptr) return nb::handle();
  const current_stream_state cur = current_stream();
  return s->stream.handle() == cur.handle && s->device() == cur.device ? nb::handle(top)
                                                                       : nb::handle();
}

bool device_index_of(nb::handle obj, int& index) noexcept {
  py_device* d = nullptr;
  if (!nb::try_cast<py_device*>(obj, d) || !d) return false;
  index = d->index;
  return true;
}

void register_cuda(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("cuda", module_doc);
  nb::module_::import_("atexit").attr("register")(nb::cpp_function(&release_open_stream_blocks));

  // -- module functions ---------------------------------------------------------------------------
  m.def("is_available", &runtime::is_available,
        "True when at least one CUDA device can be used (never raises).");
  m.def("device_count", &runtime::device_count,
        "The number of usable CUDA devices: 0 without a GPU, driver or CUDA build (never raises).");
  m.def(
      "current_device",
      [] {
        runtime::require_device("current_device");
        return runtime::get_device();
      },
      "The calling thread's current device index. NoDeviceError without a device (rather than "
      "pretending device 0 exists).");
  m.def(
      "set_device",
      [](nb::handle device) { runtime::set_device(device_arg(device, "set_device", false)); },
      "device"_a.none(), nb::sig("def set_device(device: int | Device) -> None"),
      "Makes `device` (an int or a Device) current for the calling thread.");
  m.def(
      "synchronize",
      [] {
        runtime::require_device("synchronize");
        runtime::device_synchronize();
      },
      nb::call_guard<gil_release>(),
      "Waits for all work on the current device, on every stream (releases the GIL). "
      "NoDeviceError without a device.");
  m.def("runtime_version", &runtime::runtime_version,
        "The CUDA runtime version arrayport was built with, e.g. 13000 for 13.0 (0 in a CPU-only "
        "build). Linked statically, so it does not need a driver.");
  m.def("driver_version", &runtime::driver_version,
        "The latest CUDA version the installed driver supports, e.g. 13000; 0 when no driver can "
        "be loaded (never raises).");
  m.def("current_stream", &py_current_stream, nb::sig("def current_stream() -> Stream"),
        "The calling thread's current stream: the innermost `with stream:` block's stream (the "
        "same object), or the legacy default stream (handle 0, borrowed) of the current device "
        "when no block is open. Works without a device.");

  // -- Device -----------------------------------------------------------------------------------
  nb::class_<py_device>(m, "Device", device_doc)
      .def(
          "__init__",
          [](py_device* self, nb::handle i) {
            const int index = i.is_none() ? owned_device(i, "Device") : device_arg(i, "Device", true, "i");
            new (self) py_device{index, {}};
          },
          "i"_a.none() = nb::none(),
          nb::sig("def __init__(self, i: int | Device | None = None) -> None"))
      .def_prop_ro(
          "index", [](const py_device& d) { return d.index; }, "The device index.")
      .def_prop_ro(
          "name", [](const py_device& d) { return d.properties().name; },
          "The marketing name, e.g. 'NVIDIA H100 80GB HBM3'.")
      .def_prop_ro(
          "compute_capability",
          [](const py_device& d) {
            return nb::make_tuple(d.properties().major, d.properties().minor);
          },
          nb::sig("def compute_capability(self) -> tuple[int, int]"),
          "(major, minor), e.g. (9, 0) for Hopper.")
      .def_prop_ro(
          "total_memory", [](const py_device& d) { return d.properties().total_memory; },
          "Global memory in bytes.")
      .def_prop_ro(
          "multiprocessor_count",
          [](const py_device& d) { return d.properties().multiprocessor_count; },
          "The number of streaming multiprocessors.")
      .def_prop_ro(
          "pci_bus_id", [](const py_device& d) { return d.properties().pci_bus_id; },
          "The PCI address, e.g. '0000:3B:00.0'.")
      .def_prop_ro(
          "uuid", [](const py_device& d) { return d.properties().uuid; },
          "'GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx', as nvidia-smi -L prints it.")
      .def(
          "mem_info", [](const py_device& d) { return runtime::mem_get_info(d.index); },
          nb::sig("def mem_info(self) -> tuple[int, int]"),
          "(free, total) bytes of this device, as the driver reports them now.")
      .def(
          "can_access_peer",
          [](const py_device& d, nb::handle peer) {
            int p = device_arg(peer, "Device.can_access_peer", false, "peer");
            return p != d.index && runtime::can_access_peer(d.index, p);  // not its own peer
          },
          "peer"_a.none(), nb::sig("def can_access_peer(self, peer: int | Device) -> bool"),
          "True when this device can access `peer`'s memory directly (peer access still has to "
          "be enabled). False for the device itself.")
      .def(
          "synchronize",
          [](const py_device& d) {
            runtime::device_guard guard(d.index);
            runtime::device_synchronize();
          },
          nb::call_guard<gil_release>(),
          "Waits for all work on this device, on every stream (releases the GIL). The current "
          "device is unchanged afterwards.")
      .def(
          "__enter__",
          [](py_device& d) {
            int previous = runtime::get_device();
            runtime::set_device(d.index);
            const current_stream_state cur = current_stream();
            const bool swap = cur.device >= 0 && cur.device != d.index;
            t_device_stack.push_back(
                {d.index, previous, swap, swap ? exchange_current_stream({nullptr, -1}) : cur});
            return nb::find(d);
          },
          nb::sig("def __enter__(self) -> Device"))
      .def(
          "__exit__",
          [](py_device& d, nb::handle, nb::handle, nb::handle) {
            if (t_device_stack.empty() || t_device_stack.back().entered != d.index)
              throw std::runtime_error(
                  "Device.__exit__: this device is not the innermost one entered on this thread "
                  "('with' blocks of devices must nest and enter and exit on the same thread)");
            const device_entry e = t_device_stack.back();
            t_device_stack.pop_back();
            if (e.stream_swapped) exchange_current_stream(e.previous_stream);
            runtime::set_device(e.previous);
          },
          "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none(),
          nb::sig("def __exit__(self, exc_type: object, exc: object, tb: object) -> None"))
      .def(
          "__eq__", [](const py_device& a, const py_device& b) { return a.index == b.index; },
          nb::is_operator())
      .def("__hash__", [](const py_device& d) { return d.index; })
      .def("__repr__", [](const py_device& d) {
        std::string r = "<arrayport.cuda.Device " + std::to_string(d.index);
        try {
          const runtime::device_properties& p = d.properties();
          r += ": " + p.name + ", compute capability " + std::to_string(p.major) + "." +
               std::to_string(p.minor);
        } catch (const error&) {  // a repr never raises: the index alone will do
        }
        return r + ">";
      });

  // -- Event (before Stream: Stream's signatures name it) ---------------------------------------
  nb::class_<py_event>(m, "Event", event_doc)
      .def(
          "__init__",
          [](py_event* self, nb::handle timing, nb::handle blocking) {
            const bool t = bool_arg(timing.ptr(), "Event", "timing");
            const bool b = bool_arg(blocking.ptr(), "Event", "blocking");
            new (self) py_event(make_event(t, b));
          },
          "timing"_a.none() = true, "blocking"_a.none() = false,
          nb::sig("def __init__(self, timing: bool = True, blocking: bool = False) -> None"))
      .def(
          "record", [](py_event& e, nb::handle stream) { record(e, stream_arg(stream, "Event.record")); },
          "stream"_a.none() = nb::none(),
          nb::sig("def record(self, stream: object = None) -> None"),
          "Captures the work queued so far on `stream`: None is the current stream "
          "(current_stream()); anything Stream.adopt takes is accepted.")
      .def(
          "synchronize", [](const py_event& e) { e.event.synchronize(); },
          nb::call_guard<gil_release>(),
          "Waits until the work captured by the last record() has completed (releases the GIL). "
          "Returns at once for an event never recorded.")
      .def(
          "query", [](const py_event& e) { return e.event.query(); },
          "True when the work captured by the last record() has completed (or it was never "
          "recorded).")
      .def(
          "elapsed_time",
          [](const py_event& start, nb::handle end_obj) {
            const py_event& end = event_arg(end_obj, "Event.elapsed_time", "end");
            if (!start.timing || !end.timing)
              throw value_error(std::string("Event.elapsed_time: the ") +
                                (start.timing ? "end" : "start") +
                                " event was created with timing=False");
            if (!start.recorded || !end.recorded)
              throw std::runtime_error(std::string("Event.elapsed_time: the ") +
                                       (start.recorded ? "end" : "start") +
                                       " event has not been recorded");
            if (!start.event.query() || !end.event.query())
              throw std::runtime_error(
                  "Event.elapsed_time: the events have not completed yet (call "
                  "end.synchronize() first)");
            return static_cast<double>(start.event.elapsed_ms(end.event));
          },
          "end"_a.none(), nb::sig("def elapsed_time(self, end: Event) -> float"),
          "Milliseconds from this event to `end` (resolution about half a microsecond). Both "
          "need timing=True, a record(), and completed work: ValueError or RuntimeError says "
          "which is missing, rather than blocking here.")
      .def_prop_ro(
          "handle",
          [](const py_event& e) { return reinterpret_cast<std::uintptr_t>(e.event.handle()); },
          "The cudaEvent_t, as an int.")
      .def_prop_ro(
          "device", [](const py_event& e) { return e.device; }, "The device the event belongs to.")
      .def_prop_ro("timing", [](const py_event& e) { return e.timing; })
      .def_prop_ro("blocking", [](const py_event& e) { return e.blocking; })
      .def("__repr__", &event_repr);

  // -- Stream -----------------------------------------------------------------------------------
  nb::class_<py_stream>(m, "Stream", stream_doc, nb::type_slots(stream_slots))
      .def(
          "__init__",
          [](py_stream* self, nb::handle device, nb::handle priority, nb::handle non_blocking) {
            const auto p = static_cast<int>(int_arg(priority.ptr(), "Stream", "priority", INT32_MIN,
                                                    INT32_MAX, "an int that fits 32 bits"));
            const bool non_block = bool_arg(non_blocking.ptr(), "Stream", "non_blocking");
            int dev = owned_device(device, "Stream");
            new (self) py_stream{arrayport::stream(dev, p, non_block), p, {}};
          },
          "device"_a.none() = nb::none(), "priority"_a.none() = 0, "non_blocking"_a.none() = true,
          nb::sig("def __init__(self, device: int | Device | None = None, priority: int = 0, "
                  "non_blocking: bool = True) -> None"))
      .def_static(
          "from_handle",
          [](nb::handle handle, nb::handle device) {
            return borrow_stream(handle_arg(handle.ptr(), "Stream.from_handle: handle"),
                                 borrowed_device(device, "Stream.from_handle"));
          },
          "handle"_a.none(), "device"_a.none() = nb::none(),
          nb::sig("def from_handle(handle: int, device: int | Device | None = None) -> Stream"),
          "Borrows the stream with this cudaStream_t handle (an int). It is not destroyed here: "
          "its "
          "owner must keep it alive. `device` None: the current device (none without a device). "
          "Needs no device; a negative handle is a ValueError.")
      .def_static("adopt", [](nb::handle obj, nb::handle device) { return adopt(obj, device); },
                  "obj"_a.none(), "device"_a.none() = nb::none(),
                  nb::sig("def adopt(obj: object, device: int | Device | None = None) -> Stream"),
                  "Borrows another library's stream: an object with __cuda_stream__ (the cuda.core "
                  "protocol, version 0), a PyTorch stream (.cuda_stream), a CuPy stream (.ptr), an "
                  "int handle, or a Stream (returned as is). The object is kept alive with the "
                  "Stream. The device is `device`, else the one the object states (PyTorch's "
                  ".device_index, CuPy's .device_id), else the current device. Anything else is a "
                  "TypeError.")
      .def_static(
          "legacy",
          [](nb::handle device) {
            return borrow_stream(legacy_handle, borrowed_device(device, "Stream.legacy"));
          },
          "device"_a.none() = nb::none(),
          nb::sig("def legacy(device: int | Device | None = None) -> Stream"),
          "The legacy default stream (handle 0) of `device` (None: the current device), which "
          "synchronises with every blocking stream. Needs no device.")
      .def_static(
          "per_thread",
          [](nb::handle device) {
            return borrow_stream(per_thread_handle, borrowed_device(device, "Stream.per_thread"));
          },
          "device"_a.none() = nb::none(),
          nb::sig("def per_thread(device: int | Device | None = None) -> Stream"),
          "The calling thread's per-thread default stream (handle 2, cudaStreamPerThread) of "
          "`device`. The handle means 'this thread's' wherever it is used. Needs no device.")
      .def(
          "synchronize",
          [](const py_stream& s) {
            runtime::device_guard guard(s.device());
            s.stream.synchronize();
          },
          nb::call_guard<gil_release>(),
          "Waits until all work queued so far on this stream has completed (releases the GIL). "
          "A no-op without a device.")
      .def(
          "query",
          [](const py_stream& s) {
            runtime::device_guard guard(s.device());
            return s.stream.query();
          },
          "True when all work queued so far has completed (always True without a device).")
      .def(
          "wait_event",
          [](const py_stream& s, nb::handle event) {
            const py_event& e = event_arg(event, "Stream.wait_event", "event");
            runtime::device_guard guard(s.device());
            s.stream.wait(e.event);
          },
          "event"_a.none(), nb::sig("def wait_event(self, event: Event) -> None"),
          "Makes work queued on this stream from now on wait for the work `event` captured, "
          "without blocking the host.")
      .def(
          "record_event",
          [](const py_stream& s, nb::handle event) -> nb::object {
            current_stream_state state{s.stream.handle(), s.device()};
            if (!event.is_none()) {
              py_event* e = &event_arg(event, "Stream.record_event", "event");
              record(*e, state);
              return nb::borrow(event);
            }
            runtime::require_device("Stream.record_event");
            runtime::device_guard guard(
                s.device());  // the event must belong to the stream's device
            py_event created = make_event(true, false);
            record(created, state);
            return nb::cast(std::move(created));
          },
          "event"_a.none() = nb::none(),
          nb::sig("def record_event(self, event: Event | None = None) -> Event"),
          "Records `event` (None: a new Event() with the default flags, created on this stream's "
          "device) on this stream and returns it.")
      .def_prop_ro("handle", &py_stream::handle, "The cudaStream_t, as an int (0: legacy default).")
      .def_prop_ro(
          "device",
          [](const py_stream& s) -> nb::object {
            if (s.device() < 0) return nb::none();
            return nb::int_(s.device());
          },
          nb::sig("def device(self) -> int | None"),
          "The device index of the stream; None only for a borrowed stream on a machine without "
          "a device.")
      .def_prop_ro(
          "priority", [](const py_stream& s) { return s.priority; },
          "The priority asked for at creation; for a borrowed stream, the one its owner "
          "states (PyTorch, CuPy), else 0.")
      .def_prop_ro(
          "owned", [](const py_stream& s) { return s.stream.owning(); },
          "True when this object created the stream and destroys it.")
      .def(
          "__cuda_stream__", [](const py_stream& s) { return nb::make_tuple(0, s.handle()); },
          nb::sig("def __cuda_stream__(self) -> tuple[int, int]"),
          "The cuda.core stream protocol: (version 0, handle).")
      .def("__enter__", &enter_stream, nb::sig("def __enter__(self) -> Stream"))
      .def(
          "__exit__", [](py_stream& s, nb::handle, nb::handle, nb::handle) { exit_stream(s); },
          "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none(),
          nb::sig("def __exit__(self, exc_type: object, exc: object, tb: object) -> None"))
      .def(
          "__eq__",
          [](const py_stream& a, const py_stream& b) {
            return a.handle() == b.handle() && a.device() == b.device();
          },
          nb::is_operator())
      .def("__hash__", [](const py_stream& s) { return s.handle(); })
      .def("__repr__", &stream_repr);
}

}  // namespace arrayport::ext
