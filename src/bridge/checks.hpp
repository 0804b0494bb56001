// The checks every protocol reader shares, and their messages: each names the argument, what was
// expected and what came, and the producer's type.
#pragma once

#include <Python.h>

#include <arrayport/c/view.h>
#include <arrayport/layout.hpp>
#include <arrayport/python/constraints.hpp>

#include <cstdint>
#include <string>

namespace arrayport::bridge {

using python::constraints;

/// Interns `s` (callers keep the result in a function-local static); nullptr when out of memory.
inline PyObject* interned(const char* s) noexcept { return PyUnicode_InternFromString(s); }

/// "(3, 4)", "(5,)"; an extent of -1 (a constraint's "any") prints as "*".
std::string shape_string(const std::int64_t* shape, int ndim);

[[noreturn]] void fail_type(const constraints& c, PyObject* obj, const std::string& msg);
[[noreturn]] void fail_value(const constraints& c, PyObject* obj, const std::string& msg);
[[noreturn]] void fail_buffer(const constraints& c, PyObject* obj, const std::string& msg);
/// A producer's call (`what`) failed: its error stands; one it failed to set is a SystemError.
[[noreturn]] void producer_failed(const constraints& c, PyObject* obj, const char* what);

/// Compact row-major strides (in elements) for a producer that gave none; refused when one that
/// is needed does not fit in int64 bytes (nbytes does not either) and the array is not empty.
void require_compact_strides(const constraints& c, PyObject* obj, const std::int64_t* shape,
                             int ndim, std::int64_t* strides, std::int64_t itemsize);

/// Shape and strides a producer handed over: an addressable layout (layout.hpp), data present
/// when there are elements, and the bytes reached inside the address space.
void check_geometry(const constraints& c, PyObject* obj, const arrayport_view_t& v);

/// The caller's constraints: dtype, rank, shape, order, reach (host memory that CUDA says is
/// pinned or managed is refined in `v`) and writability.
void check_constraints(const constraints& c, PyObject* obj, arrayport_view_t& v);

/// The constraints a borrowed view serves (a typed parameter's: one dtype, a rank, no shape or
/// order): python::argument's typed loads, whose view needs no holder.
inline bool borrowable(const constraints& c) noexcept {
  return c.n_dtypes == 1 && c.ndim >= 0 && c.ndim <= 8 && !c.shape &&
         c.layout == python::order::any;
}

/// Whether memory of `kind` is where `c` wants it, without asking CUDA (acquire() asks).
inline bool reaches(const constraints& c, memory_kind kind) noexcept {
  return c.where == python::reach::any ||
         (c.where == python::reach::host ? is_host_accessible(kind) : is_device_accessible(kind));
}

/// A borrowed view's shape and strides (in items) into ext[0, 2 * rank), from a producer's
/// extents and strides (in units of `unit` bytes: the itemsize for byte strides, 1 for item
/// strides), with check_geometry's checks: false for a stride that is not whole items, a layout
/// that is not addressable, or a non-empty array at NULL or past the address space.
template <class Extent, class Stride>
bool borrowed_geometry(const Extent* extents, const Stride* strides, std::int64_t unit, int rank,
                       const void* data, std::int64_t itemsize, std::int64_t* ext) noexcept {
  // Units are itemsizes or 1, powers of two: a mask and a shift, not a 64-bit division per axis.
  if (unit <= 0 || (unit & (unit - 1)) != 0) return false;
  const int shift = __builtin_ctzll(static_cast<unsigned long long>(unit));
  for (int r = 0; r != rank; ++r) {
    const auto stride = static_cast<std::int64_t>(strides[r]);
    if ((stride & (unit - 1)) != 0) return false;
    ext[r] = static_cast<std::int64_t>(extents[r]);
    ext[rank + r] = stride >> shift;  // exact: a multiple of unit, negative ones too
  }
  const layout_info l = measure_layout(ext, ext + rank, rank, itemsize);
  return l.ok() && (l.count == 0 || (data && fits_address_space(data, l)));
}

/// The consumer's stream: the one given, else arrayport's current stream. Asked for only by the
/// device protocols, not for every NumPy array or buffer.
stream_handle consumer_stream(const python::acquire_options& o) noexcept;

/// Fills the fields of `v` that every reader sets, from what the producer said.
void fill_view(arrayport_view_t& v, void* data, int ndim, std::int64_t* extents,
               arrayport_dtype_t dtype, memory_kind kind, int device, bool readonly,
               PyObject* owner) noexcept;

}  // namespace arrayport::bridge
