// NumPy's ndarray as its C ABI lays it out (PyArrayObject_fields, and PyArray_Descr up to
// type_num, in the layout NumPy 1.x and 2.x share): a public ABI, so extensions read exact
// ndarrays inline (acquire.hpp's fast path) and arrayport._core reads the others.
//
// The buffer protocol costs NumPy a format string per call, and us its parsing: about 80 ns of a
// 180 ns argument. Arrays these fields do not describe exactly (non-native byte order, a dtype
// arrayport has no name for, strides that are not whole items) go through the buffer protocol.
#pragma once

#include <Python.h>

#include <arrayport/config.hpp>
#include <arrayport/dtype.hpp>
#include <arrayport/layout.hpp>

#include <cstdint>

namespace ARRAYPORT_NAMESPACE {
namespace python {
namespace numpy {

struct array_fields {
  PyObject_HEAD char* data;
  int nd;
  Py_ssize_t* dimensions;
  Py_ssize_t* strides;
  PyObject* base;
  PyObject* descr;
  int flags;
};

struct descr_head {
  PyObject_HEAD PyTypeObject* typeobj;
  char kind;
  char type;
  char byteorder;
  char flags_1x;  // NumPy 1.x flags; 2.x: unused
  int type_num;
};

inline constexpr int writeable = 0x0400;  // NPY_ARRAY_WRITEABLE

/// The dtype of a NumPy type number (NPY_BOOL .. NPY_HALF), or false for the others.
inline bool to_dtype(int type_num, arrayport::dtype& out) noexcept {
  constexpr std::uint8_t long_bits = 8 * sizeof(long);
  switch (type_num) {
    case 0: out = dtypes::bool_; return true;
    case 1: out = dtypes::int8; return true;
    case 2: out = dtypes::uint8; return true;
    case 3: out = dtypes::int16; return true;
    case 4: out = dtypes::uint16; return true;
    case 5: out = dtypes::int32; return true;
    case 6: out = dtypes::uint32; return true;
    case 7: out = arrayport::dtype(ARRAYPORT_DTYPE_INT, long_bits); return true;
    case 8: out = arrayport::dtype(ARRAYPORT_DTYPE_UINT, long_bits); return true;
    case 9: out = dtypes::int64; return true;
    case 10: out = dtypes::uint64; return true;
    case 11: out = dtypes::float32; return true;
    case 12: out = dtypes::float64; return true;
    case 14: out = dtypes::complex64; return true;
    case 15: out = dtypes::complex128; return true;
    case 23: out = dtypes::float16; return true;
    default: return false;
  }
}

/// The dtype of an array's descriptor when the fields describe it exactly: native byte order, a
/// dtype arrayport names, at most ARRAYPORT_MAX_NDIM axes. false for the buffer protocol to say.
inline bool described(const array_fields* a, arrayport::dtype& dt) noexcept {
  const auto* d = reinterpret_cast<const descr_head*>(a->descr);
  return d && d->byteorder != '>' && a->nd >= 0 && a->nd <= ARRAYPORT_MAX_NDIM &&
         to_dtype(d->type_num, dt);
}

/// The shape and strides (in items) of an array the fields describe, with the checks the engine
/// makes of them: strides of whole items, an addressable layout (layout.hpp), a non-empty array's
/// data inside the address space. false: the engine decides, and says why. `Rank` >= 0: the
/// caller has checked that the array has that many axes (the loops then unroll).
template <int Rank = -1>
inline bool read_geometry(const array_fields* a, std::int64_t itemsize, std::int64_t* shape,
                          std::int64_t* strides) noexcept {
  const int nd = Rank >= 0 ? Rank : a->nd;
  // The itemsizes arrayport names are powers of two: a mask and a shift, not a 64-bit division
  // per axis, on every call of the inline path.
  if (itemsize <= 0 || (itemsize & (itemsize - 1)) != 0) return false;
  int shift = 0;
  while ((std::int64_t{1} << shift) != itemsize) ++shift;
  for (int i = 0; i < nd; ++i) {
    const std::int64_t stride = a->strides[i];
    if ((stride & (itemsize - 1)) != 0) return false;
    shape[i] = a->dimensions[i];
    strides[i] = stride >> shift;  // exact: a multiple of itemsize, negative ones too
  }
  const layout_info l = measure_layout(shape, strides, nd, itemsize);
  return l.ok() && (l.count == 0 || (a->data && fits_address_space(a->data, l)));
}

}  // namespace numpy
}  // namespace python
}  // namespace arrayport
