"""arrayport.cuda on a GPU: device properties and guards, owned and borrowed streams, events
ordering and timing real work (enqueued through PyTorch or CuPy where present), the GIL released
by blocking calls, leaks over many cycles, out-of-memory and sticky errors."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time

import pytest

import arrayport
from arrayport import cuda
from conftest import needs_cupy, needs_gpu, needs_torch, whole_device
from gpu_work import spin_cycles


@needs_gpu
def test_device_properties_match_the_report(device0):
    for i, info in enumerate(arrayport.devices()):
        d = cuda.Device(i)
        assert d.index == i
        assert d.name == info["name"] and d.name
        assert d.compute_capability == tuple(info["compute_capability"])
        assert d.compute_capability >= (7, 0)
        assert d.total_memory == info["total_memory"] > 0
        assert d.multiprocessor_count == info["multiprocessor_count"] > 0
        assert d.pci_bus_id == info["pci_bus_id"]
        assert d.uuid == info["uuid"] and d.uuid.startswith("GPU-") and len(d.uuid) == 40
        free, total = d.mem_info()
        assert 0 < free <= total == d.total_memory
        assert d.can_access_peer(i) is False
        assert repr(d) == (f"<arrayport.cuda.Device {i}: {d.name}, compute capability "
                           f"{d.compute_capability[0]}.{d.compute_capability[1]}>")


@needs_gpu
def test_device_defaults_to_the_current_one_and_compares_by_index(device0):
    assert cuda.Device() == cuda.Device(0) == device0
    assert hash(cuda.Device(0)) == hash(device0)
    assert cuda.Device(cuda.Device(0)) == device0
    assert device0 != 0  # a Device is not an int
    assert cuda.current_device() == 0


@pytest.mark.parametrize("index", [-1, -(2**70)])
def test_a_negative_device_index_is_a_value_error_on_every_machine(index):
    with pytest.raises(ValueError, match=rf"^Device: i: expected a device index >= 0, got {index}$"):
        cuda.Device(index)
    with pytest.raises(ValueError, match=r"^set_device: device: expected a device index >= 0"):
        cuda.set_device(index)
    with pytest.raises(ValueError, match=r"^Stream: device: expected a device index >= 0"):
        cuda.Stream(device=index)


@pytest.mark.parametrize("index", [2**31, 2**63, 2**70])
def test_a_huge_device_index_is_never_called_negative(index):
    # PyLong_AsLongLongAndOverflow returns -1 on overflow: that -1 is not the index.
    for call in (lambda: cuda.Device(index), lambda: cuda.set_device(index),
                 lambda: cuda.Stream(device=index), lambda: arrayport.empty(3, device=index)):
        with pytest.raises(ValueError) as info:
            call()
        assert ">= 0" not in str(info.value)
        assert str(index) in str(info.value)


@needs_gpu
@pytest.mark.parametrize("index", ["count", 2**40, 2**70])
def test_a_bad_device_index_is_a_value_error_naming_it_and_the_range(index):
    n = cuda.device_count()
    index = n if index == "count" else index
    noun = "device" if n == 1 else "devices"
    with pytest.raises(ValueError) as info:
        cuda.Device(index)
    assert str(info.value) == (f"Device: i: expected a device index in [0, {n}) (this machine has "
                               f"{n} CUDA {noun}), got {index}")
    with pytest.raises(ValueError, match=rf"set_device: device: expected a device index in \[0, {n}\)"):
        cuda.set_device(index)
    with pytest.raises(ValueError, match=rf"Stream: device: expected a device index in \[0, {n}\)"):
        cuda.Stream(device=index)
    with pytest.raises(ValueError, match=rf"^empty: device: expected a device index in \[0, {n}\)"):
        arrayport.empty(3, device=index)


@needs_gpu
def test_with_device_makes_it_current_and_restores_the_previous_even_on_exception(device0):
    last = cuda.device_count() - 1  # a real switch on a machine with two or more
    with pytest.raises(KeyError):
        with cuda.Device(last) as d:
            assert d == cuda.Device(last)
            assert cuda.current_device() == last
            raise KeyError("inside")
    assert cuda.current_device() == 0
    with cuda.Device(last):
        with cuda.Device(0):
            assert cuda.current_device() == 0
        assert cuda.current_device() == last
    assert cuda.current_device() == 0
    with cuda.Device(0):
        cuda.set_device(last)  # a change inside the block is undone too
    assert cuda.current_device() == 0


@needs_gpu
def test_exiting_a_device_that_is_not_the_innermost_is_a_runtime_error(device0):
    with pytest.raises(RuntimeError, match=r"Device\.__exit__: this device is not the innermost"):
        device0.__exit__(None, None, None)


@needs_gpu
def test_device_and_module_synchronize(device0):
    device0.synchronize()
    cuda.synchronize()
    assert cuda.current_device() == 0


@needs_gpu
def test_an_owned_stream(device0):
    s = cuda.Stream(priority=-1)
    assert s.owned is True
    assert s.handle not in (0, 1, 2)
    assert s.device == 0
    assert s.priority == -1
    assert s.query() is True
    s.synchronize()
    assert cuda.Stream.from_handle(s.handle) == s
    assert cuda.Stream.adopt(s) is s
    assert cuda.Stream(device=device0).device == 0
    assert f"{s.handle:#x}, device 0, priority -1, owned>" in repr(s)
    assert cuda.Stream() != s


@needs_gpu
def test_with_stream_switches_to_its_device_and_back(device0):
    last = cuda.device_count() - 1
    s = cuda.Stream(device=last)
    with s:
        assert cuda.current_device() == last
        assert cuda.current_stream() is s
    assert cuda.current_device() == 0
    assert cuda.current_stream() == cuda.Stream.legacy()


@needs_gpu
def test_events_order_two_streams_without_any_other_library(device0):
    a, b = cuda.Stream(), cuda.Stream()
    e = a.record_event()
    assert isinstance(e, cuda.Event) and e.device == 0
    b.wait_event(e)
    b.synchronize()
    assert e.query() is True
    same = cuda.Event(timing=False)
    assert a.record_event(same) is same
    same.synchronize()
    assert repr(same).endswith(", device 0, timing disabled, recorded>")


@needs_gpu
def test_event_record_defaults_to_the_current_stream_and_takes_adoptable_objects(device0):
    s = cuda.Stream()
    e = cuda.Event()
    assert "not recorded" in repr(e)
    with s:
        e.record()
    e.record(s)
    e.record(s.handle)  # anything Stream.adopt takes
    e.record(cuda.Stream.legacy())
    e.synchronize()
    assert e.query() is True
    with pytest.raises(TypeError, match="Event.record: stream: expected an object with"):
        e.record("s")


@needs_gpu
def test_elapsed_time_says_which_precondition_is_missing(device0):
    s = cuda.Stream()
    timed, untimed, unrecorded = cuda.Event(), cuda.Event(timing=False), cuda.Event()
    timed.record(s)
    untimed.record(s)
    s.synchronize()
    with pytest.raises(ValueError,
                       match="Event.elapsed_time: the end event was created with timing=False"):
        timed.elapsed_time(untimed)
    with pytest.raises(ValueError, match="the start event was created with timing=False"):
        untimed.elapsed_time(timed)
    with pytest.raises(RuntimeError,
                       match="Event.elapsed_time: the end event has not been recorded"):
        timed.elapsed_time(unrecorded)
    with pytest.raises(TypeError):
        timed.elapsed_time(s)
    assert timed.elapsed_time(timed) == 0.0


@needs_gpu
def test_event_timing_of_known_work(device0, work):
    s = cuda.Stream()
    start, stop = cuda.Event(), cuda.Event()
    with s, work.on(s):
        start.record()
        work.spin(50)
        stop.record()
    with pytest.raises(RuntimeError, match="have not completed yet"):
        start.elapsed_time(stop)
    stop.synchronize()
    ms = start.elapsed_time(stop)
    assert isinstance(ms, float)
    assert 10.0 < ms < 5000.0


@needs_gpu
def test_an_event_orders_work_on_two_streams(device0, work):
    a, b = cuda.Stream(), cuda.Stream()
    src, dst = work.zeros(1 << 20), work.zeros(1 << 20)
    # Warm-up: CuPy compiles a kernel on its first use, and a compile inside the timed part below
    # could outlast the 100 ms of the spin. Its fill of 0 is a memset: 1 compiles the fill kernel.
    work.spin(1)
    work.fill(src, 1.0)
    work.fill(src, 0.0)
    work.copy(dst, src)
    work.all_equal(dst, 0.0)
    cuda.synchronize()
    with work.on(a):
        work.spin(100)  # a is busy for 100 ms, then writes src
        work.fill(src, 1.0)
    written = a.record_event(cuda.Event(timing=False))
    b.wait_event(written)
    with work.on(b):
        work.copy(dst, src)  # would read zeros without the wait
    done = b.record_event()
    assert done.query() is False  # b waits for a's 100 ms
    b.synchronize()
    assert a.query() is True
    assert work.all_equal(dst, 1.0)

    # The control: without the wait, b runs ahead of a and copies the zeros.
    src2, dst2 = work.zeros(1 << 20), work.zeros(1 << 20)
    cuda.synchronize()
    with work.on(a):
        work.spin(100)
        work.fill(src2, 1.0)
    with work.on(b):
        work.copy(dst2, src2)
    b.synchronize()
    assert a.query() is False
    assert work.all_equal(dst2, 0.0)
    a.synchronize()


@needs_gpu
@pytest.mark.parametrize("blocking_call", ["stream", "event", "device", "module"])
def test_blocking_calls_release_the_gil(device0, work, blocking_call):
    s = cuda.Stream()
    with work.on(s):
        work.spin(200)
    e = s.record_event(cuda.Event(timing=False))
    call = {"stream": s.synchronize, "event": e.synchronize, "device": device0.synchronize,
            "module": cuda.synchronize}[blocking_call]
    stamps, stop = [], threading.Event()

    def count():
        i = 0
        while not stop.is_set():
            i += 1
            if i % 1000 == 0:
                stamps.append(time.perf_counter())

    t = threading.Thread(target=count)
    t.start()
    while not stamps:
        time.sleep(0.001)
    t0 = time.perf_counter()
    call()
    t1 = time.perf_counter()
    stop.set()
    t.join()
    assert t1 - t0 > 0.05, "the work should still have been running"
    # Holding the GIL, the call would let the other thread run at most one switch interval
    # (5 ms) after t0; releasing it, the thread runs all through the wait.
    late = [x for x in stamps if t0 + (t1 - t0) / 2 < x < t1]
    assert len(late) > 10


@needs_gpu
@needs_torch
def test_adopting_a_pytorch_stream_runs_work_on_it(device0):
    import torch
    ts = torch.cuda.Stream(priority=-1)
    s = cuda.Stream.adopt(ts)
    assert s.handle == ts.cuda_stream
    assert s.device == ts.device_index == 0
    assert s.priority == ts.priority
    assert s.owned is False
    with torch.cuda.stream(ts):
        torch.cuda._sleep(spin_cycles(100))
    e = s.record_event()  # after the torch work, on the adopted stream
    assert e.query() is False
    assert s.query() is False
    e.synchronize()
    assert ts.query() is True  # torch sees its stream drained: the event was on it
    # And the other way: PyTorch on an arrayport stream.
    mine = cuda.Stream()
    with torch.cuda.stream(torch.cuda.ExternalStream(mine.handle)):
        torch.cuda._sleep(spin_cycles(100))
    assert mine.query() is False
    mine.synchronize()
    assert mine.query() is True


@needs_gpu
@needs_cupy
def test_adopting_a_cupy_stream_runs_work_on_it(device0):
    import cupy
    cs = cupy.cuda.Stream(non_blocking=True)
    s = cuda.Stream.adopt(cs)
    assert s.handle == cs.ptr
    assert s.device == 0
    assert s.owned is False
    x = cupy.ones(1 << 28, dtype=cupy.float32)  # 1 GiB
    cupy.cuda.Device().synchronize()
    with cs:
        for _ in range(100):  # ~2 GiB of traffic each, well over 10 ms in all
            cupy.multiply(x, 1.0, out=x)
    e = s.record_event()
    assert e.query() is False
    e.synchronize()
    assert cs.done  # CuPy sees its stream drained: the event was on it
    assert bool((x == 1.0).all())


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@needs_gpu
@whole_device
def test_100k_stream_and_event_cycles_leak_neither_device_nor_host_memory(device0):
    def cycles(n):
        for _ in range(n):
            s = cuda.Stream()
            e = cuda.Event()
            with s:
                e.record()
            s.record_event()

    cycles(2000)  # warm-up: the driver's and Python's pools reach their steady size
    gc.collect()
    free_before, rss_before = device0.mem_info()[0], _rss_bytes()
    cycles(100_000)
    cuda.synchronize()
    gc.collect()
    free_after, rss_after = device0.mem_info()[0], _rss_bytes()
    mib = 1 << 20
    assert abs(free_after - free_before) <= 4 * mib, (free_before, free_after)
    assert rss_after - rss_before <= 8 * mib, (rss_before, rss_after)


@needs_gpu
@whole_device
def test_more_than_the_card_has_is_out_of_memory_and_the_next_allocation_works(device0):
    free, total = device0.mem_info()
    with pytest.raises(arrayport.OutOfMemoryError) as info:
        arrayport.empty(total // 2, "float32", memory="device")  # twice the card's memory
    assert isinstance(info.value, MemoryError)
    assert (info.value.code, info.value.sticky) == (2, False)
    a = arrayport.ones(1 << 20, "float32", memory="device")
    assert float(a.get().sum()) == float(1 << 20)
    assert device0.mem_info()[0] > free - (1 << 30)  # the failed request left nothing behind


@needs_gpu
@needs_cupy
def test_an_illegal_address_is_a_sticky_cuda_error_saying_what_it_means():
    code = r"""
import cupy, arrayport as ap
bad = cupy.RawKernel(r'extern "C" __global__ void bad(float* p) { p[0] = 1.0f; }', 'bad')
bad((1,), (1,), (cupy.uint64(16),))  # writes to address 16
try:
    ap.cuda.synchronize()
except ap.CudaError as e:
    print(e.code, e.name, e.sticky, "restart the process" in str(e))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["700", "cudaErrorIllegalAddress", "True", "True"], done.stderr[-2000:]
