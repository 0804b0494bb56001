// The one kernel every binding example exposes: x *= f, in place, on any strided float32 vector.
//
// On the GPU (a CUDA build, memory the device reaches: device, managed or pinned) it runs on the
// stream given, asynchronously; on host memory it runs on the CPU. scale.cpp is compiled as CUDA
// where the toolkit is, as C++ elsewhere; the bindings call it through this declaration.
#pragma once

#include <arrayport/memory_kind.hpp>
#include <arrayport/view.hpp>

namespace example {

/// x *= f. Device-reachable memory is scaled on the GPU on `stream` (CUDA builds with a GPU);
/// host memory on the CPU. Throws arrayport::cuda_error / value_error.
void scale(arrayport::view<float, 1> x, float f, arrayport::stream_handle stream);

}  // namespace example
