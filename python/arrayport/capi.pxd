# Cython declarations of arrayport's C ABI (include/arrayport/c/view.h) and of the C API that
# arrayport._core exports (include/arrayport/python/api.h). In a .pyx:
#
#   from arrayport.capi cimport arrayport_view_t, acquire, release, ARRAYPORT_ACQUIRE_WRITABLE
#   cdef arrayport_view_t v
#   cdef void* h = acquire(x, b"x", ARRAYPORT_ACQUIRE_WRITABLE, &v)
#   try: ... v.data, v.shape[0], v.strides[0] ...
#   finally: release(h)
#
# Compile with arrayport.include_dir() on the include path.

from cpython.object cimport PyObject
from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t

cdef extern from "arrayport/c/view.h":
    int ARRAYPORT_MAX_NDIM
    int ARRAYPORT_DTYPE_INT, ARRAYPORT_DTYPE_UINT, ARRAYPORT_DTYPE_FLOAT, ARRAYPORT_DTYPE_BFLOAT
    int ARRAYPORT_DTYPE_COMPLEX, ARRAYPORT_DTYPE_BOOL
    int ARRAYPORT_DEVICE_CPU, ARRAYPORT_DEVICE_CUDA, ARRAYPORT_DEVICE_CUDA_HOST
    int ARRAYPORT_DEVICE_CUDA_MANAGED
    int ARRAYPORT_MEMORY_HOST, ARRAYPORT_MEMORY_PINNED, ARRAYPORT_MEMORY_DEVICE
    int ARRAYPORT_MEMORY_MANAGED
    unsigned ARRAYPORT_VIEW_READONLY

    ctypedef struct arrayport_version_t:
        uint32_t major
        uint32_t minor
    ctypedef struct arrayport_dtype_t:
        uint8_t code
        uint8_t bits
        uint16_t lanes
    ctypedef struct arrayport_device_t:
        int32_t device_type
        int32_t device_id
    ctypedef struct arrayport_view_t:
        arrayport_version_t version
        void* data
        const int64_t* shape
        const int64_t* strides   # in elements
        int32_t ndim
        arrayport_dtype_t dtype
        arrayport_device_t device
        uint32_t memory_kind
        uint32_t flags
        void* owner
        void* stream

cdef extern from "arrayport/python/api.h":
    const char* ARRAYPORT_PYTHON_API_CAPSULE
    int ARRAYPORT_PYTHON_API_MAJOR
    unsigned ARRAYPORT_ACQUIRE_WRITABLE, ARRAYPORT_ACQUIRE_HOST, ARRAYPORT_ACQUIRE_DEVICE
    unsigned ARRAYPORT_ACQUIRE_C_ORDER, ARRAYPORT_ACQUIRE_F_ORDER
    # since 1.2: acquire_view's request (docs/c-api.md), its options and results
    unsigned ARRAYPORT_REQUEST_STREAM, ARRAYPORT_REQUEST_NO_SYNC, ARRAYPORT_REQUEST_CALL_SCOPED
    unsigned ARRAYPORT_REQUEST_READS_ONLY, ARRAYPORT_REQUEST_BORROW
    int ARRAYPORT_ACQUIRE_OK, ARRAYPORT_ACQUIRE_FAILED, ARRAYPORT_ACQUIRE_NOT_AN_ARRAY
    int ARRAYPORT_ACQUIRE_REFUSED
    ctypedef struct arrayport_acquire_request_t:
        uint32_t size            # sizeof(arrayport_acquire_request_t)
        uint32_t flags           # ARRAYPORT_ACQUIRE_* bits
        const char* name
        const arrayport_dtype_t* dtypes
        uint32_t n_dtypes
        int32_t ndim             # -1: any
        const int64_t* shape
        uint32_t options         # ARRAYPORT_REQUEST_* bits
        uint32_t protocols       # 0: all
        void* stream
    ctypedef struct arrayport_acquired_t:
        arrayport_view_t view
        void* handle             # to release(); NULL for a borrowed view
        uint32_t protocol
        int64_t extents[16]
    ctypedef struct arrayport_python_api_t:
        uint32_t abi_major
        uint32_t abi_minor
        void (*current_stream)(void** stream, int* device) noexcept
        int (*acquire)(PyObject* obj, const char* name, uint32_t flags, arrayport_view_t* out,
                       void** handle) noexcept
        void (*release)(void* handle) noexcept
        # since 1.2 (read only when abi_minor >= 2)
        int (*acquire_view)(PyObject* obj, const arrayport_acquire_request_t* request,
                            arrayport_acquired_t* out) noexcept
        # since 1.3 (read only when abi_minor >= 3)
        int (*borrow_typed)(PyObject* obj, arrayport_dtype_t dtype, int32_t ndim, uint32_t flags,
                            arrayport_view_t* view, int64_t* extents) noexcept

cdef inline const arrayport_python_api_t* import_arrayport() except NULL:
    """The C API of arrayport._core (imports it)."""
    import arrayport._core
    cdef const arrayport_python_api_t* api = <const arrayport_python_api_t*>PyCapsule_GetPointer(
        arrayport._core._C_API, ARRAYPORT_PYTHON_API_CAPSULE)
    if api.abi_major != ARRAYPORT_PYTHON_API_MAJOR:
        raise ImportError("arrayport._core exports another major C API version: rebuild this module")
    return api

cdef extern from *:
    """
    static int arrayport_raise_pending(void) { return -1; }
    """
    int raise_pending "arrayport_raise_pending"() except -1

cdef inline void* acquire(object obj, const char* name, uint32_t flags, arrayport_view_t* out) except NULL:
    """A view of any array in *out; the returned handle goes to release()."""
    cdef void* handle = NULL
    if import_arrayport().acquire(<PyObject*>obj, name, flags, out, &handle) != 0:
        raise_pending()
    return handle

cdef inline void release(void* handle) noexcept:
    """Releases what acquire() took (a handle exists only once the API was imported)."""
    cdef const arrayport_python_api_t* api
    if handle != NULL:
        try:
            api = import_arrayport()
        except BaseException:
            return
        api.release(handle)

cdef inline void* current_stream() except? NULL:
    """arrayport's current stream of this thread (NULL: the legacy default stream)."""
    cdef void* stream = NULL
    cdef int device = -1
    import_arrayport().current_stream(&stream, &device)
    return stream
