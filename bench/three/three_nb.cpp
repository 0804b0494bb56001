// The three-argument call of bench/bench_three.py through arrayport's nanobind caster and through
// nb::ndarray, each argument a 1-d float32 array in CUDA memory, and the no-op floor.
#include <arrayport/bind/nanobind.hpp>

#include <nanobind/ndarray.h>

#include <cstdint>

namespace nb = nanobind;

using nb_cuda = nb::ndarray<float, nb::ndim<1>, nb::device::cuda>;

NB_MODULE(three_nb, m) {
  m.def("noop3", [](nb::handle a, nb::handle b, nb::handle c) {
    return a.ptr() && b.ptr() && c.ptr() ? std::int64_t{1000} : 0;
  });
  m.def("arrayport3", [](arrayport::device_view<float, 1> a, arrayport::device_view<float, 1> b,
                         arrayport::device_view<float, 1> c) {
    return a.extent(0) + b.extent(0) + c.extent(0) + 1000;
  });
  m.def("nb_ndarray3", [](nb_cuda a, nb_cuda b, nb_cuda c) {
    return static_cast<std::int64_t>(a.shape(0) + b.shape(0) + c.shape(0)) + 1000;
  });
}
