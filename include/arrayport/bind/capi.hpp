// The raw CPython API adapter: an `O&` converter for PyArg_ParseTuple and friends.
//
//   arrayport::capi::arg<float, 1> x("x");
//   float f;
//   if (!PyArg_ParseTuple(args, "O&f", arrayport::capi::convert<float, 1>, &x, &f)) return nullptr;
//   scale(x.view(), f);   // x releases the producer when it goes out of scope
//
// A violation sets TypeError / ValueError / BufferError naming the argument; the converter
// returns 0 and PyArg_ParseTuple returns false, as the CPython contract asks.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/python/acquire.hpp>

namespace ARRAYPORT_NAMESPACE {
namespace capi {

/// A parsed array argument: the checked typed view and what keeps it valid.
template <class T, std::size_t Rank, class Space = any_space>
class arg {
 public:
  explicit arg(const char* name) noexcept : m_name(name) {}
  const arrayport::view<T, Rank, Space>& view() const noexcept { return m_view; }
  const python::acquired& held() const noexcept { return m_held; }

  /// Acquires `obj`; returns false with a Python error set on failure.
  bool load(PyObject* obj) noexcept {
    try {
      python::acquire_options o;
      o.call_scoped = true;
      o.reads_only = std::is_const_v<T>;
      m_held = python::acquire(obj, python::typed_constraints<T, Rank, Space>::make(m_name), o);
      m_view = m_held.template as<T, Rank, Space>(m_name);
      return true;
    } catch (...) {
      python::set_error_from_current_exception();
      return false;
    }
  }

 private:
  const char* m_name;
  python::acquired m_held;
  arrayport::view<T, Rank, Space> m_view;
};

/// The `O&` converter for arg<T, Rank, Space>.
template <class T, std::size_t Rank, class Space = any_space>
int convert(PyObject* obj, void* out) noexcept {
  return static_cast<arg<T, Rank, Space>*>(out)->load(obj) ? 1 : 0;
}

}  // namespace capi
}  // namespace arrayport
