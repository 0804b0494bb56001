/* The C API that arrayport._core exports to other extension modules, as NumPy's import_array does.
 *
 * arrayport._core publishes one `arrayport_python_api_t` in a capsule named
 * ARRAYPORT_PYTHON_API_CAPSULE (attribute `_C_API` of the module). Any extension reaches the one
 * `arrayport.Array` type, the thread's current stream and the exception types through it, never
 * through a per-extension copy. Versioned like the view struct: fields are only appended, and a
 * consumer checks `abi_major` before it reads anything else.
 *
 * C99 (plus Python.h): usable from C, C++ and Cython.
 */
#ifndef ARRAYPORT_PYTHON_API_H
#define ARRAYPORT_PYTHON_API_H

#include <Python.h>

#include <arrayport/c/view.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ARRAYPORT_PYTHON_API_MAJOR 1
#define ARRAYPORT_PYTHON_API_MINOR 1
#define ARRAYPORT_PYTHON_API_CAPSULE "arrayport._core._C_API"

typedef struct arrayport_python_api {
  uint32_t abi_major; /* ARRAYPORT_PYTHON_API_MAJOR of the producer */
  uint32_t abi_minor;
  /* The one arrayport.Array type; instances are exactly this type (it cannot be subclassed). */
  PyTypeObject* array_type;
  /* Byte offset of the arrayport_view_t inside an Array instance. The view's shape and strides
   * point into the instance, which never changes them: valid while the instance lives. */
  Py_ssize_t array_view_offset;
  /* The calling thread's current stream (what `with arrayport.cuda.Stream():` sets) and its
   * device (-1: whichever is current). NULL stream: the legacy default stream. */
  void (*current_stream)(void** stream, int* device);
  /* A new Array viewing `view` (shape and strides are copied; data, dtype, device, memory kind,
   * flags and stream are taken as they are) that keeps `owner` alive (a new reference is taken;
   * owner may be NULL for memory that outlives the process). NULL with a Python error set on
   * failure. */
  PyObject* (*array_from_view)(const arrayport_view_t* view, PyObject* owner);
  /* arrayport.CudaError, arrayport.OutOfMemoryError, arrayport.NoDeviceError (borrowed; alive for
   * the process). */
  PyObject* cuda_error;
  PyObject* out_of_memory_error;
  PyObject* no_device_error;
  /* Acquires a view of any array `obj` (the protocols and checks of arrayport::python::acquire),
   * for C, Cython and ctypes callers. `name` names the argument in error messages; `flags` are
   * ARRAYPORT_ACQUIRE_* bits. On success fills `*out` (valid until release) and `*handle`, and
   * returns 0; on failure returns -1 with a Python error set. The stream ordering is that of
   * arrayport.view(): the producer's work is ordered before the current stream. */
  int (*acquire)(PyObject* obj, const char* name, uint32_t flags, arrayport_view_t* out,
                 void** handle);
  /* Releases what acquire() took (GIL held). NULL is ignored. */
  void (*release)(void* handle);

  /* ---- since 1.1: read only when abi_minor >= 1 ---- */

  /* Sets arrayport.CudaError (arrayport.OutOfMemoryError when `out_of_memory` is nonzero) as
   * arrayport._core raises its own: `message` as the text, and the attributes code (`status`, the
   * cudaError_t), name (`status_name`, e.g. "cudaErrorIllegalAddress"), api (the runtime call
   * that failed) and sticky (whether `status` corrupts the CUDA context). The strings are UTF-8,
   * borrowed for the call; NULL reads as "". GIL held. Should building the exception fail, that
   * failure's Python error is set instead. The fields travel, not the C++ exception: exceptions
   * do not cross extension modules (_core links its own C++ runtime). */
  void (*set_cuda_error)(const char* message, int status, const char* status_name,
                         const char* api, int out_of_memory);
} arrayport_python_api_t;

/* acquire() flags. */
#define ARRAYPORT_ACQUIRE_WRITABLE 0x1u /* the caller writes through the view */
#define ARRAYPORT_ACQUIRE_HOST 0x2u     /* the memory must be reachable from the host */
#define ARRAYPORT_ACQUIRE_DEVICE 0x4u   /* the memory must be reachable from the device */
#define ARRAYPORT_ACQUIRE_C_ORDER 0x8u  /* the view must be C-contiguous */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ARRAYPORT_PYTHON_API_H */
