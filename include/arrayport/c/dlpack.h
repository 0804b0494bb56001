/* DLPack v1.x ABI, written from the DLPack specification (dmlc/dlpack, include/dlpack/dlpack.h).
 *
 * Layout-identical to DLTensor, DLManagedTensor and DLManagedTensorVersioned, with arrayport_
 * names so that this header can sit beside the real dlpack.h in one translation unit. Capsules
 * carrying these are named "dltensor" (legacy) and "dltensor_versioned", and renamed to
 * "used_dltensor" / "used_dltensor_versioned" by the consumer that takes ownership.
 */
#ifndef ARRAYPORT_C_DLPACK_H
#define ARRAYPORT_C_DLPACK_H

#include <arrayport/c/view.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The DLPack version these structs follow. */
#define ARRAYPORT_DLPACK_MAJOR_VERSION 1
#define ARRAYPORT_DLPACK_MINOR_VERSION 1

/* Flags of a versioned managed tensor (DLPACK_FLAG_BITMASK_*). */
#define ARRAYPORT_DLPACK_FLAG_READ_ONLY (1ull << 0)
#define ARRAYPORT_DLPACK_FLAG_IS_COPIED (1ull << 1)
#define ARRAYPORT_DLPACK_FLAG_IS_SUBBYTE_TYPE_PADDED (1ull << 2)

typedef struct arrayport_dlpack_version {
  uint32_t major;
  uint32_t minor;
} arrayport_dlpack_version_t;

/* DLTensor. `strides` in elements, may be NULL (compact row-major); `byte_offset` is added to
 * `data` to reach element 0. */
typedef struct arrayport_dl_tensor {
  void* data;
  arrayport_device_t device;
  int32_t ndim;
  arrayport_dtype_t dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} arrayport_dl_tensor_t;

/* DLManagedTensor (legacy, unversioned). The consumer calls deleter(self) exactly once. */
typedef struct arrayport_dl_managed_tensor {
  arrayport_dl_tensor_t dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct arrayport_dl_managed_tensor* self);
} arrayport_dl_managed_tensor_t;

/* DLManagedTensorVersioned (DLPack >= 1.0). */
typedef struct arrayport_dl_managed_tensor_versioned {
  arrayport_dlpack_version_t version;
  void* manager_ctx;
  void (*deleter)(struct arrayport_dl_managed_tensor_versioned* self);
  uint64_t flags;
  arrayport_dl_tensor_t dl_tensor;
} arrayport_dl_managed_tensor_versioned_t;

ARRAYPORT_C_STATIC_ASSERT(sizeof(arrayport_dl_tensor_t) == 48, "DLTensor layout");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_dl_tensor_t, shape) == 24, "DLTensor layout");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_dl_tensor_t, byte_offset) == 40, "DLTensor layout");
ARRAYPORT_C_STATIC_ASSERT(sizeof(arrayport_dl_managed_tensor_t) == 64, "DLManagedTensor layout");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_dl_managed_tensor_versioned_t, flags) == 24,
                           "DLManagedTensorVersioned layout");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_dl_managed_tensor_versioned_t, dl_tensor) == 32,
                           "DLManagedTensorVersioned layout");

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ARRAYPORT_C_DLPACK_H */
