// The C ABI of the example kernel: exceptions become a return code and a message.
#include "scale_c.h"

#include "scale.hpp"

#include <cstdio>
#include <exception>

extern "C" int example_scale(float* x, int64_t n, int64_t stride, float f, void* stream,
                             char* error, int error_size) {
  try {
    const std::int64_t shape[1] = {n}, strides[1] = {stride};
    example::scale(arrayport::view<float, 1>(x, shape, strides), f, stream);
    return 0;
  } catch (const std::exception& e) {
    if (error && error_size > 0) std::snprintf(error, static_cast<std::size_t>(error_size), "%s", e.what());
    return -1;
  }
}
