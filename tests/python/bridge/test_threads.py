"""Eight threads at once: acquiring (view, asarray), exporting (buffer protocol, memoryview,
DLPack) and running arrayport.ops, each thread on its own data and checked against NumPy; and the
GIL released while a kernel runs. .ci/sanitize runs this file against a ThreadSanitizer build."""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest

import arrayport as ap
from arrayport import ops
from conftest import HAS_GPU
from dlpack_ctypes import DLPackOnly

THREADS = 8


def run_together(body, iterations: int) -> None:
    """Runs body(t, i) for i in range(iterations) on THREADS threads released by one barrier;
    re-raises the first failure (with its thread)."""
    barrier = threading.Barrier(THREADS)
    errors: list[tuple[int, BaseException]] = []

    def worker(t: int) -> None:
        try:
            barrier.wait()
            for i in range(iterations):
                body(t, i)
        except BaseException as e:  # noqa: BLE001 - reported in the main thread
            errors.append((t, e))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        t, e = errors[0]
        raise AssertionError(f"thread {t} of {THREADS} failed ({len(errors)} failed): {e!r}") from e


@pytest.fixture(autouse=True)
def short_switch_interval():
    # Switch threads often, so that the threads really interleave inside the bindings' Python
    # parts too, not only in the kernels that release the GIL.
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def test_acquire_export_and_ops_from_eight_threads_give_each_thread_its_own_results():
    def body(t: int, i: int) -> None:
        # small (GIL held) and large (GIL released, the CPU pool busy or taken) arrays
        n = 1000 + t if i % 4 else (1 << 16) + t
        x = np.arange(n, dtype=np.float32) * (t + 1) + i
        y = np.full(n, float(t), np.float32)
        v = ap.view(x)                       # acquire: buffer protocol, zero-copy
        a = ap.asarray(DLPackOnly(y))        # acquire: DLPack
        assert v.ptr == x.ctypes.data and a.ptr == y.ctypes.data
        s = ops.add(v, a)                    # ops on acquired inputs
        np.testing.assert_array_equal(np.asarray(s), x + y)
        m = ops.multiply(x, 2.0)             # ops straight on NumPy
        np.testing.assert_array_equal(memoryview(m), x * 2)      # export: memoryview
        np.testing.assert_array_equal(np.from_dlpack(m), x * 2)  # export: DLPack
        e = np.asarray(s)                    # export: buffer protocol, zero-copy
        assert e.ctypes.data == s.ptr
        total = float(np.asarray(ops.sum(v)))
        assert total == pytest.approx(float(x.sum(dtype=np.float64)), rel=1e-5)
        assert float(np.asarray(ops.max(a))) == float(t)
        # a write through an exported view is seen by the producer's other views
        e[0] = -1.0
        assert float(np.asarray(s)[0]) == -1.0
        w = ops.where(x > n / 2, v, a)
        np.testing.assert_array_equal(np.asarray(w), np.where(x > n / 2, x, y))

    run_together(body, iterations=40)


def test_arrays_made_written_and_reduced_in_eight_threads():
    def body(t: int, i: int) -> None:
        shape = (64 + t, 33 + i % 5)
        a = ap.full(shape, float(t), "float64")
        a[t % shape[0], :] = np.arange(shape[1], dtype=np.float64)
        ref = np.full(shape, float(t))
        ref[t % shape[0], :] = np.arange(shape[1])
        np.testing.assert_array_equal(a.get(), ref)
        np.testing.assert_array_equal(np.asarray(ops.sum(a, axis=0)), ref.sum(axis=0))
        b = a[::2, ::-1].copy()
        np.testing.assert_array_equal(np.asarray(b), ref[::2, ::-1])
        c = ops.astype(ops.sqrt(ops.square(b)), "float32")
        np.testing.assert_allclose(np.asarray(c), np.abs(ref[::2, ::-1]).astype(np.float32))
        cap = a.__dlpack__()             # a capsule made and dropped unconsumed in each thread
        del cap

    run_together(body, iterations=30)


def test_one_array_read_by_eight_threads_and_written_through_disjoint_views():
    shared = ap.zeros((THREADS, 1 << 14), "int64")
    src = np.arange(1 << 14, dtype=np.int64)

    def body(t: int, i: int) -> None:
        row = shared[t]                               # a view shared by nobody else
        ops.add(src, t * 1000 + i, out=row)           # out= through a view: only row t changes
        got = np.asarray(row)
        np.testing.assert_array_equal(got, src + t * 1000 + i)
        assert int(np.asarray(ops.sum(shared[t]))) == int((src + t * 1000 + i).sum())

    run_together(body, iterations=25)
    for t in range(THREADS):
        np.testing.assert_array_equal(np.asarray(shared[t]), src + t * 1000 + 24)


@pytest.mark.skipif(not HAS_GPU, reason="current streams are per thread only where streams exist")
def test_each_thread_its_own_current_stream():
    def body(t: int, i: int) -> None:
        with ap.cuda.Stream() as s:
            assert ap.cuda.current_stream().handle == s.handle
            x = ap.full((1 << 16,), float(t), "float32", memory="device")
            y = ops.add(x, 1.0)
            assert float(np.asarray(ops.sum(y).get())) == (t + 1.0) * (1 << 16)

    run_together(body, iterations=10)


def test_the_gil_is_released_while_a_large_kernel_runs():
    # A reduction of a zero-stride input (a long kernel that needs no memory), grown until it
    # takes a fifth of a second: about 2^26 elements on 2 cores, fewer under a sanitizer, more
    # than 2^30 on a 16-core machine.
    n = 1 << 20
    while True:
        x = np.broadcast_to(np.float32(1), (n,))
        start = time.perf_counter()
        total = float(np.asarray(ops.sum(x)))
        alone = time.perf_counter() - start
        assert abs(total - n) <= n * 1e-5, (total, n)  # pairwise: exact to 2^24, close beyond
        if alone > 0.2 or n >= 1 << 36:
            break
        n *= 4
    assert alone > 0.05, f"the kernel took {alone:.3f} s: too short to tell"

    def longest_stall():
        done = threading.Event()

        def reduce_in_background():
            ops.sum(x)
            done.set()

        # This thread runs only while the other one does not hold the GIL: the longest stretch
        # it could not run, from before the other thread starts to after it is done, is the
        # measure.
        th = threading.Thread(target=reduce_in_background)
        last = time.perf_counter()
        longest, spins = 0.0, 0
        th.start()
        while not done.is_set():
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now
            spins += 1
        longest = max(longest, time.perf_counter() - last)  # the wait that ended the loop counts
        th.join()
        return longest, spins

    # With the GIL held through the kernel, this thread would stop for the whole kernel, every
    # time. A shared 2-core machine can also stall it (the kernel's workers fill both cores), so
    # one of three tries must show it running through the kernel.
    tries = []
    for _ in range(3):
        longest, spins = longest_stall()
        tries.append((round(longest, 3), spins))
        if longest < alone / 2 and spins > 100:
            break
    else:
        raise AssertionError(f"the kernel alone took {alone:.3f} s; (longest stall, spins) "
                             f"while it ran in another thread: {tries}")
