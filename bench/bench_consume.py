"""Per-argument cost of getting a checked typed view of one float32 vector, by producer and path.

Builds bench/consume (arrayport's nanobind and pybind11 casters, nanobind nb::ndarray, pybind11
py::buffer / array_t, the raw buffer protocol, a no-op floor) against the installed package, then
times every path the producer supports in this one process, with arrayport.view(), ctypes
(a.ctypes.data) and cuda.core's StridedMemoryView where installed. The paths of one producer are
timed in turns (ROUNDS rounds of CALLS calls each, every path once a round), and each keeps its
fastest round: a burst of load on a shared host then slows one round of every path rather than
all of one path's. Prints ns per call with the ratios to nanobind and to SMV.from_dlpack; writes
consume.json (the fastest and the median round per path) and consume.png to the given directory.

    python bench/bench_consume.py OUTDIR
"""

from __future__ import annotations

import importlib
import json
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

import numpy as np

import arrayport as ap

HERE = Path(__file__).resolve().parent
CALLS = 20_000  # calls per path per round
ROUNDS = 15


def build() -> Path:
    build_dir = Path(tempfile.mkdtemp(prefix="bench-consume-"))
    flags = [f"-Darrayport_DIR={ap.cmake_dir()}", f"-DPython_EXECUTABLE={sys.executable}",
             "-DCMAKE_BUILD_TYPE=Release"]
    for mod, flag, var in (("nanobind", "--cmake_dir", "nanobind_DIR"), ("pybind11", "--cmakedir", "pybind11_DIR")):
        out = subprocess.run([sys.executable, "-m", mod, flag], capture_output=True, text=True, check=True)
        flags.append(f"-D{var}={out.stdout.strip()}")
    subprocess.run(["cmake", "-S", str(HERE / "consume"), "-B", str(build_dir), "-G", "Ninja", *flags],
                   check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build_dir)], check=True, capture_output=True)
    sys.path.insert(0, str(build_dir))
    return build_dir


def per_call_ns(paths: dict[str, object], arg) -> dict[str, list[float]]:
    """ns per call of each path on `arg`, one figure per round, the paths taking turns."""
    rounds: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(ROUNDS):
        for name, fn in paths.items():
            rounds[name].append(timeit.timeit(lambda: fn(arg), number=CALLS) / CALLS * 1e9)
    return rounds


def producers() -> dict[str, object]:
    out: dict[str, object] = {"numpy": np.ones(1000, np.float32),
                              "arrayport": ap.ones((1000,), "float32", memory="host")}
    if ap.cuda.is_available():
        out["arrayport-device"] = ap.ones((1000,), "float32", memory="device")
        for name, make in (("cupy", lambda: importlib.import_module("cupy").ones(1000, "float32")),
                           ("torch", lambda: importlib.import_module("torch").ones(1000, device="cuda")),
                           ("jax", lambda: importlib.import_module("jax.numpy").ones(1000, "float32"))):
            try:
                out[name] = make()
            except Exception as e:  # not installed, or no GPU backend
                print(f"skip {name}: {e}")
    return out


def main(outdir: str) -> None:
    build()
    nb = importlib.import_module("consume_nb")
    pb = importlib.import_module("consume_pb")
    paths = {"noop (floor)": nb.noop, "arrayport nanobind caster": nb.arrayport,
             "arrayport nanobind caster, const": nb.arrayport_const,
             "arrayport pybind11 caster": pb.arrayport, "arrayport.view()": ap.view,
             "nanobind nb::ndarray": nb.nb_ndarray, "nanobind nb::ndarray, const": nb.nb_ndarray_const,
             "pybind11 py::buffer": pb.py_buffer,
             "pybind11 array_t": pb.array_t, "raw buffer protocol": nb.raw_buffer,
             "ctypes (a.ctypes.data)": lambda a: a.ctypes.data}
    try:
        from cuda.core.utils import StridedMemoryView  # type: ignore

        # The constructor (deprecated in cuda.core 1.x) is what the goals were set against;
        # from_dlpack / from_any_interface are its successors. Each reads what a checked typed
        # view needs (pointer, shape, strides, dtype), since their views fill those lazily. No
        # synchronisation (-1) where the producer takes it; JAX does not: the legacy stream (1).
        def smv(make):
            streams: dict[type, int] = {}  # per producer type, the stream argument it takes

            def view(a):
                t = type(a)
                if t not in streams:
                    for stream in (-1, 1):
                        try:
                            make(a, stream)
                            streams[t] = stream
                            break
                        except Exception:
                            if stream == 1:
                                raise
                v = make(a, streams[t])
                return v.ptr, v.shape, v.strides, v.dtype
            return view

        paths["cuda.core StridedMemoryView"] = smv(lambda a, s: StridedMemoryView(a, stream_ptr=s))
        if hasattr(StridedMemoryView, "from_dlpack"):
            paths["cuda.core SMV.from_dlpack"] = smv(lambda a, s: StridedMemoryView.from_dlpack(a, stream_ptr=s))
        if hasattr(StridedMemoryView, "from_any_interface"):
            paths["cuda.core SMV.from_any_interface"] = smv(
                lambda a, s: StridedMemoryView.from_any_interface(a, stream_ptr=s))
    except Exception as e:
        print(f"skip cuda.core: {e}")
    device = ap.devices()[0]["name"] if ap.cuda.is_available() else "CPU only"
    results: dict[str, dict[str, float]] = {}
    medians: dict[str, dict[str, float]] = {}
    for pname, arr in producers().items():
        taken = {}
        for path, fn in paths.items():
            try:
                fn(arr)  # also warms: caches, first-use imports
            except Exception:
                continue  # this path does not take this producer
            taken[path] = fn
        rounds = per_call_ns(taken, arr)
        row = results[pname] = {path: min(ns) for path, ns in rounds.items()}
        medians[pname] = {path: statistics.median(ns) for path, ns in rounds.items()}
        base = row.get("nanobind nb::ndarray") or row.get("nanobind nb::ndarray, const")
        smv = row.get("cuda.core SMV.from_dlpack")
        print(f"\n{pname}:")
        for path, ns in row.items():
            ratio = f"  {ns / base:5.2f}x nanobind" if base else ""
            ratio += f"  {ns / smv:5.2f}x from_dlpack" if smv else ""
            print(f"  {path:32s} {ns:8.0f} ns (median {medians[pname][path]:6.0f}){ratio}")
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "consume.json").write_text(json.dumps(
        {"device": device, "python": sys.version.split()[0], "calls_per_round": CALLS, "rounds": ROUNDS,
         "ns_per_call": results, "ns_per_call_median": medians}, indent=2))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(11, 5))
        names = list(paths)
        width = 0.8 / max(len(results), 1)
        for k, (pname, row) in enumerate(results.items()):
            xs = [i + k * width for i, n in enumerate(names) if n in row]
            ax.bar(xs, [row[n] for n in names if n in row], width, label=pname)
        ax.set_xticks([i + 0.4 for i in range(len(names))], names, rotation=30, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("ns per call (log)")
        ax.set_title(f"One float32 argument as a checked typed view — {device}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "consume.png", dpi=110)
    except ImportError:
        print("matplotlib not installed: no plot")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(HERE / "results"))
