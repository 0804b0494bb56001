// The element-wise iteration machinery shared by the CPU and CUDA kernels: one call described
// type-erased (operands, broadcast and collapsed layout), and the converting loads/stores.
//
// The dispatcher (dispatch.cpp) broadcasts every operand to the output shape (stride 0 where an
// operand repeats), drops extents of 1 and merges dimensions that are contiguous in every operand,
// so most calls reach a kernel as one flat dimension. Kernels are instantiated per (op, result
// dtype) only: an input of another dtype is converted in its load, never by a kernel per pair.
#pragma once

#include "ops/op_id.hpp"
#include "ops/types.hpp"

#include <arrayport/c/view.h>
#include <arrayport/memory_kind.hpp>

#include <cstdint>

namespace arrayport::ops {

inline constexpr int max_inputs = 3;

/// One input: an array (data, its dtype) or a scalar already converted to the op's argument dtype.
struct ew_operand {
  const char* data;                      ///< address of element 0, or nullptr for a scalar
  type_id type;                          ///< dtype of `data`'s elements
  alignas(16) unsigned char scalar[16];  ///< the scalar, one element of the argument dtype
};

/// Shape and per-operand strides after broadcasting and collapsing. Strides are in BYTES (the
/// operands may differ in itemsize) and 64-bit, as every index is.
template <int K>
struct ew_layout {
  int ndim;
  std::int64_t shape[K > 0 ? K : 1];
  std::int64_t strides[max_inputs + 1][K > 0 ? K : 1];  ///< [0]: the output, [1 + i]: input i
};

/// One element-wise call, type-erased.
struct ew_call {
  op_id op;
  type_id compute;  ///< the result dtype the kernel is instantiated for
  int n_inputs;
  char* out;  ///< the output (its dtype is result_storage_t of op and compute)
  ew_operand in[max_inputs];
  std::int64_t size;  ///< elements of the output
  /// Every array operand (and the output) is contiguous over `size` elements and already of the
  /// dtype its argument loads as: the flat, vectorisable path applies.
  bool flat;
  op_params params;
  ew_layout<ARRAYPORT_MAX_NDIM> layout;
  stream_handle stream;  ///< CUDA: the stream to enqueue on
};

/// Whether a copy (astype) call is one dense run from an array of another dtype: the input and
/// the output (items of `out_itemsize` bytes) each contiguous over the call's elements. Both
/// backends then loop once per source dtype instead of asking each element which load applies.
inline bool is_contiguous_conversion(const ew_call& c, std::size_t out_itemsize) noexcept {
  const auto& L = c.layout;
  return L.ndim == 1 && c.in[0].data && L.strides[0][0] == std::int64_t(out_itemsize) &&
         L.strides[1][0] == std::int64_t(to_dtype(c.in[0].type).itemsize());
}

/// A kernel entry: runs one call (the CPU one returns when done; the CUDA one once enqueued).
using ew_fn = void (*)(const ew_call&);

/// Loads the element at `p` (of dtype `t`) as storage or compute type C.
template <class C>
ARRAYPORT_HOST_DEVICE inline C load_as(const char* p, type_id t) {
  switch (t) {
    case type_id::bool_: return convert<C>(*reinterpret_cast<const std::uint8_t*>(p) != 0);
    case type_id::uint8: return convert<C>(*reinterpret_cast<const std::uint8_t*>(p));
    case type_id::int32: return convert<C>(*reinterpret_cast<const std::int32_t*>(p));
    case type_id::int64: return convert<C>(*reinterpret_cast<const std::int64_t*>(p));
    case type_id::float16: return convert<C>(*reinterpret_cast<const float16_t*>(p));
    case type_id::bfloat16: return convert<C>(*reinterpret_cast<const bfloat16_t*>(p));
    case type_id::float32: return convert<C>(*reinterpret_cast<const float*>(p));
    case type_id::float64: return convert<C>(*reinterpret_cast<const double*>(p));
    case type_id::complex64: return convert<C>(*reinterpret_cast<const complex<float>*>(p));
    case type_id::complex128: return convert<C>(*reinterpret_cast<const complex<double>*>(p));
    case type_id::uint64: return convert<C>(*reinterpret_cast<const std::uint64_t*>(p));
    default: return C{};
  }
}

/// Loads the element at `p` (of dtype `t`) as the compute type of storage type A. A 16-bit float
/// kernel computes in float, but its inputs are rounded to A first, as NumPy casts them to the
/// loop's dtype (a double rounded to float on the way would be rounded twice).
template <class A>
ARRAYPORT_HOST_DEVICE inline compute_t<A> load_converting(const char* p, type_id t) {
  if constexpr (std::is_same_v<compute_t<A>, A>)
    return load_as<A>(p, t);
  else
    return convert<compute_t<A>>(load_as<A>(p, t));
}

/// Loads one element of storage type A (bool read as a byte, so any nonzero byte is true).
template <class A>
ARRAYPORT_HOST_DEVICE inline compute_t<A> load_direct(const A* p) {
  if constexpr (std::is_same_v<A, bool>)
    return *reinterpret_cast<const std::uint8_t*>(p) != 0;
  else
    return convert<compute_t<A>>(*p);
}

/// The scalar of an operand as the compute type of A.
template <class A>
inline compute_t<A> scalar_value(const ew_operand& o) {
  A v;
  std::memcpy(&v, o.scalar, sizeof v);
  return load_direct(&v);
}

}  // namespace arrayport::ops
