"""Copies between two GPUs: arrayport's a.to(device=1) against CuPy's in the same process.

For sizes from 1 MiB to 1 GiB of float32 (contiguous) and a strided view, GB/s of
  arrayport  a.to(device=1)                          (peer to peer where the GPUs reach each other)
  CuPy       cupy.asarray(x) under cupy.cuda.Device(1) (CuPy's own peer copy)
and the same with ARRAYPORT_P2P_DISABLE=1 in a subprocess (staged through pinned host memory).
Each timing: the median of 7 runs of 5 copies, device synchronised around them.

usage: python bench/bench_peer.py OUT_DIR   (writes peer.json and peer.png; needs 2 GPUs)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import arrayport as ap
from arrayport import cuda

SIZES_MIB = [1, 16, 256, 1024]


def gbps(copy, nbytes: int, sync) -> float:
    copy()
    sync()
    runs = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(5):
            copy()
        sync()
        runs.append((time.perf_counter() - start) / 5)
    return nbytes / statistics.median(runs) / 1e9


def sync_all() -> None:
    for d in range(cuda.device_count()):
        cuda.Device(d).synchronize()


def measure(with_cupy: bool) -> dict:
    rows: dict[str, dict[str, float]] = {"arrayport": {}, "arrayport strided [::2]": {}}
    if with_cupy:
        import cupy
        rows["cupy"] = {}
        rows["cupy strided [::2]"] = {}
    for mib in SIZES_MIB:
        n = mib << 18
        a = ap.asarray(np.ones(n, np.float32), memory="device", device=0)
        rows["arrayport"][str(mib)] = gbps(lambda: a.to(device=1), a.nbytes, sync_all)
        half = a[::2]
        rows["arrayport strided [::2]"][str(mib)] = gbps(lambda: half.to(device=1), a.nbytes // 2, sync_all)
        if with_cupy:
            with cupy.cuda.Device(0):
                x = cupy.ones(n, cupy.float32)

            def cupy_copy(src=x):
                with cupy.cuda.Device(1):
                    return cupy.asarray(src)   # CuPy copies across devices (peer access on)

            def cupy_sync():
                for d in range(cuda.device_count()):
                    cupy.cuda.Device(d).synchronize()

            rows["cupy"][str(mib)] = gbps(cupy_copy, a.nbytes, cupy_sync)
            xh = x[::2]
            try:
                rows["cupy strided [::2]"][str(mib)] = gbps(lambda: cupy_copy(xh), a.nbytes // 2, cupy_sync)
            except NotImplementedError:  # "CuPy cannot copy non-contiguous array between devices"
                rows["cupy strided [::2]"][str(mib)] = float("nan")
            del x, xh
        del a, half
    return rows


def main(out_dir: str) -> None:
    if os.environ.get("ARRAYPORT_P2P_DISABLE"):  # the staged subprocess
        print(json.dumps(measure(with_cupy=False)))
        return
    if cuda.device_count() < 2:
        print(f"bench_peer: needs 2 GPUs, this machine has {cuda.device_count()}; nothing measured")
        return
    try:
        import cupy  # noqa: F401
        with_cupy = True
    except ImportError:
        with_cupy = False
    rows = measure(with_cupy)
    staged = subprocess.run([sys.executable, __file__, out_dir], capture_output=True, text=True,
                            env=dict(os.environ, ARRAYPORT_P2P_DISABLE="1"), timeout=600)
    if staged.returncode == 0:
        for k, v in json.loads(staged.stdout.strip().splitlines()[-1]).items():
            rows[f"{k} (staged, P2P disabled)"] = v
    else:
        print(staged.stderr[-2000:], file=sys.stderr)
    names = [cuda.Device(d).name for d in range(2)]
    ratio = {m: round(rows["arrayport"][m] / rows["cupy"][m], 2) for m in rows["arrayport"]} if with_cupy else {}
    result = {"benchmark": "copy device 0 -> device 1, GB/s (median of 7 x 5 copies)",
              "device": f"{names[0]} x{cuda.device_count()}",
              "peer_access": {"0->1": cuda.Device(0).can_access_peer(1), "1->0": cuda.Device(1).can_access_peer(0)},
              "sizes_mib": SIZES_MIB,
              "gbps": {k: {m: (round(v, 1) if v == v else None) for m, v in r.items()} for k, r in rows.items()},
              "note": "None: the library cannot do it (CuPy 14 raises NotImplementedError for a "
                      "non-contiguous copy between devices)",
              "arrayport_over_cupy": ratio}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "peer.json").write_text(json.dumps(result, indent=2))
    print(f"{'MiB':>6} " + " ".join(f"{k[:26]:>27}" for k in rows))
    for m in map(str, SIZES_MIB):
        print(f"{m:>6} " + " ".join(f"{rows[k].get(m, float('nan')):>27.1f}" for k in rows))
    if ratio:
        print("arrayport / cupy (contiguous): " + ", ".join(f"{m} MiB {r:.2f}x" for m, r in ratio.items()))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for k, r in rows.items():
        if all(v != v for v in r.values()):
            continue
        ax.plot(SIZES_MIB, [r[str(m)] for m in SIZES_MIB], marker="o", label=k,
                linestyle="-" if k.startswith("arrayport") else "--")
    ax.set_xscale("log")
    ax.set_xlabel("MiB copied")
    ax.set_ylabel("GB/s")
    ax.set_title(f"GPU 0 -> GPU 1 copies — {result['device']}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "peer.png", dpi=120)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/results")
