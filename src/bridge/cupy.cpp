// CuPy arrays from their struct: the one-time layout check, and the two reads (an acquired view,
// and a typed parameter's borrowed one).
#include "bridge/cupy.hpp"

#include "bridge/checks.hpp"
#include "bridge/type_cache.hpp"

#include <arrayport/python/api.hpp>
#include <arrayport/python/numpy.hpp>
#include <arrayport/runtime.hpp>

#include <cstddef>
#include <cstring>

namespace arrayport::bridge {
namespace {

// CuPy's C function for its current stream, from the first module that exports it with a
// signature known here. Leaves no Python error set.
bool find_current_stream(cupy_layout& layout) noexcept {
  for (const char* module : {"cupy_backends.cuda.stream", "cupy.cuda.stream"}) {
    PyObject* m = PyImport_ImportModule(module);
    PyObject* capi = m ? PyObject_GetAttrString(m, "__pyx_capi__") : nullptr;
    PyObject* entry = capi && PyDict_Check(capi)
                          ? PyDict_GetItemString(capi, "get_current_stream_ptr")  // borrowed
                          : nullptr;
    struct known {
      const char* signature;
      bool may_raise;
    };
    bool found = false;
    for (const known k :
         {known{"intptr_t (void)", false}, known{"intptr_t (void) except *", true}}) {
      if (found || !entry || !PyCapsule_IsValid(entry, k.signature)) continue;
      layout.current_stream =
          reinterpret_cast<std::intptr_t (*)()>(PyCapsule_GetPointer(entry, k.signature));
      layout.stream_may_raise = k.may_raise;
      found = true;
    }
    Py_XDECREF(capi);
    Py_XDECREF(m);
    PyErr_Clear();
    if (found) return true;
  }
  return false;
}

// Whether CuPy arrays may be read from their struct: checks the layout on `obj` the first time
// (an array of ndim >= 1: a 0-d one leaves the question open). Never leaves a Python error set.
bool cupy_layout_checked(PyObject* obj) noexcept {
  cupy_layout& layout = cupy();
  if (layout.state != 0) return layout.state > 0;
  PyObject *shape = nullptr, *strides = nullptr, *size = nullptr, *dtype = nullptr, *data = nullptr,
           *base = nullptr, *ptr = nullptr, *device = nullptr, *mem = nullptr, *numpy = nullptr,
           *dtype_type = nullptr;
  int verdict = -1;
  auto same_ints = [](PyObject* tuple, const std_vector_fields& v) {
    const Py_ssize_t n = v.end - v.begin;
    if (!tuple || !PyTuple_Check(tuple) || python::limited::tuple_size(tuple) != n || n < 0)
      return false;
    if (n > 0 && !v.begin) return false;
    for (Py_ssize_t i = 0; i < n; ++i) {  // ints only: an __index__ could reshape the array
      PyObject* item = python::limited::tuple_item(tuple, i);
      if (!PyLong_Check(item) || PyLong_AsSsize_t(item) != v.begin[i]) return false;
    }
    return !PyErr_Occurred();
  };
  do {
    const auto* f = reinterpret_cast<const cupy_array_fields*>(obj);
    if (!is_cupy_array_type(Py_TYPE(obj))) break;
    shape = PyObject_GetAttrString(obj, "shape");
    if (shape && PyTuple_Check(shape) && python::limited::tuple_size(shape) == 0) {
      verdict = 0;  // nothing to compare the vectors with: ask again on another array
      break;
    }
    strides = PyObject_GetAttrString(obj, "strides");
    size = PyObject_GetAttrString(obj, "size");
    dtype = PyObject_GetAttrString(obj, "dtype");
    data = PyObject_GetAttrString(obj, "data");
    base = PyObject_GetAttrString(obj, "base");
    if (!shape || !strides || !size || !dtype || !data || !base) break;
    // Identities and plain values first: only then are the vectors' pointers followed.
    if (f->dtype != dtype || f->data != data || f->base != base || !PyLong_Check(size) ||
        PyLong_AsSsize_t(size) != f->size)
      break;
    if (!same_ints(shape, f->shape) || !same_ints(strides, f->strides)) break;
    PyTypeObject* pointer_type = Py_TYPE(data);
    if (!is_c_type_named(pointer_type, "cupy.cuda.memory.MemoryPointer") ||
        python::limited::basic_size(pointer_type) !=
            static_cast<Py_ssize_t>(sizeof(cupy_pointer_fields)))
      break;
    ptr = PyObject_GetAttrString(data, "ptr");
    device = PyObject_GetAttrString(data, "device_id");
    mem = PyObject_GetAttrString(data, "mem");
    const auto* p = reinterpret_cast<const cupy_pointer_fields*>(data);
    if (!ptr || !device || !mem || p->mem != mem || PyLong_AsSsize_t(ptr) != p->ptr ||
        PyLong_AsLong(device) != p->device_id || PyErr_Occurred())
      break;
    static PyObject* const numpy_name = interned("numpy");
    numpy = numpy_name ? PyImport_GetModule(numpy_name) : nullptr;
    dtype_type = numpy ? PyObject_GetAttrString(numpy, "dtype") : nullptr;
    if (!dtype_type || !PyType_Check(dtype_type) ||
        !PyObject_TypeCheck(dtype, reinterpret_cast<PyTypeObject*>(dtype_type)))
      break;
    if (!find_current_stream(layout)) break;
    layout.pointer_type = pointer_type;
    layout.dtype_type = reinterpret_cast<PyTypeObject*>(dtype_type);
    layout.array_type = Py_TYPE(obj);
    Py_INCREF(reinterpret_cast<PyObject*>(layout.pointer_type));
    Py_INCREF(reinterpret_cast<PyObject*>(layout.dtype_type));
    Py_INCREF(reinterpret_cast<PyObject*>(layout.array_type));
    verdict = 1;
  } while (false);
  PyErr_Clear();
  for (PyObject* o : {shape, strides, size, dtype, data, base, ptr, device, mem, numpy, dtype_type})
    Py_XDECREF(o);
  layout.state = verdict;
  return verdict > 0;
}

// CuPy's current stream, as __dlpack__ would order after it; false with no error set when CuPy
// raised (its error is cleared: the caller falls back to __dlpack__, which will say it).
bool cupy_current_stream(stream_handle& out) noexcept {
  const cupy_layout& layout = cupy();
  const std::intptr_t s = layout.current_stream();
  if ((s == -1 || layout.stream_may_raise) && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  out = reinterpret_cast<stream_handle>(s);
  return true;
}

// The fields both reads take, with the checks both make: a numpy.dtype arrayport names in native
// byte order (`dt`), a MemoryPointer, as many strides as extents. nullptr for anything else. The
// layout must have been checked.
const cupy_array_fields* cupy_fields(PyObject* obj, arrayport::dtype& dt) noexcept {
  const cupy_layout& layout = cupy();
  const auto* f = reinterpret_cast<const cupy_array_fields*>(obj);
  if (!PyObject_TypeCheck(f->dtype, layout.dtype_type) || Py_TYPE(f->data) != layout.pointer_type ||
      f->strides.end - f->strides.begin != f->shape.end - f->shape.begin)
    return nullptr;
  const auto* d = reinterpret_cast<const python::numpy::descr_head*>(f->dtype);
  if (d->byteorder == '>' || !python::numpy::to_dtype(d->type_num, dt)) return nullptr;
  return f;
}

}  // namespace

cupy_layout& cupy() noexcept {
  static cupy_layout layout;
  return layout;
}

bool is_cupy_array_type(PyTypeObject* type) noexcept {
  for (PyTypeObject* t = type; t; t = python::limited::type_base(t))
    if (is_c_type_named(t, "cupy._core.core._ndarray_base"))
      return python::limited::basic_size(t) == static_cast<Py_ssize_t>(sizeof(cupy_array_fields)) &&
             python::limited::weaklist_offset(t) ==
                 static_cast<Py_ssize_t>(offsetof(cupy_array_fields, weakrefs));
  return false;
}

bool from_cupy(held& a, PyObject* obj, const python::acquire_options& o) {
  if (!cupy_layout_checked(obj)) return false;
  arrayport::dtype dt;
  const cupy_array_fields* f = cupy_fields(obj, dt);
  const Py_ssize_t nd = f ? f->shape.end - f->shape.begin : 0;
  if (!f || nd > ARRAYPORT_MAX_NDIM) return false;
  const auto itemsize = static_cast<Py_ssize_t>(dt.itemsize());
  for (Py_ssize_t i = 0; i < nd; ++i)
    if (f->strides.begin[i] % itemsize != 0) return false;
  const auto* p = reinterpret_cast<const cupy_pointer_fields*>(f->data);
  stream_handle producer = nullptr;
  if ((o.sync || o.producer_stream) && !cupy_current_stream(producer)) return false;
  std::int64_t* ext = a.extents(static_cast<int>(nd));
  for (Py_ssize_t i = 0; i < nd; ++i) {
    ext[i] = f->shape.begin[i];
    ext[nd + i] = f->strides.begin[i] / itemsize;
  }
  void* data = reinterpret_cast<void*>(p->ptr);
  a.from = held::source::reference;  // the held array keeps its MemoryPointer alive
  // Device or managed memory (or pinned host memory that CuPy wraps): CUDA says which, as
  // CuPy's __dlpack_device__ asks it too.
  const runtime::pointer_info info = runtime::query_pointer(data);
  const memory_kind kind = info.kind == memory_kind::host ? memory_kind::device : info.kind;
  const int device = info.device >= 0 ? info.device : p->device_id;
  // CuPy arrays are always writable.
  fill_view(a.view, data, static_cast<int>(nd), ext, dt.to_c(), kind, device, false, obj);
  if (o.producer_stream)
    a.view.stream = producer;
  else if (o.sync)
    runtime::order_streams(producer, consumer_stream(o), device);
  return true;
}

bool cupy_borrow(PyObject* obj, const python::constraints& c, const python::acquire_options& o,
                 arrayport_view_t& v, std::int64_t* ext) noexcept {
  if (c.where == python::reach::host || cupy().state <= 0) return false;
  arrayport::dtype dt;
  const cupy_array_fields* f = cupy_fields(obj, dt);
  if (!f || dt != c.dtypes[0] || f->shape.end - f->shape.begin != static_cast<Py_ssize_t>(c.ndim))
    return false;
  const auto* p = reinterpret_cast<const cupy_pointer_fields*>(f->data);
  const auto itemsize = static_cast<std::int64_t>(dt.itemsize());
  if (!borrowed_geometry(f->shape.begin, f->strides.begin, itemsize, c.ndim,
                         reinterpret_cast<const void*>(p->ptr), itemsize, ext))
    return false;
  stream_handle producer = nullptr;
  if (!cupy_current_stream(producer) || (!o.producer_stream && producer != consumer_stream(o)))
    return false;
  fill_view(v, reinterpret_cast<void*>(p->ptr), c.ndim, ext, dt.to_c(), memory_kind::device,
            p->device_id, false, obj);
  if (o.producer_stream) v.stream = producer;
  return true;
}

}  // namespace arrayport::bridge
