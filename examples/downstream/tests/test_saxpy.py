"""my_kernels.saxpy from NumPy on the CPU; from CuPy and PyTorch on the GPU when there is one."""

from __future__ import annotations

import numpy as np
import pytest

import arrayport as ap
import my_kernels

gpu = pytest.mark.skipif(not ap.cuda.is_available(),
                         reason=f"needs a CUDA device: {ap.runtime_info()['reason']}")
built_with_cuda = pytest.mark.skipif(not my_kernels.built_with_cuda,
                                     reason="my_kernels was built without CUDA (no CUDA compiler)")


def test_numpy_in_place():
    x = np.arange(8, dtype=np.float32)
    y = np.ones(8, dtype=np.float32)
    my_kernels.saxpy(2.0, x, y)
    np.testing.assert_array_equal(y, 2 * np.arange(8, dtype=np.float32) + 1)


def test_numpy_strided_views_and_a_read_only_x():
    x = np.arange(20, dtype=np.float32)[::2]
    x.flags.writeable = False  # x is only read
    y = np.zeros(30, dtype=np.float32)
    my_kernels.saxpy(-1, x, y[::-3])
    expected = np.zeros(30, dtype=np.float32)
    expected[::-3] = -np.arange(20, dtype=np.float32)[::2]
    np.testing.assert_array_equal(y, expected)


def test_arrayport_arrays_and_memoryviews():
    x = ap.full((4,), 3.0, "float32", memory="host")
    y = memoryview(np.ones(4, dtype=np.float32))
    my_kernels.saxpy(0.5, x, y)
    assert y.tolist() == [2.5] * 4


def test_errors_are_precise():
    x = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match="same length"):
        my_kernels.saxpy(1.0, x, np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="float32"):
        my_kernels.saxpy(1.0, x, np.zeros(3, np.float64))
    y = np.zeros(3, np.float32)
    y.flags.writeable = False
    with pytest.raises(BufferError, match="writable"):
        my_kernels.saxpy(1.0, x, y)
    with pytest.raises(TypeError):
        my_kernels.saxpy(1.0, [1.0, 2.0, 3.0], x)  # a list is not an array


@gpu
@built_with_cuda
def test_cupy_on_the_gpu():
    cupy = pytest.importorskip("cupy")
    x = cupy.arange(1000, dtype=cupy.float32)
    y = cupy.ones(1000, dtype=cupy.float32)
    my_kernels.saxpy(2.0, x, y)  # on arrayport's current stream: the legacy one here
    np.testing.assert_array_equal(cupy.asnumpy(y), 2 * np.arange(1000, dtype=np.float32) + 1)


@gpu
@built_with_cuda
def test_pytorch_on_the_gpu_on_torchs_stream():
    torch = pytest.importorskip("torch")
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.ones(1000, dtype=torch.float32, device="cuda")
    # Run on the stream PyTorch is using, so that the kernel is ordered with its work.
    with ap.cuda.Stream.adopt(torch.cuda.current_stream()):
        my_kernels.saxpy(2.0, x, y[:])
    expected = 2 * torch.arange(1000, dtype=torch.float32) + 1
    assert torch.equal(y.cpu(), expected)


@gpu
@built_with_cuda
def test_arrayport_device_and_managed_memory():
    for memory in ("device", "managed"):
        x = ap.full((64,), 2.0, "float32", memory=memory)
        y = ap.ones((64,), "float32", memory=memory)
        with ap.cuda.Stream() as s:
            my_kernels.saxpy(3.0, x, y)
        s.synchronize()
        assert y.get().tolist() == [7.0] * 64


@gpu
@built_with_cuda
def test_host_and_device_memory_do_not_mix():
    cupy = pytest.importorskip("cupy")
    with pytest.raises(ValueError, match="host memory"):
        my_kernels.saxpy(1.0, np.zeros(4, np.float32), cupy.zeros(4, cupy.float32))


@gpu
def test_a_build_without_cuda_refuses_device_arrays():
    if my_kernels.built_with_cuda:
        pytest.skip("my_kernels was built with CUDA")
    with pytest.raises(ValueError, match="reachable from the host"):
        my_kernels.saxpy(1.0, ap.zeros((4,), "float32", memory="device"),
                         ap.zeros((4,), "float32", memory="device"))
