// Fuzzes the __cuda_array_interface__ consumer (src/bridge/) with dicts that run Python code while
// they are read: a readonly flag's __bool__, int-likes' __index__, int and str subclasses, keys
// whose __eq__ / __hash__ act, dict subclasses with loud readers, a metaclass's __module__ (read by
// error messages). What they do comes from the bytes: empty the dict, delete or replace any key,
// raise, return the wrong type, tear the producer down, collect garbage, call the bridge again.
// Under ASan a read of a value freed by such a callback is a finding. Every outcome is a view or
// an error of an expected class; when no callback did anything, the outcome is that of the same
// dict without callbacks; the producer keeps its reference count; no error is left set.
#include "python_fuzz.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace arrayport;
using arrayport::fuzz::finding;

PyObject* g_make = nullptr;            // make(bytes) -> (hostile, plain, state)
PyObject* g_producer_error = nullptr;  // what the callbacks raise on purpose

// Decodes bytes into a producer whose interface holds callbacks, the same interface without them
// (each callback replaced by the plain value it stands for: a bool, an int, a str, a value of the
// wrong type), and the state the callbacks record (fired: how many acted).
const char* const prelude = R"PY(
import gc
import arrayport

class ProducerError(Exception):
    pass

class State:
    def __init__(self):
        self.fired = 0
        self.kept = []

KEYS = ("version", "mask", "shape", "typestr", "data", "strides", "stream")
VALUES = (None, 0, 1, 2, 3, -1, 8, 24, 2**63, 1.5, "<f8", "<f4", "|u1", (), (2,), (2, 3), (0,),
          (4, 8), (24, 8), [2, 3], (1.5,), (None, False), (0x40000, False), (0x40000, True))

class Reader:
    def __init__(self, data):
        self.data, self.i = data, 0
    def byte(self):
        if self.i >= len(self.data):
            return 0
        self.i += 1
        return self.data[self.i - 1]
    def pick(self, seq):
        return seq[self.byte() % len(seq)]

class Act:
    """One callback's deed, done `times` times at most once the interface is built."""
    def __init__(self, r, state, holder):
        self.what = r.pick(("none", "none", "clear", "delete", "replace", "raise", "wrong",
                            "drop", "gc", "reenter"))
        self.key = r.pick(KEYS)
        self.value = r.pick(VALUES)
        self.times = 1 + r.byte() % 3
        self.state, self.holder = state, holder
    def __call__(self, wrong):
        h = self.holder
        if not h.armed or self.what == "none" or self.times <= 0:
            return None
        self.times -= 1
        self.state.fired += 1
        d = h.d
        w = self.what
        if w == "clear" and isinstance(d, dict):
            d.clear()
        elif w == "delete" and isinstance(d, dict):
            d.pop(self.key, None)
        elif w == "replace" and isinstance(d, dict):
            d[self.key] = self.value
        elif w == "raise":
            raise ProducerError("raised by a callback")
        elif w == "wrong":
            return wrong
        elif w == "drop":
            h.d = None
            if isinstance(d, dict):
                d.clear()
        elif w == "gc":
            gc.collect()
        elif w == "reenter":
            try:
                self.state.kept.append(arrayport.view(h))
            except Exception:
                pass
        self.state.kept.append([(7777 + i, 8888 + i) for i in range(32)])
        return None

class Flag:
    def __init__(self, value, act):
        self.value, self.act = value, act
    def __bool__(self):
        r = self.act("yes")
        return self.value if r is None else r

class Index:
    def __init__(self, value, act):
        self.value, self.act = value, act
    def __index__(self):
        r = self.act(1.5)
        return self.value if r is None else r
    __int__ = __index__

class IntSub(int):
    pass

class StrSub(str):
    pass

class Bomb:
    def __bool__(self):
        raise ProducerError("a truth value that raises")

class EqKey(str):
    def __eq__(self, other):
        r = self.act(Bomb())
        return False if r is None else r
    def __ne__(self, other):
        return not self.__eq__(other)
    __hash__ = str.__hash__

class HashKey(str):
    def __hash__(self):
        r = self.act("no hash")
        return str.__hash__(self) if r is None else r
    __eq__ = str.__eq__

class LoudDict(dict):
    def __getitem__(self, k):
        self.act(None)
        return dict.__getitem__(self, k)
    def get(self, k, default=None):
        self.act(None)
        return dict.get(self, k, default)

class Meta(type):
    @property
    def __module__(cls):
        r = cls.act(42)
        return "hostile" if r is None else r

class Holder:
    def __init__(self, d):
        self.d, self.armed = d, False
    @property
    def __cuda_array_interface__(self):
        if self.d is None:
            raise ProducerError("the interface is gone")
        return self.d

def plain_value(r):
    kind = r.byte() % 8
    if kind < 4:
        return r.pick(VALUES)
    if kind == 4:
        return tuple(r.byte() % 5 for _ in range(r.byte() % 4))
    if kind == 5:
        return tuple((r.byte() % 9 - 4) * r.pick((1, 4, 8, 16)) for _ in range(r.byte() % 4))
    if kind == 6:
        return (0x40000 + 64 * (r.byte() % 4), bool(r.byte() % 2))
    return r.pick(("<f8", "<f4", "<i8", "|b1", "<c16", ">f4", "<f2"))

def make(data):
    r = Reader(data)
    state = State()
    plain = {"version": 3, "shape": (2, 3), "typestr": "<f8", "data": (0x40000, False),
             "strides": None}
    for _ in range(r.byte() % 4):  # the fields, changed
        plain[r.pick(KEYS)] = plain_value(r)
    hostile_items = dict(plain)
    cls = dict
    decoys = []
    holder = Holder(None)
    for _ in range(1 + r.byte() % 3):  # the callbacks planted
        act = Act(r, state, holder)
        kind = r.byte() % 8
        key = r.pick(KEYS)
        v = plain.get(key)
        data = plain.get("data")
        if kind == 0 and type(data) is tuple and len(data) == 2 and type(data[1]) is bool:
            hostile_items["data"] = (data[0], Flag(data[1], act))
        elif kind == 1 and key in plain:
            # Never an int to the bridge: a float stands for it in the plain dict (both refused).
            hostile_items[key] = Index(3, act)
            plain[key] = 1.5
        elif kind == 2 and type(v) is int:
            hostile_items[key] = IntSub(v)
        elif kind == 3 and type(v) is str:
            hostile_items[key] = StrSub(v)
        elif kind == 4:
            k = EqKey(key)
            k.act = act
            decoys.append(k)
        elif kind == 5 and key in plain:  # (update() stores the key's value under it)
            k = HashKey(key)
            k.act = act
            decoys.append(k)
        elif kind == 6:
            cls = LoudDict
            LoudDict.act = staticmethod(act)
        elif kind == 7 and key in plain:
            # Refused either way; the message names the type, whose __module__ acts.
            weird = Meta("Weird", (), {})
            weird.act = act
            hostile_items[key] = weird()
            plain[key] = 1.5
    d = cls()
    for k in decoys:  # stored first: a lookup of the same text compares with them
        d[k] = "decoy"
    d.update(hostile_items)
    holder.d = d
    holder.armed = True
    return holder, Holder(plain), state
)PY";

// What one acquire came to: a view (its fields) or an error of some class.
struct result {
  bool ok = false;
  int error_class = 0;  // 1 type_error, 2 value_error, 3 buffer_error, 4 Python error
  PyObject* py_error = nullptr;  // its class, for 4 (borrowed: builtin classes live forever)
  std::vector<std::int64_t> shape, strides;
  std::uintptr_t data = 0;
  arrayport_dtype_t dtype{};
  std::uint32_t flags = 0;
};

result run(PyObject* producer, const python::constraints& c, const python::acquire_options& o) {
  result r;
  try {
    python::acquired a = python::acquire(producer, c, o);
    const arrayport_view_t& v = a.c_view();
    r.ok = true;
    r.shape.assign(v.shape, v.shape + v.ndim);
    r.strides.assign(v.strides, v.strides + v.ndim);
    r.data = reinterpret_cast<std::uintptr_t>(v.data);
    r.dtype = v.dtype;
    r.flags = v.flags;
    ARRAYPORT_FUZZ_CHECK(a.owner() == producer, "the view's owner is not the producer");
    ARRAYPORT_FUZZ_CHECK(!PyErr_Occurred(), "acquire succeeded with a Python error set");
  } catch (const python::error_already_set&) {
    if (!PyErr_Occurred()) finding("acquire failed without setting an error");
    PyObject* classes[] = {PyExc_TypeError, PyExc_ValueError, PyExc_BufferError,
                           PyExc_OverflowError, g_producer_error};
    for (PyObject* k : classes)
      if (!r.py_error && PyErr_ExceptionMatches(k)) r.py_error = k;
    if (!r.py_error || PyErr_ExceptionMatches(PyExc_SystemError))
      finding("acquire raised an unexpected exception class");
    r.error_class = 4;
    PyErr_Clear();
  } catch (const arrayport::error& e) {
    const std::string prefix = std::string(c.name) + ": ";
    if (std::strncmp(e.what(), prefix.c_str(), prefix.size()) != 0)
      finding(std::string("an acquire error does not name the argument: ") + e.what());
    if (PyErr_Occurred()) finding(std::string("acquire threw and left a Python error set: ") + e.what());
    r.error_class = dynamic_cast<const type_error*>(&e)    ? 1
                    : dynamic_cast<const value_error*>(&e) ? 2
                    : dynamic_cast<const buffer_error*>(&e) ? 3
                                                            : 0;
    if (!r.error_class) finding(std::string("acquire threw an unexpected error class: ") + e.what());
  } catch (const std::exception& e) {
    finding(std::string("acquire threw a foreign exception: ") + e.what());
  }
  return r;
}

PyObject* get(PyObject* o, const char* name) {
  PyObject* v = PyObject_GetAttrString(o, name);
  if (!v) finding(std::string("no attribute ") + name);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::init_python();
  g_make = fuzz::define(prelude, "make");
  g_producer_error = fuzz::define("", "ProducerError");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  fuzz::reset_type_cache();
  python::constraints c;
  c.name = "cai_arg";
  static const dtype choices[] = {dtypes::float64, dtypes::float32, dtypes::uint8};
  const dtype* wanted = &choices[in.ConsumeIntegralInRange<int>(0, 2)];
  if (in.ConsumeBool()) {
    c.dtypes = wanted;
    c.n_dtypes = 1;
  }
  c.ndim = in.ConsumeIntegralInRange<int>(-1, 2);
  c.layout = static_cast<python::order>(in.ConsumeIntegralInRange<int>(0, 2));
  c.writable = in.ConsumeBool();
  python::acquire_options o;
  o.sync = in.ConsumeBool();
  o.call_scoped = in.ConsumeBool();
  const std::vector<std::uint8_t> rest = in.ConsumeRemainingBytes<std::uint8_t>();

  PyObject* bytes = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(rest.data()),
                                              static_cast<Py_ssize_t>(rest.size()));
  PyObject* made = PyObject_CallOneArg(g_make, bytes);
  Py_DECREF(bytes);
  if (!made || !PyTuple_Check(made) || PyTuple_GET_SIZE(made) != 3) finding("make() failed");
  PyObject* hostile = Py_NewRef(PyTuple_GET_ITEM(made, 0));
  PyObject* plain = Py_NewRef(PyTuple_GET_ITEM(made, 1));
  PyObject* state = Py_NewRef(PyTuple_GET_ITEM(made, 2));
  Py_DECREF(made);
  fuzz::current_input() = plain;

  const Py_ssize_t hostile_refs = Py_REFCNT(hostile), plain_refs = Py_REFCNT(plain);
  const result expected = run(plain, c, o);
  const result got = run(hostile, c, o);

  PyObject* fired_obj = get(state, "fired");
  const long fired = PyLong_AsLong(fired_obj);
  Py_DECREF(fired_obj);
  if (fired == 0) {
    // No callback acted: the callbacks stood for plain values, and the outcome is theirs.
    ARRAYPORT_FUZZ_CHECK(got.ok == expected.ok, "a neutral callback changed acceptance");
    if (got.ok) {
      ARRAYPORT_FUZZ_CHECK(got.shape == expected.shape && got.strides == expected.strides,
                           "a neutral callback changed the shape or strides");
      ARRAYPORT_FUZZ_CHECK(got.data == expected.data, "a neutral callback changed the pointer");
      ARRAYPORT_FUZZ_CHECK(std::memcmp(&got.dtype, &expected.dtype, sizeof got.dtype) == 0,
                           "a neutral callback changed the dtype");
      ARRAYPORT_FUZZ_CHECK(got.flags == expected.flags, "a neutral callback changed the flags");
    } else {
      if (got.error_class != expected.error_class || got.py_error != expected.py_error)
        finding("a neutral callback changed the error class: " + std::to_string(got.error_class) +
                " instead of " + std::to_string(expected.error_class));
    }
  }
  // The state keeps what the callbacks made (views, reentrant ones included): let it go first.
  PyObject* kept = get(state, "kept");
  if (PyList_SetSlice(kept, 0, PY_SSIZE_T_MAX, nullptr) != 0) finding("could not clear the state");
  Py_DECREF(kept);
  Py_DECREF(state);
  ARRAYPORT_FUZZ_CHECK(Py_REFCNT(hostile) == hostile_refs || fired > 0,
                       "the hostile producer's reference count changed");
  ARRAYPORT_FUZZ_CHECK(Py_REFCNT(plain) == plain_refs, "the plain producer's reference count changed");
  Py_DECREF(hostile);
  Py_DECREF(plain);
  fuzz::current_input() = nullptr;
  ARRAYPORT_FUZZ_CHECK(!PyErr_Occurred(), "a Python error was left set");
  return 0;
}
