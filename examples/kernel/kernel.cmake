# Shared by the examples: the kernel as a static library, compiled as CUDA when the installed
# arrayport was built with CUDA (the same .cpp files, so there is one kernel), as C++ otherwise.
set(EXAMPLE_KERNEL_DIR "${CMAKE_CURRENT_LIST_DIR}")
if(arrayport_HAS_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
  endif()
  enable_language(CUDA)
  set_source_files_properties("${EXAMPLE_KERNEL_DIR}/scale.cpp" PROPERTIES LANGUAGE CUDA)
endif()
add_library(example_kernel STATIC "${EXAMPLE_KERNEL_DIR}/scale.cpp" "${EXAMPLE_KERNEL_DIR}/scale_c.cpp")
set_target_properties(example_kernel PROPERTIES POSITION_INDEPENDENT_CODE ON CUDA_RUNTIME_LIBRARY Static)
target_include_directories(example_kernel PUBLIC "${EXAMPLE_KERNEL_DIR}")
target_link_libraries(example_kernel PUBLIC arrayport::arrayport)
