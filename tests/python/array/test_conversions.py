"""An Array as a Python number and as a NumPy array: int(), float(), complex(), bool(),
operator.index() and __array__ against NumPy's own answers (the installed NumPy's rules), over
every dtype and the shapes where the rules differ: (), (1,), (1, 1), (2,) and (0,)."""

from __future__ import annotations

import math
import operator
from typing import Any, Callable

import numpy as np
import pytest
from conftest import HAS_GPU, needs_gpu
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import arrayport as ap

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
SHAPES = [(), (1,), (1, 1), (2,), (0,)]
CONVERSIONS: list[Callable[[Any], Any]] = [int, float, complex, bool, operator.index]
# Memory the host reads: without a GPU, pinned and managed requests are host memory too.
HOST_KINDS = ["host", "pinned", "managed"]


def outcome(convert: Callable[[Any], Any], x: Any) -> tuple[str, Any]:
    try:
        return "value", convert(x)
    except Exception as e:  # the exception's type is what NumPy's rules decide
        return "raises", type(e)


def same_number(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, complex):
        return same_number(a.real, b.real) and same_number(a.imag, b.imag)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def arrays(dtype: str, shape: tuple[int, ...]):
    return hnp.arrays(np.dtype(dtype), shape)


@pytest.mark.parametrize("memory", HOST_KINDS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_conversions_to_python_numbers_match_numpy(dtype, shape, memory, data):
    n = data.draw(arrays(dtype, shape))
    a = ap.copy(n, memory=memory)
    for convert in CONVERSIONS:
        want, got = outcome(convert, n), outcome(convert, a)
        assert want[0] == got[0], (convert.__name__, n, want, got)
        if want[0] == "value":
            assert same_number(want[1], got[1]), (convert.__name__, n, want, got)
        else:
            assert got[1] is want[1], (convert.__name__, n, want, got)


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_a_strided_view_converts_its_own_element(dtype, data):
    n = data.draw(arrays(dtype, (5,)))
    a = ap.copy(n, memory="host")
    for i in range(5):  # a 0-d view and a (1,) view at an offset, as a[i] and a[i:i+1] give them
        # (n[i, ...]: a 0-d ndarray, whose rules these are; n[i] is a NumPy scalar, whose differ)
        for view, ref in ((a[i], n[i, ...]), (a[i:i + 1], n[i:i + 1]),
                          (a[::-1][4 - i], n[::-1][4 - i, ...])):
            for convert in (float, complex, bool):
                want, got = outcome(convert, ref), outcome(convert, view)
                assert want[0] == got[0] and (same_number(want[1], got[1]) if want[0] == "value"
                                              else got[1] is want[1]), (convert, ref, view)


@settings(max_examples=50, deadline=None)
@given(bits=st.integers(0, 2**16 - 1))
def test_bfloat16_converts_the_value_its_bits_hold(bits):
    a = ap.copy(np.array(bits, np.uint16), memory="host").view("bfloat16")
    value = float(np.array(bits << 16, np.uint32).view(np.float32))
    assert same_number(float(a), value)
    assert same_number(complex(a), complex(value))
    assert bool(a) == bool(value)
    if math.isfinite(value):
        assert int(a) == int(value)
    with pytest.raises(TypeError, match="only integer scalar arrays"):
        operator.index(a)


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_numpy_builds_an_array_from_a_list_of_0d_arrays(dtype, data):
    values = data.draw(arrays(dtype, (3,)))
    parts = [ap.copy(values[i, ...], memory="host") for i in range(3)]
    built = np.array(parts)
    assert built.dtype == values.dtype and built.shape == (3,)
    np.testing.assert_array_equal(built, values)
    np.testing.assert_array_equal(np.array([parts[0], 1]), np.array([values[0], 1]))


def test_numpy_builds_a_float_array_from_reductions():
    s = [ap.ops.sum(ap.ones(3)), ap.ops.sum(ap.full(2, 2.5))]
    built = np.array(s)
    assert built.dtype == np.float64
    assert built.tolist() == [3.0, 5.0]
    assert np.array([ap.full((), True, "bool"), ap.full((), False, "bool")]).tolist() == [True, False]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_array_protocol_copies_only_when_asked(dtype, shape):
    n = np.arange(math.prod(shape)).reshape(shape).astype(dtype)
    a = ap.copy(n, memory="host")
    view = a.__array__()
    np.testing.assert_array_equal(view, n)
    assert view.dtype == n.dtype and view.shape == shape
    if a.size:
        assert view.__array_interface__["data"][0] == a.ptr  # no copy
        assert a.__array__(copy=False).__array_interface__["data"][0] == a.ptr
        copied = a.__array__(copy=True)
        assert copied.__array_interface__["data"][0] != a.ptr
        np.testing.assert_array_equal(copied, n)
        assert np.shares_memory(np.asarray(a), view)
    # Another dtype of the same kind's reach (complex to real would warn, as NumPy does).
    other = {"float32": "float64", "complex64": "complex128", "complex128": "complex64"}.get(
        dtype, "float32")
    converted = a.__array__(other)
    assert converted.dtype == np.dtype(other)
    np.testing.assert_array_equal(converted, n.astype(other))
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        a.__array__(other, copy=False)


def test_array_protocol_keeps_read_only_data_read_only():
    a = ap._core._readonly_view(ap.zeros(3, memory="host"))
    assert not a.__array__().flags.writeable
    assert a.__array__(copy=True).flags.writeable


def test_array_protocol_refuses_bfloat16_and_a_bad_copy():
    with pytest.raises(TypeError, match="__array__: NumPy has no bfloat16 dtype"):
        ap.zeros(3, "bfloat16", memory="host").__array__()
    with pytest.raises(TypeError, match="__array__: copy: expected True, False or None, got str"):
        ap.zeros(3, memory="host").__array__(copy="no")


def test_an_integer_0d_array_indexes_as_numpy_allows():
    i = ap.full((), 2, "int64", memory="host")
    assert [10, 20, 30][i] == 30
    assert float(ap.copy(np.arange(4.0), memory="host")[i]) == 2.0
    with pytest.raises(IndexError, match="only integers"):
        ap.zeros(3, memory="host")[ap.full((), 1.0, memory="host")]


@needs_gpu
@pytest.mark.parametrize("convert", [int, float, complex, bool], ids=lambda f: f.__name__)
def test_device_memory_is_refused_saying_how_to_copy(convert):
    a = ap.zeros((), memory="device")
    with pytest.raises(TypeError, match=rf"^{convert.__name__}: this array is in device memory, "
                                        r"which the host cannot read; copy it to the host first "
                                        r"with \.get\(\)"):
        convert(a)
    with pytest.raises(TypeError, match=r"__array__: this array is in device memory.*\.get\(\)"):
        np.asarray(a)
    with pytest.raises(TypeError, match=r"__array__: this array is in device memory"):
        np.array([a, a])
    assert convert(a.get()) == convert(0)  # the copy it points to works


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_managed_memory_converts_after_device_work(dtype):
    a = ap.full((), 1, dtype, memory="managed")
    a.fill(1)  # queued on the array's stream: the conversion waits for it
    assert outcome(float, a) == outcome(float, np.ones((), dtype))
    assert bool(a) is True
    assert np.asarray(a).tolist() == np.ones((), dtype).tolist()


@pytest.mark.skipif(HAS_GPU, reason="the machine without a GPU")
def test_without_a_gpu_no_array_is_device_memory():
    for kind in HOST_KINDS:
        assert float(ap.zeros((), memory=kind)) == 0.0


@pytest.mark.parametrize("memory", ["host", "managed", "pinned"])
def test_asarray_converts_to_and_from_bfloat16_through_ops(memory):
    # NumPy has no bfloat16: asarray and from Python data convert with ops.astype, rounding to
    # nearest even as ops.astype does.
    values = [1.0, 2.5, -3.0, 1.00390625, 65504.0]
    b = ap.asarray(values, dtype="bfloat16", memory=memory)
    assert b.dtype == "bfloat16"
    want = np.asarray(ap.ops.astype(np.asarray(values, np.float32), "bfloat16").view("uint16"))
    assert np.array_equal(np.asarray(b.copy(memory="host").view("uint16")), want)
    back = ap.asarray(b, dtype="float32", memory="host")
    assert back.dtype == "float32"
    assert np.array_equal(np.asarray(back), np.asarray(ap.ops.astype(b, "float32").copy(memory="host")))
    with pytest.raises(TypeError, match=r"asarray: converting bfloat16 to int16: astype: dtype int16 is not supported"):
        ap.asarray(b, dtype="int16")
    with pytest.raises(ValueError, match="copy=False, but dtype float32 was asked for"):
        ap.asarray(b, dtype="float32", copy=False)


@pytest.mark.parametrize("call, what", [
    (lambda: ap.zeros(3, "bfloat16").to(dtype="float32"), "to"),
    (lambda: ap.zeros(3, "bfloat16").get(), "Array.get"),
    (lambda: ap.zeros(3).to(dtype="bfloat16"), "to"),
])
def test_the_numpy_paths_name_the_call_and_ops_astype_for_bfloat16(call, what):
    with pytest.raises(TypeError, match=rf"^{what}: .*bfloat16.*arrayport\.ops\.astype"):
        call()


def test_an_interface_property_that_raises_is_the_producers_error_in_asarray():
    class Failing:
        @property
        def __cuda_array_interface__(self):
            raise RuntimeError("the producer failed")

    with pytest.raises(RuntimeError, match="the producer failed"):
        ap.asarray(Failing())
