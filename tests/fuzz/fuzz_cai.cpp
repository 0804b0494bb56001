// Fuzzes the __cuda_array_interface__ consumer (src/bridge/): dicts whose keys come from the
// protocol's alphabet and whose values come from the bytes (huge and negative shapes and strides,
// every typestr, malformed data tuples, streams of every type), under random constraints. An input
// is accepted exactly as an independent reading of the dict describes it, or refused with an
// error naming the argument; the producer and its dict keep their reference counts.
#include "python_fuzz.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace arrayport;
using arrayport::fuzz::finding;

PyObject* g_producer_type = nullptr;
PyObject* g_view = nullptr;  // arrayport.view
alignas(64) unsigned char g_memory[1 << 12];

const char* const typestrs[] = {
    "|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8", "<c8",
    "<c16", "=f4", "=i8", "|f8", ">f4", ">i1", ">u1", ">b1", "<V2", "<f16", "<m8", "|O", "<U4",
    "<b1", "f4", "<", "", "<f4 ", "<c32", "<i16", ">c8", "!f4", "<f4\0junk", "<f\0"};

// ---- the independent reading of a dict ---------------------------------------------------------

struct expectation {
  bool valid = false;
  std::vector<std::int64_t> shape, strides;  // strides in elements
  bool given_strides = false;                 // the dict's own, not None
  dtype dt{};
  std::uintptr_t ptr = 0;
  bool readonly = false;
};

bool int64_of(PyObject* v, std::int64_t& out) {
  if (!v || !PyLong_Check(v)) return false;
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (overflow || (x == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  out = x;
  return true;
}

bool dtype_of_typestr(PyObject* v, dtype& out) {
  static const struct {
    const char* kind;
    dtype dt;
  } table[] = {{"b1", dtypes::bool_},   {"i1", dtypes::int8},     {"i2", dtypes::int16},
               {"i4", dtypes::int32},   {"i8", dtypes::int64},    {"u1", dtypes::uint8},
               {"u2", dtypes::uint16},  {"u4", dtypes::uint32},   {"u8", dtypes::uint64},
               {"f2", dtypes::float16}, {"f4", dtypes::float32},  {"f8", dtypes::float64},
               {"c8", dtypes::complex64}, {"c16", dtypes::complex128}};
  if (!v || !PyUnicode_Check(v)) return false;
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(v, &n);
  if (!s) {
    PyErr_Clear();
    return false;
  }
  const std::string str(s, static_cast<std::size_t>(n));
  if (str.size() < 3) return false;
  for (const auto& row : table) {
    if (str.compare(1, std::string::npos, row.kind) != 0) continue;
    const char order = str[0];
    if (order == '<' || order == '=' || order == '|' || (order == '>' && row.dt.itemsize() == 1)) {
      out = row.dt;
      return true;
    }
  }
  return false;
}

// layout.hpp's rules, computed independently in 128 bits: nbytes, every byte stride and the
// span (lowest byte to one past the highest) fit int64, and the bytes reached lie inside the
// address space from `ptr` (no wrap below 0 or past the top).
bool layout_fits(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& strides,
                 std::size_t itemsize, std::int64_t count, std::uintptr_t ptr) {
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 0) return true;
  const __int128 max = INT64_MAX, size = static_cast<__int128>(itemsize);
  if (static_cast<__int128>(count) * size > max) return false;
  __int128 lo = 0, hi = 0;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const __int128 stride = static_cast<__int128>(strides[i]) * size;
    if (stride > max || stride < -max - 1) return false;
    const __int128 span = static_cast<__int128>(shape[i] - 1) * stride;
    (span >= 0 ? hi : lo) += span;
    if (hi - lo + size > max) return false;
  }
  hi += size;
  return static_cast<__int128>(ptr) + lo >= 0 &&
         static_cast<__int128>(ptr) + hi <= static_cast<__int128>(~std::uintptr_t(0));
}

expectation read_dict(PyObject* d, bool sync) {
  expectation e;
  if (!PyDict_Check(d)) return e;
  std::int64_t version = 0;
  if (!int64_of(PyDict_GetItemString(d, "version"), version) || version < 0 || version > 3) return e;
  PyObject* mask = PyDict_GetItemString(d, "mask");
  if (mask && mask != Py_None) return e;
  PyObject* shape = PyDict_GetItemString(d, "shape");
  if (!shape || !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > ARRAYPORT_MAX_NDIM) return e;
  const Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
  if (!dtype_of_typestr(PyDict_GetItemString(d, "typestr"), e.dt)) return e;
  const auto itemsize = static_cast<std::int64_t>(e.dt.itemsize());
  PyObject* data = PyDict_GetItemString(d, "data");
  if (!data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2) return e;
  std::int64_t ptr = 0;
  if (!int64_of(PyTuple_GET_ITEM(data, 0), ptr) || ptr < 0) return e;
  e.ptr = static_cast<std::uintptr_t>(ptr);
  const int ro = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
  if (ro < 0) {
    PyErr_Clear();
    return e;
  }
  e.readonly = ro != 0;
  PyObject* strides = PyDict_GetItemString(d, "strides");
  const bool has_strides = strides && strides != Py_None;
  if (has_strides && (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != ndim)) return e;
  e.given_strides = has_strides;
  e.shape.resize(static_cast<std::size_t>(ndim));
  e.strides.resize(static_cast<std::size_t>(ndim));
  for (Py_ssize_t i = 0; i < ndim; ++i)
    if (!int64_of(PyTuple_GET_ITEM(shape, i), e.shape[i]) || e.shape[i] < 0) return e;
  std::int64_t elements = 1;
  bool empty = false;
  for (Py_ssize_t i = ndim; i-- > 0;) {
    if (has_strides) {
      std::int64_t s = 0;
      if (!int64_of(PyTuple_GET_ITEM(strides, i), s) || s % itemsize != 0) return e;
      e.strides[i] = s / itemsize;
    } else {
      e.strides[i] = elements;
    }
    if (e.shape[i] == 0) empty = true;
    // Compact strides of a shape too large to address are never used: the span check refuses it.
    if (e.shape[i] > 1 && __builtin_mul_overflow(elements, e.shape[i], &elements)) elements = INT64_MAX;
  }
  std::int64_t count = 1;
  for (std::int64_t x : e.shape)
    if (!empty && __builtin_mul_overflow(count, x, &count)) return e;  // more than 2^63 elements
  if (!empty && !layout_fits(e.shape, e.strides, e.dt.itemsize(), count, e.ptr)) return e;
  if (!empty && e.ptr == 0) return e;
  PyObject* stream = PyDict_GetItemString(d, "stream");
  if (sync && stream && stream != Py_None) {
    std::int64_t s = 0;
    if (!int64_of(stream, s) || s == 0) return e;
  }
  e.valid = true;
  return e;
}

bool contiguous(const expectation& e, bool c_order) {
  for (std::int64_t x : e.shape)
    if (x == 0) return true;  // empty: contiguous in every order
  std::int64_t expected = 1;
  const std::size_t n = e.shape.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = c_order ? n - 1 - k : k;
    if (e.shape[i] == 0) return true;
    if (e.shape[i] != 1 && e.strides[i] != expected) return false;
    expected *= e.shape[i];
  }
  return true;
}

// ---- building an input -------------------------------------------------------------------------

PyObject* shape_entry(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return fuzz::any_value(in, 2);
    case 1: case 2: return fuzz::edge_int(in);
    default: return PyLong_FromLong(in.ConsumeIntegralInRange<long>(0, 5));
  }
}

PyObject* int_tuple(FuzzedDataProvider& in, Py_ssize_t n, long scale) {
  PyObject* t = PyTuple_New(n);
  for (Py_ssize_t i = 0; i < n; ++i)
    PyTuple_SET_ITEM(t, i, scale ? (in.ConsumeIntegralInRange<int>(0, 5) == 0
                                        ? fuzz::edge_int(in)
                                        : PyLong_FromLong(in.ConsumeIntegralInRange<long>(-6, 6) * scale))
                                 : shape_entry(in));
  return t;
}

void set(PyObject* d, const char* key, PyObject* value) {
  if (!value) finding(std::string("building '") + key + "' failed");
  PyDict_SetItemString(d, key, value);
  Py_DECREF(value);
}

PyObject* make_dict(FuzzedDataProvider& in) {
  if (in.ConsumeIntegralInRange<int>(0, 31) == 0) return fuzz::any_value(in);  // not a dict
  PyObject* d = PyDict_New();
  const Py_ssize_t ndim = in.ConsumeBool() ? in.ConsumeIntegralInRange<Py_ssize_t>(0, 4)
                                           : in.ConsumeIntegralInRange<Py_ssize_t>(0, 70);
  const std::size_t n_typestrs = sizeof typestrs / sizeof typestrs[0];
  const char* typestr = typestrs[in.ConsumeIntegralInRange<std::size_t>(0, n_typestrs - 1)];
  const std::size_t typestr_len =
      std::string(typestr) == "<f4\0junk" ? 8 : std::string(typestr) == "<f\0" ? 3 : std::strlen(typestr);
  long itemsize = 4;
  if (typestr_len >= 3) itemsize = std::atol(typestr + 2) > 0 ? std::atol(typestr + 2) : 1;
  // Each key: usually a well-formed value, sometimes anything, sometimes absent.
  auto pick = [&]() { return in.ConsumeIntegralInRange<int>(0, 9); };
  int p = pick();
  if (p < 8) set(d, "version", PyLong_FromLong(p < 6 ? 3 : in.ConsumeIntegralInRange<long>(-1, 5)));
  else if (p == 8) set(d, "version", fuzz::any_value(in));
  p = pick();
  if (p < 8) set(d, "shape", int_tuple(in, ndim, 0));
  else if (p == 8) set(d, "shape", fuzz::any_value(in));
  p = pick();
  if (p < 8) set(d, "typestr", PyUnicode_FromStringAndSize(typestr, static_cast<Py_ssize_t>(typestr_len)));
  else if (p == 8) set(d, "typestr", fuzz::any_value(in));
  p = pick();
  if (p < 8) {
    PyObject* ptr;
    switch (in.ConsumeIntegralInRange<int>(0, 5)) {
      case 0: ptr = PyLong_FromLong(0); break;
      case 1: ptr = fuzz::edge_int(in); break;
      case 2: ptr = fuzz::any_value(in); break;
      default:
        ptr = PyLong_FromVoidPtr(g_memory + in.ConsumeIntegralInRange<std::size_t>(0, sizeof g_memory - 1));
    }
    PyObject* ro = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? fuzz::any_value(in)
                                                            : PyBool_FromLong(in.ConsumeBool());
    set(d, "data", in.ConsumeIntegralInRange<int>(0, 15) == 0 ? PyTuple_Pack(1, ptr)
                                                             : PyTuple_Pack(2, ptr, ro));
    Py_DECREF(ptr);
    Py_DECREF(ro);
  } else if (p == 8) {
    set(d, "data", fuzz::any_value(in));
  }
  p = pick();
  if (p < 4) set(d, "strides", int_tuple(in, in.ConsumeIntegralInRange<int>(0, 15) ? ndim : ndim + 1, itemsize));
  else if (p < 6) set(d, "strides", Py_NewRef(Py_None));
  else if (p == 6) set(d, "strides", fuzz::any_value(in));
  p = pick();
  if (p == 0) set(d, "mask", fuzz::any_value(in));
  else if (p == 1) set(d, "mask", Py_NewRef(Py_None));
  p = pick();
  if (p < 3) set(d, "stream", fuzz::edge_int(in));
  else if (p < 5) set(d, "stream", Py_NewRef(Py_None));
  else if (p == 5) set(d, "stream", fuzz::any_value(in));
  if (pick() == 0) set(d, "descr", fuzz::any_value(in));
  if (pick() == 0) {
    PyObject* k = fuzz::any_value(in);
    PyObject* v = fuzz::any_value(in);
    if (PyDict_SetItem(d, k, v) != 0) PyErr_Clear();
    Py_DECREF(k);
    Py_DECREF(v);
  }
  return d;
}

python::constraints make_constraints(FuzzedDataProvider& in, std::vector<dtype>& dts,
                                     std::vector<std::int64_t>& shape, bool& any) {
  python::constraints c;
  c.name = "cai_arg";
  any = in.ConsumeBool();
  if (any) return c;
  const int n = in.ConsumeIntegralInRange<int>(0, 2);
  for (int i = 0; i < n; ++i)
    dts.push_back(arrayport::detail::supported_dtypes[in.ConsumeIntegralInRange<std::size_t>(0, 14)]);
  c.dtypes = dts.data();
  c.n_dtypes = dts.size();
  c.ndim = in.ConsumeIntegralInRange<int>(-1, 3);
  if (c.ndim >= 0 && in.ConsumeBool()) {
    for (int i = 0; i < c.ndim; ++i) shape.push_back(in.ConsumeIntegralInRange<std::int64_t>(-1, 3));
    c.shape = shape.data();
  }
  c.layout = static_cast<python::order>(in.ConsumeIntegralInRange<int>(0, 2));
  c.where = static_cast<python::reach>(in.ConsumeIntegralInRange<int>(0, 2));
  c.writable = in.ConsumeBool();
  return c;
}

void check_view(const python::acquired& a, const expectation& e, const python::constraints& c) {
  ARRAYPORT_FUZZ_CHECK(e.valid, "acquire accepted a dict that describes no valid array");
  const arrayport_view_t& v = a.c_view();
  ARRAYPORT_FUZZ_CHECK(v.ndim == static_cast<int>(e.shape.size()), "ndim differs from the dict");
  // Strides the dict gave are kept; those it left out (None) of an empty array address nothing and
  // may be any value (past an overflow of the trailing extents' product they are not compact).
  bool empty = false;
  for (std::int64_t x : e.shape) empty |= x == 0;
  for (int i = 0; i < v.ndim; ++i) {
    ARRAYPORT_FUZZ_CHECK(v.shape[i] == e.shape[i], "shape differs from the dict");
    ARRAYPORT_FUZZ_CHECK(v.shape[i] <= 1 || (empty && !e.given_strides) || v.strides[i] == e.strides[i],
                         "strides differ from the dict");
  }
  ARRAYPORT_FUZZ_CHECK(reinterpret_cast<std::uintptr_t>(v.data) == e.ptr, "data pointer differs");
  ARRAYPORT_FUZZ_CHECK(dtype::from_c(v.dtype) == e.dt, "dtype differs from the typestr");
  ARRAYPORT_FUZZ_CHECK(((v.flags & ARRAYPORT_VIEW_READONLY) != 0) == e.readonly, "readonly flag differs");
  ARRAYPORT_FUZZ_CHECK(v.memory_kind != ARRAYPORT_MEMORY_HOST, "CUDA array interface memory taken as host memory");
  // What the constraints promised.
  if (c.n_dtypes) {
    bool ok = false;
    for (std::size_t i = 0; i < c.n_dtypes; ++i) ok = ok || c.dtypes[i] == e.dt;
    ARRAYPORT_FUZZ_CHECK(ok, "a dtype outside the constraint was accepted");
  }
  ARRAYPORT_FUZZ_CHECK(c.ndim < 0 || c.ndim == v.ndim, "a rank outside the constraint was accepted");
  if (c.shape)
    for (int i = 0; i < c.ndim; ++i)
      ARRAYPORT_FUZZ_CHECK(c.shape[i] < 0 || c.shape[i] == v.shape[i], "a shape outside the constraint was accepted");
  ARRAYPORT_FUZZ_CHECK(c.layout != python::order::c || contiguous(e, true), "non-C-contiguous accepted");
  ARRAYPORT_FUZZ_CHECK(c.layout != python::order::f || contiguous(e, false), "non-F-contiguous accepted");
  ARRAYPORT_FUZZ_CHECK(c.where != python::reach::host, "device memory accepted where the host reads");
  ARRAYPORT_FUZZ_CHECK(!(c.writable && e.readonly), "a read-only array accepted as writable");
}

void check_array(PyObject* array, const expectation& e) {
  ARRAYPORT_FUZZ_CHECK(e.valid, "arrayport.view accepted a dict that describes no valid array");
  PyObject* shape = PyObject_GetAttrString(array, "shape");
  PyObject* ptr = PyObject_GetAttrString(array, "ptr");
  ARRAYPORT_FUZZ_CHECK(shape && ptr, "the Array's shape or ptr raised");
  ARRAYPORT_FUZZ_CHECK(PyTuple_GET_SIZE(shape) == static_cast<Py_ssize_t>(e.shape.size()), "Array.ndim differs");
  for (std::size_t i = 0; i < e.shape.size(); ++i)
    ARRAYPORT_FUZZ_CHECK(PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i)) == e.shape[i], "Array.shape differs");
  ARRAYPORT_FUZZ_CHECK(reinterpret_cast<std::uintptr_t>(PyLong_AsVoidPtr(ptr)) == e.ptr, "Array.ptr differs");
  Py_DECREF(shape);
  Py_DECREF(ptr);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::init_python();
  g_producer_type = fuzz::define(
      "class CAIProducer:\n"
      "    def __init__(self, d):\n"
      "        self.d = d\n"
      "    @property\n"
      "    def __cuda_array_interface__(self):\n"
      "        if self.d is RuntimeError:\n"
      "            raise RuntimeError('the producer failed')\n"
      "        return self.d\n",
      "CAIProducer");
  PyObject* arrayport = PyImport_ImportModule("arrayport");
  g_view = arrayport ? PyObject_GetAttrString(arrayport, "view") : nullptr;
  if (!g_view) finding("no arrayport.view");
  Py_DECREF(arrayport);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  fuzz::reset_type_cache();
  const bool producer_fails = in.ConsumeIntegralInRange<int>(0, 63) == 0;
  PyObject* d = producer_fails ? Py_NewRef(PyExc_RuntimeError) : make_dict(in);
  fuzz::current_input() = d;
  PyObject* producer = PyObject_CallOneArg(g_producer_type, d);
  if (!producer) finding("could not make the producer");
  std::vector<dtype> dts;
  std::vector<std::int64_t> shape;
  bool any = false;
  const python::constraints c = make_constraints(in, dts, shape, any);
  python::acquire_options o;
  o.sync = in.ConsumeIntegralInRange<int>(0, 3) != 0;
  o.call_scoped = in.ConsumeBool();
  const bool through_python = in.ConsumeIntegralInRange<int>(0, 3) == 0;
  const expectation e = producer_fails ? expectation{} : read_dict(d, o.sync);

  const Py_ssize_t producer_refs = Py_REFCNT(producer), dict_refs = Py_REFCNT(d);
  if (through_python) {
    // arrayport.view: the same bridge, then an Array over the view (array_from_view).
    PyObject* kwargs = Py_BuildValue("{s:O}", "sync", o.sync ? Py_True : Py_False);
    PyObject* args = PyTuple_Pack(1, producer);
    PyObject* array = PyObject_Call(g_view, args, kwargs);
    Py_DECREF(args);
    Py_DECREF(kwargs);
    if (array) {
      check_array(array, e);
      Py_DECREF(array);
    } else {
      fuzz::expect_input_error("arrayport.view", producer_fails ? PyExc_RuntimeError : nullptr);
      ARRAYPORT_FUZZ_CHECK(!e.valid, "arrayport.view refused a valid dict");
    }
  } else {
    python::acquired a;
    if (fuzz::try_acquire(a, producer, c, o, producer_fails ? PyExc_RuntimeError : nullptr)) {
      ARRAYPORT_FUZZ_CHECK(a.protocol_used() == python::protocol_cai, "not taken through the CAI");
      check_view(a, e, c);
      ARRAYPORT_FUZZ_CHECK(a.owner() == producer, "the view's owner is not the producer");
    } else if (any) {
      ARRAYPORT_FUZZ_CHECK(!e.valid, "acquire refused a valid dict under no constraints");
    }
  }
  ARRAYPORT_FUZZ_CHECK(Py_REFCNT(producer) == producer_refs, "the producer's reference count changed");
  // (Only a dict's own count: None and small ints are shared with the rest of the interpreter.)
  ARRAYPORT_FUZZ_CHECK(!PyDict_Check(d) || Py_REFCNT(d) == dict_refs, "the dict's reference count changed");
  Py_DECREF(producer);
  Py_DECREF(d);
  ARRAYPORT_FUZZ_CHECK(!PyErr_Occurred(), "a Python error was left set");
  return 0;
}
