// The pybind11 side of the consume benchmark: arrayport's pybind11 caster against py::buffer and
// py::array_t (host arrays only: pybind11 has no device protocol).
#include <arrayport/bind/pybind11.hpp>

#include <pybind11/numpy.h>

namespace py = pybind11;

PYBIND11_MODULE(consume_pb, m) {
  m.def("arrayport", [](arrayport::view<float, 1> x) { return x.extent(0); });
  m.def("py_buffer", [](py::buffer b) {
    py::buffer_info info = b.request();
    if (info.ndim != 1 || info.format != py::format_descriptor<float>::format()) throw py::type_error("float32 1-d");
    return static_cast<std::int64_t>(info.shape[0]);
  });
  m.def("array_t", [](py::array_t<float, py::array::forcecast> a) { return static_cast<std::int64_t>(a.shape(0)); });
}
