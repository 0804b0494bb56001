#include <arrayport/bind/pybind11.hpp>

#include <pybind11/stl.h>

#include "casters.hpp"

PYBIND11_MODULE(casters_pb, m) {
#define CASTERS_DEF(name) \
  m.def(#name, [](casters::types::name x) { return casters::describe(x); });
  CASTERS_TYPED(CASTERS_DEF)
  m.def("strided", [](arrayport::strided_view x) { return casters::describe(x); });
  m.def("kind", [](arrayport::view<const float, 1>) { return "float32"; });
  m.def("kind", [](arrayport::view<const double, 1>) { return "float64"; });
}
