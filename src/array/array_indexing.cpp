// Views of arrayport.Array (no copies): basic indexing a[key], transpose and .T, reshape, and
// view(dtype).
#include "array/array_internal.hpp"
#include "common/errors.hpp"

#include <arrayport/layout.hpp>
#include <arrayport/python/limited_api.hpp>

#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {

[[noreturn]] void index_error(const std::string& msg) {
  PyErr_SetString(PyExc_IndexError, msg.c_str());
  throw nb::python_error();
}

[[noreturn]] void not_an_index(PyObject* item, const char* why) {
  index_error(std::string("only integers, slices (':'), ellipsis ('...') and None are valid "
                          "indices (arrayport has no advanced indexing); got ") +
              python::limited::tp_name(Py_TYPE(item)) + why);
}

}  // namespace

// Basic indexing as NumPy defines it: ints, slices (any step), Ellipsis and None. Shared by
// __getitem__ (a view) and __setitem__ (the target of a copy).
basic_index resolve_basic_index(array_object* a, PyObject* key) {
  nb::object items = PyTuple_Check(key) ? nb::borrow(key) : nb::make_tuple(nb::handle(key));
  const Py_ssize_t n = python::limited::tuple_size(items.ptr());
  int consumed = 0, ellipses = 0;
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject* item = python::limited::tuple_item(items.ptr(), k);
    if (item == Py_Ellipsis)
      ++ellipses;
    else if (item != Py_None)
      ++consumed;
  }
  if (ellipses > 1) index_error("an index can only have a single ellipsis ('...')");
  if (consumed > a->view.ndim)
    index_error("too many indices for array: array is " + std::to_string(a->view.ndim) +
                "-dimensional, but " + std::to_string(consumed) + " were indexed");
  const std::int64_t itemsize = static_cast<std::int64_t>(itemsize_of(a));
  // The first element's index, offset applied once at the end: an empty array may have no data
  // pointer to offset (and its offset is then never used).
  std::vector<std::int64_t> first(static_cast<std::size_t>(a->view.ndim), 0);
  std::vector<std::int64_t> shape, strides;
  int axis = 0;
  auto keep_axis = [&](int ax) {
    shape.push_back(a->view.shape[ax]);
    strides.push_back(a->view.strides[ax]);
  };
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject* item = python::limited::tuple_item(items.ptr(), k);
    if (item == Py_Ellipsis) {
      for (int skip = a->view.ndim - consumed; skip > 0; --skip) keep_axis(axis++);
    } else if (item == Py_None) {
      shape.push_back(1);
      strides.push_back(0);
    } else if (PySlice_Check(item)) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(item, &start, &stop, &step) < 0) throw nb::python_error();
      const std::int64_t len =
          PySlice_AdjustIndices(static_cast<Py_ssize_t>(a->view.shape[axis]), &start, &stop, step);
      if (len > 0) first[static_cast<std::size_t>(axis)] = start;
      shape.push_back(len);
      // stride * step addresses an element only when len > 1; for one element or none a huge
      // step may overflow it (in bytes, as .strides reports it), and any stride is as good:
      // NumPy's product where it fits, else the axis's own.
      std::int64_t stride = 0, bytes = 0;
      if (arrayport::detail::mul_overflow(a->view.strides[axis], static_cast<std::int64_t>(step),
                                          &stride) ||
          arrayport::detail::mul_overflow(stride, itemsize, &bytes))
        stride = a->view.strides[axis];
      strides.push_back(stride);
      ++axis;
    } else if (!PyBool_Check(item) && PyIndex_Check(item) &&
               (!is_array(item) || (as_array(item)->view.ndim == 0 &&
                                    dtype::from_c(as_array(item)->view.dtype).is_integer()))) {
      Py_ssize_t i = PyNumber_AsSsize_t(item, PyExc_IndexError);
      if (i == -1 && PyErr_Occurred()) {
        // An __index__ that refuses (NumPy's for an array of more than one element, or of
        // floats) says nothing of indexing: the key is no index here.
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw nb::python_error();
        PyErr_Clear();
        not_an_index(item, " (its __index__ refused)");
      }
      const std::int64_t size = a->view.shape[axis];
      if (i < -size || i >= size)
        index_error("index " + std::to_string(i) + " is out of bounds for axis " +
                    std::to_string(axis) + " with size " + std::to_string(size));
      if (i < 0) i += size;
      first[static_cast<std::size_t>(axis)] = i;
      ++axis;
    } else {
      not_an_index(item, "");
    }
  }
  while (axis < a->view.ndim) keep_axis(axis++);
  if (shape.size() > ARRAYPORT_MAX_NDIM)
    index_error("the result would have more than " + std::to_string(ARRAYPORT_MAX_NDIM) +
                " dimensions");
  // In bounds of an addressable layout (layout.hpp): the offset is inside its span.
  std::int64_t offset = 0;
  if (!element_offset(first.data(), a->view.strides, a->view.ndim, offset) ||
      arrayport::detail::mul_overflow(offset, itemsize, &offset))
    throw value_error("index: the element's offset does not fit in int64");
  char* data = static_cast<char*>(a->view.data);
  if (data) data += offset;
  return {data, std::move(shape), std::move(strides)};
}

// Integer indices on every axis give a 0-d Array (as CuPy does: the element may be on the device).
PyObject* array_subscript(PyObject* self, PyObject* key) {
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* {
    array_object* a = as_array(self);
    basic_index r = resolve_basic_index(a, key);
    return make_view(a, r.data, r.shape, r.strides, dtype::from_c(a->view.dtype), "index");
  });
}

// transpose(*axes): a permutation of the axes (reversed when none is given).
PyObject* array_transpose(PyObject* self, PyObject* args) {
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* {
    array_object* a = as_array(self);
    const int ndim = a->view.ndim;
    std::vector<int> perm;
    nb::object axes = nb::borrow(args);
    if (python::limited::tuple_size(args) == 1 &&
        PySequence_Check(python::limited::tuple_item(args, 0)) &&
        !PyUnicode_Check(python::limited::tuple_item(args, 0)))
      axes = nb::borrow(python::limited::tuple_item(args, 0));
    if (python::limited::tuple_size(args) == 1 && python::limited::tuple_item(args, 0) == Py_None)
      axes = nb::tuple();
    std::vector<int> given;  // every axis an int before the count is compared (NumPy's order)
    for (nb::handle h : axes)
      given.push_back(static_cast<int>(
          int_arg(h.ptr(), "transpose", "axes", INT32_MIN, INT32_MAX, "ints that fit an int")));
    if (given.empty()) {
      for (int i = ndim - 1; i >= 0; --i) perm.push_back(i);
    } else {
      if (static_cast<int>(given.size()) != ndim)
        throw value_error("transpose: axes don't match array: expected " + std::to_string(ndim) +
                          " axes, got " + std::to_string(given.size()));
      std::vector<bool> seen(static_cast<std::size_t>(ndim), false);
      for (int ax : given) {
        if (ax < -ndim || ax >= ndim)
          throw value_error("transpose: axis " + std::to_string(ax) +
                            " is out of bounds for an array of dimension " + std::to_string(ndim));
        if (ax < 0) ax += ndim;
        if (seen[static_cast<std::size_t>(ax)])
          throw value_error("transpose: repeated axis " + std::to_string(ax));
        seen[static_cast<std::size_t>(ax)] = true;
        perm.push_back(ax);
      }
    }
    std::vector<std::int64_t> shape, strides;
    for (int ax : perm) {
      shape.push_back(a->view.shape[ax]);
      strides.push_back(a->view.strides[ax]);
    }
    return make_view(a, static_cast<char*>(a->view.data), shape, strides,
                     dtype::from_c(a->view.dtype), "transpose");
  });
}

PyObject* get_T(PyObject* self, void*) {
  nb::object empty = nb::steal(PyTuple_New(0));
  return array_transpose(self, empty.ptr());
}

// reshape(shape): a view with a new shape (one extent may be -1). Needs a C-contiguous array.
PyObject* array_reshape(PyObject* self, PyObject* args) {
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* {
    array_object* a = as_array(self);
    if (python::limited::tuple_size(args) == 0)
      throw type_error("reshape: expected a shape (an int, ints or a tuple of ints), got none");
    nb::handle spec = python::limited::tuple_size(args) == 1
                          ? nb::handle(python::limited::tuple_item(args, 0))
                          : nb::handle(args);
    std::vector<std::int64_t> shape;
    int infer = -1;
    auto add = [&](nb::handle h) {
      std::int64_t e =
          int_arg(h.ptr(), "reshape", "shape", INT64_MIN, INT64_MAX, "ints that fit int64");
      if (e == -1) {
        if (infer >= 0) throw value_error("reshape: can only specify one unknown dimension (-1)");
        infer = static_cast<int>(shape.size());
      } else if (e < 0) {
        throw value_error("reshape: shape: expected non-negative extents or -1, got " +
                          std::to_string(e));
      }
      shape.push_back(e);
    };
    if (!PySequence_Check(spec.ptr()) || PyUnicode_Check(spec.ptr()))
      add(spec);  // one extent
    else
      for (nb::handle h : nb::borrow<nb::sequence>(spec)) add(h);
    const int ndim = static_cast<int>(shape.size());
    if (ndim > ARRAYPORT_MAX_NDIM)
      throw value_error("reshape: at most " + std::to_string(ARRAYPORT_MAX_NDIM) + " dimensions");
    // The product of the given extents (-1 counting as 1), checked: past 2^63-1 no array fits it.
    std::vector<std::int64_t> given = shape;
    if (infer >= 0) given[static_cast<std::size_t>(infer)] = 1;
    std::int64_t known = 0;
    if (arrayport::element_count(given.data(), ndim, known) != layout_status::ok) {
      const auto itemsize = static_cast<std::int64_t>(itemsize_of(a));
      if (infer < 0) check_layout("reshape", shape.data(), nullptr, ndim, itemsize);
      arrayport::detail::big_uint n(1);
      for (std::int64_t e : given) n *= static_cast<std::uint64_t>(e);
      throw value_error("reshape: the extents of shape " + shape_string(shape) +
                        " other than -1 have " + n.str() + " elements, more than 2^63-1");
    }
    const std::int64_t size = element_count(a->view);
    if (infer >= 0) {
      if (known == 0 || size % known != 0)
        throw value_error("reshape: cannot reshape an array of size " + std::to_string(size) +
                          " into the given shape");
      shape[static_cast<std::size_t>(infer)] = size / known;
    } else if (known != size) {
      throw value_error("reshape: cannot reshape an array of size " + std::to_string(size) +
                        " into a shape of size " + std::to_string(known));
    }
    if (!is_c_contiguous(a->view))
      throw value_error(
          "reshape: only C-contiguous arrays can be reshaped without a copy; this one "
          "is not (copy it first)");
    std::vector<std::int64_t> strides(shape.size());
    compact_strides(shape.data(), ndim, strides.data(), static_cast<std::int64_t>(itemsize_of(a)));
    return make_view(a, static_cast<char*>(a->view.data), shape, strides,
                     dtype::from_c(a->view.dtype), "reshape");
  });
}

nb::object broadcast_view(nb::handle a_obj, nb::handle shape_obj) {
  array_object* a = require_array(a_obj, "x");
  if (!PySequence_Check(shape_obj.ptr()) || PyUnicode_Check(shape_obj.ptr()))
    throw type_error("broadcast_to: shape: expected a sequence of ints, got " +
                     type_name_of(shape_obj.ptr()));
  std::vector<std::int64_t> shape;
  for (nb::handle h : nb::borrow<nb::sequence>(shape_obj))
    shape.push_back(int_arg(h.ptr(), "broadcast_to", "shape", 0, INT64_MAX,
                            "non-negative ints that fit int64"));
  const int ndim = static_cast<int>(shape.size()), src = a->view.ndim;
  const std::vector<std::int64_t> from(a->view.shape, a->view.shape + src);
  const auto refuse = [&](const std::string& why) {
    throw value_error("broadcast_to: cannot broadcast an array of shape " + shape_string(from) +
                      " to " + shape_string(shape) + ": " + why);
  };
  if (ndim > ARRAYPORT_MAX_NDIM)
    refuse("more than " + std::to_string(ARRAYPORT_MAX_NDIM) + " dimensions");
  if (ndim < src) refuse("the shape has fewer dimensions than the array");
  std::vector<std::int64_t> strides(static_cast<std::size_t>(ndim), 0);
  for (int i = 0; i < src; ++i) {
    const auto d = static_cast<std::size_t>(ndim - src + i);
    if (from[static_cast<std::size_t>(i)] == shape[d])
      strides[d] = a->view.strides[i];
    else if (from[static_cast<std::size_t>(i)] != 1)
      refuse("axis " + std::to_string(i) + " has extent " +
             std::to_string(from[static_cast<std::size_t>(i)]) + ", neither 1 nor " +
             std::to_string(shape[d]));
  }
  nb::object v = nb::steal(make_view(a, static_cast<char*>(a->view.data), shape, strides,
                                     dtype::from_c(a->view.dtype), "broadcast_to"));
  as_array(v.ptr())->view.flags |= ARRAYPORT_VIEW_READONLY;  // many elements share one place
  return v;
}

// view(dtype): the same memory as another dtype, with NumPy's rules. The same itemsize keeps any
// layout; another itemsize needs the last axis contiguous, and scales its extent.
PyObject* array_view(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"dtype", nullptr};
  PyObject* dtype_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:view", const_cast<char**>(keywords),
                                   &dtype_obj))
    return nullptr;
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* {
    array_object* a = as_array(self);
    const dtype from = dtype::from_c(a->view.dtype);
    const dtype to = dtype_obj == Py_None ? from : parse_dtype(dtype_obj);
    const int ndim = a->view.ndim;
    std::vector<std::int64_t> shape(a->view.shape, a->view.shape + ndim);
    std::vector<std::int64_t> strides(a->view.strides, a->view.strides + ndim);
    const auto old_size = static_cast<std::int64_t>(from.itemsize());
    const auto new_size = static_cast<std::int64_t>(to.itemsize());
    if (old_size != new_size) {
      const std::string what = "view: dtype " + std::string(to.name()) + " (itemsize " +
                               std::to_string(new_size) + ") of an array of " +
                               std::string(from.name()) + " (itemsize " + std::to_string(old_size) +
                               ")";
      if (ndim == 0)
        throw value_error(what +
                          ": a 0-d array can only be viewed as a dtype of the same itemsize");
      const std::size_t last = static_cast<std::size_t>(ndim - 1);
      if (shape[last] != 1 && element_count(a->view) != 0 && strides[last] != 1)
        throw value_error(what + ": the last axis must be contiguous, but its stride is " +
                          std::to_string(strides[last] * old_size) + " bytes");
      const std::int64_t bytes = shape[last] * old_size;
      if (bytes % new_size != 0)
        throw value_error(what + ": the last axis holds " + std::to_string(bytes) +
                          " bytes, not a multiple of the new itemsize");
      shape[last] = bytes / new_size;
      strides[last] = 1;
      // The other strides are kept in bytes; the view ABI counts them in elements of the new dtype.
      for (std::size_t i = 0; i < last; ++i) {
        // (An empty array's strides address nothing: NumPy views it whatever they are.)
        if (shape[i] != 1 && element_count(a->view) != 0 && (strides[i] * old_size) % new_size != 0)
          throw value_error(what + ": the stride of axis " + std::to_string(i) + " (" +
                            std::to_string(strides[i] * old_size) +
                            " bytes) is not a multiple of the new itemsize");
        strides[i] = strides[i] * old_size / new_size;
      }
    }
    return make_view(a, static_cast<char*>(a->view.data), shape, strides, to, "view");
  });
}

}  // namespace arrayport::ext
