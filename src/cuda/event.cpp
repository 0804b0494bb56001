// arrayport.cuda.Event: ordering streams and timing work.
#include "common/arguments.hpp"
#include "common/gil.hpp"
#include "cuda/cuda_internal.hpp"

#include <arrayport/error.hpp>
#include <arrayport/runtime.hpp>

#include <nanobind/stl/string.h>

#include <stdexcept>
#include <string>

namespace nb = nanobind;
using namespace nb::literals;

namespace arrayport::ext {
namespace {

constexpr const char* event_doc = R"(A CUDA event, for ordering streams and timing.

Event(timing=True, blocking=False): `timing` lets elapsed_time() measure between two events (it
costs a little per record; pass False for events used only to order streams). `blocking` makes
synchronize() sleep instead of spinning. The event belongs to the device current when it is
created, and can only be recorded on that device's streams. Needs a device (NoDeviceError).)";

void event_init(py_event* self, nb::handle timing, nb::handle blocking) {
  const bool t = bool_arg(timing.ptr(), "Event", "timing");
  const bool b = bool_arg(blocking.ptr(), "Event", "blocking");
  new (self) py_event(make_event(t, b));
}

void event_record(py_event& e, nb::handle stream) { record(e, stream_arg(stream, "Event.record")); }

void event_synchronize(const py_event& e) { e.event.synchronize(); }
bool event_query(const py_event& e) { return e.event.query(); }

double event_elapsed_time(const py_event& start, nb::handle end_obj) {
  const py_event& end = event_arg(end_obj, "Event.elapsed_time", "end");
  if (!start.timing || !end.timing)
    throw value_error(std::string("Event.elapsed_time: the ") + (start.timing ? "end" : "start") +
                      " event was created with timing=False");
  if (!start.recorded || !end.recorded)
    throw std::runtime_error(std::string("Event.elapsed_time: the ") +
                             (start.recorded ? "end" : "start") + " event has not been recorded");
  if (!start.event.query() || !end.event.query())
    throw std::runtime_error(
        "Event.elapsed_time: the events have not completed yet (call end.synchronize() first)");
  return static_cast<double>(start.event.elapsed_ms(end.event));
}

std::uintptr_t event_handle(const py_event& e) {
  return reinterpret_cast<std::uintptr_t>(e.event.handle());
}
int event_device(const py_event& e) { return e.device; }
bool event_timing(const py_event& e) { return e.timing; }
bool event_blocking(const py_event& e) { return e.blocking; }

std::string event_repr(const py_event& e) {
  std::string r =
      "<arrayport.cuda.Event " + hex(event_handle(e)) + ", device " + std::to_string(e.device);
  if (!e.timing) r += ", timing disabled";
  if (e.blocking) r += ", blocking";
  r += e.recorded ? ", recorded>" : ", not recorded>";
  return r;
}

}  // namespace

py_event& event_arg(nb::handle obj, const char* what, const char* name) {
  py_event* e = nullptr;
  if (!nb::try_cast<py_event*>(obj, e) || !e)
    throw type_error(arg_prefix(what, name) + "expected an arrayport.cuda.Event, got " +
                     type_name_of(obj.ptr()));
  return *e;
}

py_event make_event(bool timing, bool blocking) {
  runtime::require_device("Event");
  const int device = runtime::get_device();
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

void register_event(nb::module_& m) {
  nb::class_<py_event>(m, "Event", event_doc)
      .def("__init__", &event_init, "timing"_a.none() = true, "blocking"_a.none() = false,
           nb::sig("def __init__(self, timing: bool = True, blocking: bool = False) -> None"))
      .def("record", &event_record, "stream"_a.none() = nb::none(),
           nb::sig("def record(self, stream: object = None) -> None"),
           "Captures the work queued so far on `stream`: None is the current stream "
           "(current_stream()); anything Stream.adopt takes is accepted.")
      .def("synchronize", &event_synchronize, nb::call_guard<gil_release>(),
           "Waits until the work captured by the last record() has completed (releases the GIL). "
           "Returns at once for an event never recorded.")
      .def("query", &event_query,
           "True when the work captured by the last record() has completed (or it was never "
           "recorded).")
      .def("elapsed_time", &event_elapsed_time, "end"_a.none(),
           nb::sig("def elapsed_time(self, end: Event) -> float"),
           "Milliseconds from this event to `end` (resolution about half a microsecond). Both "
           "need timing=True, a record(), and completed work: ValueError or RuntimeError says "
           "which is missing, rather than blocking here.")
      .def_prop_ro("handle", &event_handle, "The cudaEvent_t, as an int.")
      .def_prop_ro("device", &event_device, "The device the event belongs to.")
      .def_prop_ro("timing", &event_timing)
      .def_prop_ro("blocking", &event_blocking)
      .def("__repr__", &event_repr);
}

}  // namespace arrayport::ext
