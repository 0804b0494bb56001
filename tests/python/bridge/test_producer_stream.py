"""The caller's stream: a bound kernel whose parameter is arrayport::on_producer_stream<View> runs
on the stream its argument's framework works on (PyTorch's and CuPy's current stream), with no
event between that work and the kernel; other producers are on arrayport's current stream, as a
plain view's are. The examples' scale_on_producer_stream (nanobind and pybind11) is the kernel."""

from __future__ import annotations

import array
import importlib
import sys

import numpy as np
import pytest

import arrayport as ap
from arrayport import ops
from conftest import needs_cupy, needs_gpu, needs_torch

N = 1 << 20
REPEATS = 20


@pytest.fixture(scope="module", params=["nanobind", "pybind11"])
def module(request, example_build):
    build = example_build(request.param)
    sys.path.insert(0, str(build))
    try:
        return importlib.import_module(f"scale_{request.param}")
    finally:
        sys.path.remove(str(build))


@pytest.mark.parametrize("make", [
    lambda: np.arange(6, dtype=np.float32),
    lambda: np.arange(12, dtype=np.float32)[::-2],
    lambda: ap.asarray(np.arange(6, dtype=np.float32)),
    lambda: array.array("f", range(6)),
], ids=["numpy", "numpy-strided", "array", "array.array"])
def test_host_producers_are_scaled_in_place(module, make):
    x = make()
    expected = np.asarray(x, dtype=np.float32) * -2.5
    module.scale_on_producer_stream(x, -2.5)
    np.testing.assert_array_equal(np.asarray(x), expected)


def test_it_checks_its_argument_as_a_plain_view_does(module):
    with pytest.raises(TypeError, match="float32"):
        module.scale_on_producer_stream(np.zeros(3, np.float64), 1.0)
    with pytest.raises(BufferError, match="writable"):
        module.scale_on_producer_stream(b"\0" * 8, 1.0)
    with pytest.raises(TypeError):
        module.scale_on_producer_stream([1.0, 2.0], 1.0)
    x = np.zeros(3, np.float32)
    refs = sys.getrefcount(x)
    for _ in range(100):
        module.scale_on_producer_stream(x, 1.0)
    assert sys.getrefcount(x) == refs


def torch_case():
    import torch

    x = torch.ones(N, device="cuda")
    s = torch.cuda.Stream()
    return (x, s.cuda_stream, lambda: torch.cuda.stream(s), s.query,
            lambda: torch.cuda._sleep(100_000_000), lambda v: x.fill_(v), lambda: x.cpu().numpy())


def cupy_case():
    import cupy
    import torch

    x = cupy.ones(N, dtype=cupy.float32)
    s = cupy.cuda.Stream(non_blocking=True)

    def sleep():  # a busy stream: PyTorch's sleep kernel, enqueued on CuPy's current stream
        with torch.cuda.stream(torch.cuda.ExternalStream(s.ptr, device="cuda:0")):
            torch.cuda._sleep(100_000_000)

    return x, s.ptr, lambda: s, lambda: s.done, sleep, x.fill, lambda: cupy.asnumpy(x)


@needs_gpu
@needs_torch
@pytest.mark.parametrize("case", [pytest.param(torch_case, id="torch"),
                                  pytest.param(cupy_case, id="cupy", marks=needs_cupy)])
def test_the_kernel_runs_on_the_producers_stream_with_no_event(module, case):
    # The producer's stream S is busy (~50 ms), then fills x; arrayport's current stream is B.
    # The kernel queues on S behind the fill, and B is left alone: no event makes it wait for S
    # (the plain view, the control, makes B wait, so B is busy after its call).
    x, s_handle, on_s, s_done, sleep, fill, read = case()
    fill(1.0)
    module.scale_on_producer_stream(x, 1.0)  # warm-up: kernels loaded, caches filled
    ap.cuda.synchronize()
    b = ap.cuda.Stream()
    for step in range(REPEATS):
        with b, on_s():
            sleep()
            fill(float(step))
            module.scale_on_producer_stream(x, 3.0)
        assert b.query() is True, f"step {step}: arrayport's stream was made to wait"
        assert s_done() is False, f"step {step}: the call waited for the producer's stream"
        ap.cuda.Stream.from_handle(s_handle).synchronize()
        got = read()
        assert got[0] == 3.0 * step and got[-1] == 3.0 * step and float(got.sum()) == 3.0 * step * N
    with b, on_s():  # the control: a plain view orders S before B with an event
        sleep()
        module.scale(x, 1.0)
    assert b.query() is False
    b.synchronize()


@needs_gpu
@pytest.mark.parametrize("memory", ["device", "managed"])
def test_arrayport_arrays_are_on_arrayports_current_stream(module, memory):
    a = ap.full((N,), 2.0, "float32", memory=memory)
    ap.cuda.synchronize()
    b = ap.cuda.Stream()
    for _ in range(REPEATS):
        with b:
            module.scale_on_producer_stream(a, 0.5)
            module.scale_on_producer_stream(a, 2.0)
        b.synchronize()
    got = a.get()
    assert got[0] == 2.0 and got[-1] == 2.0


@needs_gpu
@needs_torch
def test_a_pytorch_graph_with_consumption_ops_and_the_kernel_replays_100_times(module):
    # Captured by PyTorch: arrayport consumes the tensors, ops.add runs on the capturing stream
    # (made arrayport's current stream), and the kernel runs on PyTorch's stream (the capturing
    # one) through on_producer_stream. Each replay: a <- 2 * (a + 1), b = a's new value.
    import torch

    n = 4096
    a = torch.arange(n, dtype=torch.float32, device="cuda")
    b = torch.zeros(n, device="cuda")

    def body():
        with ap.cuda.Stream.from_handle(torch.cuda.current_stream().cuda_stream):
            ops.add(a, 1.0, out=b)
        module.scale_on_producer_stream(b, 2.0)
        a.copy_(b)

    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # warm-up outside the capture
        body()
    torch.cuda.synchronize()
    a.copy_(torch.arange(n, dtype=torch.float32, device="cuda"))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        body()
    expected = np.arange(n, dtype=np.float32)
    for _ in range(100):
        g.replay()
        expected = (expected + np.float32(1.0)) * np.float32(2.0)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(a.cpu().numpy(), expected)
    np.testing.assert_array_equal(b.cpu().numpy(), expected)
