// DLPack export of arrayport.Array: __dlpack__ (versioned and legacy capsules, stream handshake,
// read-only and copy flags) and __dlpack_device__.
#pragma once

#include <arrayport/c/dlpack.h>

#include <Python.h>

#include <cstdint>

namespace arrayport::ext {

struct array_object;

/// Array.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None).
PyObject* dlpack_export(PyObject* self, PyObject* args, PyObject* kwargs);

/// Array.__dlpack_device__() -> (device_type, device_id).
PyObject* dlpack_device(PyObject* self, PyObject* unused);

/// An owning versioned tensor of the Array `self` on its own device, with no stream work (the
/// exchange API's): it holds a reference to `self` until its deleter runs, exactly once.
arrayport_dl_managed_tensor_versioned_t* versioned_tensor(PyObject* self);

/// Called at exit (atexit): deleters run from then on leave the owner's reference alone.
void note_interpreter_exiting() noexcept;

/// Tensors produced (capsules, exchange API) and not yet released by their consumer (tests check
/// deleters run once).
std::int64_t dlpack_live_exports() noexcept;

}  // namespace arrayport::ext
