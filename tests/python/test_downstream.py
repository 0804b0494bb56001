"""A downstream CMake project finds the installed package and runs."""

from __future__ import annotations

import subprocess

import arrayport
from conftest import HAS_GPU, REPO, cmake_build


def test_minimal_downstream_project_builds_with_find_package_and_runs(tmp_path):
    cmake_build(REPO / "tests" / "downstream" / "minimal", tmp_path)
    result = subprocess.run([str(tmp_path / "minimal")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    kind = "managed" if HAS_GPU else "host"
    assert result.stdout.strip() == (
        f"arrayport {arrayport.__version__}: 1000 elements of {kind} memory, sum 500.0, "
        f"devices {arrayport.runtime_info()['device_count']}"
    )
