"""Several GPUs in one process: where memory lands, device guards, peer and staged copies between
devices, and clear errors when devices are mixed. Needs two CUDA devices; skips with the reason
otherwise. Written for any number of devices: the pairs are (0, 1) and, where there are more,
(0, last)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import arrayport as ap
from arrayport import cuda, ops
from conftest import needs_cupy, needs_torch

N_GPUS = cuda.device_count()
pytestmark = pytest.mark.skipif(
    N_GPUS < 2, reason=f"needs 2 CUDA devices; this machine has {N_GPUS}")

PAIRS = [(0, 1), (1, 0)] + ([(0, N_GPUS - 1)] if N_GPUS > 2 else [])


def cuda_device_of(ptr: int) -> int:
    """The device CUDA itself reports for a pointer (not what arrayport recorded)."""
    import cupy  # the tests that call this are marked needs_cupy

    return int(cupy.cuda.runtime.pointerGetAttributes(ptr).device)


@pytest.fixture(autouse=True)
def on_device_0():
    """Every test starts and must end with device 0 current: nothing may change it behind a user."""
    cuda.set_device(0)
    yield
    assert cuda.current_device() == 0, "the test left another device current"


@pytest.mark.parametrize("memory", [pytest.param("device", marks=needs_cupy), "managed"])
@pytest.mark.parametrize("dev", sorted({1, max(1, N_GPUS - 1)}))
def test_arrays_land_on_the_device_asked_for(memory, dev):
    a = ap.asarray(np.arange(1000, dtype=np.float32), memory=memory, device=dev)
    assert a.device == ("cuda" if memory == "device" else "cuda_managed", dev)
    z = ap.zeros((1000,), "float32", memory=memory, device=dev)
    assert z.device[1] == dev and not z.get().any()
    if memory == "device":
        assert cuda_device_of(a.ptr) == dev
    np.testing.assert_array_equal(a.get(), np.arange(1000, dtype=np.float32))
    assert cuda.current_device() == 0


@needs_cupy
def test_memory_follows_the_current_device_without_resetting_to_0():
    cuda.set_device(1)
    try:
        a = ap.zeros((256,), "float32", memory="device")
        assert a.device[1] == 1 and cuda_device_of(a.ptr) == 1
        b = ops.add(a, 2.0)
        assert b.device[1] == 1 and cuda_device_of(b.ptr) == 1
        np.testing.assert_array_equal(b.get(), np.full(256, 2.0, np.float32))
        assert ops.sum(b).get() == 512.0
        assert cuda.current_device() == 1, "an arrayport call reset the current device"
    finally:
        cuda.set_device(0)


@needs_cupy
def test_a_stream_of_device_0_still_gives_device_1_memory():
    # cudaMallocAsync takes the pool of the stream's device: with a stream of device 0 current,
    # memory asked of device 1 must still be device 1's.
    s0 = cuda.Stream(0)
    with s0:
        a = ap.full((4096,), 3.0, "float32", memory="device", device=1)
        assert cuda_device_of(a.ptr) == 1 and a.device[1] == 1
        np.testing.assert_array_equal(a.get(), np.full(4096, 3.0, np.float32))
    with pytest.raises(ValueError, match="stream belongs to device 0, but the memory is on device 1"):
        ap.empty((4,), "float32", memory="device", device=1, stream=s0)


@needs_cupy
@pytest.mark.parametrize("src_dev,dst_dev", PAIRS)
@pytest.mark.parametrize("layout", ["contiguous", "strided", "reversed-2d"])
def test_to_device_copies_between_gpus(src_dev, dst_dev, layout):
    host = np.random.default_rng(1).standard_normal((300, 200)).astype(np.float32)
    a = ap.asarray(host, memory="device", device=src_dev)
    view, expected = {
        "contiguous": (a, host),
        "strided": (a[::3, 1::2], host[::3, 1::2]),
        "reversed-2d": (a[::-1, ::-1].T, host[::-1, ::-1].T),
    }[layout]
    b = view.to(device=dst_dev)
    assert b.device[1] == dst_dev and cuda_device_of(b.ptr) == dst_dev
    assert b.memory == "device"
    np.testing.assert_array_equal(b.get(), expected)
    c = view.copy(device=dst_dev)
    np.testing.assert_array_equal(c.get(), expected)


@pytest.mark.parametrize("src_dev,dst_dev", PAIRS[:2])
def test_copy_to_and_assignment_between_gpus_on_a_given_stream(src_dev, dst_dev):
    host = np.arange(1 << 20, dtype=np.float64)
    a = ap.asarray(host, memory="device", device=src_dev)
    b = ap.zeros(host.shape, "float64", memory="device", device=dst_dev)
    s = cuda.Stream(dst_dev)
    a.copy_to(b, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(b.get(), host)
    b[::2] = a[1::2]                      # an assignment is a move the user asked for
    np.testing.assert_array_equal(b.get()[::2], host[1::2])


def test_staged_copies_without_peer_access_in_a_subprocess():
    # ARRAYPORT_P2P_DISABLE makes every copy between GPUs go through pinned host memory.
    code = textwrap.dedent("""
        import numpy as np, arrayport as ap
        h = np.random.default_rng(2).standard_normal((257, 129)).astype(np.float32)
        a = ap.asarray(h, memory="device", device=0)
        for view, ref in ((a, h), (a[::2, ::-3], h[::2, ::-3])):
            for dst in (1, 0):
                b = view.to(device=dst)
                assert b.device[1] == dst
                np.testing.assert_array_equal(b.get(), ref)
            back = view.to(device=1).to(device=0)
            np.testing.assert_array_equal(back.get(), ref)
        print("staged ok")
    """)
    env = dict(os.environ, ARRAYPORT_P2P_DISABLE="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-4000:]
    assert "staged ok" in r.stdout


@needs_cupy
def test_ops_run_on_their_inputs_device_and_restore_the_current_one():
    x = ap.asarray(np.arange(10_000, dtype=np.float32), memory="device", device=1)
    y = ops.multiply(x, 2.0)
    assert y.device[1] == 1 and cuda_device_of(y.ptr) == 1
    np.testing.assert_array_equal(y.get(), np.arange(10_000, dtype=np.float32) * 2)
    assert ops.max(y).get() == 19998.0
    assert cuda.current_device() == 0


def test_mixing_devices_in_an_op_is_a_clear_error():
    a = ap.ones((64,), "float32", memory="device", device=0)
    b = ap.ones((64,), "float32", memory="device", device=1)
    with pytest.raises(ValueError, match="different devices: 'x1' is on device 0, 'x2' on device 1"):
        ops.add(a, b)
    with pytest.raises(ValueError, match="different devices"):
        ops.add(a, a, out=ap.empty((64,), "float32", memory="device", device=1))
    np.testing.assert_array_equal(ops.add(a, b.to(device=0)).get(), np.full(64, 2.0, np.float32))


def test_an_op_on_device_1_data_with_a_device_0_stream_current_is_a_clear_error():
    b = ap.ones((64,), "float32", memory="device", device=1)
    with cuda.Stream(0):
        with pytest.raises(ValueError, match="current stream belongs to device 0"):
            ops.add(b, 1.0)
        with cuda.Device(1):                 # entering device 1 makes its default stream current
            np.testing.assert_array_equal(ops.add(b, 1.0).get(), np.full(64, 2.0, np.float32))
        assert cuda.current_device() == 0


def test_device_guards_restore_the_device_after_errors():
    b = ap.ones((8,), "float32", memory="device", device=1)
    with pytest.raises(ValueError):
        b.reshape((3, 3))
    with pytest.raises(TypeError):
        ops.add(b, "x")
    assert cuda.current_device() == 0
    with cuda.Device(1):
        with pytest.raises(ValueError):
            ops.add(b, ap.ones((8,), "float32", memory="device", device=0))
        assert cuda.current_device() == 1


@pytest.mark.parametrize("lib", [pytest.param("cupy", marks=needs_cupy),
                                 pytest.param("torch", marks=needs_torch)])
def test_other_libraries_see_device_1_arrays_on_device_1(lib):
    m = importlib.import_module(lib)
    a = ap.asarray(np.arange(32, dtype=np.float32), memory="device", device=1)
    if lib == "cupy":
        c = m.from_dlpack(a)                 # DLPack names the device; CAI does not
        assert c.device.id == 1 and c.data.ptr == a.ptr
        with m.cuda.Device(1):
            back = ap.view(c * 2)
    else:
        t = m.from_dlpack(a)
        assert t.device.index == 1 and t.data_ptr() == a.ptr
        back = ap.view(t * 2)
    assert back.device[1] == 1
    np.testing.assert_array_equal(ap.asarray(back).get(), np.arange(32, dtype=np.float32) * 2)


def test_peer_access_report():
    for i in range(N_GPUS):
        for j in range(N_GPUS):
            if i != j:
                assert isinstance(cuda.Device(i).can_access_peer(j), bool)
