# The sources of the kernel library (paths from src/), listed once: _core (src/sources.cmake and
# src/CMakeLists.txt) and the C++ tests (tests/cpp) compile them.
# Longest to compile first (ninja starts a first build's files in this order).
set(ARRAYPORT_OPS_SOURCES
  ops/cpu/elementwise_more.cpp
  ops/cpu/elementwise.cpp
  ops/cpu/reduce.cpp
  ops/dispatch.cpp
  ops/promotion.cpp
  ops/cpu/parallel.cpp
  ops/cpu/vector_math.cpp
  ops/cpu/vector_powf.cpp
  ops/cpu/convert_run.cpp)
# The CPU kernels' C++ options: without errno, sqrt is one vector instruction (with it, a libm
# call on each negative input), as NumPy's loops compute it.
set(ARRAYPORT_OPS_CXX_OPTIONS $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU,Clang>>:-fno-math-errno>)
set(ARRAYPORT_OPS_CUDA_SOURCES
  ops/cuda/reduce.cu
  ops/cuda/elementwise_more.cu
  ops/cuda/elementwise.cu)
