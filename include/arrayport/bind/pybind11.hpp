// pybind11 type casters: arrayport::view<T, Rank, Space> and strided_view parameters take any
// array (NumPy, CuPy, PyTorch, JAX, Numba, CAI objects, arrayport.Array), and so does
// on_producer_stream<View> on the producer's stream; arrayport::vector<T> return values become an
// arrayport.Array without a copy.
//
//   #include <arrayport/bind/pybind11.hpp>
//   m.def("scale", [](arrayport::view<float, 1> x, float f) { ... });
//
// Overloads resolve as in nanobind.hpp: the no-convert pass takes only arrays that meet the
// constraints; the convert pass takes any array and raises the precise error when the call starts.
#pragma once

#include <arrayport/python/export.hpp>
#include <arrayport/python/parameter.hpp>

#include <pybind11/pybind11.h>

#include <utility>

namespace pybind11::detail {

// One caster body for every view type; python::parameter holds what is binder-neutral.
template <class View>
struct arrayport_view_caster {
  using Value = View;
  static constexpr auto name = const_name("arrayport.ArrayLike");
  template <typename T_>
  using cast_op_type = movable_cast_op_type<T_>;

  bool load(handle src, bool convert) { return param.load(src.ptr(), convert); }

  operator Value*() { return &checked(); }
  operator Value&() { return checked(); }
  operator Value&&() && { return std::move(checked()); }
  // A violation found in the convert pass is raised here, when the call starts.
  Value& checked() {
    if (Value* v = param.value()) return *v;
    throw ::pybind11::error_already_set();
  }

  arrayport::python::parameter<View> param;
};

template <class T, std::size_t Rank, class Space>
struct type_caster<arrayport::view<T, Rank, Space>>
    : arrayport_view_caster<arrayport::view<T, Rank, Space>> {};

template <>
struct type_caster<arrayport::strided_view> : arrayport_view_caster<arrayport::strided_view> {};

template <class View>
struct type_caster<arrayport::on_producer_stream<View>>
    : arrayport_view_caster<arrayport::on_producer_stream<View>> {};

template <class T>
struct type_caster<arrayport::vector<T>> {
  using Value = arrayport::vector<T>;
  static constexpr auto name = const_name("arrayport.Array");
  template <typename T_>
  using cast_op_type = movable_cast_op_type<T_>;

  bool load(handle, bool) { return false; }  // return-only

  static handle cast(Value&& v, return_value_policy, handle) {
    try {
      return arrayport::python::to_array(std::move(v));
    } catch (...) {
      arrayport::python::set_error_from_current_exception();
      throw error_already_set();
    }
  }

  operator Value&&() && { return std::move(value); }
  Value value;
};

}  // namespace pybind11::detail
