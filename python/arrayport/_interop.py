"""The live interop matrix of ``python -m arrayport``: for every array library installed, each
direction of a hand-off (arrayport -> library, library -> arrayport) is tried on a real array.

A hand-off is zero-copy when both sides report the same data pointer and a write made on one side
is read on the other. The protocol is the one the receiving side took; the cost is the time of one
hand-off, measured here.
"""

from __future__ import annotations

import importlib
import os
import timeit
from dataclasses import asdict, dataclass
from typing import Any, Callable, Literal

import arrayport

N = 4096  # elements of the float32 arrays handed over
VALUE = 7.0  # what the writes write


@dataclass
class Handoff:
    library: str
    direction: str  # "export" (arrayport -> library) or "import" (library -> arrayport)
    memory: str  # where the data lives: "host" or "device"
    protocol: str = ""
    zero_copy: bool | None = None  # same pointer on both sides
    write_seen: bool | None = None  # None: not tried (the receiving side is immutable)
    us: float | None = None  # microseconds per hand-off
    skipped: str = ""  # why this hand-off was not tried
    error: str = ""  # what went wrong, when it did


@dataclass
class _Lib:
    """How to hand arrays to and take arrays from one library."""

    name: str
    memory: Literal["host", "device"]
    protocol_out: str  # what the library's import function uses
    take: Callable[[Any], Any]  # arrayport.Array -> library array (the library's import)
    make: Callable[[], Any]  # a library array of N float32 ones
    ptr: Callable[[Any], int]  # the library array's data pointer
    write: Callable[[Any], None] | None  # writes VALUE at index 0 through the library
    read0: Callable[[Any], float]  # reads index 0 through the library (after any sync it needs)


def _per_call_us(fn: Callable[[], Any], budget_s: float = 0.02) -> float:
    fn()
    n = 1
    while True:
        t = timeit.timeit(fn, number=n)
        if t >= budget_s or n >= 100_000:
            return t / n * 1e6
        n *= 4


def _broken(name: str, e: Exception) -> Handoff:
    return Handoff(name, "both", "-", error=f"cannot be used: {type(e).__name__}: {e}"[:200])


def _libraries(gpu: bool) -> tuple[list[_Lib], list[Handoff]]:
    libs: list[_Lib] = []
    skipped: list[Handoff] = []

    def need_gpu(name: str) -> bool:
        if not gpu:
            skipped.append(Handoff(name, "both", "device", skipped="no CUDA device"))
        return gpu

    try:
        np = importlib.import_module("numpy")
        libs.append(_Lib("NumPy", "host", "buffer protocol", lambda a: np.asarray(a),
                         lambda: np.ones(N, np.float32), lambda x: x.__array_interface__["data"][0],
                         lambda x: x.__setitem__(0, VALUE), lambda x: float(x[0])))
    except ImportError:
        skipped.append(Handoff("NumPy", "both", "-", skipped="not installed"))
    except Exception as e:  # installed but broken (a version mismatch, no backend)
        skipped.append(_broken("NumPy", e))

    try:
        torch = importlib.import_module("torch")
        libs.append(_Lib("PyTorch", "host", "DLPack", lambda a: torch.from_dlpack(a),
                         lambda: torch.ones(N), lambda x: x.data_ptr(),
                         lambda x: x.__setitem__(0, VALUE), lambda x: float(x[0])))
        if need_gpu("PyTorch") and torch.cuda.is_available():
            libs.append(_Lib("PyTorch", "device", "DLPack", lambda a: torch.from_dlpack(a),
                             lambda: torch.ones(N, device="cuda"), lambda x: x.data_ptr(),
                             lambda x: x.__setitem__(0, VALUE), lambda x: float(x[0])))
    except ImportError:
        skipped.append(Handoff("PyTorch", "both", "-", skipped="not installed"))
    except Exception as e:  # installed but broken (a version mismatch, no backend)
        skipped.append(_broken("PyTorch", e))

    try:
        cupy = importlib.import_module("cupy")
        if need_gpu("CuPy"):
            libs.append(_Lib("CuPy", "device", "CUDA array interface", lambda a: cupy.asarray(a),
                             lambda: cupy.ones(N, cupy.float32), lambda x: x.data.ptr,
                             lambda x: x.__setitem__(0, VALUE), lambda x: float(x[0])))
    except ImportError:
        skipped.append(Handoff("CuPy", "both", "-", skipped="not installed"))
    except Exception as e:  # installed but broken (a version mismatch, no backend)
        skipped.append(_broken("CuPy", e))

    try:
        # JAX takes 75% of the GPU's memory at its first use unless told not to: the demo and
        # every library after it would be left with the rest.
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        jax = importlib.import_module("jax")
        jnp = importlib.import_module("jax.numpy")
        on_gpu = jax.default_backend() == "gpu"
        libs.append(_Lib("JAX", "device" if on_gpu else "host", "DLPack",
                         lambda a: jnp.from_dlpack(a), lambda: jnp.ones(N, jnp.float32),
                         lambda x: x.unsafe_buffer_pointer(), None, lambda x: float(x[0])))
    except ImportError:
        skipped.append(Handoff("JAX", "both", "-", skipped="not installed"))
    except Exception as e:  # installed but broken (a version mismatch, no backend)
        skipped.append(_broken("JAX", e))

    try:
        numba_cuda = importlib.import_module("numba.cuda")
        np = importlib.import_module("numpy")
        if need_gpu("Numba"):
            libs.append(_Lib("Numba", "device", "CUDA array interface",
                             lambda a: numba_cuda.as_cuda_array(a),
                             lambda: numba_cuda.to_device(np.ones(N, np.float32)),
                             lambda x: x.__cuda_array_interface__["data"][0],
                             # DeviceNDArray.__setitem__ calls np.row_stack, which NumPy 2.5
                             # removed: a host-to-device copy into a one-element view instead
                             lambda x: x[0:1].copy_to_device(np.full(1, VALUE, np.float32)),
                             lambda x: float(x.copy_to_host()[0])))
    except ImportError:
        skipped.append(Handoff("Numba", "both", "-", skipped="not installed"))
    except Exception as e:  # installed but broken (a version mismatch, no backend)
        skipped.append(_broken("Numba", e))

    try:
        utils = importlib.import_module("cuda.core.utils")
        smv = utils.StridedMemoryView
        if need_gpu("cuda.core"):
            # A view with no write API of its own: the pointer is what it can show.
            libs.append(_Lib("cuda.core", "device", "DLPack",
                             lambda a: smv.from_dlpack(a, stream_ptr=-1), lambda: None,
                             lambda x: x.ptr, None, lambda x: 0.0))
    except ImportError:
        skipped.append(Handoff("cuda.core", "both", "-", skipped="not installed"))
    except Exception as e:  # installed but broken (a version mismatch, no backend)
        skipped.append(_broken("cuda.core", e))
    return libs, skipped


def _export(lib: _Lib) -> Handoff:
    h = Handoff(lib.name, "export", lib.memory, protocol=lib.protocol_out)
    a = arrayport.ones((N,), "float32", memory=lib.memory)
    x = lib.take(a)
    h.zero_copy = lib.ptr(x) == a.ptr
    if lib.write is not None:
        lib.write(x)
        lib.read0(x)  # the library's own read: it waits for its write
        h.write_seen = float(a.get()[0]) == VALUE
    h.us = _per_call_us(lambda: lib.take(a))
    return h


def _import(lib: _Lib) -> Handoff:
    h = Handoff(lib.name, "import", lib.memory)
    x = lib.make()
    if x is None:
        h.skipped = "the library has no array type of its own"
        return h
    v = arrayport.view(x)
    h.protocol = {"array": "arrayport.Array", "exchange": "DLPack C exchange API",
                  "buffer": "buffer protocol", "dlpack": "DLPack",
                  "cai": "CUDA array interface", "cupy": "CuPy ndarray struct"}[arrayport._core._acquire_protocol(x)]
    h.zero_copy = v.ptr == lib.ptr(x)
    if lib.write is not None:  # JAX arrays are immutable: never written
        v[0] = VALUE
        h.write_seen = lib.read0(x) == VALUE
    h.us = _per_call_us(lambda: arrayport.view(x))
    return h


def matrix() -> list[dict[str, Any]]:
    """Every hand-off tried on this machine, as plain data (what ``--json`` prints)."""
    libs, rows = _libraries(bool(arrayport.runtime_info()["cuda_available"]))
    for lib in libs:
        for step in (_export, _import):
            try:
                rows.append(step(lib))
            except Exception as e:  # a library that refuses is a finding, not a crash
                rows.append(Handoff(lib.name, step.__name__.strip("_"), lib.memory,
                                    error=f"{type(e).__name__}: {e}"[:200]))
    order = ["NumPy", "CuPy", "PyTorch", "JAX", "Numba", "cuda.core"]
    rows.sort(key=lambda r: order.index(r.library))  # stable: each library's rows stay in order
    return [asdict(r) for r in rows]


def render(rows: list[dict[str, Any]]) -> list[str]:
    def yes(v: bool | None) -> str:
        return "-" if v is None else ("yes" if v else "NO")

    lines = [f"  {'library':<10} {'hand-off':<22} {'memory':<7} {'zero-copy':<10} "
             f"{'write seen':<11} {'us':>7}  protocol"]
    for r in rows:
        arrow = f"arrayport -> {r['library']}" if r["direction"] == "export" else (
            f"{r['library']} -> arrayport" if r["direction"] == "import" else "both")
        if r["skipped"] or r["error"]:
            lines.append(f"  {r['library']:<10} {arrow:<22} {r['memory']:<7} "
                         f"{'skipped: ' + r['skipped'] if r['skipped'] else 'error: ' + r['error']}")
            continue
        lines.append(f"  {r['library']:<10} {arrow:<22} {r['memory']:<7} {yes(r['zero_copy']):<10} "
                     f"{yes(r['write_seen']):<11} {r['us']:7.2f}  {r['protocol']}")
    return lines
