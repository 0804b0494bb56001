// The DLPack C exchange API: the table's discovery, the owned and the non-owning reads, and the
// stream ordering the API leaves to the consumer.
#include "bridge/exchange.hpp"

#include "bridge/checks.hpp"
#include "bridge/dlpack.hpp"
#include "bridge/type_cache.hpp"

#include <arrayport/dtype.hpp>
#include <arrayport/python/exchange.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/python/limited_api.hpp>

#include <string>

namespace arrayport::bridge {

namespace {

// Whether the type in `type`'s MRO that defines `name` is a C type (or one an extension made),
// not a class statement's: a subclass in Python of a C tensor type inherits its table.
bool defined_in_c(PyTypeObject* type, PyObject* name) noexcept {
  // __mro__ and each class's __dict__ (a read-only proxy): what tp_mro and tp_dict hold.
  PyObject* mro = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__mro__");
  bool found = false, in_c = false;
  for (Py_ssize_t k = 0; mro && PyTuple_Check(mro) && !found && k < PyTuple_Size(mro); ++k) {
    PyObject* base = PyTuple_GetItem(mro, k);
    PyObject* dict = PyType_Check(base) ? PyObject_GetAttrString(base, "__dict__") : nullptr;
    found = dict && PySequence_Contains(dict, name) == 1;
    in_c =
        found && !python::limited::made_by_class_statement(reinterpret_cast<PyTypeObject*>(base));
    Py_XDECREF(dict);
  }
  Py_XDECREF(mro);
  PyErr_Clear();
  return in_c;
}

}  // namespace

const dl_exchange_api* find_exchange_api(PyTypeObject* type) noexcept {
  static PyObject* const names[2] = {interned("__dlpack_c_exchange_api__"),
                                     interned("__c_dlpack_exchange_api__")};
  for (int i = 0; i < 2; ++i) {
    if (!names[i]) continue;
    PyObject* attr = PyObject_GetAttr(reinterpret_cast<PyObject*>(type), names[i]);
    if (!attr) {
      PyErr_Clear();
      continue;
    }
    const void* table = nullptr;
    if (PyCapsule_CheckExact(attr)) {
      table = PyCapsule_GetPointer(attr, "dlpack_exchange_api");
    } else if (i == 1 && PyLong_Check(attr) && defined_in_c(type, names[i])) {
      // DLPack 1.2's spelling: the table's address as an int. Any class statement could write
      // an int there, and reading a wrong address crashes: taken only from types made in C.
      table = PyLong_AsVoidPtr(attr);
    }
    Py_DECREF(attr);
    if (!table) {
      PyErr_Clear();
      continue;
    }
    auto* api = static_cast<const dl_exchange_api*>(table);
    if (api->header.version.major == 1 && api->managed_tensor_from_py_object_no_sync &&
        api->current_work_stream)
      return api;
  }
  return nullptr;
}

void from_exchange(held& a, const python::constraints& c, PyObject* obj, const dl_exchange_api& api,
                   const python::acquire_options& o) {
  if (o.call_scoped && api.dltensor_from_py_object_no_sync) {
    // Non-owning: the producer keeps shape/strides/data alive while the object lives and is not
    // resized; we hold the object and copy the extents.
    arrayport_dl_tensor_t t{};
    if (api.dltensor_from_py_object_no_sync(obj, &t) != 0)
      producer_failed(c, obj, "the exchange API's dltensor_from_py_object_no_sync");
    a.from = held::source::reference;
    from_dl_tensor(a, c, obj, t, false);
  } else {
    arrayport_dl_managed_tensor_versioned_t* t = nullptr;
    if (api.managed_tensor_from_py_object_no_sync(obj, &t) != 0)
      producer_failed(c, obj, "the exchange API's managed_tensor_from_py_object_no_sync");
    bool readonly = false;
    const arrayport_dl_tensor_t& dl =
        adopt_versioned(a, c, obj, t, "the DLPack exchange API returned NULL", readonly);
    from_dl_tensor(a, c, obj, dl, readonly);
  }
  arrayport_view_t& v = a.view;
  if (is_gpu_resident(static_cast<memory_kind>(v.memory_kind)) && (o.sync || o.producer_stream)) {
    // The exchange API does no synchronisation: order the producer's current stream before ours,
    // or work on it.
    void* producer = nullptr;
    if (api.current_work_stream(ARRAYPORT_DEVICE_CUDA, v.device.device_id, &producer) != 0)
      producer_failed(c, obj, "the exchange API's current_work_stream");
    if (o.producer_stream)
      v.stream = producer;
    else
      runtime::order_streams(producer, consumer_stream(o), v.device.device_id);
  }
}

bool exchange_borrow(PyObject* obj, const dl_exchange_api& api, const python::constraints& c,
                     const python::acquire_options& o, arrayport_view_t& v,
                     std::int64_t* ext) noexcept {
  if (!api.dltensor_from_py_object_no_sync) return false;
  arrayport_dl_tensor_t t{};
  if (api.dltensor_from_py_object_no_sync(obj, &t) != 0) {
    PyErr_Clear();  // acquire() asks again and reports it
    return false;
  }
  const arrayport::dtype expected = c.dtypes[0];
  const int rank = c.ndim;  // at most 8 (borrowable): ext holds 16 extents
  memory_kind kind;
  std::uintptr_t address = 0;
  if (arrayport::dtype::from_c(t.dtype) != expected ||
      !python::detail::borrowed_dl_geometry(t, rank, static_cast<std::int64_t>(expected.itemsize()),
                                            kind, address, ext, ext + rank) ||
      !reaches(c, kind))
    return false;
  void* producer = nullptr;
  if (is_gpu_resident(kind)) {
    if (api.current_work_stream(ARRAYPORT_DEVICE_CUDA, t.device.device_id, &producer) != 0) {
      PyErr_Clear();
      return false;
    }
    if (!o.producer_stream && static_cast<stream_handle>(producer) != consumer_stream(o))
      return false;
  }
  fill_view(v, reinterpret_cast<void*>(address), rank, ext, t.dtype, kind, t.device.device_id,
            false, obj);
  if (o.producer_stream) v.stream = producer;  // host memory: the caller names arrayport's
  return true;
}

}  // namespace arrayport::bridge
