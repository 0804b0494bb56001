// The example kernel through pybind11: any float32 vector from any library, scaled in place.
#include <arrayport/bind/pybind11.hpp>

#include "scale.hpp"

namespace py = pybind11;

PYBIND11_MODULE(scale_pybind11, m) {
  m.def("scale", [](arrayport::view<float, 1> x, float f) {
          example::scale(x, f, arrayport::python::current_stream());
        }, py::arg("x"), py::arg("f"), "x *= f in place, on the current stream for GPU memory.");
  m.def("scale_on_producer_stream",
        [](arrayport::on_producer_stream<arrayport::view<float, 1>> x, float f) {
          example::scale(x.view, f, x.stream);
        }, py::arg("x"), py::arg("f"), "x *= f in place, on the stream x's producer works on.");
  m.def("kind", [](arrayport::view<const float, 1>) { return "float32"; });
  m.def("kind", [](arrayport::view<const double, 1>) { return "float64"; });
  // An untyped strided view takes any array: any dtype, rank and memory.
  m.def("ndim", [](arrayport::strided_view x) { return x.ndim(); });
  m.def("arange", [](std::int64_t n) {
    arrayport::vector<float> v(static_cast<std::size_t>(n), 0.0f, arrayport::memory_kind::host);
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i);
    return v;
  });
}
