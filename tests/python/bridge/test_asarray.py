"""arrayport.asarray and arrayport.from_dlpack (the array API's, python/arrayport/_array_api.py), and
Array.__setitem__ from sources that speak only DLPack or the CUDA array interface: zero-copy where
nothing changes (same pointer), a copy where dtype, memory or device do or copy=True, copy=False's
errors, DLPack deleters run exactly once, refcounts unchanged; the device libraries on a GPU."""

from __future__ import annotations

import array
import gc
import mmap
import sys

import numpy as np
import pytest

import arrayport as ap
from conftest import HAS_GPU, needs_cupy, needs_gpu, needs_jax, needs_torch
from dlpack_ctypes import DLPackOnly, Producer

DEFAULT_MEMORY = ap.empty(1).memory  # managed with a GPU, host without


class ArrayOnly:
    """Speaks no exchange protocol, only NumPy's __array__ (as pandas or PIL objects)."""

    def __init__(self, x):
        self.x = x

    def __array__(self, dtype=None, copy=None):
        return self.x


def ptr_of(x: np.ndarray) -> int:
    return x.__array_interface__["data"][0]


# ---- asarray: zero-copy --------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda x: x,
    lambda x: np.asfortranarray(x),
    lambda x: x[::2, ::-1],
    lambda x: x.T,
    lambda x: x[1, 2, ...],
], ids=["c", "f", "strided-negative", "transposed", "0-d"])
def test_asarray_of_numpy_is_a_view_with_the_same_pointer_and_strides(make):
    x = make(np.arange(20, dtype=np.float32).reshape(4, 5))
    a = ap.asarray(x)
    assert isinstance(a, ap.Array)
    assert (a.ptr, a.shape, a.strides, a.dtype, a.memory) == (ptr_of(x), x.shape, x.strides, x.dtype, "host")
    assert a.base is x
    assert np.array_equal(a.get(), x)
    assert ap.asarray(x, copy=False).ptr == ptr_of(x)
    assert ap.asarray(x, dtype="float32", memory="host", copy=False).ptr == ptr_of(x)


def test_asarray_writes_are_seen_both_ways():
    x = np.zeros((2, 3), np.int64)
    a = ap.asarray(x)
    a[1, 2] = 7
    assert x[1, 2] == 7
    x[0, 0] = -3
    assert a.get()[0, 0] == -3


def test_asarray_of_an_array_is_the_array_itself():
    a = ap.asarray(np.arange(6.0)).copy()
    assert ap.asarray(a) is a
    assert ap.asarray(a, dtype="float64", memory=a.memory, copy=False) is a
    assert ap.asarray(a, dtype=np.float64) is a
    assert ap.asarray(a, dtype=float) is a


def test_asarray_of_other_buffer_producers():
    m = memoryview(bytearray(b"\x01\x02\x03"))
    v = ap.asarray(m)
    assert (v.shape, str(v.dtype), v.readonly, v.get().tolist()) == ((3,), "uint8", False, [1, 2, 3])
    b = ap.asarray(b"xyz")
    assert b.readonly and b.get().tolist() == [120, 121, 122]
    arr = array.array("i", [5, -6, 7])
    va = ap.asarray(arr)
    va[0] = 50
    assert arr[0] == 50 and str(va.dtype) == "int32"
    s = ap.asarray(np.float32(2.5))  # a NumPy scalar: a 0-d buffer
    assert s.shape == () and s.dtype == np.float32 and float(s.get()) == 2.5


def test_asarray_of_a_readonly_array_is_a_readonly_view():
    x = np.arange(3.0)
    x.flags.writeable = False
    a = ap.asarray(x)
    assert a.readonly and a.ptr == ptr_of(x)
    c = ap.asarray(x, copy=True)
    assert not c.readonly and c.get().tolist() == [0.0, 1.0, 2.0]


# ---- asarray: copies -------------------------------------------------------------------------------

def test_asarray_copy_true_always_copies():
    x = np.arange(12, dtype=np.int16).reshape(3, 4)[:, ::-1]
    c = ap.asarray(x, copy=True)
    assert c.ptr != ptr_of(x) and c.c_contiguous and c.memory == "host"
    assert np.array_equal(c.get(), x)
    x[0, 0] = 99
    assert c.get()[0, 0] == 3, "the copy is independent of its source"
    a = ap.asarray(x)
    c2 = ap.asarray(a, copy=True)
    assert c2 is not a and c2.ptr != a.ptr and np.array_equal(c2.get(), x)


@pytest.mark.parametrize("dtype, expected", [
    ("float32", np.float32), ("int32", np.int32), (np.complex64, np.complex64), (bool, np.bool_),
    ("u1", np.uint8), (float, np.float64),
])
def test_asarray_with_another_dtype_converts_like_numpy(dtype, expected):
    x = np.array([[1.7, -2.2, 3.5], [250.0, 0.0, -0.5]])
    a = ap.asarray(x, dtype=dtype)
    assert a.dtype == np.dtype(expected)
    with np.errstate(all="ignore"):
        want = x.astype(expected)
    if np.dtype(expected) == np.float64:
        assert a.ptr == ptr_of(x), "float64 is the input's dtype: no copy"
    else:
        assert a.ptr != ptr_of(x) and a.memory == "host"
    assert np.array_equal(a.get(), want)


def test_asarray_into_another_memory_kind():
    x = np.arange(8.0)
    for memory in ("pinned", "managed"):
        a = ap.asarray(x, memory=memory)
        assert np.array_equal(a.get(), x)
        if HAS_GPU:
            assert a.memory == memory and a.ptr != ptr_of(x)
        else:  # without a GPU pinned and managed requests are host memory: nothing to move
            assert a.memory == "host" and a.ptr == ptr_of(x)
            assert ap.asarray(x, memory=memory, copy=False).ptr == ptr_of(x)
    h = ap.asarray(x, device="cpu")
    assert h.ptr == ptr_of(x)
    assert ap.asarray(x, device=("cpu", 0), copy=False).ptr == ptr_of(x)
    assert ap.asarray(x, device=(1, 0), copy=False).ptr == ptr_of(x)  # __dlpack_device__'s spelling


# ---- asarray: Python data and objects NumPy converts ------------------------------------------

@pytest.mark.parametrize("obj, dtype, values", [
    (3, "int64", 3),
    (2.5, "float64", 2.5),
    (True, "bool", True),
    (1 + 2j, "complex128", 1 + 2j),
    ([1, 2, 3], "int64", [1, 2, 3]),
    ([[1.5, 2], [3, 4]], "float64", [[1.5, 2.0], [3.0, 4.0]]),
    ((True, False), "bool", [True, False]),
    ([], "float64", []),
])
def test_asarray_of_python_data_builds_through_numpy_into_the_default_memory(obj, dtype, values):
    a = ap.asarray(obj)
    assert a.dtype == np.dtype(dtype) and a.memory == DEFAULT_MEMORY
    assert a.get().tolist() == values


def test_asarray_of_python_data_with_dtype_memory_and_device():
    a = ap.asarray([[1, 2], [3, 4]], dtype="float32", memory="host")
    assert a.dtype == np.float32 and a.memory == "host" and a.get().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    s = ap.asarray(7, dtype=np.int8)
    assert s.shape == () and s.dtype == np.int8 and int(s.get()) == 7
    assert ap.asarray([1.9, -1.9], "int32").get().tolist() == [1, -1]
    assert ap.asarray([1, 2], device=("cpu", 0)).memory == "host"
    with pytest.raises(OverflowError):  # NumPy checks Python ints against the dtype it builds
        ap.asarray([300], dtype="uint8")


def test_asarray_of_an_object_with_only_array_goes_through_numpy():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    a = ap.asarray(ArrayOnly(x))
    assert a.dtype == np.int32 and a.get().tolist() == x.tolist()
    assert a.ptr != ptr_of(x) and a.memory == DEFAULT_MEMORY
    with pytest.raises(ValueError, match="asarray: copy=False, but obj is a ArrayOnly, which needs a copy"):
        ap.asarray(ArrayOnly(x), copy=False)


# ---- asarray: copy=False and bad arguments ----------------------------------------------------

def test_copy_false_raises_value_error_naming_what_needs_the_copy():
    x = np.arange(4.0)
    with pytest.raises(ValueError, match=r"asarray: copy=False, but dtype float32 was asked for "
                                         r"and the input is float64, which needs a copy"):
        ap.asarray(x, dtype="float32", copy=False)
    with pytest.raises(ValueError, match=r"asarray: copy=False, but obj is a list"):
        ap.asarray([1.0, 2.0], copy=False)
    with pytest.raises(ValueError, match=r"obj is a float"):
        ap.asarray(1.0, copy=False)
    a = ap.asarray(x)
    with pytest.raises(ValueError, match=r"dtype int64 was asked for and the input is float64"):
        ap.asarray(a, dtype="int64", copy=False)


def test_copy_false_into_other_memory():
    x = np.arange(4.0)
    if HAS_GPU:
        with pytest.raises(ValueError, match=r"asarray: copy=False, but managed memory was asked "
                                             r"for and the input is in host memory, which needs a copy"):
            ap.asarray(x, memory="managed", copy=False)
        with pytest.raises(ValueError, match=r"device memory on device 0 was asked for"):
            ap.asarray(x, device=("cuda", 0), copy=False)
    else:
        with pytest.raises(ap.NoDeviceError, match="device memory needs a CUDA device"):
            ap.asarray(x, memory="device", copy=False)
        with pytest.raises(ap.NoDeviceError, match="device memory needs a CUDA device"):
            ap.asarray(x, device=0)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"copy": "yes"}, TypeError, r"asarray: copy: expected True, False or None, got 'yes'"),
    ({"device": ("gpu", 0)}, ValueError, r"asarray: device: expected a device type 'cpu', 'cuda'.*got 'gpu'"),
    ({"device": [0]}, TypeError, r"asarray: device: expected None, a device index \(int\), an arrayport\.cuda\.Device, 'cpu'"),
    ({"device": -1}, ValueError, r"asarray: device: expected a device index >= 0, got -1"),
    ({"device": ("cuda", 0), "memory": "host"}, ValueError,
     r"asarray: device \('cuda', 0\) is device memory, but memory='host' was given"),
    ({"memory": "gpu"}, ValueError, r"memory: expected one of 'device', 'managed', 'pinned', 'host', got 'gpu'"),
    ({"dtype": "float128"}, TypeError, r"asarray: dtype: .*float128"),
    ({"dtype": []}, TypeError, r"asarray: dtype: expected a dtype name"),
    ({"stream": "s"}, TypeError, r"stream: expected None"),
])
def test_bad_arguments_raise_naming_the_argument(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        ap.asarray(np.arange(3.0), **kwargs)


def test_non_arrays_raise_type_error():
    with pytest.raises(TypeError, match=r"asarray: obj: expected an array, a Python scalar or a "
                                        r"nested sequence of numbers, got object"):
        ap.asarray(object())
    with pytest.raises(TypeError, match=r"asarray: obj: .* got str"):
        ap.asarray("abc")


# ---- DLPack: asarray and from_dlpack ---------------------------------------------------------

def test_asarray_and_from_dlpack_of_a_dlpack_producer_are_zero_copy_and_delete_once():
    for make in (ap.asarray, ap.from_dlpack, lambda p: ap.from_dlpack(p, device=("cpu", 0), copy=False)):
        p = Producer(values=(1.0, 2.0, 3.0, 4.0))
        a = make(p)
        assert a.ptr == p.data and a.memory == "host" and a.base is p
        assert a.get().tolist() == [1.0, 2.0, 3.0, 4.0]
        a[0] = 10.0
        assert p.storage[0] == 10.0, "writes go to the producer's memory"
        assert p.deleted == 0, "the view keeps the tensor"
        del a
        gc.collect()
        assert (p.exported, p.deleted) == (1, 1)


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
def test_copies_of_a_dlpack_producer_delete_the_tensor_once_and_keep_the_values(versioned):
    p = Producer(values=(1.0, 2.0, 3.0, 4.0, 5.0, 6.0), shape=(2, 3), versioned=versioned)
    for a in (ap.from_dlpack(p, copy=True), ap.asarray(p, copy=True), ap.asarray(p, dtype="int32")):
        gc.collect()
        assert p.deleted == p.exported, "a copy does not hold the producer"
        assert a.ptr != p.data and a.get().tolist() == [[1, 2, 3], [4, 5, 6]]
    assert p.exported == 3


def test_from_dlpack_of_numpy_and_of_an_array():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    a = ap.from_dlpack(x)
    assert (a.ptr, a.shape, a.strides) == (ptr_of(x), x.shape, x.strides)
    assert np.array_equal(a.get(), x)
    assert ap.from_dlpack(DLPackOnly(x)).ptr == ptr_of(x)
    assert ap.from_dlpack(a) is a
    c = ap.from_dlpack(a, copy=True)
    assert c.ptr != a.ptr and np.array_equal(c.get(), x)
    assert ap.from_dlpack(x, device=a.device).ptr == ptr_of(x), "Array.device's spelling"
    assert ap.from_dlpack(x, device=x.__dlpack_device__()).ptr == ptr_of(x)


def test_from_dlpack_errors():
    with pytest.raises(TypeError, match=r"from_dlpack: x: expected an object with __dlpack__ and "
                                        r"__dlpack_device__, got list"):
        ap.from_dlpack([1, 2])
    with pytest.raises(TypeError, match=r"from_dlpack: copy: expected True, False or None"):
        ap.from_dlpack(np.arange(2.0), copy=1)
    with pytest.raises(ValueError, match=r"from_dlpack: device: expected a device type"):
        ap.from_dlpack(np.arange(2.0), device=("tpu", 0))
    x = np.arange(2.0)
    if HAS_GPU:  # the standard asks for BufferError where copy=False cannot be honoured
        with pytest.raises(BufferError, match=r"from_dlpack: copy=False, but device memory on "
                                              r"device 0 was asked for and the input is in host memory"):
            ap.from_dlpack(x, device=("cuda", 0), copy=False)
    else:
        with pytest.raises(ap.NoDeviceError):
            ap.from_dlpack(x, device=("cuda", 0))
    p = Producer(dtype=(2, 80, 1))
    with pytest.raises(TypeError, match="unsupported DLPack dtype"):
        ap.from_dlpack(p)
    gc.collect()
    assert (p.exported, p.deleted) == (1, 1)


# ---- __setitem__ from DLPack-only and buffer-refusing sources ---------------------------------

def test_setitem_from_a_dlpack_only_source():
    a = ap.zeros((3, 4), "float64", memory="host")
    p = Producer(values=(1.0, 2.0, 3.0, 4.0))
    a[1] = p                                                   # viewed, copied, released
    gc.collect()
    assert (p.exported, p.deleted) == (1, 1)
    a[::2] = DLPackOnly(np.arange(4.0)[::-1])                  # strided source, broadcast over rows
    a[:, 0] = DLPackOnly(np.array([7, 8, 9], np.int32))        # another dtype: converted like NumPy
    assert a.get().tolist() == [[7.0, 2.0, 1.0, 0.0], [8.0, 2.0, 3.0, 4.0], [9.0, 2.0, 1.0, 0.0]]


def test_setitem_from_a_dlpack_view_of_the_destination_copies_first():
    n = np.arange(10.0)
    a = ap.asarray(n.copy(), memory="host")
    a[1:] = DLPackOnly(np.asarray(a)[:-1])                     # overlaps: staged as NumPy does
    assert a.get().tolist() == [0.0] + n[:-1].tolist()


def test_setitem_from_an_object_whose_buffer_is_refused_takes_dlpack():
    class DeviceOnly(mmap.mmap):  # as CuPy: has the buffer protocol, refuses it for its memory
        producer = Producer(values=(5.0, 6.0))

        def __dlpack__(self, **kw):
            return self.producer.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.producer.__dlpack_device__()

    refusing = DeviceOnly(-1, 16)
    refusing.close()
    a = ap.zeros(2, "float64", memory="host")
    a[...] = refusing
    assert a.get().tolist() == [5.0, 6.0]
    closed = mmap.mmap(-1, 16)
    closed.close()
    with pytest.raises(ValueError, match="closed"):  # no other protocol: the exporter's own error
        a[...] = closed


def test_setitem_errors_name_the_protocols():
    a = ap.zeros(2)
    with pytest.raises(TypeError, match=r"value: expected a number, an arrayport.Array, an object with "
                                        r"the buffer protocol, __dlpack__ or __cuda_array_interface__, "
                                        r"or a sequence, got object"):
        a[...] = object()
    p = Producer(shape=(2, 2))  # 4 values into shape (2,)
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(2, 2\) into shape \(2,\)"):
        a[...] = p
    gc.collect()
    assert (p.exported, p.deleted) == (1, 1)


# ---- refcounts -------------------------------------------------------------------------------------

def test_refcounts_are_unchanged_after_many_calls():
    x = np.arange(8.0)
    d = DLPackOnly(x)
    a = ap.zeros(8)
    objects = [x, d, a]
    before = [sys.getrefcount(o) for o in objects]
    for _ in range(2000):
        ap.asarray(x)
        ap.asarray(x, dtype="float32")
        ap.asarray(x, copy=True)
        ap.asarray(d)
        ap.asarray(a)
        ap.from_dlpack(x)
        ap.from_dlpack(d, copy=True)
        a[...] = d
        try:
            ap.asarray(x, dtype="int8", copy=False)
        except ValueError:
            pass
    gc.collect()
    assert [sys.getrefcount(o) for o in objects] == before
    p = Producer()
    for _ in range(100):
        ap.asarray(p)
        ap.from_dlpack(p, copy=True)
        a[:4] = p
    gc.collect()
    assert p.exported == p.deleted == 300


# ---- GPU: the device libraries ---------------------------------------------------------------------

@needs_gpu
@needs_cupy
def test_cupy_asarray_and_from_dlpack_are_zero_copy():
    import cupy
    c = cupy.arange(24, dtype=cupy.float32).reshape(4, 6)
    for x in (c, c[::2, ::-1], c[1::2, 1::3], c.T):
        negative = any(s < 0 for s in x.strides)
        ways = [ap.asarray(x), ap.asarray(x, copy=False)]
        if negative:
            # CuPy exports negative strides through DLPack divided as unsigned numbers: from_dlpack
            # refuses them (asarray takes CuPy's CUDA array interface instead).
            with pytest.raises(ValueError, match=r"the stride of axis \d of shape \(.*\) is \d+ bytes "
                                                 r"\(\d+ elements of 4 bytes\), more than 2\^63-1"):
                ap.from_dlpack(x)
        else:
            ways += [ap.from_dlpack(x), ap.from_dlpack(x, device=("cuda", 0), copy=False)]
        for a in ways:
            assert (a.ptr, a.shape, a.strides, a.memory) == (x.data.ptr, x.shape, x.strides, "device")
            assert np.array_equal(a.get(), cupy.asnumpy(x))
    ap.asarray(c)[0, 0] = 100.0
    assert float(c[0, 0]) == 100.0, "writes reach CuPy's memory"


@needs_gpu
@needs_cupy
def test_cupy_copies_across_memory_and_dtype():
    import cupy
    c = cupy.arange(10, dtype=cupy.int32)
    h = ap.from_dlpack(c, device=("cpu", 0))
    assert h.memory == "host" and h.get().tolist() == list(range(10))
    m = ap.asarray(c, memory="managed")
    assert m.memory == "managed" and np.asarray(m).tolist() == list(range(10))
    s = ap.cuda.Stream()
    p = ap.asarray(c[::-2], memory="pinned", stream=s)  # the copy runs on s
    assert p.memory == "pinned" and p.get(stream=s).tolist() == list(range(9, -1, -2))
    f = ap.asarray(c, dtype="float64")
    assert f.memory == "device" and f.dtype == np.float64 and f.get().tolist() == [float(i) for i in range(10)]
    with pytest.raises(BufferError, match=r"from_dlpack: copy=False, but host memory was asked for "
                                          r"and the input is in device memory on device 0"):
        ap.from_dlpack(c, device="cpu", copy=False)
    with pytest.raises(ValueError, match=r"asarray: copy=False, but dtype float64 was asked for"):
        ap.asarray(c, dtype="float64", copy=False)


@needs_gpu
@needs_torch
def test_torch_asarray_and_from_dlpack_are_zero_copy():
    import torch
    t = torch.arange(24, dtype=torch.int64, device="cuda").reshape(4, 6)
    for x in (t, t.T, t[1:, ::2]):
        for a in (ap.asarray(x), ap.from_dlpack(x)):
            assert a.ptr == x.data_ptr() and a.memory == "device"
            assert a.strides == tuple(s * 8 for s in x.stride())
            assert np.array_equal(a.get(), x.cpu().numpy())
    cpu = torch.arange(5, dtype=torch.float32)
    h = ap.asarray(cpu)
    assert h.ptr == cpu.data_ptr() and h.memory == "host" and h.get().tolist() == cpu.tolist()


@needs_gpu
@needs_jax
def test_jax_asarray_and_from_dlpack_are_zero_copy():
    import jax
    import jax.numpy as jnp
    if jax.default_backend() != "gpu":
        pytest.skip("JAX has no GPU backend here")
    x = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    for a in (ap.asarray(x), ap.from_dlpack(x)):
        assert a.ptr == x.unsafe_buffer_pointer() and a.memory == "device"
        assert np.array_equal(a.get(), np.asarray(x))


@needs_gpu
def test_numba_asarray_is_zero_copy():
    cuda = pytest.importorskip("numba.cuda")
    d = cuda.to_device(np.arange(10, dtype=np.float64))
    a = ap.asarray(d)
    assert a.ptr == d.__cuda_array_interface__["data"][0] and a.memory == "device"
    assert a.get().tolist() == [float(i) for i in range(10)]


@needs_gpu
def test_asarray_of_python_data_and_numpy_onto_the_device():
    a = ap.asarray([[1, 2], [3, 4]], dtype="float32", device=("cuda", 0))
    assert a.memory == "device" and a.get().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    x = np.arange(6.0)
    d = ap.asarray(x, device=0)  # a device index alone: device memory for a host input
    assert d.memory == "device" and d.device == ("cuda", 0) and d.get().tolist() == x.tolist()
    assert ap.asarray(d, device=0, copy=False) is d
    m = ap.asarray(x, memory="managed", device=0)
    assert ap.asarray(m, device=0) is m, "a managed input stays managed on its device"
    assert ap.from_dlpack(m, device=("cuda_managed", 0), copy=False) is m


@needs_gpu
@needs_cupy
def test_setitem_from_cupy_sources():
    import cupy
    a = ap.zeros((4, 6), "float32", memory="device")
    c = cupy.arange(24, dtype=cupy.float32).reshape(4, 6)
    a[1:3] = c[1:3]
    a[3] = c[0, ::-1]                                # strided, negative
    a[0, ::2] = cupy.array([7, 8, 9], cupy.int32)    # converted
    expected = np.zeros((4, 6), np.float32)
    host = cupy.asnumpy(c)
    expected[1:3] = host[1:3]
    expected[3] = host[0, ::-1]
    expected[0, ::2] = [7, 8, 9]
    assert np.array_equal(a.get(), expected)
    h = ap.zeros(6, "float64", memory="host")
    h[...] = c[2]                                     # device source into host memory
    assert h.get().tolist() == host[2].astype(np.float64).tolist()
    before = sys.getrefcount(c)
    for _ in range(100):
        a[1:3] = c[1:3]
    gc.collect()
    assert sys.getrefcount(c) == before


@needs_gpu
@needs_torch
def test_setitem_from_torch_is_ordered_after_the_producers_stream():
    import torch
    n = 1 << 24
    t = torch.zeros(n, device="cuda")
    torch.cuda.synchronize()
    producer = torch.cuda.Stream()
    with torch.cuda.stream(producer):
        torch.cuda._sleep(200_000_000)  # the producer is busy ...
        t.fill_(2.0)                     # ... and only then writes
        a = ap.zeros(n, "float32", memory="device")
        a[...] = t                       # exchange API: ordered after PyTorch's current stream
    assert float(a.get().sum()) == 2.0 * n
    small = torch.arange(6, dtype=torch.float64, device="cuda").reshape(2, 3)
    b = ap.zeros((3, 2), "float64", memory="device")
    b[...] = small.T
    assert b.get().tolist() == small.T.cpu().tolist()
    cpu = ap.zeros(3, "int64", memory="host")
    cpu[...] = torch.tensor([4, 5, 6])   # a CPU tensor: DLPack, host memory
    assert cpu.get().tolist() == [4, 5, 6]
