"""Checked ctypes arguments: ``ndpointer``, as NumPy's ``numpy.ctypeslib.ndpointer``, for any array
``arrayport.view`` takes (NumPy, CuPy, PyTorch, JAX, Numba, memoryview, arrayport).

    lib.scale.argtypes = [arrayport.ctypeslib.ndpointer("float32", ndim=1, writable=True,
                                                        contiguous="C", memory="device"),
                          ctypes.c_int64, ctypes.c_float]
    lib.scale(x, x.size, 2.0)

Each call views the argument (ordering its producer's pending work before the current stream, as
``view`` does), checks it, and passes its data pointer; the view, and with it the producer's
buffer, is kept alive until the C function returns. A mismatch raises TypeError (dtype, rank,
shape) or ValueError (writability, contiguity, memory) naming what was expected and what came.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Optional, Sequence

from ._core import Array, empty, view

__all__ = ["ndpointer"]

# Memory kinds code on each side can read and write.
_REACHABLE = {"host": ("host", "pinned", "managed"), "device": ("device", "managed", "pinned")}


def ndpointer(dtype: Any = None, ndim: Optional[int] = None,
              shape: Optional[Sequence[int]] = None, *, writable: bool = False,
              contiguous: Optional[str] = None, memory: Optional[str] = None) -> type:
    """A ctypes type for ``argtypes`` whose ``from_param`` checks an array and passes its data
    pointer. dtype: as ``arrayport.empty`` takes it (None: any); ndim, shape: None for any;
    writable: refuse read-only arrays; contiguous: "C", "F" or None; memory: "host" (CPU code
    reads it: host, pinned or managed memory), "device" (a kernel reads it: device, managed or
    pinned memory) or None."""
    want_dtype = None if dtype is None else empty(0, dtype, memory="host").dtype
    if ndim is not None and (isinstance(ndim, bool) or not isinstance(ndim, int) or ndim < 0):
        raise TypeError(f"ndpointer: ndim: expected None or an int >= 0, got {ndim!r}")
    want_shape = None if shape is None else tuple(int(n) for n in shape)
    if want_shape is not None and ndim is not None and len(want_shape) != ndim:
        raise ValueError(f"ndpointer: shape {want_shape} has {len(want_shape)} dimensions, "
                         f"but ndim is {ndim}")
    if contiguous not in (None, "C", "F"):
        raise ValueError(f"ndpointer: contiguous: expected None, 'C' or 'F', got {contiguous!r}")
    if memory not in (None, "host", "device"):
        raise ValueError(f"ndpointer: memory: expected None, 'host' or 'device', got {memory!r}")

    def check(obj: Any) -> Array:
        v = view(obj)
        if want_dtype is not None and v.dtype != want_dtype:
            raise TypeError(f"expected dtype {want_dtype}, got {v.dtype}")
        if ndim is not None and v.ndim != ndim:
            raise TypeError(f"expected {ndim} dimensions, got {v.ndim} (shape {v.shape})")
        if want_shape is not None and v.shape != want_shape:
            raise TypeError(f"expected shape {want_shape}, got {v.shape}")
        if writable and v.readonly:
            raise ValueError("expected a writable array, got a read-only one")
        if contiguous == "C" and not v.c_contiguous:
            raise ValueError(f"expected a C-contiguous array, got strides {v.strides} (bytes) "
                             f"for shape {v.shape}")
        if contiguous == "F" and not v.f_contiguous:
            raise ValueError(f"expected a Fortran-contiguous array, got strides {v.strides} "
                             f"(bytes) for shape {v.shape}")
        if memory is not None and v.memory not in _REACHABLE[memory]:
            raise ValueError(f"expected memory the {memory} can reach "
                             f"({', '.join(_REACHABLE[memory])}), got {v.memory} memory")
        return v

    parts = [str(want_dtype) if want_dtype is not None else "any",
             f"{ndim}d" if ndim is not None else "", "writable" if writable else "",
             contiguous or "", memory or ""]
    name = "ndpointer_" + "_".join(p for p in parts if p)
    return type(name, (_ArrayPointer,), {"_check": staticmethod(check), "__qualname__": name})


class _ArrayPointer(ctypes.c_void_p):
    """What ndpointer makes: a c_void_p whose from_param checks (its subclass's _check)."""

    _check: Callable[[Any], Array]

    @classmethod
    def from_param(cls, obj: Any) -> _ArrayPointer:
        # ctypes prefixes the argument's position to an exception raised here.
        v = cls._check(obj)
        p = cls(v.ptr or None)  # an empty array may have no address
        p._view = v  # type: ignore[attr-defined]  # alive until the call returns
        return p
