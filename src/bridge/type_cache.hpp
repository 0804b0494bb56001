// What each producer type offers, found once per type and cached: which protocols, its DLPack C
// exchange API table, whether it is NumPy's, CuPy's or JAX's array type, and what its __dlpack__
// did last time.
#pragma once

#include <arrayport/c/dlpack.h>
#include <arrayport/python/api.h>

#include <Python.h>

#include <cstdint>

namespace arrayport::bridge {

struct type_entry {
  PyTypeObject* type = nullptr;  // a strong reference: a cached type is never freed and reused
  std::uint32_t protocols = 0;   // what the type offers (python::protocol bits)
  const arrayport_dlpack_exchange_api_t* exchange = nullptr;
  bool numpy = false;            // numpy.ndarray or a subclass: its struct is read directly
  bool jax = false;              // jaxlib's ArrayImpl: see jax.hpp
  std::int8_t dlpack_cuda = -1;  // where its last __dlpack__ tensor was: 1 CUDA, 0 host, -1 unknown
  bool dlpack_legacy = false;    // its __dlpack__ takes no max_version (before DLPack 1.0)
};

/// What each producer type offers, hashed by the type's address (open addressing, linear
/// probes): a lookup costs the same for the first type seen and the 150th. NumPy's scalar types
/// alone are a dozen. Filled to at most 3/4 of the slots; past that, lookups still work, uncached.
struct type_cache {
  static constexpr int slots = 256;  // a power of two
  static constexpr int max_used = slots / 4 * 3;
  type_entry entries[slots];
  int used = 0;
};

type_cache& types() noexcept;

/// Drops every entry and the references it holds (the fuzz targets start each input afresh).
void clear_type_cache() noexcept;

/// The entry of `type`, describing (and caching) it the first time.
type_entry lookup_type(PyTypeObject* type);

/// Records what a type's __dlpack__ did: where its tensor was (`cuda` 1 / 0; -1 leaves it) and
/// whether it takes max_version.
void remember_dlpack(PyTypeObject* type, int cuda, bool legacy) noexcept;

/// Stops offering `protocol` for `type`: what a type advertises but refuses (CuPy's buffer
/// protocol for memory the CPU cannot reach) is not tried again.
void forget_protocol(PyTypeObject* type, std::uint32_t protocol) noexcept;

/// The exchange-API producer types the typed parameters read inline (C API 1.5's
/// exchange_types): ARRAYPORT_EXCHANGE_TYPES entries.
const arrayport_exchange_type_t* exchange_types() noexcept;

/// Puts a type with its exchange table into exchange_types (a reference taken), in place of the
/// entry filled longest ago (its reference dropped); a type already there is left.
void publish_exchange_type(PyTypeObject* type, const arrayport_dlpack_exchange_api_t* api) noexcept;

/// Empties exchange_types, dropping its references.
void unpublish_exchange_types() noexcept;

/// numpy.ndarray itself (not a subclass) once a lookup has met it; the C API publishes where it
/// is kept, for the typed parameters' inline fast path. Never freed: the cache holds a reference.
PyTypeObject*& numpy_exact_type() noexcept;

/// Whether `t` is the C type named `dotted` ("numpy.ndarray"), not a class statement's that
/// took the name: those may call themselves anything, but lack the struct the name stands for.
bool is_c_type_named(PyTypeObject* t, const char* dotted) noexcept;

}  // namespace arrayport::bridge
