"""The demo at the end of ``python -m arrayport``: the NumPy -> arrayport -> NumPy pipeline with
arrayport.ops, on the GPU when there is one (device memory), else on the CPU; with a GPU, also the
one-call form (``ops.add(numpy, numpy, device=0)``: staged through pinned memory, NumPy back),
first with cold pinned pools, then again.
Every result is checked against NumPy; every step is timed and reported as it completes."""

from __future__ import annotations

import time
from typing import Any, Callable, Literal

import arrayport
from arrayport import ops


def run(progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Runs the pipeline; returns its steps (name, milliseconds, what it did) and whether every
    result matched NumPy. `progress` is called with a line as each step completes."""
    try:
        import numpy as np
    except ImportError:
        return {"skipped": "NumPy is not installed", "steps": [], "ok": None}
    gpu = bool(arrayport.runtime_info()["cuda_available"])
    memory: Literal["device", "host"] = "device" if gpu else "host"
    n = 1 << 24 if gpu else 1 << 20
    x = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    steps: list[dict[str, Any]] = []
    state: dict[str, Any] = {}
    first_ok = True
    total_steps = 7 if gpu else 5

    def sync() -> None:
        if gpu:
            arrayport.cuda.synchronize()

    def step(name: str, what: str, fn: Callable[[], Any]) -> None:
        t0 = time.perf_counter()
        state[name] = fn()
        sync()
        ms = (time.perf_counter() - t0) * 1e3
        steps.append({"step": name, "ms": ms, "what": what})
        if progress:
            progress(f"  [{len(steps)}/{total_steps}] {name:<9} {ms:9.3f} ms  {what}")

    mib = x.nbytes / 2**20
    step("upload", f"{mib:.0f} MiB of float32 from NumPy into {memory} memory",
         lambda: arrayport.copy(x, memory=memory))
    step("axpy", "y = 2 x + 1 (arrayport.ops.axpy)",
         lambda: ops.axpy(2.0, state["upload"], arrayport.full_like(state["upload"], 1.0)))
    step("sqrt|abs", "z = sqrt(|y|)", lambda: ops.sqrt(ops.abs(state["axpy"])))
    step("sum", "s = sum(z)", lambda: ops.sum(state["sqrt|abs"]))
    step("download", "z back into NumPy",
         lambda: state["sqrt|abs"].get() if gpu else np.asarray(state["sqrt|abs"]))
    if gpu:
        step("device=0", "x + x from NumPy to NumPy in one call (ops.add(x, x, device=0))",
             lambda: ops.add(x, x, device=0))
        first_ok = bool(np.array_equal(state.pop("device=0"), x + x))  # its pinned memory pooled
        step("again", "the same call, on the pinned memory the first one gave back",
             lambda: ops.add(x, x, device=0))
    want = np.sqrt(np.abs(2.0 * x.astype(np.float64) + 1.0))
    total = state["sum"].get() if gpu else np.asarray(state["sum"])
    ok = bool(np.allclose(state["download"], want, rtol=1e-5, atol=1e-6) and
              abs(float(total) - want.sum()) <= 1e-4 * want.sum())
    if gpu:
        ok = ok and first_ok and bool(np.array_equal(state["again"], x + x))
    return {"memory": memory, "elements": n, "steps": steps, "ok": ok}


def safe_run(progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """run(), with a failure reported as the demo's result rather than ending the report."""
    try:
        return run(progress)
    except Exception as e:
        return {"skipped": f"failed: {type(e).__name__}: {e}"[:300], "steps": [], "ok": False}


def render(demo: dict[str, Any]) -> list[str]:
    if demo.get("skipped"):
        return [f"  skipped: {demo['skipped']}"]
    lines = [f"  {s['step']:<9} {s['ms']:9.3f} ms  {s['what']}" for s in demo["steps"]]
    lines.append(f"  results match NumPy: {'yes' if demo['ok'] else 'NO'}")
    return lines
