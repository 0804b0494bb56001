"""arrayport.ctypeslib.ndpointer: a checked ctypes argument for any array, as NumPy's ndpointer is
for ndarrays. libc's memset and memcpy are the C functions called."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import weakref

import numpy as np
import pytest

import arrayport as ap
from arrayport.ctypeslib import ndpointer
from conftest import HAS_GPU, needs_gpu

libc = ctypes.CDLL(ctypes.util.find_library("c"))


def memset(argtype):
    f = libc.memset
    f.argtypes = [argtype, ctypes.c_int, ctypes.c_size_t]
    f.restype = ctypes.c_void_p
    return f


@pytest.mark.parametrize("make", [lambda n: n, ap.view, ap.asarray, memoryview])
def test_passes_the_data_pointer_of_any_host_array(make):
    x = np.zeros(16, np.uint8)
    f = memset(ndpointer("uint8", ndim=1, writable=True, contiguous="C", memory="host"))
    f(make(x), 7, 16)
    assert x.tolist() == [7] * 16
    f(make(x[4:]), 1, 4)  # a view's own start
    assert x.tolist() == [7] * 4 + [1] * 4 + [7] * 8


@pytest.mark.parametrize("argtype, arg, error, message", [
    (ndpointer("float32"), np.zeros(3, np.float64), TypeError, "expected dtype float32, got float64"),
    (ndpointer(ndim=1), np.zeros((2, 2)), TypeError, r"expected 1 dimensions, got 2 \(shape \(2, 2\)\)"),
    (ndpointer(shape=(3,)), np.zeros(4), TypeError, r"expected shape \(3,\), got \(4,\)"),
    (ndpointer(writable=True), np.broadcast_to(np.zeros(1), 3), ValueError,
     "expected a writable array, got a read-only one"),
    (ndpointer(contiguous="C"), np.zeros(6)[::2], ValueError,
     r"expected a C-contiguous array, got strides \(16,\) \(bytes\) for shape \(3,\)"),
    (ndpointer(contiguous="F"), np.zeros((2, 3)), ValueError, "expected a Fortran-contiguous array"),
    (ndpointer(memory="device"), np.zeros(3), ValueError,
     r"expected memory the device can reach \(device, managed, pinned\), got host memory"),
    (ndpointer(), [1, 2], TypeError, "obj: expected an array, got list"),
])
def test_a_mismatch_is_a_precise_error_naming_the_argument(argtype, arg, error, message):
    f = libc.memset
    f.argtypes = [argtype, ctypes.c_int, ctypes.c_size_t]
    with pytest.raises(ctypes.ArgumentError, match=rf"^argument 1: {error.__name__}: {message}"):
        f(arg, 0, 0)


def test_the_argument_is_released_after_the_call():
    # The view that from_param returns holds the argument during the call; nothing holds it after.
    f = memset(ndpointer("uint8", writable=True))
    refs = []
    for _ in range(100):
        x = np.zeros(64, np.uint8)
        refs.append(weakref.ref(x))
        f(x, 1, 64)
        assert x.tolist() == [1] * 64
        del x
    gc.collect()
    assert sum(r() is not None for r in refs) <= 1  # ctypes may keep the last call's arguments


def test_an_empty_array_passes_its_own_address_or_null():
    x = np.zeros(0, np.uint8)
    assert ndpointer("uint8").from_param(x).value == (ap.view(x).ptr or None)


@pytest.mark.parametrize("bad, message", [
    (dict(ndim=-1), "ndim: expected None or an int >= 0, got -1"),
    (dict(ndim=True), "ndim: expected None or an int >= 0, got True"),
    (dict(contiguous="K"), "contiguous: expected None, 'C' or 'F', got 'K'"),
    (dict(memory="gpu"), "memory: expected None, 'host' or 'device', got 'gpu'"),
    (dict(ndim=2, shape=(3,)), r"shape \(3,\) has 1 dimensions, but ndim is 2"),
])
def test_bad_ndpointer_arguments_are_named(bad, message):
    with pytest.raises((TypeError, ValueError), match=rf"^ndpointer: {message}"):
        ndpointer(**bad)


def test_an_unknown_dtype_is_refused_when_the_type_is_made():
    with pytest.raises(TypeError, match="float128"):
        ndpointer("float128")


@needs_gpu
def test_device_memory_passes_for_a_kernel_and_is_refused_for_host_code():
    a = ap.zeros(8, "float32", memory="device")
    assert ndpointer("float32", memory="device").from_param(a).value == a.ptr
    with pytest.raises(ValueError, match="expected memory the host can reach"):
        ndpointer("float32", memory="host").from_param(a)


def test_without_a_gpu_nothing_device_side_is_needed():
    if HAS_GPU:
        pytest.skip("this machine has a GPU")
    assert ndpointer("float64", memory="host").from_param(np.ones(2)).value is not None
