// The CPU kernels of the comparisons, logical, bitwise and math ops (ew_unit 1).
#include "ops/cpu/elementwise_kernels.hpp"

namespace arrayport::ops::cpu {
const ew_table elementwise_table_more = make_kernel_table<kernels<1>, op_id, ew_fn, op_count>();
}  // namespace arrayport::ops::cpu
