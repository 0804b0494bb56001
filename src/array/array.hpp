// arrayport.Array: the one Python array type, a CPython object around the C ABI view.
//
// Written against the raw CPython API (not nanobind) so that its memory layout is plain C: other
// extension modules read the view straight out of the object once they know the type (exported
// through a capsule, as NumPy's import_array does).
#pragma once

#include <arrayport/buffer.hpp>
#include <arrayport/c/view.h>
#include <arrayport/dtype.hpp>

#include <nanobind/nanobind.h>

#include <Python.h>

#include <cstdint>
#include <vector>

namespace arrayport::ext {

/// Shapes up to this rank live inside the object; larger ones on the heap.
inline constexpr int inline_rank = 8;

struct array_object {
  PyObject_HEAD arrayport_view_t view;  // shape/strides point into `extents`; strides in elements
  std::int64_t* extents;  // [shape[0..ndim) | strides[0..ndim)]: inline_extents or heap
  std::int64_t inline_extents[2 * inline_rank];
  arrayport::buffer* owned;  // the memory this array owns, or nullptr for a view
  PyObject* base;            // what keeps a view's memory alive (an Array or a foreign owner)
  PyObject* stream_owner;    // keeps the stream `owned` is released on alive, or nullptr
  PyObject* weakrefs;
  // The buffer protocol's shape and byte strides, made on the first export and freed with the
  // Array: no release frees them, so Python 3.12's __release_buffer__ has nothing to free twice.
  Py_ssize_t* buffer_extents;
};

extern PyTypeObject* array_type;

inline bool is_array(PyObject* o) noexcept { return Py_TYPE(o) == array_type; }

/// A new compact Array owning `storage` (the Array takes it over). `stream_owner` (from
/// stream_owner() of array_internal.hpp) is kept until the memory is released on its stream.
/// `strides` (in elements): a compact order of the axes other than C's (allocate_output's);
/// nullptr: C order. Returns a new reference.
nanobind::object make_owned_array(arrayport::buffer&& storage, arrayport::dtype dt,
                                  const std::int64_t* shape, int ndim,
                                  nanobind::handle stream_owner = nanobind::handle(),
                                  const std::int64_t* strides = nullptr);
inline nanobind::object make_owned_array(arrayport::buffer&& storage, arrayport::dtype dt,
                                         const std::vector<std::int64_t>& shape,
                                         nanobind::handle stream_owner = nanobind::handle()) {
  return make_owned_array(std::move(storage), dt, shape.data(), static_cast<int>(shape.size()),
                          stream_owner);
}

/// A new Array viewing `view` (shape/strides copied) that keeps `owner` alive; NULL with a Python
/// error set on failure. The function behind the C API's array_from_view.
PyObject* array_from_view(const arrayport_view_t* view, PyObject* owner) noexcept;

/// Creates the Array type and the creation functions in `m`.
void register_array(nanobind::module_& m);

}  // namespace arrayport::ext
