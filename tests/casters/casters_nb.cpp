#include <arrayport/bind/nanobind.hpp>

#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "casters.hpp"

NB_MODULE(casters_nb, m) {
#define CASTERS_DEF(name) \
  m.def(#name, [](casters::types::name x) { return casters::describe(x); });
  CASTERS_TYPED(CASTERS_DEF)
  m.def("strided", [](arrayport::strided_view x) { return casters::describe(x); });
  m.def("kind", [](arrayport::view<const float, 1>) { return "float32"; });
  m.def("kind", [](arrayport::view<const double, 1>) { return "float64"; });
}
