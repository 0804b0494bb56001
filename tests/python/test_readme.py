"""The README's C++ example compiles against the installed package (with CUDA) and, on a GPU, runs."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import arrayport
from conftest import REPO, cmake_build, needs_gpu

needs_nvcc = pytest.mark.skipif(
    not arrayport.build_info()["cuda"] or not shutil.which("nvcc"),
    reason="the example is CUDA code: needs arrayport built with CUDA and nvcc on PATH")


def readme_cpp_example() -> str:
    blocks = re.findall(r"```cpp\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    assert blocks, "the README has a C++ example"
    return blocks[0]


@pytest.fixture(scope="module")
def example_exe(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("readme")
    source = tmp / "example.cu"
    source.write_text(readme_cpp_example())
    cmake_build(REPO / "tests" / "downstream" / "readme", tmp / "build", f"-DREADME_EXAMPLE={source}")
    return tmp / "build" / "readme_example"


@needs_nvcc
def test_readme_cpp_example_compiles_against_the_installed_package(example_exe):
    assert example_exe.is_file()


@needs_nvcc
@needs_gpu
def test_readme_cpp_example_runs_and_scales_every_element(example_exe):
    result = subprocess.run([str(example_exe)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
