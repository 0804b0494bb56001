// What the files of arrayport.cuda share: device arguments (device.cpp), events (event.cpp) and
// stream arguments (stream.cpp), and the register function of each type.
#pragma once

#include "cuda/current_stream.hpp"

#include <arrayport/event.hpp>

#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>

namespace arrayport::ext {

// ---- devices (device.cpp) ----------------------------------------------------------------------

/// A device argument that is given (not None): an int or a Device (arguments.hpp's parser; a
/// machine without a device raises NoDeviceError once the type is right). `none_ok`: the
/// argument may be None too (handled by the caller).
int cuda_device_arg(nanobind::handle obj, const char* what, bool none_ok = true,
                    const char* name = "device");

/// The device of something `what` creates: None is the current device, which must exist.
int owned_device(nanobind::handle obj, const char* what);

/// The device of a borrowed stream: None is the current device, or -1 ("whichever is current")
/// on a machine without one, so that borrowing never needs a device.
int borrowed_device(nanobind::handle obj, const char* what);

void register_device(nanobind::module_& m);

/// Refuses a device-wide wait (`what`) while the current stream captures a CUDA graph.
void refuse_device_wait_during_capture(const char* what);

// ---- events (event.cpp) ------------------------------------------------------------------------

struct py_event {
  arrayport::event event;
  bool timing = true;
  bool blocking = false;
  int device = 0;         // the device current at creation: CUDA ties the event to it
  bool recorded = false;  // elapsed_time() needs both events recorded
};

/// The Event argument `name` of `what`; a TypeError naming it for anything else.
py_event& event_arg(nanobind::handle obj, const char* what, const char* name);

/// A new event of the current device (NoDeviceError without one).
py_event make_event(bool timing, bool blocking);

/// Records `e` on stream `s`, which must belong to the event's device.
void record(py_event& e, current_stream_state s);

void register_event(nanobind::module_& m);

// ---- streams (stream.cpp) ----------------------------------------------------------------------

/// The stream an argument names: None is the current stream; anything else is adopted.
current_stream_state stream_arg(nanobind::handle obj, const char* what);

/// cuda.current_stream(): the innermost `with` block's Stream, or a borrowed default stream.
nanobind::object current_stream_of_this_thread();

/// Drops the references of `with stream:` blocks never left (atexit), see stream.cpp.
void release_open_stream_blocks() noexcept;

void register_stream(nanobind::module_& m);

/// "0x7f..": a handle as repr shows it.
std::string hex(std::uintptr_t v);

}  // namespace arrayport::ext
