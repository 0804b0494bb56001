// The Python module my_kernels._ext through nanobind (the default; BINDING=pybind11 picks
// bind_pybind11.cpp instead): saxpy(a, x, y) takes float32 vectors from any array library.
#include <arrayport/bind/nanobind.hpp>

#include <exception>

#include "saxpy.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

#if MY_KERNELS_CUDA
template <class T>
using vector_view = arrayport::view<T, 1>;  // any memory: saxpy runs where y is
#else
template <class T>
using vector_view = arrayport::host_view<T, 1>;  // device arrays get a precise error, not a crash
#endif

void saxpy(float a, vector_view<const float> x, vector_view<float> y) {
  // The stream `with arrayport.cuda.Stream():` made current (the legacy one otherwise); the
  // arrays' producers' pending work is already ordered before it.
  const arrayport::stream_handle stream = arrayport::python::current_stream();
  nb::gil_scoped_release unlocked;  // the kernel touches no Python object
  my_kernels::saxpy(a, x, y, stream);
}

}  // namespace

NB_MODULE(_ext, m) {
  // arrayport's C++ exceptions become the Python exceptions arrayport raises: value_error ->
  // ValueError, cuda_error -> arrayport.CudaError (with code, name, api, sticky), ...
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const arrayport::error&) {
      arrayport::python::set_error_from_current_exception();
    }
  });
  m.def("saxpy", &saxpy, "a"_a, "x"_a, "y"_a,
        "y = a * x + y, in place, for float32 vectors of equal length (any strides). On the GPU, "
        "on arrayport's current stream, when y is in GPU memory; on the CPU otherwise.");
  m.attr("built_with_cuda") = bool(MY_KERNELS_CUDA);
}
