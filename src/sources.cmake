# The C++ sources of arrayport._core, listed once: the module (src/CMakeLists.txt) and the
# instrumented fuzzing library (tests/fuzz) both build from this list.
set(ARRAYPORT_CORE_SOURCES
  module/module.cpp
  array/array.cpp
  consume.cpp
  array/array_copy.cpp
  array/dlpack_export.cpp
  cuda/cuda.cpp
  cuda/device.cpp
  cuda/event.cpp
  cuda/stream.cpp
  common/errors.cpp
  common/scalars.cpp
  common/arguments.cpp
  module/runtime_info.cpp
  ops/python.cpp
  ops/dispatch.cpp
  ops/cpu/elementwise.cpp
  ops/cpu/reduce.cpp
  ops/cpu/parallel.cpp)
