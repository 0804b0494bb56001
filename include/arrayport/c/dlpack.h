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

/* The DLPack C exchange API (DLPack 1.2+): a table of C functions a Python array type offers as
 * type(x).__dlpack_c_exchange_api__ (a capsule "dlpack_exchange_api", DLPack 1.3) or
 * type(x).__c_dlpack_exchange_api__ (its address as an int, DLPack 1.2). Each function returns 0
 * on success and -1 on failure with a Python exception set (the allocator: with SetError called);
 * none synchronises a stream: the consumer works on current_work_stream(). */
#define ARRAYPORT_DLPACK_EXCHANGE_API_MINOR 3 /* the DLPack 1.x whose table this is */

typedef struct arrayport_dlpack_exchange_api_header {
  arrayport_dlpack_version_t version;
  struct arrayport_dlpack_exchange_api_header* prev_api; /* an older table, or NULL */
} arrayport_dlpack_exchange_api_header_t;

typedef struct arrayport_dlpack_exchange_api {
  arrayport_dlpack_exchange_api_header_t header;
  /* A new tensor of the prototype's dtype, ndim, shape and device, owned by the producer. */
  int (*managed_tensor_allocator)(arrayport_dl_tensor_t* prototype,
                                  arrayport_dl_managed_tensor_versioned_t** out, void* error_ctx,
                                  void (*set_error)(void* error_ctx, const char* kind,
                                                    const char* message));
  /* An owning tensor of the object: its deleter is called exactly once. */
  int (*managed_tensor_from_py_object_no_sync)(void* py_object,
                                               arrayport_dl_managed_tensor_versioned_t** out);
  /* The producer's Python object over an owning tensor, whose ownership is taken (stolen). */
  int (*managed_tensor_to_py_object_no_sync)(arrayport_dl_managed_tensor_versioned_t* tensor,
                                             void** out_py_object);
  /* A non-owning DLTensor, valid while the object lives unchanged; may be NULL. */
  int (*dltensor_from_py_object_no_sync)(void* py_object, arrayport_dl_tensor_t* out);
  /* The producer's current work stream of a device (NULL for the CPU). */
  int (*current_work_stream)(int32_t device_type, int32_t device_id, void** out_stream);
} arrayport_dlpack_exchange_api_t;

ARRAYPORT_C_STATIC_ASSERT(sizeof(arrayport_dl_tensor_t) == 48, "DLTensor layout");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_dl_tensor_t, shape) == 24, "DLTensor layout");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_dl_tensor_t, byte_offset) == 40, "DLTensor layout");
ARRAYPORT_C_STATIC_ASSERT(sizeof(arrayport_dl_managed_tensor_t) == 64, "DLManagedTensor layout");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_dl_managed_tensor_versioned_t, flags) == 24,
                           "DLManagedTensorVersioned layout");
ARRAYPORT_C_STATIC_ASSERT(offsetof(arrayport_dl_managed_tensor_versioned_t, dl_tensor) == 32,
                           "DLManagedTensorVersioned layout");
ARRAYPORT_C_STATIC_ASSERT(sizeof(arrayport_dlpack_exchange_api_t) == 56,
                          "DLPackExchangeAPI layout");

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ARRAYPORT_C_DLPACK_H */
