// The DLPack C exchange API (DLPack 1.2+, type(obj).__dlpack_c_exchange_api__, PyTorch >= 2.10):
// a producer's tensor through a C function table, without a capsule or a Python call.
#pragma once

#include "bridge/held.hpp"

#include <arrayport/c/dlpack.h>
#include <arrayport/memory_kind.hpp>
#include <arrayport/python/constraints.hpp>

#include <Python.h>

#include <cstdint>

namespace arrayport::bridge {

/// The table, laid out as the specification defines (c/dlpack.h).
using dl_exchange_api = arrayport_dlpack_exchange_api_t;

/// The exchange API table of a type: a capsule "dlpack_exchange_api" (PyTorch) or an int address
/// (the DLPack 1.2 spelling __c_dlpack_exchange_api__). nullptr when absent or of another major.
const dl_exchange_api* find_exchange_api(PyTypeObject* type) noexcept;

/// The view through the table: non-owning for a call-scoped view when the producer offers it,
/// else an owned managed tensor. The producer's current stream is ordered before the consumer's
/// (`o`), or with `o.producer_stream` is the view's stream.
void from_exchange(held& a, const python::constraints& c, PyObject* obj, const dl_exchange_api& api,
                   const python::acquire_options& o);

/// For a typed call-scoped parameter: the non-owning tensor straight into `v` (extents into
/// `ext`), no holder. false (no error set) for anything acquire() must decide: host memory for a
/// device view (it may be pinned), a producer stream other than the consumer's (`o`, asked for
/// GPU memory only; with `o.producer_stream` it is the view's stream), any violation.
bool exchange_borrow(PyObject* obj, const dl_exchange_api& api, const python::constraints& c,
                     const python::acquire_options& o, arrayport_view_t& v,
                     std::int64_t* ext) noexcept;

}  // namespace arrayport::bridge
