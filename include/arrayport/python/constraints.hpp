// What a consumer asks of an array argument (constraints) and how it will use the view
// (acquire_options): the vocabulary of acquire.hpp, of the adapters and of arrayport._core's
// consume engine, which receives them through the C API's request (python/api.h).
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/python/api.h>

#include <arrayport/dtype.hpp>
#include <arrayport/error.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/view.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ARRAYPORT_NAMESPACE {
namespace python {

/// The object offers no array protocol at all (as opposed to an array that violates a
/// constraint): binding adapters let other overloads try it.
class not_an_array : public type_error {
 public:
  using type_error::type_error;
};

/// The memory layout a parameter needs.
enum class order : std::uint8_t {
  any,  ///< any strides
  c,    ///< C-contiguous (row-major)
  f     ///< Fortran-contiguous (column-major)
};

/// Where the memory must be reachable from.
enum class reach : std::uint8_t {
  any,    ///< anywhere (the callee looks at memory_kind itself)
  host,   ///< host code dereferences it: host, pinned or managed memory
  device  ///< device code dereferences it: device, managed or pinned memory
};

/// The exchange protocols, as bits (acquire_options::protocols restricts the choice).
enum protocol : std::uint32_t {
  protocol_array = ARRAYPORT_PROTOCOL_ARRAY,        ///< arrayport.Array
  protocol_exchange = ARRAYPORT_PROTOCOL_EXCHANGE,  ///< DLPack C exchange API
  protocol_buffer = ARRAYPORT_PROTOCOL_BUFFER,      ///< buffer protocol
  protocol_dlpack = ARRAYPORT_PROTOCOL_DLPACK,      ///< __dlpack__
  protocol_cai = ARRAYPORT_PROTOCOL_CAI,            ///< __cuda_array_interface__
  protocol_cupy =
      ARRAYPORT_PROTOCOL_CUPY,  ///< a CuPy ndarray read from its struct (__dlpack__'s semantics)
  protocol_all = ARRAYPORT_PROTOCOL_ALL
};

/// What a parameter accepts. Unset fields accept anything.
struct constraints {
  const char* name = "array";                ///< the argument's name, for error messages
  const arrayport::dtype* dtypes = nullptr;  ///< accepted dtypes (n_dtypes of them); none: any
  std::size_t n_dtypes = 0;
  int ndim = -1;                        ///< required rank; -1: any
  const std::int64_t* shape = nullptr;  ///< ndim extents, -1 for any; nullptr: any shape
  order layout = order::any;
  reach where = reach::any;
  bool writable = false;  ///< the callee writes through the view
};

/// The ARRAYPORT_ACQUIRE_* bits stating `c`'s writability, reach and order (a request's flags).
constexpr std::uint32_t acquire_flags(const constraints& c) noexcept {
  return (c.writable ? ARRAYPORT_ACQUIRE_WRITABLE : 0u) |
         (c.where == reach::host ? ARRAYPORT_ACQUIRE_HOST : 0u) |
         (c.where == reach::device ? ARRAYPORT_ACQUIRE_DEVICE : 0u) |
         (c.layout == order::c ? ARRAYPORT_ACQUIRE_C_ORDER : 0u) |
         (c.layout == order::f ? ARRAYPORT_ACQUIRE_F_ORDER : 0u);
}

/// The reverse of acquire_flags: `flags` set into `c` (the caller refuses contradicting bits).
constexpr void apply_acquire_flags(constraints& c, std::uint32_t flags) noexcept {
  c.writable = (flags & ARRAYPORT_ACQUIRE_WRITABLE) != 0;
  c.where = (flags & ARRAYPORT_ACQUIRE_HOST)     ? reach::host
            : (flags & ARRAYPORT_ACQUIRE_DEVICE) ? reach::device
                                                 : reach::any;
  c.layout = (flags & ARRAYPORT_ACQUIRE_C_ORDER)   ? order::c
             : (flags & ARRAYPORT_ACQUIRE_F_ORDER) ? order::f
                                                   : order::any;
}

/// Whether an arrayport view can be read on `consumer` with no stream ordering: pageable host
/// memory (no GPU writes it), or data ready on that very stream (an Array's view.stream).
inline bool ready_on(const arrayport_view_t& v, stream_handle consumer) noexcept {
  return v.memory_kind == static_cast<std::uint32_t>(memory_kind::host) || v.stream == consumer;
}

/// How long the view must live, and which stream the consumer works on.
struct acquire_options {
  /// The consumer's stream: the producer's pending work is ordered before it (DLPack stream
  /// handshake, or an event wait for __cuda_array_interface__ and the exchange API). Defaults to
  /// arrayport's current stream.
  stream_handle stream = nullptr;
  bool stream_given = false;
  /// false: no stream ordering at all (as CUPY_CUDA_ARRAY_INTERFACE_SYNC=0 / NUMBA_CUDA_
  /// ARRAY_INTERFACE_SYNC=0 offer); the caller orders the work itself.
  bool sync = true;
  /// true: the view is used only until control returns to Python (a function call's argument);
  /// lets the exchange API skip building an owning tensor. false: the view may be kept.
  bool call_scoped = false;
  /// true: the consumer only reads through the view (a const view parameter), so an immutable
  /// producer's read-only export may serve: a ready JAX array, call-scoped, comes through its
  /// __cuda_array_interface__ instead of __dlpack__.
  bool reads_only = false;
  /// true (call-scoped, typed constraints): the view may hold nothing at all, not even the
  /// producer, which the caller holds for the call (CuPy, JAX and exchange-API producers whose
  /// streams need no ordering).
  bool borrow = false;
  /// true: the consumer works on the producer's current stream (PyTorch's, CuPy's; arrayport's
  /// for the others) instead of `stream`, and the view's `stream` names it: no event is needed.
  bool producer_stream = false;
  std::uint32_t protocols = protocol_all;  ///< which protocols may be used
};

/// Constraints for a typed view parameter: its dtype, rank, space and constness.
template <class T, std::size_t Rank, class Space>
struct typed_constraints {
  static constexpr arrayport::dtype dtype = dtype_of<std::remove_cv_t<T>>;
  static constexpr constraints make(const char* name) noexcept {
    constraints c;
    c.name = name;
    c.dtypes = &dtype;
    c.n_dtypes = 1;
    c.ndim = static_cast<int>(Rank);
    c.where = std::is_same_v<Space, device_space> ? reach::device
              : std::is_same_v<Space, host_space> ? reach::host
                                                  : reach::any;
    c.writable = !std::is_const_v<T>;
    return c;
  }
};

}  // namespace python
}  // namespace arrayport
