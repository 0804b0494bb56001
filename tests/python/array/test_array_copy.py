"""Copies of arrayport.Array: copy, copy_to, to, get, fill, __setitem__ (broadcasting, conversion,
overlap), view(dtype), repr, arrayport.copy / to_gpu, prefetch/advise; every result checked against
NumPy, across memory kinds and strided layouts; bad input; refcounts."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import arrayport as ap
from conftest import HAS_GPU, needs_gpu, needs_torch, whole_device
from test_views import random_key

# Without a GPU, pinned and managed requests give host memory: the pairs still run, as host copies.
MEMORIES = ["host", "pinned", "managed"] + (["device"] if HAS_GPU else [])
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


def values(shape, dtype, seed=0) -> np.ndarray:
    """Distinct-ish values of `dtype` (so that a misplaced element shows)."""
    rng = np.random.default_rng(seed)
    n = rng.integers(0, 100, size=shape)
    if np.dtype(dtype).kind == "c":
        return (n + 1j * rng.integers(0, 100, size=shape)).astype(dtype)
    return n.astype(dtype) if np.dtype(dtype).kind != "b" else (n % 2).astype(dtype)


def make(n: np.ndarray, memory: str) -> ap.Array:
    """An Array in `memory` holding n's values (set through __setitem__, which works for every kind)."""
    a = ap.empty(n.shape, n.dtype, memory=memory)
    a[...] = n
    return a


# Layouts of a (4, 6) base: the views the copies read from and write into.
LAYOUTS = {
    "contiguous": lambda x: x,
    "negative-steps": lambda x: x[::-1, ::-2],
    "transposed": lambda x: x.T,
    "strided-rows": lambda x: x[1::2, 1:5],
    "reversed-transposed": lambda x: x[::-1].T[::2],
}


# ---- copies between memory kinds and layouts -------------------------------------------------

@pytest.mark.parametrize("src_memory", MEMORIES)
@pytest.mark.parametrize("dst_memory", MEMORIES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_copy_to_between_memory_kinds_and_layouts_matches_numpy(src_memory, dst_memory, layout):
    view = LAYOUTS[layout]
    n = values((4, 6), "float32", seed=1)
    src = view(make(n, src_memory))
    expected = view(n)
    # into a C-contiguous destination, and into a transposed (Fortran-order) one
    for dst in (ap.zeros(expected.shape, "float32", memory=dst_memory),
                ap.zeros(expected.shape[::-1], "float32", memory=dst_memory).T):
        src.copy_to(dst)
        assert np.array_equal(dst.get(), expected)
    assert np.array_equal(src.get(), expected), "the source is unchanged"


@pytest.mark.parametrize("src_memory", MEMORIES)
@pytest.mark.parametrize("dst_memory", MEMORIES)
def test_to_moves_between_memory_kinds_and_gives_c_contiguous_copies(src_memory, dst_memory):
    n = values((3, 5, 2), "int16", seed=2)
    a = make(n, src_memory)[:, ::-1]
    b = a.to(memory=dst_memory)
    assert b.shape == a.shape and b.dtype == a.dtype
    assert np.array_equal(b.get(), n[:, ::-1])
    if ap.empty(1, memory=dst_memory).memory == a.memory:  # pinned/managed are host without a GPU
        assert b is a, "nothing to move: the array itself"
    else:
        assert b is not a and b.c_contiguous and b.memory == dst_memory
    c = a.to(memory=dst_memory, copy=True)
    assert c is not a and c.c_contiguous and np.array_equal(c.get(), n[:, ::-1])


def test_to_returns_self_when_nothing_changes_unless_copy_is_asked():
    a = ap.zeros((2, 3), "float32", memory="host")
    assert a.to() is a
    assert a.to(memory="host") is a
    assert a.to(dtype="float32") is a
    c = a.to(memory="host", copy=True)
    assert c is not a and c.ptr != a.ptr and np.array_equal(c.get(), a.get())
    d = a.to(dtype="float64")
    assert d.dtype == np.float64 and np.array_equal(d.get(), np.zeros((2, 3)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_copy_of_every_dtype_and_layout_matches_numpy(dtype):
    n = values((5, 7), dtype, seed=3)
    a = make(n, "host")
    for layout, view in LAYOUTS.items():
        c = view(a).copy()
        assert c.c_contiguous and c.dtype == np.dtype(dtype) and c.base is None, layout
        assert np.array_equal(c.get(), view(n)), layout
        assert np.array_equal(ap.copy(view(a)).get(), view(n)), layout


def test_bfloat16_copies_bytes_exactly():
    bits = np.arange(24, dtype=np.uint16).reshape(4, 6)
    a = make(bits, "host").view("bfloat16")
    c = a[::-1, 1::2].copy()
    assert c.dtype == a.dtype
    assert np.array_equal(c.view("uint16").get(), bits[::-1, 1::2])


def test_copy_with_dtype_converts_like_numpy_astype():
    n = np.array([[1.7, -2.2, 3.5], [250.0, 0.0, -0.5]])
    a = make(n, "host")
    for dtype in ["int32", "float32", "complex64", "bool", "uint8"]:
        with np.errstate(all="ignore"):
            expected = n.T.astype(dtype)
        assert np.array_equal(a.T.copy(dtype=dtype).get(), expected), dtype
        assert np.array_equal(ap.copy(a.T, dtype=dtype).get(), expected), dtype


def test_zero_size_and_zero_d_copies():
    z = ap.zeros((0, 3), "float32")
    assert z.copy().shape == (0, 3) and z.T.copy().shape == (3, 0)
    z.copy_to(ap.empty((0, 3), "float32"))
    s = ap.full((), 2.5, "float64")
    assert s.copy().get()[()] == 2.5
    t = ap.empty((), "float64")
    s.copy_to(t)
    assert t.get()[()] == 2.5
    assert s[()].get()[()] == 2.5


def test_misaligned_and_odd_sized_copies_move_every_byte():
    # int8 views at odd offsets (the copy picks narrower words) and lengths that are no multiple of 16
    n = np.arange(1000, dtype=np.int8).reshape(40, 25)
    a = make(n, "host")
    for key in [(slice(1, None), slice(3, 24)), (slice(None, None, 3), slice(1, None, 2)), (5, slice(None, None, -1))]:
        assert np.array_equal(a[key].copy().get(), n[key])
    c128 = make(values((6, 4), "complex128"), "host")
    assert np.array_equal(c128[1:, ::3].copy().get(), c128.get()[1:, ::3])


def test_random_strided_copies_match_numpy():
    rng = np.random.default_rng(20261123)
    for _ in range(200):
        shape = tuple(int(x) for x in rng.integers(1, 6, size=int(rng.integers(1, 5))))
        dtype = str(rng.choice(["int8", "int16", "float32", "float64", "complex128"]))
        n = values(shape, dtype, seed=int(rng.integers(1 << 30)))
        a = make(n, "host")
        key = random_key(rng, shape)
        expected = n[key]
        view = a[key]
        assert np.array_equal(view.get(), expected), key
        assert np.array_equal(view.copy().get(), expected), key
        # into a destination of the same shape but another layout: a reversed view of a fresh array
        dst = ap.zeros(expected.shape, dtype)
        rev = dst[(slice(None, None, -1),) * dst.ndim] if dst.ndim else dst
        view.copy_to(rev)
        assert np.array_equal(rev.get(), expected), key


def test_get_of_non_contiguous_arrays():
    n = values((6, 8), "int64")
    a = make(n, "host")
    for key in [(slice(None, None, -1),), (slice(None), slice(None, None, 3)), (Ellipsis, 2)]:
        g = a[key].get()
        assert isinstance(g, np.ndarray) and g.flags.c_contiguous
        assert np.array_equal(g, n[key])
    assert np.array_equal(a.T.get(), n.T)


# ---- fill and __setitem__ ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_fill_works_on_any_strided_view(dtype):
    n = np.zeros((5, 6), dtype)
    a = make(n, "host")
    a[1::2, ::-2].fill(1)
    n[1::2, ::-2] = 1
    a.T[::3].fill(True)
    n.T[::3] = True
    assert np.array_equal(a.get(), n)


def random_broadcastable_shape(rng, shape):
    """A shape that broadcasts to `shape`: trailing axes kept or set to 1, leading ones dropped or
    (when all are kept) extra leading 1s added."""
    out = [1 if rng.random() < 0.3 else n for n in shape]
    drop = int(rng.integers(0, len(out) + 1))
    out = out[drop:]
    if drop == 0 and rng.random() < 0.2:
        out = [1] + out
    return tuple(out)


def test_setitem_broadcasting_matches_numpy_on_random_shapes_and_keys():
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(300):
        shape = tuple(int(x) for x in rng.integers(1, 6, size=int(rng.integers(1, 5))))
        n = values(shape, "float64", seed=int(rng.integers(1 << 30)))
        a = make(n, "host")
        key = random_key(rng, shape)
        target = np.asarray(n[key])
        # (NumPy refuses a sequence for a single element, n[0, 0] = [1.0]; arrayport takes it)
        vshape = random_broadcastable_shape(rng, target.shape) if target.ndim else ()
        v = values(vshape, "float64", seed=int(rng.integers(1 << 30))) + 1000
        kind = rng.integers(0, 3)
        value = v if kind == 0 else (make(v, "host") if kind == 1 else float(v.flat[0]) if v.size else 0.0)
        n[key] = v if kind < 2 else value
        a[key] = value
        assert np.array_equal(a.get(), n), (shape, key, vshape, kind)
        checked += 1
    assert checked == 300


def test_setitem_converts_values_like_numpy():
    a = make(np.zeros((2, 3), "int32"), "host")
    a[0] = np.array([1.9, -2.9, 3.1])          # float64 buffer into int32: truncated
    a[1, ::-1] = [7, 8, 9]                      # a list
    assert a.get().tolist() == [[1, -2, 3], [9, 8, 7]]
    a[:, 1] = np.float32(5.5)                   # a NumPy scalar (buffer protocol, 0-d)
    a[1, 2] = np.int64(-4)
    assert a.get().tolist() == [[1, 5, 3], [9, 5, -4]]
    f = make(np.zeros(4, "float32"), "host")
    f[::2] = True
    f[1] = 2**40
    assert f.get().tolist() == [1.0, 2.0**40, 1.0, 0.0]
    c = make(np.zeros(2, "complex64"), "host")
    c[...] = 1 + 2j
    assert c.get().tolist() == [1 + 2j, 1 + 2j]
    d = make(np.zeros(3, "float64"), "host")
    d[...] = make(np.array([1, 2, 3], "int16"), "host")   # an Array of another dtype
    assert d.get().tolist() == [1.0, 2.0, 3.0]


def test_setitem_with_overlapping_source_copies_first_like_numpy():
    n = np.arange(10, dtype=np.int64)
    a = make(n, "host")
    a[1:] = a[:-1]
    n[1:] = n[:-1].copy()
    assert a.get().tolist() == n.tolist()
    a[...] = a[::-1]
    n[...] = n[::-1].copy()
    assert a.get().tolist() == n.tolist()
    m = np.arange(16.0).reshape(4, 4)
    b = make(m, "host")
    b[...] = b.T
    assert np.array_equal(b.get(), m.T)
    b[...] = np.asarray(b)[::-1]             # overlap through a foreign (NumPy) view of the same memory
    assert np.array_equal(b.get(), m.T[::-1])
    b.T.copy_to(b)                           # copy_to with overlap
    assert np.array_equal(b.get(), m.T[::-1].T)


def test_setitem_on_views_writes_through_to_the_base():
    a = ap.zeros((3, 4), "int32")
    v = a[1:, ::2]
    v[...] = 5
    v[0, 1] = 6
    assert a.get().tolist() == [[0, 0, 0, 0], [5, 0, 6, 0], [5, 0, 5, 0]]


# ---- view(dtype) ---------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "shape, key, to",
    [((4, 6), (), "uint32"), ((4, 6), (), "int16"), ((4, 6), (), "uint8"), ((4, 6), (), "float64"),
     ((4, 8), (), "complex128"), ((4, 6), (slice(None, None, -1),), "int16"),
     ((4, 6), (slice(None), slice(0, 4)), "int64"), ((6, 4), (slice(None, None, 2),), "uint8"),
     ((4, 6), (Ellipsis, slice(None, None, -1)), "uint32"), ((2, 3, 4), (slice(None), 1), "int8"),
     ((4, 6), (slice(None), slice(0, 1)), "int16"), ((5,), (), "float32")],
)
def test_view_dtype_matches_numpy(shape, key, to):
    n = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    a = make(n, "host")
    expected = n[key].view(to)
    got = a[key].view(to)
    assert got.shape == expected.shape and got.strides == expected.strides and got.dtype == expected.dtype
    assert np.array_equal(np.asarray(got), expected) or np.isnan(expected).any()
    assert got.ptr == a[key].ptr and got.base is a


@pytest.mark.parametrize(
    "shape, key, to, message",
    [((4, 6), (slice(None), slice(None, None, 2)), "float64", "the last axis must be contiguous"),
     ((4, 6), (Ellipsis, slice(0, 3)), "float64", "12 bytes, not a multiple of the new itemsize"),
     ((), (), "int16", "a 0-d array can only be viewed as a dtype of the same itemsize")],
)
def test_view_dtype_errors_where_numpy_errors(shape, key, to, message):
    n = np.zeros(shape, np.float32)
    a = make(n, "host")
    with pytest.raises(ValueError):
        n[key].view(to)
    with pytest.raises(ValueError, match=message):
        a[key].view(to)


def test_view_dtype_needs_other_strides_in_whole_new_elements():
    # NumPy allows it (its strides are bytes); the view ABI counts strides in elements, so a row
    # stride of 12 bytes cannot be expressed in float64 elements.
    a = make(np.zeros((3, 3), np.float32), "host")
    with pytest.raises(ValueError, match=r"the stride of axis 0 \(12 bytes\) is not a multiple"):
        a[:, 0:2].view("float64")


def test_view_keeps_readonly_and_a_view_as_another_size_of_a_0d_array_of_the_same_size_works():
    r = ap._core._readonly_view(ap.zeros(4, "float32"))
    assert r.view("int32").readonly
    s = ap.full((), 1.0, "float32").view("uint32")
    assert s.shape == () and int(s.get()) == 0x3F800000


# ---- repr --------------------------------------------------------------------------------------

def test_repr_shows_leading_values_of_non_contiguous_views_in_c_order():
    n = np.arange(12, dtype=np.int16).reshape(3, 4)
    a = make(n, "host")
    r = repr(a.T)
    assert r.startswith("arrayport.Array([0, 4, 8, 1, 5, 9, ...], dtype=int16, shape=(4, 3)"), r
    assert repr(a[::-1, ::3]) .startswith("arrayport.Array([8, 11, 4, 7, 0, 3], dtype=int16, shape=(3, 2)")
    assert repr(a[1, ::-1]).startswith("arrayport.Array([7, 6, 5, 4], dtype=int16, shape=(4,)")
    assert "memory='host'" in r
    assert "readonly=True" in repr(ap._core._readonly_view(a))
    assert repr(ap.zeros((0, 2))).startswith("arrayport.Array([], dtype=float64, shape=(0, 2)")
    assert repr(ap.full((), 2.5)).startswith("arrayport.Array([2.5], dtype=float64, shape=()")


# ---- bad input -----------------------------------------------------------------------------------

def bad_calls():
    a = ap.zeros((2, 3), "float32")
    ro = ap._core._readonly_view(a)
    return [
        (lambda: a.copy_to(ap.zeros((3, 2), "float32")), ValueError,
         "copy_to: dst: expected shape (2, 3) (the source's), got (3, 2)"),
        (lambda: a.copy_to(ap.zeros((2, 3), "float64")), TypeError,
         "copy_to: dst: expected dtype float32 (the source's), got float64"),
        (lambda: a.copy_to(ro), ValueError, "read-only"),
        (lambda: a.copy_to(np.broadcast_to(np.zeros(3, "float32"), (2, 3))), ValueError,
         "copy_to: dst is read-only"),
        (lambda: a.copy_to(np.zeros((2, 3), "float32")[::-1].T), ValueError,
         "copy_to: dst: expected shape (2, 3) (the source's), got (3, 2)"),
        (lambda: a.copy_to([1, 2]), TypeError, "copy_to: dst: expected an arrayport.Array"),
        (lambda: ro.__setitem__(0, 1.0), ValueError, "assignment destination is read-only"),
        (lambda: ro.fill(1), ValueError, "read-only"),
        (lambda: a.__setitem__((slice(None),), np.zeros(4)), ValueError,
         "could not broadcast input array from shape (4,) into shape (2, 3)"),
        (lambda: a.__setitem__(0, np.zeros((2, 3))), ValueError,
         "could not broadcast input array from shape (2, 3) into shape (3,)"),
        (lambda: a.__setitem__(0, "x"), TypeError, "value: expected a number"),
        (lambda: a.__setitem__(0, object()), TypeError, "value: expected a number"),
        (lambda: a.__setitem__(5, 1.0), IndexError, "index 5 is out of bounds for axis 0 with size 2"),
        (lambda: a.__setitem__([0], 1.0), IndexError, "got list"),
        (lambda: a.__delitem__(0), ValueError, "cannot delete array elements"),
        (lambda: ap.zeros(2, "int8").__setitem__(0, 300), OverflowError, "300 is out of range for int8"),
        (lambda: ap.zeros(2, "int64").__setitem__(slice(None), 1e300), OverflowError,
         "value: 1e.300 is out of range for int64"),
        (lambda: ap.zeros(2, "int64").fill(-10**400), OverflowError,
         "value: -10000000000... (an integer of 401 digits) is out of range for int64"),
        (lambda: a.copy(memory="gpu"), ValueError, "memory: expected one of 'device', 'managed', 'pinned', 'host', got 'gpu'"),
        (lambda: a.copy(memory=3), TypeError, "memory: expected one of"),
        (lambda: a.to(memory="vram"), ValueError, "got 'vram'"),
        (lambda: a.copy(dtype="float128"), TypeError, "float128"),
        (lambda: a.copy(device=-1), ValueError, "copy: device: expected a device index >= 0, got -1"),
        (lambda: a.copy(device="0"), TypeError, "copy: device: expected None, an int or an arrayport.cuda.Device, got str"),
        (lambda: a.to(stream="s"), TypeError, "stream: expected None"),
        (lambda: a.view("float128"), TypeError, "float128"),
        (lambda: a.prefetch(), ValueError, "prefetch: needs managed memory, but this array is in"),
        (lambda: a.advise("set_read_mostly"), ValueError, "advise: needs managed memory"),
        (lambda: a.advise("read_lots"), ValueError, "advise: advice: expected one of 'set_read_mostly'"),
        (lambda: a.advise(1), TypeError, "advise: advice: expected one of"),
        (lambda: ap.copy([1, 2]), TypeError, "copy: a: expected an arrayport.Array or an object with the buffer protocol, got list"),
        (lambda: ap.to_gpu(3), TypeError, "to_gpu: a: expected a NumPy array"),
        (lambda: ap.copy(np.zeros(2, ">f4")), ValueError, "big-endian"),
        (lambda: a.view("bfloat16").get(), TypeError, "NumPy has no bfloat16"),
    ]


@pytest.mark.parametrize("index", range(len(bad_calls())))
def test_bad_input_raises_a_precise_exception(index):
    call, exc, message = bad_calls()[index]
    if not HAS_GPU and "managed memory" in message:
        pass  # without a GPU, managed requests are host memory: the message names 'host'
    elif HAS_GPU and message.startswith(("prefetch", "advise: needs")):
        pytest.skip("the default memory is managed with a GPU")
    base = ap._core._dlpack_live_exports()
    escaped = message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
    with pytest.raises(exc, match=escaped):
        call()
    assert ap._core._dlpack_live_exports() == base


def test_to_device_without_a_gpu_is_a_no_device_error():
    if HAS_GPU:
        pytest.skip("this machine has a GPU")
    a = ap.zeros(3)
    with pytest.raises(ap.NoDeviceError, match="device memory needs a CUDA device"):
        a.to(memory="device")
    with pytest.raises(ap.NoDeviceError, match="device memory needs a CUDA device"):
        ap.to_gpu(np.arange(3.0))
    with pytest.raises(ValueError, match="prefetch: needs managed memory, but this array is in host memory"):
        ap.zeros(3, memory="managed").prefetch()


# ---- refcounts and leaks -------------------------------------------------------------------------

def test_refcounts_are_unchanged_after_many_copies():
    a = make(np.arange(12.0).reshape(3, 4), "host")
    dst = ap.zeros((4, 3))
    n = np.arange(4.0)
    v = a[::-1]
    objects = [a, dst, n, v]
    before = [sys.getrefcount(o) for o in objects]
    for _ in range(2000):
        a.copy()
        a.T.copy_to(dst)
        v.get()
        a[1] = n
        a[0, ::2] = 3.0
        a[...] = v
        a.to(memory="host", copy=True)
        ap.copy(n)
        a.view("int64")
        repr(v)
        try:
            a.copy_to(ap.zeros(2))
        except ValueError:
            pass
        try:
            a[0] = "bad"
        except TypeError:
            pass
    gc.collect()
    assert [sys.getrefcount(o) for o in objects] == before


# ---- GPU: device memory, kernels, staging, streams, managed memory --------------------------

@needs_gpu
@pytest.mark.parametrize("layout", LAYOUTS)
def test_device_strided_copies_in_every_direction(layout):
    view = LAYOUTS[layout]
    n = values((64, 48), "float64", seed=5)
    expected = view(n)
    d = make(n, "device")
    assert d.memory == "device"
    assert np.array_equal(view(d).get(), expected)                       # device -> host (kernel pack)
    h = ap.zeros(expected.shape[::-1], "float64", memory="host").T
    view(d).copy_to(h)                                                    # device -> strided pageable host
    assert np.array_equal(h.get(), expected)
    dd = ap.zeros(expected.shape[::-1], "float64", memory="device").T
    view(d).copy_to(dd)                                                   # device -> device (kernel)
    assert np.array_equal(dd.get(), expected)
    back = ap.zeros((64, 48), "float64", memory="device")
    view(back)[...] = expected                                            # pageable host -> strided device
    assert np.array_equal(view(back).get(), expected)
    view(back).fill(-1.0)                                                 # strided device fill (kernel)
    n2 = np.zeros((64, 48))
    view(n2)[...] = -1.0
    assert np.array_equal(back.get(), n2)


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_device_copies_of_every_dtype(dtype):
    n = values((33, 17), dtype, seed=6)
    d = ap.to_gpu(n)
    assert d.memory == "device" and d.c_contiguous
    assert np.array_equal(d.get(), n)
    assert np.array_equal(d[::-2, 1::3].copy().get(), n[::-2, 1::3])
    assert np.array_equal(d.T.to(memory="host").get(), n.T)
    assert np.array_equal(ap.to_gpu(n.T[::2]).get(), n.T[::2])


@needs_gpu
def test_to_device_and_back_and_between_kinds():
    n = values((100, 30), "int32", seed=8)
    m = make(n, "managed")
    d = m.to(memory="device")
    assert d.memory == "device" and d.device == ("cuda", 0)
    p = d[:, ::2].to(memory="pinned")
    assert p.memory == "pinned" and np.array_equal(np.asarray(p), n[:, ::2])
    assert d.to(memory="device") is d


@needs_gpu
@whole_device
def test_large_strided_device_copy_uses_64_bit_offsets():
    d = ap.zeros((3, 1 << 29), "int8", memory="device")       # 1.5 GiB: offsets past 2**31
    d[2, -5:] = 7
    tail = d[:, ::-1][:, :5].copy()
    assert tail.get().tolist() == [[0] * 5, [0] * 5, [7] * 5]


@needs_gpu
@needs_torch
def test_copies_are_ordered_on_the_given_stream_without_device_sync():
    import torch
    s = ap.cuda.Stream()
    n = 1 << 24
    a = ap.zeros(n, "float32", memory="device")
    t = torch.from_dlpack(a.__dlpack__(stream=-1))
    producer = torch.cuda.Stream()
    with torch.cuda.stream(producer):
        torch.cuda._sleep(50_000_000)
        t.fill_(3.0)
    # a's stream is the legacy stream; make it wait for the producer, then copy on s
    ev = torch.cuda.Event()
    ev.record(producer)
    torch.cuda.current_stream().wait_event(ev)
    b = a[::2].copy(stream=s)
    assert b.get(stream=s).sum() == 3.0 * (n // 2)


@needs_gpu
def test_prefetch_and_advise_on_managed_memory():
    m = ap.ones((1 << 20,), "float32", memory="managed")
    m.prefetch()                       # to its device, on the current stream
    m.prefetch(device="cpu")
    m[::2].prefetch(device=0, stream=ap.cuda.Stream())
    m.advise("set_read_mostly")
    m.advise("set_preferred_location", device=0)
    m.advise("set_accessed_by", device="cpu")
    m.advise("unset_read_mostly")
    assert np.asarray(m).sum() == 1 << 20
    with pytest.raises(ValueError, match="prefetch: needs managed memory, but this array is in device memory"):
        ap.zeros(4, memory="device").prefetch()
    with pytest.raises(ValueError, match=r"^prefetch: device: expected a device index in \[0, \d+\) .*got 99$"):
        m.prefetch(device=99)


@needs_gpu
def test_repr_of_device_views_copies_only_the_leading_values():
    d = ap.to_gpu(np.arange(12, dtype=np.int32).reshape(3, 4))
    assert repr(d.T).startswith("arrayport.Array([0, 4, 8, 1, 5, 9, ...], dtype=int32, shape=(4, 3), memory='device', device=0")


# ---- __array__ ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bfloat16"])
@pytest.mark.parametrize("memory", ["host", "pinned", "managed"])
def test_array_dunder_of_host_accessible_memory_is_a_numpy_view(dtype, memory):
    x = values((3, 5), dtype)
    a = ap.asarray(x, memory=memory)
    v = a.__array__()
    np.testing.assert_array_equal(v, x)
    assert v.__array_interface__["data"][0] == a.ptr  # a view, not a copy
    c = a.__array__(copy=True)
    np.testing.assert_array_equal(c, x)
    assert c.__array_interface__["data"][0] != a.ptr
    other = "complex128" if dtype != "complex128" else "complex64"
    np.testing.assert_array_equal(a.__array__(other), x.astype(other))
    assert a.__array__(dtype, copy=False).__array_interface__["data"][0] == a.ptr
    with pytest.raises(ValueError, match=r"^Unable to avoid copy"):  # NumPy's own message
        a.__array__(other, copy=False)


@needs_gpu
@pytest.mark.parametrize("shape", [(), (4,), (3, 5)])
def test_numpy_refuses_device_memory_and_points_to_get(shape):
    # Formerly an object array holding the Array, and host[...] = a wrote its truth: silently wrong.
    a = ap.zeros(shape, "float32", memory="device")
    message = r"^__array__: this array is in device memory, which NumPy cannot read; copy it to the host with .get\(\)"
    for convert in (np.asarray, np.array, lambda v: np.asarray(v, dtype="float64")):
        with pytest.raises(TypeError, match=message):
            convert(a)
    host = np.ones(shape, "float32")
    with pytest.raises(TypeError, match=message):
        host[...] = a
    np.testing.assert_array_equal(host, np.ones(shape, "float32"))
