"""arrayport inside PyTorch's CUDA-graph capture (torch.cuda.graph): with the capturing stream made
arrayport's current stream, consuming tensors, arrayport.ops and creating device arrays are
captured, and replays compute the right values; with another current stream, a capture that
arrayport would break raises a clear error instead, and PyTorch's capture is left usable.

GPU only: each case builds its graph in this process, after a warm-up outside the capture (first
launches load kernels and grow pools, which a capture must not do)."""

from __future__ import annotations

import numpy as np
import pytest

import arrayport as ap
from arrayport import ops
from conftest import needs_gpu, needs_torch

pytestmark = [needs_gpu, needs_torch]

N = 1024


@pytest.fixture
def torch():
    import torch as t
    return t


def capture(torch, body, *, join=True):
    """Runs body() once outside the capture (warm-up), then captures it into a new graph (with
    arrayport's current stream the capturing stream when `join`); returns (graph, its result)."""
    def run():
        if not join:
            return body()
        with ap.cuda.Stream.from_handle(torch.cuda.current_stream().cuda_stream):
            return body()

    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        run()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        result = run()
    return g, result


def test_ops_into_out_are_captured_and_replayed(torch):
    a, b = torch.ones(N, device="cuda"), torch.full((N,), 2.0, device="cuda")
    c = torch.zeros(N, device="cuda")
    g, _ = capture(torch, lambda: ops.add(a, b, out=c))
    for step in range(1, 101):  # replays read the inputs' current values
        a.fill_(float(step))
        c.zero_()
        g.replay()
        torch.cuda.synchronize()
        assert float(c[0]) == step + 2.0 and float(c[-1]) == step + 2.0


def test_consuming_and_new_results_are_captured(torch):
    a = torch.arange(N, dtype=torch.float32, device="cuda")

    def body():
        v = ap.asarray(a)
        return ops.multiply(v, 2.0), ops.sum(a), ap.empty(N, "float32", memory="device")

    g, (doubled, total, fresh) = capture(torch, body)
    a.add_(1.0)
    g.replay()
    torch.cuda.synchronize()
    assert doubled.get()[0] == 2.0 and doubled.get()[-1] == 2.0 * N
    assert total.get() == N * (N + 1) / 2
    assert fresh.shape == (N,)


def test_assigning_into_a_viewed_tensor_is_captured(torch):
    c = torch.zeros(N, device="cuda")

    def body():
        v = ap.view(c)
        v[...] = 5.0

    g, _ = capture(torch, body)
    c.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert float(c.sum()) == 5.0 * N


def test_a_current_stream_outside_the_capture_is_a_clear_error(torch):
    # arrayport's current stream is the legacy default stream, which cannot wait for the
    # capturing one: refused before any CUDA call that would end PyTorch's capture.
    a = torch.ones(N, device="cuda")
    ap.view(a)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="capturing a CUDA graph.*make the capturing stream current"):
        with torch.cuda.graph(g):
            b = a * 2  # noqa: F841 (a graph that is not empty, or PyTorch warns at its end)
            ap.view(a)
    # The failed capture left nothing behind: CUDA and PyTorch work on.
    assert float((a + 1).sum()) == 2.0 * N
    g2, _ = capture(torch, lambda: ops.add(a, 1.0, out=a))
    g2.replay()
    torch.cuda.synchronize()
    assert float(a[0]) == 3.0  # the warm-up's add, then the replay's


def test_a_capture_on_an_arrayport_stream(torch):
    # cudaStreamBeginCapture on arrayport's own stream (PyTorch captures on the stream it is
    # given, here an arrayport.cuda.Stream adopted as an ExternalStream), with that stream current
    # for arrayport: consumption, ops and new device arrays are captured, and replays recompute.
    s = ap.cuda.Stream()
    a = torch.arange(N, dtype=torch.float32, device="cuda")
    out = torch.zeros(N, device="cuda")

    def body():
        with s:
            t = ops.multiply(a, 3.0)
            ops.add(t, ap.view(a), out=out)
            return t

    with s:
        body()  # warm-up: kernels load, pools grow
    s.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=torch.cuda.ExternalStream(s.handle, device="cuda:0")):
        t = body()
    for step in range(1, 21):
        a.fill_(float(step))
        torch.cuda.synchronize()
        g.replay()
        torch.cuda.synchronize()
        assert float(out[0]) == 4.0 * step and float(out[-1]) == 4.0 * step
        assert t.get()[0] == 3.0 * step


# What a graph cannot hold, each refused with a clear error before the CUDA call that would end
# PyTorch's capture: host waits, allocations and page-locking that are not stream-ordered, copies
# to or from pageable memory, prefetches. Arguments: the arrays made before the capture.
REFUSED = {
    "managed allocation": lambda m, p, d, h: ap.empty(N, "float32", memory="managed"),
    "pinned allocation": lambda m, p, d, h: ap.empty(N, "float32", memory="pinned"),
    "an op whose result is managed": lambda m, p, d, h: ops.add(m, m),
    "an op whose result is pinned": lambda m, p, d, h: ops.sum(p),
    "an op staged from NumPy": lambda m, p, d, h: ops.add(h, h, device=0),
    "get()": lambda m, p, d, h: d.get(),
    "a pageable copy to the GPU": lambda m, p, d, h: ap.asarray(h, memory="device"),
    "synchronize()": lambda m, p, d, h: ap.cuda.synchronize(),
    "Stream.synchronize()": lambda m, p, d, h: ap.cuda.current_stream().synchronize(),
    "Device.synchronize()": lambda m, p, d, h: ap.cuda.Device(0).synchronize(),
    "prefetch()": lambda m, p, d, h: m.prefetch(0),
    "register()": lambda m, p, d, h: ap.cuda.register(np.ones(1 << 22, np.float32)),
}


@pytest.mark.parametrize("case", list(REFUSED), ids=list(REFUSED))
def test_what_a_graph_cannot_hold_is_refused_and_the_capture_goes_on(torch, case):
    m = ap.full((N,), 1.0, "float32", memory="managed")
    p = ap.full((N,), 1.0, "float32", memory="pinned")
    d = ap.full((N,), 1.0, "float32", memory="device")
    h = np.ones(N, np.float32)
    x = torch.zeros(N, device="cuda")
    ap.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        with ap.cuda.Stream.from_handle(torch.cuda.current_stream().cuda_stream):
            ops.add(d, 1.0, out=x)  # captured before the refusal
            with pytest.raises(RuntimeError, match="capturing a CUDA graph.*after it ends"):
                REFUSED[case](m, p, d, h)
            ops.add(x, 2.0, out=x)  # and after it: the capture is intact
    for _ in range(3):
        x.zero_()
        g.replay()
        torch.cuda.synchronize()
        assert float(x[0]) == 4.0 and float(x[-1]) == 4.0
    # Outside the capture the same call works.
    REFUSED[case](m, p, d, h)
    ap.cuda.synchronize()


def test_managed_and_pinned_memory_made_before_the_capture_are_captured(torch):
    m = ap.full((N,), 1.0, "float32", memory="managed")
    p = ap.full((N,), 2.0, "float32", memory="pinned")
    d = ap.empty(N, "float32", memory="device")

    def body():
        ops.add(m, p, out=d)
        ops.multiply(d, 2.0, out=m)
        p.copy_to(d)
        # The host reads memory made before the capture (its stream is not capturing).
        assert np.asarray(p)[0] == 2.0

    g, _ = capture(torch, body)
    m[...] = 1.0  # the warm-up ran body once
    ap.cuda.synchronize()
    expected = 1.0
    for _ in range(5):  # each replay: m <- (m + p) * 2, d <- p
        g.replay()
        torch.cuda.synchronize()
        expected = (expected + 2.0) * 2.0
        np.testing.assert_array_equal(m.get(), np.full(N, expected, np.float32))
        np.testing.assert_array_equal(d.get(), np.full(N, 2.0, np.float32))
