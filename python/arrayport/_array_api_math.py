"""The array API's functions that arrayport computes by composing ``arrayport.ops``, each to NumPy's
values: rounding (floor, ceil, trunc, round), sign, copysign, nextafter, reciprocal, the complex
parts (real, imag, conj), signbit, and the statistics var, std, count_nonzero and vecdot. No data
passes through the host, so every memory kind and device works; each costs a few kernels, not one.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Tuple, Union

import numpy as _np

from . import ops as _ops
from ._array_api import (
    _as_array as _in, _axis_set as _axes, _empty_where, _wrapped, asarray as _asarray)
from ._core import Array

Axis = Union[int, Tuple[int, ...], None]


def floor(x: Any, /) -> Array:
    """The largest integer not above each element (integers as they are)."""
    a = _real_number(x, "floor")
    if a.dtype.kind in "iu":
        return _ops.copy(a)
    # x // 1 is floor(x) exactly for finite x, -0.0 included; infinities and NaN stay.
    return _ops.where(_ops.isfinite(a), _ops.floor_divide(a, 1), a)


def ceil(x: Any, /) -> Array:
    """The smallest integer not below each element (integers as they are)."""
    a = _real_number(x, "ceil")
    if a.dtype.kind in "iu":
        return _ops.copy(a)
    return _ops.negative(floor(_ops.negative(a)))


def trunc(x: Any, /) -> Array:
    """Each element rounded toward zero (integers as they are)."""
    a = _real_number(x, "trunc")
    if a.dtype.kind in "iu":
        return _ops.copy(a)
    return _ops.where(_ops.less(a, 0), ceil(a), floor(a))


def round(x: Any, /) -> Array:
    """Each element rounded to the nearest integer, halves to even, as NumPy's rint (a complex
    one part by part; integers as they are). About fifteen kernels: floor, then the half test."""
    a = _in(x)
    if a.dtype.kind == "b":
        raise TypeError("round: x: expected a numeric dtype, got bool")
    if a.dtype.kind in "iu":
        return _ops.copy(a)
    if a.dtype.kind == "c":
        c = _ops.copy(a)
        for part in (0, 1):
            v = _component(c, part)
            _ops.copy(_round_real(v), out=v)
        return c
    return _round_real(a)


def _round_real(a: Array) -> Array:
    y = floor(a)
    d = _ops.subtract(a, y)  # exact for finite a; NaN for the infinities, which y keeps
    up = _ops.add(y, 1)
    odd = _ops.not_equal(_ops.remainder(y, 2), 0)
    r = _ops.where(_ops.greater(d, 0.5), up,
                   _ops.where(_ops.less(d, 0.5), y, _ops.where(odd, up, y)))
    # A zero takes x's sign (rint(-0.4) is -0.0): x * 0 is that zero.
    return _ops.where(_ops.equal(r, 0), _ops.multiply(a, 0), r)


def sign(x: Any, /) -> Array:
    """-1, 0 or 1 by the sign of each real element (NaN stays NaN, -0.0 gives 0.0); x / |x| for
    a complex one (0 for 0)."""
    a = _in(x)
    if a.dtype.kind == "b":
        raise TypeError("sign: x: expected a numeric dtype, got bool")
    if a.dtype.kind == "c":
        return _ops.where(_ops.equal(a, 0), 0, _ops.divide(a, _ops.abs(a)))
    if a.dtype.kind == "u":
        return _ops.astype(_ops.greater(a, 0), a.dtype)
    rest = _ops.where(_ops.equal(a, 0), 0, a) if a.dtype.kind == "f" else a
    return _ops.where(_ops.greater(a, 0), 1, _ops.where(_ops.less(a, 0), -1, rest))


def copysign(x1: Any, x2: Any, /) -> Array:
    """|x1| with the sign bit of x2, element by element after broadcasting (NaNs too): float32
    and float64, a Python float taking the other operand's dtype."""
    a, b = _float_pair(x1, x2, "copysign")
    # In the bits: GPU arithmetic (negation too) may return a NaN without its sign.
    ints = "int32" if a.dtype == _np.float32 else "int64"
    sign = -(1 << (8 * a.dtype.itemsize - 1))  # the sign bit alone, as a signed integer
    magnitude = _ops.bitwise_and(a.view(ints), ~sign)
    return _ops.bitwise_or(magnitude, _ops.bitwise_and(b.view(ints), sign)).view(a.dtype)


def nextafter(x1: Any, x2: Any, /) -> Array:
    """The next representable value after x1 toward x2 (x2 where they are equal, the smallest
    subnormal with the direction's sign after a zero, NaN with a NaN): float32 and float64."""
    a, b = _float_pair(x1, x2, "nextafter")
    # Away from zero is one more in the bits (IEEE floats order as sign-magnitude integers).
    ints = "int32" if a.dtype == _np.float32 else "int64"
    away = _ops.astype(_ops.equal(_ops.less(a, b), _ops.greater(a, 0)), ints)
    step = _ops.subtract(_ops.add(a.view(ints), _ops.add(away, away)), 1).view(a.dtype)
    tiny = float(_np.nextafter(_np.zeros((), a.dtype), 1))
    after_zero = _ops.astype(_ops.where(_ops.less(a, b), tiny, -tiny), a.dtype)
    step = _ops.where(_ops.equal(a, 0), after_zero, step)
    step = _ops.where(_ops.equal(a, b), b, step)
    return _ops.where(_ops.logical_or(_ops.isnan(a), _ops.isnan(b)), math.nan, step)


def reciprocal(x: Any, /) -> Array:
    """1 / x, for floating-point dtypes."""
    a = _in(x)
    if a.dtype.kind not in "fc":
        raise TypeError(f"reciprocal: x: expected a floating-point dtype, got {a.dtype}")
    return _ops.divide(1, a)


def real(x: Any, /) -> Array:
    """The real parts: a view of a complex array's memory, a copy of a real one."""
    return _component(_in(x), 0)


def imag(x: Any, /) -> Array:
    """The imaginary parts: a view of a complex array's memory, zeros for a real one."""
    a = _in(x)
    if a.dtype.kind == "c":
        return _component(a, 1)
    zeros = _empty_where(a, a.shape, a.dtype)
    zeros.fill(0)
    return zeros


def conj(x: Any, /) -> Array:
    """The complex conjugates (a copy of a real array)."""
    c = _ops.copy(_in(x))
    if c.dtype.kind == "c":
        im = _component(c, 1)
        _ops.negative(im, out=im)
    return c


def signbit(x: Any, /) -> Array:
    """Whether the sign bit is set (negative zero and NaNs with it too): float32 and float64."""
    a = _in(x)
    bits = {"float32": "int32", "float64": "int64"}.get(str(a.dtype))
    if bits is None:
        raise TypeError(f"signbit: x: expected float32 or float64, got {a.dtype}")
    return _ops.less(a.view(bits), 0)


def var(x: Any, /, *, axis: Axis = None, correction: Union[int, float] = 0.0,
        keepdims: builtins.bool = False) -> Array:
    """The variance over `axis`, divided by (count - correction), as NumPy computes it: the sum
    of squared distances from the mean (|d|^2 as re^2 + im^2 for complex)."""
    a = _in(x)
    if a.dtype.kind not in "fc":
        raise TypeError(f"var: x: expected a floating-point dtype, got {a.dtype}")
    d = _ops.subtract(a, _ops.mean(a, axis, True))
    if d.dtype.kind == "c":
        squares = _ops.add(_ops.square(_component(d, 0)), _ops.square(_component(d, 1)))
    else:
        squares = _ops.square(d)
    count = math.prod(a.shape[i] for i in _axes(axis, a.ndim, "var"))
    return _ops.divide(_ops.sum(squares, axis, keepdims), builtins.max(count - correction, 0))


def std(x: Any, /, *, axis: Axis = None, correction: Union[int, float] = 0.0,
        keepdims: builtins.bool = False) -> Array:
    """The standard deviation: sqrt(var(...))."""
    a = _in(x)
    if a.dtype.kind not in "fc":
        raise TypeError(f"std: x: expected a floating-point dtype, got {a.dtype}")
    return _ops.sqrt(var(a, axis=axis, correction=correction, keepdims=keepdims))


def count_nonzero(x: Any, /, *, axis: Axis = None, keepdims: builtins.bool = False) -> Array:
    """The number of nonzero elements over `axis`, as int64."""
    a = _in(x)
    _axes(axis, a.ndim, "count_nonzero")
    return _ops.sum(_ops.not_equal(a, False if a.dtype.kind == "b" else 0), axis, keepdims)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Array:
    """The dot products of conj(x1) and x2 along `axis` of their broadcast shape."""
    a, b = _in(x1), _in(x2)
    if a.dtype.kind == "b" or b.dtype.kind == "b":
        raise TypeError(f"vecdot: expected numeric dtypes, got {a.dtype} and {b.dtype}")
    ndim = builtins.max(a.ndim, b.ndim)
    if ndim == 0 or not -ndim <= axis < 0:
        raise ValueError(f"vecdot: axis: expected a negative axis in [{-ndim}, -1] of the "
                         f"broadcast shape, got {axis}")
    if a.ndim < -axis or b.ndim < -axis or a.shape[axis] != b.shape[axis]:
        raise ValueError(f"vecdot: x1 and x2: expected equal extents on axis {axis}, got shapes "
                         f"{a.shape} and {b.shape}")
    products = _ops.multiply(conj(a) if a.dtype.kind == "c" else a, b)
    total = _ops.sum(products, axis)
    if total.dtype == products.dtype:
        return total
    # Integer sums accumulate widened; NumPy's vecdot keeps the operands' dtype.
    return _wrapped(total, products.dtype)


# ---- helpers --------------------------------------------------------------------------------

def _real_number(x: Any, what: str) -> Array:
    a = _in(x)
    if a.dtype.kind not in "iuf":
        raise TypeError(f"{what}: x: expected a real numeric dtype, got {a.dtype}")
    return a


def _float_pair(x1: Any, x2: Any, what: str) -> Tuple[Array, Array]:
    """Both operands in their promoted dtype (NEP 50), float32 or float64, where the first Array
    among them lives (a scalar or NumPy operand moves there)."""
    dtype = _np.result_type(*(x.dtype if isinstance(x, Array) else x for x in (x1, x2)))
    if dtype not in (_np.float32, _np.float64):
        raise TypeError(f"{what}: expected float32 or float64 operands, got {dtype}")
    arrays = [x for x in (x1, x2) if isinstance(x, Array)]
    device = arrays[0].device if arrays else None
    a, b = (_ops.astype(_asarray(x, device=device), dtype) for x in (x1, x2))
    return a, b


def _component(a: Array, part: int) -> Array:
    if a.dtype.kind != "c":
        return _ops.copy(a)
    # A view as the float pair: a new last axis of extent 1 becomes 2 (any layout allows it).
    pairs = a[..., None].view("float32" if a.dtype == _np.complex64 else "float64")
    return pairs[..., part]
