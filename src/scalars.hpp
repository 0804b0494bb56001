// Python numbers -> one element of a dtype, with NumPy's range rules (OverflowError, TypeError).
#pragma once

#include <arrayport/dtype.hpp>

#include <Python.h>

namespace arrayport::ext {

/// Writes `value` as one element of `dt` into `out` (dt.itemsize() bytes). Throws
/// nanobind::python_error with OverflowError / TypeError set.
void scalar_to_bytes(PyObject* value, dtype dt, unsigned char* out);

}  // namespace arrayport::ext
