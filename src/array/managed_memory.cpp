// prefetch() and advise(): where managed memory lives and how the driver should treat it.
#include "array/array_internal.hpp"
#include "array/operand.hpp"
#include "common/arguments.hpp"
#include "common/errors.hpp"
#include "common/gil.hpp"

#include <arrayport/runtime.hpp>

#include <cstdint>
#include <string>
#include <utility>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {

// A memory location for prefetch/advise: None (`fallback`), a device index, or the host as -1,
// 'cpu' or 'host'.
int location_arg(PyObject* device, int fallback, const char* what) {
  if (device == Py_None) return fallback;
  if (PyUnicode_Check(device)) {
    std::string name = nb::borrow<nb::str>(device).c_str();
    if (name == "cpu" || name == "host") return -1;
    throw value_error(std::string(what) +
                      ": device: expected a device index, -1, 'cpu' or None, got '" + name + "'");
  }
  if (!PyBool_Check(device) && PyLong_Check(device) && PyLong_AsLongLong(device) == -1 &&
      !PyErr_Occurred())
    return -1;  // the host
  PyErr_Clear();
  return *device_arg(device, what, "device", true);
}

}  // namespace

PyObject* array_prefetch(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"device", "stream", nullptr};
  PyObject *device = Py_None, *stream = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:prefetch", const_cast<char**>(keywords),
                                   &device, &stream))
    return nullptr;
  return guarded_object([&] {
    array_object* a = as_array(self);
    const operand op = operand_of(a);
    const int where = location_arg(device, op.device, "prefetch");  // arguments first
    const stream_handle s = parse_stream(stream, "prefetch");
    if (op.kind != memory_kind::managed)
      throw value_error("prefetch: needs managed memory, but this array is in " +
                        std::string(to_string(op.kind)) + " memory");
    runtime::require_reachable(op.kind, "Array.prefetch", "the array");
    std::uintptr_t lo, hi;
    ::arrayport::detail::byte_span(op.side(), op.shape.data(), op.ndim(), op.dt.itemsize(), lo, hi);
    if (hi > lo) {
      gil_release release;
      runtime::refuse_during_capture(s, "prefetch", "CUDA captures no prefetch of managed memory");
      const int device = runtime::stream_device(s, op.device);
      runtime::device_guard guard(device);
      runtime::order_streams(op.stream, op.device, s, device);
      runtime::mem_prefetch_async(reinterpret_cast<const void*>(lo), hi - lo, where, s);
    }
    return nb::none();
  });
}

PyObject* array_advise(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"advice", "device", nullptr};
  PyObject *advice = nullptr, *device = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:advise", const_cast<char**>(keywords),
                                   &advice, &device))
    return nullptr;
  return guarded_object([&] {
    static const std::pair<const char*, runtime::mem_advice> names[] = {
        {"set_read_mostly", runtime::mem_advice::set_read_mostly},
        {"unset_read_mostly", runtime::mem_advice::unset_read_mostly},
        {"set_preferred_location", runtime::mem_advice::set_preferred_location},
        {"unset_preferred_location", runtime::mem_advice::unset_preferred_location},
        {"set_accessed_by", runtime::mem_advice::set_accessed_by},
        {"unset_accessed_by", runtime::mem_advice::unset_accessed_by}};
    const char* expected =
        "expected one of 'set_read_mostly', 'unset_read_mostly', "
        "'set_preferred_location', 'unset_preferred_location', "
        "'set_accessed_by', 'unset_accessed_by'";
    if (!PyUnicode_Check(advice))
      throw type_error(std::string("advise: advice: ") + expected + ", got " +
                       type_name_of(advice));
    const std::string name = nb::borrow<nb::str>(advice).c_str();
    const runtime::mem_advice* chosen = nullptr;
    for (const auto& [n, v] : names)
      if (name == n) chosen = &v;
    if (!chosen)
      throw value_error(std::string("advise: advice: ") + expected + ", got '" + name + "'");
    array_object* a = as_array(self);
    const operand op = operand_of(a);
    const int where = location_arg(device, op.device, "advise");  // arguments first
    if (op.kind != memory_kind::managed)
      throw value_error("advise: needs managed memory, but this array is in " +
                        std::string(to_string(op.kind)) + " memory");
    runtime::require_reachable(op.kind, "Array.advise", "the array");
    std::uintptr_t lo, hi;
    ::arrayport::detail::byte_span(op.side(), op.shape.data(), op.ndim(), op.dt.itemsize(), lo, hi);
    if (hi > lo) runtime::mem_advise(reinterpret_cast<const void*>(lo), hi - lo, *chosen, where);
    return nb::none();
  });
}

}  // namespace arrayport::ext
