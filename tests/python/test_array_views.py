"""Array views: basic indexing, transpose and reshape checked against NumPy on random shapes and
keys; every view shares memory and keeps every protocol; the root owner stays alive."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import arrayport as ap
from conftest import needs_gpu


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
def test_device_views_share_memory_with_cupy():
    cupy = pytest.importorskip("cupy")
    a = ap.zeros((8, 8), "float32", memory="device")
    v = a[2:6, ::2]
    c = cupy.asarray(v)
    assert c.data.ptr == v.ptr and c.strides == (32, 8)
    c[...] = 1
    cupy.cuda.runtime.deviceSynchronize()
    assert cupy.asarray(a).sum().item() == 16
