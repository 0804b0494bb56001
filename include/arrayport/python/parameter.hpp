// A view-typed function parameter as the binding adapters (nanobind.hpp, pybind11.hpp) load it:
// the constraints its C++ type implies, the two-pass load of python::argument, and the view.
//
// Binder-neutral (CPython API only): each adapter's type caster forwards to a `parameter<View>`
// and adds only its library's spelling of the cast operators and of "a Python error is set".
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/python/acquire.hpp>
#include <arrayport/python/exchange.hpp>
#include <arrayport/view.hpp>

#include <cstddef>
#include <type_traits>

namespace ARRAYPORT_NAMESPACE {

/// A view parameter taken on its producer's stream (the caller's stream): the kernel runs where the
/// calling framework works, with no event between its work and the kernel. `stream` is PyTorch's
/// current stream for a PyTorch tensor (the DLPack exchange API's current_work_stream), CuPy's
/// for a CuPy array, and arrayport's current stream for every other producer (which arrayport
/// orders as it does for a plain view). Launch on `stream`; with several such parameters from
/// different frameworks, their streams may differ, and ordering them is the kernel's business.
///
///   m.def("scale", [](arrayport::on_producer_stream<arrayport::view<float, 1>> x, float f) {
///     launch_scale(x.view, f, x.stream);
///   });
template <class View>
struct on_producer_stream {
  View view;
  stream_handle stream = nullptr;
};

namespace python {

namespace detail {

// The typed parameters' inline fast path. A function argument (call-scoped: the caller holds the
// object until the call returns) that is an exact arrayport.Array or numpy.ndarray, or of a type
// whose DLPack exchange table _core has published (public ABIs), and meets every constraint of
// view<T, Rank, Space> becomes the view with no holder, no reference and no call into
// arrayport._core. CuPy, JAX and other exchange-API producers are borrowed by the engine's
// borrow_typed (C API 1.3). Anything else returns false: acquire() decides, with its messages.
// With `producer_stream`, the view is taken on its producer's stream, which is stored there
// (on_producer_stream).
template <class T, std::size_t Rank, class Space>
ARRAYPORT_FLATTEN inline bool typed_view_fast(PyObject* obj, arrayport::view<T, Rank, Space>& out,
                                              stream_handle* producer_stream = nullptr) noexcept {
  using index_type = typename arrayport::view<T, Rank, Space>::index_type;
  constexpr arrayport::dtype expected = dtype_of<std::remove_cv_t<T>>;
  constexpr bool writes = !std::is_const_v<T>;
  constexpr std::size_t n = Rank > 0 ? Rank : 1;
  index_type shape[n] = {}, strides[n] = {};
  const arrayport_python_api_t* api = api_slot();
  if (!api) return false;
  PyTypeObject* type = Py_TYPE(obj);
  if (type == api->array_type) {
    // An Array's view was checked when the Array was made (geometry, dtype).
    const auto& v = *reinterpret_cast<const arrayport_view_t*>(reinterpret_cast<const char*>(obj) +
                                                               api->array_view_offset);
    if (arrayport::dtype::from_c(v.dtype) != expected || v.ndim != static_cast<int>(Rank) ||
        !Space::accepts(static_cast<memory_kind>(v.memory_kind)) ||
        (writes && (v.flags & ARRAYPORT_VIEW_READONLY)))
      return false;
    // Ready on another stream than the current one: the engine orders the two. Host memory is
    // ready everywhere, so the current stream is asked for only where it matters.
    const bool host = v.memory_kind == static_cast<std::uint32_t>(memory_kind::host);
    if (!host || producer_stream) {
      const stream_handle current = current_stream();
      if (!ready_on(v, current)) return false;
      if (producer_stream) *producer_stream = current;
    }
    for (std::size_t r = 0; r != Rank; ++r) {
      shape[r] = v.shape[r];
      strides[r] = v.strides[r];
    }
    out = arrayport::view<T, Rank, Space>(static_cast<T*>(v.data), shape, strides);
    return true;
  }
  if (api->abi_minor < 2 || type != *api->numpy_array_type || !type) {
    if (const arrayport_dlpack_exchange_api_t* x = published_exchange_api(*api, type))
      return exchange_typed_view(obj, *x, out, producer_stream);
    if (api->abi_minor < (producer_stream ? 4 : 3) || !api->borrow_typed) return false;
    constexpr std::uint32_t flags = acquire_flags(typed_constraints<T, Rank, Space>::make("array"));
    arrayport_view_t v;
    std::int64_t ext[2 * n];
    if (Rank > 8 ||
        api->borrow_typed(obj, expected.to_c(), static_cast<std::int32_t>(Rank),
                          flags | (producer_stream ? ARRAYPORT_BORROW_PRODUCER_STREAM : 0u), &v,
                          ext) != 1)
      return false;
    if (producer_stream) *producer_stream = static_cast<stream_handle>(v.stream);
    for (std::size_t r = 0; r != Rank; ++r) {
      shape[r] = ext[r];
      strides[r] = ext[Rank + r];
    }
    out = arrayport::view<T, Rank, Space>(static_cast<T*>(v.data), shape, strides);
    return true;
  }
  if (!Space::accepts(memory_kind::host)) return false;
  // The fields the engine reads, with the checks it makes of them (geometry, constraints).
  const auto* a = reinterpret_cast<const numpy::array_fields*>(obj);
  arrayport::dtype dt;
  if (a->nd != static_cast<int>(Rank) || !numpy::described(a, dt) || dt != expected ||
      (writes && (a->flags & numpy::writeable) == 0))
    return false;
  static_assert(std::is_same_v<index_type, std::int64_t>, "read_geometry fills int64 extents");
  if (!numpy::read_geometry<static_cast<int>(Rank)>(
          a, static_cast<std::int64_t>(expected.itemsize()), shape, strides))
    return false;
  if (producer_stream) *producer_stream = current_stream();
  out = arrayport::view<T, Rank, Space>(reinterpret_cast<T*>(a->data), shape, strides);
  return true;
}

}  // namespace detail

/// What a view type asks of its argument, and how the view comes out of the acquired array.
template <class View>
struct view_traits;

template <class T, std::size_t Rank, class Space>
struct view_traits<arrayport::view<T, Rank, Space>> {
  static constraints make() noexcept { return typed_constraints<T, Rank, Space>::make("array"); }
  static constexpr bool reads_only = std::is_const_v<T>;  // a const view: the callee only reads
  static constexpr bool borrows = true;  // the typed view copies shape and strides: none held
  static constexpr bool producer_stream = false;
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
  static constexpr bool borrows = false;     // the view points at the holder's extents
  static constexpr bool producer_stream = false;
  static strided_view get(const acquired& a) noexcept { return a.view(); }
  static bool fast(PyObject*, strided_view&) noexcept { return false; }  // needs the holder
};

template <class View>
struct view_traits<on_producer_stream<View>> {
  using inner = view_traits<View>;
  static constraints make() noexcept { return inner::make(); }
  static constexpr bool reads_only = inner::reads_only;
  static constexpr bool borrows = inner::borrows;
  static constexpr bool producer_stream = true;
  static on_producer_stream<View> get(const acquired& a) {
    return {inner::get(a), static_cast<stream_handle>(a.c_view().stream)};
  }
  static bool fast(PyObject* src, on_producer_stream<View>& out) noexcept {
    if constexpr (std::is_same_v<View, strided_view>) {
      return false;  // needs the holder
    } else {
      return detail::typed_view_fast(src, out.view, &out.stream);
    }
  }
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
    if (!m_arg.load(src, convert, view_traits<View>::make(), view_traits<View>::reads_only,
                    view_traits<View>::borrows, view_traits<View>::producer_stream))
      return false;
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

}  // namespace python
}  // namespace arrayport
