// The example kernel through nanobind: any float32 vector from any library, scaled in place.
#include <arrayport/bind/nanobind.hpp>

#include "scale.hpp"

namespace nb = nanobind;

NB_MODULE(scale_nanobind, m) {
  m.def("scale", [](arrayport::view<float, 1> x, float f) {
          example::scale(x, f, arrayport::python::current_stream());
        }, nb::arg("x"), nb::arg("f"), "x *= f in place, on the current stream for GPU memory.");
  // The caller's stream: inside `with torch.cuda.stream(s):` the kernel runs on s, with no event.
  m.def("scale_on_producer_stream",
        [](arrayport::on_producer_stream<arrayport::view<float, 1>> x, float f) {
          example::scale(x.view, f, x.stream);
        }, nb::arg("x"), nb::arg("f"), "x *= f in place, on the stream x's producer works on.");
  // Overloads on dtype resolve in the strict pass.
  m.def("kind", [](arrayport::view<const float, 1>) { return "float32"; });
  m.def("kind", [](arrayport::view<const double, 1>) { return "float64"; });
  // An untyped strided view takes any array: any dtype, rank and memory.
  m.def("ndim", [](arrayport::strided_view x) { return x.ndim(); });
  // A C++ vector returned as an arrayport.Array without a copy.
  m.def("arange", [](std::int64_t n) {
    arrayport::vector<float> v(static_cast<std::size_t>(n), 0.0f, arrayport::memory_kind::host);
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i);
    return v;
  });
}
