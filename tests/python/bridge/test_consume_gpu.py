"""arrayport.view() on the GPU machine: the real device libraries (CuPy, PyTorch through the DLPack C
exchange API and through __dlpack__, JAX, Numba, a CAI-only object), device and managed memory,
and streams: a producer on stream A, the consumer on stream B, correct data and no device sync."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import arrayport as ap
from arrayport import _core
from conftest import needs_cupy, needs_gpu, needs_jax, needs_torch

pytestmark = needs_gpu

SLEEP_CYCLES = 200_000_000  # torch.cuda._sleep: about 100 ms on an H100, long enough to race


class CAIOnly:
    """A PyCUDA-style producer: __cuda_array_interface__ alone, over memory someone else owns."""

    def __init__(self, cai, owner):
        self.__cuda_array_interface__ = cai
        self.owner = owner


def check_view(v: ap.Array, ptr: int, shape, strides, dtype: str, memory: str = "device"):
    assert v.ptr == ptr
    assert v.shape == tuple(shape)
    assert v.strides == tuple(strides)
    assert v.dtype == dtype
    assert v.memory == memory
    assert v.device == (("cuda_managed" if memory == "managed" else "cuda"), 0)


# ---- CuPy -----------------------------------------------------------------------------------


@needs_cupy
@pytest.mark.parametrize("protocol", [None, "cupy", "dlpack", "cai"])
def test_cupy_arrays_any_layout(protocol):
    import cupy
    c = cupy.arange(60, dtype=cupy.float32).reshape(5, 12)
    layouts = [c, c[::2, 1::3], c.T, c[:, ::-1], c[::-2, ::3]]
    if protocol != "cai":
        # One element, and none: CuPy's interface calls these contiguous and states no strides
        # (the bridge then computes compact ones); the struct and DLPack give CuPy's own.
        layouts += [c[2:3, 4:5], c[:0]]
    for x in layouts:
        if protocol == "dlpack" and any(s < 0 for s in x.strides):
            # CuPy exports negative strides divided as unsigned numbers (-1 -> 2^62 - 1):
            # refused, never read; left to choose, the bridge reads CuPy's struct instead.
            with pytest.raises(ValueError, match=r"the stride of axis \d of shape \(.*\) is \d+ bytes "
                                                 r"\(\d+ elements of 4 bytes\), more than 2\^63-1"):
                ap.view(x, protocol=protocol)
            continue
        v = ap.view(x, protocol=protocol)
        check_view(v, x.data.ptr, x.shape, x.strides, "float32")
        np.testing.assert_array_equal(v.get(), cupy.asnumpy(x))
        if protocol is None:
            # CuPy offers the buffer protocol but refuses it for device memory; its struct is
            # read instead of __dlpack__ (and states negative strides right).
            assert _core._acquire_protocol(x) == "cupy"


@needs_cupy
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "int64", "float16", "float32",
                                   "float64", "complex64", "complex128"])
def test_cupy_struct_and_dlpack_agree_on_every_dtype(dtype):
    import cupy
    x = (cupy.arange(24) % 3).astype(dtype).reshape(2, 3, 4)[:, ::2, 1:]
    a, b = ap.view(x, protocol="cupy"), ap.view(x, protocol="dlpack")
    assert (a.ptr, a.shape, a.strides, a.dtype, a.memory, a.device, a.readonly) == \
        (b.ptr, b.shape, b.strides, b.dtype, b.memory, b.device, b.readonly)
    np.testing.assert_array_equal(a.get(), cupy.asnumpy(x))


@needs_cupy  # the child process imports it
def test_cupy_struct_layout_waits_for_an_array_with_dimensions():
    # A 0-d array leaves the layout check open (no vectors to compare): DLPack serves it, and the
    # first array with dimensions checks the layout. A fresh process: the check is once per process.
    import subprocess
    import sys
    code = (
        "import cupy, arrayport as ap\n"
        "from arrayport import _core\n"
        "s = cupy.array(2.5, dtype=cupy.float32)\n"
        "print(_core._acquire_protocol(s), ap.view(s).get().item())\n"
        "v = cupy.arange(6, dtype=cupy.int16)[::-2]\n"
        "print(_core._acquire_protocol(v), ap.view(v).get().tolist())\n"
        "print(_core._acquire_protocol(s), ap.view(s).get().item())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:3] == ["dlpack 2.5", "cupy [5, 3, 1]", "cupy 2.5"]


@needs_cupy
def test_cupy_writes_through_the_view():
    import cupy
    c = cupy.zeros(1000, dtype=cupy.float64)
    ap.view(c[::2]).fill(7.0)
    host = cupy.asnumpy(c)
    assert host[::2].tolist() == [7.0] * 500 and host[1::2].tolist() == [0.0] * 500


@needs_cupy
@pytest.mark.parametrize("protocol", ["cai", "cupy"])
def test_cupy_managed_memory_is_seen_as_managed(protocol):
    import cupy
    mem = cupy.cuda.malloc_managed(4096)
    c = cupy.ndarray((1024,), cupy.float32, mem)
    c[...] = 3.0
    v = ap.view(c, protocol=protocol)
    check_view(v, c.data.ptr, (1024,), (4,), "float32", memory="managed")
    cupy.cuda.Device().synchronize()
    assert np.asarray(v).sum() == 3072.0  # managed memory: readable on the host, zero-copy


@needs_cupy
@needs_torch
@pytest.mark.parametrize("protocol", ["cupy", "dlpack"])
def test_cupy_producer_on_stream_a_consumer_on_stream_b(protocol):
    import cupy
    import torch
    n = 1 << 24
    c = cupy.zeros(n, dtype=cupy.float32)
    cupy.cuda.Device().synchronize()
    producer = cupy.cuda.Stream(non_blocking=True)
    consumer = ap.cuda.Stream()
    with producer:
        with torch.cuda.stream(torch.cuda.ExternalStream(producer.ptr, device="cuda:0")):
            torch.cuda._sleep(SLEEP_CYCLES)  # CuPy's current stream is busy ...
        c.fill(2.0)                          # ... and only then writes
        v = ap.view(c, stream=consumer, protocol=protocol)
    assert producer.done is False, "the view must not have waited for the producer"
    got = v.get(stream=consumer)
    assert float(got.sum()) == 2.0 * n and got[0] == 2.0 and got[-1] == 2.0


@needs_cupy
def test_a_cupy_view_keeps_the_array_alive():
    import cupy
    c = cupy.full(64, 5, dtype=cupy.int32)
    v = ap.view(c)
    assert v.base is c
    del c
    gc.collect()
    assert v.get().tolist() == [5] * 64


# ---- PyTorch --------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("protocol, used", [(None, "exchange"), ("dlpack", "dlpack"),
                                            ("cai", "cai")])
def test_torch_tensors_through_exchange_api_dlpack_and_cai(protocol, used):
    import torch
    t = torch.arange(24, dtype=torch.int32, device="cuda").reshape(4, 6)
    for x in (t, t.T, t[1:, ::2]):
        v = ap.view(x, protocol=protocol)
        check_view(v, x.data_ptr(), x.shape, tuple(s * 4 for s in x.stride()), "int32")
        np.testing.assert_array_equal(v.get(), x.cpu().numpy())
    if protocol is None:
        assert _core._acquire_protocol(t) == used


@needs_torch
def test_torch_cpu_tensor_is_host_memory():
    import torch
    t = torch.arange(6, dtype=torch.float64)
    v = ap.view(t)
    assert v.memory == "host" and v.ptr == t.data_ptr()
    assert np.asarray(v).tolist() == t.tolist()


@needs_torch
def test_torch_views_keep_the_tensor_and_show_it_as_base():
    import torch
    for protocol in (None, "dlpack"):
        t = torch.ones(8, device="cuda")
        v = ap.view(t, protocol=protocol)
        assert v.base is t
        del t
        gc.collect()
        assert v.get().tolist() == [1.0] * 8  # the view kept the tensor's memory alive


# ---- JAX, Numba, CAI-only -------------------------------------------------------------------


def jax_on_gpu():
    import jax  # callers are marked needs_jax
    import jax.numpy as jnp

    if jax.default_backend() != "gpu":
        pytest.skip("JAX has no GPU backend here")
    return jax, jnp


@needs_jax
def test_jax_arrays():
    jax, jnp = jax_on_gpu()
    x = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    v = ap.view(x)
    check_view(v, x.unsafe_buffer_pointer(), (3, 4), (16, 4), "float32")
    np.testing.assert_array_equal(v.get(), np.asarray(x))
    x.block_until_ready()
    assert _core._acquire_protocol(x) == "dlpack"
    # Ready, and only read by a call (a const view parameter): JAX's interface.
    assert _core._acquire_protocol(x, reads_only=True) == "cai"
    np.testing.assert_array_equal(ap.ops.add(x, 0.0).get(), np.asarray(x))


@needs_jax
def test_jax_arrays_are_ready_when_viewed():
    # JAX queues work asynchronously. Told the consumer's stream, its __dlpack__ orders the
    # computation before it, so a view read there sees the result, never the buffer's earlier
    # bytes. (JAX's __cuda_array_interface__, version 2, waits for nothing: taken first, this
    # test read 19% of the elements stale.)
    jax, jnp = jax_on_gpu()
    m = jax.random.normal(jax.random.PRNGKey(0), (4096, 4096), dtype=jnp.float32) * 1e-2
    m.block_until_ready()
    y = m
    for _ in range(24):
        y = jnp.tanh(y @ m)  # ~3 TFLOP queued behind the call
    s = ap.cuda.Stream()
    v = ap.view(y, stream=s)
    got = v.get(stream=s)
    np.testing.assert_allclose(got, np.asarray(y), rtol=1e-6, atol=1e-6)
    # Read-only and call-scoped (a const view parameter): a pending JAX array still takes
    # __dlpack__ (ordered on the consumer's stream), a ready one its interface. An op (it releases
    # the GIL while the GPU reads) takes __dlpack__ either way, and reads the finished result.
    z = m
    for _ in range(24):
        z = jnp.tanh(z @ m)
    pending = not z.is_ready()
    protocol = _core._acquire_protocol(z, reads_only=True)
    if pending and not z.is_ready():
        assert protocol == "dlpack"
    z2 = jnp.tanh(z @ m)
    with s:
        copied = ap.ops.add(z2, 0.0)  # queued behind JAX's matmul: the op must wait for it
    expected = np.asarray(z2)
    np.testing.assert_allclose(copied.get(stream=s), expected, rtol=1e-6, atol=1e-6)
    z2.block_until_ready()
    assert _core._acquire_protocol(z2, reads_only=True) == "cai"
    with s:
        again = ap.ops.add(z2, 0.0)
    np.testing.assert_allclose(again.get(stream=s), expected, rtol=1e-6, atol=1e-6)


def test_numba_device_arrays():
    cuda = pytest.importorskip("numba.cuda")
    d = cuda.to_device(np.arange(10, dtype=np.int64))[::2]
    v = ap.view(d)
    check_view(v, d.__cuda_array_interface__["data"][0], (5,), d.strides, "int64")
    assert v.get().tolist() == [0, 2, 4, 6, 8]


def test_a_cai_only_object_over_arrayport_memory():
    a = ap.full((4, 4), 2.5, "float32", memory="device")
    obj = CAIOnly({"shape": (4, 2), "typestr": "<f4", "data": (a.ptr + 8, False),
                   "strides": (16, 4), "version": 3, "stream": None}, a)
    v = ap.view(obj)
    assert _core._acquire_protocol(obj) == "cai"
    check_view(v, a.ptr + 8, (4, 2), (16, 4), "float32")
    assert v.get().tolist() == [[2.5, 2.5]] * 4
    assert v.base is obj
    read_only = CAIOnly({**obj.__cuda_array_interface__, "data": (a.ptr, True)}, a)
    assert ap.view(read_only).readonly


def test_managed_and_device_arrayport_arrays_view_as_themselves():
    for memory in ("device", "managed"):
        a = ap.ones((3, 5), "float32", memory=memory)
        assert ap.view(a) is a
        v = ap.view(a[:, 1:])
        check_view(v, a.ptr + 4, (3, 4), (20, 4), "float32", memory=memory)


# ---- streams: producer on A, consumer on B ----------------------------------------------------


@needs_torch
@pytest.mark.parametrize("protocol", [None, "dlpack", "cai"])
def test_producer_stream_a_consumer_stream_b_without_device_sync(protocol):
    import torch
    n = 1 << 24
    t = torch.zeros(n, device="cuda")
    torch.cuda.synchronize()
    producer = torch.cuda.Stream()
    consumer = ap.cuda.Stream()
    with torch.cuda.stream(producer):
        torch.cuda._sleep(SLEEP_CYCLES)  # the producer is busy ...
        t.fill_(2.0)                     # ... and only then writes
        if protocol == "cai":
            # PyTorch's own interface is v2 (no stream): a CAI v3 producer states its stream.
            src = CAIOnly({**t.__cuda_array_interface__, "version": 3,
                           "stream": producer.cuda_stream}, t)
        else:
            src = t  # exchange API: PyTorch's current stream; __dlpack__: told the consumer's
        v = ap.view(src, stream=consumer, protocol=protocol)
    assert producer.query() is False, "the view must not have waited for the producer"
    got = v.get(stream=consumer)       # a copy on B, ordered after A's write by an event
    assert float(got.sum()) == 2.0 * n
    assert got[0] == 2.0 and got[-1] == 2.0


@needs_torch
def test_sync_false_takes_the_view_without_ordering():
    import torch
    t = torch.ones(16, device="cuda")
    consumer = ap.cuda.Stream()
    v = ap.view(t, stream=consumer, sync=False)
    assert v.ptr == t.data_ptr()
    torch.cuda.synchronize()
    assert v.get(stream=consumer).tolist() == [1.0] * 16
