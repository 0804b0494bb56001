"""The public API as a user's code calls it, type-checked with mypy
(tests/python/package/test_stubs.py) and run as a script on any machine (CPU memory only, so it
needs no GPU).

`assert_type` pins what the stubs promise; each `# type: ignore[...]` marks a call the stubs
must refuse, and mypy's --warn-unused-ignores fails the check if one is accepted.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np
from typing_extensions import assert_type

import arrayport as ap
from arrayport import cuda, ops

# Creation, in every memory kind (without a GPU, pinned and managed give host memory).
a = ap.zeros((4, 3), "float32", memory="host")
assert_type(a, ap.Array)
assert_type(ap.empty(5), ap.Array)
assert_type(ap.ones([2, 2], np.float64, memory="pinned"), ap.Array)
assert_type(ap.full((3,), 2.5, "float32"), ap.Array)
assert_type(ap.full_like(a, 1j, dtype="complex64"), ap.Array)
assert_type(ap.zeros_like(a, memory="managed"), ap.Array)

# Attributes.
assert_type(a.shape, Tuple[int, ...])
assert_type(a.strides, Tuple[int, ...])
assert_type(a.ndim, int)
assert_type(a.size, int)
assert_type(a.nbytes, int)
assert_type(a.ptr, int)
assert_type(a.readonly, bool)
assert_type(a.device, Tuple[str, int])
memory: str = a.memory  # a Literal of the four kinds
assert memory == "host"
assert_type(a.__dlpack_device__(), Tuple[int, int])
assert_type(a.__cuda_array_interface__ if a.memory != "host" else None, "dict[str, Any] | None")

# Views, copies and indexing.
assert_type(a[1:, ::2], ap.Array)
assert_type(a.T, ap.Array)
assert_type(a.reshape(3, 4), ap.Array)
assert_type(a.reshape((12,)), ap.Array)
assert_type(a.transpose(1, 0), ap.Array)
assert_type(a.copy(memory="host"), ap.Array)
assert_type(a.to(dtype="float64", copy=True), ap.Array)
a[0, :] = np.arange(3, dtype=np.float32)
a[1] = 7
a.fill(0.5)
a.copy_to(ap.empty_like(a))
host: Any = a.get()
assert isinstance(host, np.ndarray) and host.shape == (4, 3)

# Any array in, without a copy.
n = np.arange(6, dtype=np.float32)
assert_type(ap.view(n), ap.Array)
assert_type(ap.view(n, sync=False, protocol="buffer"), ap.Array)
assert_type(ap.asarray(n), ap.Array)
assert_type(ap.asarray([1.0, 2.0], dtype="float32", memory="host", copy=None), ap.Array)
assert_type(ap.from_dlpack(a, device="cpu"), ap.Array)
assert_type(ap.copy(n), ap.Array)
assert np.shares_memory(np.asarray(ap.view(n)), n)

# Operations.
b = ap.ones((4, 3), "float32", memory="host")
assert_type(ops.add(a, b), ap.Array)
assert_type(ops.add(a, 1.0, out=b), ap.Array)
assert_type(ops.multiply(n, 2), ap.Array)
assert_type(ops.axpy(2.0, a, b), ap.Array)
assert_type(ops.divide(a, b, zero_value=0.0), ap.Array)
assert_type(ops.sum(a, axis=0, keepdims=True), ap.Array)
assert_type(ops.where(ops.maximum(a, b), a, b), ap.Array)
assert_type(ops.astype(a, "float16"), ap.Array)
assert_type(ops.dot(n, n), ap.Array)

# Devices and streams: borrowed streams work without a GPU.
assert_type(cuda.is_available(), bool)
assert_type(cuda.device_count(), int)
s = cuda.current_stream()
assert_type(s, cuda.Stream)
assert_type(s.handle, int)
assert_type(s.device, "int | None")
assert_type(cuda.Stream.legacy(), cuda.Stream)
assert_type(cuda.Stream.per_thread(), cuda.Stream)
assert_type(cuda.Stream.from_handle(0), cuda.Stream)
with cuda.Stream.legacy() as legacy:
    assert_type(legacy, cuda.Stream)
    assert_type(legacy.query(), bool)
    legacy.synchronize()
assert_type(s.__cuda_stream__(), Tuple[int, int])
if cuda.is_available():
    with cuda.Stream(non_blocking=True) as stream:
        start = stream.record_event()
        assert_type(start, cuda.Event)
        stop = cuda.Event()
        stop.record(stream)
    assert_type(start.elapsed_time(stop), float)
    assert_type(cuda.Device(0).compute_capability, Tuple[int, int])
    device: cuda.DeviceLike = cuda.Device(0)
    cuda.set_device(device)

# Errors are typed classes with their attributes.
try:
    ap.zeros(1 << 62, "float32", memory="device")
except ap.OutOfMemoryError as e:
    assert_type(e.code, int)
except (ap.CudaError, ap.NoDeviceError, MemoryError, ValueError):
    pass

# Package information.
assert_type(ap.__version__, str)
assert_type(ap.cmake_dir(), str)
assert_type(ap.build_info(), "dict[str, Any]")
assert_type(ap.runtime_info()["cuda_available"], Any)

# What bound C++ functions take (their signatures name arrayport.ArrayLike).
def takes(x: ap.ArrayLike) -> None: ...


takes(a)
takes(np.zeros(3))
takes(memoryview(b"abc"))
assert_type(ops.dot(a, a, axis=1, keepdims=True, out=ap.empty((4, 1), "float32", memory="host")), ap.Array)

# Calls the stubs refuse (each ignore must be needed: --warn-unused-ignores).
if a.size == 0:  # never run: a has elements
    ap.zeros(3, memory="gpu")  # type: ignore[arg-type]
    a.advise("read_mostly")  # type: ignore[arg-type]
    ops.sum(a, axis=[0])  # type: ignore[arg-type]
    a.shape = (3, 4)  # type: ignore[misc]
    ap.view()  # type: ignore[call-arg]
    cuda.Stream.legacy().record_event(s)  # type: ignore[arg-type]
    takes(3)  # type: ignore[arg-type]
