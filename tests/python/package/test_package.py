"""The package: import, version, build/runtime info, the report, exceptions, CMake locations."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import arrayport
from conftest import HAS_GPU, REPO, needs_cupy, needs_gpu, needs_torch


def test_version_is_the_one_written_in_version_h():
    header = (REPO / "include" / "arrayport" / "version.h").read_text()
    expected = re.search(r'ARRAYPORT_VERSION_STRING "([0-9.]+)"', header).group(1)
    assert arrayport.__version__ == expected
    assert arrayport.build_info()["version"] == expected


def test_public_names_exist_and_core_is_private():
    for name in arrayport.__all__:
        assert hasattr(arrayport, name), name
    assert "_core" not in arrayport.__all__


def test_runtime_info_is_consistent():
    info = arrayport.runtime_info()
    assert info["cuda_available"] == (info["device_count"] > 0)
    if info["cuda_available"]:
        assert info["reason"] == ""
        assert len(arrayport.devices()) == info["device_count"]
    else:
        assert info["reason"], "a machine without a device says why"
        assert arrayport.devices() == []
    if arrayport.build_info()["cuda"]:
        assert info["runtime_version"] >= 12000
        assert arrayport.build_info()["cudart"] == "static"
    else:
        assert "CPU-only build" in info["reason"]


def run_report(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "arrayport", *args], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_report_states_version_build_and_devices_or_cpu_fallback():
    out = run_report()
    assert f"arrayport {arrayport.__version__}" in out
    assert "CUDA compiled in" in out
    if HAS_GPU:
        for d in arrayport.devices():
            assert f"device {d['index']}: {d['name']}" in out
            assert "compute capability" in out
        assert "CPU fallback" not in out
    else:
        reason = arrayport.runtime_info()["reason"]
        assert f"CPU fallback: {reason}." in out


def test_report_without_numpy_says_in_one_line_how_to_get_the_rest():
    # `pip install .` brings no NumPy: the report still runs, and says what installing it adds.
    # Nor is any library there that needs NumPy (JAX aborts the process when it is hidden alone).
    blocked = ["numpy", "torch", "cupy", "jax", "jaxlib", "numba"]
    code = (f"import sys, runpy; sys.modules.update(dict.fromkeys({blocked!r})); "
            "sys.argv = ['arrayport']; runpy.run_module('arrayport', run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "NumPy              not installed" in result.stdout
    assert result.stdout.count("python -m pip install numpy adds the NumPy interop rows") == 1
    assert "python -m pip install numpy" not in run_report()


def test_report_json_is_machine_readable_and_matches_the_api():
    data = json.loads(run_report("--json"))
    assert data["arrayport"] == arrayport.__version__
    assert data["mode"] == ("cuda" if HAS_GPU else "cpu-fallback")
    assert data["runtime"]["device_count"] == arrayport.runtime_info()["device_count"]
    assert data["build"] == arrayport.build_info()
    assert "NumPy" in data["libraries"]


def _interop_rows(library, memory):
    from arrayport import _interop

    return {r["direction"]: r for r in _interop.matrix()
            if r["library"] == library and r["memory"] == memory}


def test_interop_matrix_checks_numpy_both_ways_zero_copy():
    rows = _interop_rows("NumPy", "host")
    assert set(rows) == {"export", "import"}
    for r in rows.values():
        assert (r["zero_copy"], r["write_seen"], r["protocol"]) == (True, True, "buffer protocol")
        assert 0 < r["us"] < 1000 and not r["error"]
    info = json.loads(run_report("--json"))
    assert any(r["library"] == "NumPy" and r["zero_copy"] for r in info["interop"])
    assert "arrayport -> NumPy" in run_report() and "NumPy -> arrayport" in run_report()


@needs_gpu
@pytest.mark.parametrize("library", ["CuPy", "PyTorch", "Numba"])
def test_interop_matrix_on_the_gpu_is_zero_copy(library):
    rows = _interop_rows(library, "device")
    if not rows or all(r["skipped"] for r in rows.values()):
        pytest.skip(f"{library} is not installed")
    assert set(rows) == {"export", "import"}
    for r in rows.values():
        assert not r["error"], r
        assert (r["zero_copy"], r["write_seen"]) == (True, True), r


def test_the_report_demo_runs_the_pipeline_and_checks_it_against_numpy():
    info = json.loads(run_report("--json"))
    demo = info["demo"]
    assert demo["ok"] is True
    assert [s["step"] for s in demo["steps"]] == ["upload", "axpy", "sqrt|abs", "sum", "download"] + (
        ["device=0", "again"] if HAS_GPU else [])
    assert all(s["ms"] > 0 for s in demo["steps"])
    assert demo["memory"] == ("device" if HAS_GPU else "host")
    assert "results match NumPy: yes" in run_report()


def test_cmake_dir_holds_the_package_config():
    cmake_dir = Path(run_report("--cmake-dir").strip())
    assert cmake_dir == Path(arrayport.cmake_dir())
    assert (cmake_dir / "arrayportConfig.cmake").is_file()
    assert (cmake_dir / "arrayportConfigVersion.cmake").is_file()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF symbol tables: Linux")
def test_core_exports_its_init_function_alone():
    # Exported static-runtime symbols (libstdc++'s STB_GNU_UNIQUE locale ids, the CUDA runtime)
    # bind process-wide and crash the next library that loads the shared ones (CuPy, PyTorch).
    import shutil

    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    core = arrayport._core.__file__
    out = subprocess.run([nm, "-D", "--defined-only", core], capture_output=True, text=True,
                         check=True).stdout
    exported = sorted(line.split()[-1] for line in out.splitlines() if line.strip())
    assert exported == ["PyInit__core"]


# An extension built with default visibility (a plain setuptools or CMake module) that uses the
# Python-facing headers: their inline code and its statics (the API slot) stay private to it.
HIDDEN_USER = r"""
#include <arrayport/capi.hpp>  // the old path: forwards to bind/capi.hpp
#include <arrayport/python/parameter.hpp>
int use(PyObject* o) {
  arrayport::capi::arg<float, 1> a("a");
  arrayport::python::parameter<arrayport::view<const double, 2>> p;
  return a.load(o) + p.load(o, true) + (arrayport::python::current_stream() != nullptr);
}
"""


@pytest.mark.parametrize("override", [False, True],
                         ids=["hidden", "ARRAYPORT_NAMESPACE=arrayport"])
def test_python_facing_code_is_hidden_in_a_default_visibility_extension(tmp_path, override):
    cxx, nm = shutil.which("c++") or shutil.which("g++"), shutil.which("nm")
    if cxx is None or nm is None:
        pytest.skip("no C++ compiler or nm (binutils)")
    (tmp_path / "user.cpp").write_text(HIDDEN_USER)
    lib = tmp_path / "user.so"
    cmd = [cxx, "-std=c++17", "-O1", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "user.cpp"),
           f"-I{arrayport.include_dir()}", f"-I{sysconfig.get_paths()['include']}"]
    if override:  # the macro's escape hatch, and proof that the check below sees such symbols
        cmd.append("-DARRAYPORT_NAMESPACE=arrayport")
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    out = subprocess.run([nm, "-D", "-C", "--defined-only", str(lib)], capture_output=True,
                         text=True, check=True).stdout
    exported = [line for line in out.splitlines()
                if "arrayport::python::" in line or "arrayport::capi::" in line]
    if override:
        assert exported, out
    else:
        assert exported == [], exported
    assert "use(_object*)" in out  # the extension's own function is still exported


@needs_gpu
@needs_cupy
@needs_torch
def test_arrayport_first_then_cupy_and_torch_import_and_run():
    code = ("import arrayport as ap; a = ap.ones(3, memory='device');"
            "import cupy, torch;"
            "assert int(cupy.asarray(a).sum()) == 3;"
            "assert int(torch.from_dlpack(a).sum()) == 3; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_include_dir_holds_every_public_header():
    include = Path(run_report("--include-dir").strip())
    assert include == Path(arrayport.include_dir())
    for header in (REPO / "include" / "arrayport").rglob("*.h*"):
        rel = header.relative_to(REPO / "include")
        assert (include / rel).is_file(), rel


# A call of a CUDA runtime or driver function, looked for once comments and string literals are
# blanked; kernel code may still name CUDA types (cudaStream_t) and launch kernels.
CUDA_CALL = re.compile(r"\b(?:cuda|cu)[A-Z]\w*\s*\(")
COMMENT_OR_STRING = re.compile(r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""", re.S)
SOURCE_SUFFIXES = {".h", ".hpp", ".c", ".cpp", ".cu", ".cuh"}


def cuda_calls(path: Path) -> list[str]:
    code = COMMENT_OR_STRING.sub(" ", path.read_text())
    return [m.group(0) for m in CUDA_CALL.finditer(code)]


def test_only_the_runtime_shim_calls_cuda():
    runtime = REPO / "include" / "arrayport" / "runtime"
    # The check sees calls where they are, and not in a comment or a message.
    assert "cudaMemcpyAsync(" in cuda_calls(runtime / "copy.hpp")
    assert not CUDA_CALL.search(COMMENT_OR_STRING.sub(" ", '// cudaFree(p)\nf("cudaMalloc(...)");'))
    outside = [f"{path.relative_to(REPO)}: {call}"
               for root in (REPO / "include", REPO / "src") for path in sorted(root.rglob("*"))
               if path.suffix in SOURCE_SUFFIXES and runtime not in path.parents
               for call in cuda_calls(path)]
    assert not outside, "only include/arrayport/runtime/ may call CUDA:\n" + "\n".join(outside)


def test_exception_hierarchy():
    assert issubclass(arrayport.CudaError, RuntimeError)
    assert issubclass(arrayport.OutOfMemoryError, arrayport.CudaError)
    assert issubclass(arrayport.OutOfMemoryError, MemoryError)
    assert issubclass(arrayport.NoDeviceError, RuntimeError)
    assert arrayport.CudaError.__module__ == "arrayport"


@pytest.mark.parametrize(
    "kind, exc",
    [("type", TypeError), ("value", ValueError), ("buffer", BufferError),
     ("no_device", arrayport.NoDeviceError)],
)
def test_cpp_exceptions_become_precise_python_exceptions(kind, exc):
    with pytest.raises(exc, match=f"{kind.replace('_', ' ')} message"):
        arrayport._core._raise(kind)


def test_cuda_error_carries_code_name_api_and_stickiness():
    with pytest.raises(arrayport.CudaError) as info:
        arrayport._core._raise("cuda")
    e = info.value
    assert type(e) is arrayport.CudaError
    assert (e.code, e.name, e.api, e.sticky) == (700, "cudaErrorIllegalAddress", "cudaMemcpy(...)", True)
    assert "sticky error" in str(e) and "restart the process" in str(e)


def test_out_of_memory_is_caught_as_memory_error():
    with pytest.raises(MemoryError) as info:
        arrayport._core._raise("oom")
    assert isinstance(info.value, arrayport.OutOfMemoryError)
    assert (info.value.code, info.value.sticky) == (2, False)


def test_unknown_raise_kind_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="unknown kind 'nope'"):
        arrayport._core._raise("nope")


CAPI_PYX = """# cython: language_level=3
from arrayport.capi cimport (arrayport_acquire_request_t, arrayport_acquired_t, import_arrayport,
                             ARRAYPORT_ACQUIRE_OK, ARRAYPORT_REQUEST_CALL_SCOPED)
from cpython.object cimport PyObject
from libc.string cimport memset

def ndim_of(obj):
    cdef arrayport_acquire_request_t r
    cdef arrayport_acquired_t a
    memset(&r, 0, sizeof(r))
    r.size = sizeof(r)
    r.ndim = -1
    r.options = ARRAYPORT_REQUEST_CALL_SCOPED
    api = import_arrayport()
    if api.abi_minor < 2 or api.acquire_view(<PyObject*>obj, &r, &a) != ARRAYPORT_ACQUIRE_OK:
        raise ValueError("refused")
    n = a.view.ndim
    if a.handle != NULL:
        api.release(a.handle)
    return n
"""


def test_capi_pxd_declares_the_1_2_request_api(tmp_path):
    # Cython users reach acquire_view (C API 1.2) through arrayport/capi.pxd, as api.h declares it.
    pytest.importorskip("Cython", reason="Cython is not installed (pip install '.[test]')")
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler (cc) on PATH")
    (tmp_path / "capi_use.pyx").write_text(CAPI_PYX)
    package_parent = str(Path(arrayport.__file__).parent.parent)
    run = lambda *cmd: subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True,  # noqa: E731
                                      timeout=300)
    r = run(sys.executable, "-m", "cython", "-3", "-I", package_parent, "-o", "capi_use.c",
            "capi_use.pyx")
    assert r.returncode == 0, r.stdout + r.stderr
    ext = "capi_use" + sysconfig.get_config_var("EXT_SUFFIX")
    r = run(cc, "-shared", "-fPIC", "-O1", f"-I{sysconfig.get_paths()['include']}",
            f"-I{arrayport.include_dir()}", "capi_use.c", "-o", ext)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(sys.executable, "-c", "import numpy as np, arrayport as ap, capi_use; "
            "print(capi_use.ndim_of(np.zeros((2, 3))), capi_use.ndim_of(ap.zeros(4)))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2", "1"]
