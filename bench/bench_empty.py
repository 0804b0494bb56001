"""empty((1000,)) per call, per memory kind, against the peers in the same process.

Goals (issue 3, H100): device <= 1 us and managed <= 2 us per call; measured there before
arrayport: cupy.empty 1.87 us, torch.empty 2.06 us, raw cudaMallocManaged+free 15 us.

usage: python bench/bench_empty.py OUT_DIR   (writes empty.json and empty.png)
"""

from __future__ import annotations

import json
import sys
import timeit
from pathlib import Path

import arrayport as ap

N = 1000
CALLS = 20_000


def per_call_ns(stmt, calls: int = CALLS, repeat: int = 5) -> float:
    stmt()  # warm up (pools, lazy initialisation)
    return min(timeit.repeat(stmt, number=calls, repeat=repeat)) / calls * 1e9


def main(out_dir: str) -> None:
    rows: dict[str, float] = {}
    import numpy as np

    rows["numpy.empty"] = per_call_ns(lambda: np.empty(N, np.float32))
    rows["arrayport host"] = per_call_ns(lambda: ap.empty(N, "float32", memory="host"))
    gpu = ap.runtime_info()["cuda_available"]
    device_name = ap.devices()[0]["name"] if gpu else "CPU only"
    if gpu:
        for kind in ("device", "managed", "pinned"):
            rows[f"arrayport {kind}"] = per_call_ns(lambda k=kind: ap.empty(N, "float32", memory=k))
        try:
            import cupy

            rows["cupy.empty"] = per_call_ns(lambda: cupy.empty(N, cupy.float32))

            def raw_managed():
                p = cupy.cuda.runtime.mallocManaged(N * 4, 1)
                cupy.cuda.runtime.free(p)

            rows["raw cudaMallocManaged+free"] = per_call_ns(raw_managed, calls=2000)
        except ImportError:
            pass
        try:
            import torch

            rows["torch.empty (cuda)"] = per_call_ns(
                lambda: torch.empty(N, dtype=torch.float32, device="cuda"))
        except ImportError:
            pass
    peers = [v for k, v in rows.items() if k in ("cupy.empty", "torch.empty (cuda)")]
    best_peer = min(peers) if peers else None
    ratios = {k: round(best_peer / v, 2) for k, v in rows.items() if best_peer and k.startswith("arrayport")}
    result = {"benchmark": f"empty(({N},)) float32, ns per call (min of 5 x {CALLS})",
              "device": device_name, "ns": {k: round(v, 1) for k, v in rows.items()},
              "speedup_vs_fastest_of_cupy_torch": ratios}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "empty.json").write_text(json.dumps(result, indent=2))
    for k, v in rows.items():
        extra = f"   {ratios[k]:.2f}x vs fastest of cupy/torch" if k in ratios else ""
        print(f"{k:<28} {v:>10.1f} ns{extra}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    names = list(rows)
    ax.barh(names, [rows[n] for n in names],
            color=["tab:blue" if n.startswith("arrayport") else "tab:gray" for n in names])
    ax.set_xscale("log")
    ax.set_xlabel("ns per call (log)")
    ax.set_title(f"empty(({N},)) float32 — {device_name}")
    fig.tight_layout()
    fig.savefig(out / "empty.png", dpi=120)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/results")
