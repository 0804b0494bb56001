// What the translation units of arrayport.Array share: the object's accessors, view construction
// (array_type.cpp) and the functions behind the type's slots, each declared by its file.
#pragma once

#include "array/array.hpp"
#include "common/arguments.hpp"
#include "common/errors.hpp"

#include <arrayport/dtype.hpp>
#include <arrayport/layout.hpp>
#include <arrayport/memory_kind.hpp>

#include <nanobind/nanobind.h>

#include <Python.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace arrayport::ext {

inline array_object* as_array(PyObject* o) noexcept { return reinterpret_cast<array_object*>(o); }

inline std::size_t itemsize_of(const array_object* a) {
  return dtype::from_c(a->view.dtype).itemsize();
}

// An Array's layout was checked (layout.hpp) when the Array was made: these never fail on one.
inline std::int64_t element_count(const arrayport_view_t& v) noexcept {
  return element_count_or_minus_one(v.shape, v.ndim);
}

/// The CUDA device of an Array's device or managed memory, whose default stream a default-stream
/// handle in the Array names; -1 for host kinds (the current device's).
inline int array_device(const array_object* a) noexcept {
  return is_gpu_resident(static_cast<memory_kind>(a->view.memory_kind)) ? a->view.device.device_id
                                                                        : -1;
}

inline bool is_readonly(const array_object* a) noexcept {
  return (a->view.flags & ARRAYPORT_VIEW_READONLY) != 0;
}

/// A tuple of `n` ints, each multiplied by `scale`. New reference, nullptr with an error set.
PyObject* tuple_of(const std::int64_t* values, int n, std::int64_t scale = 1);

/// Where a basic index (ints, slices, Ellipsis, None) of `a` points: the first element and the
/// layout (strides in elements). Throws with IndexError set for a bad key.
struct basic_index {
  char* data;
  std::vector<std::int64_t> shape, strides;
};
basic_index resolve_basic_index(array_object* a, PyObject* key);

/// A new Array viewing `src`'s memory with another layout and dtype (strides in elements of
/// `dt`); it keeps the root owner alive. New reference. A layout that is not addressable
/// (layout.hpp) is a value_error naming `what`.
PyObject* make_view(array_object* src, char* data, const std::vector<std::int64_t>& shape,
                    const std::vector<std::int64_t>& strides, dtype dt, const char* what);

/// The stream a new Array of `kind` on `device` (-1: the current device) is ordered on: `stream`
/// (parsed from `stream_obj`) when it belongs to that device, else the device's default stream
/// (nullptr). An Array's stream always belongs to its memory's device. A stream given explicitly
/// (`stream_obj` not None) for GPU memory of another device is a value_error naming `what`.
stream_handle array_stream(memory_kind kind, int device, stream_handle stream,
                           nanobind::handle stream_obj, const char* what);

/// The numpy module; a type_error saying that `why` needs NumPy where it is not installed.
nanobind::module_ import_numpy(const std::string& why);

/// Runs `f` (returning an nb::object) in a raw CPython method: its result as a new reference, or
/// nullptr with the C++ exception set as the Python error.
template <class F>
PyObject* guarded_object(F&& f) noexcept {
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* { return f().release().ptr(); });
}

/// `h` as an Array; a type_error naming `what` for anything else.
array_object* require_array(nanobind::handle h, const char* what);

// ---- the slots and methods of arrayport.Array, by file (array_type.cpp holds the tables) -------

// array_attributes.cpp: the plain attributes, len().
PyObject* get_shape(PyObject* self, void*);
PyObject* get_strides(PyObject* self, void*);
PyObject* get_ndim(PyObject* self, void*);
PyObject* get_size(PyObject* self, void*);
PyObject* get_itemsize(PyObject* self, void*);
PyObject* get_nbytes(PyObject* self, void*);
PyObject* get_ptr(PyObject* self, void*);
PyObject* get_memory(PyObject* self, void*);
PyObject* get_device(PyObject* self, void*);
PyObject* get_readonly(PyObject* self, void*);
PyObject* get_base(PyObject* self, void*);
PyObject* get_c_contiguous(PyObject* self, void*);
PyObject* get_f_contiguous(PyObject* self, void*);
PyObject* get_dtype(PyObject* self, void*);
Py_ssize_t array_length(PyObject* self);

// array_exports.cpp: __cuda_array_interface__, __array_interface__ and the buffer protocol.
PyObject* get_cuda_array_interface(PyObject* self, void*);
PyObject* get_array_interface(PyObject* self, void*);
int array_getbuffer(PyObject* self, Py_buffer* view, int flags);

// array_numbers.cpp: int(), float(), complex(), operator.index(), bool() and __array__.
PyObject* array_int(PyObject* self);
PyObject* array_float(PyObject* self);
PyObject* array_complex(PyObject* self, PyObject* unused);
PyObject* array_index(PyObject* self);
int array_bool(PyObject* self);
PyObject* array_array(PyObject* self, PyObject* args, PyObject* kwargs);

/// One element's value decoded from its bytes: what repr prints and int()/float()/... return.
struct element_value {
  enum { boolean, signed_int, unsigned_int, real, complex } kind;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double re = 0, im = 0;
};
element_value decode_element(const unsigned char* p, dtype dt);
/// The element at `p` (host memory) as a Python bool, int, float or complex.
nanobind::object element_object(const unsigned char* p, dtype dt);

// array_indexing.cpp: views (a[key], transpose, .T, reshape, view(dtype), broadcasting).
PyObject* array_subscript(PyObject* self, PyObject* key);
PyObject* array_transpose(PyObject* self, PyObject* args);
PyObject* get_T(PyObject* self, void*);
PyObject* array_reshape(PyObject* self, PyObject* args);
PyObject* array_view(PyObject* self, PyObject* args, PyObject* kwargs);
/// A read-only view of `a` broadcast to `shape` (NumPy's broadcast_to: the added leading axes
/// and the axes of extent 1 get stride 0), for arrayport.array_api.broadcast_to.
nanobind::object broadcast_view(nanobind::handle a, nanobind::handle shape);

// array_repr.cpp.
PyObject* array_repr(PyObject* self);

// array_copy.cpp: copies.
PyObject* array_get(PyObject* self, PyObject* args, PyObject* kwargs);
PyObject* array_fill(PyObject* self, PyObject* value);
PyObject* array_copy(PyObject* self, PyObject* args, PyObject* kwargs);
PyObject* array_copy_to(PyObject* self, PyObject* args, PyObject* kwargs);
PyObject* array_to(PyObject* self, PyObject* args, PyObject* kwargs);
int array_ass_subscript(PyObject* self, PyObject* key, PyObject* value);

// managed_memory.cpp: prefetch() and advise() of managed memory.
PyObject* array_prefetch(PyObject* self, PyObject* args, PyObject* kwargs);
PyObject* array_advise(PyObject* self, PyObject* args, PyObject* kwargs);

// ---- module functions ---------------------------------------------------------------------------

/// Creates empty, zeros, ones, full and their *_like forms in `m` (creation.cpp).
void register_creation_functions(nanobind::module_& m);

/// Creates arrayport.copy and arrayport.to_gpu in `m` (array_copy.cpp).
void register_copy_functions(nanobind::module_& m);

}  // namespace arrayport::ext
