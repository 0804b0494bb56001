// NumPy arrays read from their struct (python/numpy.hpp): the view the buffer protocol would give,
// without its format string.
#include "bridge/buffer.hpp"
#include "bridge/checks.hpp"

#include <arrayport/python/numpy.hpp>

namespace arrayport::bridge {

bool from_numpy(held& a, const python::constraints& c, PyObject* obj) {
  const auto* n = reinterpret_cast<const python::numpy::array_fields*>(obj);
  arrayport::dtype dt;
  if (!python::numpy::described(n, dt)) return false;
  const auto itemsize = static_cast<Py_ssize_t>(dt.itemsize());
  for (int i = 0; i < n->nd; ++i)
    if (n->strides[i] % itemsize != 0) return false;
  const bool readonly = (n->flags & python::numpy::writeable) == 0;
  if (readonly && c.writable) fail_buffer(c, obj, "expected a writable array, got a read-only one");
  std::int64_t* ext = a.extents(n->nd);
  for (int i = 0; i < n->nd; ++i) {
    ext[i] = n->dimensions[i];
    ext[n->nd + i] = n->strides[i] / itemsize;
  }
  fill_view(a.view, n->data, n->nd, ext, dt.to_c(), memory_kind::host, 0, readonly, obj);
  a.from = held::source::reference;  // the held producer keeps data and struct alive
  return true;
}

}  // namespace arrayport::bridge
