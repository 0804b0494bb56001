// arrayport.Array: attributes, the buffer protocol, __cuda_array_interface__, DLPack export, views,
// and the creation functions (empty, zeros, ones, full and the *_like forms). Copies are in
// array_copy.cpp.
#include "array/array.hpp"

#include "consume.hpp"
#include "cuda/cuda.hpp"
#include "array/array_internal.hpp"

#include "cuda/current_stream.hpp"
#include "array/dlpack_export.hpp"
#include "common/errors.hpp"
#include "common/gil.hpp"
#include "common/scalars.hpp"

#include <arrayport/memory_kind.hpp>
#include <arrayport/memory_resource.hpp>
#include <arrayport/runtime.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <structmember.h>  // PyMemberDef, T_PYSSIZET, READONLY (Python < 3.12 spelling)

#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <utility>

namespace nb = nanobind;

namespace arrayport::ext {

PyTypeObject* array_type = nullptr;

namespace {

// Allocates an uninitialised Array object with room for `ndim` extents; the caller fills it.
array_object* alloc_array(int ndim) {
  auto* a = reinterpret_cast<array_object*>(array_type->tp_alloc(array_type, 0));
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
  a->view.version = {ARRAYPORT_C_ABI_VERSION_MAJOR, ARRAYPORT_C_ABI_VERSION_MINOR};
  a->view.ndim = ndim;
  a->view.shape = a->extents;
  a->view.strides = a->extents + ndim;
  a->view.owner = a;
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
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

// ---- attributes --------------------------------------------------------------------------------

PyObject* get_shape(PyObject* self, void*) {
  return tuple_of(as_array(self)->view.shape, as_array(self)->view.ndim);
}
PyObject* get_strides(PyObject* self, void*) {
  array_object* a = as_array(self);
  return tuple_of(a->view.strides, a->view.ndim, static_cast<std::int64_t>(itemsize_of(a)));
}
PyObject* get_ndim(PyObject* self, void*) { return PyLong_FromLong(as_array(self)->view.ndim); }
PyObject* get_size(PyObject* self, void*) {
  return PyLong_FromLongLong(element_count(as_array(self)->view));
}
PyObject* get_itemsize(PyObject* self, void*) {
  return PyLong_FromSize_t(itemsize_of(as_array(self)));
}
// size * itemsize, as NumPy's: also for a broadcast view, whose memory spans fewer bytes.
PyObject* get_nbytes(PyObject* self, void*) {
  return guarded<PyObject*>(nullptr, [&] {
    return PyLong_FromLongLong(check_layout("nbytes", as_array(self)->view).nbytes);
  });
}
PyObject* get_ptr(PyObject* self, void*) { return PyLong_FromVoidPtr(as_array(self)->view.data); }
PyObject* get_memory(PyObject* self, void*) {
  auto kind = static_cast<memory_kind>(as_array(self)->view.memory_kind);
  std::string_view name = to_string(kind);
  return PyUnicode_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
}
PyObject* get_device(PyObject* self, void*) {
  const arrayport_device_t d = as_array(self)->view.device;
  const char* type = d.device_type == ARRAYPORT_DEVICE_CUDA            ? "cuda"
                     : d.device_type == ARRAYPORT_DEVICE_CUDA_MANAGED  ? "cuda_managed"
                     : d.device_type == ARRAYPORT_DEVICE_CUDA_HOST     ? "cuda_host"
                                                                       : "cpu";
  return Py_BuildValue("(si)", type, d.device_id);
}
PyObject* get_readonly(PyObject* self, void*) {
  return PyBool_FromLong((as_array(self)->view.flags & ARRAYPORT_VIEW_READONLY) != 0);
}
PyObject* get_base(PyObject* self, void*) {
  PyObject* base = as_array(self)->base;
  // A view of a foreign array holds it through an acquired-view capsule: show the producer.
  if (PyObject* producer = acquired_producer(base)) return Py_NewRef(producer);
  return Py_NewRef(base ? base : Py_None);
}
PyObject* get_c_contiguous(PyObject* self, void*) {
  return PyBool_FromLong(is_c_contiguous(as_array(self)->view));
}
PyObject* get_f_contiguous(PyObject* self, void*) {
  return PyBool_FromLong(is_f_contiguous(as_array(self)->view));
}

PyObject* get_dtype(PyObject* self, void*) {
  dtype dt = dtype::from_c(as_array(self)->view.dtype);
  if (dt != dtypes::bfloat16) {
    // A NumPy dtype where NumPy is installed; its name otherwise.
    PyObject* numpy = PyImport_ImportModule("numpy");
    if (numpy) {
      std::string typestr = to_typestr(dt);
      PyObject* result = PyObject_CallMethod(numpy, "dtype", "s", typestr.c_str());
      Py_DECREF(numpy);
      return result;
    }
    PyErr_Clear();
  }
  std::string_view name = dt.name();
  return PyUnicode_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
}

PyObject* typestr_of(const array_object* a) {
  std::string s = to_typestr(dtype::from_c(a->view.dtype));
  return PyUnicode_FromString(s.c_str());
}

// Byte strides, or None when C-contiguous (both interfaces accept that spelling).
PyObject* interface_strides(const array_object* a) {
  if (is_c_contiguous(a->view)) Py_RETURN_NONE;
  return tuple_of(a->view.strides, a->view.ndim, static_cast<std::int64_t>(itemsize_of(a)));
}

PyObject* interface_dict(array_object* a, bool cuda) {
  nb::dict d;
  d["shape"] = nb::steal(tuple_of(a->view.shape, a->view.ndim));
  d["typestr"] = nb::steal(typestr_of(a));
  d["data"] = nb::make_tuple(nb::steal(PyLong_FromVoidPtr(a->view.data)),
                             nb::bool_((a->view.flags & ARRAYPORT_VIEW_READONLY) != 0));
  d["strides"] = nb::steal(interface_strides(a));
  d["version"] = 3;
  if (cuda) {
    // The stream on which the data is ready: the consumer waits on it. CAI v3 spells the legacy
    // default stream 1 (0 is disallowed).
    auto s = reinterpret_cast<std::uintptr_t>(a->view.stream);
    d["stream"] = s == 0 ? nb::int_(1) : nb::int_(s);
  } else {
    nb::list descr;
    descr.append(nb::make_tuple("", nb::steal(typestr_of(a))));
    d["descr"] = descr;
  }
  return d.release().ptr();
}

PyObject* get_cuda_array_interface(PyObject* self, void*) {
  array_object* a = as_array(self);
  auto kind = static_cast<memory_kind>(a->view.memory_kind);
  if (!is_device_accessible(kind)) {
    PyErr_SetString(PyExc_AttributeError,
                    "__cuda_array_interface__: this array is in host memory, which CUDA cannot "
                    "address; use the buffer protocol or move it with .to(memory='device')");
    return nullptr;
  }
  return guarded<PyObject*>(nullptr, [&] { return interface_dict(a, true); });
}

PyObject* get_array_interface(PyObject* self, void*) {
  array_object* a = as_array(self);
  auto kind = static_cast<memory_kind>(a->view.memory_kind);
  if (!is_host_accessible(kind)) {
    PyErr_SetString(PyExc_AttributeError,
                    "__array_interface__: this array is in device memory, which the host cannot "
                    "read; use .get() for a NumPy copy");
    return nullptr;
  }
  if (dtype::from_c(a->view.dtype) == dtypes::bfloat16) {
    PyErr_SetString(PyExc_TypeError,
                    "__array_interface__: NumPy has no bfloat16 dtype; use DLPack or .view()");
    return nullptr;
  }
  return guarded<PyObject*>(nullptr, [&] {
    runtime::require_reachable(kind, "Array.__array_interface__", "the array");  // managed memory
    runtime::stream_synchronize(a->view.stream, array_device(a));  // host readers see completed device writes
    return interface_dict(a, false);
  });
}


// ---- buffer protocol (host-accessible memory) -------------------------------------------------

int array_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  array_object* a = as_array(self);
  auto kind = static_cast<memory_kind>(a->view.memory_kind);
  const char* fail = nullptr;
  const bool readonly = (a->view.flags & ARRAYPORT_VIEW_READONLY) != 0;
  const bool c = is_c_contiguous(a->view), f = is_f_contiguous(a->view);
  if (!is_host_accessible(kind))
    fail = "arrayport.Array: the buffer protocol needs host-accessible memory, but this array is "
           "in device memory; use .get() for a NumPy copy, or __cuda_array_interface__ / __dlpack__";
  else if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && readonly)
    fail = "arrayport.Array: a writable buffer was requested from a read-only array";
  else if ((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !c)
    fail = "arrayport.Array: a C-contiguous buffer was requested from a non-C-contiguous array";
  else if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !f)
    fail = "arrayport.Array: a Fortran-contiguous buffer was requested from a non-Fortran-contiguous array";
  else if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS && !c && !f)
    fail = "arrayport.Array: a contiguous buffer was requested from a non-contiguous array";
  else if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !c)
    fail = "arrayport.Array: the request has no strides but the array is not C-contiguous";
  if (fail) {
    PyErr_SetString(PyExc_BufferError, fail);
    view->obj = nullptr;
    return -1;
  }
  const dtype dt = dtype::from_c(a->view.dtype);
  const char* format = nullptr;
  if (flags & PyBUF_FORMAT) {
    format = guarded<const char*>(nullptr, [&] { return to_buffer_format(dt); });
    if (!format) {
      view->obj = nullptr;
      return -1;
    }
  }
  if (guarded<int>(-1, [&] {
        runtime::require_reachable(kind, "Array (buffer protocol)", "the array");  // managed memory
        runtime::stream_synchronize(a->view.stream, array_device(a));  // device writes complete before host reads
        return 0;
      }) != 0) {
    view->obj = nullptr;
    return -1;
  }
  const int ndim = a->view.ndim;
  const auto itemsize = static_cast<Py_ssize_t>(dt.itemsize());
  // len is nbytes (size * itemsize), as NumPy's buffers say, also for zero strides.
  const Py_ssize_t len = guarded<Py_ssize_t>(-1, [&] {
    return static_cast<Py_ssize_t>(check_layout("buffer", a->view).nbytes);
  });
  if (len < 0) {
    view->obj = nullptr;
    return -1;
  }
  // shape and strides in Py_ssize_t bytes, freed in releasebuffer.
  auto* extents = static_cast<Py_ssize_t*>(PyMem_Malloc(sizeof(Py_ssize_t) * (2 * ndim + 1)));
  if (!extents) {
    PyErr_NoMemory();
    view->obj = nullptr;
    return -1;
  }
  for (int i = 0; i < ndim; ++i) {
    extents[i] = static_cast<Py_ssize_t>(a->view.shape[i]);
    extents[ndim + i] = static_cast<Py_ssize_t>(a->view.strides[i]) * itemsize;
  }
  view->buf = a->view.data;
  view->obj = Py_NewRef(self);
  view->len = len;
  view->readonly = readonly;
  view->itemsize = itemsize;
  view->format = const_cast<char*>(format);
  view->ndim = ndim;
  view->shape = (flags & PyBUF_ND) == PyBUF_ND ? extents : nullptr;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? extents + ndim : nullptr;
  view->suboffsets = nullptr;
  view->internal = extents;
  return 0;
}

void array_releasebuffer(PyObject*, Py_buffer* view) { PyMem_Free(view->internal); }

// ---- methods ----------------------------------------------------------------------------------

Py_ssize_t array_length(PyObject* self) {
  array_object* a = as_array(self);
  if (a->view.ndim == 0) {
    PyErr_SetString(PyExc_TypeError, "len() of a 0-d arrayport.Array");
    return -1;
  }
  return static_cast<Py_ssize_t>(a->view.shape[0]);
}

PyObject* array_dlpack_device(PyObject* self, PyObject* unused) { return dlpack_device(self, unused); }

// ---- numbers: int(), float(), complex(), bool(), operator.index() and __array__ -------------
// NumPy 2's rules (the version installed when written: 2.4): int(), float() and complex() take a
// 0-d array only, bool() any array of one element, operator.index() a 0-d integer array. The
// element is read where the host can read it; device memory is refused rather than copied.

// One element's value decoded from its bytes: what repr prints and int()/float()/... return.
struct element_value {
  enum { boolean, signed_int, unsigned_int, real, complex } kind;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double re = 0, im = 0;
};

element_value decode_element(const unsigned char* p, dtype dt) {
  element_value e{element_value::real};
  if (dt.is_bool()) {
    e.kind = element_value::boolean;
    e.u = *p != 0;
  } else if (dt.is_integer()) {
    e.kind = dt.is_signed() ? element_value::signed_int : element_value::unsigned_int;
    switch (dt.bits) {
      case 8: if (dt.is_signed()) e.i = static_cast<std::int8_t>(*p); else e.u = *p; break;
      case 16: if (dt.is_signed()) { std::int16_t x; std::memcpy(&x, p, 2); e.i = x; } else { std::uint16_t x; std::memcpy(&x, p, 2); e.u = x; } break;
      case 32: if (dt.is_signed()) { std::int32_t x; std::memcpy(&x, p, 4); e.i = x; } else { std::uint32_t x; std::memcpy(&x, p, 4); e.u = x; } break;
      default: if (dt.is_signed()) std::memcpy(&e.i, p, 8); else std::memcpy(&e.u, p, 8); break;
    }
  } else if (dt.is_complex()) {
    e.kind = element_value::complex;
    if (dt.bits == 64) { float c[2]; std::memcpy(c, p, 8); e.re = c[0]; e.im = c[1]; }
    else { double c[2]; std::memcpy(c, p, 16); e.re = c[0]; e.im = c[1]; }
  } else if (dt == dtypes::float16) { float16_t h; std::memcpy(&h, p, 2); e.re = static_cast<float>(h); }
  else if (dt == dtypes::bfloat16) { bfloat16_t h; std::memcpy(&h, p, 2); e.re = static_cast<float>(h); }
  else if (dt == dtypes::float32) { float f; std::memcpy(&f, p, 4); e.re = f; }
  else std::memcpy(&e.re, p, 8);
  return e;
}

// The element of `a` (which has exactly one) as a Python bool, int, float or complex.
nb::object single_element(array_object* a, const char* what) {
  const auto kind = static_cast<memory_kind>(a->view.memory_kind);
  runtime::require_reachable(kind, what, "the array");  // managed memory without a device
  if (!is_host_accessible(kind))
    throw type_error(std::string(what) + ": this array is in device memory, which the host cannot "
                      "read; copy it to the host first with .get() (" + what + "(a.get()))");
  const dtype dt = dtype::from_c(a->view.dtype);
  alignas(16) unsigned char p[16] = {};
  if (runtime::is_available()) {  // device writes complete first; without a GPU there are none
    gil_release release;
    runtime::stream_synchronize(a->view.stream, array_device(a));
  }
  std::memcpy(p, a->view.data, dt.itemsize());
  const element_value e = decode_element(p, dt);
  PyObject* v = nullptr;
  switch (e.kind) {
    case element_value::boolean: v = Py_NewRef(e.u ? Py_True : Py_False); break;
    case element_value::signed_int: v = PyLong_FromLongLong(e.i); break;
    case element_value::unsigned_int: v = PyLong_FromUnsignedLongLong(e.u); break;
    case element_value::complex: v = PyComplex_FromDoubles(e.re, e.im); break;
    case element_value::real: v = PyFloat_FromDouble(e.re); break;
  }
  if (!v) throw nb::python_error();
  return nb::steal(v);
}

// int(), float() and complex(): a 0-d array's element; a complex one only for complex().
nb::object scalar_of(PyObject* self, const char* what, bool complex_ok) {
  array_object* a = as_array(self);
  if (a->view.ndim != 0)
    throw type_error(std::string(what) + ": only 0-dimensional arrays can be converted to Python "
                      "scalars; this one has shape " +
                      shape_string(a->view.shape, static_cast<std::size_t>(a->view.ndim)) +
                      " (index it, a[0], or use .get())");
  const dtype dt = dtype::from_c(a->view.dtype);
  if (dt.is_complex() && !complex_ok)
    throw type_error(std::string(what) + ": cannot convert an array of " + std::string(dt.name()) +
                      " to a real number (take .real of its .get(), or use complex())");
  return single_element(a, what);
}

PyObject* array_int(PyObject* self) {
  return guarded<PyObject*>(nullptr, [&] {
    return PyNumber_Long(scalar_of(self, "int", false).ptr());  // NaN and inf raise as for float
  });
}

PyObject* array_float(PyObject* self) {
  return guarded<PyObject*>(nullptr, [&] { return PyNumber_Float(scalar_of(self, "float", false).ptr()); });
}

PyObject* array_complex(PyObject* self, PyObject*) {
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* {
    nb::object v = scalar_of(self, "complex", true);
    if (PyComplex_Check(v.ptr())) return v.release().ptr();
    const double d = PyFloat_AsDouble(v.ptr());  // ints round as float() rounds them
    if (d == -1.0 && PyErr_Occurred()) throw nb::python_error();
    return PyComplex_FromDoubles(d, 0.0);
  });
}

PyObject* array_index(PyObject* self) {
  return guarded<PyObject*>(nullptr, [&] {
    array_object* a = as_array(self);
    if (a->view.ndim != 0 || !dtype::from_c(a->view.dtype).is_integer())
      throw type_error("only integer scalar arrays can be converted to a scalar index; this one "
                        "has dtype " + std::string(dtype::from_c(a->view.dtype).name()) +
                        " and shape " + shape_string(a->view.shape, static_cast<std::size_t>(a->view.ndim)));
    return single_element(a, "operator.index").release().ptr();
  });
}

int array_bool(PyObject* self) {
  return guarded<int>(-1, [&] {
    array_object* a = as_array(self);
    const std::int64_t n = element_count(a->view);
    if (n > 1)
      throw value_error("The truth value of an array with more than one element is ambiguous. "
                        "Use a.any() or a.all()");
    if (n == 0)
      throw value_error("The truth value of an empty array is ambiguous. Use `array.size > 0` to "
                        "check that an array is not empty.");
    // The one element sits at the data pointer, whatever the strides.
    return PyObject_IsTrue(single_element(a, "bool").ptr());
  });
}

// __array__(dtype=None, copy=None), NumPy 2's protocol: host-readable memory as a NumPy array,
// without a copy unless dtype or copy=True asks for one (copy=False refuses one, as NumPy does).
// NumPy itself reads such memory through the buffer protocol first; this serves device memory
// (refused, saying how to copy) and callers of __array__ by name.
PyObject* array_array(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"dtype", "copy", nullptr};
  PyObject *dtype_obj = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:__array__", const_cast<char**>(keywords),
                                   &dtype_obj, &copy))
    return nullptr;
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* {
    array_object* a = as_array(self);
    if (copy != Py_None && !PyBool_Check(copy))
      throw type_error("__array__: copy: expected True, False or None, got " + type_name_of(copy));
    // Every argument checked before the memory is looked at.
    nb::module_ np = import_numpy("__array__");
    nb::object dt = nb::none();
    if (dtype_obj != Py_None) {
      try {
        dt = np.attr("dtype")(nb::handle(dtype_obj));
      } catch (nb::python_error& e) {
        if (!e.matches(PyExc_TypeError)) throw;
        throw type_error(std::string("__array__: dtype: ") + nb::str(e.value()).c_str());
      }
    }
    const auto kind = static_cast<memory_kind>(a->view.memory_kind);
    runtime::require_reachable(kind, "Array.__array__", "the array");
    if (!is_host_accessible(kind))
      throw type_error("__array__: this array is in device memory, which NumPy cannot read; copy "
                       "it to the host with .get() (np.asarray(a.get()))");
    if (dtype::from_c(a->view.dtype) == dtypes::bfloat16)
      throw type_error("__array__: NumPy has no bfloat16 dtype; view it as uint16 "
                       "(a.view('uint16')) or export it through DLPack");
    nb::object view = nb::steal(PyMemoryView_FromObject(self));
    if (!view.is_valid()) throw nb::python_error();
    using namespace nb::literals;
    return np.attr("asarray")(view, "dtype"_a = dt, "copy"_a = nb::handle(copy)).release().ptr();
  });
}

// ---- views: indexing, transpose, reshape, view(dtype) (no copies) ----------------------------

}  // namespace

PyObject* make_view(array_object* src, char* data, const std::vector<std::int64_t>& shape,
                    const std::vector<std::int64_t>& strides, dtype dt, const char* what) {
  const int ndim = static_cast<int>(shape.size());
  check_layout(what, shape.data(), strides.data(), ndim, static_cast<std::int64_t>(dt.itemsize()));
  array_object* a = alloc_array(ndim);
  for (int i = 0; i < ndim; ++i) {
    a->extents[i] = shape[static_cast<std::size_t>(i)];
    a->extents[ndim + i] = strides[static_cast<std::size_t>(i)];
  }
  a->view.data = data;
  a->view.dtype = dt.to_c();
  a->view.memory_kind = src->view.memory_kind;
  a->view.device = src->view.device;
  a->view.stream = src->view.stream;
  a->view.flags = src->view.flags;
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
    PyTuple_SET_ITEM(t, i, v);
  }
  return t;
}

std::string shape_string(const std::int64_t* shape, std::size_t ndim) {
  std::string r = "(";
  for (std::size_t i = 0; i < ndim; ++i)
    r += std::to_string(shape[i]) + (ndim == 1 ? "," : i + 1 < ndim ? ", " : "");
  return r + ")";
}

namespace {

[[noreturn]] void index_error(const std::string& msg) {
  PyErr_SetString(PyExc_IndexError, msg.c_str());
  throw nb::python_error();
}

}  // namespace

// Basic indexing as NumPy defines it: ints, slices (any step), Ellipsis and None. Shared by
// __getitem__ (a view) and __setitem__ (the target of a copy).
basic_index resolve_basic_index(array_object* a, PyObject* key) {
  nb::object items = PyTuple_Check(key) ? nb::borrow(key) : nb::make_tuple(nb::handle(key));
  const Py_ssize_t n = PyTuple_GET_SIZE(items.ptr());
  int consumed = 0, ellipses = 0;
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject* item = PyTuple_GET_ITEM(items.ptr(), k);
    if (item == Py_Ellipsis) ++ellipses;
    else if (item != Py_None) ++consumed;
  }
  if (ellipses > 1) index_error("an index can only have a single ellipsis ('...')");
  if (consumed > a->view.ndim)
    index_error("too many indices for array: array is " + std::to_string(a->view.ndim) +
                "-dimensional, but " + std::to_string(consumed) + " were indexed");
  const std::int64_t itemsize = static_cast<std::int64_t>(itemsize_of(a));
  // The first element's index, offset applied once at the end: an empty array may have no data
  // pointer to offset (and its offset is then never used).
  std::vector<std::int64_t> first(static_cast<std::size_t>(a->view.ndim), 0);
  std::vector<std::int64_t> shape, strides;
  int axis = 0;
  auto keep_axis = [&](int ax) {
    shape.push_back(a->view.shape[ax]);
    strides.push_back(a->view.strides[ax]);
  };
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject* item = PyTuple_GET_ITEM(items.ptr(), k);
    if (item == Py_Ellipsis) {
      for (int skip = a->view.ndim - consumed; skip > 0; --skip) keep_axis(axis++);
    } else if (item == Py_None) {
      shape.push_back(1);
      strides.push_back(0);
    } else if (PySlice_Check(item)) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(item, &start, &stop, &step) < 0) throw nb::python_error();
      const std::int64_t len = PySlice_AdjustIndices(
          static_cast<Py_ssize_t>(a->view.shape[axis]), &start, &stop, step);
      if (len > 0) first[static_cast<std::size_t>(axis)] = start;
      shape.push_back(len);
      // stride * step addresses an element only when len > 1; for one element or none a huge
      // step may overflow it (in bytes, as .strides reports it), and any stride is as good:
      // NumPy's product where it fits, else the axis's own.
      std::int64_t stride = 0, bytes = 0;
      if (arrayport::detail::mul_overflow(a->view.strides[axis], static_cast<std::int64_t>(step), &stride) ||
          arrayport::detail::mul_overflow(stride, itemsize, &bytes))
        stride = a->view.strides[axis];
      strides.push_back(stride);
      ++axis;
    } else if (!PyBool_Check(item) && PyIndex_Check(item) &&
               (!is_array(item) || (as_array(item)->view.ndim == 0 &&
                                    dtype::from_c(as_array(item)->view.dtype).is_integer()))) {
      Py_ssize_t i = PyNumber_AsSsize_t(item, PyExc_IndexError);
      if (i == -1 && PyErr_Occurred()) throw nb::python_error();
      const std::int64_t size = a->view.shape[axis];
      if (i < -size || i >= size)
        index_error("index " + std::to_string(i) + " is out of bounds for axis " +
                    std::to_string(axis) + " with size " + std::to_string(size));
      if (i < 0) i += size;
      first[static_cast<std::size_t>(axis)] = i;
      ++axis;
    } else {
      index_error(std::string("only integers, slices (':'), ellipsis ('...') and None are valid "
                              "indices (arrayport has no advanced indexing); got ") +
                  Py_TYPE(item)->tp_name);
    }
  }
  while (axis < a->view.ndim) keep_axis(axis++);
  if (shape.size() > ARRAYPORT_MAX_NDIM)
    index_error("the result would have more than " + std::to_string(ARRAYPORT_MAX_NDIM) + " dimensions");
  // In bounds of an addressable layout (layout.hpp): the offset is inside its span.
  std::int64_t offset = 0;
  if (!element_offset(first.data(), a->view.strides, a->view.ndim, offset) ||
      arrayport::detail::mul_overflow(offset, itemsize, &offset))
    throw value_error("index: the element's offset does not fit in int64");
  char* data = static_cast<char*>(a->view.data);
  if (data) data += offset;
  return {data, std::move(shape), std::move(strides)};
}

namespace {

// Integer indices on every axis give a 0-d Array (as CuPy does: the element may be on the device).
PyObject* array_subscript(PyObject* self, PyObject* key) {
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* {
    array_object* a = as_array(self);
    basic_index r = resolve_basic_index(a, key);
    return make_view(a, r.data, r.shape, r.strides, dtype::from_c(a->view.dtype), "index");
  });
}

// transpose(*axes): a permutation of the axes (reversed when none is given).
PyObject* array_transpose(PyObject* self, PyObject* args) {
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* {
    array_object* a = as_array(self);
    const int ndim = a->view.ndim;
    std::vector<int> perm;
    nb::object axes = nb::borrow(args);
    if (PyTuple_GET_SIZE(args) == 1 && PySequence_Check(PyTuple_GET_ITEM(args, 0)) &&
        !PyUnicode_Check(PyTuple_GET_ITEM(args, 0)))
      axes = nb::borrow(PyTuple_GET_ITEM(args, 0));
    if (PyTuple_GET_SIZE(args) == 1 && PyTuple_GET_ITEM(args, 0) == Py_None) axes = nb::tuple();
    std::vector<int> given;  // every axis an int before the count is compared (NumPy's order)
    for (nb::handle h : axes)
      given.push_back(static_cast<int>(int_arg(h.ptr(), "transpose", "axes", INT32_MIN, INT32_MAX, "ints that fit an int")));
    if (given.empty()) {
      for (int i = ndim - 1; i >= 0; --i) perm.push_back(i);
    } else {
      if (static_cast<int>(given.size()) != ndim)
        throw value_error("transpose: axes don't match array: expected " + std::to_string(ndim) +
                          " axes, got " + std::to_string(given.size()));
      std::vector<bool> seen(static_cast<std::size_t>(ndim), false);
      for (int ax : given) {
        if (ax < -ndim || ax >= ndim)
          throw value_error("transpose: axis " + std::to_string(ax) + " is out of bounds for an array of dimension " + std::to_string(ndim));
        if (ax < 0) ax += ndim;
        if (seen[static_cast<std::size_t>(ax)]) throw value_error("transpose: repeated axis " + std::to_string(ax));
        seen[static_cast<std::size_t>(ax)] = true;
        perm.push_back(ax);
      }
    }
    std::vector<std::int64_t> shape, strides;
    for (int ax : perm) {
      shape.push_back(a->view.shape[ax]);
      strides.push_back(a->view.strides[ax]);
    }
    return make_view(a, static_cast<char*>(a->view.data), shape, strides, dtype::from_c(a->view.dtype),
                     "transpose");
  });
}

PyObject* get_T(PyObject* self, void*) {
  nb::object empty = nb::steal(PyTuple_New(0));
  return array_transpose(self, empty.ptr());
}

// reshape(shape): a view with a new shape (one extent may be -1). Needs a C-contiguous array.
PyObject* array_reshape(PyObject* self, PyObject* args) {
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* {
    array_object* a = as_array(self);
    nb::handle spec = PyTuple_GET_SIZE(args) == 1 ? nb::handle(PyTuple_GET_ITEM(args, 0)) : nb::handle(args);
    std::vector<std::int64_t> shape;
    int infer = -1;
    auto add = [&](nb::handle h) {
      std::int64_t e = int_arg(h.ptr(), "reshape", "shape", INT64_MIN, INT64_MAX, "ints that fit int64");
      if (e == -1) {
        if (infer >= 0) throw value_error("reshape: can only specify one unknown dimension (-1)");
        infer = static_cast<int>(shape.size());
      } else if (e < 0) {
        throw value_error("reshape: shape: expected non-negative extents or -1, got " + std::to_string(e));
      }
      shape.push_back(e);
    };
    if (!PySequence_Check(spec.ptr()) || PyUnicode_Check(spec.ptr())) add(spec);  // one extent
    else for (nb::handle h : nb::borrow<nb::sequence>(spec)) add(h);
    const int ndim = static_cast<int>(shape.size());
    if (ndim > ARRAYPORT_MAX_NDIM)
      throw value_error("reshape: at most " + std::to_string(ARRAYPORT_MAX_NDIM) + " dimensions");
    // The product of the given extents (-1 counting as 1), checked: past 2^63-1 no array fits it.
    std::vector<std::int64_t> given = shape;
    if (infer >= 0) given[static_cast<std::size_t>(infer)] = 1;
    std::int64_t known = 0;
    if (arrayport::element_count(given.data(), ndim, known) != layout_status::ok) {
      const auto itemsize = static_cast<std::int64_t>(itemsize_of(a));
      if (infer < 0) check_layout("reshape", shape.data(), nullptr, ndim, itemsize);
      arrayport::detail::big_uint n(1);
      for (std::int64_t e : given) n *= static_cast<std::uint64_t>(e);
      throw value_error("reshape: the extents of shape " + shape_string(shape.data(), shape.size()) +
                        " other than -1 have " + n.str() + " elements, more than 2^63-1");
    }
    const std::int64_t size = element_count(a->view);
    if (infer >= 0) {
      if (known == 0 || size % known != 0)
        throw value_error("reshape: cannot reshape an array of size " + std::to_string(size) + " into the given shape");
      shape[static_cast<std::size_t>(infer)] = size / known;
    } else if (known != size) {
      throw value_error("reshape: cannot reshape an array of size " + std::to_string(size) +
                        " into a shape of size " + std::to_string(known));
    }
    if (!is_c_contiguous(a->view))
      throw value_error("reshape: only C-contiguous arrays can be reshaped without a copy; this one "
                        "is not (copy it first)");
    std::vector<std::int64_t> strides(shape.size());
    compact_strides(shape.data(), ndim, strides.data(), static_cast<std::int64_t>(itemsize_of(a)));
    return make_view(a, static_cast<char*>(a->view.data), shape, strides, dtype::from_c(a->view.dtype),
                     "reshape");
  });
}

// view(dtype): the same memory as another dtype, with NumPy's rules. The same itemsize keeps any
// layout; another itemsize needs the last axis contiguous, and scales its extent.
PyObject* array_view(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"dtype", nullptr};
  PyObject* dtype_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:view", const_cast<char**>(keywords), &dtype_obj))
    return nullptr;
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* {
    array_object* a = as_array(self);
    const dtype from = dtype::from_c(a->view.dtype);
    const dtype to = dtype_obj == Py_None ? from : parse_dtype(dtype_obj);
    const int ndim = a->view.ndim;
    std::vector<std::int64_t> shape(a->view.shape, a->view.shape + ndim);
    std::vector<std::int64_t> strides(a->view.strides, a->view.strides + ndim);
    const auto old_size = static_cast<std::int64_t>(from.itemsize());
    const auto new_size = static_cast<std::int64_t>(to.itemsize());
    if (old_size != new_size) {
      const std::string what = "view: dtype " + std::string(to.name()) + " (itemsize " +
                               std::to_string(new_size) + ") of an array of " +
                               std::string(from.name()) + " (itemsize " + std::to_string(old_size) + ")";
      if (ndim == 0)
        throw value_error(what + ": a 0-d array can only be viewed as a dtype of the same itemsize");
      const std::size_t last = static_cast<std::size_t>(ndim - 1);
      if (shape[last] != 1 && element_count(a->view) != 0 && strides[last] != 1)
        throw value_error(what + ": the last axis must be contiguous, but its stride is " +
                          std::to_string(strides[last] * old_size) + " bytes");
      const std::int64_t bytes = shape[last] * old_size;
      if (bytes % new_size != 0)
        throw value_error(what + ": the last axis holds " + std::to_string(bytes) +
                          " bytes, not a multiple of the new itemsize");
      shape[last] = bytes / new_size;
      strides[last] = 1;
      // The other strides are kept in bytes; the view ABI counts them in elements of the new dtype.
      for (std::size_t i = 0; i < last; ++i) {
        // (An empty array's strides address nothing: NumPy views it whatever they are.)
        if (shape[i] != 1 && element_count(a->view) != 0 && (strides[i] * old_size) % new_size != 0)
          throw value_error(what + ": the stride of axis " + std::to_string(i) + " (" +
                            std::to_string(strides[i] * old_size) +
                            " bytes) is not a multiple of the new itemsize");
        strides[i] = strides[i] * old_size / new_size;
      }
    }
    return make_view(a, static_cast<char*>(a->view.data), shape, strides, to, "view");
  });
}

// repr: dtype, shape, memory, device and up to 6 leading values (copied to the host to print).
std::string format_element(const unsigned char* p, dtype dt) {
  char buf[96];
  const element_value e = decode_element(p, dt);
  switch (e.kind) {
    case element_value::boolean: return e.u ? "True" : "False";
    case element_value::signed_int: return std::to_string(e.i);
    case element_value::unsigned_int: return std::to_string(e.u);
    case element_value::complex: std::snprintf(buf, sizeof buf, "(%.6g%+.6gj)", e.re, e.im); break;
    case element_value::real: std::snprintf(buf, sizeof buf, "%.6g", e.re); break;
  }
  return buf;
}

PyObject* array_repr(PyObject* self) {
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* {
    array_object* a = as_array(self);
    dtype dt = dtype::from_c(a->view.dtype);
    auto kind = static_cast<memory_kind>(a->view.memory_kind);
    std::string values;
    if (runtime::is_reachable(kind)) {
      const std::int64_t n = element_count(a->view);
      const std::int64_t shown = n < 6 ? n : 6;
      const std::vector<unsigned char> head = leading_elements(a, shown);
      for (std::int64_t i = 0; i < shown; ++i)
        values += (i ? ", " : "") + format_element(head.data() + i * dt.itemsize(), dt);
      if (n > shown) values += ", ...";
      values = "[" + values + "]";
    } else {  // repr never raises: it says what it cannot show
      values = "<" + std::string(to_string(kind)) + " memory, not readable here>";
    }
    const std::string shape = shape_string(a->view.shape, static_cast<std::size_t>(a->view.ndim));
    std::string device = is_gpu_resident(kind) ? ", device=" + std::to_string(a->view.device.device_id) : "";
    std::string r = "arrayport.Array(" + values + ", dtype=" + std::string(dt.name()) +
                    ", shape=" + shape + ", memory='" + std::string(to_string(kind)) + "'" + device +
                    ((a->view.flags & ARRAYPORT_VIEW_READONLY) ? ", readonly=True" : "") + ")";
    return PyUnicode_FromString(r.c_str());
  });
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
     "the memory spanned is smaller; what copy() allocates.", nullptr},
    {"ptr", get_ptr, nullptr, "Address of the first element, an int (for ctypes and raw APIs).", nullptr},
    {"memory", get_memory, nullptr, "'device', 'managed', 'pinned' or 'host'.", nullptr},
    {"device", get_device, nullptr, "(device type, device id), e.g. ('cuda', 0) or ('cpu', 0).", nullptr},
    {"readonly", get_readonly, nullptr, "True when writes are not allowed.", nullptr},
    {"base", get_base, nullptr, "The object a view keeps alive, or None for an owning array.", nullptr},
    {"dtype", get_dtype, nullptr, "A NumPy dtype when NumPy is installed, else the dtype name.", nullptr},
    {"c_contiguous", get_c_contiguous, nullptr, "C-order contiguity.", nullptr},
    {"f_contiguous", get_f_contiguous, nullptr, "Fortran-order contiguity.", nullptr},
    {"T", get_T, nullptr, "The transpose (a view).", nullptr},
    {"__cuda_array_interface__", get_cuda_array_interface, nullptr,
     "CUDA Array Interface v3 (device-accessible memory only).", nullptr},
    {"__array_interface__", get_array_interface, nullptr,
     "NumPy array interface v3 (host-accessible memory only).", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// Each docstring opens with CPython's text signature ("name($self, ...)\n--\n\n"), so that
// inspect.signature, help() and mypy's stubtest (tests/python/test_stubs.py) see the parameters.
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
    {"__dlpack_device__", array_dlpack_device, METH_NOARGS,
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
    {Py_bf_releasebuffer, reinterpret_cast<void*>(array_releasebuffer)},
    {Py_tp_doc, const_cast<char*>(
        "An n-dimensional array in device, managed, pinned or host memory, shared zero-copy "
        "through the buffer protocol, __cuda_array_interface__ and DLPack.")},
    {0, nullptr}};

PyType_Spec array_spec = {"arrayport.Array", sizeof(array_object), 0,
                          Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, array_slots};

// ---- creation -----------------------------------------------------------------------------------

}  // namespace

stream_handle array_stream(memory_kind kind, int device, stream_handle stream, nb::handle stream_obj,
                           const char* what) {
  if (!is_gpu_resident(kind) || !runtime::is_available()) return stream;
  if (device < 0) device = runtime::get_device();
  const current_stream_state cur = current_stream();
  const int stream_device = stream_obj.is_none() && cur.handle == stream && cur.device >= 0
                                ? cur.device
                                : runtime::stream_device(stream, device);
  if (stream_device == device) return stream;
  if (!stream_obj.is_none())
    throw value_error(std::string(what) + ": stream belongs to device " + std::to_string(stream_device) +
                      ", but the memory is on device " + std::to_string(device) +
                      "; pass a stream of device " + std::to_string(device) + " or None");
  return nullptr;  // the current stream is another device's: this device's default stream
}

namespace {

// The creation functions' arguments, parsed (and checked) before anything is allocated.
struct creation_args {
  std::vector<std::int64_t> shape;
  dtype dt;
  memory_kind kind;
  std::optional<int> device;
  stream_handle stream;
};

creation_args parse_creation(nb::handle shape, nb::handle dt, nb::handle memory, nb::handle device,
                             nb::handle stream, const char* what) {
  return {parse_shape(shape, what), parse_dtype(dt), parse_memory(memory.ptr(), what),
          device_arg(device.ptr(), what), parse_stream(stream, what)};
}

nb::object create(const creation_args& c, nb::handle stream_obj, const char* what) {
  const std::int64_t nbytes = check_layout(what, c.shape.data(), nullptr, static_cast<int>(c.shape.size()),
                                           static_cast<std::int64_t>(c.dt.itemsize())).nbytes;
  const int device = c.device.value_or(-1);
  const stream_handle ordered_on = array_stream(c.kind, device, c.stream, stream_obj, what);
  buffer storage(static_cast<std::size_t>(nbytes), c.kind, device, ordered_on);
  return make_owned_array(std::move(storage), c.dt, c.shape,
                          ordered_on == c.stream ? stream_owner(stream_obj) : nb::handle());
}

nb::object create(nb::handle shape, nb::handle dt, nb::handle memory, nb::handle device,
                  nb::handle stream) {
  return create(parse_creation(shape, dt, memory, device, stream, "empty"), stream, "empty");
}

// `value` is checked (as fill_value) before anything is allocated.
nb::object filled(const creation_args& c, nb::handle stream, nb::handle value, const char* what) {
  alignas(16) unsigned char element[16] = {};
  scalar_to_bytes(value.ptr(), c.dt, element, (std::string(what) + ": fill_value").c_str());
  nb::object a = create(c, stream, what);
  nb::object done = nb::steal(array_fill(a.ptr(), value.ptr()));
  if (!done.is_valid()) throw nb::python_error();
  return a;
}

array_object* require_array(nb::handle h, const char* what) {
  if (!is_array(h.ptr()))
    throw type_error(std::string(what) + ": expected an arrayport.Array, got " + Py_TYPE(h.ptr())->tp_name);
  return as_array(h.ptr());
}

}  // namespace

nb::object make_owned_array(buffer&& storage, dtype dt, const std::int64_t* shape, int ndim,
                            nb::handle stream_owner) {
  // The one allocation an Array owns holds all its nbytes: callers size it from the same check.
  const std::int64_t nbytes =
      check_layout("Array", shape, nullptr, ndim, static_cast<std::int64_t>(dt.itemsize())).nbytes;
  if (storage.size() < static_cast<std::size_t>(nbytes))
    throw value_error("Array: shape " + shape_string(shape, static_cast<std::size_t>(ndim)) + " of " +
                      std::string(dt.name()) + " needs " + std::to_string(nbytes) +
                      " bytes, but its buffer has " + std::to_string(storage.size()));
  auto* owned = new buffer(std::move(storage));
  array_object* a = nullptr;
  try {
    a = alloc_array(ndim);
  } catch (...) {
    delete owned;
    throw;
  }
  a->owned = owned;
  a->stream_owner = Py_XNewRef(stream_owner.ptr());
  for (int i = 0; i < ndim; ++i) a->extents[i] = shape[i];
  compact_strides(shape, ndim, a->extents + ndim, static_cast<std::int64_t>(dt.itemsize()));
  a->view.data = owned->data();
  a->view.dtype = dt.to_c();
  a->view.memory_kind = static_cast<std::uint32_t>(owned->kind());
  a->view.device = owned->dlpack_device();
  a->view.stream = owned->stream();
  a->view.flags = 0;
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
      throw value_error("array_from_view: unknown memory kind " + std::to_string(view->memory_kind));
    if (view->ndim > 0 && (!view->shape || !view->strides))
      throw value_error("array_from_view: shape and strides must not be NULL for " +
                        std::to_string(view->ndim) + " dimensions");
    const layout_info l = check_layout("array_from_view", *view);
    if (l.count > 0 && !view->data)
      throw value_error("array_from_view: data is NULL but the view has " + std::to_string(l.count) +
                        " elements");
    array_object* a = alloc_array(view->ndim);
    for (int i = 0; i < view->ndim; ++i) {
      a->extents[i] = view->shape[i];
      a->extents[view->ndim + i] = view->strides[i];
    }
    a->view.data = view->data;
    a->view.dtype = view->dtype;
    a->view.memory_kind = view->memory_kind;
    a->view.device = view->device;
    a->view.stream = view->stream;
    a->view.flags = view->flags & ARRAYPORT_VIEW_READONLY;
    a->base = Py_XNewRef(owner);
    return reinterpret_cast<PyObject*>(a);
  });
}

void register_array(nb::module_& m) {
  array_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&array_spec));
  if (!array_type) throw nb::python_error();
  m.attr("Array") = nb::borrow(reinterpret_cast<PyObject*>(array_type));

  using namespace nb::literals;
  m.def("empty", [](nb::handle shape, nb::handle dt, nb::handle memory, nb::handle device,
                    nb::handle stream) { return create(shape, dt, memory, device, stream); },
        "shape"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(), "device"_a = nb::none(),
        "stream"_a = nb::none(),
        "A new uninitialised Array (allocation does not touch the pages).");
  m.def("zeros", [](nb::handle shape, nb::handle dt, nb::handle memory, nb::handle device,
                    nb::handle stream) {
          return filled(parse_creation(shape, dt, memory, device, stream, "zeros"), stream,
                        nb::int_(0), "zeros");
        }, "shape"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(), "device"_a = nb::none(),
        "stream"_a = nb::none(), "A new Array of zeros.");
  m.def("ones", [](nb::handle shape, nb::handle dt, nb::handle memory, nb::handle device,
                   nb::handle stream) {
          return filled(parse_creation(shape, dt, memory, device, stream, "ones"), stream,
                        nb::int_(1), "ones");
        }, "shape"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(), "device"_a = nb::none(),
        "stream"_a = nb::none(), "A new Array of ones.");
  m.def("full", [](nb::handle shape, nb::handle value, nb::handle dt, nb::handle memory,
                   nb::handle device, nb::handle stream) {
          return filled(parse_creation(shape, dt, memory, device, stream, "full"), stream, value,
                        "full");
        }, "shape"_a.none(), "fill_value"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(),
        "device"_a = nb::none(), "stream"_a = nb::none(), "A new Array filled with fill_value.");

  // *_like: shape, dtype, memory kind and device of `a` unless given.
  auto like = [](nb::handle a_obj, nb::handle dt, nb::handle memory, nb::handle device,
                 nb::handle stream, const char* what) {
    array_object* a = require_array(a_obj, (std::string(what) + ": a").c_str());
    creation_args c{std::vector<std::int64_t>(a->view.shape, a->view.shape + a->view.ndim),
                    dt.is_none() ? dtype::from_c(a->view.dtype) : parse_dtype(dt),
                    static_cast<memory_kind>(a->view.memory_kind), device_arg(device.ptr(), what),
                    parse_stream(stream, what)};
    if (!c.device && array_device(a) >= 0) c.device = array_device(a);
    if (std::optional<memory_kind> kind = memory_arg(memory.ptr(), what)) c.kind = *kind;
    return c;
  };
  m.def("empty_like", [like](nb::handle a, nb::handle dt, nb::handle memory, nb::handle device,
                             nb::handle stream) {
          return create(like(a, dt, memory, device, stream, "empty_like"), stream, "empty_like");
        }, "a"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(), "device"_a = nb::none(),
        "stream"_a = nb::none(), "An uninitialised Array shaped like a.");
  m.def("zeros_like", [like](nb::handle a, nb::handle dt, nb::handle memory, nb::handle device,
                             nb::handle stream) {
          return filled(like(a, dt, memory, device, stream, "zeros_like"), stream, nb::int_(0),
                        "zeros_like");
        }, "a"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(), "device"_a = nb::none(),
        "stream"_a = nb::none(), "Zeros shaped like a.");
  m.def("ones_like", [like](nb::handle a, nb::handle dt, nb::handle memory, nb::handle device,
                            nb::handle stream) {
          return filled(like(a, dt, memory, device, stream, "ones_like"), stream, nb::int_(1),
                        "ones_like");
        }, "a"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(), "device"_a = nb::none(),
        "stream"_a = nb::none(), "Ones shaped like a.");
  m.def("full_like", [like](nb::handle a, nb::handle value, nb::handle dt, nb::handle memory,
                            nb::handle device, nb::handle stream) {
          return filled(like(a, dt, memory, device, stream, "full_like"), stream, value,
                        "full_like");
        }, "a"_a.none(), "fill_value"_a.none(), "dtype"_a = nb::none(), "memory"_a = nb::none(),
        "device"_a = nb::none(), "stream"_a = nb::none(), "fill_value shaped like a.");
  m.def("_dlpack_live_exports", &dlpack_live_exports,
        "DLPack capsules exported and not yet released (for leak tests).");
  m.def("_readonly_view", [](nb::handle a_obj) {
          array_object* a = require_array(a_obj, "a");
          nb::object v = nb::steal(make_view(a, static_cast<char*>(a->view.data),
                                             std::vector<std::int64_t>(a->view.shape, a->view.shape + a->view.ndim),
                                             std::vector<std::int64_t>(a->view.strides, a->view.strides + a->view.ndim),
                                             dtype::from_c(a->view.dtype), "_readonly_view"));
          as_array(v.ptr())->view.flags |= ARRAYPORT_VIEW_READONLY;
          return v;
        }, "a"_a, "A read-only view of a (for tests of read-only arrays).");
  register_copy_functions(m);
}

}  // namespace arrayport::ext
