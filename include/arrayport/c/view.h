/* arrayport C ABI: a versioned, frozen-layout description of a strided array view.
 *
 * This is the struct that crosses module and language boundaries (C, C++, Cython, ctypes, other
 * extension modules). Its layout is frozen: fields are only ever appended at the end, guarded by
 * the minor version; enum values are only ever appended. The dtype and device structs are
 * layout-compatible with DLPack's DLDataType and DLDevice (DLPack v1.x), and the enum values are
 * DLPack's, so a view converts to and from a DLTensor without translation tables.
 *
 * C99 with <stdint.h> only.
 */
#ifndef ARRAYPORT_C_VIEW_H
#define ARRAYPORT_C_VIEW_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ABI version of the structs in this header. Major: incompatible change. Minor: fields appended. */
#define ARRAYPORT_C_ABI_VERSION_MAJOR 1
#define ARRAYPORT_C_ABI_VERSION_MINOR 0

/* The most dimensions a view may have (DLPack and NumPy >= 2 use the same bound). */
#define ARRAYPORT_MAX_NDIM 64

typedef struct arrayport_version {
  uint32_t major;
  uint32_t minor;
} arrayport_version_t;

/* Type codes: DLPack's DLDataTypeCode values. */
typedef enum arrayport_dtype_code {
  ARRAYPORT_DTYPE_INT = 0,
  ARRAYPORT_DTYPE_UINT = 1,
  ARRAYPORT_DTYPE_FLOAT = 2,
  ARRAYPORT_DTYPE_OPAQUE_HANDLE = 3,
  ARRAYPORT_DTYPE_BFLOAT = 4,
  ARRAYPORT_DTYPE_COMPLEX = 5,
  ARRAYPORT_DTYPE_BOOL = 6
} arrayport_dtype_code_t;

/* Element type: layout-compatible with DLDataType. `bits` is the width of one lane (complex64:
 * code COMPLEX, bits 64); `lanes` is 1 for every scalar type arrayport produces. */
typedef struct arrayport_dtype {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} arrayport_dtype_t;

/* Device types: DLPack's DLDeviceType values. */
typedef enum arrayport_device_type {
  ARRAYPORT_DEVICE_CPU = 1,
  ARRAYPORT_DEVICE_CUDA = 2,
  ARRAYPORT_DEVICE_CUDA_HOST = 3,   /* pinned (page-locked) host memory */
  ARRAYPORT_DEVICE_CUDA_MANAGED = 13 /* unified / managed memory */
} arrayport_device_type_t;

/* Where data lives: layout-compatible with DLDevice (DLDeviceType is an int-sized C enum). */
typedef struct arrayport_device {
  int32_t device_type; /* an arrayport_device_type_t value */
  int32_t device_id;   /* CUDA ordinal; 0 for CPU */
} arrayport_device_t;

/* Memory kind, finer than the device type where the device type cannot tell (e.g. registered host
 * memory is CUDA_HOST). Values are frozen. */
typedef enum arrayport_memory_kind {
  ARRAYPORT_MEMORY_HOST = 0,    /* pageable host memory */
  ARRAYPORT_MEMORY_PINNED = 1,  /* page-locked host memory, device-accessible */
  ARRAYPORT_MEMORY_DEVICE = 2,  /* device memory, not host-accessible */
  ARRAYPORT_MEMORY_MANAGED = 3  /* unified memory, accessible from host and device */
} arrayport_memory_kind_t;

/* Flags of a view. */
#define ARRAYPORT_VIEW_READONLY 0x1u /* writes through `data` are not allowed */

/* A strided view of an n-dimensional array. Does not own anything: `owner` says who keeps the
 * memory alive, and whoever filled the struct says how long the view is valid.
 *
 * Element (i_0, ..., i_{n-1}) is at  (char*)data + itemsize * sum_k i_k * strides[k]
 * where itemsize = dtype.bits * dtype.lanes / 8. */
typedef struct arrayport_view {
  arrayport_version_t version; /* the ABI version the producer filled in */
  void* data;                  /* address of element (0,...,0); any byte offset already applied.
                                  May be NULL only when the view has zero elements. */
  const int64_t* shape;        /* ndim extents, each >= 0; NULL when ndim == 0 */
  const int64_t* strides;      /* ndim strides in ELEMENTS (DLPack convention), may be negative or 0;
                                  NULL when ndim == 0. Never NULL otherwise: producers fill C order. */
  int32_t ndim;                /* 0 .. ARRAYPORT_MAX_NDIM */
  arrayport_dtype_t dtype;
  arrayport_device_t device;
  uint32_t memory_kind;        /* an arrayport_memory_kind_t value */
  uint32_t flags;              /* ARRAYPORT_VIEW_* bits */
  void* owner;                 /* opaque handle of the owner (a PyObject* when it came from Python),
                                  or NULL. Not a reference: the holder of the view manages it. */
  void* stream;                /* the stream (cudaStream_t) on which the data is ready, or NULL for
                                  the legacy default stream / host memory */
} arrayport_view_t;

/* Layout freeze (ARRAYPORT_C_STATIC_ASSERT is also used by dlpack.h). (LP64/LLP64 with 8-byte pointers; arrayport supports no 32-bit targets). */
#if defined(__cplusplus)
#define ARRAYPORT_C_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define ARRAYPORT_C_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#else /* C99: a negative array size fails the build; the name is made unique per line */
#define ARRAYPORT_C_CONCAT_(a, b) a##b
#define ARRAYPORT_C_CONCAT(a, b) ARRAYPORT_C_CONCAT_(a, b)
#define ARRAYPORT_C_STATIC_ASSERT(cond, msg) \
  typedef char ARRAYPORT_C_CONCAT(arrayport_static_assert_, __LINE__)[(cond) ? 1 : -1]
#endif

ARRAYPORT_C_STATIC_ASSERT(sizeof(void*) == 8, "arrayport requires 64-bit pointers");
ARRAYPORT_C_STATIC_ASSERT(sizeof(arrayport_dtype_t) == 4, "arrayport_dtype_t must match DLDataType");
ARRAYPORT_C_STATIC_ASSERT(sizeof(arrayport_device_t) == 8, "arrayport_device_t must match DLDevice");
ARRAYPORT_C_STATIC_ASSERT(sizeof(arrayport_version_t) == 8, "arrayport_version_t layout is frozen");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_view_t, version) == 0, "arrayport_view_t layout is frozen");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_view_t, data) == 8, "arrayport_view_t layout is frozen");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_view_t, shape) == 16, "arrayport_view_t layout is frozen");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_view_t, strides) == 24, "arrayport_view_t layout is frozen");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_view_t, ndim) == 32, "arrayport_view_t layout is frozen");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_view_t, dtype) == 36, "arrayport_view_t layout is frozen");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_view_t, device) == 40, "arrayport_view_t layout is frozen");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_view_t, memory_kind) == 48, "arrayport_view_t layout is frozen");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_view_t, flags) == 52, "arrayport_view_t layout is frozen");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_view_t, owner) == 56, "arrayport_view_t layout is frozen");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_view_t, stream) == 64, "arrayport_view_t layout is frozen");
ARRAYPORT_C_STATIC_ASSERT(sizeof(arrayport_view_t) == 72, "arrayport_view_t layout is frozen");

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ARRAYPORT_C_VIEW_H */
