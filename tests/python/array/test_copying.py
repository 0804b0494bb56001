"""copy.copy, copy.deepcopy and pickle of an Array: independent copies with the same dtype, shape,
values and memory kind, over every dtype x shape x layout (bfloat16 included); device memory
comes back as device memory on a GPU, as host memory without one."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import arrayport as ap
from conftest import HAS_GPU, needs_gpu

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
SHAPES = [(), (0,), (1,), (7,), (3, 4), (2, 0, 3), (2, 3, 4)]


def make(dtype: str, shape: tuple) -> ap.Array:
    n = (np.arange(int(np.prod(shape)), dtype=np.float32) % 5 - 2).reshape(shape)
    return ap.ops.astype(n, dtype) if dtype == "bfloat16" else ap.asarray(n.astype(dtype))


def bits(a: ap.Array) -> np.ndarray:
    """The elements as NumPy sees them (bfloat16 as its uint16 bits)."""
    return np.asarray(a.view("uint16") if a.dtype == "bfloat16" else a)


def assert_same_array(got: ap.Array, want: ap.Array) -> None:
    assert isinstance(got, ap.Array)
    assert (got.shape, got.dtype, got.memory, got.device) == (want.shape, want.dtype, want.memory, want.device)
    assert np.array_equal(bits(got), bits(want))
    assert not got.readonly
    if want.nbytes:
        assert got.ptr != want.ptr  # a copy, never a view


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_pickle_copy_and_deepcopy_give_equal_independent_arrays(dtype, shape):
    a = make(dtype, shape)
    for memory in ["host", "managed", "pinned"]:
        b = a.copy(memory=memory)
        for got in (pickle.loads(pickle.dumps(b, protocol=p)) for p in range(2, pickle.HIGHEST_PROTOCOL + 1)):
            assert_same_array(got, b)
        assert_same_array(copy.copy(b), b)
        assert_same_array(copy.deepcopy(b), b)


@pytest.mark.parametrize("key", [np.s_[::2, ::-1], np.s_[1:, 2], np.s_[None, :, 1::3]], ids=str)
def test_a_strided_or_read_only_view_pickles_its_elements_only(key):
    base = ap.asarray(np.arange(24.0).reshape(4, 6))
    v = base[key]
    got = pickle.loads(pickle.dumps(v))
    assert got.shape == v.shape and got.c_contiguous
    assert np.array_equal(np.asarray(got), np.asarray(v))
    ro = ap._core._readonly_view(v)
    assert np.array_equal(np.asarray(pickle.loads(pickle.dumps(ro))), np.asarray(v))
    # The copy is independent: writing it leaves the original alone.
    if got.size:
        np.asarray(got).flat[0] = -1.0
        assert np.asarray(v).flat[0] != -1.0


def test_containers_of_arrays_deepcopy_each_once():
    a = ap.asarray(np.arange(3.0))
    box = [a, a, {"x": a}]
    out = copy.deepcopy(box)
    assert out[0] is not a and all(np.array_equal(np.asarray(x), [0.0, 1.0, 2.0])
                                   for x in (out[0], out[1], out[2]["x"]))


@pytest.mark.skipif(HAS_GPU, reason="checks the machine without a GPU")
def test_device_memory_unpickles_as_host_memory_without_a_gpu():
    # What unpickling runs for an array that lived in device memory on GPU 0 of a GPU machine.
    rebuild, args = ap.asarray(np.arange(4.0)).__reduce__()
    got = rebuild(*args[:3], "device", 0)
    assert got.memory == "host" and np.array_equal(np.asarray(got), np.arange(4.0))


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "complex128"])
def test_device_memory_pickles_back_to_device_memory(dtype):
    a = make(dtype, (3, 5)).copy(memory="device")
    got = pickle.loads(pickle.dumps(a))
    assert (got.memory, got.device, got.shape, got.dtype) == ("device", a.device, a.shape, a.dtype)
    assert np.array_equal(bits(got.copy(memory="host")), bits(a.copy(memory="host")))
