"""A three-argument call f(a, b, c), each argument a checked 1-d float32 CUDA array, from PyTorch
alone and from mixed producers (a PyTorch tensor, a CuPy array, an arrayport Array): arrayport's
nanobind caster beside nanobind's nb::ndarray and TVM-FFI (apache-tvm-ffi, where installed), in
one process. Each binding has its own floor (a no-op taking three arguments it passes without
conversion); the figure that compares them is ns per array argument above that floor.

Builds bench/three against the installed package (and TVM-FFI's CMake package); the paths take
turns as in bench_consume.py, each keeping its fastest round. Writes three.json and three.png.

    python bench/bench_three.py OUTDIR
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

import arrayport as ap

HERE = Path(__file__).resolve().parent
CALLS = 20_000
ROUNDS = 15


def build() -> Path:
    build_dir = Path(tempfile.mkdtemp(prefix="bench-three-"))
    flags = [f"-Darrayport_DIR={ap.cmake_dir()}", f"-DPython_EXECUTABLE={sys.executable}",
             "-DCMAKE_BUILD_TYPE=Release"]
    nb_dir = subprocess.run([sys.executable, "-m", "nanobind", "--cmake_dir"], capture_output=True,
                            text=True, check=True).stdout.strip()
    flags.append(f"-Dnanobind_DIR={nb_dir}")
    try:
        import tvm_ffi.libinfo  # type: ignore

        flags.append(f"-Dtvm_ffi_DIR={tvm_ffi.libinfo.find_cmake_path()}")
    except ImportError:
        print("skip TVM-FFI: apache-tvm-ffi is not installed")
    subprocess.run(["cmake", "-S", str(HERE / "three"), "-B", str(build_dir), "-G", "Ninja",
                    *flags], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build_dir)], check=True, capture_output=True)
    sys.path.insert(0, str(build_dir))
    return build_dir


def bindings(build_dir: Path) -> dict[str, tuple[object, object]]:
    """name -> (f(a, b, c), its floor noop3)."""
    nb = importlib.import_module("three_nb")
    out = {"arrayport nanobind caster": (nb.arrayport3, nb.noop3),
           "nanobind nb::ndarray": (nb.nb_ndarray3, nb.noop3)}
    lib = build_dir / "libthree_tvm.so"
    if lib.exists():
        import tvm_ffi  # type: ignore

        mod = tvm_ffi.load_module(str(lib))
        out["TVM-FFI TensorView"] = (mod.three, mod.noop3)
    return out


def argument_sets() -> dict[str, tuple]:
    torch = importlib.import_module("torch")
    t = [torch.ones(1000, device="cuda") for _ in range(3)]
    sets = {"torch, torch, torch": tuple(t)}
    try:
        cp = importlib.import_module("cupy")
        sets["torch, cupy, arrayport"] = (t[0], cp.ones(1000, "float32"),
                                          ap.ones((1000,), "float32", memory="device"))
    except ImportError as e:
        print(f"skip the mixed set: {e}")
    return sets


def per_call_ns(calls: dict[str, object]) -> dict[str, list[float]]:
    rounds: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(ROUNDS):
        for name, call in calls.items():
            rounds[name].append(timeit.timeit(call, number=CALLS) / CALLS * 1e9)
    return rounds


def main(outdir: str) -> None:
    build_dir = build()
    binds = bindings(build_dir)
    device = ap.devices()[0]["name"]
    results: dict[str, dict] = {}
    for sname, args in argument_sets().items():
        calls = {}
        for bname, (f, noop) in binds.items():
            floor_args = (1, 2, 3) if bname.startswith("TVM") else args
            try:
                f(*args)
                noop(*floor_args)
            except Exception as e:  # this binding does not take this set
                print(f"{sname}: {bname} refused: {type(e).__name__}: {e}")
                continue
            calls[f"{bname}|call"] = lambda f=f: f(*args)
            calls[f"{bname}|floor"] = lambda n=noop, a=floor_args: n(*a)
        rounds = per_call_ns(calls)
        row = {}
        for bname in binds:
            if f"{bname}|call" not in rounds:
                continue
            call, floor = min(rounds[f"{bname}|call"]), min(rounds[f"{bname}|floor"])
            row[bname] = {"call_ns": call, "floor_ns": floor, "per_argument_ns": (call - floor) / 3,
                          "call_median_ns": statistics.median(rounds[f"{bname}|call"])}
        results[sname] = row
        print(f"\n{sname} ({device}):")
        base = row.get("nanobind nb::ndarray", {}).get("per_argument_ns")
        tvm = row.get("TVM-FFI TensorView", {}).get("per_argument_ns")
        for bname, r in row.items():
            ratio = f"  {r['per_argument_ns'] / base:5.2f}x nb::ndarray" if base else ""
            ratio += f"  {r['per_argument_ns'] / tvm:5.2f}x TVM-FFI" if tvm else ""
            print(f"  {bname:28s} call {r['call_ns']:7.0f} ns  floor {r['floor_ns']:5.0f} ns  "
                  f"per argument {r['per_argument_ns']:6.1f} ns{ratio}")
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    versions = {}
    for mod in ("torch", "cupy", "nanobind", "tvm_ffi"):
        try:
            versions[mod] = importlib.import_module(mod).__version__
        except Exception:
            pass
    (out / "three.json").write_text(json.dumps(
        {"device": device, "python": sys.version.split()[0], "versions": versions,
         "calls_per_round": CALLS, "rounds": ROUNDS, "results": results}, indent=2))
    plot(results, list(binds), device, out / "three.png")


def plot(results: dict[str, dict], names: list[str], device: str, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.8 / max(len(results), 1)
    for k, (sname, row) in enumerate(results.items()):
        xs = [i + k * width for i, n in enumerate(names) if n in row]
        ax.bar(xs, [row[n]["per_argument_ns"] for n in names if n in row], width, label=sname)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names, fontsize=9)
    ax.set_yscale("log")
    ax.set_ylabel("ns per array argument above the floor (log)")
    ax.set_title(f"f(a, b, c), three checked float32 CUDA arrays — {device}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(HERE / "results"))
