// CuPy arrays, read from the ndarray's struct instead of __dlpack__ (300 ns a call from C: a
// capsule, a DLManagedTensor and a cudaPointerGetAttributes) or __cuda_array_interface__ (570 ns:
// a dict). The layout is Cython's for cupy._core.core._ndarray_base (cupy/_core/core.pxd) and
// cupy.cuda.memory.MemoryPointer; Cython publishes no offsets, so it is checked once, on the
// first CuPy array of one or more dimensions, field by field against the Python attributes. Any
// mismatch turns the struct path off for the process, and __dlpack__ serves as before.
//
// The stream semantics are those of __dlpack__(stream=consumer): the consumer's stream waits for
// CuPy's current stream: cupy_backends.cuda.stream.get_current_stream_ptr, from its __pyx_capi__,
// the stream CuPy's own kernels launch on (cupy.cuda.stream's function of that name wraps it in a
// second thread-local lookup; it serves where the backends' is not exported).
#pragma once

#include "bridge/held.hpp"

#include <arrayport/dtype.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/python/constraints.hpp>

#include <Python.h>

#include <cstdint>

namespace arrayport::bridge {

struct std_vector_fields {  // std::vector's three pointers, in libstdc++, libc++ and MSVC alike
  Py_ssize_t* begin;
  Py_ssize_t* end;
  Py_ssize_t* capacity;
};
struct cupy_array_fields {
  PyObject_HEAD void* vtab;  // Cython's table of cdef methods
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
  PyObject_HEAD void* vtab;
  std::intptr_t ptr;
  int device_id;
  PyObject* mem;
};

struct cupy_layout {
  PyTypeObject* array_type = nullptr;    // the exact type checked (cupy.ndarray); kept for good
  PyTypeObject* pointer_type = nullptr;  // cupy.cuda.memory.MemoryPointer; kept for good
  PyTypeObject* dtype_type = nullptr;    // numpy.dtype; kept for good
  std::intptr_t (*current_stream)() = nullptr;  // CuPy's current stream of the current device
  bool stream_may_raise = false;  // a Cython `except *` function: any return may carry an error
  int state = 0;                  // 1 checked, -1 refused, 0 not yet
};

cupy_layout& cupy() noexcept;

/// A subclass of cupy._core.core._ndarray_base whose base has the struct above (the values are
/// checked later, on an instance).
bool is_cupy_array_type(PyTypeObject* type) noexcept;

/// The view from the struct, ordered as __dlpack__(stream=consumer) would be; false (nothing
/// taken, no error set) for what the struct path does not describe.
bool from_cupy(held& a, PyObject* obj, const python::acquire_options& o);

/// For a typed call-scoped parameter on the exact cupy.ndarray: the struct straight into `v`
/// when CuPy's current stream is the consumer's (`o`; with `o.producer_stream` it is the view's
/// stream) and the constraints hold (a host view is left to acquire(), which asks CUDA whether
/// the memory is managed).
bool cupy_borrow(PyObject* obj, const python::constraints& c, const python::acquire_options& o,
                 arrayport_view_t& v, std::int64_t* ext) noexcept;

}  // namespace arrayport::bridge
