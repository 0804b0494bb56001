// Python numbers -> one element of a dtype, with NumPy's range rules (OverflowError, TypeError).
#pragma once

#include <arrayport/dtype.hpp>

#include <Python.h>

namespace arrayport::ext {

/// Writes `value` as one element of `dt` into `out` (dt.itemsize() bytes). Throws
/// nanobind::python_error with OverflowError / TypeError set, the message naming the argument
/// `name` ("value", "full: fill_value").
void scalar_to_bytes(PyObject* value, dtype dt, unsigned char* out, const char* name = "value");

}  // namespace arrayport::ext
