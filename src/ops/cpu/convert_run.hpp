// Converting a run of elements to another dtype, for the strided kernels' mixed-dtype operands.
#pragma once

#include "ops/types.hpp"

#include <cstdint>

namespace arrayport::ops::cpu {

/// out[j] = the element at p + j * stride (dtype `from`) as storage type `to`, for j < n, with
/// the converting loads' semantics (load_as). One loop per dtype pair, compiled once: converting
/// inside each op's own loop took half the compile time of the element-wise kernels.
void convert_run(type_id to, void* out, const char* p, std::int64_t stride, std::int64_t n,
                 type_id from) noexcept;

}  // namespace arrayport::ops::cpu
