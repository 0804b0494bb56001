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

// For the per-call fast paths of the Python-facing headers: every call inside is inlined, with the
// parameter's rank and itemsize as constants, even in extensions built for size (nanobind's -Os
// leaves measure_layout and dtype comparisons out of line).
#if defined(__GNUC__) || defined(__clang__)
#define ARRAYPORT_FLATTEN __attribute__((flatten))
#else
#define ARRAYPORT_FLATTEN
#endif

// What the Python-facing headers (python/, bind/capi.hpp) open: code that every extension
// compiles in and that talks to arrayport._core is hidden in that extension's shared object, as
// pybind11's and nanobind's namespaces are, so two extensions built against different arrayport
// versions never bind to each other's copy even when a loader shares symbols (RTLD_GLOBAL). The
// C++ core keeps default visibility: its types live in any program's classes without warnings.
#ifndef ARRAYPORT_NAMESPACE
#if defined(__GNUC__) && !defined(_WIN32)
#define ARRAYPORT_NAMESPACE arrayport __attribute__((visibility("hidden")))
#else
#define ARRAYPORT_NAMESPACE arrayport
#endif
#endif
