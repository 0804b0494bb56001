"""Memory reachability without a CUDA device: an Array that views device (or managed) memory is
never dereferenced.

Every import path that gives such a view without a GPU (a __cuda_array_interface__ producer, DLPack
kDLCUDA and kDLCUDAManaged capsules, versioned and legacy, from_dlpack, asarray) builds one over a
bogus, unmapped address, so that a dereference is a segfault that fails the run. Then every Array
method (enumerated from dir(arrayport.Array): a new one must be given arguments below) and every
Python operation on it either succeeds without touching the memory or raises NoDeviceError naming
the operation and saying why. With a GPU the bogus address would reach the driver: skipped there.
"""

from __future__ import annotations

import copy as copy_module
import inspect
import operator
import pickle
import re
import sys
import weakref

import numpy as np
import pytest

import arrayport as ap
from conftest import HAS_GPU
from dlpack_ctypes import Producer

pytestmark = pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a CUDA device")

BOGUS = 0x10000  # below any mapping: reading or writing it is a segfault

# name -> DLPack (code, bits) and NumPy typestr
DTYPES = {
    "bool": ((6, 8), "|b1"),
    "int8": ((0, 8), "|i1"),
    "uint16": ((1, 16), "<u2"),
    "float16": ((2, 16), "<f2"),
    "float32": ((2, 32), "<f4"),
    "int64": ((0, 64), "<i8"),
    "float64": ((2, 64), "<f8"),
    "complex128": ((5, 128), "<c16"),
}
# name -> shape, strides in elements (None: C order)
LAYOUTS = {
    "contiguous": ((2, 3), None),
    "strided": ((2, 3), (6, 2)),
    "transposed": ((3, 2), (1, 3)),
    "0-d": ((), None),
    "1-d": ((5,), None),
    "empty": ((0, 3), None),
}


class CAIOnly:
    """A Numba/PyCUDA-style producer: the interface is a property of its type."""

    def __init__(self, d):
        self.d = d

    @property
    def __cuda_array_interface__(self):
        return self.d


def raw_producer(kind: str, dtype: str, layout: str):
    """The foreign object: its memory at BOGUS, described as device (or managed) memory."""
    (code, bits), typestr = DTYPES[dtype]
    shape, strides = LAYOUTS[layout]
    item = np.dtype(typestr).itemsize
    if kind.startswith("cai"):
        return CAIOnly({"shape": shape, "typestr": typestr, "data": (BOGUS, kind == "cai-readonly"),
                        "version": 3, "stream": None,
                        "strides": None if strides is None else tuple(s * item for s in strides)})
    return Producer(values=(0.0,), shape=shape or None, ndim=len(shape), strides=strides,
                    dtype=(code, bits, 1), device=(13 if kind == "dlpack-managed" else 2, 0),
                    versioned=kind != "dlpack-legacy", data=BOGUS)


PRODUCERS = ["cai", "cai-readonly", "dlpack", "dlpack-legacy", "dlpack-managed", "from_dlpack",
             "asarray"]


def device_view(kind: str, dtype: str, layout: str) -> ap.Array:
    if kind == "from_dlpack":
        return ap.from_dlpack(raw_producer("dlpack", dtype, layout))
    if kind == "asarray":
        return ap.asarray(raw_producer("cai", dtype, layout))
    return ap.view(raw_producer(kind, dtype, layout))


@pytest.fixture(params=[(k, d, l) for k in PRODUCERS for d in DTYPES for l in LAYOUTS],
                ids=lambda p: "-".join(p))
def view(request):
    kind, dtype, layout = request.param
    v = device_view(kind, dtype, layout)
    assert v.memory == ("managed" if kind == "dlpack-managed" else "device")
    assert v.shape == LAYOUTS[layout][0] and str(v.dtype) == dtype
    if v.size:
        assert v.ptr == BOGUS
    return v


# ---- what may come back ----------------------------------------------------------------------------

UNREACHABLE = r" is in (device|managed) memory, which this machine cannot reach: \S"


def refused(op: str, whose: str = "the array"):
    """NoDeviceError naming the operation and whose memory, and why there is no device."""
    return ap.NoDeviceError, "^" + re.escape(f"{op}: {whose}") + UNREACHABLE


OK = "ok"


def check(call, *allowed):
    """Runs call(); its result or exception must be one of `allowed` (OK, or (type, regex))."""
    try:
        result = call()
    except Exception as e:  # noqa: BLE001 - compared with the allowed ones below
        for a in allowed:
            if a is not OK and isinstance(e, a[0]) and re.search(a[1], str(e)):
                return e
        raise AssertionError(f"unexpected {type(e).__name__}: {e}; allowed {allowed}") from e
    assert OK in allowed, f"succeeded ({result!r}), but only {allowed} are allowed"
    return result


def ops_refused(op: str):
    """What an arrayport.ops call says of memory the CPU cannot read, without a device."""
    return ap.NoDeviceError, rf"^{op}: argument '\w+': expected memory the CPU can read"


# An op that does not compute in the view's dtype (subtract of bool, min of complex) may say so
# first: both refusals leave the memory alone.
op_dtype = (TypeError, r"^[+\w]+: .*(dtype|not supported)")


not_1d = (TypeError, r"^@: expected two 1-d arrays")


def other_memory_kind(v, exc, message):
    """What a method that needs another memory kind says about device memory (managed: refused)."""
    return (exc, message) if v.memory == "device" else None


# ---- every Array method ----------------------------------------------------------------------------

def method_calls(v: ap.Array):
    """name -> [(args, kwargs, allowed outcomes)]: arguments a caller could well give, and what
    each may do without a device."""
    host = np.zeros(v.shape, v.dtype)
    managed = v.memory == "managed"
    readonly = v.readonly
    same_size = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64", 16: "complex128"}[v.itemsize]
    to_cpu = (BufferError, r"asks for another device") if not managed else refused("Array.__dlpack__")
    legacy_ro = (BufferError, r"read-only array cannot be exported through the legacy")
    # A read-only view may be refused as such first: both refusals leave the memory alone.
    setitem = (refused("Array.__setitem__"),) + (((ValueError, r"^assignment destination is read-only"),)
                                                 if readonly else ())
    needs_managed = lambda what: (ValueError, rf"^{what}: needs managed memory, but this array is in device")
    return {
        "__dlpack__": [((), {}, (OK, legacy_ro)),
                       ((), {"max_version": (1, 0)}, (OK,)),
                       ((), {"max_version": (1, 0), "dl_device": (1, 0)}, (to_cpu,))],
        "__dlpack_device__": [((), {}, (OK,))],
        # Python >= 3.12 shows the buffer protocol as a method (PEP 688).
        **({"__buffer__": [((inspect.BufferFlags.FULL_RO,), {}, ((BufferError, r"^arrayport.Array: the buffer protocol needs "
                                                      r"host-accessible memory"),
                                       refused("Array (buffer protocol)")))]}
           if sys.version_info >= (3, 12) else {}),
        "__array__": [((), {}, (refused("Array.__array__"),)),
                      (("float64",), {}, (refused("Array.__array__"),)),
                      ((), {"copy": True}, (refused("Array.__array__"),))],
        "get": [((), {}, (refused("Array.get"),)), ((), {"stream": 0}, (refused("Array.get"),))],
        "fill": [((1,), {}, (refused("Array.fill"),)), ((0,), {}, (refused("Array.fill"),))],
        "copy": [((), {}, (refused("Array.copy"),)),
                 ((), {"memory": "host"}, (refused("Array.copy"),)),
                 ((), {"dtype": "float64"}, (refused("Array.copy"),))],
        # copy.copy, copy.deepcopy and pickle copy the data (arrayport/_copying.py).
        "__copy__": [((), {}, (refused("Array.copy"),))],
        "__deepcopy__": [(({},), {}, (refused("Array.copy"),))],
        "__reduce__": [((), {}, (refused("Array.copy"),))],
        # Operators and methods over arrayport.ops (arrayport/_operators.py): each op refuses
        # memory the CPU cannot read, naming itself and the argument.
        **{name: [((arg,), {}, (ops_refused(op), op_dtype)) for arg in (1, 2.5, v)]
           for name, op in (("__add__", "add"), ("__radd__", "add"), ("__iadd__", "add"),
                            ("__sub__", "subtract"), ("__rsub__", "subtract"),
                            ("__isub__", "subtract"), ("__mul__", "multiply"),
                            ("__rmul__", "multiply"), ("__imul__", "multiply"),
                            ("__truediv__", "divide"), ("__rtruediv__", "divide"),
                            ("__itruediv__", "divide"), ("__and__", "bitwise_and"),
                            ("__rand__", "bitwise_and"), ("__iand__", "bitwise_and"),
                            ("__or__", "bitwise_or"), ("__ror__", "bitwise_or"),
                            ("__ior__", "bitwise_or"), ("__xor__", "bitwise_xor"),
                            ("__rxor__", "bitwise_xor"), ("__ixor__", "bitwise_xor"),
                            ("__eq__", "equal"), ("__ne__", "not_equal"), ("__lt__", "less"),
                            ("__le__", "less_equal"), ("__gt__", "greater"),
                            ("__ge__", "greater_equal"), ("__floordiv__", "floor_divide"),
                            ("__rfloordiv__", "floor_divide"), ("__ifloordiv__", "floor_divide"),
                            ("__mod__", "remainder"), ("__rmod__", "remainder"),
                            ("__imod__", "remainder"))},
        # power checks an integer exponent array's minimum first: min may refuse before power.
        **{name: [((arg,), {}, (ops_refused("power"), ops_refused("min"), op_dtype))
                  for arg in (1, 2.5, v)] for name in ("__pow__", "__rpow__", "__ipow__")},
        "__matmul__": [((v,), {}, (ops_refused("dot"), not_1d, op_dtype))],
        "__rmatmul__": [((v,), {}, (ops_refused("dot"), not_1d, op_dtype))],
        "__neg__": [((), {}, (ops_refused("negative"), op_dtype))],
        "__pos__": [((), {}, (ops_refused("copy"), op_dtype))],
        "__abs__": [((), {}, (ops_refused("abs"), op_dtype))],
        "__invert__": [((), {}, (ops_refused("bitwise_invert"), op_dtype))],
        **{name: [((), {}, (ops_refused(name), op_dtype)), ((0,), {}, (ops_refused(name), op_dtype,
                                                             (ValueError, r"axis")))]
           for name in ("sum", "mean", "min", "max", "prod", "any", "all", "argmin", "argmax")},
        "astype": [(("int32",), {}, (ops_refused("astype"), op_dtype))],
        "tolist": [((), {}, (refused("Array.get"), ops_refused("astype"), op_dtype))],
        "item": [((), {}, (refused("Array.get"), ops_refused("astype"), op_dtype,
                           (ValueError, r"^item: can only convert an array of size 1")))],
        "__iter__": [((), {}, (OK, (TypeError, r"^iteration over a 0-d array")))],  # views
        "copy_to": [((host,), {}, (refused("Array.copy_to"),)),
                    ((ap.asarray(host),), {}, (refused("Array.copy_to"),)),
                    ((v,), {}, (refused("Array.copy_to"),))],
        "to": [((), {}, (OK,)), ((), {"memory": v.memory}, (OK,)),
               ((), {"memory": "host"}, (refused("Array.to"),)),
               ((), {"copy": True}, (refused("Array.to"),)),
               ((), {"dtype": "float64"}, (OK, refused("Array.to")))],
        "prefetch": [((), {}, (refused("Array.prefetch") if managed else needs_managed("prefetch"),)),
                     ((), {"device": "cpu"},
                      (refused("Array.prefetch") if managed else needs_managed("prefetch"),))],
        "advise": [(("set_read_mostly",), {},
                    (refused("Array.advise") if managed else needs_managed("advise"),))],
        "view": [((), {}, (OK,)), ((same_size,), {}, (OK,))],
        # The array API's: the namespace (a module), and to_device (itself where it is already).
        "__array_namespace__": [((), {}, (OK,)), ((), {"api_version": "2024.12"}, (OK,))],
        "to_device": [((v.device,), {}, (OK,)), ((("cpu", 0),), {}, (refused("Array.to"),))],
        "transpose": [((), {}, (OK,))],
        "reshape": [((v.size,), {}, (OK, (ValueError, r"^reshape: only C-contiguous")))],
        "__getitem__": [((Ellipsis,), {}, (OK,)),
                        ((0,), {}, (OK, (IndexError, r"too many indices|out of bounds"))),
                        ((slice(None, None, -1),), {}, (OK, (IndexError, r"too many indices")))],
        "__setitem__": [((Ellipsis, value), {}, setitem) for value in (2.0, host, ap.asarray(host), v)],
        "__delitem__": [((0,), {}, ((ValueError, r"cannot delete array elements"),))],
        "__len__": [((), {}, (OK, (TypeError, r"len\(\) of a 0-d")))],
        "__repr__": [((), {}, (OK,))],
        **{name: [((), {}, ((TypeError, r"^(int|float|complex|operator.index|bool): this array is in "
                                         r"device memory|only 0-dimensional|only integer scalar"
                                         r"|cannot convert"),
                            (ValueError, r"^The truth value of an (empty )?array"),
                            refused(what)))]
           for name, what in (("__int__", "int"), ("__float__", "float"), ("__complex__", "complex"),
                              ("__index__", "operator.index"), ("__bool__", "bool"))},
    }


NOT_METHODS = {"__doc__", "__module__", "__new__", "__init_subclass__", "__subclasshook__"}


def own_members():
    """Array's own names: what it defines or overrides (object's protocol aside)."""
    return sorted(n for n in dir(ap.Array)
                  if getattr(ap.Array, n) is not getattr(object, n, None) and n not in NOT_METHODS)


def own_methods():
    return [n for n in own_members() if callable(getattr(ap.Array, n))]


def own_attributes():
    return [n for n in own_members() if not callable(getattr(ap.Array, n))]


def test_every_array_method_is_swept():
    # A method added to Array must get its calls in method_calls (the sweep would miss it).
    v = device_view("cai", "float32", "contiguous")
    assert set(own_methods()) == set(method_calls(v)), "give the new method calls in method_calls"


def test_every_array_method_leaves_device_memory_alone(view):
    for name, calls in method_calls(view).items():
        for args, kwargs, allowed in calls:
            result = check(lambda: getattr(view, name)(*args, **kwargs), *allowed)
            if name == "to" and isinstance(result, ap.Array):
                assert result is view  # nothing changed: itself, no copy
            if name == "__repr__":
                assert result.startswith(f"arrayport.Array(<{view.memory} memory, not readable here>, "
                                         f"dtype={view.dtype}, shape={view.shape}, memory='{view.memory}'")


def test_every_attribute_reads_without_touching_the_memory(view):
    for name in own_attributes():
        if name == "__array_interface__":  # a pointer the host would read
            if view.memory == "device":
                check(lambda: view.__array_interface__,
                      (AttributeError, r"device memory, which the host cannot read"))
            else:
                check(lambda: view.__array_interface__, refused("Array.__array_interface__"))
            continue
        if name == "mT" and view.ndim < 2:  # NumPy's refusal too
            check(lambda: view.mT, (ValueError, r"^mT: expected an array of at least 2 dim"))
            continue
        getattr(view, name)
    cai = view.__cuda_array_interface__
    assert cai["shape"] == view.shape and (cai["data"][0] == BOGUS or view.size == 0)


def test_views_of_a_device_view_stay_unreachable(view):
    derived = [view[...], view.T, view.view()] + ([view[::-1], view[:1]] if view.ndim else [])
    for d in derived:
        assert d.memory == view.memory
        check(lambda: d.fill(1), refused("Array.fill"))
        check(lambda: d.get(), refused("Array.get"))
        assert "not readable here" in repr(d)


# ---- Python operations ----------------------------------------------------------------------------

def test_python_operations_never_read_device_memory(view):
    conversion = (ap.NoDeviceError, UNREACHABLE)  # float() and friends, should they read elements
    assert "not readable here" in check(lambda: str(view), OK)
    assert "not readable here" in check(lambda: format(view, ""), OK)
    check(lambda: len(view), OK, (TypeError, r"len\(\) of a 0-d"))
    # NumPy's rules (ambiguous truth, non-0-d conversions) or a refusal; never the element.
    host_only = (TypeError, r"this array is in device memory, which the host cannot read")
    check(lambda: bool(view), (ValueError, r"^The truth value of an (empty )?array"), host_only,
          conversion)
    for convert in (float, int, complex, operator.index):
        check(lambda: convert(view),
              (TypeError, r"must be|cannot be interpreted|only|argument|cannot convert"),
              host_only, conversion)
    check(lambda: list(view), OK, (TypeError, r"iteration over a 0-d array"), conversion)
    # == is element-wise (ops.equal): refused as every op is; an Array is unhashable, as an ndarray.
    check(lambda: view == view, ops_refused("equal"), op_dtype)
    check(lambda: hash(view), (TypeError, r"^unhashable type: 'arrayport.Array'"))
    assert weakref.ref(view)() is view
    # Pickles and copies hold copies of the data: refused, as copy() is, never read.
    check(lambda: pickle.dumps(view), refused("Array.copy"))
    check(lambda: copy_module.copy(view), refused("Array.copy"))
    check(lambda: copy_module.deepcopy(view), refused("Array.copy"))


def test_buffer_protocol_and_numpy_never_read_device_memory(view):
    if view.memory == "device":
        check(lambda: memoryview(view), (BufferError, r"needs host-accessible memory"))
    else:
        check(lambda: memoryview(view), refused("Array (buffer protocol)"))
    # NumPy finds no buffer; then the interface (managed memory: refused) or __array__ (device
    # memory: refused), never an object array holding the Array.
    op = "Array.__array__" if view.memory == "device" else "Array.__array_interface__"
    for convert in (np.asarray, np.array, lambda v: np.asarray(v, dtype="float64")):
        check(lambda: convert(view), refused(op))
    host = np.zeros(view.shape, view.dtype)
    check(lambda: host.__setitem__(..., view), refused(op))
    assert not host.any()


def test_assignment_in_both_directions_is_refused(view):
    host = ap.zeros(view.shape, view.dtype, memory="host")
    check(lambda: host.__setitem__(..., view), refused("Array.__setitem__", "value"))
    check(lambda: view.__setitem__(..., host), refused("Array.__setitem__"),
          *([(ValueError, r"^assignment destination is read-only")] if view.readonly else []))
    check(lambda: host.copy_to(view), refused("Array.copy_to", "dst"))
    check(lambda: view.copy_to(host), refused("Array.copy_to"))
    assert not host.get().any()  # nothing was written


def test_module_functions_never_read_device_memory(view):
    check(lambda: ap.copy(view), refused("Array.copy"))
    check(lambda: ap.copy(view, memory="host"), refused("Array.copy"))
    check(lambda: ap.to_gpu(view), refused("to_gpu", "a"))
    assert check(lambda: ap.asarray(view), OK) is view
    assert check(lambda: ap.from_dlpack(view), OK) is view
    check(lambda: ap.asarray(view, device="cpu"), refused("Array.to"))
    check(lambda: ap.asarray(view, memory="host"), refused("Array.to"))
    check(lambda: ap.from_dlpack(view, device="cpu"), refused("Array.to"))
    assert check(lambda: ap.view(view), OK).ptr == view.ptr
    no_device = (ap.NoDeviceError, r"expected memory the CPU can read \(this machine has no usable CUDA "
                                   r"device|device memory needs a CUDA device")
    for op in (lambda: ap.ops.add(view, 1), lambda: ap.ops.sum(view), lambda: ap.ops.astype(view, "int32")):
        check(op, no_device)
    host = np.zeros(view.shape, view.dtype)
    check(lambda: ap.ops.add(host, host, out=view), no_device,
          (ValueError, r"^add: 'out' is in device memory, which the CPU cannot read"))
    # *_like allocate memory of the view's kind: device memory needs a device; managed memory
    # falls back to host memory. Neither reads the view.
    for like in (lambda: ap.empty_like(view), lambda: ap.zeros_like(view),
                 lambda: ap.ones_like(view), lambda: ap.full_like(view, 3)):
        made = check(like, OK, (ap.NoDeviceError, r"device memory needs a CUDA device"))
        if isinstance(made, ap.Array):
            assert view.memory == "managed" and made.memory == "host" and made.shape == view.shape


@pytest.mark.parametrize("kind", ["cai", "dlpack", "dlpack-legacy", "dlpack-managed"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_asarray_of_a_foreign_device_array_on_the_cpu_is_refused(kind, layout):
    for device in ("cpu", ("cpu", 0), (1, 0)):
        check(lambda: ap.asarray(raw_producer(kind, "float32", layout), device=device),
              refused("Array.to"))
    check(lambda: ap.asarray(raw_producer(kind, "float32", layout), memory="host"), refused("Array.to"))
    check(lambda: ap.copy(raw_producer(kind, "float32", layout)),
          (TypeError, r"^copy: a: expected an arrayport.Array or an object with the buffer protocol"))


@pytest.mark.parametrize("kind", ["cai", "dlpack"])
def test_assigning_a_foreign_device_array_is_refused(kind):
    host = ap.zeros((2, 3), "float32", memory="host")
    check(lambda: host.__setitem__(..., raw_producer(kind, "float32", "contiguous")),
          refused("Array.__setitem__", "value"))
    assert not host.get().any()


def test_the_message_says_why_there_is_no_device():
    v = device_view("cai", "float32", "contiguous")
    with pytest.raises(ap.NoDeviceError) as e:
        v.fill(1)
    assert str(e.value) == ("Array.fill: the array is in device memory, which this machine cannot "
                            "reach: " + ap.runtime_info()["reason"])
