// repr of arrayport.Array: dtype, shape, memory, device and up to 6 leading values (copied to
// the host to print).
#include "array/array_internal.hpp"
#include "common/errors.hpp"
#include "common/gil.hpp"

#include <arrayport/layout.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace arrayport::ext {
namespace {

// Up to `count` leading elements of `a` in C order, copied to the host.
std::vector<unsigned char> leading_elements(array_object* a, std::int64_t count) {
  const std::size_t itemsize = itemsize_of(a);
  std::vector<unsigned char> head(static_cast<std::size_t>(count) * itemsize);
  const auto kind = static_cast<memory_kind>(a->view.memory_kind);
  runtime::require_reachable(kind, "Array.__repr__", "the array");
  if (count <= 0) return head;
  const int ndim = a->view.ndim;
  std::vector<std::int64_t> index(static_cast<std::size_t>(ndim), 0);
  gil_release release;
  if (is_host_accessible(kind)) runtime::stream_synchronize(a->view.stream, array_device(a));
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t offset = 0;  // in bounds of the Array's checked layout: cannot overflow
    element_offset(index.data(), a->view.strides, ndim, offset);
    const char* element =
        static_cast<const char*>(a->view.data) + offset * static_cast<std::int64_t>(itemsize);
    unsigned char* out = head.data() + static_cast<std::size_t>(i) * itemsize;
    if (is_host_accessible(kind))
      std::memcpy(out, element, itemsize);
    else
      runtime::memcpy_async(out, memory_kind::host, element, kind, itemsize, a->view.stream,
                            "Array.__repr__");  // a few bytes each
    for (int k = ndim - 1; k >= 0; --k) {       // the next index in C order
      if (++index[static_cast<std::size_t>(k)] < a->view.shape[k]) break;
      index[static_cast<std::size_t>(k)] = 0;
    }
  }
  if (!is_host_accessible(kind)) runtime::stream_synchronize(a->view.stream, array_device(a));
  return head;
}

std::string format_element(const unsigned char* p, dtype dt) {
  char buf[96];
  const element_value e = decode_element(p, dt);
  switch (e.kind) {
    case element_value::boolean: return e.u ? "True" : "False";
    case element_value::signed_int: return std::to_string(e.i);
    case element_value::unsigned_int: return std::to_string(e.u);
    case element_value::complex: std::snprintf(buf, sizeof buf, "(%.6g%+.6gj)", e.re, e.im); break;
    case element_value::real: std::snprintf(buf, sizeof buf, "%.6g", e.re); break;
  }
  return buf;
}

}  // namespace

PyObject* array_repr(PyObject* self) {
  return guarded<PyObject*>(nullptr, [&]() -> PyObject* {
    array_object* a = as_array(self);
    dtype dt = dtype::from_c(a->view.dtype);
    auto kind = static_cast<memory_kind>(a->view.memory_kind);
    std::string values;
    if (runtime::is_reachable(kind)) {
      const std::int64_t n = element_count(a->view);
      const std::int64_t shown = n < 6 ? n : 6;
      const std::vector<unsigned char> head = leading_elements(a, shown);
      for (std::int64_t i = 0; i < shown; ++i)
        values += (i ? ", " : "") + format_element(head.data() + i * dt.itemsize(), dt);
      if (n > shown) values += ", ...";
      values = "[" + values + "]";
    } else {  // repr never raises: it says what it cannot show
      values = "<" + std::string(to_string(kind)) + " memory, not readable here>";
    }
    const std::string shape = shape_string(a->view.shape, a->view.ndim);
    std::string device =
        is_gpu_resident(kind) ? ", device=" + std::to_string(a->view.device.device_id) : "";
    std::string r = "arrayport.Array(" + values + ", dtype=" + std::string(dt.name()) +
                    ", shape=" + shape + ", memory='" + std::string(to_string(kind)) + "'" +
                    device + ((a->view.flags & ARRAYPORT_VIEW_READONLY) ? ", readonly=True" : "") +
                    ")";
    return PyUnicode_FromString(r.c_str());
  });
}

}  // namespace arrayport::ext
