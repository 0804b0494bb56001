"""Times arrayport.ops against its peers in the same process: NumPy on the CPU, CuPy and PyTorch on
the GPU (each when importable). Prints ratios (peer time / arrayport time: > 1 means arrayport is
faster) and effective bandwidth, and writes ops.json (and ops.png when matplotlib is present).

Two parts: the measured paths (add, a scalar multiply, sum, max, a strided add; on the GPU add
into out=, add allocating, sum, copy) with their bandwidth, and the sweep: every public op
(bench/ops_table.py) on the CPU at 2^10, 2^16, 2^20 and 2^24 elements of float32 and float64
(integers of the same width for the bitwise ops), and on the GPU at 2^10 and 2^28 float32.

    python bench/bench_ops.py OUT_DIR [--quick] [--no-gpu] [--no-cpu] [--machine LABEL] [--name STEM]
    python bench/bench_ops.py - --replot RESULTS.json   # the PNG again, from a JSON

CPU timings alternate rounds of arrayport and NumPy (best of each), so that load from other work
on a shared machine falls on both alike. --machine names the machine in the JSON (default: the
core count and /proc/cpuinfo's model name); --name picks the file stem (default: ops).

GPU timings use CUDA events on the current stream around `repeat` back-to-back calls (best of
`rounds`); per-call latency (the 1000-element case) is host wall time of many calls followed by
one synchronisation, which is what a Python loop pays.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import arrayport as ap
from arrayport import ops

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ops_table import TABLE  # noqa: E402


def best_of_pair(mine, peer, repeat, rounds=7):
    """Best per-call time of each, their rounds alternating."""
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for k, fn in enumerate((mine, peer)):
            t0 = time.perf_counter()
            for _ in range(repeat):
                fn()
            best[k] = min(best[k], (time.perf_counter() - t0) / repeat)
    return best[0], best[1]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_cases(quick):
    sizes = [1000, 1 << 20] if quick else [1000, 1 << 16, 1 << 20, 1 << 24]
    out = []
    for n in sizes:
        a = np.random.default_rng(0).random(n, dtype=np.float32)
        b = np.random.default_rng(1).random(n, dtype=np.float32)
        rep = max(3, min(20000, (1 << 24) // n))
        for name, mine, peer, nbytes in [
            ("add", lambda: ops.add(a, b), lambda: np.add(a, b), 12 * n),
            ("multiply_scalar", lambda: ops.multiply(a, 2.0), lambda: np.multiply(a, np.float32(2.0)), 8 * n),
            ("sum", lambda: ops.sum(a), lambda: np.sum(a), 4 * n),
            ("max", lambda: ops.max(a), lambda: np.max(a), 4 * n),
            ("add_strided", lambda: ops.add(a[::2], b[::2]), lambda: np.add(a[::2], b[::2]), 6 * n),
        ]:
            t_mine, t_peer = best_of_pair(mine, peer, rep)
            out.append({"device": "cpu", "op": name, "n": n, "dtype": "float32",
                        "arrayport_s": t_mine, "numpy_s": t_peer, "ratio_numpy": t_peer / t_mine,
                        "arrayport_GBps": nbytes / t_mine / 1e9})
    return out


def sweep_operands(n, dtype, kind, seed=0):
    """NumPy operands of one sweep case: a, b in [0.5, 1.5) (integers of dtype's width for "int"),
    c = a > 1 (bool), and other, the float dtype astype converts to."""
    rng = np.random.default_rng(seed)
    if kind == "int":
        t = np.int32 if dtype == "float32" else np.int64
        a, b = rng.integers(1, 1 << 20, n).astype(t), rng.integers(1, 1 << 20, n).astype(t)
    else:
        a, b = rng.uniform(0.5, 1.5, n).astype(dtype), rng.uniform(0.5, 1.5, n).astype(dtype)
    return {"a": a, "b": b, "c": a > 1, "other": "float64" if dtype == "float32" else "float32"}


def sweep_cpu(quick):
    """Every op against NumPy, on NumPy operands (arrayport.ops takes them as they are)."""
    sizes = [1 << 10, 1 << 20] if quick else [1 << 10, 1 << 16, 1 << 20, 1 << 24]
    out = []
    for dtype in ("float32", "float64"):
        for n in sizes:
            rep = max(3, min(5000, (1 << 22) // n))
            for e in TABLE:
                o = sweep_operands(n, dtype, e.kind)
                with np.errstate(all="ignore"):
                    t_mine, t_peer = best_of_pair(e.mine(ops, o), e.xp(np, o), rep, rounds=5)
                out.append({"device": "cpu", "op": e.name, "n": n, "sweep": True,
                            "dtype": str(o["a"].dtype), "arrayport_s": t_mine, "numpy_s": t_peer,
                            "ratio_numpy": t_peer / t_mine})
    return out


def sweep_gpu(quick, peers, gpu_time, ap_sync):
    """Every op against CuPy and PyTorch on device memory, each allocating its result."""
    sizes = [1 << 10, 1 << 22] if quick else [1 << 10, 1 << 28]
    out = []
    for n in sizes:
        rep = 500 if n <= 1 << 20 else 10
        for kind in ("float", "int"):
            host = sweep_operands(n, "float32", kind)
            mine = {k: v if k == "other" else ap.copy(v, memory="device") for k, v in host.items()}
            theirs = {}
            if "cupy" in peers:
                cp = peers["cupy"]
                o = {k: v if k == "other" else cp.asarray(v) for k, v in host.items()}
                theirs["cupy"] = (o, cp.cuda.get_current_stream().synchronize)
            if "torch" in peers:
                torch = peers["torch"]
                o = {k: torch.from_numpy(v).cuda() for k, v in host.items() if k != "other"}
                o["other"] = torch.float64
                theirs["torch"] = (o, torch.cuda.synchronize)
            for e in (e for e in TABLE if e.kind == kind):
                r = {"device": "gpu", "op": e.name, "n": n, "dtype": str(host["a"].dtype),
                     "sweep": True, "arrayport_s": gpu_time(e.mine(ops, mine), rep, ap_sync)}
                for pname, (o, sync) in theirs.items():
                    mod = peers[pname]
                    fn = e.xp(mod, o) if pname == "cupy" else e.torch(mod, o)
                    r[f"{pname}_s"] = gpu_time(fn, rep, sync)
                    r[f"ratio_{pname}"] = r[f"{pname}_s"] / r["arrayport_s"]
                out.append(r)
            del mine, theirs
    return out


def gpu_cases(quick):
    from arrayport import cuda

    peers = {}
    try:
        import cupy
        peers["cupy"] = cupy
    except Exception:  # noqa: BLE001 - any import failure means "not measured"
        pass
    try:
        import torch
        if torch.cuda.is_available():
            peers["torch"] = torch
    except Exception:  # noqa: BLE001
        pass
    sizes = [1000, 1 << 20, 1 << 28] if not quick else [1000, 1 << 22]
    stream = cuda.current_stream()
    results = []

    def gpu_time(fn, repeat, sync):
        fn()
        sync()
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(repeat):
                fn()
            sync()
            best = min(best, (time.perf_counter() - t0) / repeat)
        return best

    def ap_sync():
        stream.synchronize()

    for n in sizes:
        host = np.random.default_rng(0).random(n, dtype=np.float32)
        managed = ap.empty(n, dtype="float32", memory="managed")
        ops.copy(host, out=managed)
        x = ap.empty(n, dtype="float32", memory="device")
        ops.copy(managed, out=x)
        y = ap.empty(n, dtype="float32", memory="device")
        ops.copy(managed, out=y)
        out = ap.empty(n, dtype="float32", memory="device")
        rep = 2000 if n <= 1 << 20 else 20
        row = {"device": "gpu", "n": n, "dtype": "float32"}
        mine = {
            "add": gpu_time(lambda: ops.add(x, y, out=out), rep, ap_sync),
            "add_alloc": gpu_time(lambda: ops.add(x, y), rep, ap_sync),
            "sum": gpu_time(lambda: ops.sum(x), rep, ap_sync),
            "copy": gpu_time(lambda: ops.copy(x, out=out), rep, ap_sync),
        }
        for op, t in mine.items():
            r = dict(row, op=op, arrayport_s=t)
            moved = {"add": 12, "add_alloc": 12, "sum": 4, "copy": 8}[op] * n
            r["arrayport_GBps"] = moved / t / 1e9
            for pname, mod in peers.items():
                if pname == "cupy":
                    cx, cy = mod.asarray(host), mod.asarray(host)
                    cout = mod.empty_like(cx)
                    fns = {"add": lambda: mod.add(cx, cy, out=cout), "add_alloc": lambda: cx + cy,
                           "sum": lambda: cx.sum(), "copy": lambda: cout.__setitem__(slice(None), cx)}
                    sync = mod.cuda.get_current_stream().synchronize
                else:
                    tx = mod.from_numpy(host).cuda()
                    ty, tout = tx.clone(), mod.empty_like(tx)
                    fns = {"add": lambda: mod.add(tx, ty, out=tout), "add_alloc": lambda: tx + ty,
                           "sum": lambda: tx.sum(), "copy": lambda: tout.copy_(tx)}
                    sync = mod.cuda.synchronize
                tp = gpu_time(fns[op], rep, sync)
                r[f"{pname}_s"] = tp
                r[f"ratio_{pname}"] = tp / t
            results.append(r)
    return results + sweep_gpu(quick, peers, gpu_time, ap_sync)


def plot(results, machine: str, png: Path) -> None:
    """The paths' bandwidth by size and the sweep's ratios at each device's largest size."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (ax, bx) = plt.subplots(1, 2, figsize=(14, 9), gridspec_kw={"width_ratios": [1, 1.3]})
        paths = [r for r in results if not r.get("sweep")]
        for (dev, op) in sorted({(r["device"], r["op"]) for r in paths}):
            pts = [(r["n"], r["arrayport_GBps"]) for r in paths if r["device"] == dev and r["op"] == op]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{dev} {op}")
        ax.set_xscale("log"); ax.set_xlabel("elements (float32)"); ax.set_ylabel("GB/s (arrayport)")
        ax.set_title(machine, fontsize=9)
        ax.legend(fontsize=7)
        # The sweep at each device's largest size: one bar per op and float dtype (the bitwise ops'
        # integers of its width), peer time / arrayport time, the faster peer on the GPU.
        sweep = [r for r in results if r.get("sweep")]
        width_of = {"int32": "float32", "int64": "float64"}
        groups = sorted({(r["device"], width_of.get(r["dtype"], r["dtype"])) for r in sweep})
        names = [e.name for e in TABLE]
        width = 0.8 / max(1, len(groups))
        for g, (dev, dt) in enumerate(groups):
            top = max(r["n"] for r in sweep if r["device"] == dev)
            ratio = {r["op"]: min(v for k, v in r.items() if k.startswith("ratio_"))
                     for r in sweep if r["device"] == dev and r["n"] == top
                     and width_of.get(r["dtype"], r["dtype"]) == dt
                     and any(k.startswith("ratio_") for k in r)}
            bx.barh([i + g * width for i in range(len(names))], [ratio.get(nm, 0) for nm in names],
                    height=width, label=f"{dev} {dt}, n=2^{top.bit_length() - 1}")
        bx.axvline(1.0, color="k", lw=0.8)
        bx.set_yticks(range(len(names)), names, fontsize=6)
        bx.invert_yaxis()
        bx.set_xscale("log")
        bx.set_xlabel("peer time / arrayport time (> 1: arrayport faster; GPU: the faster peer)")
        bx.legend(fontsize=7)
        fig.tight_layout(); fig.savefig(png, dpi=120)
    except ImportError:
        pass


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir", type=Path)
    p.add_argument("--quick", action="store_true", help="fewer sizes (smoke test)")
    p.add_argument("--no-gpu", action="store_true")
    p.add_argument("--no-cpu", action="store_true")
    p.add_argument("--machine", help="what the JSON names the machine (default: cores and CPU model)")
    p.add_argument("--name", default="ops", help="output file stem (default: ops)")
    p.add_argument("--replot", type=Path, help="only draw the PNG of this JSON, beside it")
    args = p.parse_args()
    if args.replot:
        doc = json.loads(args.replot.read_text())
        plot(doc["results"], doc["machine"], args.replot.with_suffix(".png"))
        return 0
    info = ap.runtime_info()
    results = []
    if not args.no_cpu:
        results += cpu_cases(args.quick) + sweep_cpu(args.quick)
    if not args.no_gpu and info.get("cuda_available"):
        results += gpu_cases(args.quick)
    for r in results:
        ratios = "  ".join(f"{k[6:]} {v:6.2f}x" for k, v in r.items() if k.startswith("ratio_"))
        rate = f"{r['arrayport_GBps']:8.1f} GB/s" if "arrayport_GBps" in r else f"{r['dtype']:>13}"
        print(f"{r['device']:3} {r['op']:16} n={r['n']:>10}  arrayport {r['arrayport_s'] * 1e6:10.2f} us"
              f"  {rate}  {ratios}")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    machine = args.machine or f"{os.cpu_count()} cores, {cpu_model()}"
    doc = {"machine": machine, "cpu_model": cpu_model(), "cpu_count": os.cpu_count(),
           "python": sys.version, "platform": platform.platform(), "numpy": np.__version__,
           "arrayport": ap.__version__, "build": ap.build_info(), "runtime": info, "results": results}
    (args.out_dir / f"{args.name}.json").write_text(json.dumps(doc, indent=2, default=str))
    plot(results, machine, args.out_dir / f"{args.name}.png")
    print(f"wrote {args.out_dir / (args.name + '.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
