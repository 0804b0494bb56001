"""Cycles through arrayport objects: a producer that keeps a view of itself (x.me = ap.view(x)) is a
cycle through the Array and its holder, which the cycle collector must see, free, and release
exactly once (DLPack deleter, buffer release), leaving no reference behind."""

from __future__ import annotations

import gc
import sys
import weakref

import numpy as np
import pytest

import arrayport as ap
from arrayport import _core
from conftest import HAS_GPU, needs_gpu
from dlpack_ctypes import Producer


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
