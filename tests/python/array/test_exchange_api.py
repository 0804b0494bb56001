"""The DLPack C exchange API that arrayport.Array produces (type(a).__dlpack_c_exchange_api__),
driven slot by slot from ctypes as a C consumer would: every layout and dtype through the
non-owning DLTensor, owning tensors whose deleter runs exactly once (also on every error path),
the allocator's SetError, the current work stream; and TVM-FFI as a real consumer of it."""

from __future__ import annotations

import ctypes
import gc
import sys

import numpy as np
import pytest

import arrayport as ap
from conftest import HAS_GPU
from dlpack_ctypes import _KEEP_ALIVE, DLDataType, DLDevice, DLManagedTensorVersioned, DLPackVersion, DLTensor
from exchange_ctypes import (API, P_MT, SET_ERROR, ExchangeAPI, allocate, current_work_stream,
                             dltensor_from_py, from_py, live, new_array, pyapi, to_py_raw)

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
DL_CODE = {"b": 6, "i": 0, "u": 1, "f": 2, "c": 5}


def layouts(dtype: str):
    """An array of every layout a view can have: contiguous, strided, reversed, transposed,
    broadcast-free 0-d and empty."""
    base = np.arange(60).astype(dtype).reshape(3, 4, 5)
    yield "contiguous", base
    yield "strided", base[:, ::2, 1::2]
    yield "reversed", base[::-1, :, ::-1]
    yield "transposed", base.transpose(2, 0, 1)
    yield "0-d", np.array(base[1, 2, 3])
    yield "empty", base[:, 4:, :]
    yield "1-d", base.reshape(-1)


# ---- discovery ---------------------------------------------------------------------------------

def test_the_table_is_on_the_type_in_both_spellings():
    capsule = ap.Array.__dlpack_c_exchange_api__
    assert pyapi.PyCapsule_GetName(capsule) == b"dlpack_exchange_api"
    assert ap.Array.__c_dlpack_exchange_api__ == pyapi.PyCapsule_GetPointer(capsule, b"dlpack_exchange_api")
    assert (API.header.version.major, API.header.version.minor) == (1, 3)
    assert API.header.prev_api is None
    for name, _ in ExchangeAPI._fields_[1:]:
        assert getattr(API, name), f"{name} is NULL"
    a = ap.asarray(np.zeros(3))
    assert type(a).__dlpack_c_exchange_api__ is capsule  # what consumers look up: the type's


# ---- dltensor_from_py_object_no_sync -----------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_the_non_owning_tensor_describes_every_layout(dtype):
    for label, n in layouts(dtype):
        a = ap.asarray(n)
        t = DLTensor()
        before = sys.getrefcount(a)
        assert dltensor_from_py(a, ctypes.byref(t)) == 0
        assert sys.getrefcount(a) == before, label  # non-owning: no reference taken
        assert t.data == (a.__array_interface__["data"][0] or None), label
        assert (t.device.device_type, t.device.device_id) == (1, 0)
        assert t.ndim == n.ndim and t.byte_offset == 0
        assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (DL_CODE[n.dtype.kind], 8 * n.itemsize, 1)
        assert [t.shape[i] for i in range(n.ndim)] == list(n.shape), label
        assert [t.strides[i] for i in range(n.ndim)] == [s // n.itemsize for s in n.strides], label


def test_the_non_owning_tensor_refuses_a_read_only_array():
    # A DLTensor cannot say read-only: a consumer would write through it. The owning tensor can.
    a = ap._core._readonly_view(ap.asarray(np.arange(4.0)))
    with pytest.raises(BufferError, match="read-only Array has no DLTensor"):
        dltensor_from_py(a, ctypes.byref(DLTensor()))
    out = P_MT()
    assert from_py(a, ctypes.byref(out)) == 0 and out.contents.flags & 1
    out.contents.deleter(out)


def test_slots_refuse_an_object_that_is_not_an_array():
    for obj in (np.zeros(3), [1.0], None, ap.Array):
        with pytest.raises(TypeError, match="py_object: expected an arrayport.Array, got"):
            dltensor_from_py(obj, ctypes.byref(DLTensor()))
        out = P_MT()
        with pytest.raises(TypeError, match="py_object: expected an arrayport.Array, got"):
            from_py(obj, ctypes.byref(out))
        assert not out


# ---- managed_tensor_from_py_object_no_sync -----------------------------------------------------

@pytest.mark.parametrize("readonly", [False, True])
def test_the_owning_tensor_holds_the_array_until_its_deleter_runs_once(readonly):
    n = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::-2]
    a = ap.asarray(n)
    if readonly:
        a = ap._core._readonly_view(a)
    refs, exports = sys.getrefcount(a), live()
    out = P_MT()
    assert from_py(a, ctypes.byref(out)) == 0
    m = out.contents
    assert sys.getrefcount(a) == refs + 1 and live() == exports + 1
    assert m.version.major == 1
    assert m.flags & 1 == int(readonly)
    assert m.dl_tensor.data == a.__array_interface__["data"][0]
    assert [m.dl_tensor.shape[i] for i in range(2)] == [3, 2]
    assert [m.dl_tensor.strides[i] for i in range(2)] == [4, -2]
    m.deleter(out)
    assert sys.getrefcount(a) == refs and live() == exports


# ---- managed_tensor_to_py_object_no_sync -------------------------------------------------------

def test_an_array_over_its_own_owning_tensor_shares_the_memory_and_deletes_once():
    n = np.arange(20, dtype=np.int64).reshape(4, 5)[1:, ::2]
    a = ap.asarray(n)
    exports = live()
    out = P_MT()
    assert from_py(a, ctypes.byref(out)) == 0
    b = new_array(out)
    assert isinstance(b, ap.Array)
    assert b.shape == (3, 3) and b.__array_interface__["data"][0] == a.__array_interface__["data"][0]
    np.asarray(b)[0, 0] = -7
    assert n[0, 0] == -7 and np.array_equal(np.asarray(b), n)
    assert live() == exports + 1
    del b
    gc.collect()
    assert live() == exports


class Made:
    """A hand-made owning tensor whose deleter counts its calls."""

    def __init__(self, values=np.arange(6.0), shape=(2, 3), strides=None, dtype=(2, 64, 1),
                 device=(1, 0), version=(1, 3), flags=0, ndim=None, byte_offset=0):
        self.values = np.ascontiguousarray(values)
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        self.deleted = [0]
        m = DLManagedTensorVersioned()
        m.version = DLPackVersion(*version)
        m.flags = flags
        t = m.dl_tensor
        t.data = self.values.ctypes.data
        t.device = DLDevice(*device)
        t.ndim = len(shape) if ndim is None else ndim
        t.dtype = DLDataType(*dtype)
        t.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        t.strides = None if strides is None else ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64))
        t.byte_offset = byte_offset
        deleted = self.deleted

        @ctypes.CFUNCTYPE(None, P_MT)
        def deleter(_ptr):
            deleted[0] += 1

        m.deleter = deleter
        self.m = m
        _KEEP_ALIVE.append((m, deleter, self.values, self.shape, self.strides))

    @property
    def pointer(self) -> int:
        return ctypes.addressof(self.m)


@pytest.mark.parametrize("strides, byte_offset, expect", [
    (None, 0, [[0, 1, 2], [3, 4, 5]]),                 # compact row-major (strides NULL)
    ((1, 2), 0, [[0, 2, 4], [1, 3, 5]]),               # column-major
    ((3, 1), 8, [[1, 2, 3], [4, 5, 6]]),               # byte_offset applied
])
def test_a_foreign_owning_tensor_becomes_an_array_and_is_deleted_once(strides, byte_offset, expect):
    made = Made(values=np.arange(7.0), strides=strides, byte_offset=byte_offset)
    b = new_array(made.pointer)
    assert np.array_equal(np.asarray(b), np.array(expect, dtype=np.float64))
    assert made.deleted[0] == 0
    view = b[1]  # a view keeps the tensor too
    del b
    gc.collect()
    assert made.deleted[0] == 0
    assert float(view[0]) == expect[1][0]
    del view
    gc.collect()
    assert made.deleted[0] == 1


def test_a_read_only_owning_tensor_gives_a_read_only_array():
    made = Made(flags=1)
    b = new_array(made.pointer)
    with pytest.raises((ValueError, BufferError, TypeError)):
        b[0, 0] = 1.0
    del b
    gc.collect()
    assert made.deleted[0] == 1


@pytest.mark.parametrize("fields, error, match", [
    (dict(device=(7, 0)), ValueError, "unsupported DLPack device type 7"),
    (dict(dtype=(2, 8, 1)), TypeError, "unsupported DLPack dtype"),
    (dict(dtype=(2, 32, 4)), TypeError, "unsupported DLPack dtype"),
    (dict(version=(2, 0)), BufferError, "expected a DLPack 1.x tensor, got version 2.0"),
    (dict(ndim=-1), ValueError, "expected at most 64 dimensions, got -1"),
    (dict(ndim=65), ValueError, "expected at most 64 dimensions, got 65"),
    (dict(shape=(2**62, 4)), ValueError, "managed_tensor_to_py_object_no_sync: shape"),
    (dict(shape=(-1, 3)), ValueError, "-1"),
    (dict(strides=(2**61, 1)), ValueError, "2305843009213693952"),
    (dict(byte_offset=2**64 - 8), ValueError, "past the end of the address space"),
    (dict(device=(2, -1)), ValueError, "expected a CUDA device id >= 0, got -1"),
    (dict(device=(13, -3)), ValueError, "expected a CUDA device id >= 0, got -3"),
])
def test_a_malformed_owning_tensor_raises_and_is_deleted_exactly_once(fields, error, match):
    made = Made(**fields)
    out = ctypes.c_void_p()
    with pytest.raises(error, match=match):
        to_py_raw(made.pointer, ctypes.byref(out))
    assert not out.value
    assert made.deleted[0] == 1


def test_a_tensor_that_reaches_below_address_zero_is_refused():
    # data 8 with strides (-3, -1) over (2, 3) float64 reaches 8 - 32 bytes: as every import.
    made = Made(shape=(2, 3), strides=(-3, -1))
    made.m.dl_tensor.data = 8
    with pytest.raises(ValueError, match="past the ends of the address space"):
        to_py_raw(made.pointer, ctypes.byref(ctypes.c_void_p()))
    assert made.deleted[0] == 1


def test_a_cpu_tensor_of_any_device_id_is_the_cpu():
    made = Made(device=(1, 7))
    b = new_array(made.pointer)
    assert b.device == ("cpu", 0) and b.__dlpack_device__() == (1, 0)
    del b
    gc.collect()
    assert made.deleted[0] == 1


def test_a_null_tensor_raises():
    with pytest.raises(ValueError, match="tensor is NULL"):
        to_py_raw(None, ctypes.byref(ctypes.c_void_p()))


# ---- managed_tensor_allocator ------------------------------------------------------------------

class Errors:
    def __init__(self):
        self.seen = []

        @SET_ERROR
        def set_error(ctx, kind, message):
            self.seen.append((ctx, kind.decode(), message.decode()))

        self.callback = set_error


def prototype(shape, dtype=(2, 32, 1), device=(1, 0), ndim=None):
    keep = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    t = DLTensor()
    t.device = DLDevice(*device)
    t.ndim = len(shape) if ndim is None else ndim
    t.dtype = DLDataType(*dtype)
    t.shape = ctypes.cast(keep, ctypes.POINTER(ctypes.c_int64))
    return t, keep


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 4), (2, 3, 5)])
def test_the_allocator_makes_a_writable_compact_tensor(dtype, shape):
    np_dtype = np.dtype(dtype)
    t, keep = prototype(shape, dtype=(DL_CODE[np_dtype.kind], 8 * np_dtype.itemsize, 1))
    errors, out, exports = Errors(), P_MT(), live()
    assert allocate(ctypes.byref(t), ctypes.byref(out), 1234, errors.callback) == 0, errors.seen
    assert not errors.seen
    m = out.contents
    assert m.flags & 1 == 0 and m.version.major == 1
    assert (m.dl_tensor.device.device_type, m.dl_tensor.ndim) == (1, len(shape))
    assert [m.dl_tensor.shape[i] for i in range(len(shape))] == list(shape)
    compact = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]  # row-major, in elements
    assert [m.dl_tensor.strides[i] for i in range(len(shape))] == compact
    b = new_array(out)  # the consumer hands it back to the producer's type
    assert b.shape == shape and b.dtype == dtype
    values = (np.arange(int(np.prod(shape))) % 2).astype(np_dtype).reshape(shape)
    np.asarray(b)[...] = values
    assert np.array_equal(np.asarray(b), values)
    del b
    gc.collect()
    assert live() == exports


@pytest.mark.parametrize("kwargs, kind, match", [
    (dict(shape=(3,), device=(7, 0)), "ValueError", "unsupported DLPack device type 7"),
    (dict(shape=(3,), dtype=(2, 8, 1)), "TypeError", "unsupported dtype"),
    (dict(shape=(3,), ndim=-2), "ValueError", "expected 0 to 64 dimensions, got -2"),
    (dict(shape=(3,), device=(1, -1)), "ValueError", "expected a device id >= 0, got -1"),
    (dict(shape=(2**62, 8)), "ValueError", "prototype"),
    (dict(shape=(-3,)), "ValueError", "prototype"),
    (dict(shape=(2**40, 2**12)), "MemoryError", "bytes"),
])
def test_the_allocator_reports_errors_through_set_error(kwargs, kind, match):
    t, keep = prototype(**kwargs)
    errors, out, exports = Errors(), P_MT(), live()
    assert allocate(ctypes.byref(t), ctypes.byref(out), 99, errors.callback) == -1
    assert not out
    assert len(errors.seen) == 1, errors.seen
    ctx, got_kind, message = errors.seen[0]
    assert ctx == 99 and got_kind == kind and match in message, errors.seen
    assert live() == exports
    # Nothing left set for the caller: the error went through SetError alone.
    assert ctypes.pythonapi.PyErr_Occurred() is None or not ctypes.pythonapi.PyErr_Occurred()


def test_the_allocator_refuses_null_arguments():
    errors = Errors()
    assert allocate(None, ctypes.byref(P_MT()), None, errors.callback) == -1
    assert errors.seen[-1][1:] == ("ValueError", "managed_tensor_allocator: prototype is NULL")


@pytest.mark.skipif(HAS_GPU, reason="checks the machine without a GPU")
def test_the_allocator_without_a_gpu_says_so_for_device_memory():
    t, keep = prototype((4,), device=(2, 0))
    errors, out = Errors(), P_MT()
    assert allocate(ctypes.byref(t), ctypes.byref(out), None, errors.callback) == -1
    assert errors.seen[0][1].endswith("NoDeviceError"), errors.seen


# ---- current_work_stream -----------------------------------------------------------------------

def test_the_current_work_stream_of_the_cpu_is_null():
    out = ctypes.c_void_p(1234)
    assert current_work_stream(1, 0, ctypes.byref(out)) == 0
    assert out.value is None


@pytest.mark.parametrize("device_type, device_id, match", [
    (7, 0, "unsupported DLPack device type 7"),
    (2, -1, "expected a device id >= 0, got -1"),
])
def test_the_current_work_stream_refuses_what_it_does_not_know(device_type, device_id, match):
    with pytest.raises(ValueError, match=match):
        current_work_stream(device_type, device_id, ctypes.byref(ctypes.c_void_p()))


@pytest.mark.skipif(HAS_GPU, reason="checks the machine without a GPU")
def test_the_current_work_stream_without_a_gpu_is_the_default_stream():
    out = ctypes.c_void_p(1234)
    assert current_work_stream(2, 0, ctypes.byref(out)) == 0
    assert out.value is None


# ---- a real consumer: TVM-FFI ------------------------------------------------------------------

@pytest.fixture(scope="module")
def tvm_ffi():
    return pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi is not installed (pip install '.[test]')")


@pytest.mark.parametrize("dtype", ["float32", "int16", "complex64", "bool"])
def test_tvm_ffi_takes_an_array_through_the_exchange_api_zero_copy(tvm_ffi, dtype):
    exports = live()
    for label, n in layouts(dtype):
        n = np.asarray(n)
        a = ap.asarray(n)
        t = tvm_ffi.from_dlpack(a)
        assert tuple(t.shape) == n.shape, label
        assert live() == exports + 1, label  # TVM-FFI holds the owning tensor
        back = np.from_dlpack(t)
        if n.size:
            assert back.ctypes.data == n.ctypes.data, label
        assert np.array_equal(back, n), label
        del t, back
        gc.collect()
        assert live() == exports, label  # its deleter ran, once


def test_a_tvm_ffi_callback_receives_and_returns_arrays(tvm_ffi):
    n = np.arange(20, dtype=np.float64).reshape(4, 5)
    a = ap.asarray(n)
    seen = []

    def callback(x):
        seen.append((type(x), x.shape, x.__array_interface__["data"][0]))
        return x

    f = tvm_ffi.convert_func(callback, tensor_cls=ap.Array)
    exports = live()
    r = f(a)
    assert seen == [(ap.Array, (4, 5), n.ctypes.data)]  # through managed_tensor_to_py_object
    assert isinstance(r, ap.Array) and r.__array_interface__["data"][0] == n.ctypes.data
    np.asarray(r)[0, 0] = -1.0
    assert n[0, 0] == -1.0
    del r, seen[:]
    gc.collect()
    assert live() == exports
