// arrayport._core.cuda: devices, streams and events for Python (the arrayport.cuda module).
//
// Everything goes through the runtime shim (runtime.hpp) and the core's RAII stream/event, so the
// same code serves a machine with no driver: creation raises NoDeviceError with the probe's reason,
// borrowing a stream handle does not need a device. Blocking calls release the GIL.
#include "cuda/cuda.hpp"

#include "common/arguments.hpp"
#include "common/gil.hpp"
#include "cuda/cuda_internal.hpp"
#include "cuda/current_stream.hpp"

#include <arrayport/runtime.hpp>

#include <nanobind/nanobind.h>

namespace nb = nanobind;
using namespace nb::literals;

namespace arrayport::ext {
namespace {

constexpr const char* module_doc = R"(Devices, streams and events (public as arrayport.cuda).

Without a usable device (no GPU, no driver, or a CPU-only build) nothing here fails at import:
is_available() is False, device_count() is 0, and whatever needs a device raises
arrayport.NoDeviceError saying why. Borrowing a stream handle needs no device, so the default
streams and current_stream() work everywhere; their synchronize() and query() are no-ops there,
since no device work can be pending. Every blocking call releases the GIL.)";

int current_device() {
  runtime::require_device("current_device");
  return runtime::get_device();
}

void set_device(nb::handle device) {
  runtime::set_device(cuda_device_arg(device, "set_device", false));
}

void synchronize() {
  runtime::require_device("synchronize");
  refuse_device_wait_during_capture("synchronize()");
  runtime::device_synchronize();
}

// The argument vocabulary (common/) sits below this layer: it reads Devices and the current
// stream through these.
void install_argument_hooks() {
  cuda_argument_hooks hooks;
  hooks.device_index_of = [](PyObject* obj, int& index) noexcept {
    return device_index_of(obj, index);
  };
  hooks.current_stream = []() noexcept { return current_stream().handle; };
  hooks.current_stream_object = []() noexcept { return current_stream_object().ptr(); };
  set_cuda_argument_hooks(hooks);
}

void register_functions(nb::module_& m) {
  m.def("is_available", &runtime::is_available,
        "True when at least one CUDA device can be used (never raises).");
  m.def("device_count", &runtime::device_count,
        "The number of usable CUDA devices: 0 without a GPU, driver or CUDA build (never raises).");
  m.def("current_device", &current_device,
        "The calling thread's current device index. NoDeviceError without a device (rather than "
        "pretending device 0 exists).");
  m.def("set_device", &set_device, "device"_a.none(),
        nb::sig("def set_device(device: int | Device) -> None"),
        "Makes `device` (an int or a Device) current for the calling thread.");
  m.def("synchronize", &synchronize, nb::call_guard<gil_release>(),
        "Waits for all work on the current device, on every stream (releases the GIL). "
        "NoDeviceError without a device.");
  m.def("runtime_version", &runtime::runtime_version,
        "The CUDA runtime version arrayport was built with, e.g. 13000 for 13.0 (0 in a CPU-only "
        "build). Linked statically, so it does not need a driver.");
  m.def("driver_version", &runtime::driver_version,
        "The latest CUDA version the installed driver supports, e.g. 13000; 0 when no driver can "
        "be loaded (never raises).");
  m.def("current_stream", &current_stream_of_this_thread, nb::sig("def current_stream() -> Stream"),
        "The calling thread's current stream: the innermost `with stream:` block's stream (the "
        "same object), or the legacy default stream (handle 0, borrowed) of the current device "
        "when no block is open. Works without a device.");
}

}  // namespace

void register_cuda(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("cuda", module_doc);
  install_argument_hooks();
  nb::module_::import_("atexit").attr("register")(nb::cpp_function(&release_open_stream_blocks));
  register_functions(m);
  register_device(m);
  register_event(m);  // before Stream: Stream's signatures name it
  register_stream(m);
}

}  // namespace arrayport::ext
