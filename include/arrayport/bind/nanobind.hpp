// nanobind type casters: arrayport::view<T, Rank, Space> and strided_view parameters take any
// array (NumPy, CuPy, PyTorch, JAX, Numba, CAI objects, arrayport.Array), and so does
// on_producer_stream<View> on the producer's stream; arrayport::vector<T> return values become an
// arrayport.Array without a copy.
//
//   #include <arrayport/bind/nanobind.hpp>
//   m.def("scale", [](arrayport::view<float, 1> x, float f) { ... });
//
// Overloads: the first pass (no implicit conversions) accepts only arrays that meet the view's
// dtype, rank, space and writability, so overloads on dtype resolve. In the second pass any array
// is accepted, and one that violates the constraints raises the precise TypeError / ValueError /
// BufferError when the call starts. Objects that are not arrays are left to other overloads.
#pragma once

#include <arrayport/python/export.hpp>
#include <arrayport/python/parameter.hpp>

#include <nanobind/nanobind.h>

#include <utility>

NAMESPACE_BEGIN(NB_NAMESPACE)
NAMESPACE_BEGIN(detail)

// One caster body for every view type; python::parameter holds what is binder-neutral.
template <class View>
struct arrayport_view_caster {
  using Value = View;
  static constexpr auto Name = const_name("arrayport.ArrayLike");
  template <typename T_>
  using Cast = movable_cast_t<T_>;
  template <typename T_>
  static constexpr bool can_cast() {
    return true;
  }

  bool from_python(handle src, uint8_t flags, cleanup_list*) noexcept {
    return param.load(src.ptr(), (flags & static_cast<uint8_t>(cast_flags::convert)) != 0);
  }

  explicit operator Value*() { return &checked(); }
  explicit operator Value&() { return checked(); }
  explicit operator Value&&() { return std::move(checked()); }
  // A violation found in the convert pass is raised here, when the call starts.
  Value& checked() {
    if (Value* v = param.value()) return *v;
    throw ::nanobind::python_error();
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
  static constexpr auto Name = const_name("arrayport.Array");
  template <typename T_>
  using Cast = movable_cast_t<T_>;
  template <typename T_>
  static constexpr bool can_cast() {
    return true;
  }

  bool from_python(handle, uint8_t, cleanup_list*) noexcept { return false; }  // return-only

  static handle from_cpp(Value&& v, rv_policy, cleanup_list*) noexcept {
    try {
      return arrayport::python::to_array(std::move(v));
    } catch (...) {
      arrayport::python::set_error_from_current_exception();
      return handle();
    }
  }

  explicit operator Value&&() { return std::move(value); }
  Value value;
};

NAMESPACE_END(detail)
NAMESPACE_END(NB_NAMESPACE)
