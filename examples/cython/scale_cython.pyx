# The example kernel through Cython: arrayport's C API gives the view, the C kernel scales it.
from arrayport.capi cimport (arrayport_view_t, acquire, release, current_stream,
                             ARRAYPORT_ACQUIRE_WRITABLE, ARRAYPORT_DTYPE_FLOAT)
from libc.stdint cimport int64_t

cdef extern from "scale_c.h":
    int example_scale(float* x, int64_t n, int64_t stride, float f, void* stream, char* error,
                      int error_size) nogil


def scale(x, float f):
    """scale(x, f): x *= f in place, for any writable float32 vector."""
    cdef arrayport_view_t v
    cdef char error[512]
    cdef int rc
    cdef void* stream = current_stream()
    cdef void* handle = acquire(x, b"x", ARRAYPORT_ACQUIRE_WRITABLE, &v)
    try:
        if v.ndim != 1 or v.dtype.code != ARRAYPORT_DTYPE_FLOAT or v.dtype.bits != 32:
            raise TypeError(f"x: expected a 1-dimensional float32 array, got {v.ndim} dimensions "
                            f"of dtype code {v.dtype.code}, {v.dtype.bits} bits")
        with nogil:
            rc = example_scale(<float*>v.data, v.shape[0], v.strides[0], f, stream, error, 512)
        if rc != 0:
            raise RuntimeError(error.decode())
    finally:
        release(handle)
