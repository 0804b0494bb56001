"""Lifetimes: exact reference counts after many acquire/export cycles, DLPack deleters called
exactly once (on success and on every error path), producers that die before their consumers,
capsules never consumed, and arrays, views and capsules still alive at interpreter shutdown.

Cycles through arrayport objects: a producer that keeps a view of itself (x.me = ap.view(x)) is a
cycle through the Array and its holder, which the cycle collector must see, free, and release
exactly once (DLPack deleter, buffer release), leaving no reference behind."""

from __future__ import annotations

import ctypes
import gc
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import arrayport as ap
from arrayport import _core, ops
from conftest import HAS_GPU, needs_gpu
from dlpack_ctypes import DLPackOnly, Producer


def live_exports() -> int:
    return _core._dlpack_live_exports()


# ---- reference counts --------------------------------------------------------------------------

def test_refcounts_are_exact_after_many_acquire_and_export_cycles():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = DLPackOnly(x)
    m = memoryview(bytearray(16))
    a = ap.asarray(np.ones((3, 4), np.float32))
    objects = (x, d, m, a)
    gc.collect()
    counts = [sys.getrefcount(o) for o in objects]
    exports = live_exports()
    for _ in range(5000):
        ap.view(x)                      # acquire: buffer protocol
        ap.asarray(d)                   # acquire: DLPack
        ap.view(m)                      # acquire: a plain memoryview
        np.asarray(a)                   # export: buffer protocol
        memoryview(a)                   # export: memoryview
        np.from_dlpack(a)               # export: DLPack, consumed
        a.__dlpack__()                  # export: DLPack, never consumed
        ops.add(x, a)                   # acquire for the duration of an op
        ops.sum(d)
        ap.view(x)[1:, ::2].copy()      # views of views
    gc.collect()
    assert [sys.getrefcount(o) for o in objects] == counts
    assert live_exports() == exports


def test_an_array_holds_its_producer_exactly_while_it_lives():
    x = np.arange(4.0)
    base = sys.getrefcount(x)
    views = [ap.view(x) for _ in range(10)]
    assert sys.getrefcount(x) > base
    sub = views[0][1:]
    del views
    gc.collect()
    assert sys.getrefcount(x) > base  # the slice of a view still needs x
    del sub
    gc.collect()
    assert sys.getrefcount(x) == base


# ---- DLPack deleters: exactly once -------------------------------------------------------------

def deleted_once(*producers: Producer) -> None:
    gc.collect()
    for p in producers:
        assert (p.exported, p.deleted) == (1, 1), (p.exported, p.deleted)


def test_deleter_runs_once_after_an_op_and_after_an_assignment():
    p, q = Producer(), Producer(values=(4.0, 3.0, 2.0, 1.0))
    assert np.asarray(ops.add(p, q)).tolist() == [5.0] * 4
    deleted_once(p, q)  # an op holds its inputs only for the call
    a = ap.zeros(4, "float64")
    r = Producer()
    a[...] = r
    assert np.asarray(a).tolist() == [1.0, 2.0, 3.0, 4.0]
    deleted_once(r)


@pytest.mark.parametrize("producer, call, exc, match", [
    ({"dtype": (0, 16, 1)}, lambda p: ops.add(p, 1), TypeError, r"add: .*int16"),
    ({"shape": (2, 2)}, lambda p: ops.dot(p, np.ones(4)), ValueError,
     r"dot: operands could not be broadcast together"),
    ({"readonly": True}, lambda p: ops.add(np.ones(4), 1.0, out=p), ValueError,
     r"add: out: expected a writable array"),
    ({}, lambda p: ops.add(np.ones(3), p), ValueError, r"could not be broadcast"),
    ({}, lambda p: ops.add(np.ones(4, np.float32), np.float32(1), out=p), TypeError,
     r"out: expected dtype float32, got float64"),
    ({}, lambda p: ops.sum(p, axis=3), ValueError, r"sum: axis: 3 is out of bounds"),
    ({}, lambda p: ap.asarray(p, dtype="float32", copy=False), ValueError, r"copy=False"),
    # NULL strides: the compact strides of 2^62 x 4 x 2 elements do not fit in int64
    ({"shape": (2, 2**62, 4)}, ap.view, ValueError, r"shape \(2, 4611686018427387904, 4\) has "
                                                   r"36893488147419103232 elements, more than 2\^63-1"),
], ids=["dtype", "ndim", "readonly-out", "shape", "out-dtype", "axis", "copy-false",
        "compact-strides-overflow"])
def test_deleter_runs_once_when_the_consumer_refuses_the_array(producer, call, exc, match):
    p = Producer(**producer)
    with pytest.raises(exc, match=match):
        call(p)
    deleted_once(p)


class _Api(ctypes.Structure):
    """The head of the _C_API table (include/arrayport/python/api.h) up to release()."""

    _fields_ = [("abi_major", ctypes.c_uint32), ("abi_minor", ctypes.c_uint32),
                ("array_type", ctypes.c_void_p), ("array_view_offset", ctypes.c_ssize_t),
                ("current_stream", ctypes.c_void_p), ("array_from_view", ctypes.c_void_p),
                ("cuda_error", ctypes.c_void_p), ("out_of_memory_error", ctypes.c_void_p),
                ("no_device_error", ctypes.c_void_p),
                ("acquire", ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p,
                                              ctypes.c_uint32, ctypes.c_void_p,
                                              ctypes.POINTER(ctypes.c_void_p))),
                ("release", ctypes.PYFUNCTYPE(None, ctypes.c_void_p))]


def c_api_acquire(obj, flags: int) -> None:
    """acquire() then release() through the C API that C, Cython and SWIG callers use."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    api = _Api.from_address(get(_core._C_API, b"arrayport._core._C_API"))
    view, handle = ctypes.create_string_buffer(128), ctypes.c_void_p()
    try:
        api.acquire(obj, b"arg", flags, ctypes.addressof(view), ctypes.byref(handle))
    finally:
        api.release(handle)


@pytest.mark.parametrize("flags, kw, exc, match", [
    (0x1, {"readonly": True}, BufferError, r"arg: expected a writable array, got a read-only"),
    (0x4, {}, (ValueError, TypeError), r"arg: .*device"),
    (0x8, {"values": tuple(range(8)), "shape": (4,), "strides": (2,)}, ValueError,
     r"arg: .*C-contiguous"),
], ids=["writable", "device", "c-order"])
def test_deleter_runs_once_when_a_c_api_constraint_fails(flags, kw, exc, match):
    p = Producer(**kw)
    with pytest.raises(exc, match=match):
        c_api_acquire(p, flags)
    deleted_once(p)
    ok = Producer()
    c_api_acquire(ok, 0)  # and once on success
    deleted_once(ok)


# ---- producers that die first, capsules never consumed -----------------------------------------

def churn() -> None:
    """Allocates and frees so that freed memory is reused (and ASan's quarantine cycles)."""
    junk = [np.full(1000, 7.0) for _ in range(200)]
    del junk
    gc.collect()


def test_views_outlive_their_producers():
    x = np.arange(1000, dtype=np.float64)
    by_buffer, by_dlpack = ap.view(x), ap.asarray(DLPackOnly(x.copy()))
    by_memoryview = ap.view(memoryview(bytearray(b"\x01" * 64)))
    del x
    churn()
    assert np.asarray(by_buffer).sum() == 999 * 1000 / 2
    assert np.asarray(by_dlpack)[-1] == 999.0
    assert bytes(memoryview(by_memoryview))[:4] == b"\x01" * 4


def test_exports_outlive_the_array_they_came_from():
    a = ap.asarray(np.arange(100, dtype=np.int64))
    as_numpy, as_memoryview, as_dlpack = np.asarray(a), memoryview(a), np.from_dlpack(a)
    capsule = ap.full(3, 5, "int64").__dlpack__()  # its array lives on in the capsule alone
    del a
    churn()
    assert as_numpy.sum() == 4950
    assert as_memoryview.tolist()[-1] == 99
    assert as_dlpack[99] == 99
    assert np.from_dlpack(_Capsule(capsule)).tolist() == [5, 5, 5]


class _Capsule:
    """Hands out a capsule made earlier (NumPy consumes capsules only through __dlpack__)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kw):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def test_unconsumed_capsules_release_the_array_exactly_once():
    a = ap.full(8, 3.0, "float32")
    base, exports = sys.getrefcount(a), live_exports()
    caps = [a.__dlpack__() for _ in range(5)] + [a.__dlpack__(max_version=(1, 0))]
    legacy = a.__dlpack__(max_version=None)  # a legacy (pre-1.0) capsule
    assert live_exports() == exports + 7
    assert sys.getrefcount(a) == base + 7
    del caps, legacy
    gc.collect()
    assert live_exports() == exports
    assert sys.getrefcount(a) == base
    # consumed ones are released by their consumer, once
    n = np.from_dlpack(a)
    assert live_exports() == exports + 1
    del n
    assert live_exports() == exports and sys.getrefcount(a) == base


# ---- interpreter shutdown ----------------------------------------------------------------------

SHUTDOWN = """
    import gc, sys, threading
    import numpy as np
    import arrayport as ap
    from arrayport import ops

    class Node:
        def __init__(self, **kw):
            self.__dict__.update(kw)
            self.me = self                     # a reference cycle: freed by the last gc, if at all

    x = np.arange(1000, dtype=np.float32)
    a = ap.asarray(x)                           # globals: an array, a view, exports, capsules
    v = ap.view(np.ones((10, 10)))[::2]
    exported = np.from_dlpack(ap.full(10, 2.0))
    mv = memoryview(ap.zeros(16, "uint8"))
    capsule = ap.ones(4).__dlpack__()
    cycle = Node(array=ap.zeros(100), capsule=ap.ones(3).__dlpack__(), view=ap.view(x),
                 foreign=np.from_dlpack(ap.ones(5)))
    Node(array=ap.full(7, 1.0), capsule=ap.zeros(2).__dlpack__())   # garbage in a cycle
    sys.modules["__main__"].keep = Node(capsule=ap.ones(2).__dlpack__())
    if ap.runtime_info()["cuda_available"]:
        d = ap.full(1000, 1.0, "float32", memory="device")
        dcap = d.__dlpack__(stream=None)
        m = ap.full(1000, 1.0, "float32", memory="managed")
    gc.disable()   # leave the cycles to the interpreter's own teardown
    print("ok", float(np.asarray(ops.sum(a))), flush=True)
"""


def run_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout)


def test_arrays_views_and_capsules_alive_at_interpreter_shutdown():
    r = run_python(SHUTDOWN)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "ok 499500.0\n"
    assert r.stderr == ""


def test_a_thread_in_an_op_at_interpreter_shutdown():
    # A daemon thread still running ops (which release the GIL in their kernels) when the main
    # thread exits: the interpreter stops such threads when they next take the GIL.
    r = run_python(SHUTDOWN + """
    started = threading.Event()

    def work():
        big = np.broadcast_to(np.float32(1), (1 << 24,))
        while True:
            ops.sum(big)
            started.set()

    threading.Thread(target=work, daemon=True).start()
    started.wait()
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "ok 499500.0\n"
    assert r.stderr == ""


@pytest.mark.skipif(not HAS_GPU, reason="device capsules need a GPU")
def test_device_capsules_alive_at_shutdown_after_cuda_state_is_gone():
    r = run_python(SHUTDOWN + """
    import atexit
    caps = [ap.full(100, 1.0, "float32", memory="device").__dlpack__() for _ in range(3)]
    atexit.register(lambda: caps.append(ap.empty(10, memory="device")))
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stderr == ""


# ---- cycles: a producer that keeps a view of itself, through the Array and its holder ----------

class CAIProducer:
    """__cuda_array_interface__ over memory it owns: device memory with a GPU, else host memory
    (which the CPU build takes for device memory; nothing reads it there)."""

    def __init__(self, n=4):
        if HAS_GPU:
            self.storage = ap.zeros((n,), "float64", memory="device")
            self.ptr = self.storage.ptr
        else:
            self.storage = np.arange(n, dtype=np.float64)
            self.ptr = self.storage.ctypes.data
        self.n = n

    @property
    def __cuda_array_interface__(self):
        return {"version": 3, "shape": (self.n,), "typestr": "<f8", "data": (self.ptr, False),
                "strides": None, "stream": None}


class Bytes(bytearray):
    """The buffer protocol, with a __dict__ to keep a view in."""


class Sub(np.ndarray):
    """A NumPy subclass (read from its struct), with a __dict__."""


def dlpack_versioned():
    return Producer(versioned=True)


def dlpack_legacy():
    return Producer(versioned=False)


PRODUCERS = {
    "dlpack versioned": dlpack_versioned,
    "dlpack legacy": dlpack_legacy,
    "cai": CAIProducer,
    "buffer": lambda: Bytes(32),
    "numpy subclass": lambda: np.arange(4.0).view(Sub),
}

# How the producer keeps its own view: the view itself, views of it (sharing its holder), several.
KEEPERS = {
    "view": lambda x: ap.view(x),
    "slice of a view": lambda x: ap.view(x)[1:],
    "reversed view of a view": lambda x: ap.view(x)[::-1][1:],
    "list of views": lambda x: [ap.view(x), ap.view(x)[::2]],
    "dict of views": lambda x: {"a": ap.view(x)},
}


def exported(x) -> int:
    return x.exported if isinstance(x, Producer) else 0


def deleted(x) -> int:
    return x.deleted if isinstance(x, Producer) else 0


@pytest.mark.parametrize("keeper", list(KEEPERS))
@pytest.mark.parametrize("producer", list(PRODUCERS))
def test_a_producer_that_keeps_its_own_view_is_collected_and_released_once(producer, keeper):
    gc.collect()
    exports = _core._dlpack_live_exports()
    x = PRODUCERS[producer]()
    x.me = KEEPERS[keeper](x)
    deletions = x.deletions if isinstance(x, Producer) else None
    taken = exported(x)
    assert deleted(x) == 0
    alive = weakref.ref(x)
    del x
    assert alive() is not None  # only the collector can free a cycle
    gc.collect()
    assert alive() is None
    if deletions is not None:
        assert taken > 0 and deletions[0] == taken  # each tensor's deleter ran exactly once
    assert _core._dlpack_live_exports() == exports


@pytest.mark.parametrize("producer", [
    pytest.param(p, marks=needs_gpu) if p == "cai" else p for p in PRODUCERS])
def test_asarray_kept_on_its_producer_is_collected(producer):
    # (asarray of CAI memory is device memory: a GPU is needed to hold it.)
    x = PRODUCERS[producer]()
    x.me = ap.asarray(x)
    deletions = x.deletions if isinstance(x, Producer) else None
    taken = exported(x)
    alive = weakref.ref(x)
    del x
    gc.collect()
    assert alive() is None
    if deletions is not None:
        assert deletions[0] == taken


def test_a_bytearray_viewed_through_a_cycle_can_be_resized_once_the_cycle_is_gone():
    # The buffer export a cycle held is released: the exporter counts no export left.
    b = Bytes(8)
    holder = Bytes(0)
    holder.me = ap.view(b)
    holder.self = holder
    with pytest.raises(BufferError):
        b.extend(b"x")  # exported: resizing is refused while the view lives
    del holder
    gc.collect()
    b.extend(b"x")
    assert len(b) == 9


def test_cycles_leak_nothing_over_many_rounds():
    storage = np.arange(6.0)
    gc.collect()
    base = sys.getrefcount(storage)
    exports = _core._dlpack_live_exports()
    total_taken = total_deleted = 0
    for i in range(300):
        p = Producer(values=tuple(range(6)), versioned=bool(i % 2))
        p.me = [ap.view(p), ap.view(storage)[::2]]
        p.self = p
        c = CAIProducer()
        c.me = ap.view(c)[1:]
        c.p = p
        counts = p.deletions
        total_taken += p.exported
        del p, c
        gc.collect()
        total_deleted += counts[0]
    assert total_taken == total_deleted == 300
    assert sys.getrefcount(storage) == base
    assert _core._dlpack_live_exports() == exports


def test_arrays_and_their_holders_are_tracked_by_the_collector():
    x = np.arange(3.0)
    v = ap.view(x)
    assert gc.is_tracked(v)
    (holder,) = [r for r in gc.get_referents(v) if not isinstance(r, type)]
    assert any(r is x for r in gc.get_referents(holder))  # it reports the producer it keeps
    with pytest.raises(TypeError, match="cannot create"):
        type(holder)()
    owning = ap.zeros(3)
    assert gc.is_tracked(owning)
    assert v.base is x  # Array.base still shows the producer, not the holder


def test_a_cycle_through_an_owning_array_and_its_views_is_collected():
    # A view's base is the owning Array: a list holding both and itself is freed whole.
    a = ap.zeros((8,))
    box = [a, a[::2], a[1:]]
    box.append(box)
    alive = weakref.ref(a)
    del a, box
    gc.collect()
    assert alive() is None


class ForeignStream:
    """A stream object of another library (the cuda.core protocol), on the legacy default stream."""

    def __cuda_stream__(self):
        return (0, 0)


def test_a_foreign_stream_that_keeps_its_adopted_stream_is_collected():
    x = ForeignStream()
    x.adopted = ap.cuda.Stream.adopt(x)
    assert gc.is_tracked(x.adopted)
    alive = weakref.ref(x)
    del x
    gc.collect()
    assert alive() is None
