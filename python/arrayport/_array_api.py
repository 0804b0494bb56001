"""asarray and from_dlpack as the Python array API defines them, over view(), copy() and to().

Both return an input that needs no change without a copy: an arrayport.Array as it is, any other
array (NumPy, CuPy, PyTorch, JAX, Numba, memoryview, ...) as a view of its memory. They copy when
the dtype, memory kind or device asked for differs from the input's, or when ``copy=True``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple, Union

from ._core import Array, _offers_array_protocol, copy as _copy, cuda as _cuda, empty as _empty, view as _view

if TYPE_CHECKING:
    from ._core import _MemoryKind as MemoryKind  # "device", "managed", "pinned" or "host"

# DLPack device types (as __dlpack_device__ and Array.device spell them) -> memory kinds.
_KIND_OF_DEVICE: Dict[Union[str, int], MemoryKind] = {
    "cpu": "host", "cuda": "device", "cuda_managed": "managed", "cuda_host": "pinned",
    1: "host", 2: "device", 13: "managed", 3: "pinned"}
_GPU_KINDS = ("device", "managed")
_PYTHON_DATA = (bool, int, float, complex, list, tuple)

Device = Union[int, str, Tuple[Union[str, int], int]]
"""An int (a CUDA device index, as in copy() and to()), "cpu", or a device as Array.device
(("cuda", 0), ("cpu", 0), ...) or __dlpack_device__ ((2, 0), (1, 0), ...) spells it."""


def asarray(obj: Any, dtype: Any = None, *, memory: Optional[MemoryKind] = None,
            device: Optional[Device] = None, copy: Optional[bool] = None,
            stream: Any = None) -> Array:
    """`obj` as an arrayport.Array, without a copy where possible (the array API's asarray).

    obj: an arrayport.Array (returned as it is), any array that speaks the buffer protocol,
    DLPack or the CUDA array interface (viewed in place, its pending work ordered before
    `stream`), or Python data: a scalar or nested sequences, built by NumPy and copied into
    `memory` (the default memory kind when None).
    dtype, memory, device: what the result must have; None keeps the input's. device is an int (a
    CUDA device index: memory= names the kind, or else the input's device or managed kind is
    kept, or else device memory), "cpu", or a device tuple as Array.device or __dlpack_device__
    gives it (("cuda", 1), (2, 1), ...), which names the memory kind too.
    copy: True always copies; False never does and raises ValueError when a copy would be
    needed; None copies only when needed.
    stream: where the copy runs and what a viewed producer's work is ordered before (None: the
    current stream).
    """
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"asarray: copy: expected True, False or None, got {copy!r}")
    kind, index = _placement(memory, device, "asarray")
    if isinstance(obj, Array):
        a = obj
    elif isinstance(obj, _PYTHON_DATA) or not _offers_array_protocol(obj):
        return _from_python_data(obj, dtype, kind, index, copy, stream)
    else:
        a = _view(obj, stream)
    return _place(a, dtype, kind, index, copy, stream, "asarray", ValueError)


def from_dlpack(x: Any, /, *, device: Optional[Device] = None, copy: Optional[bool] = None) -> Array:
    """An arrayport.Array of `x`'s memory through x.__dlpack__ (the array API's from_dlpack).

    Zero-copy unless `device` differs from x's or copy=True. device: as in asarray (None: x's
    device). copy: True always copies; False never does and raises BufferError when a copy
    would be needed (the standard's choice); None copies only when needed. Copies run on the
    current stream, which x's pending work is ordered before.
    """
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"from_dlpack: copy: expected True, False or None, got {copy!r}")
    kind, index = _placement(None, device, "from_dlpack")
    if isinstance(x, Array):
        a = x
    elif hasattr(x, "__dlpack__"):
        a = _view(x, protocol="dlpack")
    else:
        raise TypeError("from_dlpack: x: expected an object with __dlpack__ and __dlpack_device__, "
                        f"got {type(x).__name__}")
    return _place(a, None, kind, index, copy, None, "from_dlpack", BufferError)


# ---- helpers -------------------------------------------------------------------------------------

def _placement(memory: Optional[MemoryKind], device: Any,
               what: str) -> Tuple[Optional[MemoryKind], Optional[int]]:
    """(memory kind or None, CUDA device index or None) from memory= and device=."""
    if device is None or isinstance(device, _cuda.Device) or (
            hasattr(type(device), "__index__") and not isinstance(device, (bool, Array))):
        # An index (NumPy integers too) or a Device: checked as every other device= is.
        return memory, _cuda._device_index(device, what)
    if isinstance(device, str):
        spelled = (device, 0)
    elif isinstance(device, tuple) and len(device) == 2 and isinstance(device[1], int):
        spelled = device
    else:
        raise TypeError(f"{what}: device: expected None, a device index (int), an "
                        "arrayport.cuda.Device, 'cpu' or a (type, index) tuple such as ('cuda', 0), "
                        f"got {device!r}")
    try:
        kind = _KIND_OF_DEVICE[spelled[0]]
    except (KeyError, TypeError):
        raise ValueError(f"{what}: device: expected a device type 'cpu', 'cuda', 'cuda_managed', "
                         f"'cuda_host' (or DLPack's 1, 2, 13, 3), got {spelled[0]!r}") from None
    if memory is not None and memory != kind:
        raise ValueError(f"{what}: device {device!r} is {kind} memory, but memory={memory!r} was given")
    return kind, (spelled[1] if kind in _GPU_KINDS else None)


@lru_cache(maxsize=64)
def _cached_dtype(dtype: Any) -> Any:
    return _empty(0, dtype, memory="host").dtype


def _resolved_dtype(dtype: Any, what: str) -> Any:
    """dtype= as arrayport reads it (a NumPy dtype, or 'bfloat16')."""
    try:
        try:
            return _cached_dtype(dtype)
        except TypeError:
            if getattr(type(dtype), "__hash__", None) is not None:
                raise
            return _empty(0, dtype, memory="host").dtype  # unhashable: not cached, same rules
    except TypeError as e:
        message = str(e)
        raise TypeError(f"{what}: {message}" if message.startswith("dtype:")
                        else f"{what}: dtype: {message}") from None


def _from_python_data(obj: Any, dtype: Any, kind: Optional[MemoryKind], index: Optional[int],
                      copy: Optional[bool], stream: Any) -> Array:
    if copy is False:
        raise ValueError(f"asarray: copy=False, but obj is a {type(obj).__name__}, which "
                         "needs a copy to become an array")
    import numpy as np

    dt = None if dtype is None else _resolved_dtype(dtype, "asarray")
    if str(dt) == "bfloat16":  # NumPy has none: its float32, rounded where it will live
        return _to_bfloat16(_from_python_data(obj, "float32", kind, index, copy, stream))
    # NumPy converts Python data itself where it knows the dtype (ranges checked as its own asarray).
    n = np.asarray(obj, dtype=dt)
    if n.dtype.kind not in "biufc":  # objects, strings, ...: no arrayport dtype
        raise TypeError("asarray: obj: expected an array, a Python scalar or a nested sequence of "
                        f"numbers, got {type(obj).__name__}, which NumPy converts to dtype {n.dtype}")
    if kind is None and index is not None:  # a device index alone: the default kind on it
        return _copy(n, dtype=dt, device=index, stream=stream)
    return _copy(n, dtype=dt, memory=kind, device=index, stream=stream)


def _place(a: Array, dtype: Any, kind: Optional[MemoryKind], index: Optional[int],
           copy: Optional[bool], stream: Any, what: str, no_copy_error: type) -> Array:
    """`a` with dtype, memory kind and device as asked: itself, or a copy (always when copy=True)."""
    dt = None if dtype is None else _resolved_dtype(dtype, what)
    if index is not None and kind is None:
        kind = a.memory if a.memory in _GPU_KINDS else "device"
    if copy is False:
        reason = _copy_reason(a, dt, kind, index)
        if reason:
            raise no_copy_error(f"{what}: copy=False, but {reason}, which needs a copy")
        return a
    if dt is not None and (str(dt) == "bfloat16") != (a.dtype == "bfloat16"):
        # NumPy, which converts dtypes here, has no bfloat16: ops.astype converts where the data
        # is placed (always a new array, so copy=True is met; it waits for the placed array's
        # stream, as every op does).
        from . import ops

        placed = a.to(memory=kind, device=index, stream=stream)
        try:
            return ops.astype(placed, str(dt))
        except TypeError as e:  # a dtype ops does not compute in (int16, ...)
            raise TypeError(f"{what}: converting {a.dtype} to {dt}: {e}") from None
    return a.to(memory=kind, device=index, stream=stream, dtype=dt, copy=bool(copy))


def _to_bfloat16(a: Array) -> Array:
    from . import ops

    return ops.astype(a, "bfloat16")


def _copy_reason(a: Array, dt: Any, kind: Optional[MemoryKind],
                 index: Optional[int]) -> Optional[str]:
    """What would make Array.to() copy `a` (None: nothing), for copy=False's error."""
    if dt is not None and str(dt) != str(a.dtype):
        return f"dtype {dt} was asked for and the input is {a.dtype}"
    if kind is None and index is None:
        return None
    kind = kind or a.memory
    if kind == a.memory and (kind not in _GPU_KINDS or index in (None, a.device[1])):
        return None
    # Where the memory would come from (without a GPU, pinned and managed requests are host
    # memory): a zero-byte array allocates nothing.
    probe = _empty(0, "uint8", memory=kind, device=index)
    if probe.memory == a.memory and (probe.memory not in _GPU_KINDS or probe.device == a.device):
        return None
    asked = f"{kind} memory" + (f" on device {index}" if index is not None else "")
    return f"{asked} was asked for and the input is in {_where(a)}"


def _where(a: Array) -> str:
    return f"{a.memory} memory" + (f" on device {a.device[1]}" if a.memory in _GPU_KINDS else "")


# ---- arguments and results of the namespace's functions (array_api.py and its modules) --------

def _as_array(x: Any) -> Array:
    """x as it is when an Array, else asarray(x)."""
    return x if isinstance(x, Array) else asarray(x)


def _empty_where(a: Array, shape: Tuple[int, ...], dtype: Any) -> Array:
    """A result of `shape` and `dtype` in a's memory kind, on a's device."""
    kind, index = _placement(None, a.device, "empty")
    return _empty(shape, dtype, memory=kind, device=index)


def _axis_index(i: int, ndim: int, what: str) -> int:
    """Axis i of ndim as 0..ndim-1: an int in [-ndim, ndim - 1], bool refused."""
    if not isinstance(i, int) or isinstance(i, bool):
        raise TypeError(f"{what}: axis: expected an int, got {type(i).__name__}")
    if not -ndim <= i < ndim:
        raise IndexError(f"{what}: axis: expected in [{-ndim}, {ndim - 1}], got {i}")
    return i % ndim


def _axis_set(axis: Union[int, Tuple[int, ...], None], ndim: int, what: str) -> set[int]:
    """The distinct axes an axis= argument names (None: every axis)."""
    if axis is None:
        return set(range(ndim))
    axes = [_axis_index(i, ndim, what) for i in _int_tuple(axis)]
    if len(set(axes)) != len(axes):
        raise ValueError(f"{what}: axis: expected distinct axes, got {axis}")
    return set(axes)


def _int_tuple(v: Union[int, Tuple[int, ...]]) -> Tuple[int, ...]:
    return (v,) if isinstance(v, int) else tuple(v)


def _wrapped(r: Array, dtype: Any) -> Array:
    """An integer reduction's widened result r as `dtype`, modulo 2^bits. uint8's sums are uint64,
    which ops does not convert: the same bits as int64 wrap alike."""
    from . import ops

    return ops.astype(r.view("int64") if r.dtype == "uint64" else r, dtype)


__all__ = ["asarray", "from_dlpack"]
