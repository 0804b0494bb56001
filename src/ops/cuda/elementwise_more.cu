// The CUDA kernels of the comparisons, logical, bitwise and math ops (ew_unit 1).
#include "ops/cuda/elementwise_kernels.cuh"

namespace arrayport::ops::cuda {
const ew_table elementwise_table_more = make_kernel_table<kernels<1>, op_id, ew_fn, op_count>();
}  // namespace arrayport::ops::cuda
