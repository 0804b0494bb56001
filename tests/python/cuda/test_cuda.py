"""arrayport.cuda without work on a GPU: the module, the behaviour without a device, streams by
handle and the current stream. Runs anywhere (the no-device checks only where there is none).
Adopting other libraries' streams: test_stream_adoption.py; devices, streams and events with real
work: test_cuda_on_gpu.py."""

from __future__ import annotations

import gc
import sys
import threading

import pytest

import arrayport
from arrayport import cuda
from conftest import HAS_GPU, current_device_or_none

REASON = arrayport.runtime_info()["reason"]
no_gpu_only = pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a CUDA device")


# ---------------------------------------------------------------------------------------------
# The module


def test_public_names_are_the_compiled_ones_under_arrayport_cuda():
    from arrayport import _core

    assert "cuda" in arrayport.__all__
    for name in cuda.__all__:
        assert getattr(cuda, name) is getattr(_core.cuda, name), name
    for cls in (cuda.Device, cuda.Stream, cuda.Event):
        assert cls.__module__ == "arrayport.cuda"
        assert repr(cls) == f"<class 'arrayport.cuda.{cls.__name__}'>"


def test_versions_are_ints_like_13000():
    assert isinstance(cuda.runtime_version(), int)
    assert isinstance(cuda.driver_version(), int)
    assert cuda.runtime_version() == arrayport.runtime_info()["runtime_version"]
    assert cuda.driver_version() == arrayport.runtime_info()["driver_version"]
    if arrayport.build_info()["cuda"]:
        assert cuda.runtime_version() >= 12000
        assert cuda.runtime_version() % 10 == 0  # major * 1000 + minor * 10
    if HAS_GPU:
        assert cuda.driver_version() >= 12000


def test_availability_matches_the_probe():
    assert cuda.is_available() is HAS_GPU
    assert cuda.device_count() == arrayport.runtime_info()["device_count"]


# ---------------------------------------------------------------------------------------------
# Without a device: NoDeviceError saying why, from everything that needs one


@no_gpu_only
def test_without_a_device_nothing_is_available():
    assert cuda.is_available() is False
    assert cuda.device_count() == 0


@no_gpu_only
@pytest.mark.parametrize(
    "what, call",
    [
        ("current_device", lambda: cuda.current_device()),
        ("set_device", lambda: cuda.set_device(0)),
        ("synchronize", lambda: cuda.synchronize()),
        ("Device", lambda: cuda.Device(0)),
        ("Device", lambda: cuda.Device()),
        ("Device", lambda: cuda.Device(7)),
        ("Stream", lambda: cuda.Stream()),
        ("Stream", lambda: cuda.Stream(device=0, priority=-1, non_blocking=False)),
        ("Event", lambda: cuda.Event()),
        ("Event", lambda: cuda.Event(timing=False, blocking=True)),
        ("Stream.from_handle", lambda: cuda.Stream.from_handle(0, device=0)),
        ("Stream.legacy", lambda: cuda.Stream.legacy(0)),
        ("Stream.record_event", lambda: cuda.Stream.legacy().record_event()),
    ],
)
def test_without_a_device_each_call_raises_no_device_error_saying_why(what, call):
    with pytest.raises(arrayport.NoDeviceError) as info:
        call()
    assert str(info.value) == f"{what} needs a CUDA device, but {REASON}"
    assert REASON  # e.g. "no CUDA driver: libcuda could not be loaded"


@no_gpu_only
def test_without_a_device_the_default_streams_work_and_their_waits_are_no_ops():
    for s in (cuda.Stream.legacy(), cuda.Stream.per_thread(), cuda.Stream.from_handle(0),
              cuda.current_stream()):
        assert s.device is None
        assert s.query() is True
        assert s.synchronize() is None


@no_gpu_only
def test_without_a_device_a_borrowed_handle_can_be_waited_on_harmlessly():
    s = cuda.Stream.from_handle(0xDEAD0000)
    assert s.query() is True
    s.synchronize()


# ---------------------------------------------------------------------------------------------
# Borrowed streams: the default streams, raw handles


def test_legacy_stream_is_handle_0_borrowed():
    s = cuda.Stream.legacy()
    assert s.handle == 0
    assert s.owned is False
    assert s.priority == 0
    assert s.device == current_device_or_none()
    assert s.__cuda_stream__() == (0, 0)
    assert "legacy default" in repr(s) and "borrowed" in repr(s)


def test_per_thread_stream_is_handle_2_borrowed():
    s = cuda.Stream.per_thread()
    assert s.handle == 2
    assert s.owned is False
    assert s.__cuda_stream__() == (0, 2)
    assert "per-thread default" in repr(s)
    assert s != cuda.Stream.legacy()


def test_from_handle_borrows_any_non_negative_handle():
    s = cuda.Stream.from_handle(0x7F00DEAD)
    assert s.handle == 0x7F00DEAD
    assert s.owned is False
    assert s.device == current_device_or_none()
    assert "0x7f00dead" in repr(s)
    assert cuda.Stream.from_handle(0) == cuda.Stream.legacy()
    assert cuda.Stream.from_handle(2**64 - 1).handle == 2**64 - 1


def test_from_handle_takes_index_like_ints():
    np = pytest.importorskip("numpy")
    assert cuda.Stream.from_handle(np.uint64(0x1000)).handle == 0x1000
    assert cuda.Stream.from_handle(np.int64(0x2000)).handle == 0x2000


def test_streams_are_equal_and_hashed_by_handle():
    a, b = cuda.Stream.from_handle(0x1234), cuda.Stream.from_handle(0x1234)
    assert a == b and a is not b
    assert hash(a) == hash(b)
    assert len({a, b, cuda.Stream.from_handle(0x5678)}) == 2
    assert a != cuda.Stream.from_handle(0x5678)
    assert a != 0x1234 and a != "x"  # other types are never equal


@pytest.mark.parametrize("handle", [-1, -(2**70)])
def test_a_negative_handle_is_a_value_error(handle):
    with pytest.raises(ValueError, match=r"Stream\.from_handle: handle: a stream handle must be "
                                         r"non-negative \(a cudaStream_t address\), got -"):
        cuda.Stream.from_handle(handle)


def test_a_handle_wider_than_a_pointer_is_a_value_error():
    with pytest.raises(ValueError, match=r"must fit in 64 bits, got 18446744073709551616"):
        cuda.Stream.from_handle(2**64)


@pytest.mark.parametrize("handle, name",
                         [("0", "str"), (1.0, "float"), (True, "bool"), (None, "NoneType")])
def test_a_handle_that_is_not_an_int_is_a_type_error(handle, name):
    with pytest.raises(TypeError, match=rf"Stream\.from_handle: handle: a stream handle must be an int "
                                        rf"\(a cudaStream_t address\), got '{name}'"):
        cuda.Stream.from_handle(handle)


@pytest.mark.parametrize("device, name", [("cuda:0", "str"), (1.5, "float"), (True, "bool")])
def test_a_device_that_is_not_an_int_or_device_is_a_type_error(device, name):
    with pytest.raises(TypeError, match=rf"Stream\.legacy: device: expected None, an int or an "
                                        rf"arrayport\.cuda\.Device, got {name}$"):
        cuda.Stream.legacy(device)
    with pytest.raises(TypeError, match=rf"set_device: device: expected an int or an "
                                        rf"arrayport\.cuda\.Device, got {name}$"):
        cuda.set_device(device)


def test_none_is_the_current_device_where_a_device_is_optional_only():
    assert cuda.Stream.legacy(None).device == current_device_or_none()
    assert cuda.Stream.from_handle(5, None).device == current_device_or_none()
    with pytest.raises(TypeError, match=r"set_device: device: expected an int or an "
                                        r"arrayport\.cuda\.Device, got NoneType"):
        cuda.set_device(None)


# ---------------------------------------------------------------------------------------------
# The current stream: thread-local, nestable, restored on exit


def test_current_stream_is_the_legacy_default_when_none_is_set():
    s = cuda.current_stream()
    assert s.handle == 0
    assert s == cuda.Stream.legacy()
    assert s.owned is False


def test_with_stream_sets_the_current_stream_and_nests():
    a, b = cuda.Stream.from_handle(0xA000), cuda.Stream.from_handle(0xB000)
    with a as entered:
        assert entered is a
        assert cuda.current_stream() is a
        with b:
            assert cuda.current_stream() is b
            with a:  # the same stream again, nested
                assert cuda.current_stream() is a
            assert cuda.current_stream() is b
        assert cuda.current_stream() is a
    assert cuda.current_stream().handle == 0


def test_with_stream_restores_the_previous_stream_on_exception():
    a, b = cuda.Stream.from_handle(0xA000), cuda.Stream.per_thread()
    with a:
        with pytest.raises(KeyError):
            with b:
                raise KeyError("inside")
        assert cuda.current_stream() is a
    assert cuda.current_stream().handle == 0


def test_the_current_stream_is_per_thread():
    seen = {}
    ready, done = threading.Event(), threading.Event()

    def other():
        seen["before"] = cuda.current_stream().handle
        with cuda.Stream.from_handle(0xC000):
            ready.set()
            done.wait(10)
            seen["inside"] = cuda.current_stream().handle

    with cuda.Stream.from_handle(0xA000):
        t = threading.Thread(target=other)
        t.start()
        assert ready.wait(10)
        assert cuda.current_stream().handle == 0xA000  # the other thread's block is not seen here
        done.set()
        t.join(10)
    assert seen == {"before": 0, "inside": 0xC000}


def test_the_current_stream_is_kept_alive_while_current_and_released_on_exit():
    s = cuda.Stream.from_handle(0xD000)
    refs = sys.getrefcount(s)
    s.__enter__()  # called directly: a `with` statement holds references of its own
    assert sys.getrefcount(s) == refs + 1
    s.__exit__(None, None, None)
    assert sys.getrefcount(s) == refs
    with cuda.Stream.from_handle(0xE000):  # no other reference: the block keeps it
        gc.collect()
        assert cuda.current_stream().handle == 0xE000


def test_exiting_a_stream_that_is_not_the_innermost_is_a_runtime_error():
    a, b = cuda.Stream.from_handle(0xA000), cuda.Stream.from_handle(0xB000)
    with pytest.raises(RuntimeError, match=r"Stream\.__exit__: this stream is not the innermost"):
        a.__exit__(None, None, None)
    with a:
        with pytest.raises(RuntimeError, match="not the innermost"):
            b.__exit__(None, None, None)
        assert cuda.current_stream() is a  # the failed exit changed nothing
    assert cuda.current_stream().handle == 0
