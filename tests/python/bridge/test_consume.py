"""arrayport.view(): any array as an Array without a copy, through every protocol of the bridge
(the consume engine of src/bridge/), with the producer's checks and lifetimes."""

from __future__ import annotations

import array
import gc
import sys

import numpy as np
import pytest

import arrayport as ap
from arrayport import _core
from dlpack_ctypes import (DLDataType, DLPackOnly, FakeJax, Producer, exchange_type, fake_jax_address,
                           fake_jax_type, published_exchange_types)

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


class LegacyDLPackOnly(DLPackOnly):
    """A producer from before DLPack 1.0: no max_version keyword (TypeError), legacy capsules."""

    def __dlpack__(self, stream=None):
        return self.x.__dlpack__()


class CAIOnly:
    """A PyCUDA-style object: only __cuda_array_interface__ (the dict is given as it is)."""

    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


def cai(**over):
    d = {"shape": (4,), "typestr": "<f4", "data": (0x10000, False), "version": 3,
         "strides": None, "stream": None}
    d.update(over)
    return {k: v for k, v in d.items() if v is not ...}


def same_memory(view: ap.Array, x: np.ndarray) -> None:
    assert view.ptr == x.__array_interface__["data"][0]
    assert view.shape == x.shape
    assert view.strides == x.strides
    np.testing.assert_array_equal(np.asarray(view), x)


# ---- NumPy through the buffer protocol ---------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_every_dtype_is_viewed_in_place(dtype):
    x = (np.arange(24) % 7).astype(dtype).reshape(2, 3, 4)
    v = _core.view(x)
    assert _core._acquire_protocol(x) == "buffer"
    assert v.dtype == x.dtype
    same_memory(v, x)


@pytest.mark.parametrize("make", [
    lambda x: x,                      # C order
    lambda x: np.asfortranarray(x),   # F order
    lambda x: x[:, ::2],              # strided
    lambda x: x[::-1, ::-3],          # negative strides
    lambda x: x.T,                    # transposed
    lambda x: x[1:1],                 # zero-size
    lambda x: x[0, 0, ...],           # 0-d
], ids=["c", "f", "strided", "negative", "transposed", "zero-size", "0-d"])
def test_numpy_layouts_are_viewed_with_their_strides(make):
    x = make(np.arange(30, dtype=np.float64).reshape(5, 6))
    v = _core.view(x)
    same_memory(v, x)
    assert v.c_contiguous == x.flags.c_contiguous
    assert v.f_contiguous == x.flags.f_contiguous


def test_writes_are_seen_on_both_sides():
    x = np.zeros((3, 4), np.float32)
    v = _core.view(x)
    np.asarray(v)[1, 2] = 7.0
    assert x[1, 2] == 7.0
    x[0, 0] = 3.0
    assert np.asarray(v)[0, 0] == 3.0


def test_view_keeps_the_producer_alive_and_releases_it():
    x = np.arange(5.0)
    before = sys.getrefcount(x)
    v = _core.view(x)
    assert v.base is x
    assert sys.getrefcount(x) > before
    del v
    gc.collect()
    assert sys.getrefcount(x) == before


def test_view_outlives_the_producer_handle():
    x = np.arange(6.0) * 2
    v = _core.view(x)
    del x
    gc.collect()
    np.testing.assert_array_equal(np.asarray(v), np.arange(6.0) * 2)


def test_readonly_numpy_gives_a_readonly_view():
    x = np.arange(3.0)
    x.flags.writeable = False
    assert _core.view(x).readonly


# ---- other buffer producers ---------------------------------------------------------------------

def test_memoryview_bytes_and_array_array():
    m = memoryview(bytearray(b"\x01\x02\x03"))
    v = _core.view(m)
    assert (v.shape, str(v.dtype), v.readonly) == ((3,), "uint8", False)
    b = _core.view(b"xyz")
    assert b.readonly and np.asarray(b).tolist() == [120, 121, 122]
    a = array.array("i", [5, -6, 7])
    va = _core.view(a)
    assert str(va.dtype) == "int32" and np.asarray(va).tolist() == [5, -6, 7]
    np.asarray(va)[0] = 50
    assert a[0] == 50


def test_memoryview_of_a_2d_array_keeps_shape_and_strides():
    x = np.arange(12, dtype=np.int16).reshape(3, 4)[:, 1:]
    same_memory(_core.view(memoryview(x)), x)


def test_an_arrayport_array_is_returned_as_it_is():
    a = ap.zeros((2, 3), "float32", memory="host")
    assert _core.view(a) is a
    assert _core._acquire_protocol(a) == "array"


# ---- DLPack -------------------------------------------------------------------------------------

@pytest.mark.parametrize("wrapper", [DLPackOnly, LegacyDLPackOnly], ids=["versioned", "legacy"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_through_dlpack(wrapper, dtype):
    x = (np.arange(12) % 5).astype(dtype).reshape(3, 4)[:, ::-2]
    p = wrapper(x)
    assert _core._acquire_protocol(p) == "dlpack"
    v = _core.view(p)
    same_memory(v, x)


def test_a_refused_buffer_falls_back_to_dlpack():
    import mmap

    class DeviceOnly(mmap.mmap):  # as CuPy: offers the buffer protocol, refuses it for its memory
        producer = Producer()

        def __dlpack__(self, **kw):
            return self.producer.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.producer.__dlpack_device__()

    refusing = DeviceOnly(-1, 16)
    refusing.close()  # a closed mmap raises ValueError from its buffer
    assert np.asarray(_core.view(refusing)).tolist() == [1.0, 2.0, 3.0, 4.0]
    assert _core._acquire_protocol(refusing) == "dlpack"
    # The fallback gave host memory: the refusal was this object's, not the type's (a type is
    # asked for buffers no more only once the fallback gives memory the CPU cannot reach).
    assert _core._acquire_protocol(DeviceOnly(-1, 16)) == "buffer"
    closed = mmap.mmap(-1, 16)
    closed.close()
    with pytest.raises(ValueError, match="closed"):  # nothing to fall back on: the exporter's error
        _core.view(closed)


def test_numpys_own_buffer_refusals_stand_and_leave_numpy_on_its_fast_path():
    with pytest.raises(ValueError, match="buffer"):  # NumPy exports no datetime64 buffers
        _core.view(np.zeros(2, "M8[s]"))
    assert _core._acquire_protocol(np.zeros(3)) == "buffer"


def test_a_type_error_of_another_cause_does_not_make_a_producer_legacy():
    class Flaky(DLPackOnly):
        calls = 0

        def __dlpack__(self, **kw):
            type(self).calls += 1
            if type(self).calls == 1:
                raise TypeError("a transient failure")
            return super().__dlpack__(**kw)

    x = np.arange(3.0)
    x.flags.writeable = False
    with pytest.raises(BufferError, match="readonly"):  # the legacy retry: NumPy refuses it
        _core.view(Flaky(x))                           # for a read-only array
    v = _core.view(Flaky(x))        # still asked for versioned capsules: the read-only flag holds
    assert v.readonly and np.asarray(v).tolist() == [0.0, 1.0, 2.0]


def test_dlpack_readonly_flag_is_honoured():
    x = np.arange(4.0)
    x.flags.writeable = False
    assert _core.view(DLPackOnly(x)).readonly


def test_dlpack_deleter_runs_exactly_once_when_the_view_dies():
    p = Producer()
    v = _core.view(p)
    assert np.asarray(v).tolist() == [1.0, 2.0, 3.0, 4.0]
    assert p.deleted == 0
    del v
    gc.collect()
    assert (p.exported, p.deleted) == (1, 1)


def test_dlpack_legacy_capsule_and_null_strides_and_byte_offset():
    p = Producer(values=(1, 2, 3, 4, 5, 6), shape=(2, 2), versioned=False, byte_offset=16)
    v = _core.view(p)
    assert np.asarray(v).tolist() == [[3.0, 4.0], [5.0, 6.0]]
    del v
    assert p.deleted == 1


def test_dlpack_explicit_strides():
    p = Producer(values=tuple(range(6)), shape=(3,), strides=(2,))
    assert np.asarray(_core.view(p)).tolist() == [0.0, 2.0, 4.0]


def test_dlpack_cpu_producer_gets_stream_none():
    p = Producer()
    _core.view(p)
    assert p.streams == [None]


def test_dlpack_stream_argument_follows_where_the_type_last_exported():
    class Mixed(Producer):  # a type of its own: a fresh entry in the bridge's type cache
        pass

    host = Mixed()
    _core.view(host)  # first sight: __dlpack_device__ says host, so stream=None
    assert host.streams == [None]
    cuda = Mixed(device=(2, 0))  # the type's last answer (host) is assumed ...
    try:
        _core.view(cuda)
    except ap.NoDeviceError:
        pass  # CPU machine: the view itself needs a device; the calls below happened anyway
    # ... and CUDA data exported without the consumer's stream is given back and asked for again
    assert cuda.streams == [None, 1]
    gc.collect()
    assert (cuda.exported, cuda.deleted) == (2, 2)
    again = Mixed(device=(2, 0))
    try:
        _core.view(again)
    except ap.NoDeviceError:
        pass
    assert again.streams == [1]  # now the type is known to export CUDA data
    back = Mixed()
    _core.view(back)  # host data again: a producer that accepts the stream is simply used
    assert back.streams == [1] and back.exported == 1


def assert_legacy_producer_is_asked_for_max_version_once():
    class Legacy(Producer):  # a fresh type: nothing cached about it yet
        refused = 0

        def __dlpack__(self, stream=None, **kw):
            if kw:
                type(self).refused += 1
                raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
            return super().__dlpack__(stream=stream)

    for _ in range(3):
        assert np.asarray(_core.view(Legacy(versioned=False))).tolist() == [1.0, 2.0, 3.0, 4.0]
    assert Legacy.refused == 1


def test_dlpack_legacy_producer_is_asked_for_max_version_once():
    assert_legacy_producer_is_asked_for_max_version_once()


def test_what_a_type_taught_is_kept_after_a_hundred_other_types():
    # The type cache hashes types: a program that has met many (NumPy's scalar types are a dozen)
    # still remembers a new one's legacy __dlpack__ after one refusal.
    for i in range(100):
        np.asarray(_core.view(type(f"Other{i}", (Producer,), {})()))
    assert_legacy_producer_is_asked_for_max_version_once()


@pytest.mark.parametrize("kw, exc, match", [
    ({"device": (10, 0)}, ValueError, r"unsupported DLPack device type 10"),
    ({"dtype": (2, 80, 1)}, TypeError, r"unsupported DLPack dtype"),
    ({"dtype": (2, 32, 4)}, TypeError, r"unsupported DLPack dtype"),
    ({"version": (2, 0)}, BufferError, r"unsupported DLPack version 2\.0"),
    ({"shape": (2, -3)}, ValueError, r"non-negative extents"),
    ({"data": 0}, ValueError, r"NULL but the array has elements"),
    ({"ndim": 65, "shape": (1,) * 65}, ValueError, r"at most 64 dimensions, got 65"),
    ({"shape": (2**62, 4), "strides": (2**62, 1)}, ValueError,
     r"has 18446744073709551616 elements, more than 2\^63-1"),
], ids=["device", "dtype", "lanes", "major-version", "negative-shape", "null-data", "ndim-65",
        "overflow"])
def test_bad_dlpack_tensors_raise_and_still_call_the_deleter(kw, exc, match):
    p = Producer(**kw)
    with pytest.raises(exc, match=match):
        _core.view(p)
    gc.collect()
    assert (p.exported, p.deleted) == (1, 1)


def test_dlpack_null_data_is_fine_for_zero_elements():
    p = Producer(values=(), shape=(0, 3), data=0)
    v = _core.view(p)
    assert v.shape == (0, 3) and v.size == 0


def test_dlpack_that_returns_no_capsule():
    class Bad:
        def __dlpack__(self, **kw):
            return 42

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(ValueError, match=r"__dlpack__ returned a int.*expected a capsule"):
        _core.view(Bad())


def test_dlpack_producer_errors_propagate():
    class Raises:
        def __dlpack__(self, **kw):
            raise RuntimeError("producer refuses")

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(RuntimeError, match="producer refuses"):
        _core.view(Raises())


# ---- __cuda_array_interface__ (parsing; no memory is touched) -----------------------------------

def test_cai_only_object_is_viewed_with_its_fields():
    v = _core.view(CAIOnly(cai(shape=(2, 3), strides=(4, 8), data=(0x20000, True))))
    assert _core._acquire_protocol(CAIOnly(cai())) == "cai"
    assert (v.shape, v.strides, v.ptr, v.readonly, str(v.dtype)) == ((2, 3), (4, 8), 0x20000, True, "float32")


def test_dlpack_strides_that_overflow_fall_back_to_the_cuda_array_interface():
    class Both:  # as CuPy 14 exports x[:, ::-1]: stride -1 divided as unsigned, 2^62 - 1
        def __init__(self):
            self.p = Producer(values=(1.0, 2.0, 3.0), shape=(3,), strides=(2**62 - 1,))

        @property
        def __cuda_array_interface__(self):
            return cai(shape=(3,), typestr="<f8", strides=(-8,), data=(0x30010, False))

        def __dlpack__(self, **kw):
            return self.p.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.p.__dlpack_device__()

    obj = Both()
    v = _core.view(obj)
    assert (v.shape, v.strides, v.ptr) == ((3,), (-8,), 0x30010)
    del v
    gc.collect()
    assert (obj.p.exported, obj.p.deleted) == (1, 1)  # the refused tensor was given back
    with pytest.raises(ValueError, match=r"the stride of axis 0 of shape \(3,\) is 36893488147419103224 "
                                         r"bytes \(4611686018427387903 elements of 8 bytes\)"):
        _core.view(obj, protocol="dlpack")  # no other protocol allowed: the error stands


def test_ready_jax_arrays_read_only_as_arguments_come_through_their_interface():
    ArrayImpl = fake_jax_type()
    address, keep = fake_jax_address()
    x = ArrayImpl(address=address)
    assert _core._acquire_protocol(x, reads_only=True) == "cai"
    assert (x.asked, x.p.exported) == (1, 0)  # no DLPack tensor made
    # A view that may be written or kept takes __dlpack__, whose capsule holds JAX's reference.
    assert _core._acquire_protocol(x) == "dlpack"
    assert _core.view(x).ptr == x.p.data
    assert x.asked == 1  # readiness is asked only where the interface may serve
    # Pending: the DLPack stream handshake orders the computation; no interface: DLPack too.
    for pending in (ArrayImpl(ready=False), ArrayImpl(interface=False)):
        assert _core._acquire_protocol(pending, reads_only=True) == "dlpack"
        gc.collect()
        assert (pending.asked, pending.p.exported, pending.p.deleted) == (1, 1, 1)
    # Deleted: __dlpack__'s own error is the one raised.
    deleted = ArrayImpl(ready=None)
    deleted.__dlpack__ = None
    with pytest.raises(TypeError):
        _core._acquire_protocol(deleted, reads_only=True)
    # Only the type of that name is trusted to mean it: another class with the same methods
    # goes through __dlpack__ as ever.
    other = FakeJax()
    assert _core._acquire_protocol(other, reads_only=True) == "dlpack"
    assert other.asked == 0


def test_cai_pytorch_v2_is_accepted():
    v = _core.view(CAIOnly(cai(version=2, stream=...)))
    assert v.shape == (4,)


@pytest.mark.parametrize("over, exc, match", [
    ({"shape": ...}, ValueError, r"has no 'shape' key"),
    ({"typestr": ...}, ValueError, r"has no 'typestr' key"),
    ({"data": ...}, ValueError, r"has no 'data' key"),
    ({"version": ...}, ValueError, r"has no 'version' key"),
    ({"shape": [4]}, ValueError, r"\['shape'\] is a list, expected a tuple"),
    ({"shape": (4.0,)}, ValueError, r"\['shape'\] holds a float, expected an int"),
    ({"typestr": 4}, ValueError, r"\['typestr'\] is a int, expected a str"),
    ({"typestr": "<V7"}, TypeError, r"unsupported typestr '<V7'"),
    ({"typestr": ">f4"}, ValueError, r"big-endian"),
    ({"data": 0x1000}, ValueError, r"must be a tuple \(ptr, readonly\)"),
    ({"data": ("x", False)}, ValueError, r"\['data'\] holds a str"),
    ({"strides": (4, 4)}, ValueError, r"strides'\] must be None or a tuple of 1 ints"),
    ({"strides": (3,)}, ValueError, r"not a multiple of the itemsize 4"),
    ({"mask": object()}, ValueError, r"masked arrays are not supported"),
    ({"version": 9}, ValueError, r"unsupported __cuda_array_interface__ version 9"),
    ({"shape": (-1,)}, ValueError, r"non-negative extents"),
    ({"data": (0, False)}, ValueError, r"NULL but the array has elements"),
    ({"shape": (1,) * 65}, ValueError, r"at most 64 dimensions, got 65"),
    ({"shape": (2**40, 2**40), "strides": (2**40, 4)}, ValueError,
     r"has 1208925819614629174706176 elements, more than 2\^63-1"),
    ({"stream": 0}, ValueError, r"\['stream'\] is 0, which the protocol disallows"),
    ({"stream": "s"}, ValueError, r"\['stream'\] holds a str"),
], ids=lambda x: str(x)[:30])
def test_bad_cai_dicts_raise_clear_errors(over, exc, match):
    obj = CAIOnly(cai(**over))
    before = sys.getrefcount(obj)
    with pytest.raises(exc, match=match):
        _core.view(obj)
    assert sys.getrefcount(obj) == before


def test_cai_that_is_not_a_dict():
    with pytest.raises(ValueError, match=r"__cuda_array_interface__ is a list, expected a dict"):
        _core.view(CAIOnly([1]))


def test_cai_zero_size_with_null_data():
    v = _core.view(CAIOnly(cai(shape=(0,), data=(0, False))))
    assert v.size == 0


# ---- errors and protocol choice -----------------------------------------------------------------

@pytest.mark.parametrize("obj", [3, "abc", None, [1, 2, 3], object()])
def test_non_arrays_raise_type_error_naming_the_type(obj):
    with pytest.raises(TypeError, match=rf"obj: expected an array, got {type(obj).__name__}"):
        _core.view(obj)


def test_unsupported_buffer_formats_raise_type_error():
    with pytest.raises(TypeError, match=r"unsupported buffer format 'g'"):
        _core.view(np.zeros(3, np.longdouble))
    with pytest.raises(TypeError, match=r"unsupported buffer format"):
        _core.view(np.zeros(3, dtype=[("a", "f4"), ("b", "i4")]))


def test_big_endian_buffers_raise_value_error():
    with pytest.raises(ValueError, match="big-endian"):
        _core.view(np.zeros(3, ">f4"))


def test_forced_protocols():
    x = np.arange(4.0)
    assert _core._acquire_protocol(x, "dlpack") == "dlpack"
    assert np.asarray(_core.view(x, protocol="dlpack")).tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="none of the protocols allowed here"):
        _core.view(x, protocol="cai")
    with pytest.raises(ValueError, match="protocol: expected None, 'array'"):
        _core.view(x, protocol="nope")


def test_refcounts_are_unchanged_after_many_views():
    x = np.ones((4, 4), np.float32)
    d = DLPackOnly(x)
    c = CAIOnly(cai())
    counts = [sys.getrefcount(o) for o in (x, d, c)]
    for _ in range(20000):
        _core.view(x)
        _core.view(d)
        _core.view(c)
    gc.collect()
    assert [sys.getrefcount(o) for o in (x, d, c)] == counts


def test_writable_request_on_read_only_data_is_one_buffer_error():
    """Every producer's refusal of PyBUF_WRITABLE becomes the same BufferError (through the C API
    that C, Cython and SWIG callers use)."""
    import ctypes

    api = ctypes.pythonapi
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    table = api.PyCapsule_GetPointer(_core._C_API, b"arrayport._core._C_API")
    assert table
    x = np.zeros(3, np.float32)
    x.flags.writeable = False
    for obj in (x, b"abc", memoryview(b"abc")):
        with pytest.raises(BufferError, match=r"obj: expected a writable array, got a read-only one"):
            _acquire_writable(obj)


def _c_api():
    """The _C_API table through ctypes: fields as in include/arrayport/python/api.h."""
    import ctypes

    class Api(ctypes.Structure):
        _fields_ = [("abi_major", ctypes.c_uint32), ("abi_minor", ctypes.c_uint32),
                    ("array_type", ctypes.c_void_p), ("array_view_offset", ctypes.c_ssize_t),
                    ("current_stream", ctypes.c_void_p), ("array_from_view", ctypes.c_void_p),
                    ("cuda_error", ctypes.c_void_p), ("out_of_memory_error", ctypes.c_void_p),
                    ("no_device_error", ctypes.c_void_p),
                    ("acquire", ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p,
                                                  ctypes.c_uint32, ctypes.c_void_p,
                                                  ctypes.POINTER(ctypes.c_void_p))),
                    ("release", ctypes.PYFUNCTYPE(None, ctypes.c_void_p)),
                    # since 1.1
                    ("set_cuda_error", ctypes.PYFUNCTYPE(None, ctypes.c_char_p, ctypes.c_int,
                                                         ctypes.c_char_p, ctypes.c_char_p,
                                                         ctypes.c_int)),
                    # since 1.2
                    ("acquire_view", ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object,
                                                       ctypes.c_void_p, ctypes.c_void_p)),
                    ("traverse", ctypes.c_void_p), ("numpy_array_type", ctypes.c_void_p),
                    # since 1.3
                    ("borrow_typed", ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, DLDataType,
                                                       ctypes.c_int32, ctypes.c_uint32,
                                                       ctypes.c_void_p, ctypes.c_void_p)),
                    # since 1.5: ARRAYPORT_EXCHANGE_TYPES (type, table) pairs
                    ("exchange_types", ctypes.POINTER(ctypes.c_void_p * 8))]

    api = ctypes.pythonapi
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return Api.from_address(api.PyCapsule_GetPointer(_core._C_API, b"arrayport._core._C_API"))


def _acquire_writable(obj):
    # The C API's acquire() through ctypes.
    import ctypes

    table = _c_api()
    view = ctypes.create_string_buffer(72)
    handle = ctypes.c_void_p()
    try:
        table.acquire(obj, b"obj", 1, ctypes.addressof(view), ctypes.byref(handle))
    finally:
        table.release(handle)


def test_c_api_1_1_raises_cuda_errors_as_arrayport_does():
    """set_cuda_error (C API 1.1) raises what a cuda_error inside _core would: the type and the
    code, name, api and sticky attributes. Extensions reach it through set_error_from_current_exception."""
    table = _c_api()
    assert (table.abi_major, table.abi_minor) >= (1, 1)
    with pytest.raises(ap.CudaError) as info:
        table.set_cuda_error(b"k<<<...>>> failed", 719, b"cudaErrorLaunchFailure", b"k<<<...>>>", 0)
    e = info.value
    assert type(e) is ap.CudaError and str(e) == "k<<<...>>> failed"
    assert (e.code, e.name, e.api, e.sticky) == (719, "cudaErrorLaunchFailure", "k<<<...>>>", True)
    with pytest.raises(ap.OutOfMemoryError) as info:
        table.set_cuda_error(None, 2, None, None, 1)  # NULL strings read as ""
    e = info.value
    assert (str(e), e.code, e.name, e.api, e.sticky) == ("", 2, "", "", False)


def _request_type():
    """arrayport_acquire_request_t (C API 1.2) through ctypes, and arrayport_acquired_t."""
    import ctypes

    class Request(ctypes.Structure):
        _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("name", ctypes.c_char_p),
                    ("dtypes", ctypes.c_void_p), ("n_dtypes", ctypes.c_uint32), ("ndim", ctypes.c_int32),
                    ("shape", ctypes.c_void_p), ("options", ctypes.c_uint32),
                    ("protocols", ctypes.c_uint32), ("stream", ctypes.c_void_p)]

    class Acquired(ctypes.Structure):
        _fields_ = [("view", ctypes.c_char * 72), ("handle", ctypes.c_void_p),
                    ("protocol", ctypes.c_uint32), ("reserved", ctypes.c_uint32),
                    ("extents", ctypes.c_int64 * 16)]

    return Request, Acquired


def _acquire_view(obj, size=None, tail=b"", **fields):
    """acquire_view through ctypes with a request of `size` bytes (default: this build's), followed
    by `tail`; returns (status, protocol) and releases what was acquired."""
    import ctypes

    Request, Acquired = _request_type()
    table = _c_api()
    req = Request(size=0, ndim=-1, **fields)
    raw = ctypes.create_string_buffer(bytes(req) + tail)
    ctypes.c_uint32.from_buffer(raw).value = ctypes.sizeof(Request) + len(tail) if size is None else size
    out = Acquired()
    try:
        status = table.acquire_view(obj, ctypes.addressof(raw), ctypes.addressof(out))
        return status, out.protocol
    finally:
        if out.handle:
            table.release(out.handle)


def test_c_api_1_2_acquire_view_takes_a_versioned_request():
    table = _c_api()
    assert (table.abi_major, table.abi_minor) == (1, 5)
    assert _acquire_view(np.arange(3.0)) == (0, 0x04)  # the buffer protocol (NumPy's struct)
    assert _acquire_view(ap.zeros((2,), "float32", memory="host")) == (0, 0x01)
    assert _acquire_view(memoryview(b"ab"), name=b"m")[0] == 0
    # A request from a newer extension: extra bytes that are zero are defaults, and accepted.
    assert _acquire_view(np.arange(3.0), tail=bytes(16)) == (0, 0x04)


def test_c_api_1_3_borrow_typed_borrows_only_what_it_can_decide_alone():
    import ctypes

    table = _c_api()
    view = ctypes.create_string_buffer(72)
    ext = (ctypes.c_int64 * 16)()

    def borrow(obj, dtype=(2, 64, 1), ndim=1, flags=0):
        return table.borrow_typed(obj, DLDataType(*dtype), ndim, flags, ctypes.addressof(view),
                                  ctypes.addressof(ext))

    x = exchange_type()(values=(1.0, 2.0, 3.0, 4.0, 5.0, 6.0), shape=(2, 3))
    p = x.p
    assert borrow(x, ndim=2, flags=1) == 1  # writable, anywhere: the non-owning tensor, held by none
    assert ctypes.c_void_p.from_buffer(view, 8).value == p.data and list(ext[:4]) == [2, 3, 3, 1]
    assert ctypes.c_int32.from_buffer(view, 32).value == 2                # ndim
    assert ctypes.c_void_p.from_buffer(view, 56).value == id(x)           # owner, not held
    assert p.exported == 0 and p.deletions[0] == 0
    # Anything else is left to acquire_view, with no error set: another dtype or rank, flags it
    # does not know or that contradict, host-only reach where the producer says host (it is), a
    # producer it does not borrow from (NumPy, an Array), a rank past 8.
    assert borrow(x, ndim=2, flags=2) == 1
    for obj, dtype, ndim, flags in [(x, (2, 32, 1), 2, 0), (x, (2, 64, 1), 1, 0), (x, (2, 64, 1), 2, 0x8),
                                    (x, (2, 64, 1), 2, 0x6), (x, (2, 64, 1), 2, 0x4),
                                    (np.zeros((2, 3)), (2, 64, 1), 2, 0),
                                    (ap.zeros((2, 3), "float64"), (2, 64, 1), 2, 0),
                                    (x, (2, 64, 1), 9, 0), (x, (2, 64, 1), -1, 0), (3, (2, 64, 1), 0, 0)]:
        assert borrow(obj, dtype, ndim, flags) == 0, (obj, dtype, ndim, flags)


def test_c_api_1_5_publishes_the_exchange_types_it_borrowed_from():
    import ctypes

    table = _c_api()
    view = ctypes.create_string_buffer(72)
    ext = (ctypes.c_int64 * 16)()

    def borrow(obj, ndim=1):
        return table.borrow_typed(obj, DLDataType(2, 64, 1), ndim, 0, ctypes.addressof(view),
                                  ctypes.addressof(ext))

    def address(t):
        return ctypes.pythonapi.PyCapsule_GetPointer(t.__dlpack_c_exchange_api__, b"dlpack_exchange_api")

    ctypes.pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
    ctypes.pythonapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    types = [exchange_type() for _ in range(6)]
    # A refused borrow (another rank) publishes nothing; a borrowed one publishes the type once.
    assert borrow(types[0](), ndim=2) == 0
    assert types[0] not in [t for t, _ in published_exchange_types()]
    assert borrow(types[0]()) == 1 and borrow(types[0]()) == 1
    assert [t for t, _ in published_exchange_types()].count(types[0]) == 1
    assert (types[0], address(types[0])) in published_exchange_types()
    listed = sys.getrefcount(types[0])  # the table holds a reference to each type it lists
    # Four entries: a fifth type takes the place of the one published longest ago.
    for t in types[1:5]:
        assert borrow(t()) == 1
    evicted = sys.getrefcount(types[0])  # outside the assert, whose rewriting holds a reference
    assert evicted == listed - 1  # dropped with its entry
    entries = published_exchange_types()
    assert [t for t, _ in entries].count(None) == 0
    assert set(map(id, (t for t, _ in entries))) == set(map(id, types[1:5]))
    assert all(a == address(t) for t, a in entries)
    # Arguments of a published type keep the table's answers (read inline by the typed
    # parameters, parameter.hpp): the same view through borrow_typed.
    x = types[4](values=(1.0, 2.0, 3.0))
    assert borrow(x) == 1 and list(ext[:2]) == [3, 1]
    assert ctypes.c_void_p.from_buffer(view, 8).value == x.p.data


def test_c_api_1_2_refuses_requests_it_cannot_read():
    with pytest.raises(ValueError, match=r"expected a request of at least 56 bytes, got 8 bytes"):
        _acquire_view(np.arange(3.0), size=8)
    with pytest.raises(ValueError, match=r"asks for options this arrayport._core \(C API 1.5, 56 bytes\)"):
        _acquire_view(np.arange(3.0), tail=b"\0\0\0\1")
    with pytest.raises(ValueError, match="both host-only and device-only"):
        _acquire_view(np.arange(3.0), flags=0x2 | 0x4)


@pytest.mark.parametrize("bit", range(5, 32))
def test_c_api_1_2_refuses_flags_and_options_it_does_not_know(bit):
    # A newer extension's constraint bit that this _core would not apply is refused, not dropped.
    with pytest.raises(ValueError, match=rf"flags 0x{1 << bit:x} and options 0x0 that this"):
        _acquire_view(np.arange(3.0), flags=1 << bit)
    if bit == 5:  # ARRAYPORT_REQUEST_PRODUCER_STREAM (1.4)
        assert _acquire_view(np.arange(3.0), options=1 << bit) == (0, 0x04)
        return
    with pytest.raises(ValueError, match=rf"flags 0x0 and options 0x{1 << bit:x} that this"):
        _acquire_view(np.arange(3.0), options=1 << bit)


def test_c_api_1_4_the_producers_stream():
    import ctypes

    table = _c_api()
    # Not beside a given stream: the two contradict.
    with pytest.raises(ValueError, match="both a given stream and the producer's"):
        _acquire_view(np.arange(3.0), options=0x1 | 0x20)
    # A producer that states no stream (host memory here) is on arrayport's current stream, which
    # the view's `stream` names (the legacy default stream, NULL, on this thread): borrowed or held.
    view = ctypes.create_string_buffer(b"\xff" * 72, 72)
    ext = (ctypes.c_int64 * 16)()
    x = exchange_type()(values=(1.0, 2.0, 3.0), shape=(3,))
    assert table.borrow_typed(x, DLDataType(2, 64, 1), 1, 0x100, ctypes.addressof(view),
                              ctypes.addressof(ext)) == 1
    assert ctypes.c_void_p.from_buffer(view, 64).value is None and list(ext[:2]) == [3, 1]
    # A flag past the known ones is left to acquire_view, which says what it does not know.
    assert table.borrow_typed(x, DLDataType(2, 64, 1), 1, 0x200, ctypes.addressof(view),
                              ctypes.addressof(ext)) == 0
    for obj in (x, np.arange(3.0), ap.zeros((3,), "float64", memory="host"), memoryview(b"abc")):
        assert _acquire_view(obj, options=0x20)[0] == 0


@pytest.mark.parametrize("obj", [memoryview(b"abcd"), np.arange(3.0)[::2]])
def test_c_api_1_2_fills_every_field_of_the_view(obj):
    # The caller's out may hold anything: the version and the stream come back written.
    import ctypes

    Request, Acquired = _request_type()
    table = _c_api()
    raw = ctypes.create_string_buffer(bytes(Request(size=ctypes.sizeof(Request), ndim=-1)))
    out = Acquired()
    ctypes.memset(ctypes.addressof(out), 0xAB, ctypes.sizeof(out))
    assert table.acquire_view(obj, ctypes.addressof(raw), ctypes.addressof(out)) == 0
    try:
        view = bytes(out.view)
        major, minor = int.from_bytes(view[0:4], "little"), int.from_bytes(view[4:8], "little")
        assert (major, minor) == (1, 0)  # ARRAYPORT_C_ABI_VERSION of c/view.h
        assert b"\xab" * 8 not in view  # no field left as the caller's bytes
    finally:
        table.release(out.handle)


def test_c_api_1_2_refusals_name_the_argument():
    with pytest.raises(BufferError, match="^x: expected a writable array"):
        _acquire_view(b"abc", name=b"x", flags=0x1)
    with pytest.raises(TypeError, match="^x: expected an array, got object"):
        _acquire_view(object(), name=b"x")


@pytest.mark.skipif(not ap.cuda.is_available(), reason="needs CUDA to tell pageable memory apart")
def test_jax_interface_over_pageable_host_memory_falls_back_to_dlpack():
    # JAX's unpinned_host arrays: its interface would hand out memory the GPU cannot read.
    host = np.zeros(4, np.float32)
    x = fake_jax_type()(address=host.ctypes.data)
    assert _core._acquire_protocol(x, reads_only=True) == "dlpack"

