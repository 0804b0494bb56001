"""Builds the C++ suite (tests/cpp) against the installed package with find_package(arrayport),
runs every test executable, and reports the GoogleTest counts. CUDA-compiled variants are built
when the package was built with CUDA; their GPU tests skip without a device."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import arrayport
from conftest import REPO, cmake_build

EXECUTABLES = ["arrayport_tests", "arrayport_tests_cpu_only", "arrayport_tests_cuda",
               "arrayport_bridge_tests", "arrayport_ops_tests"]
RESULTS: dict[str, str] = {}


@pytest.fixture(scope="session")
def cpp_build(tmp_path_factory) -> Path:
    build = tmp_path_factory.mktemp("cpp-tests")
    cmake_build(REPO / "tests" / "cpp", build, f"-DPython_EXECUTABLE={sys.executable}")
    return build


@pytest.mark.parametrize("name", EXECUTABLES)
def test_cpp_executable_passes(cpp_build, name):
    exe = cpp_build / name
    if name == "arrayport_tests_cuda" and not arrayport.build_info()["cuda"]:
        pytest.skip("arrayport was built without CUDA, so the suite is not compiled with nvcc")
    assert exe.is_file(), f"{exe} was not built"
    result = subprocess.run([str(exe)], capture_output=True, text=True, timeout=900)
    out = result.stdout
    passed = re.search(r"\[  PASSED  \] (\d+) tests?", out)
    skipped = re.search(r"\[  SKIPPED \] (\d+) tests?", out)
    failed = re.search(r"(\d+) FAILED TESTS?", out)
    RESULTS[name] = (f"{passed.group(1) if passed else 0} passed, "
                     f"{failed.group(1) if failed else 0} failed, "
                     f"{skipped.group(1) if skipped else 0} skipped")
    assert result.returncode == 0, out[-8000:] + result.stderr[-2000:]
    assert passed and int(passed.group(1)) > 0, out[-4000:]


def pytest_terminal_summary_lines() -> list[str]:
    return [f"C++ {name}: {summary}" for name, summary in RESULTS.items()]
