// A typed parameter's view of a producer with the DLPack C exchange API (PyTorch's tensors), read
// inline through the producer's non-owning DLTensor. The exchange API is a public, versioned ABI
// (dlpack.h), so an extension built today reads next year's PyTorch as well as arrayport._core.
#pragma once

#include <Python.h>

#include <arrayport/config.hpp>
#include <arrayport/dtype.hpp>
#include <arrayport/layout.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/python/api.hpp>
#include <arrayport/view.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ARRAYPORT_NAMESPACE {
namespace python {
namespace detail {

/// The exchange table of `type` where arrayport._core has published it (C API 1.5), else nullptr.
inline const arrayport_dlpack_exchange_api_t* published_exchange_api(
    const arrayport_python_api_t& api, PyTypeObject* type) noexcept {
  if (api.abi_minor < 5 || !api.exchange_types) return nullptr;
  for (int i = 0; i != ARRAYPORT_EXCHANGE_TYPES; ++i)
    if (api.exchange_types[i].type == type) return api.exchange_types[i].api;
  return nullptr;
}

/// Where a borrowed (non-owning) DLTensor of `rank` axes of `itemsize` bytes lies: its memory
/// kind, its data address (byte_offset applied), and its shape and strides in items (compact ones
/// where it states none), with every check the consume engine makes of such a tensor (its borrow,
/// bridge/exchange.cpp, calls this too). false: refused, for the general path to say why. The
/// dtype and the reach are the caller's to check.
inline bool borrowed_dl_geometry(const arrayport_dl_tensor_t& t, int rank, std::int64_t itemsize,
                                 memory_kind& kind, std::uintptr_t& address, std::int64_t* shape,
                                 std::int64_t* strides) noexcept {
  if (!kind_of_dlpack_device(t.device, kind) || t.ndim != rank || (rank > 0 && !t.shape) ||
      (is_gpu_resident(kind) && t.device.device_id < 0))
    return false;
  for (int r = 0; r != rank; ++r) {
    shape[r] = t.shape[r];
    strides[r] = t.strides ? t.strides[r] : 0;
  }
  if (!t.strides && !compact_strides(shape, rank, strides, itemsize)) return false;
  address = 0;
  if (t.data &&
      __builtin_add_overflow(reinterpret_cast<std::uintptr_t>(t.data), t.byte_offset, &address))
    return false;
  const layout_info l = measure_layout(shape, strides, rank, itemsize);
  return l.ok() &&
         (l.count == 0 || (address && fits_address_space(reinterpret_cast<void*>(address), l)));
}

/// The view of an argument `obj` through its producer's exchange table `x`, with the checks the
/// engine's borrow makes (bridge/exchange.cpp). Refused (false, no error set), for acquire() to
/// decide with its messages: a producer error, a violated constraint, geometry the engine would
/// refuse or refine (host memory for a device view may be pinned: CUDA is asked there), and GPU
/// memory whose producer stream is not the current one (unless `producer_stream`, which then
/// names the stream to work on).
template <class T, std::size_t Rank, class Space>
ARRAYPORT_FLATTEN inline bool exchange_typed_view(PyObject* obj,
                                                  const arrayport_dlpack_exchange_api_t& x,
                                                  arrayport::view<T, Rank, Space>& out,
                                                  stream_handle* producer_stream) noexcept {
  constexpr arrayport::dtype expected = dtype_of<std::remove_cv_t<T>>;
  constexpr auto itemsize = static_cast<std::int64_t>(expected.itemsize());
  constexpr std::size_t n = Rank > 0 ? Rank : 1;
  static_assert(Rank <= ARRAYPORT_MAX_NDIM, "a view has at most ARRAYPORT_MAX_NDIM axes");
  arrayport_dl_tensor_t t{};
  if (!x.dltensor_from_py_object_no_sync || x.dltensor_from_py_object_no_sync(obj, &t) != 0) {
    PyErr_Clear();  // acquire() asks again and reports it
    return false;
  }
  memory_kind kind;
  std::uintptr_t address = 0;
  std::int64_t shape[n] = {}, strides[n] = {};
  if (arrayport::dtype::from_c(t.dtype) != expected ||
      !borrowed_dl_geometry(t, static_cast<int>(Rank), itemsize, kind, address, shape, strides) ||
      !Space::accepts(kind))
    return false;
  stream_handle stream = nullptr;
  if (is_gpu_resident(kind)) {
    void* producer = nullptr;
    if (!x.current_work_stream ||
        x.current_work_stream(ARRAYPORT_DEVICE_CUDA, t.device.device_id, &producer) != 0) {
      PyErr_Clear();
      return false;
    }
    stream = static_cast<stream_handle>(producer);
    if (!producer_stream && stream != current_stream()) return false;  // streams to order
  } else if (producer_stream) {
    stream = current_stream();  // host memory states no stream: the caller's is arrayport's
  }
  if (producer_stream) *producer_stream = stream;
  out = arrayport::view<T, Rank, Space>(reinterpret_cast<T*>(address), shape, strides);
  return true;
}

}  // namespace detail
}  // namespace python
}  // namespace ARRAYPORT_NAMESPACE
