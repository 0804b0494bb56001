# The C++ sources of arrayport._core, listed once: the module (src/CMakeLists.txt) and the
# instrumented fuzzing library (tests/fuzz) both build from this list.
set(ARRAYPORT_CORE_SOURCES
  module.cpp
  array.cpp
  consume.cpp
  array_copy.cpp
  dlpack_export.cpp
  cuda.cpp
  errors.cpp
  scalars.cpp
  arguments.cpp
  runtime_info.cpp
  ops/python.cpp
  ops/dispatch.cpp
  ops/cpu/elementwise.cpp
  ops/cpu/reduce.cpp
  ops/cpu/parallel.cpp)
