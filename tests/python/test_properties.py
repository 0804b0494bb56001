"""Property-based tests (hypothesis): Array views against NumPy doing the same.

Random shapes (0 to 5 dimensions, zero-size ones too), dtypes and basic indexing keys (ints,
negative and out of range; slices with any start, stop and step, negative and zero steps; None;
Ellipsis), and compositions of indexing, transpose, reshape and view(dtype), on host Arrays and on
the NumPy arrays that share their memory. Each result has NumPy's shape, strides, first element and
values; whenever NumPy raises IndexError or ValueError, arrayport raises the same class.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arrayport as ap

# bfloat16 has no NumPy dtype to compare with.
DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]

SETTINGS = settings(max_examples=250, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

shapes = st.lists(st.integers(0, 4), min_size=0, max_size=5).map(tuple)
dtypes = st.sampled_from(DTYPES)


def ptr(n: np.ndarray) -> int:
    return n.__array_interface__["data"][0]


def host_pair(shape, dtype):
    """An arrayport host Array with distinct values, and the NumPy array over its memory."""
    a = ap.zeros(shape, dtype, memory="host")
    n = np.asarray(a)
    n[...] = (np.arange(n.size) % 120 + 1).reshape(shape).astype(dtype)
    return a, n


def assert_same_view(s, r: np.ndarray, base: np.ndarray):
    """s (an Array) is the view NumPy's r is: shape, strides, first element, values, memory."""
    assert isinstance(s, ap.Array)
    assert s.shape == r.shape
    assert s.ndim == r.ndim and s.size == r.size and s.dtype == r.dtype
    if r.size:
        # An empty array's strides and pointer address nothing, so only non-empty ones compare;
        # nor does the stride of an axis of extent 1 (arrayport counts strides in elements, so
        # the 4-byte stride NumPy keeps there after an int32 -> int64 view has no equal).
        assert [st for st, e in zip(s.strides, s.shape) if e != 1] == \
            [st for st, e in zip(r.strides, r.shape) if e != 1]
        assert s.ptr == ptr(r)
        assert np.shares_memory(np.asarray(s), base)
    np.testing.assert_array_equal(s.get(), r)
    np.testing.assert_array_equal(np.asarray(s), r)


def index_item(extent: int):
    bound = extent + 2
    ints = st.integers(-bound, bound)
    parts = st.none() | ints
    return st.one_of(
        ints,
        st.builds(slice, parts, parts, st.none() | st.integers(-3, 3)),
        st.none(),
        st.just(Ellipsis),
    )


@st.composite
def keys(draw, shape):
    """A basic index for `shape`: a tuple (sometimes a bare item) of ints, slices, None and
    Ellipsis, sometimes with more items than axes (NumPy raises)."""
    n = draw(st.integers(0, len(shape) + 1))
    items = []
    for i in range(n):
        extent = shape[i] if i < len(shape) else 3
        items.append(draw(index_item(extent)))
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


def numpy_key(key):
    # A trailing Ellipsis keeps NumPy from returning a scalar for a full integer index (arrayport
    # gives a 0-d view) and changes nothing else.
    items = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in items):
        return key
    return items + (Ellipsis,)


@st.composite
def array_and_key(draw):
    shape = draw(shapes)
    return shape, draw(dtypes), draw(keys(shape))


@SETTINGS
@given(array_and_key())
def test_getitem_matches_numpy(case):
    shape, dtype, key = case
    a, n = host_pair(shape, dtype)
    try:
        r = n[numpy_key(key)]
    except (IndexError, ValueError) as e:
        with pytest.raises(type(e)):
            a[key]
        return
    assert_same_view(a[key], r, n)


@SETTINGS
@given(array_and_key(), st.integers(0, 100))
def test_setitem_matches_numpy(case, value):
    shape, dtype, key = case
    a, _ = host_pair(shape, dtype)
    expected = np.array(a.get())
    try:
        expected[numpy_key(key)] = value
    except (IndexError, ValueError) as e:
        with pytest.raises(type(e)):
            a[key] = value
        return
    a[key] = value
    np.testing.assert_array_equal(a.get(), expected)


# ---- compositions: indexing, transpose, reshape, view(dtype) ----------------------------------

@st.composite
def steps(draw, ndim_hint):
    kind = draw(st.sampled_from(["index", "T", "transpose", "reshape", "view"]))
    if kind == "index":
        return ("index", draw(keys((3,) * ndim_hint)))
    if kind == "transpose":
        return ("transpose", draw(st.permutations(range(ndim_hint))) if ndim_hint else ())
    if kind == "reshape":
        return ("reshape", draw(st.lists(st.integers(0, 4), max_size=4).map(tuple)))
    if kind == "view":
        return ("view", draw(dtypes))
    return ("T", None)


def apply(x, step):
    kind, arg = step
    if kind == "index":
        return x[arg] if isinstance(x, ap.Array) else x[numpy_key(arg)]
    if kind == "T":
        return x.T
    if kind == "transpose":
        return x.transpose(*arg) if arg else x.transpose()
    if kind == "reshape":
        return x.reshape(arg)
    return x.view(arg)


@SETTINGS
@given(shapes, dtypes, st.data())
def test_compositions_match_numpy(shape, dtype, data):
    a, n = host_pair(shape, dtype)
    x, y = a, n
    for _ in range(data.draw(st.integers(1, 4))):
        step = data.draw(steps(y.ndim))
        if step[0] == "transpose" and len(step[1]) != y.ndim:
            step = ("T", None)
        if step[0] == "reshape":
            # Both sides get the same concrete shape argument.
            target = step[1]
            if int(np.prod(target)) != y.size and y.size and target and np.prod(target[:-1]) and \
                    y.size % int(np.prod(target[:-1])) == 0:
                target = target[:-1] + (-1,)
            step = ("reshape", target)
        try:
            y2 = apply(y, step)
        except (IndexError, ValueError) as e:
            with pytest.raises(type(e)):
                apply(x, step)
            return
        if step[0] == "reshape" and not y.flags.c_contiguous:
            # arrayport reshapes only C-contiguous arrays, and never copies silently.
            with pytest.raises(ValueError, match="reshape"):
                apply(x, step)
            return
        x2 = apply(x, step)
        assert_same_view(x2, y2, n)
        x, y = x2, y2


# ---- arrayport.view of NumPy views --------------------------------------------------------------

@SETTINGS
@given(array_and_key())
def test_view_of_numpy_views(case):
    shape, dtype, key = case
    base = (np.arange(int(np.prod(shape))) % 120 + 1).reshape(shape).astype(dtype)
    try:
        n = base[numpy_key(key)]
    except (IndexError, ValueError):
        return
    v = ap.view(n)
    assert v.shape == n.shape and v.dtype == n.dtype
    assert v.readonly == (not n.flags.writeable)
    if n.size:
        assert v.ptr == ptr(n)
        assert v.strides == n.strides
    np.testing.assert_array_equal(v.get(), n)
    if n.size:
        v[...] = 0  # the same memory: NumPy sees the write
        assert not n.any()
