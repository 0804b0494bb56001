"""Creation and fills of GPU memory only enqueue: they return at once while the stream is busy.

fill and scalar assignment (a[...] = x, a[::2] = x) of device and managed memory, and zeros / ones /
full (and the *_like forms) in device memory, are a memset or a fill kernel queued on the array's
stream, the element in the call's arguments: the host never waits for the stream. Each is timed 20 times while 100 ms
of work is queued (PyTorch's spin kernel through torch.cuda.ExternalStream); the stream must still
be busy afterwards, and the data right once it drains. Host writes (pinned memory) still wait.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import arrayport as ap
from arrayport import cuda
from conftest import HAS_GPU, needs_gpu, needs_torch
from gpu_work import TorchWork

QUEUED_MS = 100
REPEATS = 20
# "At once": an enqueue costs microseconds; waiting for the stream would cost the queued 100 ms.
WITHIN_S = 0.010
N = 1 << 20

# dtype -> a value whose bytes differ (a fill kernel), and one whose bytes are all equal (a memset)
VALUES = {
    "bool": (True, False),
    "int8": (-3, 7),
    "uint16": (513, 257),
    "int32": (123456, -1),
    "int64": (-(2**40) + 3, 0),
    "float16": (1.5, 0.0),
    "float32": (-2.25, 0.0),
    "float64": (1.0 / 3.0, 0.0),
    "complex64": (1.5 - 2j, 0j),
    "complex128": (-0.5 + 3j, 0j),
}


@pytest.fixture
def spin():
    """spin(stream, ms) queues `ms` of GPU work on an arrayport stream (PyTorch's spin kernel)."""
    work = TorchWork()

    def spin(stream: cuda.Stream, ms: float) -> None:
        with work.on(stream):
            work.spin(ms)

    warm = cuda.Stream()
    spin(warm, 0.1)
    warm.synchronize()
    return spin


def timed_while_busy(spin, stream, op):
    """The longest of REPEATS calls of op() while QUEUED_MS of work is queued on `stream`."""
    op()  # warm-up: first launches load kernels, first allocations grow the pool
    stream.synchronize()
    spin(stream, QUEUED_MS)
    longest = 0.0
    for _ in range(REPEATS):
        start = time.perf_counter()
        op()
        longest = max(longest, time.perf_counter() - start)
    assert not stream.query(), "the spin ended before the calls did: the timing proves nothing"
    stream.synchronize()
    return longest


def expect(a: ap.Array, value, dtype=None) -> None:
    got = a.get()
    np.testing.assert_array_equal(got, np.full(a.shape, value, dtype or got.dtype))


FILLS = ["fill", "setitem", "setitem-strided"]
CREATION = ["zeros", "ones", "full", "zeros_like", "ones_like", "full_like"]


# Creation in device memory only: managed memory comes from cudaMallocManaged, which is not
# stream-ordered (the fills of managed memory are timed).
@needs_gpu
@needs_torch
@pytest.mark.parametrize("memory, op", [(m, op) for m in ("device", "managed") for op in FILLS] +
                         [("device", op) for op in CREATION])
def test_gpu_fills_and_creation_return_while_the_stream_is_busy(spin, memory, op):
    s = cuda.Stream()
    a = ap.empty((N,), "float32", memory=memory, stream=s)
    made = []
    calls = {
        "fill": lambda: a.fill(2.5),
        "setitem": lambda: a.__setitem__(..., 2.5),
        "setitem-strided": lambda: a.__setitem__(slice(None, None, 2), 2.5),
        "zeros": lambda: made.append(ap.zeros((N,), "float32", memory=memory, stream=s)),
        "ones": lambda: made.append(ap.ones((N,), "float32", memory=memory, stream=s)),
        "full": lambda: made.append(ap.full((N,), 2.5, "float32", memory=memory, stream=s)),
        "zeros_like": lambda: made.append(ap.zeros_like(a, stream=s)),
        "ones_like": lambda: made.append(ap.ones_like(a, stream=s)),
        "full_like": lambda: made.append(ap.full_like(a, 2.5, stream=s)),
    }
    with s:  # assignment runs on the current stream
        longest = timed_while_busy(spin, s, calls[op])
    assert longest < WITHIN_S, f"{op} on {memory} memory blocked for {longest * 1e3:.1f} ms"
    if op.startswith("setitem") or op == "fill":
        got = a.get()
        if op == "setitem-strided":
            assert (got[::2] == 2.5).all()
        else:
            assert (got == 2.5).all()
    for m in made:
        assert m.memory == memory
        expect(m, {"zeros": 0.0, "ones": 1.0}.get(op.removesuffix("_like"), 2.5))


@needs_gpu
@needs_torch
def test_a_pinned_fill_waits_for_the_stream_before_the_host_writes(spin):
    # The CPU fills pinned memory: GPU work queued on its stream may still be using it.
    s = cuda.Stream()
    a = ap.empty((N,), "float32", memory="pinned", stream=s)
    if a.memory != "pinned":
        pytest.skip("no pinned memory here")
    spin(s, QUEUED_MS)
    start = time.perf_counter()
    a.fill(4.0)
    waited = time.perf_counter() - start
    assert s.query(), "returned before the stream's work was done"
    assert waited > QUEUED_MS / 1e3 / 4
    expect(a, 4.0)


LAYOUTS = ["contiguous", "strided", "reversed", "2-d-columns", "0-d", "misaligned", "empty"]


def target(base_memory: str, dtype: str, layout: str, stream):
    """(array to fill, the part of it that the fill covers as a NumPy index)."""
    n = 1001
    if layout == "misaligned":  # elements at half their size's alignment: several words each
        item = np.dtype(dtype).itemsize
        raw = ap.empty((n * item + item,), "uint8", memory=base_memory, stream=stream)
        offset = item // 2  # 0 for one-byte elements, which are never misaligned
        return raw[offset: offset + n * item].view(dtype), slice(None)
    if layout == "2-d-columns":
        a = ap.empty((31, 33), dtype, memory=base_memory, stream=stream)
        return a, (slice(None), slice(1, None, 3))
    a = ap.empty((n,), dtype, memory=base_memory, stream=stream)
    return a, {"contiguous": slice(None), "strided": slice(None, None, 3),
               "reversed": slice(None, None, -1), "0-d": 5, "empty": slice(4, 4)}[layout]


def check_fills(memory: str, dtype: str, layout: str, how: str, spin=None) -> None:
    """Both values of `dtype` written through `how` into `layout`, each after a fill of the other
    value queued (behind `spin`'s work, with a GPU) on the array's stream, from another stream:
    every covered element gets the value, the others keep theirs."""
    s, other = (cuda.Stream(), cuda.Stream()) if HAS_GPU else (cuda.Stream.legacy(), cuda.Stream.per_thread())
    a, where = target(memory, dtype, layout, s)
    part = a[where]
    first, second = VALUES[dtype]
    for value, previous in ((first, second), (second, first)):
        a.fill(0)
        before = a.get()
        if spin:
            spin(s, 20)
        part.fill(previous)  # queued behind the spin
        with other:  # another stream: ordered after s's work with events, not by the host
            if how == "fill":
                part.fill(value)  # fill runs on the array's own stream
            else:
                part[...] = value
        expected = before.copy()
        expected[where] = value
        np.testing.assert_array_equal(a.get(), expected)


@needs_gpu
@needs_torch
@pytest.mark.parametrize("memory", ["device", "managed"])
@pytest.mark.parametrize("dtype", list(VALUES))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("how", ["fill", "setitem"])
def test_gpu_fills_write_every_element_after_the_queued_work(spin, memory, dtype, layout, how):
    check_fills(memory, dtype, layout, how, spin)


@pytest.mark.parametrize("memory", ["host", "pinned"])
@pytest.mark.parametrize("dtype", list(VALUES))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("how", ["fill", "setitem"])
def test_host_fills_write_every_element(memory, dtype, layout, how):
    # The same sweep through the CPU's fills (runs everywhere; pinned is host memory without a GPU).
    check_fills(memory, dtype, layout, how)
