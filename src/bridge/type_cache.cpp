// The per-type protocol cache: what a producer type offers is asked once (attribute lookups run
// the type's metaclass code, 100s of ns), then read from here.
#include "bridge/type_cache.hpp"

#include "bridge/cupy.hpp"
#include "bridge/exchange.hpp"
#include "bridge/jax.hpp"

#include <arrayport/python/api.hpp>
#include <arrayport/python/constraints.hpp>
#include <arrayport/python/numpy.hpp>

#include <cstring>
#include <new>

namespace arrayport::bridge {
namespace {

bool is_numpy_array_type(PyTypeObject* type) noexcept {
  for (PyTypeObject* t = type; t; t = python::limited::type_base(t))
    if (is_c_type_named(t, "numpy.ndarray"))
      return python::limited::basic_size(type) >=
             static_cast<Py_ssize_t>(sizeof(python::numpy::array_fields));
  return false;
}

bool type_has(PyTypeObject* type, const char* attr) noexcept {
  return PyObject_HasAttrString(reinterpret_cast<PyObject*>(type), attr) == 1;
}

type_entry describe_type(PyTypeObject* type, const arrayport_python_api_t* api) noexcept {
  type_entry e;
  e.type = type;
  if (api && type == api->array_type) {
    e.protocols = python::protocol_array;
    return e;
  }
  if ((e.exchange = find_exchange_api(type))) e.protocols |= python::protocol_exchange;
  if (python::limited::has_buffer(type)) e.protocols |= python::protocol_buffer;
  e.numpy = (e.protocols & python::protocol_buffer) && is_numpy_array_type(type);
  if (e.numpy && is_c_type_named(type, "numpy.ndarray")) numpy_exact_type() = type;
  if (cupy().state >= 0 && is_cupy_array_type(type)) e.protocols |= python::protocol_cupy;
  if (type_has(type, "__dlpack__")) e.protocols |= python::protocol_dlpack;
  if (type_has(type, "__cuda_array_interface__")) e.protocols |= python::protocol_cai;
  e.jax = (e.protocols & python::protocol_cai) && (e.protocols & python::protocol_dlpack) &&
          is_jax_array_type(type);
  if (e.jax && !jax_array_type()) {
    Py_INCREF(
        reinterpret_cast<PyObject*>(type));  // kept for good, as the type cache keeps its types
    jax_array_type() = type;
  }
  return e;
}

}  // namespace

bool is_c_type_named(PyTypeObject* t, const char* dotted) noexcept {
  if (python::limited::made_by_class_statement(t)) return false;
  try {
    return python::limited::tp_name(t) == dotted;
  } catch (const std::bad_alloc&) {
    return false;  // not known to be that type
  }
}

PyTypeObject*& numpy_exact_type() noexcept {
  static PyTypeObject* type = nullptr;
  return type;
}

type_cache& types() noexcept {
  static type_cache cache;
  return cache;
}

namespace {

struct exchange_table {
  arrayport_exchange_type_t entries[ARRAYPORT_EXCHANGE_TYPES] = {};
  int next = 0;  // the entry filled longest ago
};

exchange_table& exchange() noexcept {
  static exchange_table table;
  return table;
}

}  // namespace

const arrayport_exchange_type_t* exchange_types() noexcept { return exchange().entries; }

namespace {

// The slot of `type`, or of the empty slot where it would go.
int slot_of(const type_cache& c, const PyTypeObject* type) noexcept {
  // Type objects are 8-aligned and hundreds of bytes apart: the low bits carry nothing.
  auto i =
      static_cast<int>((reinterpret_cast<std::uintptr_t>(type) >> 4) & (type_cache::slots - 1));
  while (c.entries[i].type && c.entries[i].type != type) i = (i + 1) & (type_cache::slots - 1);
  return i;  // a free slot exists: at most 3/4 are used
}

}  // namespace

type_entry lookup_type(PyTypeObject* type) {
  type_cache& c = types();
  if (const type_entry& hit = c.entries[slot_of(c, type)]; hit.type) return hit;
  // Held from here: describing the type runs its metaclass's code, which may drop the type.
  Py_INCREF(reinterpret_cast<PyObject*>(type));
  type_entry e = describe_type(type, python::loaded_api());
  // Looked up again: describing may have run a lookup (through Python code) that cached it.
  type_entry& slot = c.entries[slot_of(c, type)];
  if (!slot.type && c.used < type_cache::max_used) {
    slot = e;
    ++c.used;
  } else {
    Py_DECREF(reinterpret_cast<PyObject*>(
        type));  // a cached type stays referenced from the cache: never freed
  }
  return e;
}

void publish_exchange_type(PyTypeObject* type,
                           const arrayport_dlpack_exchange_api_t* api) noexcept {
  exchange_table& t = exchange();
  for (const arrayport_exchange_type_t& e : t.entries)
    if (e.type == type) return;
  if (!api) return;
  // The entry holds its own reference (the type cache may be full): a listed type is never freed.
  Py_INCREF(reinterpret_cast<PyObject*>(type));
  arrayport_exchange_type_t& e = t.entries[t.next];
  PyTypeObject* evicted = e.type;
  e.api = api;  // the table first: a reader matches the type, then reads its table
  e.type = type;
  t.next = (t.next + 1) % ARRAYPORT_EXCHANGE_TYPES;
  Py_XDECREF(reinterpret_cast<PyObject*>(
      evicted));  // last: its dealloc may run Python code, the table is consistent by then
}

void unpublish_exchange_types() noexcept {
  exchange_table dropped = exchange();
  exchange() = exchange_table{};
  for (const arrayport_exchange_type_t& e : dropped.entries)
    Py_XDECREF(reinterpret_cast<PyObject*>(e.type));
}

void remember_dlpack(PyTypeObject* type, int cuda, bool legacy) noexcept {
  type_cache& c = types();
  type_entry& e = c.entries[slot_of(c, type)];
  if (!e.type) return;
  if (cuda >= 0) e.dlpack_cuda = static_cast<std::int8_t>(cuda);
  e.dlpack_legacy = legacy;
}

void forget_protocol(PyTypeObject* type, std::uint32_t protocol) noexcept {
  type_cache& c = types();
  type_entry& e = c.entries[slot_of(c, type)];
  if (e.type) e.protocols &= ~protocol;
}

void clear_type_cache() noexcept {
  unpublish_exchange_types();
  type_cache& c = types();
  for (type_entry& e : c.entries)
    if (e.type) Py_DECREF(e.type);
  c = type_cache{};
}

}  // namespace arrayport::bridge
