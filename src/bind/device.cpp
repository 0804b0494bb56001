// device=N of arrayport.ops: the C++ staging of the common case, and the registered Python one.
#include "bind/device.hpp"

#include <arrayport/runtime.hpp>
#include <arrayport/python/limited_api.hpp>

#include <Python.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

namespace nb = nanobind;

namespace arrayport::ext {
namespace {

// A strong reference, kept for the life of the process (as _core is never unloaded): released
// at exit it would outlive the interpreter.
PyObject* g_pipeline = nullptr;

// The staged path's device and chunk size, or nullopt when the call goes to the pipeline: out=
// given, device not a plain int naming an existing GPU, no GPU.
struct staging {
  int device;
  std::int64_t chunk_bytes;
};
std::optional<staging> staging_for(nb::handle device, nb::handle out) {
  PyObject* d = device.ptr();
  if (!out.is_none() || !PyLong_CheckExact(d) || !runtime::is_available()) return std::nullopt;
  const long i = PyLong_AsLong(d);
  if (i < 0 || i >= runtime::device_count()) {
    PyErr_Clear();
    return std::nullopt;
  }
  // 8 MiB: docs/benchmarks.md, "Tuning constants of arrayport.ops".
  staging st{static_cast<int>(i), std::int64_t(8) << 20};
  if (const char* env = std::getenv("ARRAYPORT_STAGE_CHUNK_BYTES"))  // for tuning
    st.chunk_bytes = std::max<std::int64_t>(4096, std::atoll(env));
  return st;
}

nb::tuple operand_tuple(ops::span<const operand> inputs) {
  PyObject* t = PyTuple_New(static_cast<Py_ssize_t>(inputs.size()));
  if (!t) throw nb::python_error();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Py_INCREF(inputs[i].obj.ptr());
    python::limited::tuple_fill(t, static_cast<Py_ssize_t>(i), inputs[i].obj.ptr());
  }
  return nb::steal<nb::tuple>(t);
}

}  // namespace

void set_pipeline(nb::handle run) {
  if (!PyCallable_Check(run.ptr()))
    throw type_error(std::string("_set_pipeline: run: expected a callable, got ") +
                     python::detail::type_name(run.ptr()));
  PyObject* previous = g_pipeline;
  g_pipeline = run.inc_ref().ptr();
  Py_XDECREF(previous);
}

nb::object run_pipeline(const char* name, nb::tuple operands, nb::handle out, nb::handle device,
                        nb::dict params) {
  if (!g_pipeline) {
    PyErr_Format(PyExc_RuntimeError,
                 "%s: device=: the staging of arrayport.ops is not registered (importing the "
                 "arrayport package registers it)",
                 name);
    throw nb::python_error();
  }
  return nb::borrow(g_pipeline)(name, operands, out, device, params);
}

nb::object elementwise_on_device(const ew_request& r, nb::handle device, nb::dict params,
                                 nb::handle cast, nb::handle as_called) {
  if (const std::optional<staging> st = staging_for(device, r.out)) {
    std::optional<dtype> target;
    if (cast) target = parse_astype_dtype(cast);
    ew_request staged = r;
    if (target) staged.cast_to = &*target;
    if (nb::object result = elementwise_staged(staged, st->device, st->chunk_bytes)) return result;
  }
  return run_pipeline(r.op_name,
                      as_called ? nb::borrow<nb::tuple>(as_called) : operand_tuple(r.inputs), r.out,
                      device, params);
}

}  // namespace arrayport::ext
