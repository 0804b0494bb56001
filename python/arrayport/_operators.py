"""Arithmetic operators and NumPy-style methods of arrayport.Array, each one call of
arrayport.ops: the same dtype rules (NumPy 2, NEP 50: Python scalars weak, NumPy scalars strong),
broadcasting, memory kinds, devices and stream ordering as the ops themselves.

``+ - * / // % ** & | ^`` (reflected and in place), unary ``- + ~`` and ``abs()``, the comparisons
``== != < <= > >=`` (bool Arrays, element-wise as NumPy's: an Array is therefore unhashable),
``@`` of two 1-d arrays (their inner product), ``sum/mean/min/max/prod/any/all/argmin/argmax``,
``astype``, ``tolist/item`` and iteration over the first axis. An operand that is no array and no number makes the operator
return NotImplemented, so Python tries the other side and then raises its TypeError (``==`` and
``!=`` fall back to identity); NumPy operands on the left defer to these
(``__array_priority__``). Attached to the Array type when the package is imported.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

from . import ops
from ._array_api import asarray as _asarray
from ._core import Array, _offers_array_protocol


def _operand(x: Any) -> Any:
    """`x` as ops takes it, or None where it is no operand (text, None, other objects)."""
    if isinstance(x, (Array, bool, int, float, complex)):
        return x
    if isinstance(x, (str, bytes, bytearray)) or x is None:
        return None  # bytes export a buffer, but are text to NumPy's operators
    if isinstance(x, (list, tuple)):
        return _asarray(x)  # nested sequences of numbers, as NumPy's operators take them
    return x if _offers_array_protocol(x) else None


def _binary(op: Callable[..., Array]) -> tuple[Callable[..., Any], ...]:
    def forward(self: Array, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else op(self, o)

    def reflected(self: Array, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else op(o, self)

    def inplace(self: Array, other: Any) -> Any:
        o = _operand(other)
        if o is None:
            return NotImplemented
        op(self, o, out=self)  # out= must have the result's dtype exactly: no silent cast
        return self

    return forward, reflected, inplace


def _matmul(self: Array, other: Any) -> Any:
    o = _operand(other)
    if o is None:
        return NotImplemented
    return _inner(self, o)


def _rmatmul(self: Array, other: Any) -> Any:
    o = _operand(other)
    if o is None:
        return NotImplemented
    return _inner(o, self)


def _inner(x: Any, y: Any) -> Array:
    nx, ny = getattr(x, "ndim", None), getattr(y, "ndim", None)
    if nx != 1 or ny != 1:
        raise TypeError(f"@: expected two 1-d arrays (their inner product, ops.dot), got {nx}-d "
                        f"and {ny}-d; arrayport.ops has no matrix product")
    return ops.dot(x, y)


def _pos(self: Array) -> Array:
    if self.dtype == "bool":  # NumPy's positive has no bool loop either
        raise TypeError("+: not supported for dtype bool (NumPy refuses it too)")
    return ops.copy(self)


def _iter(self: Array) -> Iterator[Array]:
    if self.ndim == 0:  # at iter(), as NumPy says it
        raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.shape[0]))


def _host_numpy(self: Array) -> Any:
    """A NumPy copy of the values (bfloat16, which NumPy lacks, as float32: exact)."""
    return (ops.astype(self, "float32") if self.dtype == "bfloat16" else self).get()


def _tolist(self: Array) -> Any:
    return _host_numpy(self).tolist()


def _item(self: Array) -> Any:
    if self.size != 1:
        raise ValueError("item: can only convert an array of size 1 to a Python scalar, got size "
                         f"{self.size}")
    return _host_numpy(self).item()


def _reduction(op: Callable[..., Array]) -> Callable[..., Array]:
    def method(self: Array, axis: Any = None, keepdims: bool = False, *,
               out: Optional[Any] = None) -> Array:
        return op(self, axis, keepdims, out=out)

    method.__name__ = op.__name__
    method.__doc__ = f"arrayport.ops.{op.__name__}(self, axis, keepdims, out=out)."
    return method


def _array_namespace(self: Array, /, *, api_version: Optional[str] = None) -> Any:
    """arrayport.array_api, the array API namespace (it needs NumPy, whose dtypes it uses)."""
    from . import array_api

    if api_version is not None and api_version not in array_api._VERSIONS:
        raise ValueError("__array_namespace__: api_version: expected None or one of "
                         f"{', '.join(array_api._VERSIONS)}, got {api_version!r}")
    return array_api


def _to_device(self: Array, device: Any, /, *, stream: Any = None) -> Array:
    """This array on `device` (as asarray's device= takes it): itself when it is there already."""
    return _asarray(self, device=device, stream=stream)


def _matrix_transpose(self: Array) -> Array:
    if self.ndim < 2:
        raise ValueError(f"mT: expected an array of at least 2 dimensions, got {self.ndim}")
    return self.transpose(tuple(range(self.ndim - 2)) + (self.ndim - 1, self.ndim - 2))


def _astype(self: Array, dtype: Any) -> Array:
    """arrayport.ops.astype(self, dtype): a new array, converted as NumPy converts."""
    return ops.astype(self, dtype)


for _name, _op in (("add", ops.add), ("sub", ops.subtract), ("mul", ops.multiply),
                   ("truediv", ops.divide), ("floordiv", ops.floor_divide),
                   ("mod", ops.remainder), ("pow", ops.power), ("and", ops.bitwise_and),
                   ("or", ops.bitwise_or), ("xor", ops.bitwise_xor)):
    _f, _r, _i = _binary(_op)
    setattr(Array, f"__{_name}__", _f)
    setattr(Array, f"__r{_name}__", _r)
    setattr(Array, f"__i{_name}__", _i)
# Python reflects a comparison itself (a < b tries b > a), so each needs only its forward form.
for _name, _op in (("eq", ops.equal), ("ne", ops.not_equal), ("lt", ops.less),
                   ("le", ops.less_equal), ("gt", ops.greater), ("ge", ops.greater_equal)):
    setattr(Array, f"__{_name}__", _binary(_op)[0])
setattr(Array, "__hash__", None)  # == is element-wise, as NumPy's ndarray
# NumPy's own operators (an ndarray or NumPy scalar on the left) defer to a right operand of
# higher __array_priority__ that has no __array_ufunc__: so np.float32(2) * a runs a's __rmul__,
# on any memory kind. NumPy's functions (np.add(a, 1)) are untouched.
setattr(Array, "__array_priority__", 1000.0)
setattr(Array, "__matmul__", _matmul)
setattr(Array, "__rmatmul__", _rmatmul)
setattr(Array, "__neg__", lambda self: ops.negative(self))
setattr(Array, "__pos__", _pos)
setattr(Array, "__abs__", lambda self: ops.abs(self))
setattr(Array, "__invert__", lambda self: ops.bitwise_invert(self))
setattr(Array, "__iter__", _iter)
setattr(Array, "tolist", _tolist)
setattr(Array, "item", _item)
setattr(Array, "astype", _astype)
setattr(Array, "__array_namespace__", _array_namespace)
setattr(Array, "to_device", _to_device)
setattr(Array, "mT", property(_matrix_transpose))
for _reduce in (ops.sum, ops.mean, ops.min, ops.max, ops.prod, ops.any, ops.all, ops.argmin,
                ops.argmax):
    setattr(Array, _reduce.__name__, _reduction(_reduce))
