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

#include <arrayport/c/dlpack.h>
#include <arrayport/c/view.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ARRAYPORT_PYTHON_API_MAJOR 1
#define ARRAYPORT_PYTHON_API_MINOR 5
#define ARRAYPORT_PYTHON_API_CAPSULE "arrayport._core._C_API"

/* The exchange protocols, as bits (arrayport_acquire_request_t.protocols; the protocol used). */
#define ARRAYPORT_PROTOCOL_ARRAY 0x01u    /* arrayport.Array */
#define ARRAYPORT_PROTOCOL_EXCHANGE 0x02u /* the DLPack C exchange API */
#define ARRAYPORT_PROTOCOL_BUFFER 0x04u   /* the buffer protocol (NumPy arrays: their struct) */
#define ARRAYPORT_PROTOCOL_DLPACK 0x08u   /* __dlpack__ */
#define ARRAYPORT_PROTOCOL_CAI 0x10u      /* __cuda_array_interface__ */
#define ARRAYPORT_PROTOCOL_CUPY 0x20u     /* a CuPy ndarray read from its struct */
#define ARRAYPORT_PROTOCOL_ALL 0x3Fu
#define ARRAYPORT_PROTOCOL_NONE 0x80000000u /* a request that allows none (0 allows all) */

/* What acquire_view() is asked for (since 1.2). Versioned by its size: `size` is first, a caller
 * sets it to sizeof(arrayport_acquire_request_t) as it was built, and fields are only appended.
 * arrayport._core reads a shorter request's missing fields as their zero defaults, and refuses a
 * longer one whose extra bytes are not zero (options it does not know). Zero means "any" or "no"
 * throughout, so a zero-filled request with its size set accepts any array. */
typedef struct arrayport_acquire_request {
  uint32_t size;                   /* sizeof(arrayport_acquire_request_t) of the caller */
  uint32_t flags;                  /* ARRAYPORT_ACQUIRE_* constraint bits */
  const char* name;                /* the argument's name in messages; NULL: "array" */
  const arrayport_dtype_t* dtypes; /* accepted dtypes (n_dtypes of them); none: any */
  uint32_t n_dtypes;
  int32_t ndim;         /* required rank, or -1 for any (0 is rank 0) */
  const int64_t* shape; /* ndim extents, -1 for any; NULL: any shape */
  uint32_t options;     /* ARRAYPORT_REQUEST_* bits */
  uint32_t protocols;   /* ARRAYPORT_PROTOCOL_* bits allowed; 0: all */
  void* stream;         /* the consumer's stream, with ARRAYPORT_REQUEST_STREAM */
} arrayport_acquire_request_t;

/* The size of the 1.2 request: the smallest arrayport._core accepts. */
#define ARRAYPORT_ACQUIRE_REQUEST_SIZE_1_2 \
  (offsetof(arrayport_acquire_request_t, stream) + sizeof(void*))

/* What acquire_view() gives: the view, and the handle that keeps it valid. */
typedef struct arrayport_acquired {
  arrayport_view_t view;
  /* Pass to release() (GIL held) when done. NULL: nothing is held (a borrowed view, with
   * ARRAYPORT_REQUEST_BORROW), valid while the caller holds obj. A borrowed CuPy or JAX view
   * says device memory without asking CUDA (JAX's: device 0); ask the runtime where it matters. */
  void* handle;
  uint32_t protocol; /* the ARRAYPORT_PROTOCOL_* bit the view came through */
  uint32_t reserved;
  int64_t extents[16]; /* a borrowed view's shape and strides (it has at most 8 dimensions) */
} arrayport_acquired_t;

/* A producer type with the DLPack C exchange API, and its table (since 1.5). */
#define ARRAYPORT_EXCHANGE_TYPES 4
typedef struct arrayport_exchange_type {
  PyTypeObject* type; /* NULL: an unused entry */
  const arrayport_dlpack_exchange_api_t* api;
} arrayport_exchange_type_t;

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
  /* Releases what acquire() or acquire_view() took (GIL held). NULL is ignored. */
  void (*release)(void* handle);

  /* ---- since 1.1: read only when abi_minor >= 1 ---- */

  /* Sets arrayport.CudaError (arrayport.OutOfMemoryError when `out_of_memory` is nonzero) as
   * arrayport._core raises its own: `message` as the text, and the attributes code (`status`, the
   * cudaError_t), name (`status_name`, e.g. "cudaErrorIllegalAddress"), api (the runtime call
   * that failed) and sticky (whether `status` corrupts the CUDA context). The strings are UTF-8,
   * borrowed for the call; NULL reads as "". GIL held. Should building the exception fail, that
   * failure's Python error is set instead. The fields travel, not the C++ exception: exceptions
   * do not cross extension modules (_core links its own C++ runtime). */
  void (*set_cuda_error)(const char* message, int status, const char* status_name, const char* api,
                         int out_of_memory);

  /* ---- since 1.2: read only when abi_minor >= 2 ---- */

  /* Acquires a view of `obj` as `request` asks (the protocols and checks of
   * arrayport::python::acquire, compiled once in arrayport._core). Returns ARRAYPORT_ACQUIRE_OK
   * with `*out` filled, or one of the failures below with a Python error set. */
  int (*acquire_view)(PyObject* obj, const arrayport_acquire_request_t* request,
                      arrayport_acquired_t* out);
  /* Visits the Python objects a handle holds (for the tp_traverse of a GC-tracked object that
   * keeps one). NULL is ignored. */
  int (*traverse)(void* handle, visitproc visit, void* arg);
  /* Where arrayport._core keeps numpy.ndarray once it has met one (NULL until then): exact
   * ndarrays may be read inline from their struct (arrayport/python/numpy.hpp). */
  PyTypeObject* const* numpy_array_type;

  /* ---- since 1.3: read only when abi_minor >= 3 ---- */

  /* A typed call-scoped parameter's view with nothing held, as acquire_view gives it with
   * ARRAYPORT_REQUEST_BORROW, asked without a request: exactly `dtype`, rank `ndim` (0 to 8),
   * ARRAYPORT_ACQUIRE_WRITABLE / _HOST / _DEVICE `flags`, the current stream as the consumer's.
   * 1 with `*view` filled (shape and strides in extents[0, 2 * ndim)); 0, no error set, where
   * acquire_view must decide (another producer, a stream to order, any violation). Since 1.4
   * `flags` may hold ARRAYPORT_BORROW_PRODUCER_STREAM (an older _core returns 0 for it). */
  int (*borrow_typed)(PyObject* obj, arrayport_dtype_t dtype, int32_t ndim, uint32_t flags,
                      arrayport_view_t* view, int64_t* extents);

  /* ---- since 1.5: read only when abi_minor >= 5 ---- */

  /* ARRAYPORT_EXCHANGE_TYPES producer types with the DLPack C exchange API (PyTorch's Tensor)
   * whose arguments borrow_typed has lately borrowed, with their tables: their typed arguments
   * may be read inline through the table (arrayport/python/exchange.hpp). _core holds a
   * reference to each type listed; between calls (GIL held) it may put another in its entry. */
  const arrayport_exchange_type_t* exchange_types;
} arrayport_python_api_t;

/* acquire() flags. */
#define ARRAYPORT_ACQUIRE_WRITABLE 0x1u /* the caller writes through the view */
#define ARRAYPORT_ACQUIRE_HOST 0x2u     /* the memory must be reachable from the host */
#define ARRAYPORT_ACQUIRE_DEVICE 0x4u   /* the memory must be reachable from the device */
#define ARRAYPORT_ACQUIRE_C_ORDER 0x8u  /* the view must be C-contiguous */
#define ARRAYPORT_ACQUIRE_F_ORDER 0x10u /* the view must be Fortran-contiguous (requests only) */

/* arrayport_acquire_request_t.options. */
#define ARRAYPORT_REQUEST_STREAM 0x1u      /* `stream` is the consumer's (else the current one) */
#define ARRAYPORT_REQUEST_NO_SYNC 0x2u     /* no stream ordering: the caller orders the work */
#define ARRAYPORT_REQUEST_CALL_SCOPED 0x4u /* used only until control returns to Python */
#define ARRAYPORT_REQUEST_READS_ONLY 0x8u  /* the caller only reads through the view */
#define ARRAYPORT_REQUEST_BORROW 0x10u     /* call-scoped: may hold nothing (handle NULL) */
/* Since 1.4: the consumer works on the producer's own current stream (PyTorch's through the
 * exchange API's current_work_stream, CuPy's; arrayport's current stream for the others), which
 * the view's `stream` then names: nothing is ordered for producers that state their stream. Not
 * with ARRAYPORT_REQUEST_STREAM. */
#define ARRAYPORT_REQUEST_PRODUCER_STREAM 0x20u

/* borrow_typed() flag (since 1.4): ARRAYPORT_REQUEST_PRODUCER_STREAM's semantics. */
#define ARRAYPORT_BORROW_PRODUCER_STREAM 0x100u

/* acquire_view() results. */
#define ARRAYPORT_ACQUIRE_OK 0
#define ARRAYPORT_ACQUIRE_FAILED (-1)    /* the producer raised, or memory or CUDA failed */
#define ARRAYPORT_ACQUIRE_NOT_AN_ARRAY 1 /* TypeError: obj offers no array protocol (allowed) */
#define ARRAYPORT_ACQUIRE_REFUSED                           \
  2 /* TypeError / ValueError / BufferError: the array does \
       not meet the request; the message says how */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ARRAYPORT_PYTHON_API_H */
