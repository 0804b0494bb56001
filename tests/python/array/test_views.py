"""Array views: basic indexing, transpose and reshape checked against NumPy on random shapes and
keys; every view shares memory and keeps every protocol; the root owner stays alive.

Then property-based (Hypothesis): random shapes (0 to 5 dimensions, zero-size ones too), dtypes and
basic indexing keys (ints, negative and out of range; slices with any start, stop and step, negative
and zero steps; None; Ellipsis), and compositions of indexing, transpose, reshape and view(dtype),
on host Arrays and on the NumPy arrays that share their memory. Each result has NumPy's shape,
strides, first element and values; whenever NumPy raises IndexError or ValueError, arrayport raises
the same class.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arrayport as ap
from conftest import needs_cupy, needs_gpu


def random_key(rng: np.random.Generator, shape: tuple[int, ...]):
    """A random basic index for `shape`: ints, slices with any step, None, and sometimes one
    Ellipsis standing for a run of axes."""
    key, complete = [], True
    for n in shape:
        r = rng.random()
        if r < 0.1:
            key.append(None)
        if r < 0.4 and n > 0:
            key.append(int(rng.integers(-n, n)))
        elif r < 0.9:
            step = int(rng.choice([-3, -2, -1, 1, 2, 3]))
            start = int(rng.integers(-n - 2, n + 2)) if rng.random() < 0.7 else None
            stop = int(rng.integers(-n - 2, n + 2)) if rng.random() < 0.7 else None
            key.append(slice(start, stop, step))
        else:
            complete = False
            break  # leave the remaining axes implicit
    if complete and key and rng.random() < 0.3:  # an Ellipsis replaces a run of entries (the axes it covers)
        i = int(rng.integers(0, len(key) + 1))
        j = int(rng.integers(i, len(key) + 1))
        key[i:j] = [Ellipsis]
    return tuple(key)


def test_random_basic_indexing_matches_numpy_and_shares_memory():
    rng = np.random.default_rng(20261122)
    checked = 0
    for _ in range(300):
        shape = tuple(int(x) for x in rng.integers(0, 6, size=int(rng.integers(1, 5))))
        a = ap.empty(shape, "int64", memory="host")
        n = np.asarray(a)
        n[...] = np.arange(n.size).reshape(shape)
        key = random_key(rng, shape)
        expected = n[key]
        got = np.asarray(a[key])
        if not isinstance(expected, np.ndarray):  # NumPy gives a scalar, arrayport a 0-d view
            assert got.shape == () and got[()] == expected, key
            checked += 1
            continue
        assert got.shape == expected.shape, key
        assert got.strides == expected.strides or expected.size <= 1, key
        assert np.array_equal(got, expected), key
        if expected.size:
            assert got.ctypes.data == expected.ctypes.data, key  # the same memory, no copy
        checked += 1
    assert checked == 300


def test_writes_through_a_view_are_seen_in_the_base():
    a = ap.zeros((4, 6), "float32")
    v = a[1:3, ::-2]
    np.asarray(v)[...] = 7
    n = np.asarray(a)
    assert n[1:3, 5].tolist() == [7, 7] and n[1:3, 4].tolist() == [0, 0]
    assert n.sum() == 7 * 6


def test_views_keep_the_root_owner_alive_and_name_it_as_base():
    a = ap.full((3, 4), 2, "int32")
    v = a[1:][:, 2]
    assert v.base is a
    del a
    gc.collect()
    assert np.asarray(v).tolist() == [2, 2]


def test_transpose_and_T_match_numpy():
    a = ap.empty((2, 3, 4), "float64")
    n = np.asarray(a)
    n[...] = np.arange(24).reshape(2, 3, 4)
    for view, expected in [(a.T, n.T), (a.transpose(1, 0, 2), n.transpose(1, 0, 2)),
                           (a.transpose((2, 0, 1)), n.transpose((2, 0, 1))), (a.transpose(-1, 0, 1), n.transpose(-1, 0, 1))]:
        got = np.asarray(view)
        assert got.strides == expected.strides and np.array_equal(got, expected)
    assert not a.T.c_contiguous and a.T.f_contiguous


def test_reshape_matches_numpy_and_infers_one_extent():
    a = ap.empty((4, 6), "int16")
    n = np.asarray(a)
    n[...] = np.arange(24).reshape(4, 6)
    for shape in [(24,), (2, 12), (2, -1, 3), -1, (1, 24, 1)]:
        assert np.array_equal(np.asarray(a.reshape(shape)), n.reshape(shape))
    assert a.reshape(3, 8).shape == (3, 8)


def test_views_keep_every_protocol():
    base = ap._core._dlpack_live_exports()
    a = ap.zeros((5, 5), "float32")
    v = a[::2, 1:4]
    assert memoryview(v).shape == (3, 3)
    assert v.__array_interface__["strides"] == (40, 4)
    d = np.from_dlpack(v)
    assert d.ctypes.data == v.ptr and d.strides == (40, 4)
    r = np.from_dlpack(a[::-1])  # negative strides through DLPack
    assert r.strides == (-20, 4)
    del d, r
    assert ap._core._dlpack_live_exports() == base


@pytest.mark.parametrize(
    "key, message",
    [((0, 0, 0), "too many indices for array: array is 2-dimensional, but 3 were indexed"),
     ((5,), "index 5 is out of bounds for axis 0 with size 3"),
     ((0, -5), "index -5 is out of bounds for axis 1 with size 4"),
     ((Ellipsis, Ellipsis), "single ellipsis"),
     (([0, 1],), "got list"),
     ((1.0,), "got float"),
     ((True,), "got bool")],
)
def test_bad_indices_raise_index_error(key, message):
    a = ap.zeros((3, 4))
    with pytest.raises(IndexError, match=message.replace("(", r"\(").replace(")", r"\)")):
        a[key]


@pytest.mark.parametrize(
    "call, message",
    [(lambda a: a.reshape(5, 5), "cannot reshape an array of size 12 into a shape of size 25"),
     (lambda a: a.reshape(-1, -1), "only specify one unknown dimension"),
     (lambda a: a.reshape(5, -1), "cannot reshape an array of size 12"),
     (lambda a: a.T.reshape(12), "only C-contiguous arrays"),
     (lambda a: a.transpose(0, 0), "repeated axis 0"),
     (lambda a: a.transpose(0, 2), "axis 2 is out of bounds"),
     (lambda a: a.transpose(0,), "expected 2 axes, got 1")],
)
def test_bad_reshape_and_transpose_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call(ap.zeros((3, 4)))


@needs_gpu
@needs_cupy
def test_device_views_share_memory_with_cupy():
    import cupy
    a = ap.zeros((8, 8), "float32", memory="device")
    v = a[2:6, ::2]
    c = cupy.asarray(v)
    assert c.data.ptr == v.ptr and c.strides == (32, 8)
    c[...] = 1
    cupy.cuda.runtime.deviceSynchronize()
    assert cupy.asarray(a).sum().item() == 16


# ---- property-based (Hypothesis): views against NumPy doing the same ---------------------------

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


@pytest.mark.parametrize("key", [np.array([1]), np.array([0, 1]), np.array(1.0), np.array(True),
                                 np.array([[1]])], ids=repr)
def test_a_numpy_array_key_is_no_index_but_a_clear_index_error(key):
    a = ap.asarray(np.arange(6.0))
    with pytest.raises(IndexError, match=r"arrayport has no advanced indexing\); got numpy.ndarray"):
        a[key]


def test_a_0d_integer_numpy_array_key_is_an_integer_index():
    a = ap.asarray(np.arange(6.0) * 10)
    assert float(a[np.array(4)]) == 40.0 and float(a[np.int64(-1)]) == 50.0


def test_reshape_without_a_shape_is_a_type_error():
    with pytest.raises(TypeError, match=r"reshape: expected a shape .*got none"):
        ap.zeros(24).reshape()
    with pytest.raises(TypeError, match=r"reshape: expected a shape"):
        ap.zeros(1).reshape()
