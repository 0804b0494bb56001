// arrayport._core.cuda: device, stream and event control for Python (behind arrayport.cuda).
#pragma once

#include <nanobind/nanobind.h>

namespace arrayport::ext {

/// Creates the submodule `cuda` of `m` and binds Device, Stream, Event and the module functions.
/// Needs register_errors(m) first: its exceptions are the ones these functions raise.
void register_cuda(nanobind::module_& m);

/// The arrayport.cuda.Stream of the calling thread's innermost `with` block when it is the current
/// stream (C++ code may have set another since), else a null handle. Borrowed.
nanobind::handle current_stream_object() noexcept;

/// Whether `obj` is an arrayport.cuda.Device, and then its index (checked when it was made).
bool device_index_of(nanobind::handle obj, int& index) noexcept;

}  // namespace arrayport::ext
