// The CUDA kernels of the arithmetic ops (ew_unit 0).
#include "ops/cuda/elementwise_kernels.cuh"

namespace arrayport::ops::cuda {
const ew_table elementwise_table = make_kernel_table<kernels<0>, op_id, ew_fn, op_count>();
}  // namespace arrayport::ops::cuda
