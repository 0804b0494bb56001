"""Downstream projects of the installed package: a minimal CMake project finds it with
find_package(arrayport) and runs; and examples/downstream, the project a user copies, built as its
README says and tested with its own tests: `pip` without build isolation against the installed
arrayport, once per binding.

nanobind is built with CUDA where a CUDA compiler is found (as a user's default build is) and
pybind11 without (ARRAYPORT_CUDA=OFF), so both of the template's kernel paths are compiled. The
wheel is unpacked into a temporary directory, never installed: the environment is left as it was.
On a GPU machine the template's tests also run CuPy and PyTorch arrays through it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

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


# ---- examples/downstream: the template a user copies ------------------------------------------

TEMPLATE = REPO / "examples" / "downstream"
VARIANTS = [("nanobind", "AUTO"), ("pybind11", "OFF")]


@pytest.fixture(scope="module", params=VARIANTS, ids=[b for b, _ in VARIANTS])
def template(request, tmp_path_factory):
    """(the copied project, the directory its wheel was unpacked into, pip's log)."""
    binding, cuda = request.param
    pytest.importorskip(binding, reason=f"{binding} is not installed (pip install '.[test]')")
    pytest.importorskip("scikit_build_core", reason="scikit-build-core is not installed")
    root = tmp_path_factory.mktemp(f"template-{binding}")
    project = root / "my_kernels"  # a copy, as the README tells a user to make
    shutil.copytree(TEMPLATE, project, ignore=shutil.ignore_patterns("build", "dist", "__pycache__"))
    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    cmd = [sys.executable, "-m", "pip", "wheel", "-v", "--no-build-isolation", "--no-deps",
           "--no-index", "-w", str(root / "dist"), f"-Ccmake.define.BINDING={binding}",
           f"-Ccmake.define.ARRAYPORT_CUDA={cuda}", str(project)]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} failed:\n{result.stdout[-8000:]}\n{result.stderr[-4000:]}")
    (wheel,) = (root / "dist").glob("my_kernels-*.whl")
    site = root / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    return binding, cuda, project, site, result.stdout + result.stderr  # pip -v: CMake's output


def _python(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(site))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_the_template_builds_with_the_binding_asked_for(template):
    binding, cuda, _, site, log = template
    assert f"my_kernels: binding {binding}, CUDA " in log
    if cuda == "OFF":
        assert "my_kernels: binding pybind11, CUDA OFF" in log
    for name in ("__init__.py", "_ext.pyi", "py.typed"):
        assert (site / "my_kernels" / name).is_file()
    assert list((site / "my_kernels").glob("_ext*.so")) or list((site / "my_kernels").glob("_ext*.pyd"))


def test_the_templates_own_tests_pass(template):
    _, _, project, site, _ = template
    result = _python(site, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests", cwd=project)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-4000:]
    assert " passed" in result.stdout and " failed" not in result.stdout


def test_saxpy_from_numpy_as_the_readme_shows(template):
    _, _, _, site, _ = template
    code = ("import numpy as np, my_kernels\n"
            "x = np.arange(4, dtype=np.float32); y = np.ones(4, dtype=np.float32)\n"
            "my_kernels.saxpy(2.0, x, y)\n"
            "print(y.tolist(), my_kernels.built_with_cuda)\n")
    result = _python(site, "-c", code, cwd=site)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(" ", 4)[:4] == ["[1.0,", "3.0,", "5.0,", "7.0]"]


def test_the_readme_rename_followed_literally_builds_and_passes(tmp_path):
    # Step 2 of examples/downstream/README.md, its commands run as they are written, then the
    # renamed project built (CPU kernel) and tested with its own tests.
    pytest.importorskip("nanobind", reason="nanobind is not installed (pip install '.[test]')")
    pytest.importorskip("scikit_build_core", reason="scikit-build-core is not installed")
    readme = (TEMPLATE / "README.md").read_text()
    step = readme.split("## 2. Copy and rename", 1)[1].split("\n## ", 1)[0]
    (commands,) = re.findall(r"```bash\n(.*?)```", step, re.S)
    script = commands.replace("<arrayport>", str(REPO))
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    project = tmp_path / "fastops"
    left = [str(f.relative_to(project)) for f in project.rglob("*") if f.is_file()
            and re.search(r"my[_-]kernels|MY_KERNELS", f.read_text(errors="replace"))]
    assert left == [], f"the rename left the old name in {left}"
    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps",
           "--no-index", "-w", str(tmp_path / "dist"), "-Ccmake.define.ARRAYPORT_CUDA=OFF",
           str(project)]
    built = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert built.returncode == 0, built.stdout[-8000:] + built.stderr[-4000:]
    (wheel,) = (tmp_path / "dist").glob("fastops-*.whl")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path / "site")
    result = _python(tmp_path / "site", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests",
                     cwd=project)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-4000:]
    assert " passed" in result.stdout and " failed" not in result.stdout
