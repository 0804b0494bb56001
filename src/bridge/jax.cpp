// JAX arrays that are ready, through their __cuda_array_interface__, and jaxlib's DLPack exporter
// (see jax.hpp for when).
#include "bridge/jax.hpp"

#include "bridge/cai.hpp"
#include "bridge/checks.hpp"

#include <arrayport/dtype.hpp>
#include <arrayport/python/api.hpp>
#include <arrayport/python/spellings.hpp>
#include <arrayport/runtime.hpp>

#include <cstring>

namespace arrayport::bridge {
namespace {

using python::detail::py_ref;

// A JAX array's interface dict (a new reference) when the array is ready; nullptr with no error
// set when it is pending, deleted, or has no interface.
PyObject* jax_ready_interface(PyObject* obj) noexcept {
  static PyObject* const is_ready = interned("is_ready");
  PyObject* ready = is_ready ? PyObject_CallMethodObjArgs(obj, is_ready, nullptr) : nullptr;
  const bool done = ready == Py_True;
  Py_XDECREF(ready);
  PyObject* d = done && cai_attribute() ? PyObject_GetAttr(obj, cai_attribute()) : nullptr;
  if (!d || !PyDict_Check(d)) {
    Py_XDECREF(d);
    PyErr_Clear();
    return nullptr;
  }
  return d;
}

// Whether a JAX interface pointer is pageable host memory (JAX's unpinned_host kind), which the
// GPU cannot read, given what CUDA said of it (`cuda_says`): CUDA does not know it. Without a
// usable device nothing could be asked, and no GPU reads it either.
bool jax_pageable(const void* p, memory_kind cuda_says) noexcept {
  return p && cuda_says == memory_kind::host && runtime::is_available();
}

// The same question with no answer from query_pointer to hand: the driver is asked whether it
// knows the pointer (runtime::cuda_knows_pointer, ~60 ns).
bool jax_pageable(const void* p) noexcept {
  return p && runtime::is_available() && !runtime::cuda_knows_pointer(p);
}

// jaxlib's exporter and the sharding of an array on one device, looked up once in the loaded
// jaxlib (never imported here) and kept for good; state 1 found, -1 absent, 0 not yet asked.
struct jaxlib_exporter {
  PyObject* to_dlpack = nullptr;       // jaxlib._jax.buffer_to_dlpack_managed_tensor
  PyTypeObject* one_device = nullptr;  // jaxlib._jax.SingleDeviceSharding
  int state = 0;
};

const jaxlib_exporter& exporter() noexcept {
  static jaxlib_exporter e;
  if (e.state != 0) return e;
  e.state = -1;
  PyObject* name = PyUnicode_FromString("jaxlib._jax");
  PyObject* module = name ? PyImport_GetModule(name) : nullptr;
  Py_XDECREF(name);
  PyObject* fn =
      module ? PyObject_GetAttrString(module, "buffer_to_dlpack_managed_tensor") : nullptr;
  PyObject* sharding = module ? PyObject_GetAttrString(module, "SingleDeviceSharding") : nullptr;
  Py_XDECREF(module);
  if (fn && PyCallable_Check(fn) && sharding && PyType_Check(sharding)) {
    e.to_dlpack = fn;
    e.one_device = reinterpret_cast<PyTypeObject*>(sharding);
    e.state = 1;
  } else {
    Py_XDECREF(fn);
    Py_XDECREF(sharding);
  }
  PyErr_Clear();
  return e;
}

}  // namespace

PyObject* jax_dlpack(PyObject* obj, PyObject* stream_arg) noexcept {
  const jaxlib_exporter& e = exporter();
  if (e.state < 0) return nullptr;
  // The exporter reads the array's first shard whatever the rest: JAX's __dlpack__ refuses an
  // array over several devices first, and so does this (by leaving it to __dlpack__).
  static PyObject* const sharding_name = interned("sharding");
  PyObject* sharding = sharding_name ? PyObject_GetAttr(obj, sharding_name) : nullptr;
  const bool one_device = sharding && Py_TYPE(sharding) == e.one_device;
  Py_XDECREF(sharding);
  static PyObject* const kwnames = Py_BuildValue("(s)", "stream");
  PyObject* capsule = nullptr;
  if (one_device && kwnames) {
    PyObject* args[3] = {nullptr, obj, stream_arg};
    capsule =
        PyObject_Vectorcall(e.to_dlpack, args + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
  }
  if (!capsule) PyErr_Clear();
  return capsule;
}

bool is_jax_array_type(PyTypeObject* type) noexcept {
  // nanobind gives the type its dotted name; without it, the module says.
  std::string name;
  try {
    name = python::limited::tp_name(type);
  } catch (const std::bad_alloc&) {
    return false;
  }
  if (name == "jaxlib._jax.ArrayImpl") return true;
  if (name != "ArrayImpl") return false;
  PyObject* module = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__module__");
  const bool jax = module && PyUnicode_Check(module) &&
                   PyUnicode_CompareWithASCIIString(module, "jaxlib._jax") == 0;
  Py_XDECREF(module);
  PyErr_Clear();
  return jax;
}

PyTypeObject*& jax_array_type() noexcept {
  static PyTypeObject* type = nullptr;
  return type;
}

bool from_jax_ready(held& a, const python::constraints& c, PyObject* obj) {
  PyObject* d = jax_ready_interface(obj);
  if (!d) return false;
  const memory_kind cuda_says = from_cai_dict(a, c, obj, d, nullptr, false);  // ready: no ordering
  if (jax_pageable(a.view.data, cuda_says)) {
    a.drop_tensor();  // from_cai_dict took it for device memory: __dlpack__ says where it is
    return false;
  }
  return true;
}

bool jax_borrow(PyObject* obj, const python::constraints& c, arrayport_view_t& v,
                std::int64_t* ext) noexcept {
  const arrayport::dtype expected = c.dtypes[0];
  const int rank = c.ndim;
  if (c.writable || c.where == python::reach::host || expected == dtypes::bfloat16) return false;
  const char* expected_typestr = arrayport::detail::typestr_or_null(expected);
  PyObject* d = expected_typestr ? jax_ready_interface(obj) : nullptr;
  if (!d) return false;
  bool ok = false;
  do {
    // Owned: a later lookup may run a key's __eq__, which may empty the dict.
    auto item = [d](cai_key k) -> py_ref {
      PyObject* key = cai_key_object(k);
      return py_ref::borrow(key ? PyDict_GetItemWithError(d, key) : nullptr);
    };
    const py_ref shape_ref = item(cai_shape), typestr_ref = item(cai_typestr),
                 data_ref = item(cai_data), strides_ref = item(cai_strides),
                 mask_ref = item(cai_mask);
    PyObject *shape = shape_ref.get(), *typestr = typestr_ref.get(), *data = data_ref.get(),
             *strides = strides_ref.get(), *mask = mask_ref.get();
    if (PyErr_Occurred() || !cai_key_object(cai_strides) || !cai_key_object(cai_mask)) break;
    if (!shape || !typestr || !data || (strides && strides != Py_None) ||
        (mask && mask != Py_None) || !PyTuple_Check(shape) ||
        python::limited::tuple_size(shape) != static_cast<Py_ssize_t>(rank) ||
        !PyUnicode_Check(typestr) ||
        PyUnicode_CompareWithASCIIString(typestr, expected_typestr) != 0 || !PyTuple_Check(data) ||
        python::limited::tuple_size(data) != 2 ||
        !PyLong_Check(python::limited::tuple_item(data, 0)))
      break;
    std::int64_t extents[8] = {};
    bool read = true;
    for (int r = 0; r != rank && read; ++r) {
      PyObject* e = python::limited::tuple_item(shape, static_cast<Py_ssize_t>(r));
      extents[r] = PyLong_Check(e) ? PyLong_AsLongLong(e) : -1;
      read = extents[r] >= 0;
    }
    const long long address =
        PyLong_AsLongLong(python::limited::tuple_item(data, 0));  // as from_cai_dict
    const auto itemsize = static_cast<std::int64_t>(expected.itemsize());
    std::int64_t compact[8] = {};
    if (!read || address < 0 || PyErr_Occurred() ||
        !compact_strides(extents, rank, compact, itemsize) ||
        !borrowed_geometry(extents, compact, 1, rank, reinterpret_cast<const void*>(address),
                           itemsize, ext) ||
        jax_pageable(reinterpret_cast<const void*>(address)))
      break;
    fill_view(v, reinterpret_cast<void*>(address), rank, ext, expected.to_c(), memory_kind::device,
              0, true, obj);
    ok = true;
  } while (false);
  PyErr_Clear();  // a lookup or conversion that failed: acquire() asks again and says it
  Py_DECREF(d);
  return ok;
}

}  // namespace arrayport::bridge
