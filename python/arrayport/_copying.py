"""copy.copy, copy.deepcopy and pickle for arrayport.Array: copies of the data, never views.

A pickle holds a host copy of the bytes, the dtype, the shape and where the array lived (memory
kind, device). Unpickled, it lives there again where that exists: device memory on a machine
without a usable GPU comes back as host memory (managed and pinned memory are host memory there
anyway). Attached to the Array type when the package is imported.
"""

from __future__ import annotations

from typing import Any, cast

from . import cuda
from ._core import Array, empty


def _payload(a: Array) -> bytes:
    """The elements of `a` in C order, as bytes (any dtype, bfloat16 included)."""
    host = a.copy(memory="host")  # C-contiguous, and ready for the host to read
    return bytes(memoryview(cast(Any, host.reshape(-1).view("uint8")))) if host.nbytes else b""


def _rebuild(payload: bytes, shape: tuple[int, ...], dtype: str, memory: str,
             device: int) -> Array:
    out = empty(shape, dtype, memory="host")
    if payload:
        memoryview(cast(Any, out.reshape(-1).view("uint8")))[:] = payload
    if memory == "host" or (memory == "device" and not cuda.is_available()):
        return out
    return out.to(memory=cast(Any, memory),
                  device=device if memory in ("device", "managed") else None)


def _reduce(self: Array) -> tuple[Any, tuple[Any, ...]]:
    kind, index = self.device
    return _rebuild, (_payload(self), self.shape, self.dtype, self.memory,
                      index if kind == "cuda" else 0)


def _copy(self: Array) -> Array:
    return self.copy()


def _deepcopy(self: Array, memo: dict[int, Any]) -> Array:
    return self.copy()


setattr(Array, "__reduce__", _reduce)
setattr(Array, "__copy__", _copy)
setattr(Array, "__deepcopy__", _deepcopy)
