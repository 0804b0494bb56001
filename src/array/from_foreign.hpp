// Arrays over foreign producers: arrayport.view(), cuda.register and the C API capsule.
#pragma once

#include <nanobind/nanobind.h>

#include <arrayport/memory_kind.hpp>

#include <Python.h>

namespace arrayport::ext {

/// The producer behind an Array's base when the base is the holder of an acquired view (so that
/// Array.base shows the NumPy/CuPy/... object, not the holder); nullptr otherwise. Borrowed.
PyObject* acquired_producer(PyObject* base) noexcept;

/// `obj` as an Array without a copy, through the consume bridge's DLPack C exchange API,
/// __dlpack__ or __cuda_array_interface__ (not the buffer protocol), its pending work ordered
/// before `stream`. For use within one call (the view may borrow the producer's extents). An
/// empty object when `obj` speaks none of these protocols; a producer's refusal or a malformed
/// array raises.
nanobind::object view_foreign(PyObject* obj, stream_handle stream);

/// Registers view(), _acquire_protocol() and the _C_API capsule in `m` (after the Array type).
void register_consume(nanobind::module_& m);

}  // namespace arrayport::ext
