// Build configuration: whether CUDA is compiled in, and the host/device annotations.
#pragma once

#include <arrayport/version.h>

// ARRAYPORT_HAS_CUDA: 1 when the CUDA runtime is compiled in. The CMake target arrayport::arrayport
// defines it; otherwise it follows the compiler (nvcc implies CUDA).
#ifndef ARRAYPORT_HAS_CUDA
#if defined(__CUDACC__)
#define ARRAYPORT_HAS_CUDA 1
#else
#define ARRAYPORT_HAS_CUDA 0
#endif
#endif

#if defined(__CUDACC__)
#define ARRAYPORT_HOST_DEVICE __host__ __device__
#else
#define ARRAYPORT_HOST_DEVICE
#endif
