"""arrayport.cuda.Stream.adopt: other libraries' streams (the CUDA stream protocol, PyTorch's and
CuPy's attributes) borrowed by handle. Fakes with made-up handles are enough: nothing runs on them."""

from __future__ import annotations

import gc
import weakref

import pytest

from arrayport import cuda
from conftest import current_device_or_none, needs_gpu


class CudaCoreLike:
    def __init__(self, handle, version=0):
        self.result = (version, handle)

    def __cuda_stream__(self):
        return self.result


class CudaCoreOldLike:  # cuda.core 0.1 made __cuda_stream__ a property
    __cuda_stream__ = (0, 0x4400)


class TorchLike:
    def __init__(self, handle, priority=-1):
        self.cuda_stream = handle
        self.priority = priority


class CupyLike:
    def __init__(self, handle, device_id=-1):
        self.ptr = handle
        self.device_id = device_id  # CuPy's null stream says -1: unknown


@pytest.mark.parametrize(
    "make, handle, priority",
    [
        (lambda: CudaCoreLike(0x1100), 0x1100, 0),
        (CudaCoreOldLike, 0x4400, 0),
        (lambda: TorchLike(0x2200, priority=-3), 0x2200, -3),
        (lambda: CupyLike(0x3300), 0x3300, 0),
        (lambda: 0x5500, 0x5500, 0),
        # Made in the test: a Stream in the parameters would live until pytest exits.
        (cuda.Stream.per_thread, 2, 0),
    ],
    ids=["cuda.core", "cuda.core-property", "torch", "cupy", "int", "Stream"],
)
def test_adopt_borrows_the_handle_of_each_protocol(make, handle, priority):
    obj = make()
    s = cuda.Stream.adopt(obj)
    assert s.handle == handle
    assert s.owned is False
    assert s.priority == priority
    assert s.device == current_device_or_none()
    assert s.__cuda_stream__() == (0, handle)


def test_adopting_a_stream_returns_the_same_object():
    s = cuda.Stream.from_handle(0x6600)
    assert cuda.Stream.adopt(s) is s


def test_cuda_stream_protocol_wins_over_the_attributes():
    class Both(CupyLike):
        def __cuda_stream__(self):
            return (0, 0x7700)

    assert cuda.Stream.adopt(Both(0x1)).handle == 0x7700


def test_an_adopted_stream_keeps_its_owner_alive():
    owner = TorchLike(0x8800)
    alive = weakref.ref(owner)
    s = cuda.Stream.adopt(owner)
    del owner
    gc.collect()
    assert alive() is not None
    del s
    gc.collect()
    assert alive() is None


def test_an_adopted_stream_can_be_made_current():
    with cuda.Stream.adopt(TorchLike(0x9900)) as s:
        assert cuda.current_stream() is s
        assert cuda.current_stream().handle == 0x9900


def test_adopting_something_else_is_a_type_error_naming_what_was_expected():
    with pytest.raises(TypeError) as info:
        cuda.Stream.adopt("x")
    assert str(info.value) == (
        "Stream.adopt: obj: expected an object with __cuda_stream__ (the cuda.core protocol), a "
        "PyTorch stream (.cuda_stream), a CuPy stream (.ptr), an arrayport.cuda.Stream or an int "
        "handle, got 'str'")
    for bad in (None, 1.5, True, object()):
        with pytest.raises(TypeError, match="Stream.adopt: obj: expected an object with __cuda_stream"):
            cuda.Stream.adopt(bad)


def test_adopting_a_negative_handle_is_a_value_error():
    with pytest.raises(ValueError, match=r"Stream\.adopt: obj: a stream handle must be non-negative"):
        cuda.Stream.adopt(-1)
    with pytest.raises(ValueError, match=r"Stream\.adopt: obj\.ptr: a stream handle must be non-neg"):
        cuda.Stream.adopt(CupyLike(-5))
    with pytest.raises(ValueError, match=r"Stream\.adopt: obj\.__cuda_stream__\(\)\[1\]: a stream "
                                         r"handle must be non-negative"):
        cuda.Stream.adopt(CudaCoreLike(-5))


def test_adopting_a_bad_cuda_stream_protocol_says_what_came():
    with pytest.raises(TypeError, match=r"__cuda_stream__\(\) must return a \(version, handle\) "
                                        r"tuple of ints, got \[0, 5\]"):
        cuda.Stream.adopt(type("L", (), {"__cuda_stream__": lambda self: [0, 5]})())
    with pytest.raises(TypeError, match=r"got \(0,\)"):
        cuda.Stream.adopt(type("L", (), {"__cuda_stream__": lambda self: (0,)})())
    with pytest.raises(ValueError, match=r"__cuda_stream__ protocol version 1 is not supported "
                                         r"\(expected 0\)"):
        cuda.Stream.adopt(CudaCoreLike(0x10, version=1))
    with pytest.raises(TypeError, match=r"\.cuda_stream: a stream handle must be an int"):
        cuda.Stream.adopt(TorchLike("0x10"))


@needs_gpu
def test_borrowed_streams_take_a_device(device0):
    last = cuda.device_count() - 1
    assert cuda.Stream.legacy(last).device == last
    assert cuda.Stream.per_thread(cuda.Device(last)).device == last
    assert cuda.Stream.from_handle(0x1234, device=last).device == last
    assert cuda.Stream.adopt(TorchLike(0x1234), device=last).device == last
    if last > 0:
        assert cuda.Stream.legacy(last) != cuda.Stream.legacy(0)  # one per device
        with pytest.raises(ValueError,
                           match=rf"Stream\.adopt: the stream is on device 0, "
                                 rf"not on device {last}"):
            cuda.Stream.adopt(cuda.Stream(), device=last)
