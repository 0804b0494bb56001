"""arrayport.ops errors (each names the argument; out= untouched), NEP 50 result dtypes (NumPy
scalars strong, Python scalars weak), and every producer through the consume bridge."""

from __future__ import annotations

import re

import numpy as np
import pytest

import arrayport as ap
from arrayport import ops
from conftest import HAS_GPU
from dlpack_ctypes import Producer
from ops_reference import BINARY, NUMPY_DTYPES, RTOL, rng_array, to_numpy


# ---- errors ---------------------------------------------------------------------------------------



def test_bridged_operands_are_named_after_their_op_and_argument_every_call():
    # A bridged operand's name comes from a table kept by the names' addresses: every op and
    # argument pair keeps its own, on the first call and the later ones, and out= its own.
    bad = np.zeros(3, "U3")  # taken by the bridge, refused for its buffer format
    good = np.zeros(3)
    for _ in range(2):
        for name in BINARY:
            for k, arg in enumerate(("x1", "x2")):
                args = [good, good]
                args[k] = bad
                with pytest.raises(TypeError, match=rf"^{name}: argument '{arg}': unsupported"):
                    getattr(ops, name)(*args)
            with pytest.raises(TypeError, match=rf"^{name}: argument 'out': unsupported"):
                getattr(ops, name)(good, good, out=bad)
        for name in ("sum", "max", "argmin", "any"):
            with pytest.raises(TypeError, match=rf"^{name}: argument 'x': unsupported"):
                getattr(ops, name)(bad)

def test_errors_name_the_argument_and_leave_out_untouched():
    out = np.full((2, 3), 7.0)
    with pytest.raises(ValueError, match=r"add: operands could not be broadcast together: 'x1' \(2, 3\) 'x2' \(4,\)"):
        ops.add(np.ones((2, 3)), np.ones(4), out=out)
    with pytest.raises(ValueError, match=r"add: out: expected shape \(2, 4\), got \(2, 3\)"):
        ops.add(np.ones((2, 4)), 1.0, out=out)
    with pytest.raises(TypeError, match="add: out: expected dtype float32, got float64"):
        ops.add(np.ones((2, 3), np.float32), np.float32(1), out=out)
    with pytest.raises(OverflowError, match="300 is out of range for uint8"):
        ops.add(np.ones((2, 3), np.uint8), 300, out=np.zeros((2, 3), np.uint8))
    readonly = np.full((2, 3), 7.0)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="add: out: expected a writable array, got a read-only one"):
        ops.add(np.ones((2, 3)), 1.0, out=readonly)
    with pytest.raises(TypeError, match="divide: out: expected dtype float64, got int64"):
        ops.divide(np.ones(3, np.int64), 2, out=np.zeros(3, np.int64))
    np.testing.assert_array_equal(out, 7.0)
    np.testing.assert_array_equal(readonly, 7.0)


def test_bad_inputs():
    with pytest.raises(TypeError, match=r"add: argument 'x2': expected an arrayport.Array, any array \(buffer protocol, __dlpack__ or __cuda_array_interface__\) or a Python scalar, got list"):
        ops.add(np.ones(3), [1, 2, 3])
    with pytest.raises(TypeError, match="add: argument 'x1' has dtype int8, expected one of bool"):
        ops.add(np.ones(3, np.int8), 1)
    with pytest.raises(TypeError, match="astype: dtype int16 is not supported"):
        ops.astype(np.ones(3), "int16")
    with pytest.raises(TypeError, match="sqrt: not supported for dtype bool|negative"):
        ops.negative(np.ones(3, bool))
    with pytest.raises(ValueError, match="max: zero-size array to reduction operation max which has no identity"):
        ops.max(np.zeros((0, 3)))
    with pytest.raises(ValueError, match=r"dot: operands could not be broadcast together: 'x' \(3,\) 'y' \(4,\)"):
        ops.dot(np.ones(3), np.ones(4))
    with pytest.raises(TypeError, match=r"sum: argument 'x': expected an arrayport.Array, any array \(buffer protocol, __dlpack__ or __cuda_array_interface__\), got float"):
        ops.sum(3.0)


REDUCTIONS = ["sum", "mean", "min", "max", "prod", "any", "all"]
INDEX_REDUCTIONS = ["argmin", "argmax"]  # one axis or None, as NumPy's


def reduction(name, x):
    """ops.<name> of x (dot: of x with itself) as a function of the keyword arguments."""
    if name == "dot":
        return lambda **kw: ops.dot(x, x, **kw)
    return lambda **kw: getattr(ops, name)(x, **kw)


class RefusingIndex:
    """An int-like whose __index__ raises."""

    def __index__(self) -> int:
        raise ValueError("no index")


@pytest.mark.parametrize("name", REDUCTIONS + ["dot"])
@pytest.mark.parametrize("kwargs,error,message", [
    ({"axis": 2}, ValueError, "axis: 2 is out of bounds for an array of 2 dimensions (expected -2 to 1)"),
    ({"axis": -3}, ValueError, "axis: -3 is out of bounds for an array of 2 dimensions (expected -2 to 1)"),
    ({"axis": 2**70}, ValueError, "axis: 1180591620717411303424 is out of bounds for an array of 2 dimensions"),
    ({"axis": -(2**64)}, ValueError, "axis: -18446744073709551616 is out of bounds"),
    ({"axis": (0, 2**70)}, ValueError, "axis: 1180591620717411303424 is out of bounds"),
    ({"axis": (1, -1)}, ValueError, "axis: expected distinct axes, got axis 1 twice (as 1 and -1)"),
    ({"axis": (0, 0)}, ValueError, "axis: expected distinct axes, got axis 0 twice (as 0 and 0)"),
    ({"axis": 1.0}, TypeError, "axis: expected None, an int or a tuple of ints, got float"),
    ({"axis": True}, TypeError, "axis: expected None, an int or a tuple of ints, got bool"),
    ({"axis": [0, 1]}, TypeError, "axis: expected None, an int or a tuple of ints, got list"),
    ({"axis": (0, "1")}, TypeError, "axis: expected None, an int or a tuple of ints, got a tuple holding str"),
    ({"axis": (0, None)}, TypeError, "axis: expected None, an int or a tuple of ints, got a tuple holding NoneType"),
    ({"axis": RefusingIndex()}, TypeError, "axis: expected None, an int or a tuple of ints, got "
                                           "RefusingIndex, whose __index__ raised ValueError: no index"),
    ({"axis": (0, RefusingIndex())}, TypeError, "axis: expected None, an int or a tuple of ints, "
                                                "got RefusingIndex, whose __index__ raised ValueError"),
    ({"keepdims": "yes"}, TypeError, "keepdims: expected a bool, got str"),
    ({"keepdims": 1}, TypeError, "keepdims: expected a bool, got int"),
    ({"keepdims": None}, TypeError, "keepdims: expected a bool, got NoneType"),
    ({"out": 3}, TypeError, "argument 'out': expected an arrayport.Array, any array (buffer protocol, __dlpack__ or __cuda_array_interface__), got int"),
    ({"out": "x"}, TypeError, "argument 'out': expected an arrayport.Array, any array"),
    ({"device": "gpu"}, TypeError, "device: expected an int or an arrayport.cuda.Device, got str"),
    ({"device": 1.5}, TypeError, "device: expected an int or an arrayport.cuda.Device, got float"),
    ({"device": True}, TypeError, "device: expected an int or an arrayport.cuda.Device, got bool"),
])
def test_reduction_parameters_are_checked_and_named(name, kwargs, error, message):
    out = np.full(1, 7.0)
    with pytest.raises(error, match=re.escape(f"{name}: {message}")):
        reduction(name, np.ones((2, 3)))(**kwargs)
    np.testing.assert_array_equal(out, 7.0)
    if not isinstance(kwargs.get("axis"), tuple) and name in ("min", "max"):
        for index_op in INDEX_REDUCTIONS:  # the same checks, the same words
            with pytest.raises(error, match=re.escape(f"{index_op}: {message}")):
                reduction(index_op, np.ones((2, 3)))(**kwargs)


@pytest.mark.parametrize("name", INDEX_REDUCTIONS)
@pytest.mark.parametrize("axis", [(0,), (0, 1), (0, 2**70), (0, "1"), ()])
def test_index_reductions_take_one_axis(name, axis):
    with pytest.raises(TypeError, match=re.escape(f"{name}: axis: expected None or an int, got a tuple")):
        reduction(name, np.ones((2, 3)))(axis=axis)
    with pytest.raises(ValueError, match=re.escape(f"{name}: attempt to get {name} of an empty sequence")):
        reduction(name, np.ones((2, 0)))(axis=1)
    np.testing.assert_array_equal(np.asarray(reduction(name, np.ones((2, 0)))(axis=0)), np.zeros(0))


@pytest.mark.parametrize("name", REDUCTIONS + ["dot"])
def test_reduction_parameters_take_numpy_integers_and_bools(name):
    x = rng_array((2, 3, 4), "float64", 1)
    f = reduction(name, x)
    ref = (lambda **kw: np.sum(x * x, **kw)) if name == "dot" else (lambda **kw: getattr(np, name)(x, **kw))
    for kw in [{"axis": np.int64(1)}, {"axis": (np.int32(0), -1)}, {"axis": np.uint8(2), "keepdims": np.True_},
               {"keepdims": np.False_}, {"axis": 1, "keepdims": True}]:
        got, want = f(**kw), ref(**{k: bool(v) if k == "keepdims" else v for k, v in kw.items()})
        assert got.shape == np.shape(want), kw
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    with pytest.raises(ValueError, match=re.escape(f"{name}: axis: 0 is out of bounds for an array of 0 dimensions (it has no axes)")):
        reduction(name, np.float64(2.0))(axis=0)


ELEMENTWISE_CALLS = {
    "add": lambda **kw: ops.add(np.ones(3), 1.0, **kw),
    "subtract": lambda **kw: ops.subtract(np.ones(3), 1.0, **kw),
    "multiply": lambda **kw: ops.multiply(np.ones(3), 1.0, **kw),
    "divide": lambda **kw: ops.divide(np.ones(3), 1.0, **kw),
    "maximum": lambda **kw: ops.maximum(np.ones(3), 1.0, **kw),
    "minimum": lambda **kw: ops.minimum(np.ones(3), 1.0, **kw),
    "negative": lambda **kw: ops.negative(np.ones(3), **kw),
    "square": lambda **kw: ops.square(np.ones(3), **kw),
    "sqrt": lambda **kw: ops.sqrt(np.ones(3), **kw),
    "abs": lambda **kw: ops.abs(np.ones(3), **kw),
    "copy": lambda **kw: ops.copy(np.ones(3), **kw),
    "astype": lambda **kw: ops.astype(np.ones(3), "float64", **kw),
    "where": lambda **kw: ops.where(np.ones(3, bool), np.ones(3), 1.0, **kw),
    "axpy": lambda **kw: ops.axpy(2.0, np.ones(3), np.ones(3), **kw),
}


@pytest.mark.parametrize("name", list(ELEMENTWISE_CALLS))
@pytest.mark.parametrize("kwargs,error,message", [
    ({"out": 3}, TypeError, "argument 'out': expected an arrayport.Array, any array (buffer protocol, __dlpack__ or __cuda_array_interface__), got int"),
    ({"out": [0.0, 0.0, 0.0]}, TypeError, "argument 'out': expected an arrayport.Array, any array"),
    ({"out": np.zeros(4)}, ValueError, "out: expected shape (3,), got (4,)"),
    ({"out": np.zeros(3, np.float32)}, TypeError, "out: expected dtype float64, got float32"),
    ({"device": "gpu"}, TypeError, "device: expected an int or an arrayport.cuda.Device, got str"),
    ({"device": True}, TypeError, "device: expected an int or an arrayport.cuda.Device, got bool"),
])
def test_elementwise_parameters_are_checked_and_named(name, kwargs, error, message):
    with pytest.raises(error, match=re.escape(f"{name}: {message}")):
        ELEMENTWISE_CALLS[name](**kwargs)


def test_scalar_and_parameter_values_are_checked_and_named():
    u8 = np.ones(3, np.uint8)
    for call, error, message in [
        (lambda: ops.add(u8, 300), OverflowError, "add: argument 'x2': 300 is out of range for uint8"),
        (lambda: ops.subtract(-1, u8), OverflowError, "subtract: argument 'x1': -1 is out of range for uint8"),
        (lambda: ops.add(np.ones(3, np.int32), 2**40), OverflowError, "add: argument 'x2': 1099511627776 is out of range for int32"),
        (lambda: ops.add(np.ones(3, np.int64), 2**64), OverflowError, "add: argument 'x2': 18446744073709551616 is out of range for int64"),
        (lambda: ops.where(True, u8, 256), OverflowError, "where: argument 'y': 256 is out of range for uint8"),
        (lambda: ops.power([1, 2], 2), TypeError, "power: argument 'x1': expected an arrayport.Array"),
        (lambda: ops.power(np.arange(3), "x"), TypeError, "power: argument 'x2': expected an arrayport.Array"),
        (lambda: ops.axpy(u8, 2, -5), OverflowError, "axpy: argument 'y': -5 is out of range for uint8"),
        (lambda: ops.divide(np.ones(3), 1.0, zero_value="x"), TypeError, "divide: zero_value: expected a number for dtype float64, got str"),
        (lambda: ops.divide(np.ones(3), 1.0, zero_value=1j), TypeError, "divide: zero_value: cannot convert a complex number to float64"),
        (lambda: ops.astype(np.ones(3), None), TypeError, "astype: dtype: expected a dtype name"),
        (lambda: ops.astype(np.ones(3), "int16"), TypeError, "astype: dtype int16 is not supported"),
    ]:
        with pytest.raises(error, match=re.escape(message)):
            call()


# ---- NEP 50: NumPy scalars are strong (0-d arrays), Python's own scalars weak ----------------------


class IntSub(int):
    pass


class FloatSub(float):
    pass


SCALARS = [True, 3, 1.5, 1.5 - 2j, IntSub(3), FloatSub(1.5),
           np.bool_(True), np.uint8(3), np.int32(3), np.int64(3), np.float16(1.5), np.float32(1.5),
           np.float64(1.5), np.complex64(1 + 1j), np.complex128(1 + 1j),
           np.array(3, np.uint8), np.array(1.5, np.float32)]


def same_outcome(call, ref, dtype):
    """call() gives NumPy's ref(): the same dtype and values (to the tolerance of the result's
    dtype or the input's `dtype`, which intermediate products round to), or the same exception."""
    try:
        with np.errstate(all="ignore"):
            want = ref()
    except (TypeError, OverflowError) as e:
        with pytest.raises(type(e)):
            call()
        return
    got = call()
    assert got.dtype == str(np.asarray(want).dtype), (got.dtype, np.asarray(want).dtype)
    tol = max(RTOL.get(str(np.asarray(want).dtype), 0), RTOL.get(dtype, 0))
    np.testing.assert_allclose(to_numpy(got), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("name", list(BINARY))
def test_scalars_promote_as_in_numpy_2(name, dtype):
    x = rng_array((5,), dtype, 7, positive=True)
    for s in SCALARS:
        same_outcome(lambda: getattr(ops, name)(x, s), lambda: BINARY[name](x, s), dtype)
        same_outcome(lambda: getattr(ops, name)(s, x), lambda: BINARY[name](s, x), dtype)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_where_and_axpy_scalars_promote_as_in_numpy_2(dtype):
    x = rng_array((5,), dtype, 7, positive=True)
    cond = np.array([True, False, True, True, False])
    for s in SCALARS:
        same_outcome(lambda: ops.where(cond, x, s), lambda: np.where(cond, x, s), dtype)
        same_outcome(lambda: ops.where(cond, s, x), lambda: np.where(cond, s, x), dtype)
        same_outcome(lambda: ops.axpy(s, x, x), lambda: s * x + x, dtype)
        same_outcome(lambda: ops.axpy(x, s, x), lambda: x * s + x, dtype)
        same_outcome(lambda: ops.axpy(x, x, s), lambda: x * x + s, dtype)
        same_outcome(lambda: ops.axpy(2, s, x), lambda: 2 * s + x, dtype)


def test_axpy_rounds_and_wraps_the_product_in_its_own_dtype():
    # NumPy's a * x + y: the product in uint8 wraps before an int32 y widens the sum; a float16
    # product is rounded to float16 before the add.
    u8 = np.full(4, 200, np.uint8)
    y = np.arange(4, dtype=np.int32)
    np.testing.assert_array_equal(np.asarray(ops.axpy(2, u8, y)), 2 * u8 + y)
    h = np.array([1.0009766, 3.0, 0.1, 65504.0], np.float16)
    with np.errstate(over="ignore"):  # 65504 * 65504 is inf in float16, as NumPy says
        np.testing.assert_array_equal(np.asarray(ops.axpy(h, h, h)), h * h + h)


def test_bridge_errors_name_the_op_and_the_argument():
    with pytest.raises(TypeError, match=r"add: argument 'x2': .*3s.*\(from numpy.ndarray\)"):
        ops.add(np.ones(2), np.zeros(2, "S3"))
    with pytest.raises(ValueError, match=r"add: argument 'x1': unsupported DLPack device type 4"):
        ops.add(Producer(device=(4, 0)), 1.0)


# ---- producers: every argument goes through the consume bridge ------------------------------------


def test_ops_take_a_dlpack_only_producer():
    x = Producer(values=(1.0, 2.0, 3.0, 4.0))
    np.testing.assert_array_equal(np.asarray(ops.add(x, 1)), [2.0, 3.0, 4.0, 5.0])
    assert float(np.asarray(ops.sum(x))) == 10.0
    strided = Producer(values=tuple(float(i) for i in range(6)), shape=(3,), strides=(2,))
    np.testing.assert_array_equal(np.asarray(ops.multiply(strided, 2.0)), [0.0, 4.0, 8.0])
    out = Producer(values=(0.0, 0.0, 0.0, 0.0))
    assert ops.multiply(x, np.full(4, 3.0), out=out) is out
    assert list(out.storage) == [3.0, 6.0, 9.0, 12.0]
    # Every tensor taken is given back, exactly once.
    for p in (x, strided, out):
        assert p.exported > 0 and p.deleted == p.exported


def test_a_read_only_dlpack_producer_is_refused_as_out():
    out = Producer(values=(7.0, 7.0), readonly=True)
    with pytest.raises(ValueError, match="add: out: expected a writable array, got a read-only one"):
        ops.add(np.ones(2), 1.0, out=out)
    assert list(out.storage) == [7.0, 7.0] and out.deleted == out.exported


class CAIOnly:
    """A PyCUDA-style object: only __cuda_array_interface__ (its pointer is never dereferenced)."""

    def __init__(self):
        self.__cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (0x10000, False),
                                         "version": 3, "strides": None, "stream": None}


@pytest.mark.skipif(HAS_GPU, reason="without a GPU only: the pointer is made up")
def test_a_cai_only_object_is_refused_without_a_gpu():
    reason = ap.runtime_info()["reason"]
    with pytest.raises(ap.NoDeviceError, match=r"add: argument 'x1': expected memory the CPU can read "
                       r"\(this machine has no usable CUDA device: .+\), got device memory \(from .*CAIOnly\)") as info:
        ops.add(CAIOnly(), 1.0)
    assert reason in str(info.value)
    with pytest.raises(ap.NoDeviceError, match=r"sum: argument 'x': expected memory the CPU can read"):
        ops.sum(CAIOnly())
    with pytest.raises(ap.NoDeviceError, match=r"add: argument 'out': expected memory the CPU can read"):
        ops.add(np.ones(4, np.float32), 1.0, out=CAIOnly())


def test_public_names():
    assert ap.ops is ops
    for name in ops.__all__:
        assert callable(getattr(ops, name))
