// The buffer protocol: PEP 3118's contracts that the view's bounds rest on are checked, and an
// exporter's failures are told apart from arrays that break the caller's constraints.
#include "bridge/buffer.hpp"

#include "bridge/checks.hpp"

#include <arrayport/dtype.hpp>
#include <arrayport/python/api.hpp>
#include <arrayport/python/spellings.hpp>

#include <string>

namespace arrayport::bridge {

void from_buffer(held& a, const python::constraints& c, PyObject* obj) {
  int flags = PyBUF_RECORDS_RO | (c.writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj, &a.buffer, flags) != 0) {
    if (c.writable) {
      // Read-only data refuses PyBUF_WRITABLE in the exporter's own words and type (NumPy:
      // ValueError, memoryview: BufferError): say it ours, the same for every producer.
      PyObject *type, *value, *trace;
      PyErr_Fetch(&type, &value, &trace);
      if (PyObject_GetBuffer(obj, &a.buffer, PyBUF_RECORDS_RO) == 0) {
        PyBuffer_Release(&a.buffer);
        PyErr_Clear();  // one the exporter set with its buffer: the refusal below says it all
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(trace);
        fail_buffer(c, obj, "expected a writable array, got a read-only one");
      }
      PyErr_Clear();
      PyErr_Restore(type, value, trace);
    }
    producer_failed(c, obj, "the buffer export (bf_getbuffer)");
  }
  a.from = held::source::buffer;
  if (PyErr_Occurred()) {
    // Exported, and failed too: neither is to be trusted (release() gives the buffer back).
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    const std::string why = type && PyType_Check(type)
                                ? python::limited::tp_name(reinterpret_cast<PyTypeObject*>(type))
                                : std::string("an exception");
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(trace);
    fail_buffer(c, obj,
                "the exporter returned a buffer with " + why +
                    " set: expected a buffer or an error, not both");
  }
  const Py_buffer& b = a.buffer;
  arrayport::dtype dt;
  try {
    dt = parse_buffer_format(b.format, static_cast<std::size_t>(b.itemsize));
  } catch (const type_error& e) {
    fail_type(c, obj, e.what());
  } catch (const value_error& e) {
    fail_value(c, obj, e.what());
  }
  if (b.ndim < 0 || b.ndim > ARRAYPORT_MAX_NDIM)
    fail_value(c, obj,
               "expected at most " + std::to_string(ARRAYPORT_MAX_NDIM) + " dimensions, got " +
                   std::to_string(b.ndim));
  // Suboffsets (PIL-style indirection) are only for consumers that asked for them, which we do
  // not; a NULL shape describes one axis of len bytes; a buffer without strides is contiguous,
  // and len is product(shape) * itemsize.
  if (b.suboffsets)
    fail_buffer(c, obj,
                "the exporter returned suboffsets (an indirect buffer) to a request "
                "without PyBUF_INDIRECT: expected a strided buffer");
  if (!b.shape && b.ndim > 1)
    fail_buffer(c, obj,
                "the exporter returned no shape for " + std::to_string(b.ndim) +
                    " dimensions: expected a shape (PyBUF_ND was requested)");
  if (!b.shape && b.ndim == 1 && (b.len < 0 || b.len % b.itemsize != 0))
    fail_buffer(c, obj,
                "buffer len " + std::to_string(b.len) + " is not a whole number of items of " +
                    std::to_string(b.itemsize) + " bytes");
  std::int64_t* ext = a.extents(b.ndim);
  for (int i = b.ndim; i-- > 0;) {
    ext[i] = b.shape ? b.shape[i] : b.len / b.itemsize;
    if (b.strides) {
      if (b.strides[i] % b.itemsize != 0)
        fail_value(c, obj,
                   "stride " + std::to_string(b.strides[i]) + " of axis " + std::to_string(i) +
                       " is not a multiple of the itemsize " + std::to_string(b.itemsize));
      ext[b.ndim + i] = b.strides[i] / b.itemsize;
    }
  }
  if (!b.strides) {
    // Contiguous: the memory is exactly len bytes, so the shape must account for all of it.
    // (Negative extents are check_geometry's to report.)
    std::int64_t bytes = 0;
    const layout_status s = byte_count(ext, b.ndim, static_cast<std::int64_t>(b.itemsize), bytes);
    if (s != layout_status::negative_extent && (s != layout_status::ok || bytes != b.len))
      fail_buffer(
          c, obj,
          "shape " + shape_string(ext, b.ndim) + " of " + std::to_string(b.itemsize) +
              "-byte items needs " +
              (s != layout_status::ok ? std::string("more than 2^63-1") : std::to_string(bytes)) +
              " bytes, but the buffer has len " + std::to_string(b.len));
    require_compact_strides(c, obj, ext, b.ndim, ext + b.ndim,
                            static_cast<std::int64_t>(b.itemsize));
  }
  fill_view(a.view, b.buf, b.ndim, ext, dt.to_c(), memory_kind::host, 0, b.readonly != 0, obj);
}

}  // namespace arrayport::bridge
