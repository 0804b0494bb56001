"""Layouts at the int64 limits, through every way a shape enters arrayport (reshape, indexing,
the buffer protocol, DLPack capsules, __cuda_array_interface__) and every way one leaves (size,
nbytes, memoryview, DLPack, copy), against a big-int reference of count, nbytes, strides and span
(include/arrayport/layout.hpp). A layout past int64 is a ValueError naming the exact number; an
addressable one is taken with the reference's size and nbytes (size * itemsize, as NumPy's, also
for zero strides)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arrayport as ap
from dlpack_ctypes import Producer, exchange_type

MAX = 2**63 - 1
EDGES = [0, 1, 2, 3, 2**31 - 1, 2**31, 2**31 + 1, 2**62 - 1, 2**62, 2**62 + 1, MAX]
STRIDES = [0, 1, -1, 2, -3, 2**31, -(2**31), 2**62, -(2**62), MAX, -MAX - 1]
BASE = 2**40  # a fake data address far from both ends of the address space: nothing is read


def tuple_str(values):
    return "(" + ", ".join(map(str, values)) + ("," if len(values) == 1 else "") + ")"


def reference(shape, strides, itemsize, unit, base=BASE):
    """The message layout.hpp gives (without the 'what: ' prefix), or the measures when the layout
    is addressable. `strides` in units of `unit` bytes (itemsize: elements, 1: bytes), None:
    compact."""
    if any(n < 0 for n in shape):
        return "expected non-negative extents, got shape " + tuple_str(shape)
    count = 0 if 0 in shape else int(np.prod([int(n) for n in shape], dtype=object))
    if count > MAX:
        return f"shape {tuple_str(shape)} has {count} elements, more than 2^63-1"
    if count * itemsize > MAX:
        return (f"shape {tuple_str(shape)} has {count} elements of {itemsize} bytes, "
                f"{count * itemsize} bytes in all (nbytes), more than 2^63-1")
    if strides is None:
        return {"count": count, "nbytes": count * itemsize, "lo": 0, "hi": count * itemsize}
    for axis, s in enumerate(strides):
        if not -MAX - 1 <= s * unit <= MAX:
            return (f"the stride of axis {axis} of shape {tuple_str(shape)} is {s * unit} bytes "
                    f"({s} elements of {itemsize} bytes), more than 2^63-1")
    if count == 0:
        return {"count": 0, "nbytes": 0, "lo": 0, "hi": 0}
    lo = sum((n - 1) * s * unit for n, s in zip(shape, strides) if s < 0)
    hi = sum((n - 1) * s * unit for n, s in zip(shape, strides) if s > 0) + itemsize
    if hi - lo > MAX:
        return (f"shape {tuple_str(shape)} with byte strides "
                f"{tuple_str([s * unit for s in strides])} spans {hi - lo} bytes, more than 2^63-1")
    if base + lo < 0 or base + hi > 2**64 - 1:
        return "past the ends of the address space"
    return {"count": count, "nbytes": count * itemsize, "lo": lo, "hi": hi}


def check(make, shape, strides, itemsize, unit):
    """ap.view(make()) against the reference."""
    want = reference(shape, strides, itemsize, unit)
    if isinstance(want, str):
        with pytest.raises(ValueError) as info:
            ap.view(make())
        assert want in str(info.value)
        assert str(info.value).startswith("obj: ")
        return
    v = ap.view(make())  # at a fake address: never printed (repr reads the first elements)
    got = (v.shape, v.size, v.nbytes, v.itemsize)
    assert got == (tuple(shape), want["count"], want["nbytes"], itemsize)
    if strides is not None and want["count"]:
        got_strides = v.strides
        assert got_strides == tuple(s * unit for s in strides)


# ---- import protocols ------------------------------------------------------------------------------

DL_DTYPES = {1: (1, 8, 1), 2: (0, 16, 1), 4: (2, 32, 1), 8: (2, 64, 1), 16: (5, 128, 1)}
TYPESTRS = {1: "|u1", 2: "<i2", 4: "<f4", 8: "<f8", 16: "<c16"}


class CAI:
    def __init__(self, shape, strides, itemsize):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": TYPESTRS[itemsize],
                                         "data": (BASE, False), "version": 3,
                                         "strides": None if strides is None else tuple(strides)}


def dlpack(shape, strides, itemsize):
    return Producer(shape=tuple(shape) or (1,), ndim=len(shape),
                    strides=None if strides is None else tuple(strides),
                    dtype=DL_DTYPES[itemsize], data=BASE, device=(1, 0))


ONE_AXIS = [((n,), None if s is None else (s,)) for n in EDGES for s in [None] + STRIDES]
TWO_AXES = [((a, b), s) for a in EDGES[::2] for b in EDGES[1::2]
            for s in [None, (0, 0), (1, 0), (0, -1), (2**31, 1), (-(2**62), 2**31)]]


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("shape, strides", ONE_AXIS + TWO_AXES)
def test_dlpack_capsule_layouts_match_the_reference(shape, strides, itemsize):
    check(lambda: dlpack(shape, strides, itemsize), shape, strides, itemsize, itemsize)


@pytest.mark.parametrize("itemsize", [1, 8, 16])
@pytest.mark.parametrize("shape, strides", ONE_AXIS + TWO_AXES)
def test_cuda_array_interface_layouts_match_the_reference(shape, strides, itemsize):
    # CAI strides are bytes: a multiple of the itemsize, as the protocol requires
    strides = None if strides is None else [s - s % itemsize for s in strides]
    check(lambda: CAI(shape, strides, itemsize), shape, strides, itemsize, 1)


EXCHANGE = exchange_type()


@pytest.mark.parametrize("itemsize", [1, 8, 16])
@pytest.mark.parametrize("shape, strides", ONE_AXIS + TWO_AXES)
def test_dlpack_exchange_api_layouts_match_the_reference(shape, strides, itemsize):
    # PyTorch's path: the C exchange API's owned tensor (view), its borrowed one (an op's operand)
    def make():
        return EXCHANGE(shape=tuple(shape) or (1,), ndim=len(shape), data=BASE, device=(1, 0),
                        strides=None if strides is None else tuple(strides),
                        dtype=DL_DTYPES[itemsize])

    kept = []
    check(lambda: kept.append(make()) or kept[-1], shape, strides, itemsize, itemsize)
    assert (kept[0].p.exported, kept[0].p.deleted) == (1, 1)  # given back once, taken or not
    want = reference(shape, strides, itemsize, itemsize)
    if isinstance(want, str):  # refused before any element is read
        with pytest.raises(ValueError) as info:
            ap.ops.sum(make())
        assert str(info.value).startswith("sum: argument 'x': ") and want in str(info.value)


def test_the_issue_19_zero_stride_view_past_2_63_bytes_is_refused_by_every_protocol():
    # torch.zeros(1, dtype=torch.float64).expand(2**61): 2^61 elements, 2^64 bytes of nbytes
    message = ("obj: shape (2305843009213693952,) has 2305843009213693952 elements of 8 bytes, "
               "18446744073709551616 bytes in all (nbytes), more than 2^63-1")
    for make in (lambda: dlpack((2**61,), (0,), 8), lambda: CAI((2**61,), (0,), 8),
                 lambda: EXCHANGE(shape=(2**61,), strides=(0,), data=BASE)):
        with pytest.raises(ValueError, match=re.escape(message)):
            ap.view(make())


def test_the_issue_19_zero_stride_buffer_that_memoryview_sizes_as_0_bytes_is_refused():
    testbuffer = pytest.importorskip("_testbuffer")
    x = testbuffer.ndarray([0.0], shape=[2**61], strides=[0], format="d")
    assert memoryview(x).nbytes == 0  # CPython's own product wraps: the size issue 19 reported
    with pytest.raises(ValueError, match=re.escape(
            "obj: shape (2305843009213693952,) has 2305843009213693952 elements of 8 bytes, "
            "18446744073709551616 bytes in all (nbytes), more than 2^63-1 (from ndarray)")):
        ap.view(x)
    with pytest.raises(ValueError, match=re.escape("value: shape (2305843009213693952,) has")):
        ap.zeros(3)[:] = x  # the copy path's own import of a buffer


@given(st.lists(st.tuples(st.one_of(st.integers(0, 5), st.sampled_from(EDGES)),
                          st.one_of(st.integers(-20, 20), st.sampled_from(STRIDES))),
                min_size=0, max_size=4),
       st.sampled_from([1, 2, 4, 8, 16]), st.booleans())
@settings(max_examples=400, deadline=None)
def test_random_layouts_match_the_big_int_reference(axes, itemsize, compact):
    shape = [n for n, _ in axes]
    strides = None if compact else [s for _, s in axes]
    check(lambda: dlpack(shape, strides, itemsize), shape, strides, itemsize, itemsize)
    byte_strides = None if strides is None else [s * itemsize for s in strides]
    if byte_strides is None or all(-MAX - 1 <= s <= MAX for s in byte_strides):
        check(lambda: CAI(shape, byte_strides, itemsize), shape, byte_strides, itemsize, 1)


def test_negative_strides_past_address_zero_are_refused():
    # 3 elements 2^41 bytes apart backwards from 2^40: the lowest byte would be below address 0
    with pytest.raises(ValueError, match=r"past the ends of the address space"):
        ap.view(CAI((3,), (-(2**41),), 8))
    assert ap.view(CAI((3,), (-(2**38),), 8)).strides == (-(2**38),)


FORMATS = {1: "B", 2: "h", 4: "f", 8: "d"}


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
@pytest.mark.parametrize("shape, strides", [(shape, strides) for shape, strides in ONE_AXIS + TWO_AXES
                                            if strides is not None and min(strides) >= 0])
def test_buffer_protocol_layouts_match_the_reference(shape, strides, itemsize):
    # CPython's own test exporter hands out any shape and strides over one item (its memoryview
    # then reports nbytes 0 for 2^61 doubles at stride 0: the wrapped size of issue 19).
    testbuffer = pytest.importorskip("_testbuffer")
    strides = [s - s % itemsize for s in strides]  # bytes, whole items
    try:
        x = testbuffer.ndarray([0], shape=list(shape), strides=strides, format=FORMATS[itemsize])
    except ValueError:  # "invalid combination of buffer, shape and strides": reaches past its item
        pytest.skip("_testbuffer cannot export this layout over one item")
    check(lambda: x, shape, strides, itemsize, 1)


@pytest.mark.parametrize("shape", [(2**62,), (2**31, 2**31), (2**31 + 1, 2**31 - 1), (2**62 - 1, 1)])
def test_buffer_protocol_broadcasts_near_the_limit_keep_size_and_nbytes(shape):
    x = np.broadcast_to(np.uint8(7), shape)
    for obj in (memoryview(x), x):
        v = ap.view(obj)
        assert (v.shape, v.strides, v.size, v.nbytes) == (shape, (0,) * len(shape), x.size, x.nbytes)
        m = memoryview(v)
        assert (m.shape, m.strides, m.nbytes) == (shape, (0,) * len(shape), x.nbytes)
        back = np.from_dlpack(v)  # DLPack export
        assert (back.shape, back.strides, back.nbytes) == (shape, x.strides, x.nbytes)
        assert int(v[tuple(n - 1 for n in shape)].get()) == 7


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_buffer_protocol_zero_strides_of_wider_items(dtype):
    itemsize = np.dtype(dtype).itemsize
    n = 2**62 // itemsize
    v = ap.view(memoryview(np.broadcast_to(dtype(2.5), (n,))))
    assert (v.size, v.nbytes, memoryview(v).nbytes) == (n, 2**62, 2**62)
    # one step further is 2^63 bytes: NumPy refuses to make it, as arrayport refuses to take it
    with pytest.raises(ValueError, match="array is too big"):
        np.broadcast_to(dtype(2.5), (2 * n,))
    with pytest.raises(ValueError, match=re.escape(
            f"{2 * n} elements of {itemsize} bytes, {2**63} bytes in all (nbytes), more than 2^63-1")):
        ap.view(dlpack((2 * n,), (0,), itemsize))


# ---- reshape -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("a", EDGES[1:])
@pytest.mark.parametrize("b", [1, 2, 4, 2**31, 2**62 + 1])
def test_reshape_extents_whose_product_passes_int64_are_refused(a, b):
    x = ap.zeros(4)
    product = a * b
    if product == 4:
        assert x.reshape(a, b).shape == (a, b)
    elif product > MAX:
        with pytest.raises(ValueError, match=re.escape(
                f"reshape: shape ({a}, {b}) has {product} elements, more than 2^63-1")):
            x.reshape(a, b)
        with pytest.raises(ValueError, match=re.escape(
                f"reshape: the extents of shape (-1, {a}, {b}) other than -1 have {product} "
                "elements, more than 2^63-1")):
            x.reshape(-1, a, b)
    else:
        with pytest.raises(ValueError, match=f"cannot reshape an array of size 4 into a shape of "
                                             f"size {product}$"):
            x.reshape(a, b)
    assert x.shape == (4,) and x.size == 4  # the array is unchanged


def test_reshape_of_the_issue_19_shape_is_refused_not_written_through():
    with pytest.raises(ValueError, match=re.escape(
            "reshape: shape (4611686018427387905, 4) has 18446744073709551620 elements, "
            "more than 2^63-1")):
        ap.zeros(4).reshape(2**62 + 1, 4)


@pytest.mark.parametrize("extent", [2**63, 2**64 + 1, -(2**63) - 1])
def test_reshape_extent_outside_int64_is_a_value_error(extent):
    with pytest.raises(ValueError, match=f"^reshape: shape: expected ints that fit int64, got {extent}$"):
        ap.zeros(4).reshape(4, extent)


def test_reshape_of_an_empty_array_into_huge_extents_is_empty():
    v = ap.zeros((0, 4)).reshape(2**62, 0, 4)
    assert (v.shape, v.size, v.nbytes) == ((2**62, 0, 4), 0, 0)


# ---- indexing ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2**31 - 1, 2**31 + 1, 2**62 - 1, 2**62])
def test_indexing_a_huge_broadcast_view(n):
    x = np.broadcast_to(np.uint8(9), (n, 1))
    v = ap.view(x)
    for key, shape in [((n - 1,), (1,)), ((-n, 0), ()), ((slice(None, None, 2**30),), (-(-n // 2**30), 1)),
                       ((slice(None, None, -1),), (n, 1)), ((None, Ellipsis), (1, n, 1)),
                       ((slice(n - 2, None),), (2, 1))]:
        s = v[key]
        assert s.shape == shape and s.size == int(np.prod(shape, dtype=object))
        assert s.nbytes == s.size and s.ptr == v.ptr
        first = s[(0,) * len(shape)] if shape else s  # one element: the view spans a byte
        assert int(first.get()) == 9
    with pytest.raises(IndexError, match=f"index {n} is out of bounds for axis 0 with size {n}"):
        v[n]


def test_slicing_with_a_huge_step_keeps_strides_in_int64():
    v = ap.view(np.broadcast_to(np.uint16(1), (2**62 - 1,)))
    s = v[:: 2**61]
    assert (s.shape, s.strides, s.nbytes) == ((2,), (0,), 4)
    t = ap.view(np.arange(4, dtype=np.uint16))[:: 2**62]  # stride * step * itemsize > 2^63
    assert (t.shape, t.strides, int(t[0].get())) == ((1,), (2,), 0)


# ---- copy ------------------------------------------------------------------------------------------------

def test_copy_allocates_size_times_itemsize_never_the_span():
    x = np.broadcast_to(np.float64(3.0), (1000, 1000))  # spans 8 bytes, nbytes 8,000,000
    c = ap.view(x).copy()
    assert (c.nbytes, c.strides, c.c_contiguous) == (8_000_000, (8000, 8), True)
    np.testing.assert_array_equal(c.get(), x)


@pytest.mark.parametrize("dtype, itemsize", [("uint16", 2), ("float64", 8), ("complex128", 16)])
def test_copy_to_a_wider_dtype_past_2_63_bytes_is_refused(dtype, itemsize):
    n = 2**62
    v = ap.view(np.broadcast_to(np.uint8(1), (n,)))
    with pytest.raises(ValueError, match=re.escape(
            f"copy: shape ({n},) has {n} elements of {itemsize} bytes, {n * itemsize} bytes in all "
            "(nbytes), more than 2^63-1")):
        v.copy(dtype=dtype)


def test_copy_of_a_huge_broadcast_asks_for_its_nbytes():
    v = ap.view(np.broadcast_to(np.uint8(1), (2**62,)))
    with pytest.raises(MemoryError):
        v.copy()  # 2^62 bytes: more than any machine has, but a real size
