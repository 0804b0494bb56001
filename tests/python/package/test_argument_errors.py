"""Every public callable, every parameter, every kind of wrong value: a TypeError, ValueError or
OverflowError (BufferError where DLPack prescribes it) whose message names the parameter; never a
SystemError, a RuntimeError from a C++ bad_cast, nanobind's "incompatible function arguments" or a
crash. arrayport.ops' own parameters are tested in ops/test_ops_errors.py."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest
from conftest import HAS_GPU, needs_gpu

import arrayport as ap
from arrayport import cuda


class BadIndex:
    """An int-like whose __index__ raises."""

    def __index__(self) -> int:
        raise ValueError("this __index__ refuses")

    def __repr__(self) -> str:
        return "BadIndex()"


OBJ = object()

# The wrong values of each kind of argument (None only where the argument does not take it).
_INTS = ["x", 2**64, 2**70, -5, 1.5, True, BadIndex(), OBJ]
BAD: dict[str, list[Any]] = {
    "shape": ["x", b"ab", 1.5, -5, 2**70, True, [BadIndex()], [1, "x"], [2, -1], [True], OBJ, None],
    "dtype": ["x", "float128", 2**64, 1.5, -5, OBJ, BadIndex()],
    "numpy_dtype": ["x", 5, 1.5, OBJ],
    "memory": ["x", "gpu", 5, 1.5, OBJ],
    "device": _INTS,
    "device_required": [*_INTS, None],
    "asarray_device": [*_INTS, ("tpu", 0), [0]],
    "location": _INTS,
    "stream": _INTS,
    "dlpack_stream": ["x", 2**64, -5, 1.5, True, BadIndex(), OBJ],
    "handle": [*_INTS, None],
    "stream_object": ["x", 2**64, -5, 1.5, True, BadIndex(), OBJ],
    "bool": ["x", 2, 1.5, None, OBJ],
    "tristate": ["x", 1, 1.5, OBJ],
    "int32": ["x", 2**64, 2**70, 1.5, True, BadIndex(), None],
    "axes": ["x", 1.5, 2**70, True, BadIndex(), OBJ],
    "extent": ["x", 1.5, 2**70, -5, True, BadIndex(), OBJ],
    "number": ["x", None, OBJ, 1j],
    "array": ["x", 1.5, None, OBJ],
    "asarray_obj": ["x", None, OBJ],
    "protocol": [3, 1.5, "x", OBJ],
    "advice": [3, "x", None, OBJ],
    "dl_device": ["cpu", (1,), ("x", 0), (2**70, 0), (1, -5), 1.5, OBJ],
    "max_version": ["x", (1,), ("a", 0), 5, OBJ],
    "event": ["x", 1.5, 5, OBJ],
    "event_required": ["x", 1.5, 5, OBJ, None],
    "out": ["x", 1.5, OBJ],
}


@dataclass
class Row:
    name: str  # as the public API spells it
    call: Callable[..., Any]
    params: dict[str, str]  # parameter -> kind of BAD
    base: dict[str, Any] = field(default_factory=dict)  # valid values of the other parameters
    gpu: bool = False  # needs a device to get as far as the arguments
    buffer_error: bool = False  # DLPack's own errors are BufferErrors


def host() -> ap.Array:
    return ap.zeros((2, 3), memory="host")


CREATE = {"shape": "shape", "dtype": "dtype", "memory": "memory", "device": "device", "stream": "stream"}
LIKE = {"a": "array", "dtype": "dtype", "memory": "memory", "device": "device", "stream": "stream"}


def rows(array: Callable[[], ap.Array] = host, gpu: bool = False) -> list[Row]:
    """The Array methods' rows, on the arrays `array` makes."""
    return [
        Row("Array.get", lambda **k: array().get(**k), {"stream": "stream"}, gpu=gpu),
        Row("Array.fill", lambda value: array().fill(value), {"value": "number"}, gpu=gpu),
        Row("Array.copy", lambda **k: array().copy(**k),
            {"dtype": "dtype", "memory": "memory", "device": "device", "stream": "stream"}, gpu=gpu),
        Row("Array.copy_to", lambda **k: array().copy_to(**k), {"dst": "array", "stream": "stream"},
            {"dst": ap.zeros((2, 3), memory="host")}, gpu=gpu),
        Row("Array.to", lambda **k: array().to(**k),
            {"memory": "memory", "device": "device", "stream": "stream", "dtype": "dtype",
             "copy": "bool"}, gpu=gpu),
        Row("Array.prefetch", lambda **k: array().prefetch(**k),
            {"device": "location", "stream": "stream"}, gpu=gpu),
        Row("Array.advise", lambda **k: array().advise(**k),
            {"advice": "advice", "device": "location"}, {"advice": "set_read_mostly"}, gpu=gpu),
        Row("Array.view", lambda **k: array().view(**k), {"dtype": "dtype"}, gpu=gpu),
        Row("Array.to_device", lambda device, **k: array().to_device(device, **k),
            {"device": "asarray_device", "stream": "stream"}, {"device": ("cpu", 0)}, gpu=gpu),
        Row("Array.transpose", lambda axes: array().transpose(axes, 0), {"axes": "axes"}, gpu=gpu),
        Row("Array.reshape", lambda shape: array().reshape(shape), {"shape": "extent"}, gpu=gpu),
        Row("Array.__dlpack__", lambda **k: array().__dlpack__(**k),
            {"stream": "dlpack_stream", "max_version": "max_version", "dl_device": "dl_device",
             "copy": "tristate"}, gpu=gpu, buffer_error=True),
        Row("Array.__array__", lambda **k: array().__array__(**k),
            {"dtype": "numpy_dtype", "copy": "tristate"}, gpu=gpu),
        # The methods over arrayport.ops (arrayport/_operators.py).
        Row("Array.astype", lambda **k: array().astype(**k), {"dtype": "dtype"}, gpu=gpu),
        *(Row(f"Array.{name}", lambda name=name, **k: getattr(array(), name)(**k),
              {"axis": "axes", "keepdims": "bool", "out": "out"}, gpu=gpu)
          for name in ("sum", "mean", "min", "max", "prod", "any", "all", "argmin", "argmax")),
    ]


ROWS: list[Row] = [
    Row("empty", ap.empty, CREATE, {"shape": 3}),
    Row("zeros", ap.zeros, CREATE, {"shape": 3}),
    Row("ones", ap.ones, CREATE, {"shape": 3}),
    Row("full", ap.full, {**CREATE, "fill_value": "number"}, {"shape": 3, "fill_value": 1.0}),
    Row("empty_like", ap.empty_like, LIKE, {"a": ap.zeros(3, memory="host")}),
    Row("zeros_like", ap.zeros_like, LIKE, {"a": ap.zeros(3, memory="host")}),
    Row("ones_like", ap.ones_like, LIKE, {"a": ap.zeros(3, memory="host")}),
    Row("full_like", ap.full_like, {**LIKE, "fill_value": "number"},
        {"a": ap.zeros(3, memory="host"), "fill_value": 1.0}),
    Row("copy", ap.copy, {"a": "array", "dtype": "dtype", "memory": "memory", "device": "device",
                          "stream": "stream"}, {"a": np.zeros(3)}),
    Row("to_gpu", ap.to_gpu, {"a": "array", "stream": "stream", "device": "device", "dtype": "dtype"},
        {"a": np.zeros(3)}),
    Row("view", ap.view, {"obj": "array", "stream": "stream", "sync": "bool", "protocol": "protocol"},
        {"obj": np.zeros(3)}),
    Row("asarray", ap.asarray,
        {"obj": "asarray_obj", "dtype": "dtype", "memory": "memory", "device": "asarray_device",
         "copy": "tristate", "stream": "stream"}, {"obj": np.zeros(3)}),
    Row("from_dlpack", lambda x, **k: ap.from_dlpack(x, **k), {"x": "array", "device": "asarray_device", "copy": "tristate"},
        {"x": np.zeros(3)}),
    Row("cuda.Device", cuda.Device, {"i": "device"}),
    Row("cuda.set_device", cuda.set_device, {"device": "device_required"}),
    Row("cuda.Stream", cuda.Stream, {"device": "device", "priority": "int32", "non_blocking": "bool"}),
    Row("cuda.Stream.from_handle", cuda.Stream.from_handle, {"handle": "handle", "device": "device"},
        {"handle": 0}),
    Row("cuda.Stream.adopt", cuda.Stream.adopt, {"obj": "stream_object", "device": "device"},
        {"obj": 0}),
    Row("cuda.Stream.legacy", cuda.Stream.legacy, {"device": "device"}),
    Row("cuda.Stream.per_thread", cuda.Stream.per_thread, {"device": "device"}),
    Row("cuda.Stream.wait_event", lambda **k: cuda.Stream.legacy().wait_event(**k),
        {"event": "event_required"}),
    Row("cuda.Stream.record_event", lambda **k: cuda.Stream.legacy().record_event(**k),
        {"event": "event"}),
    Row("cuda.Event", cuda.Event, {"timing": "bool", "blocking": "bool"}),
    Row("cuda.Event.record", lambda **k: cuda.Event().record(**k), {"stream": "stream_object"},
        gpu=True),
    Row("cuda.Event.elapsed_time", lambda **k: cuda.Event().elapsed_time(**k),
        {"end": "event_required"}, gpu=True),
    Row("cuda.Device.can_access_peer", lambda **k: cuda.Device(0).can_access_peer(**k),
        {"peer": "device_required"}, gpu=True),
    Row("cuda.register", cuda.register, {"obj": "array"}, gpu=True),
    *rows(),
    *rows(lambda: ap.zeros((2, 3), memory="device"), gpu=True),
    *rows(lambda: ap.zeros((2, 3), memory="managed"), gpu=True),
]

# Public callables with no parameters, or whose parameters other tests own.
NO_PARAMETERS = {
    "build_info", "cmake_dir", "include_dir", "devices", "release_cached_memory", "runtime_info",
    "cuda.current_device", "cuda.current_stream", "cuda.device_count", "cuda.driver_version",
    "cuda.is_available", "cuda.runtime_version", "cuda.synchronize",
    "Array.__dlpack_device__", "Array.__complex__",  # number conversions: array/test_conversions.py
    "Array.tolist", "Array.item",  # array/test_operators.py
    "cuda.Stream.synchronize", "cuda.Stream.query", "cuda.Event.synchronize", "cuda.Event.query",
    "cuda.Device.mem_info", "cuda.Device.synchronize",
}
ELSEWHERE = {
    "ops": "arrayport.ops' own parameters: ops/test_ops_errors.py",
    "Array": "its methods are rows here",
    "cuda": "its functions are rows here",
    "ctypeslib": "a module: ndpointer's arguments are bridge/test_ctypeslib.py's",
    "ArrayLike": "a type, not a function",
    "CudaError": "an exception", "NoDeviceError": "an exception", "OutOfMemoryError": "an exception",
    "__version__": "a string",
}


def _public_methods(cls: type, prefix: str) -> set[str]:
    names = {n for n in vars(cls) if not n.startswith("_") and callable(getattr(cls, n))}
    return {f"{prefix}.{n}" for n in names} | {
        f"{prefix}.{n}" for n in ("__dlpack__", "__dlpack_device__", "__array__", "__complex__")
        if n in vars(cls)}


def test_every_public_callable_is_in_the_table():
    public = {n for n in ap.__all__ if n not in ELSEWHERE}
    public |= {f"cuda.{n}" for n in cuda.__all__ if n not in ("Device", "Event", "Stream")}
    public |= {"cuda.Device", "cuda.Event", "cuda.Stream"}
    public |= _public_methods(ap.Array, "Array")
    for cls in (cuda.Stream, cuda.Event, cuda.Device):
        public |= _public_methods(cls, f"cuda.{cls.__name__}")
    covered = {row.name for row in ROWS} | NO_PARAMETERS
    assert sorted(public - covered) == []


def _cases():
    for row in ROWS:
        for param, kind in row.params.items():
            for i, bad in enumerate(BAD[kind]):
                marks = [needs_gpu] if row.gpu else []
                yield pytest.param(row, param, bad, id=f"{row.name}-{param}-{i}-{bad!r}"[:90],
                                   marks=marks)


def names_the_parameter(message: str, param: str) -> bool:
    """`param` as a message names an argument: 'param:', 'param[0]:', 'param.attr', 'param=' or
    arrayport.ops' "argument 'param'"."""
    return (re.search(rf"(^|[\s:(]){re.escape(param)}(\[\d+\])?(:|=|\.\w)", message) is not None
            or f"argument '{param}'" in message)


@pytest.mark.parametrize("row, param, bad", list(_cases()))
def test_a_wrong_argument_raises_an_error_naming_it(row: Row, param: str, bad: Any):
    allowed: tuple[type[BaseException], ...] = (TypeError, ValueError, OverflowError)
    if row.buffer_error:
        allowed += (BufferError,)
    with pytest.raises(allowed) as info:
        row.call(**{**row.base, param: bad})
    message = str(info.value)
    assert "incompatible function arguments" not in message
    assert names_the_parameter(message, param), f"{row.name}({param}={bad!r}): {message!r}"


def test_an_index_that_raises_is_reported_with_its_own_message():
    with pytest.raises(TypeError, match=r"^zeros: device: expected a device index, got BadIndex, "
                                        r"whose __index__ raised ValueError: this __index__ refuses"):
        ap.zeros(3, device=BadIndex())
    with pytest.raises(TypeError, match=r"^empty: shape: expected ints at dimension 1, got "
                                        r"BadIndex, whose __index__ raised"):
        ap.empty((2, BadIndex()))


@pytest.mark.parametrize("call, message", [
    (lambda: ap.zeros(3).reshape("a"), "reshape: shape: expected ints that fit int64, got str"),
    (lambda: ap.zeros((2, 2)).transpose("x", 0), "transpose: axes: expected ints that fit an int, got str"),
    (lambda: ap.empty(3, stream=-5), "empty: stream: a stream handle must be non-negative"),
    (lambda: ap.view(np.zeros(3), protocol=3), "protocol: expected None, 'array', 'exchange', 'buffer', "
                                                "'dlpack', 'cai' or 'cupy', got int"),
    (lambda: cuda.Stream(priority=2**40), "Stream: priority: expected an int that fits 32 bits, got "
                                          "1099511627776"),
    (lambda: cuda.Event(timing="x"), "Event: timing: expected True or False, got 'x'"),
    (lambda: ap.zeros(3).__dlpack__(stream=2**64), "__dlpack__: stream: a stream handle must fit in 64 bits"),
    (lambda: ap.zeros(3).__dlpack__(dl_device="cpu"), "__dlpack__: dl_device: expected None or a "
                                                      "(device_type, device_id) tuple of ints, got str"),
    (lambda: ap.zeros(3, device=-7), "zeros: device: expected a device index >= 0, got -7"),
])
def test_the_calls_of_issue_19_raise_precise_errors(call, message):
    with pytest.raises((TypeError, ValueError)) as info:
        call()
    assert str(info.value).startswith(message)


@pytest.mark.skipif(HAS_GPU, reason="without a GPU, indices are not checked against a count")
@pytest.mark.parametrize("make", [ap.empty, ap.zeros])
def test_without_a_gpu_a_device_index_of_host_memory_is_ignored(make):
    assert make(3, memory="host", device=0).memory == "host"
    assert make(3, memory="managed", device=3).memory == "host"  # managed falls back to host


@needs_gpu
def test_device_takes_a_device_object_wherever_it_takes_an_int():
    d = cuda.Device(0)
    for a in (ap.empty(3, device=d), ap.zeros(3, memory="device", device=d),
              ap.zeros(3, memory="host").to(memory="device", device=d),
              ap.zeros(3, memory="host").copy(memory="device", device=d),
              ap.asarray(np.zeros(3), memory="device", device=d),
              ap.zeros_like(ap.zeros(3, memory="host"), memory="device", device=d)):
        assert a.memory in ("device", "managed") and a.device[1] == 0
    cuda.set_device(d)
    assert cuda.Stream(device=d).device == 0
    n = cuda.device_count()
    with pytest.raises(ValueError, match=rf"^empty: device: expected a device index in \[0, {n}\)"):
        ap.empty(3, device=n)
