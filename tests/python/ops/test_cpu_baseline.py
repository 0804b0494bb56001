"""The CPU kernels as a CPU without AVX2 runs them (ARRAYPORT_DISABLE_AVX2 set): the strided loop
where the flat AVX2 loop would run, the baseline reductions, no libmvec. The property sweep of
every op against NumPy, the comparison loops, the transcendental functions and the column
reductions (SSE2 vectors) run again in a child process with the switch set.
ARRAYPORT_DISABLE_AVX512 likewise gives an AVX-512 CPU the AVX2 paths (libmvec's AVX2 loops, the
C library's float64 exp, log and power, the AVX2 mask and select loops, the AVX2 integer
column extremes)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[2]

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                                reason="AVX2 is an x86-64 feature; other CPUs have one path")


def child_env(disable: str | None, switch: str = "ARRAYPORT_DISABLE_AVX2") -> dict[str, str]:
    """The environment of a child: `switch` set to `disable`, or unset (None); the other unset."""
    env = dict(os.environ, ARRAYPORT_TEST_EXAMPLES="60")
    env.pop("ARRAYPORT_DISABLE_AVX2", None)
    env.pop("ARRAYPORT_DISABLE_AVX512", None)
    if disable is not None:
        env[switch] = disable
    return env


def kernels_in(disable: str | None, switch: str = "ARRAYPORT_DISABLE_AVX2") -> str:
    code = "import arrayport._core as c; print(c.runtime_info()['cpu_kernels'])"
    r = subprocess.run([sys.executable, "-c", code], env=child_env(disable, switch),
                       capture_output=True, text=True, timeout=120, check=True)
    return r.stdout.strip()


def test_the_switch_turns_avx2_off_and_0_leaves_it_on():
    assert kernels_in("1").startswith("SSE2")
    assert kernels_in("0") == kernels_in(None)  # what this CPU has


def test_the_avx512_switch_leaves_avx2():
    assert kernels_in("1", "ARRAYPORT_DISABLE_AVX512") in ("AVX2", kernels_in("1"))
    assert kernels_in("0", "ARRAYPORT_DISABLE_AVX512") == kernels_in(None)


def test_the_avx2_loops_of_an_avx512_cpu_match_numpy():
    files = ["test_transcendental.py", "test_comparison_loops.py", "test_reduction_layouts.py"]
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
         *(str(HERE / f) for f in files)],
        cwd=ROOT, env=child_env("1", "ARRAYPORT_DISABLE_AVX512"), capture_output=True, text=True,
        timeout=600)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and " failed" not in r.stdout


def test_every_op_without_avx2_matches_numpy():
    files = ["test_ops_properties.py", "test_comparison_loops.py", "test_transcendental.py",
             "test_reduction_layouts.py"]
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
         *(str(HERE / f) for f in files)],
        cwd=ROOT, env=child_env("1"), capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and " failed" not in r.stdout
