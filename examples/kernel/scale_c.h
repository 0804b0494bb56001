/* The example kernel behind a C ABI, for the bindings that speak C (ctypes, Cython, SWIG). */
#ifndef EXAMPLE_SCALE_C_H
#define EXAMPLE_SCALE_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* x[i * stride] *= f for i in [0, n). `stream` is a cudaStream_t (NULL: the legacy default).
 * Returns 0, or -1 with a message in `error` (error_size bytes) on failure. */
int example_scale(float* x, int64_t n, int64_t stride, float f, void* stream, char* error,
                  int error_size);

#ifdef __cplusplus
}
#endif

#endif
