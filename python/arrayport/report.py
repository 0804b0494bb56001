"""The environment report printed by ``python -m arrayport``.

It says what this build is (version, CUDA or CPU-only, architectures), what the machine has
(CUDA runtime and driver, every device with name, compute capability and memory) or plainly that
arrayport runs in CPU fallback and why, which array libraries are installed, and the live interop
matrix: each hand-off between arrayport and each library, tried here (see _interop.py).
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
from typing import Any, Callable

import arrayport
from arrayport import _demo, _interop

# Array libraries arrayport interoperates with: (import name, display name).
ARRAY_LIBRARIES = [
    ("numpy", "NumPy"),
    ("cupy", "CuPy"),
    ("torch", "PyTorch"),
    ("jax", "JAX"),
    ("numba", "Numba"),
    ("cuda.core", "cuda.core"),
]


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}" if v else "none"


def _library_versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for module, name in ARRAY_LIBRARIES:
        try:
            mod = importlib.import_module(module)
        except Exception:  # not installed, or broken: either way not usable here
            found[name] = None
            continue
        found[name] = str(getattr(mod, "__version__", "installed"))
    return found


def collect(progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Everything the report shows, as plain data (what ``--json`` prints). `progress` gets a
    line as each step of the demo completes."""
    runtime = arrayport.runtime_info()
    return {
        "arrayport": arrayport.__version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "build": arrayport.build_info(),
        "runtime": runtime,
        "devices": arrayport.devices() if runtime["cuda_available"] else [],
        "mode": "cuda" if runtime["cuda_available"] else "cpu-fallback",
        "libraries": _library_versions(),
        "interop": _interop.matrix(),
        "demo": _demo.safe_run(progress),
        "include_dir": arrayport.include_dir(),
        "cmake_dir": arrayport.cmake_dir(),
    }


def render(info: dict[str, Any]) -> str:
    b, r = info["build"], info["runtime"]
    lines = [
        f"arrayport {info['arrayport']}  (Python {info['python']}, {info['platform']})",
        "",
        "build",
        f"  CUDA compiled in   {'yes' if b['cuda'] else 'no (CPU-only build)'}",
    ]
    if b["cuda"]:
        lines += [
            f"  CUDA runtime       {_cuda_version(b['cuda_runtime_compiled'])} ({b['cudart']})",
            f"  architectures      {b['cuda_architectures']}",
            f"  CUDA compiler      {b['cuda_compiler']}",
        ]
    lines += [
        f"  C++ compiler       {b['cxx_compiler']}",
        "",
        "runtime",
        f"  CUDA runtime       {_cuda_version(r['runtime_version'])}",
        f"  CUDA driver        {_cuda_version(r['driver_version'])}",
        f"  devices            {r['device_count']}",
        f"  CPU kernels        {r['cpu_kernels']}, {r['cpu_threads']} threads",
    ]
    if info["mode"] == "cpu-fallback":
        lines += [
            "",
            f"CPU fallback: {r['reason']}.",
            "  Host memory and CPU code work; 'managed' and 'pinned' memory are host memory here.",
        ]
    for d in info["devices"]:
        cc = ".".join(str(x) for x in d["compute_capability"])
        lines += [
            "",
            f"device {d['index']}: {d['name']}",
            f"  compute capability {cc}, {d['multiprocessor_count']} multiprocessors",
            f"  memory             {d['total_memory'] / 2**30:.1f} GiB total, "
            f"{d['free_memory'] / 2**30:.1f} GiB free",
            f"  PCI bus id         {d['pci_bus_id']}",
            f"  UUID               {d['uuid']}",
            f"  managed memory     {'yes' if d['managed_memory'] else 'no'}"
            f" (concurrent access: {'yes' if d['concurrent_managed_access'] else 'no'})",
        ]
    lines += ["", "array libraries"]
    for name, version in info["libraries"].items():
        lines.append(f"  {name:<18} {version if version else 'not installed'}")
    if not info["libraries"].get("NumPy"):  # arrayport does not need it; half the report does
        lines.append("  (python -m pip install numpy adds the NumPy interop rows and the demo)")
    lines += ["", "interop (zero-copy: the same pointer on both sides; write seen: a write on one side "
              "read on the other)"]
    lines += _interop.render(info["interop"])
    demo = info["demo"]
    where = (f" ({demo['elements']:,} float32, {demo['memory']} memory)" if "elements" in demo
             else "")
    lines += ["", f"demo: NumPy -> arrayport.ops -> NumPy{where}"]
    lines += _demo.render(demo)
    lines += ["", f"CMake package      {info['cmake_dir']}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arrayport", description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true", help="print the report as JSON")
    group.add_argument("--cmake-dir", action="store_true",
                       help="print the directory of arrayportConfig.cmake and exit")
    group.add_argument("--include-dir", action="store_true",
                       help="print the C++ include directory and exit")
    args = parser.parse_args(argv)
    if args.cmake_dir:
        print(arrayport.cmake_dir())
    elif args.include_dir:
        print(arrayport.include_dir())
    elif args.json:
        print(json.dumps(collect(), indent=2))
    else:
        # The demo's steps show on stderr as they complete; the whole report follows on stdout.
        print(render(collect(lambda line: print(line, file=sys.stderr, flush=True))))
    return 0
