// Allocating the results of arrayport.ops calls.
#include "bind/result.hpp"

#include <arrayport/layout.hpp>

#include <nanobind/nanobind.h>

#include <new>
#include <string>

namespace nb = nanobind;

namespace arrayport::ext {

void allocate_output(output_holder& h, const char* op_name, dtype dt, const std::int64_t* shape,
                     int nd, const ops::placement& where, stream_handle stream, const int* order) {
  const auto itemsize = static_cast<std::int64_t>(dt.itemsize());
  const layout_info l = measure_layout(shape, nullptr, nd, itemsize);  // count * itemsize
  if (!l.ok())
    throw value_error(std::string(op_name) + ": the result would have shape " +
                      arrayport::detail::tuple_string(shape, nd) + " of " + std::string(dt.name()) +
                      ", 2^63 bytes or more");
  for (int i = 0; i < nd; ++i) h.extents[i] = shape[i];
  compact_strides(shape, nd, h.extents + nd, itemsize);
  // Every partial product of the extents is at most their product (none is zero), checked above.
  for (std::int64_t step = 1, k = order ? nd : 0; k-- > 0;) {
    h.extents[nd + order[k]] = step;
    step *= shape[order[k]];
  }
  const auto bytes = static_cast<std::size_t>(l.nbytes);
  try {
    h.storage = buffer(bytes, where.out_kind, where.device, stream);
  } catch (const std::bad_alloc&) {  // host memory; device memory throws out_of_memory
    const std::string msg = std::string(op_name) + ": out of memory for the result of shape " +
                            arrayport::detail::tuple_string(shape, nd) + " of " +
                            std::string(dt.name()) + " (" + std::to_string(bytes) + " bytes of " +
                            std::string(to_string(where.out_kind)) + " memory)";
    PyErr_SetString(PyExc_MemoryError, msg.c_str());
    throw nb::python_error();
  }
  h.c.version = {ARRAYPORT_C_ABI_VERSION_MAJOR, ARRAYPORT_C_ABI_VERSION_MINOR};
  h.c.data = h.storage.data();
  h.c.ndim = nd;
  h.c.shape = h.extents;
  h.c.strides = h.extents + nd;
  h.c.dtype = dt.to_c();
  h.c.memory_kind = static_cast<std::uint32_t>(h.storage.kind());
}

}  // namespace arrayport::ext
