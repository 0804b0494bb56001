// The consume bridge: any Python array -> a checked strided_view, held by an RAII `acquired`.
//
// CPython C API only, header-level, usable from any extension. The protocol is chosen by the
// producer's type, fastest first, and the choice is cached per type:
//   1. arrayport.Array (exact type; the view is read straight out of the object);
//   2. the DLPack C exchange API (type(obj).__dlpack_c_exchange_api__, PyTorch >= 2.10);
//   3. the buffer protocol (memoryview, bytes, array.array; NumPy arrays read from their struct);
//   4. __dlpack__ (versioned first, legacy on TypeError);
//   5. __cuda_array_interface__ (v3, and PyTorch's v2).
// CuPy's ndarray is read from its struct, before the buffer protocol, with __dlpack__'s stream
// semantics (see "CuPy arrays" below): "cupy" among the protocols. A JAX array that is ready,
// passed to a const view parameter, comes through its __cuda_array_interface__ (see "JAX arrays").
// The view stays valid, and the producer alive, for as long as the `acquired` lives. Every
// violation of the caller's constraints is a type_error / value_error / buffer_error naming the
// argument, what was expected and what came.
#pragma once

#include <arrayport/python/api.hpp>
#include <arrayport/python/spellings.hpp>

#include <arrayport/c/dlpack.h>
#include <arrayport/c/view.h>
#include <arrayport/dtype.hpp>
#include <arrayport/error.hpp>
#include <arrayport/layout.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/view.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

namespace arrayport::python {

/// The object offers no array protocol at all (as opposed to an array that violates a
/// constraint): binding adapters let other overloads try it.
class not_an_array : public type_error {
 public:
  using type_error::type_error;
};

/// The memory layout a parameter needs.
enum class order : std::uint8_t {
  any,  ///< any strides
  c,    ///< C-contiguous (row-major)
  f     ///< Fortran-contiguous (column-major)
};

/// Where the memory must be reachable from.
enum class reach : std::uint8_t {
  any,    ///< anywhere (the callee looks at memory_kind itself)
  host,   ///< host code dereferences it: host, pinned or managed memory
  device  ///< device code dereferences it: device, managed or pinned memory
};

/// The exchange protocols, as bits (acquire_options::protocols restricts the choice).
enum protocol : std::uint32_t {
  protocol_array = 1u << 0,     ///< arrayport.Array
  protocol_exchange = 1u << 1,  ///< DLPack C exchange API
  protocol_buffer = 1u << 2,    ///< buffer protocol
  protocol_dlpack = 1u << 3,    ///< __dlpack__
  protocol_cai = 1u << 4,       ///< __cuda_array_interface__
  protocol_cupy = 1u << 5,      ///< a CuPy ndarray read from its struct (__dlpack__'s semantics)
  protocol_all = 0x3Fu
};

/// What a parameter accepts. Unset fields accept anything.
struct constraints {
  const char* name = "array";                ///< the argument's name, for error messages
  const arrayport::dtype* dtypes = nullptr;  ///< accepted dtypes (n_dtypes of them); none: any
  std::size_t n_dtypes = 0;
  int ndim = -1;                             ///< required rank; -1: any
  const std::int64_t* shape = nullptr;       ///< ndim extents, -1 for any; nullptr: any shape
  order layout = order::any;
  reach where = reach::any;
  bool writable = false;                     ///< the callee writes through the view
};

/// How long the view must live, and which stream the consumer works on.
struct acquire_options {
  /// The consumer's stream: the producer's pending work is ordered before it (DLPack stream
  /// handshake, or an event wait for __cuda_array_interface__ and the exchange API). Defaults to
  /// arrayport's current stream.
  stream_handle stream = nullptr;
  bool stream_given = false;
  /// false: no stream ordering at all (as CUPY_CUDA_ARRAY_INTERFACE_SYNC=0 / NUMBA_CUDA_
  /// ARRAY_INTERFACE_SYNC=0 offer); the caller orders the work itself.
  bool sync = true;
  /// true: the view is used only until control returns to Python (a function call's argument);
  /// lets the exchange API skip building an owning tensor. false: the view may be kept.
  bool call_scoped = false;
  /// true: the consumer only reads through the view (a const view parameter), so an immutable
  /// producer's read-only export may serve: a ready JAX array, call-scoped, comes through its
  /// __cuda_array_interface__ instead of __dlpack__ (see "JAX arrays").
  bool reads_only = false;
  std::uint32_t protocols = protocol_all;  ///< which protocols may be used
};

/// An acquired view: releases the buffer / DLPack tensor and the producer reference when it dies.
/// Move-only. Must be destroyed with the GIL held.
class acquired {
 public:
  acquired() noexcept { reset_view(); }
  ~acquired() { release(); }
  acquired(const acquired&) = delete;
  acquired& operator=(const acquired&) = delete;
  acquired(acquired&& other) noexcept { take(other); }
  acquired& operator=(acquired&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }

  explicit operator bool() const noexcept { return m_source != source::none; }
  strided_view view() const noexcept { return strided_view(m_view); }
  const arrayport_view_t& c_view() const noexcept { return m_view; }
  /// The producer (the object passed to acquire): a borrowed reference valid while this lives.
  PyObject* owner() const noexcept { return m_owner; }
  /// The protocol the view came through (one protocol bit).
  std::uint32_t protocol_used() const noexcept { return m_protocol; }

  /// The typed view (dtype, rank, space and writability checked again, cheaply).
  template <class T, std::size_t Rank, class Space = any_space>
  arrayport::view<T, Rank, Space> as(const char* what = "array") const {
    return view().template as<T, Rank, Space>(what);
  }

  /// Drops the view now (releases the buffer, calls the DLPack deleter, drops the producer).
  void release() noexcept;

  /// Visits the Python objects this holds strong references to: the producer, and a buffer's
  /// exporter object. For the tp_traverse of a GC-tracked object that keeps an `acquired`.
  int traverse(visitproc visit, void* arg) const {
    Py_VISIT(m_owner);
    if (m_source == source::buffer) Py_VISIT(m_buffer.obj);
    return 0;
  }

 private:
  enum class source : std::uint8_t { none, reference, buffer, dlpack_legacy, dlpack_versioned };
  friend acquired acquire(PyObject*, const constraints&, const acquire_options&);
  friend struct detail_access;

  void reset_view() noexcept {
    std::memset(&m_view, 0, sizeof m_view);
    m_view.version = {ARRAYPORT_C_ABI_VERSION_MAJOR, ARRAYPORT_C_ABI_VERSION_MINOR};
  }
  bool uses_inline() const noexcept { return m_view.shape == m_extents; }
  void take(acquired& other) noexcept {
    m_view = other.m_view;
    m_source = other.m_source;
    m_protocol = other.m_protocol;
    m_owner = std::exchange(other.m_owner, nullptr);
    if (other.m_source == source::buffer) m_buffer = other.m_buffer;
    m_managed = std::exchange(other.m_managed, nullptr);
    if (other.uses_inline()) {
      std::memcpy(m_extents, other.m_extents, sizeof(std::int64_t) * 2 * std::size_t(m_view.ndim));
      m_view.shape = m_extents;
      m_view.strides = m_extents + m_view.ndim;
    }
    m_heap = std::exchange(other.m_heap, nullptr);
    other.m_source = source::none;
    other.reset_view();
  }
  // Room for shape and strides, inline up to 8 dimensions.
  std::int64_t* extents(int ndim) {
    if (ndim <= inline_rank) return m_extents;
    m_heap = static_cast<std::int64_t*>(std::malloc(sizeof(std::int64_t) * 2 * std::size_t(ndim)));
    if (!m_heap) throw std::bad_alloc();
    return m_heap;
  }

  static constexpr int inline_rank = 8;
  arrayport_view_t m_view;
  source m_source = source::none;
  std::uint32_t m_protocol = 0;
  PyObject* m_owner = nullptr;   // strong reference to the producer
  Py_buffer m_buffer;            // source::buffer only (not initialised otherwise)
  void* m_managed = nullptr;     // source::dlpack_*: the managed tensor to delete exactly once
  std::int64_t* m_heap = nullptr;
  std::int64_t m_extents[2 * inline_rank];  // written before they are read
};

namespace detail {

// ---- the DLPack C exchange API (DLPack 1.2+, dlpack.h), layout as the specification defines --

struct dl_exchange_api_header {
  arrayport_dlpack_version_t version;
  dl_exchange_api_header* prev_api;
};
struct dl_exchange_api {
  dl_exchange_api_header header;
  int (*managed_tensor_allocator)(arrayport_dl_tensor_t*, arrayport_dl_managed_tensor_versioned_t**,
                                  void*, void (*)(void*, const char*, const char*));
  int (*managed_tensor_from_py_object_no_sync)(void*, arrayport_dl_managed_tensor_versioned_t**);
  int (*managed_tensor_to_py_object_no_sync)(arrayport_dl_managed_tensor_versioned_t*, void**);
  int (*dltensor_from_py_object_no_sync)(void*, arrayport_dl_tensor_t*);  // may be NULL
  int (*current_work_stream)(int device_type, std::int32_t device_id, void** out_stream);
};

// ---- the per-type protocol cache -------------------------------------------------------------

struct type_entry {
  PyTypeObject* type = nullptr;  // a strong reference: a cached type is never freed and reused
  std::uint32_t protocols = 0;   // what the type offers
  const dl_exchange_api* exchange = nullptr;
  bool numpy = false;            // numpy.ndarray or a subclass: its struct is read directly
  bool jax = false;              // jaxlib's ArrayImpl: see "JAX arrays" below
  std::int8_t dlpack_cuda = -1;  // where its last __dlpack__ tensor was: 1 CUDA, 0 host, -1 unknown
  bool dlpack_legacy = false;    // its __dlpack__ takes no max_version (before DLPack 1.0)
};

inline PyObject* interned(const char* s) noexcept {
  return PyUnicode_InternFromString(s);  // callers keep the result in a function-local static
}

// The exchange API table of a type: a capsule "dlpack_exchange_api" (PyTorch) or an int address
// (the DLPack 1.2 spelling __c_dlpack_exchange_api__). nullptr when absent or of another major.
inline const dl_exchange_api* find_exchange_api(PyTypeObject* type) noexcept {
  static PyObject* const names[2] = {interned("__dlpack_c_exchange_api__"),
                                     interned("__c_dlpack_exchange_api__")};
  for (PyObject* name : names) {
    if (!name) continue;
    PyObject* attr = PyObject_GetAttr(reinterpret_cast<PyObject*>(type), name);
    if (!attr) {
      PyErr_Clear();
      continue;
    }
    const void* table = nullptr;
    if (PyCapsule_CheckExact(attr))
      table = PyCapsule_GetPointer(attr, "dlpack_exchange_api");
    else if (PyLong_Check(attr))
      table = PyLong_AsVoidPtr(attr);
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

// ---- NumPy arrays, read without the buffer protocol ------------------------------------------
//
// The buffer protocol costs NumPy a format string per call, and us its parsing: about 80 ns of a
// 180 ns argument. The fields it reports are read here from the ndarray struct instead, in the
// layout NumPy 1.x and 2.x share (PyArrayObject_fields, and PyArray_Descr up to type_num). Any
// array this path does not describe exactly (non-native byte order, a dtype arrayport has no
// name for, strides that are not multiples of the itemsize) goes through the buffer protocol,
// whose errors then say why.

struct numpy_array_fields {
  PyObject_HEAD
  char* data;
  int nd;
  Py_ssize_t* dimensions;
  Py_ssize_t* strides;
  PyObject* base;
  PyObject* descr;
  int flags;
};
struct numpy_descr_head {
  PyObject_HEAD
  PyTypeObject* typeobj;
  char kind;
  char type;
  char byteorder;
  char flags_1x;  // NumPy 1.x flags; 2.x: unused
  int type_num;
};
inline constexpr int numpy_writeable = 0x0400;  // NPY_ARRAY_WRITEABLE

// Whether `t` is a class statement's (or type()'s) that took a dotted name for itself: it may call
// itself "numpy.ndarray", but its instances lack the struct that name stands for. A C type's
// __name__ is what follows the last dot of tp_name; a class statement's is all of tp_name.
inline bool named_by_python(PyTypeObject* t) noexcept {
  if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE)) return false;
  PyObject* name = reinterpret_cast<PyHeapTypeObject*>(t)->ht_name;
  return name && PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, t->tp_name) == 0;
}

inline bool is_numpy_array_type(PyTypeObject* type) noexcept {
  for (PyTypeObject* t = type; t; t = t->tp_base)
    if (std::strcmp(t->tp_name, "numpy.ndarray") == 0)
      return !named_by_python(t) &&
             type->tp_basicsize >= static_cast<Py_ssize_t>(sizeof(numpy_array_fields));
  return false;
}

// numpy.ndarray itself (not a subclass) once describe_type has seen it: the typed parameters'
// fast path compares one pointer. Never freed: the type cache holds a reference.
inline PyTypeObject*& numpy_exact_type() noexcept {
  static PyTypeObject* type = nullptr;
  return type;
}

// The dtype of a NumPy type number (NPY_BOOL .. NPY_HALF), or false for the others.
inline bool numpy_dtype(int type_num, arrayport::dtype& out) noexcept {
  constexpr std::uint8_t long_bits = 8 * sizeof(long);
  switch (type_num) {
    case 0: out = dtypes::bool_; return true;
    case 1: out = dtypes::int8; return true;
    case 2: out = dtypes::uint8; return true;
    case 3: out = dtypes::int16; return true;
    case 4: out = dtypes::uint16; return true;
    case 5: out = dtypes::int32; return true;
    case 6: out = dtypes::uint32; return true;
    case 7: out = arrayport::dtype(ARRAYPORT_DTYPE_INT, long_bits); return true;
    case 8: out = arrayport::dtype(ARRAYPORT_DTYPE_UINT, long_bits); return true;
    case 9: out = dtypes::int64; return true;
    case 10: out = dtypes::uint64; return true;
    case 11: out = dtypes::float32; return true;
    case 12: out = dtypes::float64; return true;
    case 14: out = dtypes::complex64; return true;
    case 15: out = dtypes::complex128; return true;
    case 23: out = dtypes::float16; return true;
    default: return false;
  }
}

// ---- CuPy arrays, read without __dlpack__ ----------------------------------------------------
//
// CuPy's __dlpack__ costs about 300 ns a call from C (a capsule, a DLManagedTensor and a
// cudaPointerGetAttributes inside) and its __cuda_array_interface__ 570 ns (a dict). What they
// report is read here from the ndarray's struct instead: the layout Cython gives
// cupy._core.core._ndarray_base (cupy/_core/core.pxd: size, _shape and _strides as
// std::vector<Py_ssize_t>, dtype, data) and cupy.cuda.memory.MemoryPointer (ptr, device_id, mem).
// Cython publishes no offsets for these, so the layout is checked once, on the first CuPy array of
// one or more dimensions seen: the types' sizes and weak-list offset, then every field against
// the Python attribute it backs (size, shape, strides, dtype, data, data.ptr, data.device_id,
// data.mem). Any mismatch (another CuPy layout, another C++ library's vector) turns the struct
// path off for the process, and __dlpack__ serves as before.
//
// The stream semantics are those of __dlpack__(stream=consumer): the consumer's stream waits for
// CuPy's current stream, which cupy.cuda.stream.get_current_stream_ptr() gives -- the C function
// CuPy exports to other Cython modules through __pyx_capi__.

struct std_vector_fields {  // std::vector's three pointers, in libstdc++, libc++ and MSVC alike
  Py_ssize_t* begin;
  Py_ssize_t* end;
  Py_ssize_t* capacity;
};
struct cupy_array_fields {
  PyObject_HEAD
  void* vtab;  // Cython's table of cdef methods
  PyObject* weakrefs;
  Py_ssize_t size;
  std_vector_fields shape;    // extents
  std_vector_fields strides;  // in bytes
  int c_contiguous, f_contiguous, index_32_bits;
  PyObject* dtype;  // a numpy.dtype
  PyObject* data;   // a cupy.cuda.memory.MemoryPointer: the first element's address
  PyObject* base;
};
struct cupy_pointer_fields {
  PyObject_HEAD
  void* vtab;
  std::intptr_t ptr;
  int device_id;
  PyObject* mem;
};

struct cupy_layout {
  PyTypeObject* array_type = nullptr;    // the exact type checked (cupy.ndarray); kept for good
  PyTypeObject* pointer_type = nullptr;  // cupy.cuda.memory.MemoryPointer; kept for good
  PyTypeObject* dtype_type = nullptr;    // numpy.dtype; kept for good
  std::intptr_t (*current_stream)() = nullptr;  // CuPy's current stream of the current device
  int state = 0;                                // 1 checked, -1 refused, 0 not yet
};

inline cupy_layout& cupy() noexcept {
  static cupy_layout layout;
  return layout;
}

// A subclass of cupy._core.core._ndarray_base whose base has the struct above (the values are
// checked later, on an instance).
inline bool is_cupy_array_type(PyTypeObject* type) noexcept {
  for (PyTypeObject* t = type; t; t = t->tp_base)
    if (std::strcmp(t->tp_name, "cupy._core.core._ndarray_base") == 0)
      return !named_by_python(t) &&
             t->tp_basicsize == static_cast<Py_ssize_t>(sizeof(cupy_array_fields)) &&
             t->tp_weaklistoffset == static_cast<Py_ssize_t>(offsetof(cupy_array_fields, weakrefs));
  return false;
}

// Whether CuPy arrays may be read from their struct: checks the layout on `obj` the first time
// (an array of ndim >= 1: a 0-d one leaves the question open). Never leaves a Python error set.
inline bool cupy_layout_checked(PyObject* obj) noexcept {
  cupy_layout& layout = cupy();
  if (layout.state != 0) return layout.state > 0;
  PyObject *shape = nullptr, *strides = nullptr, *size = nullptr, *dtype = nullptr, *data = nullptr,
           *base = nullptr, *ptr = nullptr, *device = nullptr, *mem = nullptr, *numpy = nullptr,
           *dtype_type = nullptr, *stream_module = nullptr, *capi = nullptr;
  int verdict = -1;
  auto same_ints = [](PyObject* tuple, const std_vector_fields& v) {
    const Py_ssize_t n = v.end - v.begin;
    if (!tuple || !PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != n || n < 0) return false;
    if (n > 0 && !v.begin) return false;
    for (Py_ssize_t i = 0; i < n; ++i) {  // ints only: an __index__ could reshape the array
      PyObject* item = PyTuple_GET_ITEM(tuple, i);
      if (!PyLong_Check(item) || PyLong_AsSsize_t(item) != v.begin[i]) return false;
    }
    return !PyErr_Occurred();
  };
  do {
    const auto* f = reinterpret_cast<const cupy_array_fields*>(obj);
    if (!is_cupy_array_type(Py_TYPE(obj))) break;
    shape = PyObject_GetAttrString(obj, "shape");
    if (shape && PyTuple_Check(shape) && PyTuple_GET_SIZE(shape) == 0) {
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
    if (std::strcmp(pointer_type->tp_name, "cupy.cuda.memory.MemoryPointer") != 0 ||
        pointer_type->tp_basicsize != static_cast<Py_ssize_t>(sizeof(cupy_pointer_fields)))
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
    if (!dtype_type || !PyType_Check(dtype_type) || !PyObject_TypeCheck(dtype, reinterpret_cast<PyTypeObject*>(dtype_type)))
      break;
    stream_module = PyImport_ImportModule("cupy.cuda.stream");
    capi = stream_module ? PyObject_GetAttrString(stream_module, "__pyx_capi__") : nullptr;
    PyObject* entry = capi && PyDict_Check(capi) ? PyDict_GetItemString(capi, "get_current_stream_ptr") : nullptr;
    constexpr const char* signature = "intptr_t (void)";
    if (!entry || !PyCapsule_IsValid(entry, signature)) break;
    layout.current_stream =
        reinterpret_cast<std::intptr_t (*)()>(PyCapsule_GetPointer(entry, signature));
    layout.pointer_type = pointer_type;
    layout.dtype_type = reinterpret_cast<PyTypeObject*>(dtype_type);
    layout.array_type = Py_TYPE(obj);
    Py_INCREF(layout.pointer_type);
    Py_INCREF(layout.dtype_type);
    Py_INCREF(layout.array_type);
    verdict = 1;
  } while (false);
  PyErr_Clear();
  for (PyObject* o : {shape, strides, size, dtype, data, base, ptr, device, mem, numpy, dtype_type,
                      stream_module, capi})
    Py_XDECREF(o);
  layout.state = verdict;
  return verdict > 0;
}

// CuPy's current stream, as __dlpack__ would order after it; false with no error set when CuPy
// raised (its error is cleared: the caller falls back to __dlpack__, which will say it).
inline bool cupy_current_stream(stream_handle& out) noexcept {
  const std::intptr_t s = cupy().current_stream();
  if (s == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  out = reinterpret_cast<stream_handle>(s);
  return true;
}

// The fields of a CuPy array both readers (acquire()'s and the typed parameters') take, with the
// checks both make: a numpy.dtype arrayport names in native byte order (`dt`), a MemoryPointer,
// as many strides as extents. nullptr for anything else. The layout must have been checked.
inline const cupy_array_fields* cupy_fields(PyObject* obj, arrayport::dtype& dt) noexcept {
  const cupy_layout& layout = cupy();
  const auto* f = reinterpret_cast<const cupy_array_fields*>(obj);
  if (!PyObject_TypeCheck(f->dtype, layout.dtype_type) || Py_TYPE(f->data) != layout.pointer_type ||
      f->strides.end - f->strides.begin != f->shape.end - f->shape.begin)
    return nullptr;
  const auto* d = reinterpret_cast<const numpy_descr_head*>(f->dtype);
  if (d->byteorder == '>' || !numpy_dtype(d->type_num, dt)) return nullptr;
  return f;
}

// ---- __cuda_array_interface__'s names, interned once -----------------------------------------
//
// Looking the keys up as interned strings costs 40 ns a dict; PyDict_GetItemString's fresh key
// strings cost 290. nullptr only when interning failed (out of memory).

enum cai_key { cai_version, cai_mask, cai_shape, cai_typestr, cai_data, cai_strides, cai_stream, cai_keys };
inline constexpr const char* cai_names[cai_keys] = {"version", "mask", "shape", "typestr",
                                                   "data", "strides", "stream"};
inline PyObject* cai_key_object(cai_key k) noexcept {
  static PyObject* const keys[cai_keys] = {
      interned(cai_names[0]), interned(cai_names[1]), interned(cai_names[2]), interned(cai_names[3]),
      interned(cai_names[4]), interned(cai_names[5]), interned(cai_names[6])};
  return keys[k];
}
inline PyObject* cai_attribute() noexcept {
  static PyObject* const name = interned("__cuda_array_interface__");
  return name;
}

// ---- JAX arrays, ready ones through __cuda_array_interface__ --------------------------------
//
// JAX's __dlpack__ is Python (jax._src.dlpack) over jaxlib's buffer_to_dlpack_managed_tensor:
// 3 to 5 us a call with a stream. Its __cuda_array_interface__ is C++ (0.7 us) but version 2:
// no stream, and it does not wait for the computation that defines the array -- a view of a
// queued result reads stale memory. Array.is_ready() (0.3 us) says whether that computation is
// done (the array's ready future, which block_until_ready() awaits). So a function argument
// (call-scoped: the caller holds the array until the call returns) to a parameter that only
// reads (acquire_options::reads_only, a const view: JAX arrays are immutable, and their interface
// says read-only) that is ready, in GPU memory, needs no stream ordering and no DLPack tensor: its
// interface serves. Anything else goes through __dlpack__ as before: a pending array (the stream
// handshake orders it), a parameter that may be written (a non-const view, a strided_view), a
// view that may be kept (arrayport.view), arrayport.ops and copies (they release the GIL while
// the GPU reads: __dlpack__'s capsule holds JAX's external reference, so another thread cannot
// donate or delete the buffer meanwhile), memory the GPU cannot reach (JAX's unpinned_host
// arrays) and arrays with no interface (bfloat16; sharded ones; CPU arrays, which the buffer
// protocol serves).
//
// What the interface path does not hold is that reference: a callee that releases the GIL while
// it reads a const view of a JAX array relies on no other thread donating or deleting that array
// in the meantime (JAX forbids using a donated array anyway; __dlpack__ would make the donation
// fail instead).
inline bool is_jax_array_type(PyTypeObject* type) noexcept {
  // nanobind gives the type its dotted name; without it, the module says.
  if (std::strcmp(type->tp_name, "jaxlib._jax.ArrayImpl") == 0) return true;
  if (std::strcmp(type->tp_name, "ArrayImpl") != 0) return false;
  PyObject* module = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__module__");
  const bool jax = module && PyUnicode_Check(module) && PyUnicode_CompareWithASCIIString(module, "jaxlib._jax") == 0;
  Py_XDECREF(module);
  PyErr_Clear();
  return jax;
}

// jaxlib's ArrayImpl, once describe_type has met it.
inline PyTypeObject*& jax_array_type() noexcept {
  static PyTypeObject* type = nullptr;
  return type;
}

// A JAX array's interface dict (a new reference) when the array is ready; nullptr with no error
// set when it is pending, deleted, or has no interface (__dlpack__ serves then, and says what is
// wrong, if anything).
inline PyObject* jax_ready_interface(PyObject* obj) noexcept {
  static PyObject* const is_ready = interned("is_ready");
  PyObject* ready = is_ready ? PyObject_CallMethodNoArgs(obj, is_ready) : nullptr;
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
// GPU cannot read, given what runtime::query_pointer said of it (`cuda_says`): CUDA does not know
// it. Without a usable device nothing could be asked, and no GPU reads it either.
inline bool jax_pageable(const void* p, memory_kind cuda_says) noexcept {
  return p && cuda_says == memory_kind::host && runtime::is_available();
}

// The same question for the typed fast path, which has no answer from query_pointer to hand: the
// driver is asked whether it knows the pointer (runtime::cuda_knows_pointer, ~60 ns).
inline bool jax_pageable(const void* p) noexcept {
  return p && runtime::is_available() && !runtime::cuda_knows_pointer(p);
}

inline bool type_has(PyTypeObject* type, const char* attr) noexcept {
  int has = PyObject_HasAttrString(reinterpret_cast<PyObject*>(type), attr);
  return has == 1;
}

inline type_entry describe_type(PyTypeObject* type, const arrayport_python_api_t* api) noexcept {
  type_entry e;
  e.type = type;
  if (api && type == api->array_type) {
    e.protocols = protocol_array;
    return e;
  }
  if ((e.exchange = find_exchange_api(type))) e.protocols |= protocol_exchange;
  if (type->tp_as_buffer && type->tp_as_buffer->bf_getbuffer) e.protocols |= protocol_buffer;
  e.numpy = (e.protocols & protocol_buffer) && is_numpy_array_type(type);
  if (e.numpy && std::strcmp(type->tp_name, "numpy.ndarray") == 0) numpy_exact_type() = type;
  if (cupy().state >= 0 && is_cupy_array_type(type)) e.protocols |= protocol_cupy;
  if (type_has(type, "__dlpack__")) e.protocols |= protocol_dlpack;
  if (type_has(type, "__cuda_array_interface__")) e.protocols |= protocol_cai;
  e.jax = (e.protocols & protocol_cai) && (e.protocols & protocol_dlpack) && is_jax_array_type(type);
  if (e.jax && !jax_array_type()) {
    Py_INCREF(type);  // kept for good, as the type cache keeps its types
    jax_array_type() = type;
  }
  return e;
}

// A small cache, per extension module, of what each producer type offers. Types are few (one per
// array library); past the capacity, lookups still work, uncached.
struct type_cache {
  static constexpr int capacity = 32;
  type_entry entries[capacity];
  int used = 0;
};

inline type_cache& types() noexcept {
  static type_cache cache;
  return cache;
}

inline type_entry lookup_type(PyTypeObject* type) {
  type_cache& c = types();
  for (int i = 0; i < c.used; ++i)
    if (c.entries[i].type == type) return c.entries[i];
  // Held from here: describing the type runs its metaclass's code, which may drop the type.
  Py_INCREF(type);
  const arrayport_python_api_t* api = loaded_api();
  type_entry e = describe_type(type, api);
  // Array is only recognisable once _core is loaded; a type seen before that is never an Array.
  // Checked again: describing may have run a lookup (through Python code) that cached it.
  bool cached = false;
  for (int i = 0; i < c.used && !cached; ++i) cached = c.entries[i].type == type;
  if (!cached && c.used < type_cache::capacity)
    c.entries[c.used++] = e;
  else
    Py_DECREF(type);  // a cached type stays referenced from the cache: never freed
  return e;
}

// Records what a type's __dlpack__ did: where its tensor was (`cuda` 1 / 0; -1 leaves it) and
// whether it takes max_version.
inline void remember_dlpack(PyTypeObject* type, int cuda, bool legacy) noexcept {
  type_cache& c = types();
  for (int i = 0; i < c.used; ++i)
    if (c.entries[i].type == type) {
      if (cuda >= 0) c.entries[i].dlpack_cuda = static_cast<std::int8_t>(cuda);
      c.entries[i].dlpack_legacy = legacy;
    }
}

// Stops offering `protocol` for `type`: what a type advertises but refuses (CuPy's buffer protocol
// for memory the CPU cannot reach) is not tried again.
inline void forget_protocol(PyTypeObject* type, std::uint32_t protocol) noexcept {
  type_cache& c = types();
  for (int i = 0; i < c.used; ++i)
    if (c.entries[i].type == type) c.entries[i].protocols &= ~protocol;
}

// ---- messages ------------------------------------------------------------------------------

inline std::string type_name(PyObject* obj) {
  // Held: a metaclass's __module__ may run code that reassigns obj.__class__.
  const py_ref held = py_ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(obj)));
  auto* t = reinterpret_cast<PyTypeObject*>(held.get());
  PyObject* module = PyObject_GetAttrString(reinterpret_cast<PyObject*>(t), "__module__");
  std::string name;
  if (module && PyUnicode_Check(module)) {
    const char* m = PyUnicode_AsUTF8(module);
    if (m && std::strcmp(m, "builtins") != 0) name = std::string(m) + ".";
  }
  Py_XDECREF(module);
  PyErr_Clear();
  const char* dot = std::strrchr(t->tp_name, '.');
  return name + (dot && !name.empty() ? dot + 1 : t->tp_name);
}

inline std::string shape_string(const std::int64_t* shape, int ndim) {
  std::string s = "(";
  for (int i = 0; i < ndim; ++i) {
    s += shape[i] < 0 ? std::string("*") : std::to_string(shape[i]);
    if (ndim == 1 || i + 1 < ndim) s += ndim == 1 ? "," : ", ";
  }
  return s + ")";
}

[[noreturn]] inline void fail_type(const constraints& c, PyObject* obj, const std::string& msg) {
  throw type_error(std::string(c.name) + ": " + msg + " (from " + type_name(obj) + ")");
}
[[noreturn]] inline void fail_value(const constraints& c, PyObject* obj, const std::string& msg) {
  throw value_error(std::string(c.name) + ": " + msg + " (from " + type_name(obj) + ")");
}
[[noreturn]] inline void fail_buffer(const constraints& c, PyObject* obj, const std::string& msg) {
  throw buffer_error(std::string(c.name) + ": " + msg + " (from " + type_name(obj) + ")");
}
// A producer's call (`what`) failed: its error stands; one it failed to set is a SystemError.
[[noreturn]] inline void producer_failed(const constraints& c, PyObject* obj, const char* what) {
  ensure_error_set(c.name, obj, what);
  throw error_already_set();
}

// ---- checks shared by every protocol ---------------------------------------------------------

// The layout arithmetic is arrayport/layout.hpp's; these name the argument and the producer.

[[noreturn]] inline void fail_layout(const constraints& c, PyObject* obj, const layout_info& l,
                                     const std::int64_t* shape, const std::int64_t* strides,
                                     int ndim, std::int64_t itemsize) {
  throw value_error(layout_message(c.name, l, shape, strides, ndim, itemsize) + " (from " +
                    type_name(obj) + ")");
}

// Compact row-major strides (in elements) for a producer that gave none; refused when one that
// is needed does not fit in int64 bytes (nbytes does not either) and the array is not empty.
inline void require_compact_strides(const constraints& c, PyObject* obj, const std::int64_t* shape,
                                    int ndim, std::int64_t* strides, std::int64_t itemsize) {
  if (!compact_strides(shape, ndim, strides, itemsize))
    fail_layout(c, obj, measure_layout(shape, nullptr, ndim, itemsize), shape, nullptr, ndim,
                itemsize);
}

// Shape and strides a producer handed over: an addressable layout (layout.hpp: a rank arrayport
// supports, non-negative extents, count, nbytes, byte strides and span in int64), data present
// when there are elements, and the bytes reached inside the address space.
inline void check_geometry(const constraints& c, PyObject* obj, const arrayport_view_t& v) {
  const layout_info l = measure_layout(v);
  if (!l.ok())
    fail_layout(c, obj, l, v.shape, v.strides, v.ndim,
                static_cast<std::int64_t>(arrayport::dtype::from_c(v.dtype).itemsize()));
  if (l.count == 0) return;
  if (!v.data) fail_value(c, obj, "data pointer is NULL but the array has elements");
  if (!fits_address_space(v.data, l))
    fail_value(c, obj, "shape " + shape_string(v.shape, v.ndim) + " at address " +
                           std::to_string(reinterpret_cast<std::uintptr_t>(v.data)) +
                           " reaches bytes " + std::to_string(l.lo) + " to " +
                           std::to_string(l.hi) + " from it: past the ends of the address space");
}

inline void check_constraints(const constraints& c, PyObject* obj, arrayport_view_t& v) {
  if (c.n_dtypes) {
    const arrayport::dtype got = arrayport::dtype::from_c(v.dtype);
    bool ok = false;
    for (std::size_t i = 0; i < c.n_dtypes && !ok; ++i) ok = c.dtypes[i] == got;
    if (!ok) {
      std::string expected;
      for (std::size_t i = 0; i < c.n_dtypes; ++i)
        expected += (i ? (i + 1 == c.n_dtypes ? " or " : ", ") : "") +
                    std::string(c.dtypes[i].name());
      fail_type(c, obj, "expected dtype " + expected + ", got " + arrayport::detail::describe(got));
    }
  }
  if (c.ndim >= 0 && v.ndim != c.ndim)
    fail_type(c, obj, "expected a " + std::to_string(c.ndim) + "-dimensional array, got " +
                          std::to_string(v.ndim) + " dimensions (shape " +
                          shape_string(v.shape, v.ndim) + ")");
  if (c.shape && c.ndim >= 0) {
    for (int i = 0; i < c.ndim; ++i)
      if (c.shape[i] >= 0 && c.shape[i] != v.shape[i])
        fail_value(c, obj, "expected shape " + shape_string(c.shape, c.ndim) + ", got " +
                               shape_string(v.shape, v.ndim));
  }
  if (c.layout == order::c && !is_contiguous(v.shape, v.strides, v.ndim, true))
    fail_value(c, obj, "expected a C-contiguous array, got strides that are not");
  if (c.layout == order::f && !is_contiguous(v.shape, v.strides, v.ndim, false))
    fail_value(c, obj, "expected a Fortran-contiguous array, got strides that are not");
  if (c.where != reach::any) {
    auto kind = static_cast<memory_kind>(v.memory_kind);
    const bool host_needed = c.where == reach::host;
    bool ok = host_needed ? is_host_accessible(kind) : is_device_accessible(kind);
    if (!ok && kind == memory_kind::host && v.data) {
      // Host memory from the buffer protocol or DLPack kCPU may really be pinned or managed
      // memory (a NumPy view of an arrayport array): ask CUDA before refusing it.
      const runtime::pointer_info info = runtime::query_pointer(v.data);
      if (info.kind != memory_kind::host) {
        v.memory_kind = static_cast<std::uint32_t>(info.kind);
        v.device = dlpack_device(info.kind, info.device < 0 ? 0 : info.device);
        ok = true;
      }
    }
    if (!ok)
      fail_value(c, obj, std::string("expected memory reachable from the ") +
                             (host_needed ? "host" : "device") + ", got " +
                             std::string(to_string(kind)) + " memory");
  }
  if (c.writable && (v.flags & ARRAYPORT_VIEW_READONLY))
    fail_buffer(c, obj, "expected a writable array, got a read-only one");
}

// ---- DLPack tensors (from __dlpack__ capsules and the exchange API) --------------------------

// The memory kind of a DLPack device type arrayport takes; false for the others.
inline bool dl_device_kind(arrayport_device_t d, memory_kind& out) noexcept {
  switch (d.device_type) {
    case ARRAYPORT_DEVICE_CPU: out = memory_kind::host; return true;
    case ARRAYPORT_DEVICE_CUDA: out = memory_kind::device; return true;
    case ARRAYPORT_DEVICE_CUDA_HOST: out = memory_kind::pinned; return true;
    case ARRAYPORT_DEVICE_CUDA_MANAGED: out = memory_kind::managed; return true;
  }
  return false;
}

inline memory_kind kind_of_dl_device(const constraints& c, PyObject* obj, arrayport_device_t d) {
  memory_kind kind;
  if (dl_device_kind(d, kind)) return kind;
  fail_value(c, obj, "unsupported DLPack device type " + std::to_string(d.device_type) +
                         ": expected kDLCPU (1), kDLCUDA (2), kDLCUDAHost (3) or kDLCUDAManaged (13)");
}

inline void check_dl_dtype(const constraints& c, PyObject* obj, arrayport_dtype_t dt) {
  const arrayport::dtype d = arrayport::dtype::from_c(dt);
  if (!arrayport::is_supported(d))
    fail_type(c, obj, "unsupported DLPack dtype " + arrayport::detail::describe(d) +
                          ": expected one of " + std::string(arrayport::detail::supported_dtype_names));
}

// DLPack stream argument for a consumer stream (the protocol spells the legacy default stream 1).
inline PyObject* dlpack_stream_arg(stream_handle s) noexcept {
  return s ? PyLong_FromVoidPtr(s) : PyLong_FromLong(1);
}

}  // namespace detail

/// Acquires a view of `obj`. Throws type_error / value_error / buffer_error for arrays that do not
/// meet `c` (or that no protocol describes), error_already_set when the producer raised.
acquired acquire(PyObject* obj, const constraints& c = {}, const acquire_options& o = {});

// ---------------------------------------------------------------------------------------------
// Implementation

inline void acquired::release() noexcept {
  // Nothing held (a default-constructed or moved-from holder): its view is already reset.
  if (m_source == source::none && !m_owner && !m_heap) return;
  switch (m_source) {
    case source::buffer:
      PyBuffer_Release(&m_buffer);
      break;
    case source::dlpack_legacy: {
      auto* t = static_cast<arrayport_dl_managed_tensor_t*>(m_managed);
      if (t && t->deleter) t->deleter(t);
      break;
    }
    case source::dlpack_versioned: {
      auto* t = static_cast<arrayport_dl_managed_tensor_versioned_t*>(m_managed);
      if (t && t->deleter) t->deleter(t);
      break;
    }
    case source::reference:
    case source::none:
      break;
  }
  m_managed = nullptr;
  m_source = source::none;
  Py_CLEAR(m_owner);
  std::free(m_heap);
  m_heap = nullptr;
  reset_view();
}

struct detail_access {
  // Fills the view from a DLTensor (strides may be NULL: compact row-major; byte_offset applied).
  static void from_dl_tensor(acquired& a, const constraints& c, PyObject* obj,
                             const arrayport_dl_tensor_t& t, bool readonly) {
    if (t.ndim < 0 || t.ndim > ARRAYPORT_MAX_NDIM)
      detail::fail_value(c, obj, "expected at most " + std::to_string(ARRAYPORT_MAX_NDIM) +
                                     " dimensions, got " + std::to_string(t.ndim));
    if (t.ndim > 0 && !t.shape) detail::fail_value(c, obj, "DLPack tensor has a NULL shape");
    detail::check_dl_dtype(c, obj, t.dtype);
    const memory_kind kind = detail::kind_of_dl_device(c, obj, t.device);
    std::int64_t* ext = a.extents(t.ndim);
    for (int i = 0; i < t.ndim; ++i) {
      ext[i] = t.shape[i];
      if (t.strides) ext[t.ndim + i] = t.strides[i];
    }
    if (!t.strides)
      detail::require_compact_strides(
          c, obj, ext, t.ndim, ext + t.ndim,
          static_cast<std::int64_t>(arrayport::dtype::from_c(t.dtype).itemsize()));
    // In integers: a byte_offset that wraps the address space is an error, not a pointer.
    std::uintptr_t address = 0;
    if (t.data && __builtin_add_overflow(reinterpret_cast<std::uintptr_t>(t.data), t.byte_offset, &address))
      detail::fail_value(c, obj, "DLPack byte_offset " + std::to_string(t.byte_offset) +
                                     " takes the data pointer past the end of the address space");
    arrayport_view_t& v = a.m_view;
    v.data = reinterpret_cast<void*>(address);
    v.ndim = t.ndim;
    v.shape = ext;
    v.strides = ext + t.ndim;
    v.dtype = t.dtype;
    v.memory_kind = static_cast<std::uint32_t>(kind);
    v.device = dlpack_device(kind, t.device.device_id);
    v.flags = readonly ? ARRAYPORT_VIEW_READONLY : 0u;
    v.owner = obj;
  }

  static void from_array(acquired& a, PyObject* obj, const arrayport_python_api_t& api) {
    a.m_view = *reinterpret_cast<const arrayport_view_t*>(reinterpret_cast<const char*>(obj) +
                                                           api.array_view_offset);
    a.m_view.owner = obj;
    a.m_source = acquired::source::reference;
  }

  // A NumPy array's view from its struct; false (nothing taken) for what only the buffer protocol
  // describes (see numpy_array_fields).
  static bool from_numpy(acquired& a, const constraints& c, PyObject* obj) {
    const auto* n = reinterpret_cast<const detail::numpy_array_fields*>(obj);
    const auto* d = reinterpret_cast<const detail::numpy_descr_head*>(n->descr);
    arrayport::dtype dt;
    if (!d || d->byteorder == '>' || n->nd < 0 || n->nd > ARRAYPORT_MAX_NDIM ||
        !detail::numpy_dtype(d->type_num, dt))
      return false;
    const auto itemsize = static_cast<Py_ssize_t>(dt.itemsize());
    for (int i = 0; i < n->nd; ++i)
      if (n->strides[i] % itemsize != 0) return false;
    const bool readonly = (n->flags & detail::numpy_writeable) == 0;
    if (readonly && c.writable)
      detail::fail_buffer(c, obj, "expected a writable array, got a read-only one");
    std::int64_t* ext = a.extents(n->nd);
    for (int i = 0; i < n->nd; ++i) {
      ext[i] = n->dimensions[i];
      ext[n->nd + i] = n->strides[i] / itemsize;
    }
    arrayport_view_t& v = a.m_view;
    v.data = n->data;
    v.ndim = n->nd;
    v.shape = ext;
    v.strides = ext + n->nd;
    v.dtype = dt.to_c();
    v.memory_kind = static_cast<std::uint32_t>(memory_kind::host);
    v.device = {ARRAYPORT_DEVICE_CPU, 0};
    v.flags = readonly ? ARRAYPORT_VIEW_READONLY : 0u;
    v.owner = obj;
    a.m_source = acquired::source::reference;  // the held producer keeps data and struct alive
    return true;
  }

  // A CuPy array's view from its struct, ordered as __dlpack__(stream=consumer) would be; false
  // (nothing taken, no error set) for what the struct path does not describe: a layout that did
  // not check out, a dtype arrayport has no name for, strides that are not whole items.
  template <class Consumer>
  static bool from_cupy(acquired& a, PyObject* obj, Consumer consumer, bool sync) {
    if (!detail::cupy_layout_checked(obj)) return false;
    arrayport::dtype dt;
    const detail::cupy_array_fields* f = detail::cupy_fields(obj, dt);
    const Py_ssize_t nd = f ? f->shape.end - f->shape.begin : 0;
    if (!f || nd > ARRAYPORT_MAX_NDIM) return false;
    const auto itemsize = static_cast<Py_ssize_t>(dt.itemsize());
    for (Py_ssize_t i = 0; i < nd; ++i)
      if (f->strides.begin[i] % itemsize != 0) return false;
    const auto* p = reinterpret_cast<const detail::cupy_pointer_fields*>(f->data);
    stream_handle producer = nullptr;
    if (sync && !detail::cupy_current_stream(producer)) return false;
    std::int64_t* ext = a.extents(static_cast<int>(nd));
    for (Py_ssize_t i = 0; i < nd; ++i) {
      ext[i] = f->shape.begin[i];
      ext[nd + i] = f->strides.begin[i] / itemsize;
    }
    arrayport_view_t& v = a.m_view;
    v.data = reinterpret_cast<void*>(p->ptr);
    v.ndim = static_cast<std::int32_t>(nd);
    v.shape = ext;
    v.strides = ext + nd;
    v.dtype = dt.to_c();
    v.flags = 0;  // CuPy arrays are always writable
    v.owner = obj;
    a.m_source = acquired::source::reference;  // the held array keeps its MemoryPointer alive
    // Device or managed memory (or pinned host memory that CuPy wraps): CUDA says which, as
    // CuPy's __dlpack_device__ asks it too.
    const runtime::pointer_info info = runtime::query_pointer(v.data);
    const memory_kind kind = info.kind == memory_kind::host ? memory_kind::device : info.kind;
    const int device = info.device >= 0 ? info.device : p->device_id;
    v.memory_kind = static_cast<std::uint32_t>(kind);
    v.device = dlpack_device(kind, device);
    if (sync) runtime::order_streams(producer, consumer(), device);
    return true;
  }

  static void from_buffer(acquired& a, const constraints& c, PyObject* obj) {
    int flags = PyBUF_RECORDS_RO | (c.writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &a.m_buffer, flags) != 0) {
      if (c.writable) {
        // Read-only data refuses PyBUF_WRITABLE in the exporter's own words and type (NumPy:
        // ValueError, memoryview: BufferError): say it ours, the same for every producer.
        PyObject *type, *value, *trace;
        PyErr_Fetch(&type, &value, &trace);
        if (PyObject_GetBuffer(obj, &a.m_buffer, PyBUF_RECORDS_RO) == 0) {
          PyBuffer_Release(&a.m_buffer);
          PyErr_Clear();  // one the exporter set with its buffer: the refusal below says it all
          Py_XDECREF(type);
          Py_XDECREF(value);
          Py_XDECREF(trace);
          detail::fail_buffer(c, obj, "expected a writable array, got a read-only one");
        }
        PyErr_Clear();
        PyErr_Restore(type, value, trace);
      }
      detail::producer_failed(c, obj, "the buffer export (bf_getbuffer)");
    }
    a.m_source = acquired::source::buffer;
    if (PyErr_Occurred()) {
      // Exported, and failed too: neither is to be trusted (release() gives the buffer back).
      PyObject *type, *value, *trace;
      PyErr_Fetch(&type, &value, &trace);
      const std::string why = type && PyType_Check(type)
                                  ? std::string(reinterpret_cast<PyTypeObject*>(type)->tp_name)
                                  : std::string("an exception");
      Py_XDECREF(type);
      Py_XDECREF(value);
      Py_XDECREF(trace);
      detail::fail_buffer(c, obj, "the exporter returned a buffer with " + why +
                                      " set: expected a buffer or an error, not both");
    }
    const Py_buffer& b = a.m_buffer;
    arrayport::dtype dt;
    try {
      dt = parse_buffer_format(b.format, static_cast<std::size_t>(b.itemsize));
    } catch (const type_error& e) {
      detail::fail_type(c, obj, e.what());
    } catch (const value_error& e) {
      detail::fail_value(c, obj, e.what());
    }
    if (b.ndim < 0 || b.ndim > ARRAYPORT_MAX_NDIM)
      detail::fail_value(c, obj, "expected at most " + std::to_string(ARRAYPORT_MAX_NDIM) +
                                     " dimensions, got " + std::to_string(b.ndim));
    // PEP 3118 contracts that the view's bounds rest on: suboffsets (PIL-style indirection) are
    // only for consumers that asked for them, which we do not; a NULL shape describes one axis of
    // len bytes; a buffer without strides is contiguous, and len is product(shape) * itemsize.
    if (b.suboffsets)
      detail::fail_buffer(c, obj, "the exporter returned suboffsets (an indirect buffer) to a "
                                  "request without PyBUF_INDIRECT: expected a strided buffer");
    if (!b.shape && b.ndim > 1)
      detail::fail_buffer(c, obj, "the exporter returned no shape for " + std::to_string(b.ndim) +
                                      " dimensions: expected a shape (PyBUF_ND was requested)");
    if (!b.shape && b.ndim == 1 && (b.len < 0 || b.len % b.itemsize != 0))
      detail::fail_buffer(c, obj, "buffer len " + std::to_string(b.len) +
                                      " is not a whole number of items of " +
                                      std::to_string(b.itemsize) + " bytes");
    std::int64_t* ext = a.extents(b.ndim);
    for (int i = b.ndim; i-- > 0;) {
      ext[i] = b.shape ? b.shape[i] : b.len / b.itemsize;
      if (b.strides) {
        if (b.strides[i] % b.itemsize != 0)
          detail::fail_value(c, obj, "stride " + std::to_string(b.strides[i]) + " of axis " +
                                         std::to_string(i) + " is not a multiple of the itemsize " +
                                         std::to_string(b.itemsize));
        ext[b.ndim + i] = b.strides[i] / b.itemsize;
      }
    }
    if (!b.strides) {
      // Contiguous: the memory is exactly len bytes, so the shape must account for all of it.
      // (Negative extents are check_geometry's to report.)
      std::int64_t bytes = 0;
      const layout_status s = byte_count(ext, b.ndim, static_cast<std::int64_t>(b.itemsize), bytes);
      if (s != layout_status::negative_extent && (s != layout_status::ok || bytes != b.len))
        detail::fail_buffer(c, obj, "shape " + detail::shape_string(ext, b.ndim) + " of " +
                                        std::to_string(b.itemsize) + "-byte items needs " +
                                        (s != layout_status::ok ? std::string("more than 2^63-1")
                                                                : std::to_string(bytes)) +
                                        " bytes, but the buffer has len " + std::to_string(b.len));
    }
    if (!b.strides)
      detail::require_compact_strides(c, obj, ext, b.ndim, ext + b.ndim,
                                      static_cast<std::int64_t>(b.itemsize));
    arrayport_view_t& v = a.m_view;
    v.data = b.buf;
    v.ndim = b.ndim;
    v.shape = ext;
    v.strides = ext + b.ndim;
    v.dtype = dt.to_c();
    v.memory_kind = static_cast<std::uint32_t>(memory_kind::host);
    v.device = {ARRAYPORT_DEVICE_CPU, 0};
    v.flags = b.readonly ? ARRAYPORT_VIEW_READONLY : 0u;
    v.owner = obj;
  }

  // One call of obj.__dlpack__(stream=...): versioned first, legacy on TypeError (a producer from
  // before DLPack 1.0 has no max_version), and legacy at once for a type known to need it. A new
  // reference, or nullptr with the producer's error set.
  static PyObject* call_dlpack(PyObject* obj, PyObject* stream_arg, bool& legacy_only) {
    static PyObject* const dlpack_name = detail::interned("__dlpack__");
    static PyObject* const kwnames_versioned = Py_BuildValue("(ss)", "stream", "max_version");
    static PyObject* const kwnames_legacy = Py_BuildValue("(s)", "stream");
    static PyObject* const max_version =
        Py_BuildValue("(ii)", ARRAYPORT_DLPACK_MAJOR_VERSION, ARRAYPORT_DLPACK_MINOR_VERSION);
    if (!dlpack_name || !kwnames_versioned || !kwnames_legacy || !max_version) return nullptr;
    PyObject* args[3] = {obj, stream_arg, max_version};
    const std::size_t nargs = 1 | PY_VECTORCALL_ARGUMENTS_OFFSET;
    if (!legacy_only) {
      PyObject* capsule = PyObject_VectorcallMethod(dlpack_name, args, nargs, kwnames_versioned);
      if (capsule || !PyErr_ExceptionMatches(PyExc_TypeError)) return capsule;
      PyErr_Clear();
      capsule = PyObject_VectorcallMethod(dlpack_name, args, nargs, kwnames_legacy);
      legacy_only = capsule != nullptr;  // a TypeError of another cause teaches nothing
      return capsule;
    }
    return PyObject_VectorcallMethod(dlpack_name, args, nargs, kwnames_legacy);
  }

  // Takes the tensor out of `capsule` (a new reference, consumed): renames the capsule so that its
  // destructor leaves the tensor to `a`, whose release() calls the deleter exactly once.
  static const arrayport_dl_tensor_t& take_capsule(acquired& a, const constraints& c, PyObject* obj,
                                                   PyObject* capsule, bool& readonly) {
    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
      auto* t = static_cast<arrayport_dl_managed_tensor_versioned_t*>(
          PyCapsule_GetPointer(capsule, "dltensor_versioned"));
      PyCapsule_SetName(capsule, "used_dltensor_versioned");
      Py_DECREF(capsule);
      a.m_managed = t;
      a.m_source = acquired::source::dlpack_versioned;
      if (!t) detail::fail_value(c, obj, "__dlpack__ returned a capsule holding NULL");
      if (t->version.major != ARRAYPORT_DLPACK_MAJOR_VERSION)
        detail::fail_buffer(c, obj, "unsupported DLPack version " + std::to_string(t->version.major) +
                                        "." + std::to_string(t->version.minor) + ": expected 1.x");
      readonly = (t->flags & ARRAYPORT_DLPACK_FLAG_READ_ONLY) != 0;
      return t->dl_tensor;
    }
    if (PyCapsule_IsValid(capsule, "dltensor")) {
      auto* t = static_cast<arrayport_dl_managed_tensor_t*>(PyCapsule_GetPointer(capsule, "dltensor"));
      PyCapsule_SetName(capsule, "used_dltensor");
      Py_DECREF(capsule);
      a.m_managed = t;
      a.m_source = acquired::source::dlpack_legacy;
      if (!t) detail::fail_value(c, obj, "__dlpack__ returned a capsule holding NULL");
      readonly = false;
      return t->dl_tensor;
    }
    const char* name = PyCapsule_CheckExact(capsule) ? PyCapsule_GetName(capsule) : nullptr;
    std::string got = name ? "a capsule named '" + std::string(name) + "'"
                           : "a " + detail::type_name(capsule);
    PyErr_Clear();
    Py_DECREF(capsule);
    detail::fail_value(c, obj, "__dlpack__ returned " + got +
                                   ": expected a capsule named 'dltensor_versioned' or 'dltensor'");
  }

  // Calls the deleter of a tensor taken by take_capsule and forgets it (the producer stays held).
  static void drop_tensor(acquired& a) noexcept {
    PyObject* owner = std::exchange(a.m_owner, nullptr);
    a.release();
    a.m_owner = owner;
    a.m_source = acquired::source::reference;
  }

  // `type` is the producer type's cache entry. The stream argument depends on where the data is:
  // the consumer's stream for CUDA memory, None for host memory. __dlpack_device__ would say, at the
  // price of a Python call (300 ns for CuPy, 2 us for JAX), so it is asked only the first time a
  // type is seen: then the type's last answer is assumed and checked on the tensor that comes back.
  static void from_dlpack(acquired& a, const constraints& c, PyObject* obj,
                          const detail::type_entry& type, stream_handle consumer, bool sync) {
    static PyObject* const device_name = detail::interned("__dlpack_device__");
    if (!device_name) {
      if (!PyErr_Occurred()) PyErr_NoMemory();  // interning failed (once, and is kept)
      throw error_already_set();
    }
    bool legacy_only = type.dlpack_legacy;
    bool on_cuda = false;  // whether to pass the consumer's stream
    bool asked = false;
    if (sync && type.dlpack_cuda >= 0) {
      on_cuda = type.dlpack_cuda == 1;
    } else if (sync) {
      PyObject* args[1] = {obj};
      PyObject* dev =
          PyObject_VectorcallMethod(device_name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
      if (!dev) detail::producer_failed(c, obj, "__dlpack_device__");
      long kind = PyTuple_Check(dev) && PyTuple_GET_SIZE(dev) == 2
                      ? PyLong_AsLong(PyTuple_GET_ITEM(dev, 0)) : -1;
      Py_DECREF(dev);
      if (kind == -1 && PyErr_Occurred()) PyErr_Clear();
      on_cuda = kind == ARRAYPORT_DEVICE_CUDA || kind == ARRAYPORT_DEVICE_CUDA_MANAGED;
      asked = true;
    }
    auto stream_arg = [&](bool cuda) -> PyObject* {
      PyObject* s = cuda ? detail::dlpack_stream_arg(consumer) : (Py_INCREF(Py_None), Py_None);
      if (!s) throw error_already_set();
      return s;
    };
    auto call = [&](bool cuda) -> PyObject* {
      PyObject* s = stream_arg(cuda);
      PyObject* capsule = call_dlpack(obj, s, legacy_only);
      Py_DECREF(s);
      return capsule;
    };
    PyObject* capsule = call(on_cuda);
    if (!capsule && on_cuda && !asked &&
        (PyErr_ExceptionMatches(PyExc_BufferError) || PyErr_ExceptionMatches(PyExc_ValueError) ||
         PyErr_ExceptionMatches(PyExc_TypeError))) {
      // An assumed CUDA device may be stale: host data refuses a stream (NumPy raises).
      PyErr_Clear();
      on_cuda = false;
      capsule = call(false);
    }
    if (!capsule) detail::producer_failed(c, obj, "__dlpack__");
    if (legacy_only != type.dlpack_legacy) detail::remember_dlpack(Py_TYPE(obj), -1, legacy_only);
    bool readonly = false;
    const arrayport_dl_tensor_t* t = &take_capsule(a, c, obj, capsule, readonly);
    const bool cuda = t->device.device_type == ARRAYPORT_DEVICE_CUDA ||
                      t->device.device_type == ARRAYPORT_DEVICE_CUDA_MANAGED;
    if (sync && (cuda ? 1 : 0) != type.dlpack_cuda) detail::remember_dlpack(Py_TYPE(obj), cuda, legacy_only);
    if (sync && cuda && !on_cuda) {
      // CUDA data exported without the consumer's stream is not ordered for it: ask again, with it.
      drop_tensor(a);
      capsule = call(true);
      if (!capsule) detail::producer_failed(c, obj, "__dlpack__");
      t = &take_capsule(a, c, obj, capsule, readonly);
    }
    from_dl_tensor(a, c, obj, *t, readonly);
  }

  static void from_exchange(acquired& a, const constraints& c, PyObject* obj,
                            const detail::dl_exchange_api& api, stream_handle consumer, bool sync,
                            bool call_scoped) {
    if (call_scoped && api.dltensor_from_py_object_no_sync) {
      // Non-owning: the producer keeps shape/strides/data alive while the object lives and is not
      // resized; we hold the object and copy the extents.
      arrayport_dl_tensor_t t{};
      if (api.dltensor_from_py_object_no_sync(obj, &t) != 0)
        detail::producer_failed(c, obj, "the exchange API's dltensor_from_py_object_no_sync");
      a.m_source = acquired::source::reference;
      from_dl_tensor(a, c, obj, t, false);
    } else {
      arrayport_dl_managed_tensor_versioned_t* t = nullptr;
      if (api.managed_tensor_from_py_object_no_sync(obj, &t) != 0)
        detail::producer_failed(c, obj, "the exchange API's managed_tensor_from_py_object_no_sync");
      a.m_managed = t;
      a.m_source = acquired::source::dlpack_versioned;
      if (!t) detail::fail_value(c, obj, "the DLPack exchange API returned NULL");
      if (t->version.major != ARRAYPORT_DLPACK_MAJOR_VERSION)
        detail::fail_buffer(c, obj, "unsupported DLPack version " + std::to_string(t->version.major) +
                                        "." + std::to_string(t->version.minor) + ": expected 1.x");
      from_dl_tensor(a, c, obj, t->dl_tensor, (t->flags & ARRAYPORT_DLPACK_FLAG_READ_ONLY) != 0);
    }
    const arrayport_view_t& v = a.m_view;
    const int device_type = v.device.device_type;
    if (sync && (device_type == ARRAYPORT_DEVICE_CUDA || device_type == ARRAYPORT_DEVICE_CUDA_MANAGED)) {
      // The exchange API does no synchronisation: order the producer's current stream before ours.
      void* producer = nullptr;
      if (api.current_work_stream(ARRAYPORT_DEVICE_CUDA, v.device.device_id, &producer) != 0)
        detail::producer_failed(c, obj, "the exchange API's current_work_stream");
      runtime::order_streams(producer, consumer, v.device.device_id);
    }
  }

  static void from_cai(acquired& a, const constraints& c, PyObject* obj, stream_handle consumer,
                       bool sync) {
    PyObject* name = detail::cai_attribute();
    PyObject* d = name ? PyObject_GetAttr(obj, name) : nullptr;
    if (!d) detail::producer_failed(c, obj, "__cuda_array_interface__");
    from_cai_dict(a, c, obj, d, consumer, sync);
  }

  // A JAX array that is ready, for a read-only call-scoped view, through its interface (see "JAX
  // arrays"). false, with no error set and `a` untouched, when it is not ready or has no
  // interface: __dlpack__ serves then.
  static bool from_jax_ready(acquired& a, const constraints& c, PyObject* obj) {
    PyObject* d = detail::jax_ready_interface(obj);
    if (!d) return false;
    const memory_kind cuda_says = from_cai_dict(a, c, obj, d, nullptr, false);  // ready: no ordering
    if (detail::jax_pageable(a.m_view.data, cuda_says)) {
      drop_tensor(a);  // from_cai_dict took it for device memory: __dlpack__ says where it is
      return false;
    }
    return true;
  }

  // Fills the view from an interface dict `d` (a new reference, released here). Returns what CUDA
  // said of the memory (host: CUDA does not know it, and the view takes it for device memory).
  static memory_kind from_cai_dict(acquired& a, const constraints& c, PyObject* obj, PyObject* d,
                            stream_handle consumer, bool sync) {
    const detail::py_ref hold = detail::py_ref::steal(d);
    if (!PyDict_Check(d))
      detail::fail_value(c, obj, "__cuda_array_interface__ is a " + detail::type_name(d) +
                                     ", expected a dict");
    // Every value is held from its lookup on: the lookups that follow (a key's __eq__), the
    // readonly flag's __bool__ and the messages' type names run Python code that may change d.
    auto item = [&](detail::cai_key key, bool required) -> detail::py_ref {
      PyObject* k = detail::cai_key_object(key);
      if (!k) {
        if (!PyErr_Occurred()) PyErr_NoMemory();  // interning failed (once, and is kept)
        throw error_already_set();
      }
      detail::py_ref v = detail::py_ref::borrow(PyDict_GetItemWithError(d, k));
      if (!v && PyErr_Occurred()) throw error_already_set();
      if (!v && required)
        detail::fail_value(c, obj, std::string("__cuda_array_interface__ has no '") +
                                       detail::cai_names[key] + "' key");
      return v;
    };
    auto as_int = [&](PyObject* v, const char* what) -> long long {
      if (!PyLong_Check(v))
        detail::fail_value(c, obj, std::string("__cuda_array_interface__['") + what +
                                       "'] holds a " + detail::type_name(v) + ", expected an int");
      long long x = PyLong_AsLongLong(v);
      if (x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        detail::fail_value(c, obj, std::string("__cuda_array_interface__['") + what +
                                       "'] does not fit in 64 bits");
      }
      return x;
    };
    const detail::py_ref version = item(detail::cai_version, true);
    const long long ver = as_int(version.get(), "version");
    if (ver < 0 || ver > 3)
      detail::fail_value(c, obj, "unsupported __cuda_array_interface__ version " +
                                     std::to_string(ver) + ": expected 0 to 3");
    const detail::py_ref mask = item(detail::cai_mask, false);
    if (mask && mask.get() != Py_None)
      detail::fail_value(c, obj, "masked arrays are not supported: expected "
                                 "__cuda_array_interface__['mask'] to be None");
    const detail::py_ref shape_ref = item(detail::cai_shape, true);
    PyObject* shape = shape_ref.get();  // a tuple: its items live as long as it does
    if (!PyTuple_Check(shape))
      detail::fail_value(c, obj, "__cuda_array_interface__['shape'] is a " + detail::type_name(shape) +
                                     ", expected a tuple of ints");
    const Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    if (ndim > ARRAYPORT_MAX_NDIM)
      detail::fail_value(c, obj, "expected at most " + std::to_string(ARRAYPORT_MAX_NDIM) +
                                     " dimensions, got " + std::to_string(ndim));
    const detail::py_ref typestr_ref = item(detail::cai_typestr, true);
    PyObject* typestr = typestr_ref.get();
    if (!PyUnicode_Check(typestr))
      detail::fail_value(c, obj, "__cuda_array_interface__['typestr'] is a " +
                                     detail::type_name(typestr) + ", expected a str");
    Py_ssize_t typestr_size = 0;
    const char* typestr_utf8 = PyUnicode_AsUTF8AndSize(typestr, &typestr_size);
    if (!typestr_utf8) {
      PyErr_Clear();  // a lone surrogate: no typestr at all
      detail::fail_type(c, obj, "__cuda_array_interface__['typestr'] is not valid UTF-8: expected "
                                "one of " + std::string(arrayport::detail::accepted_typestrs));
    }
    arrayport::dtype dt;
    try {
      dt = parse_typestr(std::string_view(typestr_utf8, static_cast<std::size_t>(typestr_size)));
    } catch (const type_error& e) {
      detail::fail_type(c, obj, e.what());
    } catch (const value_error& e) {
      detail::fail_value(c, obj, e.what());
    }
    const detail::py_ref data_ref = item(detail::cai_data, true);
    PyObject* data = data_ref.get();
    if (!PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2)
      detail::fail_value(c, obj, "__cuda_array_interface__['data'] must be a tuple (ptr, readonly)");
    const long long ptr = as_int(PyTuple_GET_ITEM(data, 0), "data");
    if (ptr < 0)
      detail::fail_value(c, obj, "__cuda_array_interface__['data'][0] is " + std::to_string(ptr) +
                                     ", expected a non-negative pointer");
    const int readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
    if (readonly < 0)
      detail::producer_failed(c, obj, "__cuda_array_interface__['data'][1]'s truth value");
    const detail::py_ref strides_ref = item(detail::cai_strides, false);
    PyObject* strides = strides_ref.get();
    if (strides && strides != Py_None && (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != ndim))
      detail::fail_value(c, obj, "__cuda_array_interface__['strides'] must be None or a tuple of " +
                                     std::to_string(ndim) + " ints");
    std::int64_t* ext = a.extents(static_cast<int>(ndim));
    const auto itemsize = static_cast<long long>(dt.itemsize());
    const bool given = strides && strides != Py_None;
    for (Py_ssize_t i = ndim; i-- > 0;) {
      ext[i] = as_int(PyTuple_GET_ITEM(shape, i), "shape");
      if (given) {
        const long long s = as_int(PyTuple_GET_ITEM(strides, i), "strides");
        if (s % itemsize != 0)
          detail::fail_value(c, obj, "stride " + std::to_string(s) + " of axis " + std::to_string(i) +
                                         " is not a multiple of the itemsize " + std::to_string(itemsize));
        ext[ndim + i] = s / itemsize;
      }
    }
    if (!given)
      detail::require_compact_strides(c, obj, ext, static_cast<int>(ndim), ext + ndim, itemsize);
    arrayport_view_t& v = a.m_view;
    v.data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(ptr));
    v.ndim = static_cast<std::int32_t>(ndim);
    v.shape = ext;
    v.strides = ext + ndim;
    v.dtype = dt.to_c();
    v.flags = readonly ? ARRAYPORT_VIEW_READONLY : 0u;
    v.owner = obj;
    a.m_source = acquired::source::reference;
    // CAI says only "device-accessible": ask CUDA whether it is device, managed or pinned memory.
    const runtime::pointer_info info = runtime::query_pointer(v.data);
    const memory_kind kind = info.kind == memory_kind::host ? memory_kind::device : info.kind;
    v.memory_kind = static_cast<std::uint32_t>(kind);
    v.device = dlpack_device(kind, info.device < 0 ? 0 : info.device);

    // v3: where the data is ready; None: no sync needed
    const detail::py_ref stream = item(detail::cai_stream, false);
    if (sync && stream && stream.get() != Py_None) {
      const long long s = as_int(stream.get(), "stream");
      if (s == 0)
        detail::fail_value(c, obj, "__cuda_array_interface__['stream'] is 0, which the protocol "
                                   "disallows: expected None, 1 (legacy default), 2 (per-thread "
                                   "default) or a stream handle");
      stream_handle producer = s == 1 ? nullptr : reinterpret_cast<stream_handle>(static_cast<std::uintptr_t>(s));
      runtime::order_streams(producer, consumer, info.device);
    }
    return info.kind;
  }
};

inline acquired acquire(PyObject* obj, const constraints& c, const acquire_options& o) {
  if (!obj) throw value_error(std::string(c.name) + ": expected an array, got NULL");
  acquired a;
  const detail::type_entry type = detail::lookup_type(Py_TYPE(obj));
  std::uint32_t available = type.protocols;
  if (!available) {
    // Duck-typed objects may carry the interface as an instance attribute (not cacheable).
    if (PyObject_HasAttrString(obj, "__dlpack__") == 1) available |= protocol_dlpack;
    if (PyObject_HasAttrString(obj, "__cuda_array_interface__") == 1) available |= protocol_cai;
  }
  const std::uint32_t offered = available & o.protocols;
  if (!offered) {
    std::string what = available ? "none of the protocols allowed here"
                                      : "no array protocol (buffer protocol, __dlpack__ or "
                                        "__cuda_array_interface__)";
    throw not_an_array(std::string(c.name) + ": expected an array, got " + detail::type_name(obj) +
                     ", which offers " + what);
  }
  Py_INCREF(obj);
  a.m_owner = obj;
  a.m_source = acquired::source::reference;
  // The consumer's stream matters only to the device protocols: asked for there, not for every
  // NumPy array or buffer.
  auto consumer = [&o]() { return o.stream_given ? o.stream : current_stream(); };
  if (offered & protocol_array) {
    detail_access::from_array(a, obj, *loaded_api());
    a.m_protocol = protocol_array;
  } else if (offered & protocol_exchange) {
    detail_access::from_exchange(a, c, obj, *type.exchange, consumer(), o.sync, o.call_scoped);
    a.m_protocol = protocol_exchange;
  } else if ((offered & protocol_cupy) && detail_access::from_cupy(a, obj, consumer, o.sync)) {
    a.m_protocol = protocol_cupy;
  } else if (type.jax && o.call_scoped && o.reads_only && !c.writable && (offered & protocol_cai) &&
             detail_access::from_jax_ready(a, c, obj)) {
    a.m_protocol = protocol_cai;
  } else {
    std::uint32_t rest = offered & ~protocol_cupy;
    if (offered & protocol_cupy) {
      if (detail::cupy().state < 0) detail::forget_protocol(Py_TYPE(obj), protocol_cupy);
      if (!rest)
        detail::fail_buffer(c, obj, "this CuPy array cannot be read from its struct (a layout or "
                                    "dtype arrayport does not know): expected another protocol "
                                    "to be allowed");
    }
    bool refused_buffer = false;
    if (rest & protocol_buffer) {
      try {
        if (!type.numpy || !detail_access::from_numpy(a, c, obj)) detail_access::from_buffer(a, c, obj);
        a.m_protocol = protocol_buffer;
      } catch (const error_already_set&) {
        // The exporter refused its buffer. CuPy does for memory the CPU cannot reach: take the
        // device protocols it also offers. NumPy refuses some dtypes (datetime64): its error
        // stands, and so does any error that is not a refusal (KeyboardInterrupt, MemoryError).
        if (!(rest & (protocol_dlpack | protocol_cai)) || type.numpy ||
            !(PyErr_ExceptionMatches(PyExc_BufferError) || PyErr_ExceptionMatches(PyExc_TypeError) ||
              PyErr_ExceptionMatches(PyExc_ValueError)))
          throw;
        PyErr_Clear();
        rest &= ~protocol_buffer;
        refused_buffer = true;
      }
    }
    if (a.m_protocol == 0 && (rest & protocol_dlpack)) {
      detail_access::from_dlpack(a, c, obj, type, consumer(), o.sync);
      a.m_protocol = protocol_dlpack;
      const layout_status geometry = measure_layout(a.m_view).status;
      if ((rest & protocol_cai) && (geometry == layout_status::stride_too_large ||
                                    geometry == layout_status::span_too_large)) {
        // CuPy (14 and before) exports negative strides through DLPack divided as unsigned
        // numbers (2^62 - 1 for -1); its CUDA array interface states them right.
        detail_access::drop_tensor(a);
        detail_access::from_cai(a, c, obj, consumer(), o.sync);
        a.m_protocol = protocol_cai;
      }
    } else if (a.m_protocol == 0) {
      detail_access::from_cai(a, c, obj, consumer(), o.sync);
      a.m_protocol = protocol_cai;
    }
    // Refused for memory the CPU cannot reach: this type's buffers are not asked for again.
    if (refused_buffer && !is_host_accessible(static_cast<memory_kind>(a.m_view.memory_kind)))
      detail::forget_protocol(Py_TYPE(obj), protocol_buffer);
  }
  if (a.m_protocol != protocol_array) detail::check_geometry(c, obj, a.m_view);
  detail::check_constraints(c, obj, a.m_view);
  return a;
}

/// A function argument as binding adapters (nanobind, pybind11) load it. Overloads: the strict
/// pass (convert == false) accepts only arrays that meet the constraints, so overloads on dtype
/// resolve; the convert pass accepts any array and keeps a violation to raise, with its precise
/// message, when the call starts. Objects that are not arrays are refused in both passes, for other
/// overloads to take.
class argument {
 public:
  bool load(PyObject* src, bool convert, const constraints& c, bool reads_only = false) noexcept {
    acquire_options o;
    o.call_scoped = true;
    o.reads_only = reads_only;
    try {
      m_held = acquire(src, c, o);
      m_error = nullptr;
      return true;
    } catch (const not_an_array&) {
      return false;
    } catch (const arrayport::error&) {
      if (!convert) return false;
      m_error = std::current_exception();
      return true;
    } catch (...) {
      PyErr_Clear();  // the producer raised, or memory ran out: not this overload
      return false;
    }
  }

  const acquired& held() const noexcept { return m_held; }
  bool failed() const noexcept { return m_error != nullptr; }

  /// Sets the Python error of a deferred violation; returns true if there was one (the adapter
  /// then throws its library's "error already set" exception).
  bool set_error_if_failed() const noexcept {
    if (!m_error) return false;
    try {
      std::rethrow_exception(m_error);
    } catch (...) {
      set_error_from_current_exception();
    }
    return true;
  }

 private:
  acquired m_held;
  std::exception_ptr m_error;
};

/// Constraints for a typed view parameter: its dtype, rank, space and constness.
template <class T, std::size_t Rank, class Space>
struct typed_constraints {
  static constexpr arrayport::dtype dtype = dtype_of<std::remove_cv_t<T>>;
  static constraints make(const char* name) noexcept {
    constraints c;
    c.name = name;
    c.dtypes = &dtype;
    c.n_dtypes = 1;
    c.ndim = static_cast<int>(Rank);
    c.where = std::is_same_v<Space, device_space> ? reach::device
              : std::is_same_v<Space, host_space> ? reach::host
                                                  : reach::any;
    c.writable = !std::is_const_v<T>;
    return c;
  }
};

namespace detail {

// The shape and strides (in items) of a typed view of Rank axes, from a producer's extents and
// strides (in units of `unit` bytes: the itemsize for byte strides, 1 for item strides), with the
// checks check_geometry makes: false for a stride that is not a whole number of items, a layout
// that is not addressable (layout.hpp), or a non-empty array at NULL or past the address space.
template <std::size_t Rank, class Extent, class Stride>
inline bool typed_geometry(const Extent* extents, const Stride* in_strides, std::int64_t unit,
                           const void* data, std::int64_t itemsize, std::int64_t* shape,
                           std::int64_t* strides) noexcept {
  for (std::size_t r = 0; r != Rank; ++r) {
    const auto stride = static_cast<std::int64_t>(in_strides[r]);
    if (stride % unit != 0) return false;
    shape[r] = static_cast<std::int64_t>(extents[r]);
    strides[r] = stride / unit;
  }
  const layout_info l = measure_layout(shape, strides, static_cast<int>(Rank), itemsize);
  return l.ok() && (l.count == 0 || (data && fits_address_space(data, l)));
}

// ---- the typed parameters' helpers for CuPy and exchange-API producers ----------------------
//
// The struct read of detail_access::from_cupy for a typed parameter. A view that may be a host
// one needs CUDA to say whether the memory is managed: left to acquire(). So is a CuPy current
// stream other than the consumer's, which takes an event wait.
template <class T, std::size_t Rank, class Space>
inline bool cupy_typed_view(PyObject* obj, arrayport::view<T, Rank, Space>& out) noexcept {
  using index_type = typename arrayport::view<T, Rank, Space>::index_type;
  constexpr arrayport::dtype expected = dtype_of<std::remove_cv_t<T>>;
  constexpr std::size_t n = Rank > 0 ? Rank : 1;
  if constexpr (std::is_same_v<Space, host_space>) {
    return false;
  } else {
    arrayport::dtype dt;
    const cupy_array_fields* f = cupy_fields(obj, dt);
    if (!f || dt != expected || f->shape.end - f->shape.begin != static_cast<Py_ssize_t>(Rank))
      return false;
    const auto* p = reinterpret_cast<const cupy_pointer_fields*>(f->data);
    constexpr auto itemsize = static_cast<std::int64_t>(expected.itemsize());
    index_type shape[n] = {}, strides[n] = {};
    if (!typed_geometry<Rank>(f->shape.begin, f->strides.begin, itemsize,
                              reinterpret_cast<const void*>(p->ptr), itemsize, shape, strides))
      return false;
    stream_handle producer = nullptr;
    if (!cupy_current_stream(producer) || producer != current_stream()) return false;
    out = arrayport::view<T, Rank, Space>(reinterpret_cast<T*>(p->ptr), shape, strides);
    return true;
  }
}

// A producer with the DLPack C exchange API (PyTorch): its non-owning DLTensor straight into the
// view, as detail_access::from_exchange reads it for a call-scoped argument. Host memory for a
// device view (it may be pinned: CUDA is asked there), and a producer stream other than the
// consumer's, are left to acquire().
template <class T, std::size_t Rank, class Space>
inline bool exchange_typed_view(PyObject* obj, arrayport::view<T, Rank, Space>& out) noexcept {
  using index_type = typename arrayport::view<T, Rank, Space>::index_type;
  constexpr arrayport::dtype expected = dtype_of<std::remove_cv_t<T>>;
  constexpr std::size_t n = Rank > 0 ? Rank : 1;
  const dl_exchange_api* api = nullptr;
  try {
    api = lookup_type(Py_TYPE(obj)).exchange;
  } catch (...) {
    return false;
  }
  if (!api || !api->dltensor_from_py_object_no_sync) return false;
  arrayport_dl_tensor_t t{};
  if (api->dltensor_from_py_object_no_sync(obj, &t) != 0) {
    PyErr_Clear();  // acquire() asks again and reports it
    return false;
  }
  memory_kind kind;
  if (!dl_device_kind(t.device, kind) || t.ndim != static_cast<int>(Rank) ||
      arrayport::dtype::from_c(t.dtype) != expected || !Space::accepts(kind) ||
      (Rank > 0 && !t.shape))
    return false;
  index_type shape[n] = {}, strides[n] = {}, compact[n] = {};
  if (!t.strides && !compact_strides(t.shape, static_cast<int>(Rank), compact,
                                     static_cast<std::int64_t>(expected.itemsize())))
    return false;
  std::uintptr_t address = 0;
  if (t.data && __builtin_add_overflow(reinterpret_cast<std::uintptr_t>(t.data), t.byte_offset, &address))
    return false;
  if (!typed_geometry<Rank>(t.shape, t.strides ? t.strides : compact, 1,
                            reinterpret_cast<const void*>(address), expected.itemsize(), shape, strides))
    return false;
  if (is_gpu_resident(kind)) {
    void* producer = nullptr;
    if (api->current_work_stream(ARRAYPORT_DEVICE_CUDA, t.device.device_id, &producer) != 0) {
      PyErr_Clear();
      return false;
    }
    if (static_cast<stream_handle>(producer) != current_stream()) return false;
  }
  out = arrayport::view<T, Rank, Space>(reinterpret_cast<T*>(address), shape, strides);
  return true;
}

// A ready JAX array for a const parameter (see "JAX arrays"): its interface's pointer, extents
// and typestr straight into the view, without a holder or a reference. The interface describes
// row-major arrays only and states no strides; anything else it might say (strides, a mask, a
// typestr other than T's) is left to acquire(). CUDA is asked whether the GPU reaches the memory
// (device memory, or JAX's pinned_host memory; not its unpinned_host kind: left to acquire(),
// which takes __dlpack__); a host-space view, which needs to know which, is left to acquire().
template <class T, std::size_t Rank, class Space>
inline bool jax_typed_view(PyObject* obj, arrayport::view<T, Rank, Space>& out) noexcept {
  using index_type = typename arrayport::view<T, Rank, Space>::index_type;
  constexpr arrayport::dtype expected = dtype_of<std::remove_cv_t<T>>;
  constexpr std::size_t n = Rank > 0 ? Rank : 1;
  if constexpr (!std::is_const_v<T> || std::is_same_v<Space, host_space> ||
                expected == dtypes::bfloat16) {
    return false;
  } else {
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
      if (!shape || !typestr || !data || (strides && strides != Py_None) || (mask && mask != Py_None) ||
          !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) != static_cast<Py_ssize_t>(Rank) ||
          !PyUnicode_Check(typestr) ||
          PyUnicode_CompareWithASCIIString(typestr, expected_typestr) != 0 ||
          !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2 || !PyLong_Check(PyTuple_GET_ITEM(data, 0)))
        break;
      std::int64_t extents[n] = {};
      bool read = true;
      for (std::size_t r = 0; r != Rank && read; ++r) {
        PyObject* e = PyTuple_GET_ITEM(shape, static_cast<Py_ssize_t>(r));
        extents[r] = PyLong_Check(e) ? PyLong_AsLongLong(e) : -1;
        read = extents[r] >= 0;
      }
      const long long address = PyLong_AsLongLong(PyTuple_GET_ITEM(data, 0));  // as from_cai_dict
      std::int64_t compact[n] = {};
      index_type shape_out[n] = {}, strides_out[n] = {};
      if (!read || address < 0 || PyErr_Occurred() ||
          !compact_strides(extents, static_cast<int>(Rank), compact,
                           static_cast<std::int64_t>(expected.itemsize())) ||
          !typed_geometry<Rank>(extents, compact, 1, reinterpret_cast<const void*>(address),
                                expected.itemsize(), shape_out, strides_out) ||
          jax_pageable(reinterpret_cast<const void*>(address)))
        break;
      out = arrayport::view<T, Rank, Space>(reinterpret_cast<T*>(address), shape_out, strides_out);
      ok = true;
    } while (false);
    PyErr_Clear();  // a lookup or conversion that failed: acquire() asks again and says it
    Py_DECREF(d);
    return ok;
  }
}

// ---- the typed parameters' fast path ---------------------------------------------------------
//
// A function argument (call-scoped: the caller holds the object until the call returns) that
// meets every constraint of view<T, Rank, Space> becomes the view with no holder and no reference
// taken: an exact arrayport.Array or numpy.ndarray straight from its struct (no type cache walk,
// no current stream); an exact cupy.ndarray from its struct once acquire() has checked the
// layout, and a producer with the DLPack C exchange API (PyTorch) through its non-owning tensor,
// both when the producer's current stream is the consumer's; a ready JAX array for a const view
// through its interface. Anything else -- another producer, a subclass, a violated constraint,
// streams to order, geometry the general path would refuse or refine (host memory for a device
// view may be pinned: CUDA is asked there) -- returns false, and acquire() decides, with its
// messages.
template <class T, std::size_t Rank, class Space>
inline bool typed_view_fast(PyObject* obj, arrayport::view<T, Rank, Space>& out) noexcept {
  using U = std::remove_cv_t<T>;
  using index_type = typename arrayport::view<T, Rank, Space>::index_type;
  constexpr arrayport::dtype expected = dtype_of<U>;
  constexpr bool writes = !std::is_const_v<T>;
  constexpr std::size_t n = Rank > 0 ? Rank : 1;
  index_type shape[n] = {}, strides[n] = {};
  PyTypeObject* type = Py_TYPE(obj);
  const arrayport_python_api_t* api = api_slot();
  if (api && type == api->array_type) {
    // An Array's view was checked when the Array was made (geometry, dtype).
    const auto& v = *reinterpret_cast<const arrayport_view_t*>(reinterpret_cast<const char*>(obj) +
                                                              api->array_view_offset);
    if (arrayport::dtype::from_c(v.dtype) != expected || v.ndim != static_cast<int>(Rank) ||
        !Space::accepts(static_cast<memory_kind>(v.memory_kind)) ||
        (writes && (v.flags & ARRAYPORT_VIEW_READONLY)))
      return false;
    for (std::size_t r = 0; r != Rank; ++r) {
      shape[r] = v.shape[r];
      strides[r] = v.strides[r];
    }
    out = arrayport::view<T, Rank, Space>(static_cast<T*>(v.data), shape, strides);
    return true;
  }
  if (type == cupy().array_type && type) return cupy_typed_view(obj, out);
  if (type == jax_array_type() && type) return jax_typed_view(obj, out);
  if (type != numpy_exact_type() || !type) return exchange_typed_view(obj, out);
  if (!Space::accepts(memory_kind::host)) return false;
  // The fields from_numpy reads, with the checks from_numpy, check_geometry and
  // check_constraints make of them.
  const auto* a = reinterpret_cast<const numpy_array_fields*>(obj);
  const auto* d = reinterpret_cast<const numpy_descr_head*>(a->descr);
  arrayport::dtype dt;
  if (a->nd != static_cast<int>(Rank) || !d || d->byteorder == '>' ||
      !numpy_dtype(d->type_num, dt) || dt != expected ||
      (writes && (a->flags & numpy_writeable) == 0))
    return false;
  constexpr auto itemsize = static_cast<std::int64_t>(expected.itemsize());
  if (!typed_geometry<Rank>(a->dimensions, a->strides, itemsize, a->data, itemsize, shape, strides))
    return false;
  out = arrayport::view<T, Rank, Space>(reinterpret_cast<T*>(a->data), shape, strides);
  return true;
}

}  // namespace detail

}  // namespace arrayport::python
