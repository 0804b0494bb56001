// The DLPack C exchange API of arrayport.Array (DLPack 1.2+): the table, and its registration on
// the type as __dlpack_c_exchange_api__ (a capsule) and __c_dlpack_exchange_api__ (an int).
#pragma once

#include <Python.h>

namespace arrayport::ext {

/// Sets both attributes on `type` (the Array type); the table is static, alive for the life of
/// the process, as the specification asks.
void register_exchange_api(PyTypeObject* type);

}  // namespace arrayport::ext
