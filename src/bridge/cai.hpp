// __cuda_array_interface__ (v0 to v3, and PyTorch's v2): a dict of shape, typestr, data, strides
// and stream, each value held from its lookup on (the lookups run Python code).
#pragma once

#include "bridge/held.hpp"

#include <arrayport/memory_kind.hpp>
#include <arrayport/python/constraints.hpp>

#include <Python.h>

namespace arrayport::bridge {

// The dict's keys, interned once: as interned strings a lookup costs 40 ns a dict;
// PyDict_GetItemString's fresh key strings cost 290. nullptr only when interning failed.
enum cai_key {
  cai_version,
  cai_mask,
  cai_shape,
  cai_typestr,
  cai_data,
  cai_strides,
  cai_stream,
  cai_keys
};
inline constexpr const char* cai_names[cai_keys] = {"version", "mask",    "shape", "typestr",
                                                    "data",    "strides", "stream"};
PyObject* cai_key_object(cai_key k) noexcept;
PyObject* cai_attribute() noexcept;  // "__cuda_array_interface__"

/// The view through obj.__cuda_array_interface__, the producer's stream ordered before `consumer`.
void from_cai(held& a, const python::constraints& c, PyObject* obj, stream_handle consumer,
              bool sync);

/// Fills the view from an interface dict `d` (a new reference, released here). Returns what CUDA
/// said of the memory (host: CUDA does not know it, and the view takes it for device memory).
memory_kind from_cai_dict(held& a, const python::constraints& c, PyObject* obj, PyObject* d,
                          stream_handle consumer, bool sync);

}  // namespace arrayport::bridge
