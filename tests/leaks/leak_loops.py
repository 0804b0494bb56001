"""Leak loops: N acquire/export/release cycles per producer, with the process's resident memory
(and the GPU's free memory, where there is one) before and after, printed as JSON.

    python tests/leaks/leak_loops.py                      # 10^6 cycles per producer
    python tests/leaks/leak_loops.py --cycles 20000 --out leaks.json --only numpy-buffer,ops

Each producer runs a warm-up (a tenth of the cycles, at most 10^4; JAX's rows as many cycles as they
measure, see LONG_WARMUP) so that pools, caches and the allocator's arenas reach their steady state
first; then RSS is read, the cycles run, the garbage collector runs, and RSS is read again. A leak
of b bytes a cycle shows as b * N bytes of growth (10^6 cycles: 1 MB per leaked byte). Python
objects left behind and DLPack exports not released are counted too.
tests/python/bridge/test_leaks.py runs this with fewer cycles and checks the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
from typing import Callable

import numpy as np

import arrayport as ap
from arrayport import _core, ops

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    """Resident set size now (not the peak): /proc/self/statm's second field."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


class DLPackOnly:
    """Hides NumPy's buffer protocol, so that the consumer takes the DLPack path."""

    def __init__(self, x):
        self.x = x

    def __dlpack__(self, **kw):
        return self.x.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


class Capsule:
    """Hands out one fresh capsule of `a` to a consumer (NumPy takes capsules via __dlpack__)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


class Bytes(bytearray):
    """A buffer exporter with a __dict__, to keep a view of itself in."""


def producers(gpu: bool) -> dict[str, Callable[[], None]]:
    """One cycle per producer: acquire or export, use, release (everything dies at return)."""
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    dx = DLPackOnly(x)
    raw = bytearray(256)
    a = ap.asarray(np.ones((8, 8), np.float32))

    def numpy_buffer():  # NumPy -> arrayport, buffer protocol
        v = ap.view(x)
        assert v.ptr == x.ctypes.data

    def numpy_dlpack():  # NumPy -> arrayport, DLPack
        ap.asarray(dx)

    def memoryview_buffer():  # memoryview -> arrayport
        ap.view(memoryview(raw))

    def array_own():  # arrayport's own memory: allocate, fill, free
        ap.full((8, 8), 1.5, "float32")

    def array_to_numpy():  # arrayport -> NumPy, buffer protocol
        np.asarray(a)

    def array_to_memoryview():  # arrayport -> memoryview
        memoryview(a).release()

    def array_to_dlpack_numpy():  # arrayport -> NumPy, DLPack (consumed)
        np.from_dlpack(a)

    def array_dlpack_capsule():  # arrayport -> DLPack capsule never consumed
        a.__dlpack__()

    def ops_mixed():  # an op: NumPy and arrayport inputs acquired for the call, a new result
        ops.add(x, a)

    def self_view_buffer():  # a producer keeping its own view: a cycle only the collector frees
        b = Bytes(64)
        b.me = ap.view(b)

    def self_view_dlpack():  # the same through DLPack: the collector runs NumPy's deleter
        d = DLPackOnly(np.arange(16.0))
        d.me = ap.view(d)

    table = {
        "numpy-buffer": numpy_buffer,
        "numpy-dlpack": numpy_dlpack,
        "memoryview": memoryview_buffer,
        "array-own": array_own,
        "array-to-numpy": array_to_numpy,
        "array-to-memoryview": array_to_memoryview,
        "array-to-dlpack-numpy": array_to_dlpack_numpy,
        "array-dlpack-capsule": array_dlpack_capsule,
        "ops": ops_mixed,
        "self-view-buffer": self_view_buffer,
        "self-view-dlpack": self_view_dlpack,
    }
    if gpu:
        d = ap.full((64,), 1.0, "float32", memory="device")
        table["array-own-device"] = lambda: ap.empty((64,), "float32", memory="device")
        table["array-own-managed"] = lambda: ap.empty((64,), "float32", memory="managed")
        table["array-device-capsule"] = lambda: d.__dlpack__(stream=None)
        try:
            import cupy

            c = cupy.ones(64, cupy.float32)
            table["cupy-to-arrayport"] = lambda: ap.asarray(c)
            table["arrayport-to-cupy"] = lambda: cupy.asarray(d)
        except Exception:  # noqa: BLE001 - CuPy absent or unusable: its rows are left out
            pass
        try:
            import torch

            if torch.cuda.is_available():
                t = torch.ones(64, device="cuda")
                table["torch-to-arrayport"] = lambda: ap.from_dlpack(t)
                table["arrayport-to-torch"] = lambda: torch.from_dlpack(Capsule(d))
        except Exception:  # noqa: BLE001
            pass
        try:
            os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # not 75% of the card
            import jax
            import jax.numpy as jnp

            if jax.default_backend() == "gpu":
                j = jnp.ones(64, jnp.float32)
                j.block_until_ready()
                table["jax-to-arrayport"] = lambda: ap.view(j)  # __dlpack__: a view that may be kept
                # ready, for a call that only reads: its __cuda_array_interface__
                table["jax-read-only-argument"] = lambda: _core._acquire_protocol(j, reads_only=True)
                table["jax-op-input"] = lambda: ops.add(j, 1.0)  # __dlpack__, held while the op runs
        except Exception:  # noqa: BLE001
            pass
    return table


def self_test_leak() -> Callable[[], None]:
    """A producer that leaks about 1 KiB a cycle on purpose: shows that the measurement sees one."""
    kept = []
    return lambda: kept.append(bytes(1000))  # 1000 bytes + the object's header + the list slot


def gpu_free() -> int | None:
    if not ap.runtime_info()["cuda_available"]:
        return None
    ap.cuda.synchronize()
    return ap.cuda.Device(0).mem_info()[0]


# JAX's runtime grows its own host memory to a steady state over its first few 10^5 calls (about
# 8 MB; measured on an H100: is_ready() alone grows 8.4 MB over its first 10^6 calls and 0.2 MB
# over the next 10^6, an op on a JAX input 7.4 MB, then 8 KB, then 4 KB): these rows warm up for
# as many cycles as they measure, so that a leak of arrayport's shows, not JAX's start-up.
LONG_WARMUP = {"jax-to-arrayport", "jax-read-only-argument", "jax-op-input"}


def measure(name: str, cycle: Callable[[], None], n: int) -> dict:
    warmup = n if name in LONG_WARMUP else max(1, min(n // 10, 10_000))
    for _ in range(warmup):
        cycle()
    gc.collect()
    objects0, exports0 = len(gc.get_objects()), _core._dlpack_live_exports()
    rss0, gpu0 = rss_bytes(), gpu_free()
    start = time.perf_counter()
    for _ in range(n):
        cycle()
    elapsed = time.perf_counter() - start
    gc.collect()
    rss1, gpu1 = rss_bytes(), gpu_free()
    row = {
        "cycles": n,
        "rss_before_bytes": rss0,
        "rss_after_bytes": rss1,
        "rss_growth_bytes": rss1 - rss0,
        "rss_growth_bytes_per_cycle": (rss1 - rss0) / n,
        "python_objects_growth": len(gc.get_objects()) - objects0,
        "dlpack_exports_growth": _core._dlpack_live_exports() - exports0,
        "us_per_cycle": 1e6 * elapsed / n,
    }
    if gpu0 is not None:
        row.update(gpu_free_before_bytes=gpu0, gpu_free_after_bytes=gpu1,
                   gpu_free_drop_bytes=gpu0 - gpu1)
    return row


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=10**6, help="cycles per producer (10^6)")
    parser.add_argument("--only", default="", help="comma-separated producer names")
    parser.add_argument("--self-test", action="store_true",
                        help="add a producer that leaks about 1 KiB a cycle on purpose")
    parser.add_argument("--out", help="also write the JSON to this file")
    args = parser.parse_args(argv)
    if args.cycles < 1:
        parser.error(f"--cycles: expected a positive number, got {args.cycles}")

    info = ap.runtime_info()
    table = producers(bool(info["cuda_available"]))
    if args.self_test:
        table["self-test-leak"] = self_test_leak()
    if args.only:
        wanted = args.only.split(",")
        unknown = [w for w in wanted if w not in table]
        if unknown:
            parser.error(f"--only: unknown producers {unknown}; expected some of {sorted(table)}")
        table = {k: table[k] for k in wanted}

    result = {
        "what": "acquire/export/release cycles per producer; resident memory before and after",
        "arrayport": ap.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "device": ap.devices()[0]["name"] if info["cuda_available"] else "CPU only",
        "cuda_available": bool(info["cuda_available"]),
        "cuda_reason": info["reason"],
        "producers": {name: measure(name, cycle, args.cycles) for name, cycle in table.items()},
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
