"""GPU work that other libraries enqueue on an arrayport stream, for the stream-ordering tests
(cuda/test_cuda_on_gpu.py, ops/test_ops_streams.py): a spin of known length, fills, copies,
checks."""

from __future__ import annotations

import pytest


def spin_cycles(ms):
    # About 2 GHz: long enough on any supported GPU (a slower clock only makes it longer).
    return int(ms * 2e6)


class TorchWork:
    """Enqueues PyTorch work on an arrayport stream (through torch.cuda.ExternalStream)."""

    def __init__(self):
        import torch  # needs_torch: the work fixture's param is marked

        self.torch = torch
        if not self.torch.cuda.is_available():
            pytest.skip("PyTorch has no CUDA device")

    def on(self, s):
        return self.torch.cuda.stream(self.torch.cuda.ExternalStream(s.handle, device=s.device))

    def spin(self, ms):
        self.torch.cuda._sleep(spin_cycles(ms))

    def zeros(self, n):
        return self.torch.zeros(n, dtype=self.torch.float32, device="cuda")

    def fill(self, a, v):
        a.fill_(v)

    def copy(self, dst, src):
        dst.copy_(src)

    def all_equal(self, a, v):
        return bool((a == v).all().item())


def cupy_stream(cupy, s):
    """CuPy's stream for arrayport stream `s`, through the CUDA stream protocol (__cuda_stream__)
    where CuPy takes it (Stream.from_external), ExternalStream, deprecated since, before."""
    from_external = getattr(cupy.cuda.Stream, "from_external", None)
    return from_external(s) if from_external is not None else cupy.cuda.ExternalStream(s.handle)


class CupyWork:
    """Enqueues CuPy work on an arrayport stream (through cupy_stream)."""

    SPIN = r"""extern "C" __global__ void spin(long long cycles) {
        long long start = clock64();
        while (clock64() - start < cycles) {}
    }"""

    def __init__(self):
        import cupy  # needs_cupy: the work fixture's param is marked

        self.cupy = cupy
        self.kernel = self.cupy.RawKernel(self.SPIN, "spin")
        self.kernel((1,), (1,), (self.cupy.int64(0),))  # compiles now, not inside a measurement
        self.cupy.cuda.Device().synchronize()

    def on(self, s):
        return cupy_stream(self.cupy, s)

    def spin(self, ms):
        self.kernel((1,), (1,), (self.cupy.int64(spin_cycles(ms)),))

    def zeros(self, n):
        return self.cupy.zeros(n, dtype=self.cupy.float32)

    def fill(self, a, v):
        a.fill(v)

    def copy(self, dst, src):
        dst[...] = src

    def all_equal(self, a, v):
        return bool((a == v).all())
