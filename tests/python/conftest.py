"""Shared fixtures: the installed arrayport, the needs_* markers, GPU work fixtures, and a CMake
driver for C++ builds. The tests live in one folder per layer (array, bridge, cuda, ops, package);
this directory is on sys.path for all of them, so conftest and the helper modules import by name."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import arrayport
from arrayport import cuda
from gpu_work import CupyWork, TorchWork

REPO = Path(__file__).resolve().parents[2]

# JAX takes 75 % of the card at its first use unless told otherwise: tests of other libraries in
# this process, and test processes beside it, need the rest.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

HAS_GPU = bool(arrayport.runtime_info()["cuda_available"])


def current_device_or_none():
    """The current CUDA device, or None on a machine without one."""
    return cuda.current_device() if HAS_GPU else None


# Repetitions of each stream-ordering check: 20 (a stale read shows in most of them); fewer only
# under compute-sanitizer, which serialises kernels and makes each repetition take seconds.
STREAM_REPS = int(os.environ.get("ARRAYPORT_TEST_STREAM_REPS", "20"))
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason=f"needs a CUDA device: {arrayport.runtime_info()['reason']}")

# A library marker (declared in pyproject.toml, for --strict-markers) skips, as pytest.importorskip
# does, when the library does not import. A test that needs it on the GPU carries needs_gpu too,
# a skipif that pytest checks first: without a GPU, the library is never imported.
needs_cupy = pytest.mark.needs_cupy
needs_torch = pytest.mark.needs_torch
needs_jax = pytest.mark.needs_jax
# Measures the card's free memory or exhausts it: right only with no other process on the GPU
# (.ci/gpu-run runs these alone, after the layers' parallel runs).
whole_device = pytest.mark.whole_device
LIBRARIES = {"needs_cupy": "cupy", "needs_torch": "torch", "needs_jax": "jax"}


def pytest_runtest_setup(item):
    """Runs after the skipif marks and before the fixtures (which may use the library)."""
    for marker, module in LIBRARIES.items():
        if item.get_closest_marker(marker):
            try:
                with warnings.catch_warnings():  # as importorskip: import-time warnings are theirs
                    warnings.simplefilter("ignore")
                    importlib.import_module(module)
            except ImportError as e:  # installed but broken skips too (as before pytest 9)
                skip = pytest.skip.Exception(f"could not import {module!r}: {e}")
                skip._use_item_location = True  # reported at the test, as a skipif is
                raise skip from None


def cmake_executable() -> str:
    """The cmake the test extras installed (or the system one)."""
    exe = shutil.which("cmake", path=str(Path(sys.executable).parent)) or shutil.which("cmake")
    if not exe:
        pytest.fail("cmake not found: install the test extras (pip install '.[test]')")
    return exe


def cmake_build(source: Path, build: Path, *extra: str) -> subprocess.CompletedProcess:
    """Configures and builds `source` against the installed arrayport package; fails with the log."""
    cmake = cmake_executable()
    ninja = shutil.which("ninja", path=str(Path(sys.executable).parent)) or shutil.which("ninja")
    configure = [cmake, "-S", str(source), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                 f"-Darrayport_DIR={arrayport.cmake_dir()}", *extra]
    if ninja:
        configure += ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"]
    # The compilers run without the sanitizer runtime that .ci/sanitize preloads into the
    # interpreter: nvcc's cicc crashes with ASan preloaded.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    for cmd in (configure, [cmake, "--build", str(build), "--parallel", str(os.cpu_count() or 2)]):
        result = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if result.returncode != 0:
            pytest.fail(f"{' '.join(cmd)} failed:\n{result.stdout[-6000:]}\n{result.stderr[-6000:]}")
    return result


def _tool_dir(module: str, flag: str) -> str | None:
    result = subprocess.run([sys.executable, "-m", module, flag], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else None


def example_requirements(style: str) -> list[str]:
    """The extra -D flags examples/<style> needs; skips (saying why) when its tool is not installed."""
    if style == "nanobind":
        d = _tool_dir("nanobind", "--cmake_dir")
        if not d:
            pytest.skip("nanobind is not installed")
        return [f"-Dnanobind_DIR={d}"]
    if style == "pybind11":
        d = _tool_dir("pybind11", "--cmakedir")
        if not d:
            pytest.skip("pybind11 is not installed")
        return [f"-Dpybind11_DIR={d}"]
    if style == "cython" and not (shutil.which("cython", path=str(Path(sys.executable).parent)) or shutil.which("cython")):
        pytest.skip("Cython is not installed")
    if style == "swig" and not (shutil.which("swig", path=str(Path(sys.executable).parent)) or shutil.which("swig")):
        pytest.skip("SWIG is not installed (pip install swig)")
    return []


@pytest.fixture(scope="session")
def example_build(tmp_path_factory):
    """build(style) -> the build directory of examples/<style>, built once per session, out of tree,
    into <tmp>/<style>/build (so that its parent is the project directory a reader would be in)."""
    built: dict[str, Path] = {}

    def build(style: str) -> Path:
        if style not in built:
            extra = example_requirements(style)
            build_dir = tmp_path_factory.mktemp(f"example-{style}") / "build"
            cmake_build(REPO / "examples" / style, build_dir, f"-DPython_EXECUTABLE={sys.executable}", *extra)
            built[style] = build_dir
        return built[style]

    return build


@pytest.fixture(params=[pytest.param("torch", marks=needs_torch), pytest.param("cupy", marks=needs_cupy)])
def work(request):
    """GPU work enqueued by PyTorch, then by CuPy (gpu_work.py)."""
    return TorchWork() if request.param == "torch" else CupyWork()


@pytest.fixture
def device0():
    """Device 0 current for the test, and the previous device current again after it."""
    previous = cuda.current_device()
    cuda.set_device(0)
    yield cuda.Device(0)
    cuda.set_device(previous)


def pytest_terminal_summary(terminalreporter):
    """Shows the GoogleTest counts of the C++ executables in the pytest summary (and CI's log)."""
    suite = sys.modules.get("test_cpp_suite")  # package/test_cpp_suite.py, where it was collected
    for line in suite.pytest_terminal_summary_lines() if suite else []:
        terminalreporter.write_line(line)
