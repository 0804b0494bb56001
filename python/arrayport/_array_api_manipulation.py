"""The array API's manipulation functions over arrayport's views and copies: concat, stack, unstack,
diff, flip, roll, repeat, moveaxis, tile, meshgrid, tril, triu. Views where NumPy returns views
(flip, unstack); otherwise one result allocated where the first input lives, filled by ops into its
slices, so every memory kind and device works and no data passes through the host (repeat's counts
excepted: they set the result's shape, so they are read on the host).
"""

from __future__ import annotations

import builtins
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as _np

from . import ops as _ops
from ._array_api import (
    _as_array as _in, _axis_index as _axis, _axis_set as _axes, _empty_where as _like,
    _int_tuple as _tuple, asarray as _asarray)
from ._core import Array, _broadcast_view

Axes = Union[int, Tuple[int, ...], None]


def concat(arrays: Sequence[Any], /, *, axis: Optional[int] = 0) -> Array:
    """The arrays joined along `axis` (None: flattened first), in their result dtype."""
    xs = _inputs(arrays, "concat")
    if axis is None:
        xs = [_flat(x) for x in xs]
        axis = 0
    first = xs[0]
    if first.ndim == 0:
        raise ValueError("concat: arrays: expected arrays of 1 or more dimensions, got 0-d")
    axis = _axis(axis, first.ndim, "concat")
    for k, x in enumerate(xs):
        if x.ndim != first.ndim or any(x.shape[d] != first.shape[d]
                                       for d in range(first.ndim) if d != axis):
            raise ValueError(f"concat: arrays[{k}]: expected shape {_joinable(first.shape, axis)} "
                             f"(any extent on axis {axis}), got {x.shape}")
    shape = list(first.shape)
    shape[axis] = builtins.sum(x.shape[axis] for x in xs)
    out = _like(first, tuple(shape), _np.result_type(*(x.dtype for x in xs)))
    start = 0
    for x in xs:
        n = x.shape[axis]
        _ops.astype(x, out.dtype, out=out[(slice(None),) * axis + (slice(start, start + n),)])
        start += n
    return out


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None,
         append: Any = None) -> Array:
    """The n-th differences along `axis` (x[i + 1] - x[i], n times; != for bool, as NumPy),
    with `prepend` and `append` joined to x first."""
    a = _in(x)
    if a.ndim == 0:
        raise ValueError("diff: x: expected an array of 1 or more dimensions, got 0-d")
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"diff: n: expected an int >= 0, got {n!r}")
    axis = _axis(axis, a.ndim, "diff")
    if n == 0:  # x as it is, prepend and append left out, as NumPy's diff does
        return a
    if prepend is not None or append is not None:
        a = concat([v for v in (prepend, a, append) if v is not None], axis=axis)
    before = (slice(None),) * axis
    step = _ops.not_equal if a.dtype == _np.bool_ else _ops.subtract
    for _ in range(n):
        a = step(a[before + (slice(1, None),)], a[before + (slice(None, -1),)])
    return a


def stack(arrays: Sequence[Any], /, *, axis: int = 0) -> Array:
    """The arrays, all of one shape, joined along a new axis."""
    xs = _inputs(arrays, "stack")
    for k, x in enumerate(xs):
        if x.shape != xs[0].shape:
            raise ValueError(f"stack: arrays[{k}]: expected shape {xs[0].shape}, got {x.shape}")
    axis = _axis(axis, xs[0].ndim + 1, "stack")
    return concat([x[(slice(None),) * axis + (None,)] for x in xs], axis=axis)


def unstack(x: Any, /, *, axis: int = 0) -> Tuple[Array, ...]:
    """Views of x's slices along `axis`."""
    a = _in(x)
    if a.ndim == 0:
        raise ValueError("unstack: x: expected an array of 1 or more dimensions, got 0-d")
    axis = _axis(axis, a.ndim, "unstack")
    return tuple(a[(slice(None),) * axis + (i,)] for i in range(a.shape[axis]))


def flip(x: Any, /, *, axis: Axes = None) -> Array:
    """A view of x with the order of its elements reversed along `axis` (None: every axis)."""
    a = _in(x)
    axes = _axes(axis, a.ndim, "flip")
    return a[tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(a.ndim))]


def roll(x: Any, /, shift: Union[int, Tuple[int, ...]], *, axis: Axes = None) -> Array:
    """x with its elements shifted by `shift` along `axis`, those past the end coming back at the
    start (None: over the flattened array, then reshaped)."""
    a = _in(x)
    if axis is None:
        if not isinstance(shift, int):
            raise TypeError(f"roll: shift: expected an int when axis is None, got {shift!r}")
        return roll(_flat(a), shift, axis=0).reshape(a.shape)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    shifts = (shift,) * len(axes) if isinstance(shift, int) else tuple(shift)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift: expected {len(axes)} shifts (one per axis), "
                         f"got {len(shifts)}")
    total = [0] * a.ndim
    for d, s in zip(axes, shifts):
        total[_axis(d, a.ndim, "roll")] += s
    out = _like(a, a.shape, a.dtype)
    # Each axis splits into two runs; every combination of runs is one strided copy.
    pieces: List[Tuple[Tuple[slice, ...], Tuple[slice, ...]]] = [((), ())]
    for d in range(a.ndim):
        n = a.shape[d]
        s = total[d] % n if n else 0
        runs = [(slice(0, n - s), slice(s, n)), (slice(n - s, n), slice(0, s))] if s else \
            [(slice(None), slice(None))]
        pieces = [(src + (r[0],), dst + (r[1],)) for src, dst in pieces for r in runs]
    for src, dst in pieces:
        _ops.copy(a[src], out=out[dst])
    return out


def repeat(x: Any, repeats: Any, /, *, axis: Optional[int] = None) -> Array:
    """Each element of x repeated along `axis` (None: of the flattened x): `repeats` times, or
    repeats[i] times for element i (an int sequence or array of x.shape[axis] counts, or one)."""
    a = _in(x)
    if axis is None:
        a, axis = _flat(a), 0
    if a.ndim == 0:
        raise ValueError("repeat: x: expected an array of 1 or more dimensions, got 0-d")
    axis = _axis(axis, a.ndim, "repeat")
    n = a.shape[axis]
    if isinstance(repeats, int) and not isinstance(repeats, bool):
        counts = _np.full(n, repeats, dtype=_np.int64)
    else:
        r = repeats.get() if isinstance(repeats, Array) else _np.asarray(repeats)
        if r.dtype.kind not in "iu" or r.ndim > 1 or r.size not in (1, n):
            raise ValueError(f"repeat: repeats: expected an int or {n} ints (x.shape[{axis}]), "
                             f"got {r.dtype} of shape {r.shape}")
        counts = _np.broadcast_to(r.astype(_np.int64), (n,))
    if (counts < 0).any():
        raise ValueError(f"repeat: repeats: expected counts >= 0, got {int(counts.min())}")
    shape = list(a.shape)
    shape[axis] = int(counts.sum())
    out = _like(a, tuple(shape), a.dtype)
    before = (slice(None),) * axis
    start = i = 0
    while i < n:  # one broadcast copy per run of equal counts
        j = i + 1
        while j < n and counts[j] == counts[i]:
            j += 1
        c, m = int(counts[i]), j - i
        if c:
            block = a[before + (slice(i, j), None)]
            wide = block.shape[:axis + 1] + (c,) + block.shape[axis + 2:]
            run = _ops.copy(_broadcast_view(block, wide))
            merged = a.shape[:axis] + (m * c,) + a.shape[axis + 1:]
            _ops.copy(run.reshape(merged), out=out[before + (slice(start, start + m * c),)])
            start += m * c
        i = j
    return out


def moveaxis(x: Any, source: Union[int, Tuple[int, ...]], destination: Union[int, Tuple[int, ...]],
             /) -> Array:
    """A view of x with the axes `source` moved to `destination`, the others in their order."""
    a = _in(x)
    src = [_axis(s, a.ndim, "moveaxis") for s in _tuple(source)]
    dst = [_axis(d, a.ndim, "moveaxis") for d in _tuple(destination)]
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source and destination: expected as many axes, got "
                         f"{len(src)} and {len(dst)}")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis: source and destination: expected distinct axes")
    order = [d for d in range(a.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return a.transpose(tuple(order))


def tile(x: Any, repetitions: Tuple[int, ...], /) -> Array:
    """x repeated `repetitions[k]` times along axis k (missing leading ones count as 1)."""
    a = _in(x)
    reps = tuple(repetitions)
    if any(not isinstance(r, int) or r < 0 for r in reps):
        raise ValueError(f"tile: repetitions: expected ints >= 0, got {reps}")
    ndim = builtins.max(a.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    shape = (1,) * (ndim - a.ndim) + a.shape
    # One copy of a broadcast view: (r0, d0, r1, d1, ...) read with stride 0 along each r.
    spread = a[(None, None) * (ndim - a.ndim) + (None, slice(None)) * a.ndim]
    wide = _broadcast_view(spread, tuple(n for r, d in zip(reps, shape) for n in (r, d)))
    return _ops.copy(wide).reshape(tuple(r * d for r, d in zip(reps, shape)))


def meshgrid(*arrays: Any, indexing: str = "xy") -> List[Array]:
    """Coordinate arrays of the 1-d inputs: copies, as NumPy's are ("xy": the first two axes
    swapped, "ij": in input order)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing: expected 'xy' or 'ij', got {indexing!r}")
    xs = [_in(x) for x in arrays]
    for k, x in enumerate(xs):
        if x.ndim != 1:
            raise ValueError(f"meshgrid: arrays[{k}]: expected a 1-d array, got {x.ndim}-d")
    shape = [x.shape[0] for x in xs]
    if indexing == "xy" and len(xs) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for k, x in enumerate(xs):
        at = 1 - k if indexing == "xy" and len(xs) >= 2 and k < 2 else k
        index = tuple(slice(None) if d == at else None for d in range(len(xs)))
        out.append(_ops.copy(_broadcast_view(x[index], tuple(shape))))
    return out


def tril(x: Any, /, *, k: int = 0) -> Array:
    """x's matrices with the elements above the k-th diagonal set to zero."""
    return _triangle(_in(x), k, "tril", _np.tri)


def triu(x: Any, /, *, k: int = 0) -> Array:
    """x's matrices with the elements below the k-th diagonal set to zero."""
    return _triangle(_in(x), k, "triu",
                     lambda m, n, k, dtype: _np.logical_not(_np.tri(m, n, k - 1, dtype)))


def _triangle(a: Array, k: int, what: str, mask_of: Any) -> Array:
    if a.ndim < 2:
        raise ValueError(f"{what}: x: expected an array of 2 or more dimensions, got {a.ndim}-d")
    # The mask is m x n bools, built on the host and moved where x lives; the zero is a Python
    # scalar of x's kind, which keeps x's dtype (NEP 50).
    mask = _asarray(mask_of(a.shape[-2], a.shape[-1], k, dtype=bool), device=a.device)
    return _ops.where(mask, a, False if a.dtype == _np.bool_ else 0)


# ---- helpers --------------------------------------------------------------------------------

def _inputs(arrays: Sequence[Any], what: str) -> List[Array]:
    if isinstance(arrays, Array) or not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{what}: arrays: expected a list or tuple of arrays, got "
                        f"{type(arrays).__name__}")
    if not arrays:
        raise ValueError(f"{what}: arrays: expected at least one array, got none")
    xs = [_in(x) for x in arrays]
    for k, x in enumerate(xs[1:], 1):
        if x.device != xs[0].device:
            raise ValueError(f"{what}: arrays[{k}]: expected device {xs[0].device} (that of "
                             f"arrays[0]), got {x.device}")
    return xs


def _flat(a: Array) -> Array:
    return (a if a.c_contiguous else _ops.copy(a)).reshape((a.size,))


def _joinable(shape: Tuple[int, ...], axis: int) -> str:
    return "(" + ", ".join("*" if d == axis else str(n) for d, n in enumerate(shape)) + \
        ("," if len(shape) == 1 else "") + ")"
