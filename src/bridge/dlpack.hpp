// DLPack tensors: from __dlpack__ capsules (versioned first, legacy on TypeError), and the
// DLTensor reading the exchange API shares.
#pragma once

#include "bridge/held.hpp"
#include "bridge/type_cache.hpp"

#include <arrayport/c/dlpack.h>
#include <arrayport/memory_kind.hpp>
#include <arrayport/python/constraints.hpp>

#include <Python.h>

namespace arrayport::bridge {

/// The DLPack device types arrayport takes, as messages list them.
inline constexpr const char* dl_devices_taken =
    "kDLCPU (1), kDLCUDA (2), kDLCUDAHost (3) or kDLCUDAManaged (13)";

/// Fills the view from a DLTensor (strides may be NULL: compact row-major; byte_offset applied).
void from_dl_tensor(held& a, const python::constraints& c, PyObject* obj,
                    const arrayport_dl_tensor_t& t, bool readonly);

/// A versioned managed tensor `t` taken over by `a` (its deleter runs once, at release), checked:
/// not NULL (else `null_message`), DLPack 1.x. Its DLTensor, and whether it is read-only.
const arrayport_dl_tensor_t& adopt_versioned(held& a, const python::constraints& c, PyObject* obj,
                                             arrayport_dl_managed_tensor_versioned_t* t,
                                             const char* null_message, bool& readonly);

/// Through obj.__dlpack__(stream=...): the consumer's stream for CUDA data, None for host data
/// (`type` remembers which the producer's tensors were, so __dlpack_device__ is asked once).
void from_dlpack(held& a, const python::constraints& c, PyObject* obj, const type_entry& type,
                 stream_handle consumer, bool sync);

}  // namespace arrayport::bridge
