// The consume side of arrayport._core: arrayport.view() and the C API capsule for other modules.
#pragma once

#include <nanobind/nanobind.h>

#include <Python.h>

namespace arrayport::ext {

/// The producer behind an Array's base when the base is the holder of an acquired view (so that
/// Array.base shows the NumPy/CuPy/... object, not the holder); nullptr otherwise. Borrowed.
PyObject* acquired_producer(PyObject* base) noexcept;

/// Registers view(), _acquire_protocol() and the _C_API capsule in `m` (after the Array type).
void register_consume(nanobind::module_& m);

}  // namespace arrayport::ext
