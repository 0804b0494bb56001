// The runtime shim: the one place in arrayport that calls the CUDA runtime, one concern a file.
//
// Every other header goes through these functions, so a CPU-only build (ARRAYPORT_HAS_CUDA == 0)
// compiles the same headers. Each file under runtime/ holds its CUDA calls in one
// `#if ARRAYPORT_HAS_CUDA` block whose `#else` is the no-GPU fallback: a HIP port maps those
// blocks.
#pragma once

#include <arrayport/runtime/fork.hpp>     // fork() children of a CUDA process refuse CUDA
#include <arrayport/runtime/check.hpp>    // cudaError_t -> cuda_error, ARRAYPORT_CUDA_CHECK
#include <arrayport/runtime/probe.hpp>    // is CUDA usable; what memory is reachable
#include <arrayport/runtime/device.hpp>   // current device, properties, device_guard
#include <arrayport/runtime/stream.hpp>   // streams, events, ordering streams
#include <arrayport/runtime/pointer.hpp>  // what memory a pointer points to
#include <arrayport/runtime/memory.hpp>   // allocation, pools, peer access
#include <arrayport/runtime/copy.hpp>     // copies, memsets, managed prefetch and advice
