# The C++ sources of arrayport._core, listed once: the module (src/CMakeLists.txt) and the
# instrumented fuzzing library (tests/fuzz) both build from this list.
include("${CMAKE_CURRENT_LIST_DIR}/ops/sources.cmake")
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
  bind/ops.cpp
  bind/operands.cpp
  bind/result.cpp
  bind/elementwise.cpp
  bind/reduce.cpp
  bind/device.cpp
  ${ARRAYPORT_OPS_SOURCES})
