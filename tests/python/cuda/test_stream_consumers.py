"""Every consumer of an Array honours the Array's stream: data written there behind queued work is
read complete, whichever stream or host thread reads it. 20 repetitions of each (GPU only)."""

from __future__ import annotations

import numpy as np
import pytest

import arrayport as ap
from arrayport import cuda

from conftest import STREAM_REPS, needs_cupy, needs_gpu, needs_torch
from gpu_work import CupyWork, cupy_stream

REPS = STREAM_REPS
N = 1 << 20
SPIN_MS = 20

pytestmark = [needs_gpu, needs_cupy]  # CuPy writes the data behind queued work


@pytest.fixture(scope="module")
def cupy():
    """CuPy, with gpu_work's spin kernel compiled and loaded outside the measured part."""
    work = CupyWork()
    cp = work.cupy
    cp.zeros(4, cp.float32).fill(1.0)
    cp.cuda.Device().synchronize()
    cp.spin = work.spin  # spin(ms) on CuPy's current stream
    return cp


def written_behind_work(cupy, memory):
    """An Array on its own stream s whose ones are written on s behind ~SPIN_MS of queued work."""
    s = cuda.Stream()
    a = ap.zeros(N, "float32", memory=memory, stream=s)
    s.synchronize()
    c = cupy.asarray(a)  # the same memory, written through CuPy on s
    with cupy_stream(cupy, s):
        cupy.spin(SPIN_MS)
        c.fill(1.0)
    return a, s


def stale(values) -> bool:
    v = np.asarray(values)
    return not (v.shape == (N,) and bool(np.all(v == 1.0)))


def run(cupy, memory, read):
    bad = 0
    for _ in range(REPS):
        a, s = written_behind_work(cupy, memory)
        other = cuda.Stream()
        with other:
            got = read(a)
        bad += stale(got)
        cuda.synchronize()
    assert bad == 0, f"{bad}/{REPS} reads saw data before the Array's stream wrote it"


HOST_READABLE = ["managed", "pinned"]
ALL = ["device", "managed", "pinned"]


@pytest.mark.parametrize("memory", HOST_READABLE)
def test_numpy_from_dlpack_sees_the_streams_writes(cupy, memory):
    run(cupy, memory, lambda a: np.from_dlpack(a).copy())


@pytest.mark.parametrize("memory", HOST_READABLE)
def test_the_buffer_protocol_sees_the_streams_writes(cupy, memory):
    run(cupy, memory, lambda a: np.array(memoryview(a)))


@pytest.mark.parametrize("memory", HOST_READABLE)
def test_numpy_asarray_sees_the_streams_writes(cupy, memory):
    run(cupy, memory, lambda a: np.asarray(a).copy())


@pytest.mark.parametrize("memory", ALL)
def test_get_sees_the_streams_writes(cupy, memory):
    run(cupy, memory, lambda a: a.get())


@pytest.mark.parametrize("memory", ALL)
@pytest.mark.parametrize("to", ["device", "managed", "pinned", "host"])
def test_copies_see_the_streams_writes(cupy, memory, to):
    run(cupy, memory, lambda a: a.copy(memory=to).get())


@pytest.mark.parametrize("memory", ALL)
def test_module_copy_sees_the_streams_writes(cupy, memory):
    run(cupy, memory, lambda a: ap.copy(a).get())


@pytest.mark.parametrize("memory", ALL)
def test_to_sees_the_streams_writes(cupy, memory):
    run(cupy, memory, lambda a: a.to(memory="host" if memory == "device" else "device").get())


@pytest.mark.parametrize("memory", ALL)
def test_assignment_sees_the_streams_writes(cupy, memory):
    def read(a):
        b = ap.zeros(N, "float32", memory="device")
        b[...] = a
        return b.get()
    run(cupy, memory, read)


@pytest.mark.parametrize("memory", ALL)
def test_copy_to_sees_the_streams_writes(cupy, memory):
    def read(a):
        b = ap.zeros(N, "float32", memory="device")
        a.copy_to(b)
        return b.get()
    run(cupy, memory, read)


@pytest.mark.parametrize("memory", ALL)
def test_cupy_through_the_interface_sees_the_streams_writes(cupy, memory):
    def read(a):
        with cupy.cuda.Stream(non_blocking=True):
            return cupy.asnumpy(cupy.asarray(a).copy())
    run(cupy, memory, read)


@needs_torch
@pytest.mark.parametrize("memory", ["device"])
def test_torch_through_dlpack_sees_the_streams_writes(cupy, memory):
    import torch

    def read(a):
        with torch.cuda.stream(torch.cuda.Stream()):
            return torch.from_dlpack(a).clone().cpu().numpy()
    run(cupy, memory, read)


@pytest.mark.parametrize("memory", ALL)
def test_a_kept_view_sees_the_streams_writes(cupy, memory):
    # arrayport.view() of an Array orders the Array's stream before the current one.
    run(cupy, memory, lambda a: ap.view(a).get())
