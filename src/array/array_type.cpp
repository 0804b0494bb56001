// The arrayport.Array type: its object's life (allocation, the collector, deallocation), the
// tables of its slots, methods and attributes (the functions behind them live in the other files
// of array/), and the ways an Array is made: owning, a view of another, a view of a C view.
#include "array/array.hpp"

#include "array/array_internal.hpp"
#include "array/dlpack_export.hpp"
#include "array/exchange_export.hpp"
#include "common/errors.hpp"

#include <arrayport/layout.hpp>
#include <arrayport/python/limited_api.hpp>

#include <structmember.h>  // PyMemberDef, T_PYSSIZET, READONLY (Python < 3.12 spelling)

#include <algorithm>
#include <cstddef>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace arrayport::ext {

PyTypeObject* array_type = nullptr;

namespace {

// Allocates an Array of `data` with room for `ndim` extents, its view filled (layout.hpp) but for
// the extents, which the caller writes. The view's owner is the Array itself.
array_object* alloc_array(int ndim, void* data, arrayport_dtype_t dt, c_view_place place) {
  auto* a = reinterpret_cast<array_object*>(PyType_GenericAlloc(array_type, 0));
  if (!a) throw nb::python_error();
  if (ndim > inline_rank) {
    a->extents = new (std::nothrow) std::int64_t[2 * static_cast<std::size_t>(ndim)];
    if (!a->extents) {
      Py_DECREF(a);
      throw std::bad_alloc();
    }
  } else {
    a->extents = a->inline_extents;
  }
  place.owner = a;
  fill_c_view(a->view, data, dt, a->extents, a->extents + ndim, ndim, place);
  return a;
}

// The references an Array holds, for the cycle collector: a producer that keeps a view of itself
// (x.me = arrayport.view(x)) is a cycle through `base` and its holder.
int array_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(as_array(self)->base);
  Py_VISIT(as_array(self)->stream_owner);
  return 0;
}

// Called on garbage only: the memory goes now, released on its stream before the stream's owner
// goes. What is left is an empty array at NULL, should anything still look.
int array_clear(PyObject* self) {
  array_object* a = as_array(self);
  delete std::exchange(a->owned, nullptr);
  a->view.data = nullptr;
  for (int i = 0; i < a->view.ndim; ++i) a->extents[i] = 0;
  Py_CLEAR(a->stream_owner);
  Py_CLEAR(a->base);
  return 0;
}

void array_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);  // before teardown: a collection must not see it half torn down
  array_object* a = as_array(self);
  if (a->weakrefs) PyObject_ClearWeakRefs(self);
  delete a->owned;  // stream-ordered release: queued device work may still finish reading it
  Py_XDECREF(a->stream_owner);  // only now: the release above was queued on its stream
  Py_XDECREF(a->base);
  if (a->extents != a->inline_extents) delete[] a->extents;
  PyMem_Free(a->buffer_extents);
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_Del(self);  // the type's tp_free: it has Py_TPFLAGS_HAVE_GC and no subclasses
  Py_DECREF(type);
}

PyObject* disallow_new(PyTypeObject*, PyObject*, PyObject*) {
  PyErr_SetString(PyExc_TypeError,
                  "arrayport.Array cannot be created directly; use arrayport.empty, zeros, ones, "
                  "full or asarray");
  return nullptr;
}

PyGetSetDef array_getset[] = {
    {"shape", get_shape, nullptr, "Extents, a tuple of ints.", nullptr},
    {"strides", get_strides, nullptr, "Strides in bytes, as NumPy's.", nullptr},
    {"ndim", get_ndim, nullptr, "Number of dimensions.", nullptr},
    {"size", get_size, nullptr, "Number of elements.", nullptr},
    {"itemsize", get_itemsize, nullptr, "Bytes per element.", nullptr},
    {"nbytes", get_nbytes, nullptr,
     "size * itemsize, as NumPy's: also for zero or overlapping strides (a broadcast view), where "
     "the memory spanned is smaller; what copy() allocates.",
     nullptr},
    {"ptr", get_ptr, nullptr, "Address of the first element, an int (for ctypes and raw APIs).",
     nullptr},
    {"memory", get_memory, nullptr, "'device', 'managed', 'pinned' or 'host'.", nullptr},
    {"device", get_device, nullptr, "(device type, device id), e.g. ('cuda', 0) or ('cpu', 0).",
     nullptr},
    {"readonly", get_readonly, nullptr, "True when writes are not allowed.", nullptr},
    {"base", get_base, nullptr, "The object a view keeps alive, or None for an owning array.",
     nullptr},
    {"dtype", get_dtype, nullptr, "A NumPy dtype when NumPy is installed, else the dtype name.",
     nullptr},
    {"c_contiguous", get_c_contiguous, nullptr, "C-order contiguity.", nullptr},
    {"f_contiguous", get_f_contiguous, nullptr, "Fortran-order contiguity.", nullptr},
    {"T", get_T, nullptr, "The transpose (a view).", nullptr},
    {"__cuda_array_interface__", get_cuda_array_interface, nullptr,
     "CUDA Array Interface v3 (device-accessible memory only).", nullptr},
    {"__array_interface__", get_array_interface, nullptr,
     "NumPy array interface v3 (host-accessible memory only).", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// Each docstring opens with CPython's text signature ("name($self, ...)\n--\n\n"), so that
// inspect.signature, help() and mypy's stubtest (tests/python/package/test_stubs.py) see the
// parameters.
PyMethodDef array_methods[] = {
    {"__dlpack__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(dlpack_export)),
     METH_VARARGS | METH_KEYWORDS,
     "__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "A DLPack capsule."},
    {"__array__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(array_array)),
     METH_VARARGS | METH_KEYWORDS,
     "__array__($self, /, dtype=None, copy=None)\n--\n\n"
     "A NumPy array of host-readable memory, without a copy unless dtype or copy=True asks for "
     "one (NumPy 2's protocol); TypeError for device memory (copy it with .get())."},
    {"__complex__", array_complex, METH_NOARGS,
     "__complex__($self, /)\n--\n\nThe element of a 0-d array as a complex."},
    {"__dlpack_device__", dlpack_device, METH_NOARGS,
     "__dlpack_device__($self, /)\n--\n\n(DLPack device type, device id)."},
    {"get", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(array_get)),
     METH_VARARGS | METH_KEYWORDS,
     "get($self, /, stream=None)\n--\n\n"
     "A NumPy copy on the host (PyCUDA's GPUArray.get()); waits for that stream."},
    {"fill", array_fill, METH_O,
     "fill($self, value, /)\n--\n\n"
     "Sets every element of any view to a value (stream-ordered on the device)."},
    {"copy", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(array_copy)),
     METH_VARARGS | METH_KEYWORDS,
     "copy($self, /, dtype=None, memory=None, device=None, stream=None)\n--\n\n"
     "A C-contiguous copy, in the same memory and on the same device unless given (asynchronous "
     "on the stream)."},
    {"copy_to", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(array_copy_to)),
     METH_VARARGS | METH_KEYWORDS,
     "copy_to($self, /, dst, stream=None)\n--\n\n"
     "Copies into an Array of the same shape and dtype, any layout and memory (asynchronous on "
     "the stream)."},
    {"to", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(array_to)),
     METH_VARARGS | METH_KEYWORDS,
     "to($self, /, memory=None, device=None, stream=None, dtype=None, copy=False)\n--\n\n"
     "This array in another memory kind, device or dtype; itself when nothing changes and copy "
     "is False."},
    {"prefetch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(array_prefetch)),
     METH_VARARGS | METH_KEYWORDS,
     "prefetch($self, /, device=None, stream=None)\n--\n\n"
     "Migrates managed memory to a device ('cpu' or -1 for the host); None means the array's "
     "device."},
    {"advise", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(array_advise)),
     METH_VARARGS | METH_KEYWORDS,
     "advise($self, /, advice, device=None)\n--\n\n"
     "cudaMemAdvise for managed memory: 'set_read_mostly', 'unset_read_mostly', "
     "'set_preferred_location', 'unset_preferred_location', 'set_accessed_by' or "
     "'unset_accessed_by'."},
    {"view", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(array_view)),
     METH_VARARGS | METH_KEYWORDS,
     "view($self, /, dtype=None)\n--\n\n"
     "The same memory as another dtype (NumPy's rules: another itemsize needs a contiguous last "
     "axis, whose extent scales)."},
    {"transpose", array_transpose, METH_VARARGS,
     "transpose($self, /, *axes)\n--\n\n"
     "A view with permuted axes, as ints or one sequence (reversed when none is given)."},
    {"reshape", array_reshape, METH_VARARGS,
     "reshape($self, /, *shape)\n--\n\n"
     "A view with a new shape, as ints or one sequence (C-contiguous arrays)."},
    {nullptr, nullptr, 0, nullptr}};

PyMemberDef array_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(array_object, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyType_Slot array_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(array_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(array_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(array_clear)},
    {Py_tp_repr, reinterpret_cast<void*>(array_repr)},
    {Py_tp_getset, array_getset},
    {Py_tp_methods, array_methods},
    {Py_tp_members, array_members},
    {Py_tp_new, reinterpret_cast<void*>(disallow_new)},
    {Py_mp_length, reinterpret_cast<void*>(array_length)},
    {Py_nb_int, reinterpret_cast<void*>(array_int)},
    {Py_nb_float, reinterpret_cast<void*>(array_float)},
    {Py_nb_index, reinterpret_cast<void*>(array_index)},
    {Py_nb_bool, reinterpret_cast<void*>(array_bool)},
    {Py_mp_subscript, reinterpret_cast<void*>(array_subscript)},
    {Py_mp_ass_subscript, reinterpret_cast<void*>(array_ass_subscript)},
    {Py_sq_length, reinterpret_cast<void*>(array_length)},
    {Py_bf_getbuffer, reinterpret_cast<void*>(array_getbuffer)},
    {Py_tp_doc,
     const_cast<char*>(
         "An n-dimensional array in device, managed, pinned or host memory, shared zero-copy "
         "through the buffer protocol, __cuda_array_interface__ and DLPack.")},
    {0, nullptr}};

PyType_Spec array_spec = {"arrayport.Array", sizeof(array_object), 0,
                          Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, array_slots};

// A read-only view of `a` (for tests of read-only arrays).
nb::object readonly_view(nb::handle a_obj) {
  array_object* a = require_array(a_obj, "a");
  nb::object v = nb::steal(
      make_view(a, static_cast<char*>(a->view.data),
                std::vector<std::int64_t>(a->view.shape, a->view.shape + a->view.ndim),
                std::vector<std::int64_t>(a->view.strides, a->view.strides + a->view.ndim),
                dtype::from_c(a->view.dtype), "_readonly_view"));
  as_array(v.ptr())->view.flags |= ARRAYPORT_VIEW_READONLY;
  return v;
}

}  // namespace

PyObject* make_view(array_object* src, char* data, const std::vector<std::int64_t>& shape,
                    const std::vector<std::int64_t>& strides, dtype dt, const char* what) {
  const int ndim = static_cast<int>(shape.size());
  check_layout(what, shape.data(), strides.data(), ndim, static_cast<std::int64_t>(dt.itemsize()));
  array_object* a =
      alloc_array(ndim, data, dt.to_c(),
                  {src->view.memory_kind, src->view.device, src->view.stream, src->view.flags});
  for (int i = 0; i < ndim; ++i) {
    a->extents[i] = shape[static_cast<std::size_t>(i)];
    a->extents[ndim + i] = strides[static_cast<std::size_t>(i)];
  }
  a->base = Py_NewRef(src->base ? src->base : reinterpret_cast<PyObject*>(src));
  return reinterpret_cast<PyObject*>(a);
}

PyObject* tuple_of(const std::int64_t* values, int n, std::int64_t scale) {
  PyObject* t = PyTuple_New(n);
  if (!t) return nullptr;
  for (int i = 0; i < n; ++i) {
    PyObject* v = PyLong_FromLongLong(values[i] * scale);
    if (!v) {
      Py_DECREF(t);
      return nullptr;
    }
    python::limited::tuple_fill(t, i, v);
  }
  return t;
}

array_object* require_array(nb::handle h, const char* what) {
  if (!is_array(h.ptr()))
    throw type_error(std::string(what) + ": expected an arrayport.Array, got " +
                     python::limited::tp_name(Py_TYPE(h.ptr())));
  return as_array(h.ptr());
}

nb::object make_owned_array(buffer&& storage, dtype dt, const std::int64_t* shape, int ndim,
                            nb::handle stream_owner, const std::int64_t* strides) {
  // The one allocation an Array owns holds all its nbytes: callers size it from the same check.
  const std::int64_t nbytes =
      check_layout("Array", shape, nullptr, ndim, static_cast<std::int64_t>(dt.itemsize())).nbytes;
  if (storage.size() < static_cast<std::size_t>(nbytes))
    throw value_error("Array: shape " + shape_string(shape, ndim) + " of " +
                      std::string(dt.name()) + " needs " + std::to_string(nbytes) +
                      " bytes, but its buffer has " + std::to_string(storage.size()));
  auto* owned = new buffer(std::move(storage));
  array_object* a = nullptr;
  try {
    a = alloc_array(
        ndim, owned->data(), dt.to_c(),
        {static_cast<std::uint32_t>(owned->kind()), owned->dlpack_device(), owned->stream()});
  } catch (...) {
    delete owned;
    throw;
  }
  a->owned = owned;
  a->stream_owner = Py_XNewRef(stream_owner.ptr());
  for (int i = 0; i < ndim; ++i) a->extents[i] = shape[i];
  if (strides)
    std::copy(strides, strides + ndim, a->extents + ndim);
  else
    compact_strides(shape, ndim, a->extents + ndim, static_cast<std::int64_t>(dt.itemsize()));
  return nb::steal(reinterpret_cast<PyObject*>(a));
}

PyObject* array_from_view(const arrayport_view_t* view, PyObject* owner) noexcept {
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* {
    if (!view) throw value_error("array_from_view: view is NULL");
    if (view->ndim < 0 || view->ndim > ARRAYPORT_MAX_NDIM)
      throw value_error("array_from_view: expected 0 to " + std::to_string(ARRAYPORT_MAX_NDIM) +
                        " dimensions, got " + std::to_string(view->ndim));
    if (!is_supported(dtype::from_c(view->dtype)))
      throw type_error("array_from_view: unsupported dtype " +
                       arrayport::detail::describe(dtype::from_c(view->dtype)));
    if (view->memory_kind > ARRAYPORT_MEMORY_MANAGED)
      throw value_error("array_from_view: unknown memory kind " +
                        std::to_string(view->memory_kind));
    if (view->ndim > 0 && (!view->shape || !view->strides))
      throw value_error("array_from_view: shape and strides must not be NULL for " +
                        std::to_string(view->ndim) + " dimensions");
    const layout_info l = check_layout("array_from_view", *view);
    if (l.count > 0 && !view->data)
      throw value_error("array_from_view: data is NULL but the view has " +
                        std::to_string(l.count) + " elements");
    array_object* a = alloc_array(
        view->ndim, view->data, view->dtype,
        {view->memory_kind, view->device, view->stream, view->flags & ARRAYPORT_VIEW_READONLY});
    for (int i = 0; i < view->ndim; ++i) {
      a->extents[i] = view->shape[i];
      a->extents[view->ndim + i] = view->strides[i];
    }
    a->base = Py_XNewRef(owner);
    return reinterpret_cast<PyObject*>(a);
  });
}

void register_array(nb::module_& m) {
  array_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&array_spec));
  if (!array_type) throw nb::python_error();
  register_exchange_api(array_type);
  nb::module_::import_("atexit").attr("register")(nb::cpp_function(&note_interpreter_exiting));
  m.attr("Array") = nb::borrow(reinterpret_cast<PyObject*>(array_type));
  register_creation_functions(m);
  m.def("_dlpack_live_exports", &dlpack_live_exports,
        "DLPack capsules exported and not yet released (for leak tests).");
  m.def("_readonly_view", &readonly_view, "a"_a,
        "A read-only view of a (for tests of read-only arrays).");
  m.def("_broadcast_view", &broadcast_view, "x"_a, "shape"_a,
        "A read-only view of x broadcast to shape (arrayport.array_api.broadcast_to).");
  register_copy_functions(m);
}

}  // namespace arrayport::ext
