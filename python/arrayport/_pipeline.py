"""``arrayport.ops.<op>(..., device=N)``: the op on GPU N wherever its operands live.

The path people take when their data lives on the host: NumPy in, NumPy out, the GPU in between.
The common case never reaches this module: an element-wise op whose array operands are all
contiguous host memory of the result's shape, without ``out=``, is staged in chunks through
pinned slots in C++ (``launch_staged`` in src/ops/dispatch.cpp). This module takes the rest:
reductions, ``out=``, broadcast or strided host operands, results of one element, calls with
scalars only, operands already on the GPU, a ``device`` that is not a plain int, a current stream
of another device.

Host operands are not copied to device memory first. Large ones are page-locked in place
(``cuda.register``, the host-link speed with no staging copy) and the kernel reads them, and
writes its result, across the link; small ones are copied into pinned memory, which costs less
than locking their pages (and small arrays can share pages with other registrations). Operands
already on the GPU (device or managed memory of device N, pinned memory) are used as they are.

The result: ``out`` when given (written in place, wherever it lives); NumPy when every array
operand was host memory (an array over pinned memory, no copy; an arrayport Array for bfloat16,
which NumPy has no dtype for); otherwise the Array the op returned on the GPU. Pages are unlocked
when the call returns, after the GPU is done with them.
"""

from __future__ import annotations

from typing import Any

from . import _core, cuda

# Host operands of at least this many bytes are page-locked in place; smaller ones are copied
# into pinned memory.
REGISTER_MIN_BYTES = 4 << 20

_SCALARS = (bool, int, float, complex)


def _reachable(x: Any, held: list[Any], name: str, device: int) -> tuple[Any, bool]:
    """An operand the GPU can read, and whether it came from pageable host memory."""
    if x is None or isinstance(x, _SCALARS):  # None: clip's absent bound
        return x, False
    v = _core.view(x)
    if v.memory != "host":
        if v.memory in ("device", "managed") and v.device[1] != device:
            raise ValueError(f"{name}: device={device}, but the operand is in {v.memory} memory "
                             f"of device {v.device[1]}; copy it first (.to(device={device}))")
        return v, False
    if v.nbytes >= REGISTER_MIN_BYTES:
        try:
            r = cuda.register(v)
        except ValueError:  # its pages are locked by another registration: copy it instead
            pass
        else:
            held.append(r)
            return r, True
    return _core.copy(v, memory="pinned"), True


def run(name: str, operands: tuple[Any, ...], out: Any, device: Any, params: dict[str, Any]) -> Any:
    """The op ``name`` on ``device``; _core calls it (arrayport.ops registers it at import)."""
    fn = getattr(_core.ops, name)
    if device is None or isinstance(device, bool) or not isinstance(device, (int, cuda.Device)):
        raise TypeError(f"{name}: device: expected an int or an arrayport.cuda.Device, got "
                        f"{type(device).__name__}")
    try:
        dev = cuda.Device(device)
    except (_core.NoDeviceError, ValueError) as e:  # no GPU, an index out of range
        raise type(e)(f"{name}: device={device!r}: {e}") from None
    held: list[Any] = []               # registrations, unlocked when the call returns
    try:
        with dev:
            staged = [_reachable(x, held, name, dev.index) for x in operands]
            args = [s for s, _ in staged]
            from_host = any(h for _, h in staged)
            target, write_back = None, False
            if out is not None:
                o = _core.view(out)
                if o.readonly:
                    raise ValueError(f"{name}: out: expected a writable array, got a read-only one")
                if o.memory == "host":
                    if o.nbytes >= REGISTER_MIN_BYTES:
                        try:
                            target = cuda.register(o)
                            held.append(target)
                        except ValueError:  # pages held by another registration
                            pass
                    if target is None:  # a pinned twin the op writes (and checks), copied back
                        target = _core.empty(o.shape, o.dtype, memory="pinned")
                        write_back = True
                else:
                    target = out
            result = fn(*args, out=target, **params)
            cuda.current_stream().synchronize()   # results final, registered pages unused
            if write_back:
                _core.ops.copy(target, out=out)
    finally:
        held.clear()
    if out is not None:
        return out
    if from_host and result.memory == "pinned" and str(result.dtype) != "bfloat16":
        import numpy as np

        return np.asarray(result)
    return result
