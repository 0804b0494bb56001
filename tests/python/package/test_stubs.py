"""The type stubs shipped with the package match the compiled module, and type-check user code.

mypy's stubtest compares every stub (_core.pyi, ops.pyi, cuda.py's TYPE_CHECKING block, the
package's own modules) with the installed module: names, kinds, parameters and defaults. nanobind
functions carry no inspect signature, so tests/typing/stubtest.py reads the one nanobind records.
Genuinely unexpressible items are listed, each with its reason, in
tests/typing/stubtest_allowlist.txt. Then mypy checks tests/typing/usage.py, the public API as a
user calls it, and the package's own code against the stubs.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import arrayport
from conftest import REPO

TYPING = REPO / "tests" / "typing"

pytest.importorskip("mypy", reason="mypy is not installed (pip install '.[test]')")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    # Outside the repository, so that neither python/arrayport nor a stray config is picked up:
    # the installed package (its .pyi files and py.typed) is what users get.
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_stubs_match_the_compiled_module_per_stubtest(tmp_path):
    result = _run([str(TYPING / "stubtest.py"), "arrayport",
                   "--allowlist", str(TYPING / "stubtest_allowlist.txt")], tmp_path)
    assert result.returncode == 0, (
        "the stubs drifted from the module (fix the .pyi, or allowlist with a reason):\n"
        + result.stdout[-8000:] + result.stderr[-4000:])


def test_usage_type_checks_with_mypy_strict(tmp_path):
    result = _run(["-m", "mypy", "--strict", "--warn-unused-ignores", "--cache-dir",
                   str(tmp_path / "cache"), str(TYPING / "usage.py")], tmp_path)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-4000:]


def test_usage_runs(tmp_path):
    pytest.importorskip("numpy")
    result = _run([str(TYPING / "usage.py")], tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]


def test_the_package_type_checks_against_its_stubs(tmp_path):
    result = _run(["-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
                   "-p", "arrayport"], tmp_path)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-4000:]


def test_stubs_and_py_typed_are_installed():
    here = Path(arrayport.__file__).parent
    for name in ("_core.pyi", "ops.pyi", "py.typed"):
        assert (here / name).is_file(), f"{name} is not installed with the package"


@pytest.mark.parametrize("name", ["cuda", "ops"])
def test_compiled_submodules_export_what_their_public_modules_do(name):
    """_core.pyi types arrayport._core.cuda / .ops as arrayport.cuda / .ops (stubtest does not
    descend into submodules): the names must be the same."""
    compiled = importlib.import_module(f"arrayport._core.{name}")
    public = importlib.import_module(f"arrayport.{name}")
    names = {n for n in dir(compiled) if not n.startswith("_")}
    assert names == set(public.__all__)


def test_the_stubtest_driver_reads_nanobind_signatures():
    """If nanobind's __nb_signature__ changed shape, stubtest would silently check no parameters."""
    spec = importlib.util.spec_from_file_location("arrayport_stubtest", TYPING / "stubtest.py")
    driver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(driver)
    P = inspect.Parameter
    sig = driver.nanobind_signature(arrayport.zeros)
    assert [(p.name, p.kind, p.default) for p in sig.parameters.values()] == [
        ("shape", P.POSITIONAL_OR_KEYWORD, P.empty), ("dtype", P.POSITIONAL_OR_KEYWORD, None),
        ("memory", P.POSITIONAL_OR_KEYWORD, None), ("device", P.POSITIONAL_OR_KEYWORD, None),
        ("stream", P.POSITIONAL_OR_KEYWORD, None)]
    sig = driver.nanobind_signature(arrayport.view)
    assert sig.parameters["sync"].kind is P.KEYWORD_ONLY and sig.parameters["sync"].default is True
    sig = driver.nanobind_signature(arrayport.cuda.Stream.synchronize)
    assert list(sig.parameters) == ["self"]
