// JAX arrays: ready ones through __cuda_array_interface__, the rest through jaxlib's exporter.
//
// JAX's __dlpack__ is Python over jaxlib's buffer_to_dlpack_managed_tensor: 3 to 5 us a call with
// a stream, of which the exporter is about 1 us. For an array on one device, arrayport calls the
// exporter as __dlpack__ would (jax_dlpack). Its __cuda_array_interface__ is C++ (0.7 us) but
// version 2: no stream, and it does not wait for the computation that defines the array.
// Array.is_ready() (0.3 us) says whether that is done. So a ready array in GPU memory, passed as a
// function argument (call-scoped) to a parameter that only reads (JAX arrays are immutable), needs
// no stream ordering and no DLPack tensor: its interface serves. Anything else (a pending array, a
// writable or kept view, ops and copies that release the GIL, unpinned host memory, arrays with no
// interface) takes __dlpack__, whose capsule holds JAX's external reference. A callee that releases
// the GIL while it reads a const view relies on no other thread donating or deleting that array
// meanwhile.
#pragma once

#include "bridge/held.hpp"

#include <arrayport/memory_kind.hpp>
#include <arrayport/python/constraints.hpp>

#include <Python.h>

#include <cstdint>

namespace arrayport::bridge {

bool is_jax_array_type(PyTypeObject* type) noexcept;

/// jaxlib's ArrayImpl, once the type cache has met it.
PyTypeObject*& jax_array_type() noexcept;

/// A ready JAX array, for a read-only call-scoped view, through its interface. false, with no
/// error set and `a` untouched, when it is not ready or has no interface: __dlpack__ serves then.
bool from_jax_ready(held& a, const python::constraints& c, PyObject* obj);

/// For a typed const parameter: a ready array's interface straight into `v`, without a holder.
/// Row-major interfaces only; anything else (strides, a mask, another typestr, a host view,
/// pageable memory) is left to acquire().
bool jax_borrow(PyObject* obj, const python::constraints& c, arrayport_view_t& v,
                std::int64_t* ext) noexcept;

/// What obj.__dlpack__(stream=stream_arg) returns (a new reference to JAX's capsule), made the
/// way JAX's own __dlpack__ makes it (jax/_src/dlpack.py: _to_dlpack) for an array on one
/// device, by jaxlib's exporter without JAX's Python around it. nullptr with no error set where
/// it does not serve: another jaxlib, an array over several devices, or an error, which
/// __dlpack__ then raises with JAX's own message.
PyObject* jax_dlpack(PyObject* obj, PyObject* stream_arg) noexcept;

}  // namespace arrayport::bridge
