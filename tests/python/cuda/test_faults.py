"""Faults: out of memory in the middle of an op (inputs intact, the process usable) and fork()
(a child of a process that initialised CUDA gets a clear error naming fork, never a hang)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import arrayport as ap
from conftest import HAS_GPU, needs_gpu, whole_device
from dlpack_ctypes import Producer

# Out-of-memory tests fill the card, and fork tests start CUDA contexts: alone on the GPU.
pytestmark = whole_device

# 2^52 bytes of float32: beyond the 47-bit user address space of x86-64 and AArch64, so the
# allocation fails whatever the overcommit policy; its inputs are zero-stride views of one element.
HUGE = (2**25, 2**25)


def run_python(code: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter (the fork tests must not fork pytest itself)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


# ---- out of memory -----------------------------------------------------------------------------

def test_host_oom_in_an_op_raises_memory_error_leaves_inputs_intact_and_the_next_op_works():
    a = ap.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    x = np.arange(3, dtype=np.float32)
    big = np.broadcast_to(np.float32(1), HUGE)
    before = [sys.getrefcount(o) for o in (a, x, big)]
    for call in (lambda: ap.ops.add(big, a[0, 0:1]), lambda: ap.ops.multiply(big, 2.0),
                 lambda: ap.ops.where(big, x[:1], 0.0), lambda: ap.ops.sum(
                     np.broadcast_to(np.float32(1), HUGE + (2,)), axis=2)):
        with pytest.raises(MemoryError, match=r"out of memory for the result of shape "
                                              r"\(33554432, 33554432\) of float32"):
            call()
    # the inputs are as they were, and nothing the failed calls took is still held
    assert np.asarray(a).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert x.tolist() == [0, 1, 2]
    assert [sys.getrefcount(o) for o in (a, x, big)] == before
    np.testing.assert_array_equal(np.asarray(ap.ops.add(a, x)), np.asarray(a) + x)
    assert float(np.asarray(ap.ops.sum(a))) == 15.0


def test_an_array_too_large_for_memory_raises_memory_error():
    with pytest.raises(MemoryError):
        ap.empty(HUGE, "float32")
    assert ap.zeros(3).get().tolist() == [0, 0, 0]


def test_a_broadcast_result_beyond_2_63_bytes_is_a_value_error_not_a_wrapped_size():
    # (2^32, 1) + (1, 2^32) float32 is 2^66 bytes: the size used to wrap to 0 bytes and the
    # kernel then wrote through a NULL (or tiny) result.
    x = np.broadcast_to(np.float32(1), (2**32, 1))
    y = np.broadcast_to(np.float32(1), (1, 2**32))
    with pytest.raises(ValueError, match=r"add: the result would have shape "
                                         r"\(4294967296, 4294967296\) of float32, 2\^63 bytes or"):
        ap.ops.add(x, y)
    # exactly 2^63 bytes: one more than fits an int64 byte count
    x, y = (np.broadcast_to(np.float64(1), s) for s in ((2**30, 1), (1, 2**30)))
    with pytest.raises(ValueError, match=r"multiply: the result would have shape \(1073741824, "):
        ap.ops.multiply(x, y)


class _CAIOnly:
    def __init__(self, **cai):
        self.__cuda_array_interface__ = {"typestr": "<f4", "data": (0x10000, False), "version": 3,
                                         "strides": None, **cai}


@pytest.mark.parametrize("make", [
    lambda shape: _CAIOnly(shape=shape),
    lambda shape: Producer(shape=shape),  # DLPack with NULL strides
], ids=["cuda-array-interface", "dlpack"])
def test_compact_strides_past_2_63_elements_are_refused_not_wrapped(make):
    # Strides left to the consumer: those of shape (2, 2^62, 4) do not fit in int64 (the
    # computation was a signed overflow that UBSan reported).
    with pytest.raises(ValueError, match=r"shape \(2, 4611686018427387904, 4\) has "
                                         r"36893488147419103232 elements, more than 2\^63-1"):
        ap.view(make((2, 2**62, 4)))
    # an empty array of such a shape is fine: it addresses nothing
    assert ap.view(make((0, 2**62, 4))).size == 0


@needs_gpu
def test_device_oom_in_an_op_leaves_inputs_intact_and_the_process_usable():
    free, _ = ap.cuda.Device(0).mem_info()
    n = int(free * 0.4) // 4  # two inputs of 40% each: the result's 40% cannot fit
    a = ap.full((n,), 2.0, "float32", memory="device")
    b = ap.full((n,), 3.0, "float32", memory="device")
    with pytest.raises(ap.OutOfMemoryError) as info:
        ap.ops.add(a, b)
    assert isinstance(info.value, MemoryError) and info.value.name == "cudaErrorMemoryAllocation"
    ap.cuda.synchronize()
    for x, v in ((a, 2.0), (b, 3.0)):
        assert float(np.asarray(ap.ops.min(x).get())) == v == float(np.asarray(ap.ops.max(x).get()))
    small = ap.ops.add(a[:1000], b[:1000]).get()
    assert small.tolist() == [5.0] * 1000
    del a, b, x  # x: the loop left b in it
    ap.cuda.synchronize()
    # the memory is back: the op that failed now fits
    c = ap.full((n,), 1.0, "float32", memory="device")
    assert float(np.asarray(ap.ops.sum(ap.ops.add(c, c)).get())) == pytest.approx(2.0 * n, rel=1e-3)


# ---- fork() ------------------------------------------------------------------------------------

# The child reports what it saw on stdout, one line per check, and exits 0 only when it got there.
CHILD_REPORT = """
    import os, sys
    import numpy as np
    import arrayport as ap
    from arrayport import _core

    def child_checks():
        print("marked", _core._forked_after_cuda_init())
        info = ap.runtime_info()
        print("available", info["cuda_available"], "fork" in info["reason"])
        for name, call in (("stream", lambda: ap.cuda.Stream()),
                           ("device-memory", lambda: ap.empty(4, memory="device")),
                           ("event", lambda: ap.cuda.Event())):
            try:
                call()
                print(name, "no error")
            except Exception as e:
                print(name, type(e).__name__, "fork()" in str(e) and "'spawn'" in str(e))
        # host work goes on: a large op uses the CPU thread pool the parent started
        x = np.arange(1 << 20, dtype=np.float32)
        print("ops", bool((np.asarray(ap.ops.add(x, x)) == 2 * x).all()))

    def fork_and_check():
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            try:
                child_checks()
                sys.stdout.flush()
                os._exit(0)
            except BaseException as e:
                print("child raised", type(e).__name__, e)
                sys.stdout.flush()
                os._exit(3)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status))
"""


def test_fork_child_of_a_process_that_initialised_cuda_gets_a_clear_error_and_keeps_the_cpu():
    # Without a GPU, the test hook records "CUDA initialised" as the probe does on a GPU machine.
    r = run_python(CHILD_REPORT + """
    x = np.ones(1 << 20, np.float32)
    ap.ops.sum(x)                        # the parent's CPU pool is running
    _core._simulate_cuda_initialised()
    print("parent marked", _core._forked_after_cuda_init())
    fork_and_check()
    print("parent marked after", _core._forked_after_cuda_init())
    """, env={"ARRAYPORT_NUM_THREADS": "4"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split("\n") == [
        "parent marked False",
        "marked True",
        "available False True",
        "stream CudaError True",
        "device-memory CudaError True",
        "event CudaError True",
        "ops True",
        "child exit 0",
        "parent marked after False",
        "",
    ], r.stdout + r.stderr
    # Python 3.12+ warns on fork() in a multi-threaded process (the CUDA runtime's threads, with a
    # GPU): its own notice, not arrayport's. Anything else on stderr is a failure.
    assert [line for line in r.stderr.splitlines()
            if "DeprecationWarning: This process" not in line] == []


def test_fork_child_of_a_process_that_never_initialised_cuda_is_not_marked():
    r = run_python(CHILD_REPORT + """
    fork_and_check()
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.split("\n")
    assert lines[0] == "marked False" and lines[-2:] == ["child exit 0", ""], r.stdout
    if not HAS_GPU:  # the child probes for itself: a CPU machine says why there is no device
        assert lines[1] == "available False False"
        assert lines[2] == "stream NoDeviceError False"


def test_fork_after_cpu_ops_does_not_hang_the_child():
    # The CPU thread pool's workers do not survive fork(): the child used to wait for them forever.
    r = run_python("""
    import os
    import numpy as np
    import arrayport as ap
    x = np.ones(1 << 20, np.float32)
    assert float(np.asarray(ap.ops.sum(x))) == 1 << 20
    for _ in range(2):  # a child forked by a child too
        pid = os.fork()
        if pid:
            _, status = os.waitpid(pid, 0)
            os._exit(os.waitstatus_to_exitcode(status))
        ok = float(np.asarray(ap.ops.sum(x))) == 1 << 20
        ok &= bool((np.asarray(ap.ops.add(x, x)) == 2).all())
        if not ok:
            os._exit(4)
    os._exit(0)
    """, timeout=60, env={"ARRAYPORT_NUM_THREADS": "4"})
    assert r.returncode == 0, r.stdout + r.stderr


def test_multiprocessing_fork_workers_get_the_error_and_spawn_workers_do_not(tmp_path):
    script = tmp_path / "workers.py"  # a file: spawned workers import their function from it
    script.write_text(textwrap.dedent("""
        import multiprocessing as mp
        import arrayport as ap
        from arrayport import _core

        def use_cuda(_):
            try:
                ap.cuda.Stream()
                return "ok"
            except Exception as e:
                return type(e).__name__ + (": mentions fork" if "fork()" in str(e) else "")

        if __name__ == "__main__":
            _core._simulate_cuda_initialised()
            with mp.get_context("fork").Pool(2) as pool:
                print("fork", pool.map(use_cuda, range(2)))
            with mp.get_context("spawn").Pool(1) as pool:
                print("spawn", pool.map(use_cuda, range(1)))
    """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    # a spawned worker is a fresh process: it may use CUDA, or without a GPU says why it cannot
    expected_spawn = "spawn ['ok']" if HAS_GPU else "spawn ['NoDeviceError']"
    assert r.stdout.splitlines() == [
        "fork ['CudaError: mentions fork', 'CudaError: mentions fork']", expected_spawn], r.stdout


@needs_gpu
def test_fork_child_of_a_real_cuda_parent_raises_instead_of_hanging():
    r = run_python(CHILD_REPORT + """
    d = ap.full((1000,), 1.0, "float32", memory="device")   # CUDA is initialised for real
    assert float(np.asarray(ap.ops.sum(d).get())) == 1000.0
    fork_and_check()
    """, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "\n".join(r.stdout.split("\n")[:7]) == "\n".join([
        "marked True", "available False True", "stream CudaError True",
        "device-memory CudaError True", "event CudaError True", "ops True", "child exit 0"])
