// The consume engine: any Python array -> a checked view, the protocol chosen by the producer's
// type, fastest first (see dispatch in consume.cpp). Compiled once, in arrayport._core; other
// extensions reach it through the C API's acquire_view (python/api.h), after their inline fast
// path for exact arrayport.Array and numpy.ndarray arguments (python/acquire.hpp).
#pragma once

#include "bridge/held.hpp"

#include <arrayport/python/acquire.hpp>
#include <arrayport/python/api.h>
#include <arrayport/python/constraints.hpp>

#include <Python.h>

#include <cstdint>

namespace arrayport::bridge {

/// Acquires a view of `obj` into `a` (a fresh holder). Throws python::not_an_array,
/// type_error / value_error / buffer_error naming the argument, or error_already_set.
void acquire(held& a, PyObject* obj, const python::constraints& c,
             const python::acquire_options& o);

/// python::acquire for arrayport._core's own callers (view, asarray, the ops' operands): the
/// inline path, else the engine itself, with no request to build and read and no C API call
/// (300 instructions of a 1,750-instruction view()).
python::acquired acquire_here(PyObject* obj, const python::constraints& c,
                              const python::acquire_options& o);

/// An Array's data is ready on its own stream (view.stream): makes `consumer` wait for it there,
/// as for the device protocols' producers (an event, no host wait). Nothing for pageable memory.
void order_array_stream(const arrayport_view_t& v, stream_handle consumer);

/// The request (python/api.h) as constraints and options (the dtypes are the request's, seen as
/// arrayport::dtype: one layout). Throws value_error for a request this build cannot read.
void read_request(const arrayport_acquire_request_t* request, python::constraints& c,
                  python::acquire_options& o);

/// Fills the engine's entries of the C API table (acquire, release, acquire_view, traverse,
/// numpy_array_type).
void fill_api(arrayport_python_api_t& api) noexcept;

}  // namespace arrayport::bridge
