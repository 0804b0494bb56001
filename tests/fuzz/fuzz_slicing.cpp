// Fuzzes the indexing-key parser of arrayport.Array (resolve_basic_index in
// src/array/array_indexing.cpp, behind __getitem__ and __setitem__) against NumPy: keys are tuples, single items or lists of ints
// (small, negative, past 64 bits), NumPy integers, slices (any start, stop and step, 0 and huge
// steps, floats), None, Ellipsis, bools, floats, strings, lists and arrays, on arrays of 0 to 5
// dimensions (zero-size ones too) that may already be reversed, strided or transposed views.
// Whatever NumPy does with a basic key, arrayport does too (the same shape, strides and first
// element, or an error of an expected class); keys NumPy takes as advanced indexing are refused
// with IndexError or TypeError.
#include "python_fuzz.hpp"

#include <cstdint>

namespace {

using arrayport::fuzz::finding;

PyObject* g_check = nullptr;  // check(shape, dtype, pre, key) in Python: raises on a finding
PyObject* g_np_int64 = nullptr;
PyObject* g_np_array = nullptr;

const char* const checker = R"PY(
import numpy as np
import arrayport as ap

DTYPES = ['bool', 'int8', 'uint8', 'int16', 'uint16', 'int32', 'float32', 'int64', 'uint64',
          'float16', 'float64', 'complex64', 'complex128']
PRE = [None, (slice(None, None, -1),), (Ellipsis, slice(None, None, 2)), 'T',
       (None, Ellipsis), (Ellipsis, slice(1, None, -1))]

class Finding(Exception):
    pass

def _kind(k):
    # 2: basic (a view in NumPy); 1: a 0-d integer array, an integer to arrayport (it has
    # __index__) but an advanced index to NumPy (a copy); 0: advanced, refused by arrayport.
    if isinstance(k, (bool, np.bool_)):
        return 0
    if isinstance(k, np.ndarray):
        return 1 if k.ndim == 0 and k.dtype.kind in 'iu' else 0
    return 2 if (k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice))) else 0

def _is_basic(key):
    if isinstance(key, list):
        return 0
    items = key if isinstance(key, tuple) else (key,)
    return min((_kind(k) for k in items), default=2)

def _numpy_key(key):
    # Keep NumPy from returning a scalar for a full integer index (arrayport gives a 0-d view):
    # a trailing Ellipsis changes nothing else.
    items = key if isinstance(key, tuple) else (key,)
    if isinstance(key, list) or any(k is Ellipsis for k in items):
        return key
    return items + (Ellipsis,)

def _ptr(n):
    return n.__array_interface__['data'][0]

def _apply_pre(x, pre):
    if pre is None:
        return x
    if pre == 'T':
        return x.T
    return x[pre]

def check(shape, dtype, pre, key):
    dtype = DTYPES[dtype % len(DTYPES)]
    pre = PRE[pre % len(PRE)]
    base = ap.zeros(shape, dtype, memory='host')
    nbase = np.asarray(base)
    if base.size and _ptr(nbase) != base.ptr:
        raise Finding('np.asarray(Array) is not zero-copy')
    try:
        n = _apply_pre(nbase, pre)
    except IndexError:
        return
    a = _apply_pre(base, pre)
    nkey = _numpy_key(key)
    basic = _is_basic(key)

    # __getitem__
    try:
        r = n[nkey]
        nerr = None
    except Exception as e:
        r, nerr = None, e
    try:
        s = a[key]
        aerr = None
    except (IndexError, TypeError, ValueError, OverflowError) as e:
        s, aerr = None, e
    if aerr is None:
        if nerr is not None:
            raise Finding(f'a[{key!r}] succeeded, NumPy raised {nerr!r} (shape {shape}, pre {pre!r})')
        if not basic:
            raise Finding(f'a[{key!r}] took an advanced index')
        if not isinstance(s, ap.Array):
            raise Finding(f'a[{key!r}] gave a {type(s)}')
        if s.shape != r.shape:
            raise Finding(f'a[{key!r}].shape {s.shape} != NumPy {r.shape} (shape {shape}, pre {pre!r})')
        for e, x, y in zip(s.shape, s.strides, r.strides):
            if r.size and basic == 2 and e > 1 and x != y:  # an empty array's strides say nothing
                raise Finding(f'a[{key!r}].strides {s.strides} != NumPy {r.strides} (shape {shape}, pre {pre!r})')
        if r.size and basic == 2 and s.ptr != _ptr(r):
            raise Finding(f'a[{key!r}] starts at another element than NumPy (shape {shape}, pre {pre!r})')
        if r.size and not np.array_equal(np.asarray(s), r):
            raise Finding(f'a[{key!r}] reads other values than NumPy')
    else:
        if basic and nerr is None:
            raise Finding(f'a[{key!r}] raised {aerr!r}, NumPy accepts it (shape {shape}, pre {pre!r})')
        if not isinstance(aerr, (IndexError, TypeError, ValueError)):
            raise Finding(f'a[{key!r}] raised {aerr!r}: expected IndexError, TypeError or ValueError')
        if not str(aerr):
            raise Finding(f'a[{key!r}] raised {aerr!r} with no message')

    # __setitem__: the same elements change, in a copy of each side.
    if nerr is not None or not basic:
        return
    b = ap.zeros(shape, dtype, memory='host')
    nb = np.zeros(shape, dtype)
    try:
        _apply_pre(b, pre)[key] = 1
    except (IndexError, TypeError, ValueError) as e:
        raise Finding(f'a[{key!r}] = 1 raised {e!r}; a[{key!r}] worked')
    _apply_pre(nb, pre)[nkey] = 1
    if not np.array_equal(np.asarray(b), nb):
        raise Finding(f'a[{key!r}] = 1 wrote other elements than NumPy (shape {shape}, pre {pre!r})')
)PY";

PyObject* small_int(FuzzedDataProvider& in) {
  return PyLong_FromLong(in.ConsumeIntegralInRange<long>(-6, 6));
}

PyObject* slice_part(FuzzedDataProvider& in, bool step) {
  switch (in.ConsumeIntegralInRange<int>(0, 11)) {
    case 0: case 1: case 2: Py_RETURN_NONE;
    case 3: return arrayport::fuzz::edge_int(in);
    case 4: return PyObject_CallFunction(g_np_int64, "l", in.ConsumeIntegralInRange<long>(-6, 6));
    case 5: return in.ConsumeBool() ? PyFloat_FromDouble(1.0) : PyBool_FromLong(in.ConsumeBool());
    case 6: return step ? PyLong_FromLong(0) : small_int(in);
    default: return step ? PyLong_FromLong(in.ConsumeIntegralInRange<long>(-3, 3)) : small_int(in);
  }
}

PyObject* key_item(FuzzedDataProvider& in, int depth) {
  switch (in.ConsumeIntegralInRange<int>(0, 23)) {
    case 0: case 1: case 2: case 3: case 4: return small_int(in);
    case 5: return arrayport::fuzz::edge_int(in);
    case 6: return PyObject_CallFunction(g_np_int64, "l", in.ConsumeIntegralInRange<long>(-6, 6));
    case 7: case 8: case 9: case 10: case 11: {
      PyObject* a = slice_part(in, false);
      PyObject* b = slice_part(in, false);
      PyObject* c = slice_part(in, true);
      PyObject* s = PySlice_New(a, b, c);
      Py_DECREF(a);
      Py_DECREF(b);
      Py_DECREF(c);
      return s;
    }
    case 12: case 13: Py_RETURN_NONE;
    case 14: case 15: return Py_NewRef(Py_Ellipsis);
    case 16: return PyBool_FromLong(in.ConsumeBool());
    case 17: return PyFloat_FromDouble(in.ConsumeIntegralInRange<int>(-2, 2) + 0.5 * in.ConsumeBool());
    case 18: {  // a list of ints (advanced indexing in NumPy)
      const int n = in.ConsumeIntegralInRange<int>(0, 3);
      PyObject* l = PyList_New(n);
      for (int i = 0; i < n; ++i) PyList_SET_ITEM(l, i, small_int(in));
      return l;
    }
    case 19: {  // an integer or bool array
      PyObject* l = key_item(in, 99);
      PyObject* arr = PyObject_CallOneArg(g_np_array, l);
      Py_DECREF(l);
      if (!arr) {
        PyErr_Clear();
        Py_RETURN_NONE;
      }
      return arr;
    }
    case 20: {
      if (depth > 0) return small_int(in);
      const int n = in.ConsumeIntegralInRange<int>(0, 2);
      PyObject* t = PyTuple_New(n);
      for (int i = 0; i < n; ++i) PyTuple_SET_ITEM(t, i, key_item(in, depth + 1));
      return t;
    }
    default: return arrayport::fuzz::any_value(in, 2);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  arrayport::fuzz::init_python();
  g_check = arrayport::fuzz::define(checker, "check");
  g_np_int64 = arrayport::fuzz::define("import numpy\nint64 = numpy.int64\n", "int64");
  g_np_array = arrayport::fuzz::define("array = numpy.array\n", "array");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const int ndim = in.ConsumeIntegralInRange<int>(0, 5);
  PyObject* shape = PyTuple_New(ndim);
  for (int i = 0; i < ndim; ++i)
    PyTuple_SET_ITEM(shape, i, PyLong_FromLong(in.ConsumeIntegralInRange<int>(0, 7) ? in.ConsumeIntegralInRange<long>(0, 4)
                                                                                    : in.ConsumeIntegralInRange<long>(5, 9)));
  const long dtype = in.ConsumeIntegralInRange<long>(0, 12);
  const long pre = in.ConsumeIntegralInRange<long>(0, 5);
  PyObject* key;
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: key = key_item(in, 0); break;
    case 1: {
      const int n = in.ConsumeIntegralInRange<int>(0, 3);
      key = PyList_New(n);
      for (int i = 0; i < n; ++i) PyList_SET_ITEM(key, i, key_item(in, 1));
      break;
    }
    default: {
      const int n = in.ConsumeIntegralInRange<int>(0, in.ConsumeIntegralInRange<int>(0, 7) ? 6 : 70);
      key = PyTuple_New(n);
      for (int i = 0; i < n; ++i) PyTuple_SET_ITEM(key, i, key_item(in, 0));
    }
  }
  PyObject* r = PyObject_CallFunction(g_check, "OllO", shape, dtype, pre, key);
  if (!r) finding("the NumPy comparison failed");
  Py_DECREF(r);
  Py_DECREF(shape);
  Py_DECREF(key);
  return 0;
}
