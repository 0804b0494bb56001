// The produce bridge for other extensions: C++ memory (an arrayport::vector or buffer, or a pointer
// with an owner) -> the one arrayport.Array type, without a copy.
//
// The container moves into a capsule that the Array keeps as its base, so the memory is freed by
// the module that allocated it, exactly when the last Python holder goes.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/python/api.hpp>

#include <arrayport/buffer.hpp>
#include <arrayport/c/view.h>
#include <arrayport/dtype.hpp>
#include <arrayport/layout.hpp>
#include <arrayport/vector.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

namespace ARRAYPORT_NAMESPACE {
namespace python {

namespace detail {

template <class Owned>
void delete_capsule(PyObject* capsule) noexcept {
  delete static_cast<Owned*>(PyCapsule_GetPointer(capsule, "arrayport.owned"));
}

inline PyObject* make_view_array(void* data, arrayport::dtype dt, const std::int64_t* shape,
                                 int ndim, memory_kind kind, int device, stream_handle stream,
                                 bool readonly, PyObject* owner) {
  if (ndim < 0 || ndim > ARRAYPORT_MAX_NDIM)
    throw value_error("to_array: expected 0 to 64 dimensions, got " + std::to_string(ndim));
  check_layout("to_array", shape, nullptr, ndim, static_cast<std::int64_t>(dt.itemsize()));
  const arrayport_python_api_t& api = import_api();
  std::int64_t strides[ARRAYPORT_MAX_NDIM];
  compact_strides(shape, ndim, strides, static_cast<std::int64_t>(dt.itemsize()));
  arrayport_view_t v;
  fill_c_view(v, data, dt.to_c(), shape, strides, ndim,
              {static_cast<std::uint32_t>(kind), dlpack_device(kind, device < 0 ? 0 : device),
               stream, readonly ? ARRAYPORT_VIEW_READONLY : 0u, nullptr});
  PyObject* array = api.array_from_view(&v, owner);
  if (!array) throw error_already_set();
  return array;
}

template <class Owned>
PyObject* capsule_of(Owned&& owned) {
  auto* held = new Owned(std::move(owned));
  PyObject* capsule = PyCapsule_New(held, "arrayport.owned", &delete_capsule<Owned>);
  if (!capsule) {
    delete held;
    throw error_already_set();
  }
  return capsule;
}

}  // namespace detail

/// A new Array (a new reference) that takes over `v`: C-contiguous with the given shape (default:
/// one dimension of v.size()). Throws value_error when the shape does not hold v.size() elements.
template <class T>
PyObject* to_array(arrayport::vector<T>&& v, std::initializer_list<std::int64_t> shape = {}) {
  std::int64_t dims[ARRAYPORT_MAX_NDIM];
  int ndim = 0;
  for (std::int64_t e : shape) {
    if (ndim == ARRAYPORT_MAX_NDIM) throw value_error("to_array: more than 64 dimensions");
    dims[ndim++] = e;
  }
  if (ndim == 0) dims[ndim++] = static_cast<std::int64_t>(v.size());
  const std::int64_t n =
      check_layout("to_array", dims, nullptr, ndim, static_cast<std::int64_t>(sizeof(T))).count;
  if (n != static_cast<std::int64_t>(v.size()))
    throw value_error("to_array: shape holds " + std::to_string(n) + " elements, the vector " +
                      std::to_string(v.size()));
  void* data = v.data();
  const memory_kind kind = v.kind();
  const int device = v.device();
  const stream_handle stream = v.stream();
  PyObject* capsule = detail::capsule_of(std::move(v));
  PyObject* array = nullptr;
  try {
    array = detail::make_view_array(data, dtype_of<T>, dims, ndim, kind, device, stream, false,
                                    capsule);
  } catch (...) {
    Py_DECREF(capsule);
    throw;
  }
  Py_DECREF(capsule);
  return array;
}

/// A new Array viewing `data` (C-contiguous) that keeps `owner` alive; owner may be nullptr for
/// memory that outlives the interpreter (static data).
template <class T>
PyObject* to_array(T* data, std::initializer_list<std::int64_t> shape, memory_kind kind,
                   PyObject* owner, int device = -1, stream_handle stream = nullptr) {
  return detail::make_view_array(
      const_cast<std::remove_const_t<T>*>(data), dtype_of<std::remove_const_t<T>>, shape.begin(),
      static_cast<int>(shape.size()), kind, device, stream, std::is_const_v<T>, owner);
}

}  // namespace python
}  // namespace arrayport
