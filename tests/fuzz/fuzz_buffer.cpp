// Fuzzes the buffer-protocol consumer (src/bridge/): an exporter whose bf_getbuffer fills
// Py_buffer with whatever the bytes say (format, itemsize, ndim, shape, strides, suboffsets, len,
// readonly; NULL pointers; refusals), conforming to PEP 3118 or not. An accepted buffer gives
// exactly the view it describes, within the memory it describes; every successful getbuffer is
// released exactly once and the exporter keeps its reference count.
#include "python_fuzz.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace arrayport;
using arrayport::fuzz::finding;

alignas(64) unsigned char g_memory[1 << 12];

struct buffer_script {
  int fail = 0;  // 0 export, 1 BufferError, 2 ValueError, 3 RuntimeError, 4 -1 and no error, 5 return 1
  bool error_too = false;  // exported, and an exception set as well
  bool honour_writable = true;
  void* buf = nullptr;
  Py_ssize_t len = 0, itemsize = 1;
  std::string format;
  bool null_format = false, null_shape = false, null_strides = false, suboffsets = false;
  int ndim = 1;
  std::vector<Py_ssize_t> shape, strides, suboffset_values;
  int readonly = 0;
};

buffer_script g_script;
int g_exports = 0, g_releases = 0;

int exporter_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  const buffer_script& s = g_script;
  if (s.fail >= 4) {  // no exception: what CPython does not check for
    view->obj = nullptr;
    return s.fail == 4 ? -1 : 1;
  }
  if (s.fail) {
    PyErr_SetString(s.fail == 1 ? PyExc_BufferError : s.fail == 2 ? PyExc_ValueError : PyExc_RuntimeError,
                    "the exporter refused");
    view->obj = nullptr;
    return -1;
  }
  if (s.honour_writable && (flags & PyBUF_WRITABLE) && s.readonly) {
    PyErr_SetString(PyExc_BufferError, "read-only");
    view->obj = nullptr;
    return -1;
  }
  view->obj = Py_NewRef(self);
  view->buf = s.buf;
  view->len = s.len;
  view->itemsize = s.itemsize;
  view->readonly = s.readonly;
  view->ndim = s.ndim;
  view->format = s.null_format ? nullptr : const_cast<char*>(s.format.c_str());
  view->shape = s.null_shape ? nullptr : const_cast<Py_ssize_t*>(s.shape.data());
  view->strides = s.null_strides ? nullptr : const_cast<Py_ssize_t*>(s.strides.data());
  view->suboffsets = s.suboffsets ? const_cast<Py_ssize_t*>(s.suboffset_values.data()) : nullptr;
  view->internal = nullptr;
  if (s.error_too) PyErr_SetString(PyExc_RuntimeError, "the exporter exported and failed");
  ++g_exports;
  return 0;
}

void exporter_releasebuffer(PyObject*, Py_buffer*) { ++g_releases; }

PyType_Slot exporter_slots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(exporter_getbuffer)},
                                {Py_bf_releasebuffer, reinterpret_cast<void*>(exporter_releasebuffer)},
                                {0, nullptr}};
PyType_Spec exporter_spec = {"fuzz.Exporter", sizeof(PyObject), 0, Py_TPFLAGS_DEFAULT, exporter_slots};
PyObject* g_exporter_type = nullptr;

const char* const formats[] = {"B", "b", "?", "c", "e", "f", "d", "Zf", "Zd", "F", "D", "h", "H",
                               "i", "I", "l", "L", "q", "Q", "n", "N", "<f", "@d", "=q", ">f",
                               "!h", ">B", "g", "Zg", "P", "2f", "T{f:x:}", "xf", "s", "", "ff",
                               "<", "Z", "O"};

Py_ssize_t extent(FuzzedDataProvider& in, bool stride, Py_ssize_t itemsize) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return in.ConsumeIntegral<Py_ssize_t>();
    case 1: return in.ConsumeBool() ? PY_SSIZE_T_MAX : PY_SSIZE_T_MIN;
    default:
      if (!stride) return in.ConsumeIntegralInRange<Py_ssize_t>(0, 5);
      // A few items in either direction (wrapping, for the absurd itemsizes), or a few bytes.
      return static_cast<Py_ssize_t>(static_cast<std::uint64_t>(in.ConsumeIntegralInRange<Py_ssize_t>(-6, 6)) *
                                     static_cast<std::uint64_t>(in.ConsumeIntegralInRange<int>(0, 7) ? itemsize : 1));
  }
}

void make_script(FuzzedDataProvider& in) {
  buffer_script s;
  s.fail = in.ConsumeIntegralInRange<int>(0, 15) == 0 ? in.ConsumeIntegralInRange<int>(1, 5) : 0;
  s.error_too = in.ConsumeIntegralInRange<int>(0, 15) == 0;
  s.honour_writable = in.ConsumeIntegralInRange<int>(0, 3) != 0;
  switch (in.ConsumeIntegralInRange<int>(0, 9)) {
    case 0: s.buf = nullptr; break;
    case 1: s.buf = reinterpret_cast<void*>(in.ConsumeIntegral<std::uintptr_t>()); break;
    default: s.buf = g_memory + in.ConsumeIntegralInRange<std::size_t>(0, 64) * 64;
  }
  static const Py_ssize_t itemsizes[] = {1, 2, 4, 8, 16, 0, -1, 3, 12, PY_SSIZE_T_MAX, PY_SSIZE_T_MIN};
  s.itemsize = itemsizes[in.ConsumeIntegralInRange<std::size_t>(0, in.ConsumeBool() ? 4 : 10)];
  s.null_format = in.ConsumeIntegralInRange<int>(0, 15) == 0;
  s.format = in.ConsumeIntegralInRange<int>(0, 7)
                 ? formats[in.ConsumeIntegralInRange<std::size_t>(0, sizeof formats / sizeof formats[0] - 1)]
                 : in.ConsumeRandomLengthString(6);
  switch (in.ConsumeIntegralInRange<int>(0, 9)) {
    case 0: s.ndim = in.ConsumeIntegralInRange<int>(-3, 70); break;
    case 1: s.ndim = in.ConsumeBool() ? 1000 : in.ConsumeIntegral<int>(); break;
    default: s.ndim = in.ConsumeIntegralInRange<int>(0, 4);
  }
  const int n = s.ndim >= 0 && s.ndim <= 1000 ? s.ndim : 0;
  for (int i = 0; i < n; ++i) s.shape.push_back(extent(in, false, s.itemsize));
  for (int i = 0; i < n; ++i) s.strides.push_back(extent(in, true, s.itemsize));
  s.suboffset_values.assign(static_cast<std::size_t>(n), in.ConsumeBool() ? -1 : 0);
  s.null_shape = in.ConsumeIntegralInRange<int>(0, 7) == 0 || n != s.ndim;
  s.null_strides = in.ConsumeBool() || n != s.ndim;
  s.suboffsets = in.ConsumeIntegralInRange<int>(0, 15) == 0 && n == s.ndim && n > 0;
  // len: usually what PEP 3118 says (product(shape) * itemsize), sometimes anything.
  Py_ssize_t elements = 1;
  bool overflow = false;
  for (int i = 0; i < n; ++i) overflow |= __builtin_mul_overflow(elements, s.shape[i], &elements);
  if (overflow || __builtin_mul_overflow(elements, s.itemsize, &s.len) || in.ConsumeIntegralInRange<int>(0, 7) == 0)
    s.len = in.ConsumeBool() ? in.ConsumeIntegralInRange<Py_ssize_t>(0, 64) : in.ConsumeIntegral<Py_ssize_t>();
  s.readonly = in.ConsumeBool();
  g_script = std::move(s);
}

// ---- the independent reading ---------------------------------------------------------------------

void check_view(const python::acquired& a, const python::constraints& c) {
  const buffer_script& s = g_script;
  const arrayport_view_t& v = a.c_view();
  dtype dt;
  try {
    dt = parse_buffer_format(s.null_format ? nullptr : s.format.c_str(), static_cast<std::size_t>(s.itemsize));
  } catch (const arrayport::error&) {
    finding("a buffer with an unsupported format was accepted");
  }
  ARRAYPORT_FUZZ_CHECK(s.itemsize > 0 && dt.itemsize() == static_cast<std::size_t>(s.itemsize), "itemsize mismatch accepted");
  ARRAYPORT_FUZZ_CHECK(s.ndim >= 0 && s.ndim <= ARRAYPORT_MAX_NDIM, "a rank out of range was accepted");
  ARRAYPORT_FUZZ_CHECK(!s.suboffsets, "a buffer with suboffsets (PIL-style indirection) was accepted as strided");
  ARRAYPORT_FUZZ_CHECK(v.ndim == s.ndim, "ndim differs");
  std::vector<std::int64_t> shape(static_cast<std::size_t>(s.ndim)), strides(shape.size());
  if (s.null_shape) {
    ARRAYPORT_FUZZ_CHECK(s.ndim <= 1, "a NULL shape was accepted for more than one dimension");
    if (s.ndim == 1) {
      ARRAYPORT_FUZZ_CHECK(s.len >= 0 && s.len % s.itemsize == 0, "a NULL shape with a len that is no whole number of items was accepted");
      shape[0] = s.len / s.itemsize;
    }
  } else {
    for (int i = 0; i < s.ndim; ++i) shape[i] = s.shape[i];
  }
  bool empty = false;
  __int128 elements = 1;
  bool too_many = false;  // more than 2^63 - 1 elements
  for (int i = s.ndim; i-- > 0;) {
    ARRAYPORT_FUZZ_CHECK(shape[i] >= 0, "a negative extent was accepted");
    ARRAYPORT_FUZZ_CHECK(v.shape[i] == shape[i], "shape differs from the buffer");
    if (s.null_strides) {
      strides[i] = static_cast<std::int64_t>(elements);
    } else {
      ARRAYPORT_FUZZ_CHECK(s.strides[i] % s.itemsize == 0, "a stride that is no multiple of the itemsize was accepted");
      strides[i] = s.strides[i] / s.itemsize;
    }
    if (shape[i] == 0) empty = true;
    elements *= shape[i];
    if (elements > INT64_MAX) {  // saturated: only compared below, where it must be small
      elements = INT64_MAX;
      too_many = true;
    }
  }
  if (s.null_strides)  // contiguous: the memory is exactly len bytes (PEP 3118)
    ARRAYPORT_FUZZ_CHECK(elements * s.itemsize == s.len, "a contiguous buffer whose shape exceeds or falls short of len was accepted");
  for (int i = 0; i < s.ndim && !empty; ++i)  // an empty array's strides address nothing
    ARRAYPORT_FUZZ_CHECK(shape[i] <= 1 || v.strides[i] == strides[i], "strides differ from the buffer");
  if (!empty) {
    __int128 lo = 0, hi = 0;
    for (int i = 0; i < s.ndim; ++i) {
      __int128 span = static_cast<__int128>(shape[i] - 1) * strides[i];  // fits: 63 + 64 bits
      ARRAYPORT_FUZZ_CHECK(span <= INT64_MAX && span >= INT64_MIN, "strides that overflow were accepted");
      span *= s.itemsize;
      (span >= 0 ? hi : lo) += span;
      ARRAYPORT_FUZZ_CHECK(hi <= INT64_MAX && lo >= INT64_MIN, "strides that overflow were accepted");
    }
    ARRAYPORT_FUZZ_CHECK(s.buf != nullptr, "NULL data with elements was accepted");
    ARRAYPORT_FUZZ_CHECK(!too_many, "more than 2^63 elements were accepted");
  }
  ARRAYPORT_FUZZ_CHECK(v.data == s.buf, "data differs from buf");
  ARRAYPORT_FUZZ_CHECK(dtype::from_c(v.dtype) == dt, "dtype differs from the format");
  ARRAYPORT_FUZZ_CHECK(((v.flags & ARRAYPORT_VIEW_READONLY) != 0) == (s.readonly != 0), "readonly flag differs");
  ARRAYPORT_FUZZ_CHECK(v.memory_kind == ARRAYPORT_MEMORY_HOST, "a buffer taken as other than host memory");
  ARRAYPORT_FUZZ_CHECK(!(c.writable && s.readonly), "a read-only buffer was accepted as writable");
  ARRAYPORT_FUZZ_CHECK(c.ndim < 0 || c.ndim == v.ndim, "a rank outside the constraint was accepted");
  ARRAYPORT_FUZZ_CHECK(c.where != python::reach::device, "host memory accepted where the device reads");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::init_python();
  g_exporter_type = PyType_FromSpec(&exporter_spec);
  if (!g_exporter_type) finding("could not make the exporter type");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  fuzz::reset_type_cache();
  PyObject* exporter = PyObject_CallNoArgs(g_exporter_type);
  if (!exporter) finding("could not make the exporter");
  const Py_ssize_t refs = Py_REFCNT(exporter);
  make_script(in);
  python::constraints c;
  c.name = "buf_arg";
  c.ndim = in.ConsumeBool() ? -1 : in.ConsumeIntegralInRange<int>(0, 3);
  c.where = static_cast<python::reach>(in.ConsumeIntegralInRange<int>(0, 2));
  c.writable = in.ConsumeBool();
  python::acquire_options o;
  if (g_script.fail >= 4) {
    // Failed without an exception: a SystemError naming the argument and the exporter's type.
    try {
      python::acquired a = python::acquire(exporter, c, o);
      finding("a buffer export that failed was accepted");
    } catch (const python::error_already_set&) {
      ARRAYPORT_FUZZ_CHECK(PyErr_ExceptionMatches(PyExc_SystemError), "a silent export failure is not a SystemError");
      PyObject *type, *value, *trace;
      PyErr_Fetch(&type, &value, &trace);
      PyObject* text = value ? PyObject_Str(value) : nullptr;
      const char* msg = text ? PyUnicode_AsUTF8(text) : nullptr;
      ARRAYPORT_FUZZ_CHECK(msg && std::strncmp(msg, "buf_arg: ", 9) == 0 && std::strstr(msg, "fuzz.Exporter"),
                           "a silent export failure's error does not name the argument and the exporter");
      Py_XDECREF(text);
      Py_XDECREF(type);
      Py_XDECREF(value);
      Py_XDECREF(trace);
      PyErr_Clear();
    } catch (const std::exception& e) {
      finding(std::string("a silent export failure threw ") + e.what());
    }
  } else {
    python::acquired a;
    if (fuzz::try_acquire(a, exporter, c, o, PyExc_RuntimeError)) {
      ARRAYPORT_FUZZ_CHECK(!g_script.error_too, "a buffer exported with an exception set was accepted");
      ARRAYPORT_FUZZ_CHECK(a.protocol_used() == python::protocol_buffer, "not taken through the buffer protocol");
      check_view(a, c);
      ARRAYPORT_FUZZ_CHECK(g_exports == g_releases + 1, "the buffer is not held exactly once while its view lives");
    }
  }
  ARRAYPORT_FUZZ_CHECK(g_exports == g_releases, "a buffer was not released exactly once");
  ARRAYPORT_FUZZ_CHECK(Py_REFCNT(exporter) == refs, "the exporter's reference count changed");
  Py_DECREF(exporter);
  g_exports = g_releases = 0;
  ARRAYPORT_FUZZ_CHECK(!PyErr_Occurred(), "a Python error was left set");
  return 0;
}
