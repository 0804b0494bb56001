// Fuzzes the DLPack consumer (src/bridge/): producers whose __dlpack__ hands out versioned or
// legacy capsules (or wrongly named ones, or non-capsules, or raises), whose __dlpack_device__
// answers anything, and producers that speak the DLPack C exchange API; every field of the tensor
// comes from the bytes (ndim, shape, strides, dtype, device, byte_offset, data, version, flags).
// An accepted tensor gives exactly the view the tensor describes; every tensor's deleter runs
// exactly once, every capsule is freed, and the producer keeps its reference count.
#include "python_fuzz.hpp"

#include "bridge/exchange.hpp"

#include <arrayport/c/dlpack.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace arrayport;
using arrayport::fuzz::finding;
using versioned_t = arrayport_dl_managed_tensor_versioned_t;
using legacy_t = arrayport_dl_managed_tensor_t;

alignas(64) unsigned char g_memory[1 << 12];

// ---- what the producer hands out, drawn from the bytes -------------------------------------------

struct tensor_spec {
  void* data = nullptr;
  arrayport_device_t device{};
  std::int32_t ndim = 0;
  arrayport_dtype_t dtype{};
  bool null_shape = false, null_strides = false;
  std::vector<std::int64_t> shape, strides;  // exactly ndim long (ASan sees any read past them)
  std::uint64_t byte_offset = 0;
  arrayport_dlpack_version_t version{1, 1};
  std::uint64_t flags = 0;
};

enum class answer { versioned, legacy, misnamed, not_a_capsule, type_error, buffer_error, runtime_error };

struct call_script {
  answer what = answer::versioned;
  tensor_spec spec;
};

std::int64_t extent(FuzzedDataProvider& in, bool stride) {
  static const std::int64_t edges[] = {0, 1, -1, INT64_MAX, INT64_MIN, INT64_MAX / 2, 1ll << 32,
                                       (1ll << 62) - 1, -(1ll << 62)};
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return edges[in.ConsumeIntegralInRange<std::size_t>(0, sizeof edges / sizeof edges[0] - 1)];
    case 1: return in.ConsumeIntegral<std::int64_t>();
    default: return stride ? in.ConsumeIntegralInRange<std::int64_t>(-6, 6) : in.ConsumeIntegralInRange<std::int64_t>(0, 5);
  }
}

tensor_spec make_spec(FuzzedDataProvider& in) {
  tensor_spec s;
  switch (in.ConsumeIntegralInRange<int>(0, 9)) {
    case 0: s.data = nullptr; break;
    case 1: s.data = reinterpret_cast<void*>(in.ConsumeIntegral<std::uintptr_t>()); break;
    default: s.data = g_memory + in.ConsumeIntegralInRange<std::size_t>(0, 64) * 64;
  }
  static const std::int32_t device_types[] = {1, 2, 3, 13, 0, 4, 7, 8, 9, 10, 14, 15, -1};
  s.device.device_type = in.ConsumeBool() ? 1 : in.ConsumeBool()
      ? device_types[in.ConsumeIntegralInRange<std::size_t>(0, sizeof device_types / sizeof device_types[0] - 1)]
      : in.ConsumeIntegral<std::int32_t>();
  s.device.device_id = in.ConsumeBool() ? 0 : in.ConsumeIntegral<std::int32_t>();
  switch (in.ConsumeIntegralInRange<int>(0, 9)) {
    case 0: s.ndim = in.ConsumeIntegral<std::int32_t>(); break;
    case 1: s.ndim = in.ConsumeIntegralInRange<std::int32_t>(-2, 80); break;
    default: s.ndim = in.ConsumeIntegralInRange<std::int32_t>(0, 4);
  }
  static const std::uint8_t bits[] = {8, 16, 32, 64, 128, 0, 1, 4, 24, 255};
  s.dtype.code = in.ConsumeIntegralInRange<int>(0, 3) ? in.ConsumeIntegralInRange<std::uint8_t>(0, 6)
                                                      : in.ConsumeIntegral<std::uint8_t>();
  s.dtype.bits = bits[in.ConsumeIntegralInRange<std::size_t>(0, in.ConsumeBool() ? 4 : 9)];
  s.dtype.lanes = in.ConsumeIntegralInRange<int>(0, 7) ? 1 : in.ConsumeIntegral<std::uint16_t>();
  s.null_shape = in.ConsumeIntegralInRange<int>(0, 15) == 0;
  s.null_strides = in.ConsumeBool();
  // Arrays only for a plausible rank: a rank out of range must be refused before they are read.
  const std::int32_t n = s.ndim >= 0 && s.ndim <= 80 ? s.ndim : 0;
  for (std::int32_t i = 0; i < n; ++i) s.shape.push_back(extent(in, false));
  for (std::int32_t i = 0; i < n; ++i) s.strides.push_back(extent(in, true));
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
    case 0: s.byte_offset = in.ConsumeIntegral<std::uint64_t>(); break;
    case 1: s.byte_offset = in.ConsumeIntegralInRange<std::uint64_t>(0, 64); break;
    default: s.byte_offset = 0;
  }
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0) {
    s.version.major = in.ConsumeIntegralInRange<std::uint32_t>(0, 3);
    s.version.minor = in.ConsumeIntegral<std::uint32_t>();
  }
  s.flags = in.ConsumeBool() ? (in.ConsumeBool() ? ARRAYPORT_DLPACK_FLAG_READ_ONLY : 0)
                             : in.ConsumeIntegral<std::uint64_t>();
  return s;
}

void fill(arrayport_dl_tensor_t& t, tensor_spec& s) {
  t.data = s.data;
  t.device = s.device;
  t.ndim = s.ndim;
  t.dtype = s.dtype;
  t.shape = s.null_shape ? nullptr : s.shape.empty() ? nullptr : s.shape.data();
  if (!s.null_shape && s.shape.empty() && s.ndim > 0) t.shape = reinterpret_cast<std::int64_t*>(8);  // rank out of range: must not be read
  t.strides = s.null_strides || s.strides.empty() ? nullptr : s.strides.data();
  t.byte_offset = s.byte_offset;
}

// ---- tensors, their deleters and capsules, counted -----------------------------------------------

struct owned_tensor {
  versioned_t versioned{};
  legacy_t legacy{};
  tensor_spec spec;  // the arrays the tensor points into
  bool is_versioned = true;
  int deleted = 0;
};

std::vector<std::unique_ptr<owned_tensor>> g_tensors;  // every tensor of this input
int g_capsules_made = 0, g_capsules_freed = 0;
owned_tensor* g_last = nullptr;  // the tensor of the last answer

void count_delete(void* ctx) {
  auto* t = static_cast<owned_tensor*>(ctx);
  if (++t->deleted != 1) finding("a DLPack deleter ran twice");
}
void delete_versioned(versioned_t* self) { count_delete(self->manager_ctx); }
void delete_legacy(legacy_t* self) { count_delete(self->manager_ctx); }

owned_tensor* new_tensor(const tensor_spec& spec, bool versioned) {
  g_tensors.push_back(std::make_unique<owned_tensor>());
  owned_tensor* o = g_tensors.back().get();
  o->spec = spec;
  o->is_versioned = versioned;
  o->versioned.version = spec.version;
  o->versioned.flags = spec.flags;
  o->versioned.manager_ctx = o;
  o->versioned.deleter = delete_versioned;
  fill(o->versioned.dl_tensor, o->spec);
  o->legacy.manager_ctx = o;
  o->legacy.deleter = delete_legacy;
  fill(o->legacy.dl_tensor, o->spec);
  return o;
}

// The producer's capsule destructor, as DLPack prescribes: a capsule still under its original
// name was never consumed, so the producer deletes the tensor.
void capsule_destructor(PyObject* capsule) {
  ++g_capsules_freed;
  const char* name = PyCapsule_GetName(capsule);
  auto* o = static_cast<owned_tensor*>(PyCapsule_GetContext(capsule));
  if (!o) return;
  if (name && std::strncmp(name, "used_", 5) == 0) return;
  if (o->is_versioned) o->versioned.deleter(&o->versioned);
  else o->legacy.deleter(&o->legacy);
}

// ---- the scripted producers ------------------------------------------------------------------------

std::vector<call_script> g_calls;  // answers of successive __dlpack__ calls; the last repeats
std::size_t g_next_call = 0;
bool g_legacy_signature = false;  // __dlpack__ takes no max_version (a producer before DLPack 1.0)
int g_device_answer = 0;          // __dlpack__device__: 0 the truth, 1 another device, 2 garbage, 3 raise
PyObject* g_device_garbage = nullptr;

PyObject* producer_dlpack(PyObject*, PyObject* args, PyObject* kwargs) {
  if (PyTuple_GET_SIZE(args) > 1) {
    PyErr_SetString(PyExc_TypeError, "__dlpack__ takes keyword arguments");
    return nullptr;
  }
  if (g_legacy_signature && kwargs && PyDict_GetItemString(kwargs, "max_version")) {
    PyErr_SetString(PyExc_TypeError, "__dlpack__() got an unexpected keyword argument 'max_version'");
    return nullptr;
  }
  const call_script& c = g_calls[g_next_call < g_calls.size() ? g_next_call++ : g_calls.size() - 1];
  switch (c.what) {
    case answer::type_error: PyErr_SetString(PyExc_TypeError, "refused"); return nullptr;
    case answer::buffer_error: PyErr_SetString(PyExc_BufferError, "refused"); return nullptr;
    case answer::runtime_error: PyErr_SetString(PyExc_RuntimeError, "producer failed"); return nullptr;
    case answer::not_a_capsule: return PyLong_FromLong(7);
    default: break;
  }
  const bool versioned = c.what == answer::versioned ||
                         (c.what == answer::misnamed && c.spec.flags % 2 == 0);
  owned_tensor* o = new_tensor(c.spec, versioned);
  g_last = o;
  const char* name = c.what == answer::misnamed ? (versioned ? "dltensor_versioned_v2" : "used_dltensor")
                     : versioned                ? "dltensor_versioned"
                                                : "dltensor";
  void* pointer = versioned ? static_cast<void*>(&o->versioned) : static_cast<void*>(&o->legacy);
  PyObject* capsule = PyCapsule_New(pointer, name, capsule_destructor);
  if (!capsule) finding("PyCapsule_New failed");
  PyCapsule_SetContext(capsule, o);
  ++g_capsules_made;
  // A legacy capsule misnamed "used_dltensor" looks consumed: nobody deletes its tensor, the
  // producer's own bug, not the consumer's.
  if (c.what == answer::misnamed && !versioned) o->deleted = -1;
  return capsule;
}

PyObject* producer_dlpack_device(PyObject*, PyObject*) {
  const tensor_spec& s = g_calls.front().spec;
  switch (g_device_answer) {
    case 0: return Py_BuildValue("(ii)", s.device.device_type, s.device.device_id);
    case 1: return Py_BuildValue("(ii)", s.device.device_type == 1 ? 2 : 1, 0);
    case 2: return Py_NewRef(g_device_garbage);
    default: PyErr_SetString(PyExc_RuntimeError, "no device"); return nullptr;
  }
}

PyMethodDef dlpack_methods[] = {
    {"__dlpack__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(producer_dlpack)),
     METH_VARARGS | METH_KEYWORDS, nullptr},
    {"__dlpack_device__", producer_dlpack_device, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr}};
PyType_Slot dlpack_slots[] = {{Py_tp_methods, dlpack_methods}, {0, nullptr}};
PyType_Spec dlpack_spec = {"fuzz.DLPackProducer", sizeof(PyObject), 0, Py_TPFLAGS_DEFAULT, dlpack_slots};

// The DLPack C exchange API (what PyTorch offers): a table on the type.
bridge::dl_exchange_api g_exchange{};
int g_exchange_fail = 0;  // 0 answer, 1 raise, 2 return 0 with a NULL tensor

int exchange_managed(void*, versioned_t** out) {
  if (g_exchange_fail == 1) {
    PyErr_SetString(PyExc_TypeError, "refused");
    return -1;
  }
  if (g_exchange_fail == 2) {
    *out = nullptr;
    return 0;
  }
  owned_tensor* o = new_tensor(g_calls.front().spec, true);
  g_last = o;
  *out = &o->versioned;
  return 0;
}

int exchange_dltensor(void*, arrayport_dl_tensor_t* out) {
  if (g_exchange_fail == 1) {
    PyErr_SetString(PyExc_TypeError, "refused");
    return -1;
  }
  owned_tensor* o = new_tensor(g_calls.front().spec, true);
  o->deleted = 1;  // non-owning: nothing to delete
  g_last = o;
  fill(*out, o->spec);
  return 0;
}

int exchange_stream(int, std::int32_t, void** out) {
  *out = reinterpret_cast<void*>(0x1234);
  return 0;
}

PyType_Slot exchange_slots[] = {{0, nullptr}};
PyType_Spec exchange_spec = {"fuzz.ExchangeProducer", sizeof(PyObject), 0, Py_TPFLAGS_DEFAULT, exchange_slots};

PyObject* g_dlpack_type = nullptr;
PyObject* g_exchange_type = nullptr;

// ---- the independent reading of a tensor ---------------------------------------------------------

bool spans_fit(const tensor_spec& s, const std::vector<std::int64_t>& strides, std::size_t itemsize) {
  for (std::int32_t i = 0; i < s.ndim; ++i)
    if (s.shape[i] == 0) return true;
  __int128 lo = 0, hi = 0;
  for (std::int32_t i = 0; i < s.ndim; ++i) {
    __int128 span = static_cast<__int128>(s.shape[i] - 1) * strides[i];  // fits: 63 + 64 bits
    if (span > INT64_MAX || span < INT64_MIN) return false;
    span *= static_cast<__int128>(itemsize);
    (span >= 0 ? hi : lo) += span;
    if (hi > INT64_MAX || lo < INT64_MIN) return false;
  }
  return hi <= INT64_MAX && lo >= INT64_MIN;
}

void check_view(const python::acquired& a, const owned_tensor& o, bool readonly_flag,
                const python::constraints& c) {
  const tensor_spec& s = o.spec;
  const arrayport_view_t& v = a.c_view();
  ARRAYPORT_FUZZ_CHECK(s.ndim >= 0 && s.ndim <= ARRAYPORT_MAX_NDIM, "a rank out of range was accepted");
  ARRAYPORT_FUZZ_CHECK(s.ndim == 0 || !s.null_shape, "a NULL shape was accepted");
  ARRAYPORT_FUZZ_CHECK(is_supported(dtype::from_c(s.dtype)), "an unsupported dtype was accepted");
  const std::int32_t dt = s.device.device_type;
  ARRAYPORT_FUZZ_CHECK(dt == 1 || dt == 2 || dt == 3 || dt == 13, "an unsupported device was accepted");
  ARRAYPORT_FUZZ_CHECK(v.ndim == s.ndim, "ndim differs from the tensor");
  std::vector<std::int64_t> strides(static_cast<std::size_t>(s.ndim));
  std::int64_t compact = 1;
  bool empty = false;
  for (std::int32_t i = s.ndim; i-- > 0;) {
    ARRAYPORT_FUZZ_CHECK(s.shape[i] >= 0, "a negative extent was accepted");
    ARRAYPORT_FUZZ_CHECK(v.shape[i] == s.shape[i], "shape differs from the tensor");
    strides[i] = s.null_strides ? compact : s.strides[i];
    if (s.shape[i] == 0) empty = true;
    if (s.shape[i] > 1 && __builtin_mul_overflow(compact, s.shape[i], &compact)) compact = INT64_MAX;
  }
  // Strides a producer gave are kept; those it left out (NULL) of an empty tensor address nothing
  // and may be any value (past an overflow of the trailing extents' product they are not compact).
  for (std::int32_t i = 0; i < s.ndim; ++i)
    ARRAYPORT_FUZZ_CHECK(s.shape[i] <= 1 || (empty && s.null_strides) || v.strides[i] == strides[i],
                         "strides differ from the tensor");
  const std::size_t itemsize = dtype::from_c(s.dtype).itemsize();
  ARRAYPORT_FUZZ_CHECK(empty || spans_fit(s, strides, itemsize), "strides that overflow were accepted");
  std::int64_t count = 1;
  for (std::int32_t i = 0; i < s.ndim && !empty; ++i)
    ARRAYPORT_FUZZ_CHECK(!__builtin_mul_overflow(count, s.shape[i], &count), "more than 2^63 elements were accepted");
  std::uintptr_t expected = 0;
  if (s.data) {
    ARRAYPORT_FUZZ_CHECK(!__builtin_add_overflow(reinterpret_cast<std::uintptr_t>(s.data), s.byte_offset, &expected),
                         "a data pointer + byte_offset past the address space was accepted");
  }
  ARRAYPORT_FUZZ_CHECK(reinterpret_cast<std::uintptr_t>(v.data) == expected, "data differs from data + byte_offset");
  ARRAYPORT_FUZZ_CHECK(empty || expected != 0, "NULL data with elements was accepted");
  ARRAYPORT_FUZZ_CHECK(dtype::from_c(v.dtype) == dtype::from_c(s.dtype), "dtype differs");
  const std::uint32_t kinds[] = {0, ARRAYPORT_MEMORY_HOST, ARRAYPORT_MEMORY_DEVICE, ARRAYPORT_MEMORY_PINNED};
  const std::uint32_t kind = dt == 13 ? ARRAYPORT_MEMORY_MANAGED : kinds[dt];
  ARRAYPORT_FUZZ_CHECK(v.memory_kind == kind, "memory kind differs from the DLPack device");
  ARRAYPORT_FUZZ_CHECK(((v.flags & ARRAYPORT_VIEW_READONLY) != 0) == readonly_flag, "readonly flag differs");
  ARRAYPORT_FUZZ_CHECK(!(c.writable && readonly_flag), "a read-only tensor was accepted as writable");
  ARRAYPORT_FUZZ_CHECK(c.ndim < 0 || c.ndim == v.ndim, "a rank outside the constraint was accepted");
  if (c.where == python::reach::host)
    ARRAYPORT_FUZZ_CHECK(kind != ARRAYPORT_MEMORY_DEVICE, "device memory accepted where the host reads");
  if (c.where == python::reach::device)
    ARRAYPORT_FUZZ_CHECK(kind != ARRAYPORT_MEMORY_HOST, "host memory accepted where the device reads");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::init_python();
  g_dlpack_type = PyType_FromSpec(&dlpack_spec);
  g_exchange_type = PyType_FromSpec(&exchange_spec);
  if (!g_dlpack_type || !g_exchange_type) finding("could not make the producer types");
  PyObject* table = PyCapsule_New(&g_exchange, "dlpack_exchange_api", nullptr);
  if (!table || PyObject_SetAttrString(g_exchange_type, "__dlpack_c_exchange_api__", table) != 0)
    finding("could not attach the exchange API");
  Py_DECREF(table);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  fuzz::reset_type_cache();
  const bool exchange = in.ConsumeIntegralInRange<int>(0, 3) == 0;
  PyObject* producer = PyObject_CallNoArgs(exchange ? g_exchange_type : g_dlpack_type);
  if (!producer) finding("could not make the producer");
  const Py_ssize_t producer_refs = Py_REFCNT(producer);
  g_exchange.header.version.major = in.ConsumeIntegralInRange<int>(0, 15) ? 1 : in.ConsumeIntegralInRange<std::uint32_t>(0, 2);
  g_exchange.managed_tensor_from_py_object_no_sync = exchange_managed;
  g_exchange.dltensor_from_py_object_no_sync = in.ConsumeBool() ? exchange_dltensor : nullptr;
  g_exchange.current_work_stream = exchange_stream;

  // One to three acquires of the same producer: what the bridge learns about the type in one
  // carries into the next (device guess, legacy signature).
  const int rounds = in.ConsumeIntegralInRange<int>(1, 3);
  for (int round = 0; round < rounds && in.remaining_bytes() > 0; ++round) {
    g_calls.clear();
    g_next_call = 0;
    g_last = nullptr;
    const int n_calls = in.ConsumeIntegralInRange<int>(1, 3);
    for (int k = 0; k < n_calls; ++k) {
      call_script c;
      const int w = in.ConsumeIntegralInRange<int>(0, 15);
      c.what = w < 8 ? answer::versioned : w < 11 ? answer::legacy
               : static_cast<answer>(w - 9);  // misnamed .. runtime_error
      c.spec = make_spec(in);
      g_calls.push_back(std::move(c));
    }
    g_legacy_signature = in.ConsumeIntegralInRange<int>(0, 7) == 0;
    g_device_answer = in.ConsumeIntegralInRange<int>(0, 7) < 5 ? 0 : in.ConsumeIntegralInRange<int>(1, 3);
    Py_XDECREF(g_device_garbage);
    g_device_garbage = g_device_answer == 2 ? fuzz::any_value(in) : nullptr;
    g_exchange_fail = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? in.ConsumeIntegralInRange<int>(1, 2) : 0;

    python::constraints c;
    c.name = "dl_arg";
    c.ndim = in.ConsumeBool() ? -1 : in.ConsumeIntegralInRange<int>(0, 3);
    c.where = static_cast<python::reach>(in.ConsumeIntegralInRange<int>(0, 2));
    c.writable = in.ConsumeBool();
    python::acquire_options o;
    o.sync = in.ConsumeIntegralInRange<int>(0, 3) != 0;
    o.call_scoped = in.ConsumeBool();
    {
      python::acquired a;
      if (fuzz::try_acquire(a, producer, c, o, PyExc_RuntimeError)) {
        ARRAYPORT_FUZZ_CHECK(g_last != nullptr, "a view with no tensor behind it");
        const bool via_dltensor = a.protocol_used() == python::protocol_exchange && g_last->deleted == 1;
        const bool readonly = g_last->is_versioned && !via_dltensor &&
                              (g_last->spec.flags & ARRAYPORT_DLPACK_FLAG_READ_ONLY) != 0;
        ARRAYPORT_FUZZ_CHECK(!g_last->is_versioned || via_dltensor || g_last->spec.version.major == 1,
                             "a DLPack version other than 1.x was accepted");
        check_view(a, *g_last, readonly, c);
        ARRAYPORT_FUZZ_CHECK(g_last->deleted == (via_dltensor ? 1 : 0), "the tensor was deleted while its view lives");
      }
    }
    ARRAYPORT_FUZZ_CHECK(!PyErr_Occurred(), "a Python error was left set");
  }
  ARRAYPORT_FUZZ_CHECK(Py_REFCNT(producer) == producer_refs, "the producer's reference count changed");
  Py_DECREF(producer);
  ARRAYPORT_FUZZ_CHECK(g_capsules_made == g_capsules_freed, "a DLPack capsule was leaked");
  for (const auto& t : g_tensors) {
    if (t->deleted == -1) continue;  // misnamed "used_dltensor" (see producer_dlpack)
    ARRAYPORT_FUZZ_CHECK(t->deleted == 1, "a DLPack deleter did not run exactly once");
  }
  g_tensors.clear();
  g_capsules_made = g_capsules_freed = 0;
  return 0;
}
