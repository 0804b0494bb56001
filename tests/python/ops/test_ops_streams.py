"""arrayport.ops orders itself against the streams its Array operands live on (GPU only).

An Array's data is ready on its own stream. Every op runs on the current stream; it must wait
(an event, never a host wait) for each input's and out='s stream, and each of those streams must
wait for the op afterwards, so that a later writer of an input or reader of out= on its own stream
comes after it. A CPU op over pinned or managed memory must wait for those streams on the host.

Each test makes a stream `s` busy for 20 ms (a PyTorch or CuPy spin kernel on it), then enqueues
the write of the test data on `s`: with the same foreign library (a kernel through a DLPack view
of the Array) or with arrayport's own copy (`x[...] = src` inside `with s:`, which only enqueues).
The op then runs on another stream `t`, and every result is checked, 20 times with new values: a
read that does not wait for `s` sees the previous repetition's values.
"""

from __future__ import annotations

import numpy as np
import pytest

import arrayport as ap
from arrayport import cuda, ops
from conftest import STREAM_REPS, needs_gpu
from gpu_work import TorchWork

pytestmark = needs_gpu

N = 1 << 18  # float32 sums of N equal small integers stay exact
REPS = STREAM_REPS
SPIN_MS = 20


def foreign_view(work, a):
    """The foreign library's zero-copy view of the arrayport Array `a` (DLPack)."""
    lib = work.torch if isinstance(work, TorchWork) else work.cupy
    return lib.from_dlpack(a)


class Writer:
    """Writes the value v into the Array `x` on stream `s`, after 20 ms of other work there."""

    def __init__(self, how, work, x, values):
        self.how, self.work, self.x = how, work, x
        if how == "foreign":
            self.view = foreign_view(work, x)
            # The library loads its fill kernel at the first fill (CuPy: 150-220 ms in a fresh
            # process on an H100), which would outlast the spin; a fill of 0 is a memset.
            work.fill(self.view, 0.5)
        else:  # arrayport's copy from a ready source holding each value
            self.sources = {v: ap.full(x.shape, v, "float32", memory="device") for v in values}
        cuda.synchronize()

    def write(self, s, v, spin=True):
        with self.work.on(s):
            if spin:
                self.work.spin(SPIN_MS)
            if self.how == "foreign":
                self.work.fill(self.view, v)
        if self.how == "arrayport":
            with s:
                self.x[...] = self.sources[v]


def writers(memory):
    # PyTorch and CuPy view device memory through DLPack; pinned and managed Arrays are written
    # by arrayport's copy.
    return ["foreign", "arrayport"] if memory == "device" else ["arrayport"]


CASES = [(m, w) for m in ("device", "managed", "pinned") for w in writers(m)]

ONES = None


def ones():
    global ONES
    if ONES is None:
        ONES = ap.full(N, 1.0, "float32", memory="device")
        cuda.synchronize()
    return ONES


# op(x) -> result, and the value every element of the result has when x holds v everywhere.
INPUT_OPS = {
    "add": (lambda x: ops.add(x, 1.0), lambda v: v + 1.0),
    "multiply": (lambda x: ops.multiply(x, x), lambda v: v * v),
    "astype": (lambda x: ops.astype(x, "float64"), lambda v: v),
    "where": (lambda x: ops.where(x, x, -1.0), lambda v: v),
    "axpy": (lambda x: ops.axpy(2.0, x, ones()), lambda v: 2.0 * v + 1.0),
    "sum": (lambda x: ops.sum(x), lambda v: v * N),
    "min": (lambda x: ops.min(x), lambda v: v),
    "mean of rows": (lambda x: ops.mean(x.reshape(512, N // 512), axis=1), lambda v: v),
    "max of columns": (lambda x: ops.max(x.reshape(512, N // 512), axis=0), lambda v: v),
    "dot": (lambda x: ops.dot(x, ones()), lambda v: v * N),
}


def warm_up(call):
    """Runs the op once outside the timed part, so that first-launch costs (a kernel's module
    loaded at its first launch) cannot outlast the writer's 20 ms spin."""
    call()
    cuda.synchronize()


def check(r, value):
    got = r.get() if isinstance(r, ap.Array) else np.asarray(r)
    assert np.all(got == value), (value, np.unique(got)[:5])


@pytest.mark.parametrize("memory,writer", CASES)
@pytest.mark.parametrize("name", list(INPUT_OPS))
def test_an_op_waits_for_its_input_s_stream(device0, work, memory, writer, name):
    op, expected = INPUT_OPS[name]
    s, t = cuda.Stream(), cuda.Stream()
    x = ap.zeros(N, "float32", memory=memory, stream=s)
    values = [float(i + 1) for i in range(REPS)]
    w = Writer(writer, work, x, values)
    warm_up(lambda: op(ap.zeros(N, "float32", memory=memory)))
    for v in values:
        w.write(s, v)
        with t:
            r = op(x)
        assert not s.query(), "the op waited for the writer on the host"
        check(r, expected(v))
    cuda.synchronize()


@pytest.mark.parametrize("memory,writer", CASES)
@pytest.mark.parametrize("name", ["add", "sum", "max of columns", "dot"])
def test_an_input_s_stream_waits_for_the_op_before_writing_it_again(device0, work, memory, writer,
                                                                    name):
    # The op is held back on a busy t; the next write of x on s must come after it.
    op, expected = INPUT_OPS[name]
    s, t = cuda.Stream(), cuda.Stream()
    x = ap.zeros(N, "float32", memory=memory, stream=s)
    values = [float(i + 1) for i in range(REPS + 1)]
    w = Writer(writer, work, x, values)
    w.write(s, values[0], spin=False)
    for v, following in zip(values, values[1:]):
        with work.on(t):
            work.spin(SPIN_MS)
        with t:
            r = op(x)
        w.write(s, following, spin=False)
        check(r, expected(v))
    cuda.synchronize()


# op(y, out=o) with y ready everywhere; the value expected in o.
OUT_OPS = {
    "add": (lambda y, o: ops.add(y, 1.0, out=o), (N,), lambda: 3.0),
    "copy": (lambda y, o: ops.copy(y, out=o), (N,), lambda: 2.0),
    "sum of rows": (lambda y, o: ops.sum(y.reshape(512, N // 512), axis=1, out=o), (512,),
                    lambda: 2.0 * (N // 512)),
    "max": (lambda y, o: ops.max(y, out=o), (), lambda: 2.0),
    "dot": (lambda y, o: ops.dot(y, y, out=o), (), lambda: 4.0 * N),
}


@pytest.mark.parametrize("memory,writer", CASES)
@pytest.mark.parametrize("name", list(OUT_OPS))
def test_an_op_writes_out_after_and_before_out_s_stream(device0, work, memory, writer, name):
    # out= is being written on s (a stale value, late); the op on t must write after that write,
    # and out's own stream (read by .get()) must see the op's result.
    op, shape, expected = OUT_OPS[name]
    s, t = cuda.Stream(), cuda.Stream()
    y = ap.full(N, 2.0, "float32", memory="device")
    o = ap.zeros(shape, "float32", memory=memory, stream=s)
    stale = [float(-i - 1) for i in range(REPS)]
    w = Writer(writer, work, o, stale)
    warm_up(lambda: op(y, ap.zeros(shape, "float32", memory=memory)))
    for v in stale:
        w.write(s, v)
        with t:
            assert op(y, o) is o
        assert not s.query(), "the op waited for out's stream on the host"
        check(o, expected())
    cuda.synchronize()


def test_a_chain_of_ops_on_three_streams(device0, work):
    # x written late on s, an op on t reads it, an op on u reads t's result, a copy reads u's.
    s, t, u = cuda.Stream(), cuda.Stream(), cuda.Stream()
    x = ap.zeros(N, "float32", memory="device", stream=s)
    values = [float(i + 1) for i in range(REPS)]
    w = Writer("foreign", work, x, values)
    for v in values:
        w.write(s, v)
        with t:
            a = ops.multiply(x, 2.0)
        with u:
            b = ops.sum(a)
        check(ap.copy(b), 2.0 * v * N)
    cuda.synchronize()


@pytest.mark.parametrize("memory", ["pinned", "managed"])
@pytest.mark.parametrize("name", ["add", "sum", "out"])
def test_a_cpu_op_over_gpu_reachable_memory_waits_for_its_stream(device0, work, memory, name):
    # A NumPy operand sends the op to the CPU; it reads x (written late on s) on the host.
    s, t = cuda.Stream(), cuda.Stream()
    x = ap.zeros(N, "float32", memory=memory, stream=s)
    values = [float(i + 1) for i in range(REPS)]
    w = Writer("arrayport", work, x, values)
    host = np.ones(N, np.float32)
    for v in values:
        w.write(s, v)
        with t:
            if name == "add":
                check(ops.add(x, host), v + 1.0)
            elif name == "sum":
                check(ops.sum(x, out=np.zeros((), np.float32)), v * N)
            else:  # x is out=, written on the host after s's late write
                ops.add(host, 1.0, out=x)
                check(x, 2.0)
    cuda.synchronize()
