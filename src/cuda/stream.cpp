// arrayport.cuda.Stream: owned and borrowed streams, `with stream:` blocks, the current stream.
#include "common/arguments.hpp"
#include "common/gil.hpp"
#include "cuda/cuda.hpp"
#include "cuda/cuda_internal.hpp"

#include <arrayport/error.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/stream.hpp>

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

std::string repr_of(nb::handle obj) { return nb::repr(obj).c_str(); }

// An int or anything with __index__ (NumPy integers), but never a bool: True is not a device.
bool is_index(nb::handle obj) { return !PyBool_Check(obj.ptr()) && PyIndex_Check(obj.ptr()); }

nb::object to_pylong(nb::handle obj) {
  nb::object v = nb::steal(PyNumber_Index(obj.ptr()));
  if (!v.is_valid()) throw nb::python_error();
  return v;
}

struct py_stream {
  arrayport::stream stream;
  int priority = 0;
  nb::object owner;  // the foreign stream object an adopted handle came from: kept alive

  std::uintptr_t handle() const noexcept { return to_int(stream.handle()); }
  int device() const noexcept { return stream.device(); }
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

// The handle of a foreign stream object; `label` names it in messages ("Stream.adopt: obj").
std::uintptr_t foreign_handle(nb::handle obj, const std::string& label) {
  if (nb::hasattr(obj, "__cuda_stream__")) {
    // cuda.core's protocol: a method returning (version, handle); its first release made it a
    // property, so a plain tuple is taken too.
    nb::object attr = obj.attr("__cuda_stream__");
    nb::object result = PyCallable_Check(attr.ptr()) ? attr() : attr;
    if (!nb::isinstance<nb::tuple>(result) || nb::len(result) != 2 || !is_index(result[0]))
      throw type_error(label +
                       ": __cuda_stream__() must return a (version, handle) tuple of ints, got " +
                       repr_of(result));
    nb::object version = to_pylong(result[0]);
    if (!version.equal(nb::int_(0)))
      throw value_error(label + ": __cuda_stream__ protocol version " + repr_of(version) +
                        " is not supported (expected 0)");
    return handle_arg(nb::object(result[1]).ptr(), label + ".__cuda_stream__()[1]");
  }
  if (nb::hasattr(obj, "cuda_stream"))  // torch.cuda.Stream / ExternalStream
    return handle_arg(nb::object(obj.attr("cuda_stream")).ptr(), label + ".cuda_stream");
  if (nb::hasattr(obj, "ptr"))  // cupy.cuda.Stream / ExternalStream
    return handle_arg(nb::object(obj.attr("ptr")).ptr(), label + ".ptr");
  throw type_error(label +
                   ": expected an object with __cuda_stream__ (the cuda.core protocol), a "
                   "PyTorch stream (.cuda_stream), a CuPy stream (.ptr), an "
                   "arrayport.cuda.Stream or an int handle, got '" +
                   type_name_of(obj.ptr()) + "'");
}

// `what` and `name` name the caller and the argument in messages ("Stream.adopt", "obj").
nb::object adopt(nb::handle obj, nb::handle device, const char* what = "Stream.adopt",
                 const char* name = "obj") {
  const std::string label = std::string(what) + ": " + name;
  if (nb::isinstance<py_stream>(obj)) {
    const py_stream& s = nb::cast<const py_stream&>(obj);
    if (!device.is_none() && cuda_device_arg(device, what) != s.device())
      throw value_error(std::string(what) + ": the stream is on device " +
                        std::to_string(s.device()) + ", not on device " + repr_of(device));
    return nb::borrow(obj);
  }
  if (is_index(obj))
    return nb::cast(borrow_stream(handle_arg(obj.ptr(), label), borrowed_device(device, what)));
  const std::uintptr_t handle = foreign_handle(obj, label);
  // What the owner states about its stream, whichever protocol gave the handle: PyTorch's
  // .device_index, CuPy's .device_id (-1 for its null stream: unknown), and both say .priority.
  std::optional<int> foreign_device = foreign_int(obj, "device_index");
  if (!foreign_device) foreign_device = foreign_int(obj, "device_id");
  const std::optional<int> priority = foreign_int(obj, "priority");
  int dev;
  if (!device.is_none()) {
    dev = cuda_device_arg(device, what);
  } else if (foreign_device && *foreign_device >= 0) {
    dev = cuda_device_arg(nb::int_(*foreign_device), what);
  } else {
    dev = borrowed_device(device, what);
  }
  return nb::cast(borrow_stream(handle, dev, priority.value_or(0), nb::borrow(obj)));
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

void exit_stream(py_stream& s, nb::handle, nb::handle, nb::handle) {
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

std::string stream_repr(const py_stream& s) {
  std::string r = "<arrayport.cuda.Stream " + hex(s.handle());
  if (s.handle() == legacy_handle || s.handle() == legacy_explicit_handle) r += " legacy default";
  if (s.handle() == per_thread_handle) r += " per-thread default";
  r += s.device() >= 0 ? ", device " + std::to_string(s.device()) : ", no device";
  r += ", priority " + std::to_string(s.priority);
  r += s.stream.owning() ? ", owned>" : ", borrowed>";
  return r;
}

// ---- the methods of Stream ---------------------------------------------------------------------

void stream_init(py_stream* self, nb::handle device, nb::handle priority, nb::handle non_blocking) {
  const auto p = static_cast<int>(int_arg(priority.ptr(), "Stream", "priority", INT32_MIN,
                                          INT32_MAX, "an int that fits 32 bits"));
  const bool non_block = bool_arg(non_blocking.ptr(), "Stream", "non_blocking");
  const int dev = owned_device(device, "Stream");
  new (self) py_stream{arrayport::stream(dev, p, non_block), p, {}};
}

py_stream stream_from_handle(nb::handle handle, nb::handle device) {
  return borrow_stream(handle_arg(handle.ptr(), "Stream.from_handle: handle"),
                       borrowed_device(device, "Stream.from_handle"));
}

nb::object stream_adopt(nb::handle obj, nb::handle device) { return adopt(obj, device); }

py_stream stream_legacy(nb::handle device) {
  return borrow_stream(legacy_handle, borrowed_device(device, "Stream.legacy"));
}

py_stream stream_per_thread(nb::handle device) {
  return borrow_stream(per_thread_handle, borrowed_device(device, "Stream.per_thread"));
}

void stream_synchronize(const py_stream& s) {
  runtime::device_guard guard(s.device());
  s.stream.synchronize();
}

bool stream_query(const py_stream& s) {
  runtime::device_guard guard(s.device());
  return s.stream.query();
}

void stream_wait_event(const py_stream& s, nb::handle event) {
  const py_event& e = event_arg(event, "Stream.wait_event", "event");
  runtime::device_guard guard(s.device());
  s.stream.wait(e.event);
}

nb::object stream_record_event(const py_stream& s, nb::handle event) {
  const current_stream_state state{s.stream.handle(), s.device()};
  if (!event.is_none()) {
    record(event_arg(event, "Stream.record_event", "event"), state);
    return nb::borrow(event);
  }
  runtime::require_device("Stream.record_event");
  runtime::device_guard guard(s.device());  // the event must belong to the stream's device
  py_event created = make_event(true, false);
  record(created, state);
  return nb::cast(std::move(created));
}

nb::object stream_device(const py_stream& s) {
  if (s.device() < 0) return nb::none();
  return nb::int_(s.device());
}

int stream_priority(const py_stream& s) { return s.priority; }
bool stream_owned(const py_stream& s) { return s.stream.owning(); }
nb::tuple stream_cuda_stream(const py_stream& s) { return nb::make_tuple(0, s.handle()); }
bool stream_eq(const py_stream& a, const py_stream& b) {
  return a.handle() == b.handle() && a.device() == b.device();
}
std::uintptr_t stream_hash(const py_stream& s) { return s.handle(); }

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

}  // namespace

std::string hex(std::uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

current_stream_state stream_arg(nb::handle obj, const char* what) {
  if (obj.is_none()) return current_stream();
  nb::object s = adopt(obj, nb::none(), what, "stream");
  const py_stream& ps = nb::cast<const py_stream&>(s);
  return {ps.stream.handle(), ps.device()};
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

nb::handle current_stream_object() noexcept {
  if (t_stream_stack.empty()) return nb::handle();
  PyObject* top = t_stream_stack.back().stream;
  py_stream* s = nullptr;
  if (!nb::try_cast<py_stream*>(nb::handle(top), s) || s == nullptr) return nb::handle();
  const current_stream_state cur = current_stream();
  return s->stream.handle() == cur.handle && s->device() == cur.device ? nb::handle(top)
                                                                       : nb::handle();
}

nb::object current_stream_of_this_thread() { return py_current_stream(); }

void register_stream(nb::module_& m) {
  nb::class_<py_stream>(m, "Stream", stream_doc, nb::type_slots(stream_slots))
      .def("__init__", &stream_init, "device"_a.none() = nb::none(), "priority"_a.none() = 0,
           "non_blocking"_a.none() = true,
           nb::sig("def __init__(self, device: int | Device | None = None, priority: int = 0, "
                   "non_blocking: bool = True) -> None"))
      .def_static("from_handle", &stream_from_handle, "handle"_a.none(),
                  "device"_a.none() = nb::none(),
                  nb::sig("def from_handle(handle: int, device: int | Device | None = None) -> "
                          "Stream"),
                  "Borrows the stream with this cudaStream_t handle (an int). It is not destroyed "
                  "here: its owner must keep it alive. `device` None: the current device (none "
                  "without a device). Needs no device; a negative handle is a ValueError.")
      .def_static("adopt", &stream_adopt, "obj"_a.none(), "device"_a.none() = nb::none(),
                  nb::sig("def adopt(obj: object, device: int | Device | None = None) -> Stream"),
                  "Borrows another library's stream: an object with __cuda_stream__ (the cuda.core "
                  "protocol, version 0), a PyTorch stream (.cuda_stream), a CuPy stream (.ptr), an "
                  "int handle, or a Stream (returned as is). The object is kept alive with the "
                  "Stream. The device is `device`, else the one the object states (PyTorch's "
                  ".device_index, CuPy's .device_id), else the current device. Anything else is a "
                  "TypeError.")
      .def_static("legacy", &stream_legacy, "device"_a.none() = nb::none(),
                  nb::sig("def legacy(device: int | Device | None = None) -> Stream"),
                  "The legacy default stream (handle 0) of `device` (None: the current device), "
                  "which synchronises with every blocking stream. Needs no device.")
      .def_static("per_thread", &stream_per_thread, "device"_a.none() = nb::none(),
                  nb::sig("def per_thread(device: int | Device | None = None) -> Stream"),
                  "The calling thread's per-thread default stream (handle 2, cudaStreamPerThread) "
                  "of `device`. The handle means 'this thread's' wherever it is used. Needs no "
                  "device.")
      .def("synchronize", &stream_synchronize, nb::call_guard<gil_release>(),
           "Waits until all work queued so far on this stream has completed (releases the GIL). "
           "A no-op without a device.")
      .def("query", &stream_query,
           "True when all work queued so far has completed (always True without a device).")
      .def("wait_event", &stream_wait_event, "event"_a.none(),
           nb::sig("def wait_event(self, event: Event) -> None"),
           "Makes work queued on this stream from now on wait for the work `event` captured, "
           "without blocking the host.")
      .def("record_event", &stream_record_event, "event"_a.none() = nb::none(),
           nb::sig("def record_event(self, event: Event | None = None) -> Event"),
           "Records `event` (None: a new Event() with the default flags, created on this stream's "
           "device) on this stream and returns it.")
      .def_prop_ro("handle", &py_stream::handle, "The cudaStream_t, as an int (0: legacy default).")
      .def_prop_ro("device", &stream_device, nb::sig("def device(self) -> int | None"),
                   "The device index of the stream; None only for a borrowed stream on a machine "
                   "without a device.")
      .def_prop_ro("priority", &stream_priority,
                   "The priority asked for at creation; for a borrowed stream, the one its owner "
                   "states (PyTorch, CuPy), else 0.")
      .def_prop_ro("owned", &stream_owned,
                   "True when this object created the stream and destroys it.")
      .def("__cuda_stream__", &stream_cuda_stream,
           nb::sig("def __cuda_stream__(self) -> tuple[int, int]"),
           "The cuda.core stream protocol: (version 0, handle).")
      .def("__enter__", &enter_stream, nb::sig("def __enter__(self) -> Stream"))
      .def("__exit__", &exit_stream, "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none(),
           nb::sig("def __exit__(self, exc_type: object, exc: object, tb: object) -> None"))
      .def("__eq__", &stream_eq, nb::is_operator())
      .def("__hash__", &stream_hash)
      .def("__repr__", &stream_repr);
}

}  // namespace arrayport::ext
