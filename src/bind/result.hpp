// The result of an arrayport.ops call: a freshly allocated compact output.
#pragma once

#include "ops/dispatch.hpp"

#include <arrayport/buffer.hpp>
#include <arrayport/c/view.h>

#include <cstdint>

namespace arrayport::ext {

/// A fresh compact output and its view.
struct output_holder {
  buffer storage;
  arrayport_view_t c{};
  std::int64_t extents[2 * ARRAYPORT_MAX_NDIM];
};

/// Allocates `h` for a result of `shape` and `dt` where `where` says, on `stream`. The size is
/// checked first: broadcasting can make a result far larger than any input (shapes (2^40, 1) and
/// (1, 2^40) of zero-stride inputs). `order`: the axes from outermost to innermost in memory (a
/// permutation of 0..nd-1, for a shape without zero extents); nullptr: C order. Messages name
/// `op_name`.
void allocate_output(output_holder& h, const char* op_name, dtype dt, const std::int64_t* shape,
                     int nd, const ops::placement& where, stream_handle stream,
                     const int* order = nullptr);

}  // namespace arrayport::ext
