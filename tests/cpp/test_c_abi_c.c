/* Compiled as C99: the C ABI header is valid C and reports the same layout C++ sees. */
#include <arrayport/c/dlpack.h>
#include <arrayport/c/view.h>

size_t arrayport_test_c_sizeof_view(void) { return sizeof(arrayport_view_t); }
size_t arrayport_test_c_offsetof_view_stream(void) { return offsetof(arrayport_view_t, stream); }
size_t arrayport_test_c_offsetof_view_owner(void) { return offsetof(arrayport_view_t, owner); }

/* Fills a 2x3 C-order float32 host view, as a C producer would. */
void arrayport_test_c_fill_view(arrayport_view_t* v, float* data, const int64_t* shape,
                                const int64_t* strides) {
  v->version.major = ARRAYPORT_C_ABI_VERSION_MAJOR;
  v->version.minor = ARRAYPORT_C_ABI_VERSION_MINOR;
  v->data = data;
  v->shape = shape;
  v->strides = strides;
  v->ndim = 2;
  v->dtype.code = ARRAYPORT_DTYPE_FLOAT;
  v->dtype.bits = 32;
  v->dtype.lanes = 1;
  v->device.device_type = ARRAYPORT_DEVICE_CPU;
  v->device.device_id = 0;
  v->memory_kind = ARRAYPORT_MEMORY_HOST;
  v->flags = ARRAYPORT_VIEW_READONLY;
  v->owner = 0;
  v->stream = 0;
}
