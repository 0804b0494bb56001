// Devices: the RAII device_guard, device properties and memory information.
#pragma once

#include <arrayport/runtime.hpp>

namespace arrayport {

using runtime::device_guard;
using runtime::device_properties;

/// Number of usable CUDA devices (0 without CUDA, driver or device).
inline int device_count() { return runtime::device_count(); }

/// The calling thread's current device.
inline int current_device() { return runtime::get_device(); }

inline device_properties get_device_properties(int device) {
  return runtime::get_device_properties(device);
}

}  // namespace arrayport
