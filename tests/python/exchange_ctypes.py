"""arrayport.Array's DLPack C exchange API table, bound slot by slot with ctypes as a C consumer
would call it (tests/python/array/test_exchange_api.py, and the stream tests on the GPU)."""

from __future__ import annotations

import ctypes

import arrayport as ap
from dlpack_ctypes import DLManagedTensorVersioned, DLPackVersion, DLTensor

pyapi = ctypes.pythonapi
pyapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
pyapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
pyapi.PyCapsule_GetName.restype = ctypes.c_char_p
pyapi.PyCapsule_GetName.argtypes = [ctypes.py_object]

P_MT = ctypes.POINTER(DLManagedTensorVersioned)
SET_ERROR = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p)
# PYFUNCTYPE: the GIL stays held and a Python error the slot sets is raised after the call.
_ALLOCATOR = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(DLTensor), ctypes.POINTER(P_MT),
                              ctypes.c_void_p, SET_ERROR)
_FROM_PY = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(P_MT))
# The tensor goes as an address: a pointer argument's conversion trips over the error left set.
_TO_PY = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
_DLTENSOR_FROM_PY = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(DLTensor))
_STREAM = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32,
                            ctypes.POINTER(ctypes.c_void_p))


class Header(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("prev_api", ctypes.c_void_p)]


class ExchangeAPI(ctypes.Structure):
    _fields_ = [("header", Header), ("managed_tensor_allocator", ctypes.c_void_p),
                ("managed_tensor_from_py_object_no_sync", ctypes.c_void_p),
                ("managed_tensor_to_py_object_no_sync", ctypes.c_void_p),
                ("dltensor_from_py_object_no_sync", ctypes.c_void_p),
                ("current_work_stream", ctypes.c_void_p)]


def table() -> ExchangeAPI:
    capsule = ap.Array.__dlpack_c_exchange_api__
    address = pyapi.PyCapsule_GetPointer(capsule, b"dlpack_exchange_api")
    return ExchangeAPI.from_address(address)


API = table()
allocate = _ALLOCATOR(API.managed_tensor_allocator)
from_py = _FROM_PY(API.managed_tensor_from_py_object_no_sync)
to_py_raw = _TO_PY(API.managed_tensor_to_py_object_no_sync)
dltensor_from_py = _DLTENSOR_FROM_PY(API.dltensor_from_py_object_no_sync)
current_work_stream = _STREAM(API.current_work_stream)


def live() -> int:
    return ap._core._dlpack_live_exports()


def steal(address: int):
    """The object at `address`, taking over the new reference the slot returned."""
    obj = ctypes.cast(address, ctypes.py_object).value
    ctypes.pythonapi.Py_DecRef(ctypes.py_object(obj))
    return obj


def address(tensor) -> int:
    return tensor if isinstance(tensor, int) else ctypes.cast(tensor, ctypes.c_void_p).value


def new_array(tensor) -> ap.Array:
    out = ctypes.c_void_p()
    assert to_py_raw(address(tensor), ctypes.byref(out)) == 0
    return steal(out.value)


