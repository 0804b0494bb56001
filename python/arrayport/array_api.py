"""arrayport as a Python array API namespace: the part of the standard (2024.12) it computes.

``Array.__array_namespace__()`` returns this module. It holds only what arrayport does itself, on
every memory kind and device: the dtypes its ops compute in (bool, uint8, int32, int64, float32,
float64, complex64, complex128; no int8, int16, uint16, uint32 or uint64), creation, the
element-wise functions of ``arrayport.ops`` and those composed from them (floor, sign, conj, ...),
the reductions and statistics, ``where``, ``astype``, reshaping views, the manipulation functions
(concat, stack, flip, roll, tile, tril, ...) and the inspection API. A function the standard names
and arrayport lacks (acos, sort, matmul, ...) is absent, so ``hasattr`` tells. The dtype functions
(``result_type``, ``can_cast``, ``finfo``, ``iinfo``, ``isdtype``) are NumPy's rules, which ops
follows. ``arange``, ``linspace`` and ``eye`` build their values on the host with NumPy, then copy
them where ``device`` says. docs/array-api.md has the conformance run, function by function.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Callable, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as _np

from . import ops as _ops
from ._array_api import _as_array as _in, _placement, _wrapped, asarray as _asarray, from_dlpack
from ._array_api_manipulation import (
    concat, diff, flip, meshgrid, moveaxis, repeat, roll, stack, tile, tril, triu, unstack)
from ._array_api_math import (
    ceil, conj, copysign, count_nonzero, floor, imag, nextafter, real, reciprocal, round, sign,
    signbit, std, trunc, var, vecdot)
from ._core import Array, _broadcast_view, empty as _empty
from .ops import (
    abs, add, bitwise_and, bitwise_invert, bitwise_or, bitwise_xor, cos, divide, equal, exp,
    floor_divide, greater, greater_equal, isfinite, isinf, isnan, less, less_equal, log,
    logical_and, logical_not, logical_or, logical_xor, maximum, minimum, multiply, negative,
    not_equal, remainder, sin, sqrt, square, subtract, tanh, where)

__array_api_version__ = "2024.12"
_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

bool = _np.dtype("bool")
uint8 = _np.dtype("uint8")
int32 = _np.dtype("int32")
int64 = _np.dtype("int64")
float32 = _np.dtype("float32")
float64 = _np.dtype("float64")
complex64 = _np.dtype("complex64")
complex128 = _np.dtype("complex128")
_DTYPES = (bool, uint8, int32, int64, float32, float64, complex64, complex128)

e, pi, inf, nan, newaxis = math.e, math.pi, math.inf, math.nan, None

Device = Any  # Array.device's spelling: ("cpu", 0), ("cuda", 0), ("cuda_managed", 0), ...
Shape = Union[int, Sequence[int]]

# ---- element-wise: arrayport.ops, as the standard names them --------------------------------

pow = _ops.power


def positive(x: Any, /) -> Array:
    """+x: a copy (bool refused, as NumPy's positive refuses it)."""
    return +_in(x)


def clip(x: Any, /, min: Any = None, max: Any = None) -> Array:
    return _ops.clip(x, min, max)


# ---- creation -------------------------------------------------------------------------------

def asarray(obj: Any, /, *, dtype: Any = None, device: Device = None,
            copy: Optional[builtins.bool] = None) -> Array:
    return _asarray(obj, dtype, device=device, copy=copy)


def empty(shape: Shape, *, dtype: Any = None, device: Device = None) -> Array:
    return _empty(_shape(shape), float64 if dtype is None else dtype, **_where(device, "empty"))


def zeros(shape: Shape, *, dtype: Any = None, device: Device = None) -> Array:
    return full(shape, 0, dtype=float64 if dtype is None else dtype, device=device)


def ones(shape: Shape, *, dtype: Any = None, device: Device = None) -> Array:
    return full(shape, 1, dtype=float64 if dtype is None else dtype, device=device)


def full(shape: Shape, fill_value: Any, *, dtype: Any = None, device: Device = None) -> Array:
    a = empty(shape, dtype=_scalar_dtype(fill_value) if dtype is None else dtype, device=device)
    a.fill(fill_value)
    return a


def empty_like(x: Array, /, *, dtype: Any = None, device: Device = None) -> Array:
    return empty(x.shape, dtype=x.dtype if dtype is None else dtype,
                 device=x.device if device is None else device)


def zeros_like(x: Array, /, *, dtype: Any = None, device: Device = None) -> Array:
    return full_like(x, 0, dtype=dtype, device=device)


def ones_like(x: Array, /, *, dtype: Any = None, device: Device = None) -> Array:
    return full_like(x, 1, dtype=dtype, device=device)


def full_like(x: Array, /, fill_value: Any, *, dtype: Any = None,
              device: Device = None) -> Array:
    return full(x.shape, fill_value, dtype=x.dtype if dtype is None else dtype,
                device=x.device if device is None else device)


def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None,
           device: Device = None) -> Array:
    return asarray(_np.arange(start, stop, step, dtype=_numpy_dtype(dtype)), device=device)


def linspace(start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Device = None,
             endpoint: builtins.bool = True) -> Array:
    if dtype is None:
        dtype = complex128 if isinstance(start, complex) or isinstance(stop, complex) else float64
    return asarray(_np.linspace(start, stop, num, endpoint=endpoint, dtype=_numpy_dtype(dtype)),
                   device=device)


def eye(n_rows: int, n_cols: Optional[int] = None, /, *, k: int = 0, dtype: Any = None,
        device: Device = None) -> Array:
    return asarray(_np.eye(n_rows, n_cols, k, dtype=float64 if dtype is None else dtype),
                   device=device)


# ---- data types -----------------------------------------------------------------------------

def astype(x: Any, dtype: Any, /, *, copy: builtins.bool = True, device: Device = None) -> Array:
    a = _in(x)
    if device is not None:
        a = asarray(a, device=device)
    if not copy and a.dtype == dtype:
        return a
    return _ops.astype(a, dtype)


def result_type(*arrays_and_dtypes: Any) -> Any:
    return _np.result_type(*(getattr(x, "dtype", x) for x in arrays_and_dtypes))


def can_cast(from_: Any, to: Any, /) -> builtins.bool:
    return builtins.bool(_np.can_cast(getattr(from_, "dtype", from_), to))


class finfo_object(NamedTuple):
    """finfo()'s answer, in Python numbers as the standard asks (NumPy's are NumPy scalars)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: Any


class iinfo_object(NamedTuple):
    bits: int
    max: int
    min: int
    dtype: Any


def finfo(type: Any, /) -> finfo_object:
    f = _np.finfo(getattr(type, "dtype", type))
    return finfo_object(int(f.bits), float(f.eps), float(f.max), float(f.min),
                        float(f.smallest_normal), f.dtype)


def iinfo(type: Any, /) -> iinfo_object:
    i = _np.iinfo(getattr(type, "dtype", type))
    return iinfo_object(int(i.bits), int(i.max), int(i.min), i.dtype)


def isdtype(dtype: Any, kind: Any) -> builtins.bool:
    if dtype not in _DTYPES:
        raise TypeError(f"isdtype: dtype: expected one of {_names(_DTYPES)}, got {dtype!r}")
    return builtins.bool(_np.isdtype(dtype, kind))


# ---- reductions -----------------------------------------------------------------------------

def sum(x: Any, /, *, axis: Any = None, dtype: Any = None,
        keepdims: builtins.bool = False) -> Array:
    return _in_dtype(_ops.sum, x, axis, dtype, keepdims)


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None,
         keepdims: builtins.bool = False) -> Array:
    return _in_dtype(_ops.prod, x, axis, dtype, keepdims)


def mean(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Array:
    return _ops.mean(x, axis, keepdims)


def min(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Array:
    return _ops.min(x, axis, keepdims)


def max(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Array:
    return _ops.max(x, axis, keepdims)


def all(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Array:
    return _ops.all(x, axis, keepdims)


def any(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Array:
    return _ops.any(x, axis, keepdims)


def argmin(x: Any, /, *, axis: Optional[int] = None, keepdims: builtins.bool = False) -> Array:
    return _ops.argmin(x, axis, keepdims)


def argmax(x: Any, /, *, axis: Optional[int] = None, keepdims: builtins.bool = False) -> Array:
    return _ops.argmax(x, axis, keepdims)


# ---- views: shape and axis order --------------------------------------------------------------

def reshape(x: Any, /, shape: Tuple[int, ...], *, copy: Optional[builtins.bool] = None) -> Array:
    """A view where x is C-contiguous, else (copy=None) a reshaped copy; copy=True always
    copies, copy=False refuses to."""
    a = _in(x)
    if copy or (copy is None and not a.c_contiguous):
        a = _ops.copy(a)
    elif copy is False and not a.c_contiguous:
        raise ValueError("reshape: copy=False, but x is not C-contiguous, which needs a copy")
    return a.reshape(tuple(shape))


def permute_dims(x: Any, /, axes: Tuple[int, ...]) -> Array:
    return _in(x).transpose(tuple(axes))


def matrix_transpose(x: Any, /) -> Array:
    return _in(x).mT


def expand_dims(x: Any, /, axis: int = 0) -> Array:
    a = _in(x)
    if not -a.ndim - 1 <= axis <= a.ndim:
        raise IndexError(f"expand_dims: axis: expected in [{-a.ndim - 1}, {a.ndim}], got {axis}")
    axis %= a.ndim + 1
    return a[(slice(None),) * axis + (None,)]


def squeeze(x: Any, /, axis: Union[int, Tuple[int, ...]]) -> Array:
    a = _in(x)
    axes = {_axis(i, a.ndim, "squeeze") for i in (axis if isinstance(axis, tuple) else (axis,))}
    for i in axes:
        if a.shape[i] != 1:
            raise ValueError(f"squeeze: axis {i} has extent {a.shape[i]}, expected 1")
    # An index of 0 drops an axis of extent 1 from a view of any layout (reshape needs C order).
    return a[tuple(0 if i in axes else slice(None) for i in range(a.ndim))]


def broadcast_to(x: Any, /, shape: Tuple[int, ...]) -> Array:
    """A read-only view of x with shape `shape` (stride 0 along the broadcast axes)."""
    return _broadcast_view(_in(x), tuple(shape))


def broadcast_shapes(*shapes: Tuple[int, ...]) -> Tuple[int, ...]:
    ndim = builtins.max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, e in enumerate(s, start=ndim - len(s)):
            if e != 1 and out[i] not in (1, e):
                raise ValueError(f"broadcast_shapes: shapes {', '.join(map(str, shapes))} do not "
                                 f"broadcast: extents {out[i]} and {e} meet on axis {i}")
            out[i] = e if e != 1 else out[i]
    return tuple(out)


def broadcast_arrays(*arrays: Any) -> list[Array]:
    xs = [_in(x) for x in arrays]
    shape = broadcast_shapes(*(x.shape for x in xs))
    return [broadcast_to(x, shape) for x in xs]


# ---- inspection -----------------------------------------------------------------------------

class _Info:
    """What __array_namespace_info__() returns: this namespace's devices and dtypes."""

    def capabilities(self) -> dict[str, Any]:
        return {"boolean indexing": False, "data-dependent shapes": False,
                "max dimensions": 64}

    def default_device(self) -> Device:
        return _empty(0, uint8).device

    def devices(self) -> list[Device]:
        from . import devices as _cuda_devices

        return [("cpu", 0)] + [("cuda", i) for i in range(len(_cuda_devices()))]

    def default_dtypes(self, *, device: Device = None) -> dict[str, Any]:
        return {"real floating": float64, "complex floating": complex128, "integral": int64,
                "indexing": int64}

    def dtypes(self, *, device: Device = None, kind: Any = None) -> dict[str, Any]:
        return {str(d): d for d in _DTYPES if kind is None or _np.isdtype(d, kind)}


def __array_namespace_info__() -> _Info:
    return _Info()


# ---- helpers --------------------------------------------------------------------------------

def _in_dtype(reduce: Callable[..., Array], x: Any, axis: Any, dtype: Any,
              keepdims: builtins.bool) -> Array:
    """reduce(x) computed in `dtype`: integers accumulate widened (as ops does) and wrap back,
    which gives the same value modulo 2^bits as accumulating in `dtype` itself."""
    a = _in(x)
    if dtype is None:
        return reduce(a, axis, keepdims)
    r = reduce(a if a.dtype == dtype else _ops.astype(a, dtype), axis, keepdims)
    return r if r.dtype == dtype else _wrapped(r, dtype)


def _shape(shape: Shape) -> Tuple[int, ...]:
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _where(device: Device, what: str) -> dict[str, Any]:
    kind, index = _placement(None, device, what)
    return {"memory": kind, "device": index}


def _scalar_dtype(value: Any) -> Any:
    if isinstance(value, builtins.bool):
        return bool
    if isinstance(value, int):
        return int64
    return complex128 if isinstance(value, complex) else float64


def _numpy_dtype(dtype: Any) -> Any:
    return None if dtype is None else _np.dtype(dtype)


def _axis(i: int, ndim: int, what: str) -> int:
    if not -ndim <= i < ndim:
        raise IndexError(f"{what}: axis: expected in [{-ndim}, {ndim - 1}], got {i}")
    return i % ndim


def _names(dtypes: Sequence[Any]) -> str:
    return ", ".join(str(d) for d in dtypes)
