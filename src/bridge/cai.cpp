// __cuda_array_interface__: every value is held from its lookup on, since the lookups that follow
// (a key's __eq__), the readonly flag's __bool__ and the messages' type names run Python code
// that may change the dict.
#include "bridge/cai.hpp"

#include "bridge/checks.hpp"

#include <arrayport/dtype.hpp>
#include <arrayport/python/api.hpp>
#include <arrayport/python/spellings.hpp>
#include <arrayport/runtime.hpp>

#include <string>
#include <string_view>

namespace arrayport::bridge {

using python::detail::py_ref;

PyObject* cai_key_object(cai_key k) noexcept {
  static PyObject* const keys[cai_keys] = {interned(cai_names[0]), interned(cai_names[1]),
                                           interned(cai_names[2]), interned(cai_names[3]),
                                           interned(cai_names[4]), interned(cai_names[5]),
                                           interned(cai_names[6])};
  return keys[k];
}

PyObject* cai_attribute() noexcept {
  static PyObject* const name = interned("__cuda_array_interface__");
  return name;
}

void from_cai(held& a, const python::constraints& c, PyObject* obj, stream_handle consumer,
              bool sync) {
  PyObject* name = cai_attribute();
  PyObject* d = name ? PyObject_GetAttr(obj, name) : nullptr;
  if (!d) producer_failed(c, obj, "__cuda_array_interface__");
  from_cai_dict(a, c, obj, d, consumer, sync);
}

memory_kind from_cai_dict(held& a, const python::constraints& c, PyObject* obj, PyObject* d,
                          stream_handle consumer, bool sync) {
  const py_ref hold = py_ref::steal(d);
  const std::string cai = "__cuda_array_interface__";
  if (!PyDict_Check(d))
    fail_value(c, obj, cai + " is a " + python::detail::type_name(d) + ", expected a dict");
  auto item = [&](cai_key key, bool required) -> py_ref {
    PyObject* k = cai_key_object(key);
    if (!k) {
      if (!PyErr_Occurred()) PyErr_NoMemory();  // interning failed (once, and is kept)
      throw python::error_already_set();
    }
    py_ref v = py_ref::borrow(PyDict_GetItemWithError(d, k));
    if (!v && PyErr_Occurred()) throw python::error_already_set();
    if (!v && required) fail_value(c, obj, cai + " has no '" + cai_names[key] + "' key");
    return v;
  };
  auto as_int = [&](PyObject* v, const char* what) -> long long {
    if (!PyLong_Check(v))
      fail_value(
          c, obj,
          cai + "['" + what + "'] holds a " + python::detail::type_name(v) + ", expected an int");
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      fail_value(c, obj, cai + "['" + what + "'] does not fit in 64 bits");
    }
    return x;
  };
  const py_ref version = item(cai_version, true);
  const long long ver = as_int(version.get(), "version");
  if (ver < 0 || ver > 3)
    fail_value(c, obj,
               "unsupported " + cai + " version " + std::to_string(ver) + ": expected 0 to 3");
  const py_ref mask = item(cai_mask, false);
  if (mask && mask.get() != Py_None)
    fail_value(c, obj, "masked arrays are not supported: expected " + cai + "['mask'] to be None");
  const py_ref shape_ref = item(cai_shape, true);
  PyObject* shape = shape_ref.get();  // a tuple: its items live as long as it does
  if (!PyTuple_Check(shape))
    fail_value(
        c, obj,
        cai + "['shape'] is a " + python::detail::type_name(shape) + ", expected a tuple of ints");
  const Py_ssize_t ndim = python::limited::tuple_size(shape);
  if (ndim > ARRAYPORT_MAX_NDIM)
    fail_value(c, obj,
               "expected at most " + std::to_string(ARRAYPORT_MAX_NDIM) + " dimensions, got " +
                   std::to_string(ndim));
  const py_ref typestr_ref = item(cai_typestr, true);
  PyObject* typestr = typestr_ref.get();
  if (!PyUnicode_Check(typestr))
    fail_value(c, obj,
               cai + "['typestr'] is a " + python::detail::type_name(typestr) + ", expected a str");
  Py_ssize_t typestr_size = 0;
  const char* typestr_utf8 = PyUnicode_AsUTF8AndSize(typestr, &typestr_size);
  if (!typestr_utf8) {
    PyErr_Clear();  // a lone surrogate: no typestr at all
    fail_type(c, obj,
              cai + "['typestr'] is not valid UTF-8: expected one of " +
                  std::string(arrayport::detail::accepted_typestrs));
  }
  arrayport::dtype dt;
  try {
    dt = parse_typestr(std::string_view(typestr_utf8, static_cast<std::size_t>(typestr_size)));
  } catch (const type_error& e) {
    fail_type(c, obj, e.what());
  } catch (const value_error& e) {
    fail_value(c, obj, e.what());
  }
  const py_ref data_ref = item(cai_data, true);
  PyObject* data = data_ref.get();
  if (!PyTuple_Check(data) || python::limited::tuple_size(data) != 2)
    fail_value(c, obj, cai + "['data'] must be a tuple (ptr, readonly)");
  const long long ptr = as_int(python::limited::tuple_item(data, 0), "data");
  if (ptr < 0)
    fail_value(c, obj,
               cai + "['data'][0] is " + std::to_string(ptr) + ", expected a non-negative pointer");
  const int readonly = PyObject_IsTrue(python::limited::tuple_item(data, 1));
  if (readonly < 0) producer_failed(c, obj, "__cuda_array_interface__['data'][1]'s truth value");
  const py_ref strides_ref = item(cai_strides, false);
  PyObject* strides = strides_ref.get();
  if (strides && strides != Py_None &&
      (!PyTuple_Check(strides) || python::limited::tuple_size(strides) != ndim))
    fail_value(c, obj,
               cai + "['strides'] must be None or a tuple of " + std::to_string(ndim) + " ints");
  std::int64_t* ext = a.extents(static_cast<int>(ndim));
  const auto itemsize = static_cast<long long>(dt.itemsize());
  const bool given = strides && strides != Py_None;
  for (Py_ssize_t i = ndim; i-- > 0;) {
    ext[i] = as_int(python::limited::tuple_item(shape, i), "shape");
    if (given) {
      const long long s = as_int(python::limited::tuple_item(strides, i), "strides");
      if (s % itemsize != 0)
        fail_value(c, obj,
                   "stride " + std::to_string(s) + " of axis " + std::to_string(i) +
                       " is not a multiple of the itemsize " + std::to_string(itemsize));
      ext[ndim + i] = s / itemsize;
    }
  }
  if (!given) require_compact_strides(c, obj, ext, static_cast<int>(ndim), ext + ndim, itemsize);
  void* address = reinterpret_cast<void*>(static_cast<std::uintptr_t>(ptr));
  a.from = held::source::reference;
  // CAI says only "device-accessible": ask CUDA whether it is device, managed or pinned memory.
  const runtime::pointer_info info = runtime::query_pointer(address);
  const memory_kind kind = info.kind == memory_kind::host ? memory_kind::device : info.kind;
  fill_view(a.view, address, static_cast<int>(ndim), ext, dt.to_c(), kind,
            info.device < 0 ? 0 : info.device, readonly != 0, obj);

  // v3: where the data is ready; None: no sync needed
  const py_ref stream = item(cai_stream, false);
  if (sync && stream && stream.get() != Py_None) {
    const long long s = as_int(stream.get(), "stream");
    if (s == 0)
      fail_value(c, obj,
                 cai +
                     "['stream'] is 0, which the protocol disallows: expected None, 1 "
                     "(legacy default), 2 (per-thread default) or a stream handle");
    stream_handle producer =
        s == 1 ? nullptr : reinterpret_cast<stream_handle>(static_cast<std::uintptr_t>(s));
    runtime::order_streams(producer, consumer, info.device);
  }
  return info.kind;
}

}  // namespace arrayport::bridge
