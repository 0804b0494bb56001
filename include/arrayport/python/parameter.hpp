// A view-typed function parameter as the binding adapters (nanobind.hpp, pybind11.hpp) load it:
// the constraints its C++ type implies, the two-pass load of python::argument, and the view.
//
// Binder-neutral (CPython API only): each adapter's type caster forwards to a `parameter<View>`
// and adds only its library's spelling of the cast operators and of "a Python error is set".
#pragma once

#include <arrayport/python/acquire.hpp>
#include <arrayport/view.hpp>

#include <cstddef>
#include <type_traits>

namespace arrayport::python {

/// What a view type asks of its argument, and how the view comes out of the acquired array.
template <class View>
struct view_traits;

template <class T, std::size_t Rank, class Space>
struct view_traits<arrayport::view<T, Rank, Space>> {
  static constraints make() noexcept { return typed_constraints<T, Rank, Space>::make("array"); }
  static constexpr bool reads_only = std::is_const_v<T>;  // a const view: the callee only reads
  // The constraints were checked by acquire, so as() does not throw here.
  static arrayport::view<T, Rank, Space> get(const acquired& a) {
    return a.template as<T, Rank, Space>();
  }
  // An exact Array or NumPy array that meets the constraints, straight from its struct.
  static bool fast(PyObject* src, arrayport::view<T, Rank, Space>& out) noexcept {
    return detail::typed_view_fast(src, out);
  }
};

template <>
struct view_traits<strided_view> {
  static constraints make() noexcept { return {}; }
  static constexpr bool reads_only = false;  // the callee may take a writable typed view of it
  static strided_view get(const acquired& a) noexcept { return a.view(); }
  static bool fast(PyObject*, strided_view&) noexcept { return false; }  // needs the holder
};

/// A parameter of type `View` (arrayport::view<T, Rank, Space> or strided_view). Overloads
/// resolve as python::argument describes: load() refuses non-arrays in both passes, and arrays
/// that violate the constraints in the strict pass; in the convert pass it keeps the violation,
/// which value() raises when the call starts.
template <class View>
class parameter {
 public:
  bool load(PyObject* src, bool convert) noexcept {
    // The argument outlives the call, so the fast path takes no reference and no holder.
    if (src && !m_arg.failed() && view_traits<View>::fast(src, m_value)) return true;
    if (!m_arg.load(src, convert, view_traits<View>::make(), view_traits<View>::reads_only)) return false;
    if (!m_arg.failed()) m_value = view_traits<View>::get(m_arg.held());
    return true;
  }

  /// The view; nullptr with the Python error set when load() kept a violation (the adapter then
  /// throws its library's "error already set").
  View* value() noexcept { return m_arg.set_error_if_failed() ? nullptr : &m_value; }

 private:
  argument m_arg;
  View m_value;
};

}  // namespace arrayport::python
