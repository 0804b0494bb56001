"""arrayport.Array, the produce side: creation, attributes, zero-copy through the buffer protocol,
__array_interface__, __cuda_array_interface__ and DLPack, lifetimes, refcounts, bad input."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import arrayport as ap
from conftest import HAS_GPU, needs_cupy, needs_gpu, needs_jax, needs_torch

DEFAULT_MEMORY = "managed" if HAS_GPU else "host"
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


def live_exports() -> int:
    return ap._core._dlpack_live_exports()


# ---- creation and attributes ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_creation_functions_give_numpys_values(dtype):
    shape = (3, 4)
    assert np.array_equal(ap.zeros(shape, dtype).get(), np.zeros(shape, dtype))
    assert np.array_equal(ap.ones(shape, dtype).get(), np.ones(shape, dtype))
    assert np.array_equal(ap.full(shape, 1, dtype).get(), np.full(shape, 1, dtype))
    e = ap.empty(shape, dtype)
    assert (e.shape, e.dtype, e.itemsize) == (shape, np.dtype(dtype), np.dtype(dtype).itemsize)


def test_attributes_match_numpys_for_a_c_contiguous_array():
    a = ap.empty((2, 3, 5), "float32")
    n = np.empty((2, 3, 5), "float32")
    assert (a.shape, a.strides, a.ndim, a.size, a.itemsize, a.nbytes) == (
        n.shape, n.strides, n.ndim, n.size, n.itemsize, n.nbytes)
    assert a.c_contiguous and not a.f_contiguous
    assert a.memory == DEFAULT_MEMORY
    assert a.readonly is False and a.base is None
    assert isinstance(a.ptr, int) and a.ptr % 256 == 0
    assert len(a) == 2


def test_default_dtype_is_float64_and_python_types_map_like_numpy():
    assert ap.empty(2).dtype == np.float64
    assert ap.empty(2, int).dtype == np.int64
    assert ap.empty(2, bool).dtype == np.bool_
    assert ap.empty(2, complex).dtype == np.complex128
    assert ap.empty(2, np.float32).dtype == np.float32
    assert ap.empty(2, np.dtype("<i2")).dtype == np.int16
    assert ap.empty(2, "f4").dtype == np.float32


def test_full_converts_values_like_numpy():
    assert ap.full(3, -7, "int8").get().tolist() == [-7] * 3
    assert ap.full(2, 255, "uint8").get().tolist() == [255] * 2
    assert ap.full(2, 1.5, "float16").get().tolist() == [1.5] * 2
    assert ap.full(2, 1 + 2j, "complex64").get().tolist() == [1 + 2j] * 2
    assert ap.full(2, 2**64 - 1, "uint64").get().tolist() == [2**64 - 1] * 2
    assert ap.full(2, 0.0, "bool").get().tolist() == [False] * 2


def test_like_functions_copy_shape_dtype_and_memory():
    a = ap.empty((4, 2), "int32")
    for b in (ap.empty_like(a), ap.zeros_like(a), ap.ones_like(a), ap.full_like(a, 9)):
        assert (b.shape, b.dtype, b.memory) == (a.shape, a.dtype, a.memory)
    assert ap.full_like(a, 9).get().tolist() == [[9, 9]] * 4
    assert ap.zeros_like(a, dtype="float64").dtype == np.float64


def test_zero_size_and_zero_d_arrays():
    z = ap.zeros((0, 3), "float32")
    assert z.size == 0 and z.nbytes == 0 and z.shape == (0, 3)
    assert np.asarray(z).shape == (0, 3)
    s = ap.full((), 4.0, "float64")
    assert s.shape == () and s.size == 1 and np.asarray(s)[()] == 4.0
    with pytest.raises(TypeError, match="0-d"):
        len(s)


def test_repr_shows_dtype_shape_memory_and_leading_values():
    r = repr(ap.full(10, 2, "int16"))
    assert r.startswith("arrayport.Array([2, 2, 2, 2, 2, 2, ...], dtype=int16, shape=(10,)")
    assert f"memory='{DEFAULT_MEMORY}'" in r


# ---- zero-copy with NumPy and memoryview ------------------------------------------------------

def test_numpy_asarray_shares_memory_both_ways():
    a = ap.zeros((3, 4), "float32")
    n = np.asarray(a)
    assert n.ctypes.data == a.ptr
    assert n.base is not None
    n[1, 2] = 7.0                       # written through NumPy ...
    assert a.get()[1, 2] == 7.0         # ... seen by arrayport
    memoryview(a).cast("B")[0:4] = np.float32(3.0).tobytes()  # written through arrayport's buffer
    assert n[0, 0] == 3.0               # ... seen by NumPy


def test_memoryview_exports_format_shape_and_strides():
    a = ap.zeros((2, 3), "int64")
    m = memoryview(a)
    assert (m.format, m.itemsize, m.shape, m.strides, m.readonly) == ("q", 8, (2, 3), (24, 8), False)
    assert m.tolist() == [[0, 0, 0], [0, 0, 0]]
    for dtype, fmt in [("complex64", "Zf"), ("complex128", "Zd"), ("float16", "e"), ("bool", "?")]:
        assert memoryview(ap.zeros(1, dtype)).format == fmt


def test_a_buffer_outlives_a_stray_release_and_its_array():
    # Python >= 3.12 shows the release slot as __release_buffer__, callable on a live memoryview:
    # the shape and strides must survive it (and the Array itself, which the memoryview holds).
    a = ap.asarray(np.arange(6, dtype=np.int32).reshape(2, 3)[:, ::2])
    m, m2 = memoryview(a), memoryview(a)
    release = getattr(a, "__release_buffer__", None)
    if release is not None:
        release(m)
        release(m)
    del a, release
    gc.collect()
    for view in (m, m2):
        assert (view.shape, view.strides, view.tolist()) == ((2, 2), (12, 8), [[0, 2], [3, 5]])
    m.release()
    m2.release()


def test_array_interface_describes_the_same_memory():
    a = ap.zeros((2, 5), "uint16")
    ai = a.__array_interface__
    assert ai["data"] == (a.ptr, False)
    assert (ai["shape"], ai["typestr"], ai["strides"], ai["version"]) == ((2, 5), "<u2", None, 3)


def test_host_arrays_have_no_cuda_array_interface():
    if HAS_GPU:
        pytest.skip("managed memory (the default with a GPU) is device-accessible")
    a = ap.zeros(3)
    assert not hasattr(a, "__cuda_array_interface__")


# ---- DLPack -------------------------------------------------------------------------------------

class LegacyOnly:
    """A wrapper whose __dlpack__ takes no max_version: NumPy falls back to the legacy ABI."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_dlpack_versioned_round_trip_with_numpy_is_zero_copy():
    base = live_exports()
    a = ap.full((4, 3), 5, "int32")
    n = np.from_dlpack(a)
    assert n.ctypes.data == a.ptr and n.shape == (4, 3) and n.dtype == np.int32
    assert live_exports() == base + 1
    n[0, 0] = -1
    assert a.get()[0, 0] == -1
    del n
    gc.collect()
    assert live_exports() == base, "the deleter ran exactly once"


def test_dlpack_legacy_round_trip_with_numpy():
    base = live_exports()
    a = ap.full(6, 1.25, "float64")
    n = np.from_dlpack(LegacyOnly(a))
    assert n.ctypes.data == a.ptr and n.tolist() == [1.25] * 6
    del n
    assert live_exports() == base


def test_capsules_name_the_abi_and_unconsumed_ones_free_themselves():
    base = live_exports()
    a = ap.zeros(2)
    legacy = a.__dlpack__()
    versioned = a.__dlpack__(max_version=(1, 0))
    assert "dltensor" in repr(legacy) and "dltensor_versioned" in repr(versioned)
    assert live_exports() == base + 2
    del legacy, versioned
    assert live_exports() == base


def test_dlpack_device_of_host_memory_is_cpu():
    if HAS_GPU:
        pytest.skip("the default memory is managed with a GPU")
    assert ap.zeros(1).__dlpack_device__() == (1, 0)


def test_consumer_outlives_the_producers_python_handle():
    base = live_exports()
    a = ap.full(1000, 3, "int64")
    n = np.from_dlpack(a)
    m = np.asarray(ap.full(10, 4, "int64"))  # the Array lives only inside NumPy's base chain
    del a
    gc.collect()
    assert n.sum() == 3000 and m.sum() == 40
    del n, m
    gc.collect()
    assert live_exports() == base


def test_refcounts_are_unchanged_after_many_exports():
    a = ap.zeros(16, "float32")
    before = sys.getrefcount(a)
    base = live_exports()
    for _ in range(100_000):
        np.from_dlpack(a)
        memoryview(a).release()
        a.__array_interface__
    gc.collect()
    assert sys.getrefcount(a) == before
    assert live_exports() == base


# ---- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "call, exc, message",
    [
        (lambda: ap.empty(3, "float128"), TypeError, "float128"),
        (lambda: ap.empty(3, object), TypeError, "dtype"),
        (lambda: ap.empty(3, memory="gpu"), ValueError, "'gpu'"),
        (lambda: ap.empty(-2), ValueError, "non-negative extents, got -2"),
        (lambda: ap.empty((2, -1)), ValueError, "at dimension 1"),
        (lambda: ap.empty((2**62, 2**62)), ValueError,
             "shape (4611686018427387904, 4611686018427387904) has 2126764793255865396646091296448"
             "5513216 elements"),
        (lambda: ap.empty((1,) * 65), ValueError, "at most 64 dimensions, got 65"),
        (lambda: ap.empty("abc"), TypeError, "shape"),
        (lambda: ap.empty((2, 1.5)), TypeError, "expected ints, got float"),
        (lambda: ap.full(2, 128, "int8"), OverflowError, "128 is out of range for int8"),
        (lambda: ap.full(2, -1, "uint32"), OverflowError, "out of range for uint32"),
        (lambda: ap.full(2, 1j, "float32"), TypeError, "complex"),
        (lambda: ap.full(2, "x", "float32"), TypeError, "expected a number"),
        (lambda: ap.zeros(2).__dlpack__(copy=True, dl_device=(4, 0)), BufferError,
         "arrayport copies only to CPU"),
        (lambda: ap.zeros(2).__dlpack__(max_version="1"), BufferError, "max_version"),
        (lambda: ap.zeros_like([1, 2]), TypeError, "expected an arrayport.Array, got list"),
        (lambda: ap.Array(), TypeError, "cannot be created directly"),
    ],
)
def test_bad_input_raises_a_precise_exception(call, exc, message):
    base = live_exports()
    with pytest.raises(exc, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()
    assert live_exports() == base


def test_cpu_array_refuses_a_stream_and_a_foreign_device():
    if HAS_GPU:
        pytest.skip("the default memory is managed with a GPU")
    a = ap.zeros(2)
    with pytest.raises(BufferError, match="stream: expected None or -1 for a CPU array"):
        a.__dlpack__(stream=5)
    with pytest.raises(BufferError, match="copy=False forbids"):
        a.__dlpack__(dl_device=(2, 0), copy=False)
    # a managed request without a GPU is host memory: never labelled as device memory
    m = ap.zeros(2, memory="managed")
    with pytest.raises(BufferError, match=r"dl_device=\(2, 0\) asks for another device"):
        m.__dlpack__(dl_device=(2, 0))


def test_device_memory_without_a_gpu_is_a_no_device_error():
    if HAS_GPU:
        pytest.skip("this machine has a GPU")
    with pytest.raises(ap.NoDeviceError, match="device memory needs a CUDA device"):
        ap.empty(4, memory="device")
    # managed and pinned requests fall back to host memory and say so
    assert ap.empty(4, memory="managed").memory == "host"
    assert ap.empty(4, memory="pinned").memory == "host"


# ---- GPU: zero-copy into every library, for device and managed memory -------------------------

@needs_gpu
@needs_cupy
@pytest.mark.parametrize("memory", ["device", "managed"])
def test_cupy_takes_device_arrays_zero_copy_through_cai_and_dlpack(memory):
    import cupy
    a = ap.zeros(1000, "float32", memory=memory)
    c = cupy.asarray(a)                       # __cuda_array_interface__
    assert c.data.ptr == a.ptr
    c[:] = 3
    cupy.cuda.runtime.deviceSynchronize()
    assert a.get().sum() == 3000
    d = cupy.from_dlpack(a)                   # DLPack
    assert d.data.ptr == a.ptr
    d += 1
    cupy.cuda.runtime.deviceSynchronize()
    assert a.get().sum() == 4000


@needs_gpu
@needs_torch
def test_torch_takes_device_arrays_zero_copy_through_dlpack_and_writes_are_seen():
    import torch
    a = ap.zeros((10, 10), "float32", memory="device")
    t = torch.from_dlpack(a)
    assert t.data_ptr() == a.ptr and t.is_cuda and tuple(t.shape) == (10, 10)
    t += 2
    torch.cuda.synchronize()
    assert a.get().sum() == 200


@needs_gpu
@needs_torch
def test_torch_takes_managed_arrays_zero_copy_through_cai():
    # DLPack labels managed memory kDLCUDAManaged (as CuPy and cuda.core do); PyTorch's from_dlpack
    # refuses that device type (pytorch/pytorch#96318), so PyTorch takes managed arrays through
    # __cuda_array_interface__, still without a copy.
    import torch
    a = ap.zeros((10, 10), "float32", memory="managed")
    assert a.__dlpack_device__() == (13, 0)
    t = torch.as_tensor(a, device="cuda")
    assert t.data_ptr() == a.ptr and t.is_cuda
    t += 2
    torch.cuda.synchronize()
    assert np.asarray(a).sum() == 200   # and the host sees it through the buffer protocol


@needs_gpu
@needs_torch
@needs_jax
def test_managed_arrays_go_to_consumers_without_kdlcudamanaged_as_device_memory():
    # PyTorch and JAX refuse DLPack device type 13 (kDLCUDAManaged); a consumer that asks for
    # dl_device=(kDLCUDA, id) gets the managed memory labelled as device memory, without a copy.
    import torch
    a = ap.full(256, 5, "float32", memory="managed")
    t = torch.from_dlpack(a.__dlpack__(dl_device=(2, 0), max_version=(1, 0)))
    assert t.data_ptr() == a.ptr and t.is_cuda
    t += 1
    torch.cuda.synchronize()
    assert np.asarray(a).sum() == 6 * 256
    with pytest.raises(BufferError, match=r"dl_device=\(2, 1\) asks for another device"):
        a.__dlpack__(dl_device=(2, 1))
    import jax

    class AsDevice:  # what a JAX user writes: the device label JAX knows
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, **kw):
            kw["dl_device"] = (2, 0)
            return a.__dlpack__(**kw)

    j = jax.dlpack.from_dlpack(AsDevice())
    assert j.unsafe_buffer_pointer() == a.ptr and float(j.sum()) == 6 * 256


@needs_gpu
@pytest.mark.parametrize("memory", ["device", "managed"])
def test_numba_and_cuda_core_take_arrays_zero_copy_and_writes_are_seen(memory):
    numba_cuda = pytest.importorskip("numba.cuda")
    a = ap.full(256, 5, "float32", memory=memory)
    nb_arr = numba_cuda.as_cuda_array(a)
    assert nb_arr.__cuda_array_interface__["data"][0] == a.ptr
    nb_arr.copy_to_device(np.full(256, 3, np.float32))     # Numba writes ...
    numba_cuda.synchronize()
    assert a.get().sum() == 3 * 256                          # ... arrayport reads
    a[:] = 4                                                 # arrayport writes ...
    ap.cuda.synchronize()
    assert nb_arr.copy_to_host().sum() == 4 * 256            # ... Numba reads
    core = pytest.importorskip("cuda.core")
    smv = getattr(core, "StridedMemoryView", None) or core.utils.StridedMemoryView
    view = smv.from_any_interface(a, stream_ptr=-1) if hasattr(smv, "from_any_interface") else smv(a, stream_ptr=-1)
    assert view.ptr == a.ptr and tuple(view.shape) == (256,) and view.is_device_accessible


@needs_gpu
@needs_jax
def test_jax_numba_and_cuda_core_take_device_arrays_zero_copy():
    a = ap.full(256, 5, "float32", memory="device")
    numba_cuda = pytest.importorskip("numba.cuda")
    nb_arr = numba_cuda.as_cuda_array(a)
    assert nb_arr.__cuda_array_interface__["data"][0] == a.ptr
    core = pytest.importorskip("cuda.core")
    smv = getattr(core, "StridedMemoryView", None) or core.utils.StridedMemoryView
    view = smv.from_any_interface(a, stream_ptr=-1) if hasattr(smv, "from_any_interface") else smv(a, stream_ptr=-1)
    assert view.ptr == a.ptr and tuple(view.shape) == (256,)
    import jax
    j = jax.dlpack.from_dlpack(a)
    assert float(j.sum()) == 5 * 256


@needs_gpu
@needs_torch
def test_consumer_on_another_stream_reads_complete_data_without_device_sync():
    import torch
    n = 1 << 26
    producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()
    a = ap.empty(n, "float32", memory="device", stream=producer.cuda_stream)
    t = torch.from_dlpack(a.__dlpack__(stream=-1))  # an alias to write through, no handshake
    with torch.cuda.stream(producer):
        torch.cuda._sleep(50_000_000)                # keep the producer busy ...
        t.fill_(1.0)                                 # ... then write on it
    with torch.cuda.stream(consumer):
        seen = torch.from_dlpack(a)                  # __dlpack__(stream=consumer): event + wait
        total = seen.sum()
    consumer.synchronize()                           # this stream only, never the device
    assert total.item() == n



class _StreamOwner:
    """A stream as cuda.core presents one: __cuda_stream__ gives (version, handle)."""

    def __cuda_stream__(self):
        return (0, 0)


def test_an_array_keeps_the_stream_it_is_released_on_alive():
    owner = _StreamOwner()
    before = sys.getrefcount(owner)
    a = ap.zeros(8, "float32", memory="host", stream=owner)
    assert sys.getrefcount(owner) == before + 1
    c = a.copy(stream=owner)
    v = a[2:]                                  # a view: its memory (and stream) is a's
    assert sys.getrefcount(owner) == before + 2
    s = ap.cuda.Stream.adopt(owner)            # holds the owner itself
    with s:                                    # the current stream: the with block's object
        during = sys.getrefcount(s)
        d = ap.ones(4, memory="host")
        assert sys.getrefcount(s) == during + 1
    e = ap.zeros(4, memory="host", stream=0)   # an int handle: its owner keeps it
    del a, c, v, d, e, s
    gc.collect()
    assert sys.getrefcount(owner) == before


@needs_gpu
def test_an_array_outlives_the_stream_object_it_was_made_on():
    s = ap.cuda.Stream()
    with s:
        a = ap.full(1 << 20, 3.0, "float32", memory="device")
    b = a.copy(stream=s)
    del s
    gc.collect()
    assert float(a.get().sum()) == 3.0 * (1 << 20)
    del a, b                                  # released on the stream, which goes only now
    gc.collect()


@needs_gpu
def test_arrays_are_ordered_on_the_current_stream_by_default():
    s = ap.cuda.Stream()
    with s:
        a = ap.zeros(1000, "float32", memory="device")
    assert a.__cuda_array_interface__["stream"] == s.handle
    b = ap.zeros(10, "float32", memory="device")
    assert b.__cuda_array_interface__["stream"] == 1  # the legacy default stream, spelled 1 in CAI
