"""A hand-made DLPack producer in ctypes, for tests: any field out of range, a counted deleter.

NumPy only ever produces well-formed tensors; this one produces whatever a test asks for, so the
consumer's checks (device, dtype, version, shape, NULL data, byte_offset, NULL strides) and its
deleter discipline (exactly once, also on every error path) can be observed. DLPackOnly hides an
array's buffer protocol so that a consumer must take its DLPack side.
"""

from __future__ import annotations

import ctypes

_pyapi = ctypes.pythonapi
_pyapi.PyCapsule_New.restype = ctypes.py_object
_pyapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


_DELETER_V = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER_V),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
]


# Every managed tensor made here, and its deleter, for the rest of the process: a deleter may run
# after its producer is torn down (the cycle collector clears a producer that keeps a view of
# itself in any order), and must find its tensor and its count then.
_KEEP_ALIVE: list = []


class Producer:
    """An object with __dlpack__ / __dlpack_device__ over a buffer it owns (or a raw address).

    Every field can be overridden. `deleted` counts deleter calls: the consumer must make it
    exactly the number of capsules it took.
    """

    def __init__(self, values=(1.0, 2.0, 3.0, 4.0), *, shape=None, strides=None, dtype=(2, 64, 1),
                 device=(1, 0), version=(1, 1), versioned=True, readonly=False, byte_offset=0,
                 data=None, ndim=None):
        self.storage = (ctypes.c_double * max(len(values), 1))(*values)
        self.shape_arr = (ctypes.c_int64 * max(len(shape or (len(values),)), 1))(*(shape or (len(values),)))
        self.strides_arr = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        self.ndim = len(shape or (len(values),)) if ndim is None else ndim
        self.dtype, self.device, self.version = dtype, device, version
        self.versioned, self.readonly, self.byte_offset = versioned, readonly, byte_offset
        self.data = ctypes.addressof(self.storage) if data is None else data
        self.deletions = [0]  # counted outside the producer's own attributes (see _KEEP_ALIVE)
        self.exported = 0
        self.streams = []

    def _tensor(self) -> DLTensor:
        t = DLTensor()
        t.data = self.data
        t.device = DLDevice(*self.device)
        t.ndim = self.ndim
        t.dtype = DLDataType(*self.dtype)
        t.shape = ctypes.cast(self.shape_arr, ctypes.POINTER(ctypes.c_int64))
        t.strides = (ctypes.cast(self.strides_arr, ctypes.POINTER(ctypes.c_int64))
                     if self.strides_arr is not None else None)
        t.byte_offset = self.byte_offset
        return t

    @property
    def deleted(self) -> int:
        return self.deletions[0]

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        self.streams.append(stream)
        self.exported += 1
        deletions = self.deletions
        if self.versioned:
            m = DLManagedTensorVersioned()
            m.version = DLPackVersion(*self.version)
            m.flags = 1 if self.readonly else 0
            m.dl_tensor = self._tensor()

            @_DELETER_V
            def deleter(_ptr):
                deletions[0] += 1

            m.deleter = deleter
            name = b"dltensor_versioned"
        else:
            m = DLManagedTensor()
            m.dl_tensor = self._tensor()

            @_DELETER
            def deleter(_ptr):
                deletions[0] += 1

            m.deleter = deleter
            name = b"dltensor"
        _KEEP_ALIVE.append((m, deleter))
        return _pyapi.PyCapsule_New(ctypes.addressof(m), name, None)


class DLPackOnly:
    """Hides an array's buffer protocol (NumPy's): a consumer must take its __dlpack__."""

    def __init__(self, x):
        self.x = x

    def __dlpack__(self, **kw):
        return self.x.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


class FakeJax:
    """Stands in for jaxlib._jax.ArrayImpl (the bridge knows the type by that name): __dlpack__
    over a Producer, and a version 2 interface (no stream, read-only) at another address, so the
    test sees which one served. `ready` is what is_ready() answers. With a GPU, the interface's
    address must be memory CUDA knows (JAX's is): pageable host memory is refused."""

    def __init__(self, ready=True, interface=True, address=0x40000):
        self.p = Producer(dtype=(2, 32, 1))
        self.ready, self.interface, self.address, self.asked = ready, interface, address, 0

    def is_ready(self):
        self.asked += 1
        if self.ready is None:
            raise RuntimeError("Array has been deleted.")
        return self.ready

    @property
    def __cuda_array_interface__(self):
        if not self.interface:  # JAX's CPU arrays, bfloat16
            raise AttributeError("__cuda_array_interface__ is only defined for GPU buffers.")
        return {"shape": (4,), "typestr": "<f4", "data": (self.address, True), "version": 2}

    def __dlpack__(self, **kw):
        return self.p.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.p.__dlpack_device__()


def fake_jax_type():
    return type("ArrayImpl", (FakeJax,), {"__module__": "jaxlib._jax"})  # a fresh cache entry


def fake_jax_address():
    """Where a stand-in JAX array's interface points, and what keeps that memory alive: device
    memory with a GPU (the bridge asks CUDA, and refuses pageable host memory), any address
    without one."""
    import arrayport as ap

    if ap.cuda.is_available():
        a = ap.empty((4,), "float32", memory="device")
        return a.ptr, a
    return 0x40000, None


# ---- the DLPack C exchange API (DLPack 1.2: a type attribute holding the table's address) --------

class _ExchangeHeader(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("prev_api", ctypes.c_void_p)]


_FROM_PY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p,
                            ctypes.POINTER(ctypes.POINTER(DLManagedTensorVersioned)))
_DLTENSOR_FROM_PY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(DLTensor))
_WORK_STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int32,
                                ctypes.POINTER(ctypes.c_void_p))


class _ExchangeAPI(ctypes.Structure):
    _fields_ = [("header", _ExchangeHeader), ("managed_tensor_allocator", ctypes.c_void_p),
                ("managed_tensor_from_py_object_no_sync", _FROM_PY),
                ("managed_tensor_to_py_object_no_sync", ctypes.c_void_p),
                ("dltensor_from_py_object_no_sync", _DLTENSOR_FROM_PY),
                ("current_work_stream", _WORK_STREAM)]


def exchange_type(stream=None, fail_stream=False):
    """A fresh type (a fresh cache entry) offering only the DLPack C exchange API, as PyTorch's
    tensors do: instances take Producer's arguments (and `fail_tensor`: the borrowed tensor is
    refused, returning -1), and the API hands out each one's tensor (owned, with a counted
    deleter, or borrowed for a call). Its current work stream is `stream`, or -1 with
    `fail_stream`."""

    def producer(obj_ptr):
        return ctypes.cast(obj_ptr, ctypes.py_object).value.p

    @_FROM_PY
    def from_py(obj_ptr, out):
        p = producer(obj_ptr)
        m = DLManagedTensorVersioned()
        m.version = DLPackVersion(*p.version)
        m.flags = 1 if p.readonly else 0
        m.dl_tensor = p._tensor()

        deletions = p.deletions

        @_DELETER_V
        def deleter(_ptr):
            deletions[0] += 1

        m.deleter = deleter
        _KEEP_ALIVE.append((m, deleter))
        p.exported += 1
        out[0] = ctypes.pointer(m)
        return 0

    @_DLTENSOR_FROM_PY
    def dltensor_from_py(obj_ptr, out):
        p = producer(obj_ptr)
        if getattr(p, "fail_tensor", False):
            return -1
        out[0] = p._tensor()  # borrowed: the producer keeps shape and strides
        return 0

    @_WORK_STREAM
    def work_stream(_device_type, _device_id, out):
        out[0] = stream
        return -1 if fail_stream else 0

    api = _ExchangeAPI()
    api.header.version = DLPackVersion(1, 2)
    api.managed_tensor_from_py_object_no_sync = from_py
    api.dltensor_from_py_object_no_sync = dltensor_from_py
    api.current_work_stream = work_stream

    def __init__(self, fail_tensor=False, **kw):
        self.p = Producer(**kw)
        self.p.fail_tensor = fail_tensor

    # DLPack 1.3's spelling, a capsule (the int address of 1.2 is taken only from C types).
    capsule = _pyapi.PyCapsule_New(ctypes.addressof(api), b"dlpack_exchange_api", None)
    return type("ExchangeProducer", (), {
        "__init__": __init__, "__dlpack_c_exchange_api__": capsule,
        "_keep": (api, from_py, dltensor_from_py, work_stream)})


def published_exchange_types():
    """arrayport._core's C API 1.5 exchange_types: (type or None, table address) per entry."""
    import arrayport

    class _Api(ctypes.Structure):  # the leading fields of arrayport_python_api_t, as laid out
        _fields_ = [("head", ctypes.c_void_p * 15), ("exchange_types", ctypes.POINTER(ctypes.c_void_p * 8))]

    get = _pyapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    api = _Api.from_address(get(arrayport._core._C_API, b"arrayport._core._C_API"))
    raw = list(api.exchange_types.contents)
    return [(ctypes.cast(raw[i], ctypes.py_object).value if raw[i] else None, raw[i + 1])
            for i in range(0, 8, 2)]
