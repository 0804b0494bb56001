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


@pytest.mark.parametrize("memory", ALL)
@pytest.mark.parametrize("slot", ["owning", "non-owning"])
def test_an_exchange_api_consumer_sees_the_streams_writes(cupy, memory, slot):
    # A C consumer of the DLPack exchange API works on current_work_stream() (here `other`, the
    # current stream): taking the Array orders the Array's stream before it.
    import ctypes

    from dlpack_ctypes import DLTensor
    from exchange_ctypes import P_MT, current_work_stream, dltensor_from_py, from_py

    class Unordered:
        """The consumer's own reading of the pointer: an interface that asks for no ordering."""

        def __init__(self, data):
            self.__cuda_array_interface__ = {"shape": (N,), "typestr": "<f4", "data": (data, True),
                                             "version": 3, "stream": None}

    def read(a):
        if slot == "owning":
            out = P_MT()
            assert from_py(a, ctypes.byref(out)) == 0
            t = out.contents.dl_tensor
        else:
            t = DLTensor()
            assert dltensor_from_py(a, ctypes.byref(t)) == 0
        work = ctypes.c_void_p()
        assert current_work_stream(t.device.device_type, t.device.device_id, ctypes.byref(work)) == 0
        assert (work.value or 0) == (cuda.current_stream().handle or 0)
        host = ap.empty(N, "float32", memory="pinned")
        host[...] = ap.view(Unordered(t.data))  # copied on the work stream, nothing else ordered
        cuda.current_stream().synchronize()
        if slot == "owning":
            out.contents.deleter(out)
        return host.get()
    run(cupy, memory, read)
