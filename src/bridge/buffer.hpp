// The buffer protocol (PEP 3118: memoryview, bytes, array.array, ...) and NumPy arrays read from
// their struct (python/numpy.hpp), which the buffer protocol would describe more slowly.
#pragma once

#include "bridge/held.hpp"

#include <arrayport/python/constraints.hpp>

#include <Python.h>

namespace arrayport::bridge {

/// The view through bf_getbuffer, with PEP 3118's contracts checked (no suboffsets, a shape for
/// more than one axis, len matching the shape of a contiguous buffer).
void from_buffer(held& a, const python::constraints& c, PyObject* obj);

/// A NumPy array's view from its struct; false (nothing taken) for what only the buffer
/// protocol describes (python/numpy.hpp).
bool from_numpy(held& a, const python::constraints& c, PyObject* obj);

}  // namespace arrayport::bridge
