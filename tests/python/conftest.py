"""Shared fixtures: the installed arrayport, GPU markers, and a CMake driver for C++ builds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import arrayport

REPO = Path(__file__).resolve().parents[2]

HAS_GPU = bool(arrayport.runtime_info()["cuda_available"])
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason=f"needs a CUDA device: {arrayport.runtime_info()['reason']}")


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
    for cmd in (configure, [cmake, "--build", str(build), "--parallel", str(os.cpu_count() or 2)]):
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            pytest.fail(f"{' '.join(cmd)} failed:\n{result.stdout[-6000:]}\n{result.stderr[-6000:]}")
    return result


def pytest_terminal_summary(terminalreporter):
    """Shows the GoogleTest counts of the C++ executables in the pytest summary (and CI's log)."""
    import test_cpp_suite

    for line in test_cpp_suite.pytest_terminal_summary_lines():
        terminalreporter.write_line(line)
