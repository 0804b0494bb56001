"""The example kernel through ctypes: arrayport.view() reads any array, .ptr hands it to C."""

from __future__ import annotations

import ctypes
from pathlib import Path

import arrayport

_lib = None


def load(directory: str | Path = Path(__file__).parent) -> ctypes.CDLL:
    """Loads libscale_ctypes.so from `directory` (default: beside this file)."""
    global _lib
    lib = ctypes.CDLL(str(Path(directory) / "libscale_ctypes.so"))
    lib.example_scale.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_float,
                                  ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    lib.example_scale.restype = ctypes.c_int
    _lib = lib
    return lib


def scale(x, f: float) -> None:
    """x *= f in place, for any writable float32 vector (NumPy, CuPy, torch, arrayport, ...)."""
    lib = _lib or load()
    v = arrayport.view(x)
    if str(v.dtype) != "float32" or v.ndim != 1:
        raise TypeError(f"x: expected a 1-dimensional float32 array, got {v.dtype} with shape {v.shape}")
    if v.readonly:
        raise BufferError("x: expected a writable array, got a read-only one")
    error = ctypes.create_string_buffer(512)
    stream = arrayport.cuda.current_stream().handle
    if lib.example_scale(v.ptr, v.shape[0], v.strides[0] // 4, f, stream or None, error, len(error)):
        raise RuntimeError(error.value.decode())
