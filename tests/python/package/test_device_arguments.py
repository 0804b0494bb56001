"""device= takes an int or an arrayport.cuda.Device everywhere, with one outcome: every public
function with a device parameter is called with an index and with a Device of that index, and
must return the same thing or raise the same error. Without a GPU no Device(i) can be made, so
the Device comes from the test hook _core.cuda._unchecked_device (a Device not checked against the
machine): the calls then reach the error paths, which must match the int's and name the argument."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from conftest import HAS_GPU

import arrayport as ap
from arrayport import _core, cuda


def host() -> ap.Array:
    return ap.zeros((2, 3), memory="host")


def managed() -> ap.Array:
    return ap.zeros((2, 3), memory="managed")


# Every public callable with a device parameter: (name, call(device) -> result, parameter name).
CALLS: list[tuple[str, Callable[[Any], Any], str]] = [
    ("empty", lambda d: ap.empty(3, device=d), "device"),
    ("empty(memory='device')", lambda d: ap.empty(3, memory="device", device=d), "device"),
    ("zeros", lambda d: ap.zeros(3, device=d), "device"),
    ("ones", lambda d: ap.ones(3, memory="managed", device=d), "device"),
    ("full", lambda d: ap.full(3, 7, device=d), "device"),
    ("empty_like", lambda d: ap.empty_like(host(), device=d), "device"),
    ("zeros_like", lambda d: ap.zeros_like(host(), memory="device", device=d), "device"),
    ("ones_like", lambda d: ap.ones_like(host(), device=d), "device"),
    ("full_like", lambda d: ap.full_like(host(), 2, device=d), "device"),
    ("copy", lambda d: ap.copy(np.arange(3.0), device=d), "device"),
    ("copy(Array)", lambda d: ap.copy(host(), memory="pinned", device=d), "device"),
    ("to_gpu", lambda d: ap.to_gpu(np.arange(3.0), device=d), "device"),
    ("Array.copy", lambda d: host().copy(device=d), "device"),
    ("Array.to", lambda d: host().to(memory="device", device=d), "device"),
    ("Array.prefetch", lambda d: managed().prefetch(device=d), "device"),
    ("Array.advise", lambda d: managed().advise("set_preferred_location", device=d), "device"),
    ("asarray", lambda d: ap.asarray(np.arange(3.0), device=d), "device"),
    ("from_dlpack", lambda d: ap.from_dlpack(np.arange(3.0), device=d), "device"),
    ("cuda.set_device", lambda d: cuda.set_device(d), "device"),
    ("cuda.Device", lambda d: cuda.Device(d), "i"),
    ("cuda.Device.can_access_peer", lambda d: device_of(0).can_access_peer(d), "peer"),
    ("cuda.Stream", lambda d: cuda.Stream(device=d), "device"),
    ("cuda.Stream.from_handle", lambda d: cuda.Stream.from_handle(0, device=d), "device"),
    ("cuda.Stream.adopt", lambda d: cuda.Stream.adopt(0, device=d), "device"),
    ("cuda.Stream.legacy", lambda d: cuda.Stream.legacy(device=d), "device"),
    ("cuda.Stream.per_thread", lambda d: cuda.Stream.per_thread(device=d), "device"),
    ("ops.add", lambda d: ap.ops.add(host(), 1.0, device=d), "device"),
    ("ops.negative", lambda d: ap.ops.negative(np.arange(3.0), device=d), "device"),
    ("ops.astype", lambda d: ap.ops.astype(host(), "float32", device=d), "device"),
    ("ops.where", lambda d: ap.ops.where(host(), host(), 2.0, device=d), "device"),
    ("ops.sum", lambda d: ap.ops.sum(host(), device=d), "device"),
    ("ops.dot", lambda d: ap.ops.dot(host(), host(), device=d), "device"),
]


def device_of(index: int) -> Any:
    """A Device of `index`: a real one where it exists, else one the test hook makes."""
    if index < cuda.device_count():
        return cuda.Device(index)
    return _core.cuda._unchecked_device(index)


def summary(result: Any) -> Any:
    """What a call returned, in terms both calls must share (not identities or new handles)."""
    if isinstance(result, ap.Array):
        return ("Array", result.memory, result.device, result.shape, str(result.dtype))
    if isinstance(result, cuda.Stream):
        return ("Stream", result.device, result.owned, result.handle if not result.owned else None)
    if isinstance(result, cuda.Device):
        return ("Device", result.index)
    if isinstance(result, np.ndarray):  # ops with device= return NumPy for host operands
        return ("ndarray", result.shape, str(result.dtype), result.tolist())
    return result


def outcome(call: Callable[[Any], Any], device: Any, index: int) -> tuple[str, Any]:
    previous = cuda.current_device() if HAS_GPU else None
    try:
        return ("returned", summary(call(device)))
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        # The same words, whichever spelling of the device was passed.
        return (type(e).__name__, str(e).replace(repr(device), repr(index)))
    finally:
        if previous is not None:
            cuda.set_device(previous)


@pytest.mark.parametrize(("name", "call", "param"), CALLS, ids=[c[0] for c in CALLS])
@pytest.mark.parametrize("index", [0, 1, 9])
def test_a_device_object_does_what_its_index_does(name: str, call: Callable[[Any], Any],
                                                  param: str, index: int) -> None:
    by_int = outcome(call, index, index)
    by_device = outcome(call, device_of(index), index)
    assert by_device == by_int, name


@pytest.mark.parametrize(("name", "call", "param"), CALLS, ids=[c[0] for c in CALLS])
def test_a_wrong_device_type_names_the_argument(name: str, call: Callable[[Any], Any],
                                                param: str) -> None:
    with pytest.raises(TypeError) as info:
        call(1.5)
    message = str(info.value)
    assert f"{param}: expected" in message, message
    assert "arrayport.cuda.Device" in message and message.endswith(("float", "1.5")), message


@pytest.mark.parametrize(("name", "call", "param"), CALLS, ids=[c[0] for c in CALLS])
def test_a_negative_device_index_is_refused_naming_the_argument(
        name: str, call: Callable[[Any], Any], param: str) -> None:
    if name in ("Array.prefetch", "Array.advise"):
        pytest.skip("-1 names the host there")
    with pytest.raises(ValueError, match=rf"{param}(: expected a device index >= 0|=-5)"):
        call(-5)


@pytest.mark.skipif(HAS_GPU, reason="without a GPU no real Device exists")
def test_without_a_gpu_the_device_object_of_host_memory_is_ignored_as_its_index() -> None:
    d = device_of(0)
    assert ap.empty(3, memory="host", device=d).memory == "host"
    assert ap.zeros_like(host(), device=d).memory == "host"
    assert ap.asarray(np.arange(3.0), memory="host", device=d).memory == "host"


def test_the_test_hook_checks_its_index() -> None:
    assert _core.cuda._unchecked_device(3).index == 3
    with pytest.raises(ValueError, match=r"^_unchecked_device: i: expected a device index >= 0"):
        _core.cuda._unchecked_device(-1)
    with pytest.raises(TypeError, match=r"^_unchecked_device: i: "):
        _core.cuda._unchecked_device("x")
