// Per-argument cost of a checked typed view: arrayport's nanobind caster against nb::ndarray,
// the raw buffer protocol and a no-op, for the benchmark in bench/bench_consume.py.
#include <arrayport/bind/nanobind.hpp>

#include <nanobind/ndarray.h>

namespace nb = nanobind;

NB_MODULE(consume_nb, m) {
  // The floor returns what the others return (1000, an int Python allocates; 0 is cached), so
  // that the difference is the consumption alone.
  m.def("noop", [](nb::handle h) { return h.ptr() ? std::int64_t{1000} : 0; });
  // Any device (nb::ndarray's default) and any memory arrayport can reach: the same checks.
  m.def("arrayport", [](arrayport::view<float, 1> x) { return x.extent(0); });
  // A read-only parameter: what an input is (and all that immutable JAX arrays give).
  m.def("arrayport_const", [](arrayport::view<const float, 1> x) { return x.extent(0); });
  m.def("nb_ndarray_const", [](nb::ndarray<const float, nb::ndim<1>> x) { return static_cast<std::int64_t>(x.shape(0)); });
  m.def("nb_ndarray", [](nb::ndarray<float, nb::ndim<1>> x) { return static_cast<std::int64_t>(x.shape(0)); });
  m.def("raw_buffer", [](nb::handle h) {
    Py_buffer b;
    if (PyObject_GetBuffer(h.ptr(), &b, PyBUF_RECORDS_RO) != 0) throw nb::python_error();
    const std::int64_t n = b.ndim == 1 && b.itemsize == 4 ? b.shape[0] : -1;
    PyBuffer_Release(&b);
    return n;
  });
}
