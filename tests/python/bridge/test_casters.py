"""The nanobind and pybind11 casters' typed view parameters (tests/casters): an exact Array or
NumPy array that meets the view's constraints is read straight from its struct (the fast path);
everything else goes through acquire(). Both must see the same pointer, shape and strides as the
untyped strided_view parameter (always the general path), and refuse with the same messages."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

import arrayport as ap
from arrayport import _core
from conftest import (REPO, cmake_build, example_requirements, needs_cupy, needs_gpu, needs_jax,
                      needs_torch)
from dlpack_ctypes import exchange_type, fake_jax_address, fake_jax_type, published_exchange_types

TYPED = {  # name: (dtype, rank, writable, space)
    "f32_1d": ("float32", 1, True, "any"),
    "cf32_1d": ("float32", 1, False, "any"),
    "f32_2d": ("float32", 2, True, "any"),
    "cf64_3d": ("float64", 3, False, "any"),
    "i64_0d": ("int64", 0, True, "any"),
    "cbool_1d": ("bool", 1, False, "any"),
    "host_f32_1d": ("float32", 1, True, "host"),
    "device_cf32_1d": ("float32", 1, False, "device"),
}


@pytest.fixture(scope="module", params=["nanobind", "pybind11"])
def mod(request, tmp_path_factory):
    binder = request.param
    extra = example_requirements(binder)
    if binder == "nanobind":
        extra += example_requirements("pybind11")
    else:
        extra += example_requirements("nanobind")
    build = tmp_path_factory.mktemp("casters") / "build"
    cmake_build(REPO / "tests" / "casters", build, f"-DPython_EXECUTABLE={sys.executable}", *extra)
    sys.path.insert(0, str(build))
    try:
        return importlib.import_module("casters_nb" if binder == "nanobind" else "casters_pb")
    finally:
        sys.path.remove(str(build))


class Sub(np.ndarray):
    pass


def inputs():
    base = np.arange(24, dtype=np.float32)
    m = base.reshape(4, 6)
    ro = np.arange(5, dtype=np.float32)
    ro.setflags(write=False)
    out = {
        "f32": base, "f32 step": base[::3], "f32 reversed": base[::-1], "f32 2d": m,
        "f32 2d F": np.asfortranarray(m), "f32 2d T": m.T, "f32 2d sliced": m[::-2, 1::2],
        "f32 read-only": ro, "f32 big-endian": base.astype(">f4"), "f32 subclass": base.view(Sub),
        "f32 empty": np.empty(0, np.float32), "f32 2d empty": np.empty((3, 0), np.float32),
        "f32 odd stride": np.lib.stride_tricks.as_strided(base, (3,), (6,)),
        "f32 huge span": np.lib.stride_tricks.as_strided(base, (3,), (2**62,)),
        "f32 stride 0": np.lib.stride_tricks.as_strided(base, (5,), (0,)),
        "f64": np.arange(6, dtype=np.float64), "f64 3d": np.zeros((2, 3, 4)),
        "f64 3d sliced": np.zeros((4, 6, 8))[::2, ::-3, 1::2],
        "i64 0d": np.array(7, dtype=np.int64), "longlong 0d": np.array(7, dtype=np.longlong),
        "i32 0d": np.array(7, dtype=np.int32), "bool": np.array([True, False, True]),
        "memoryview": memoryview(np.arange(4, dtype=np.float32)),
        "Array": ap.asarray(np.arange(12, dtype=np.float32)),
        "Array 2d": ap.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))[:, ::-2],
        "Array read-only": ap.view(ro),
        "Array f64 3d": ap.zeros((2, 2, 2), "float64"),
        "Array i64 0d": ap.asarray(np.array(3, dtype=np.int64)),
        # layouts at the int64 limits (layout.hpp): NumPy broadcasts up to 2^62 bytes, and the
        # exchange API (the typed path's borrowed tensor) at a fake address, which nothing reads
        "f32 broadcast 2^61 - 1": np.broadcast_to(np.float32(1), (2**61 - 1,)),
        "f32 2d broadcast 2^31 x 2^29": np.broadcast_to(np.float32(1), (2**31, 2**29)),
    }
    exchange = exchange_type()
    for label, shape, strides in [("2^61 - 1 stride 0", (2**61 - 1,), (0,)),
                                  ("2^61 stride 0 (2^63 bytes)", (2**61,), (0,)),
                                  ("2^31 x 2^31 stride 0", (2**31, 2**31), (0, 0)),
                                  ("stride of 2^64 bytes", (3,), (2**62,)),
                                  ("2^62 + 1 x 4", (2**62 + 1, 4), None),
                                  ("empty 0 x 2^62 - 1", (0, 2**62 - 1), None)]:
        out[f"f32 exchange {label}"] = exchange(shape=shape, strides=strides, dtype=(2, 32, 1),
                                                data=2**40)
    return out


INPUTS = inputs()


def run(fn, x):
    try:
        return "ok", fn(x)
    except Exception as e:  # noqa: BLE001: the type and message are what is compared
        return type(e).__name__, str(e)


def compare_with_general_path(mod, name, x, label):
    dtype, rank, writable, space = TYPED[name]
    kind, got = run(getattr(mod, name), x)
    skind, general = run(mod.strided, x)
    if kind == "ok":
        assert skind == "ok"
        assert got == general, label  # same pointer, shape and strides (in elements)
        return
    # Refused: only for a reason the constraints give, said as acquire() says it.
    assert got.startswith("array: "), got
    if skind != "ok":
        assert got == general  # the producer itself is refused (geometry, format)
        return
    ptr, shape, strides = general
    v = ap.view(x)
    violations = []  # (exception, message) for each constraint the array breaks
    if v.dtype != dtype:
        violations.append(("TypeError", f"expected dtype {dtype}, got"))
    if len(shape) != rank:
        violations.append(("TypeError", f"expected a {rank}-dimensional array, got"))
    if space == "device" and v.memory == "host":
        violations.append(("ValueError", "expected memory reachable from the device, got host memory"))
    if space == "host" and v.memory == "device":
        violations.append(("ValueError", "expected memory reachable from the host, got device memory"))
    if writable and v.readonly:
        violations.append(("BufferError", "expected a writable array, got a read-only one"))
    assert violations, f"{name}({label}) refused: {kind}: {got}"
    assert any(kind == k and m in got for k, m in violations), (label, kind, got, violations)


@pytest.mark.parametrize("name", sorted(TYPED))
@pytest.mark.parametrize("label", sorted(INPUTS))
def test_typed_parameter_sees_what_the_general_path_sees(mod, name, label):
    compare_with_general_path(mod, name, INPUTS[label], label)


def _exchange_cases():
    """Producer arguments for exchange-API types: every check the inline reader makes."""
    cases = {"f64": {}, "f64 2d": dict(values=range(6), shape=(2, 3)),
             "f64 2d strided": dict(values=range(6), shape=(2, 2), strides=(3, 1)),
             "f64 reversed": dict(values=range(4), strides=(-1,), byte_offset=24),
             "f64 stride 0": dict(strides=(0,)), "f64 empty": dict(values=(), shape=(0,)),
             "f64 empty NULL": dict(values=(), shape=(0,), data=0), "f64 NULL": dict(data=0),
             "f64 0d": dict(values=(7.0,), shape=(), ndim=0),
             "f64 2d empty NULL shape": dict(values=(), shape=(2, 0), data=0),
             "f32": dict(dtype=(2, 32, 1)), "f32 2d": dict(values=range(6), shape=(3, 2), dtype=(2, 32, 1)),
             "f64 3d": dict(values=range(8), shape=(2, 2, 2)),
             "i64 0d": dict(values=(7,), shape=(), ndim=0, dtype=(0, 64, 1)),
             "bool": dict(dtype=(6, 8, 1)), "f32 lanes 2": dict(dtype=(2, 32, 2)),
             "rank lies": dict(ndim=2), "f64 offset past the top": dict(byte_offset=2**64 - 8),
             "f64 stride past int64": dict(values=range(2), strides=(2**62,)),
             "f64 huge 2^62 + 1 x 4": dict(shape=(2**62 + 1, 4), data=2**40),
             "f64 wraps the address space": dict(strides=(-1,), data=8),
             "refused": dict(fail_tensor=True), "unknown device": dict(device=(10, 0)),
             "device": dict(device=(2, 0), data=2**40), "device -1": dict(device=(2, -1), data=2**40),
             "managed": dict(device=(13, 0), data=2**40), "pinned": dict(device=(3, 0), data=2**40),
             "readonly": dict(readonly=True)}
    for c in cases.values():
        c.setdefault("values", (1.0, 2.0, 3.0, 4.0))
    return cases


EXCHANGE_CASES = _exchange_cases()


def relative(fn, x):
    """run(fn, x) with the view's address taken from its producer's data (each owns its own)."""
    kind, got = run(fn, x)
    return (kind, (got[0] - x.p.data, *got[1:])) if kind == "ok" else (kind, got)


@pytest.mark.parametrize("name", sorted(TYPED))
@pytest.mark.parametrize("stream", [None, "another", "fails"])
def test_exchange_arguments_read_inline_agree_with_the_engine(mod, name, stream):
    # A type whose table _core has published (C API 1.5) is read in the extension (exchange.hpp),
    # an unpublished one by the engine: each case must come out alike both ways, refusals too.
    # Another stream than the current one: with a GPU a real one, which the engine orders.
    other = ap.cuda.Stream() if stream == "another" and ap.cuda.is_available() else None
    handle = other.handle if other is not None else 0x1000 if stream == "another" else None
    t = exchange_type(stream=handle, fail_stream=stream == "fails")
    fn = getattr(mod, name)
    for label, case in EXCHANGE_CASES.items():
        x = t(**case)
        for _ in range(2):  # published by a borrow (the first call may be the C API's import)
            mod.cf64_3d(t(values=range(8), shape=(2, 2, 2)))
        assert any(p is t for p, _ in published_exchange_types()), label
        inline = relative(fn, x)
        _core._unpublish_exchange_types()
        assert relative(fn, x) == inline, label
        if stream is None and case.get("device", (1, 0))[0] == 1 and inline[0] == "ok":
            compare_with_general_path(mod, name, x, label)


def cupy_inputs():
    import cupy  # callers are marked needs_cupy

    base = cupy.arange(24, dtype=cupy.float32)
    m = base.reshape(4, 6)
    managed = cupy.ndarray((6,), cupy.float32, cupy.cuda.malloc_managed(24))
    managed[...] = 1.5
    return {
        "f32": base, "f32 reversed": base[::-1], "f32 step": base[1::5], "f32 2d": m,
        "f32 2d T": m.T, "f32 2d sliced": m[::-2, 1::2], "f32 empty": base[:0],
        "f32 managed": managed, "f64": cupy.zeros(5), "f64 3d sliced": cupy.zeros((4, 6, 8))[::2, ::-3, 1::2],
        "i64 0d": cupy.array(7, dtype=cupy.int64), "i32 0d": cupy.array(7, dtype=cupy.int32),
        "bool": cupy.array([True, False, True]), "f16": cupy.zeros(4, dtype=cupy.float16),
    }


@needs_gpu
@needs_cupy
@pytest.mark.parametrize("name", sorted(TYPED))
def test_typed_parameter_on_cupy_sees_what_the_general_path_sees(mod, name):
    # The exact cupy.ndarray is read from its struct once the bridge has checked the layout (the
    # first general-path call below does); the rest must agree with the general path.
    for label, x in cupy_inputs().items():
        compare_with_general_path(mod, name, x, label)
        compare_with_general_path(mod, name, x, label)  # the layout is checked by now


def torch_inputs():
    import torch  # callers are marked needs_torch

    base = torch.arange(24, dtype=torch.float32, device="cuda")
    m = base.reshape(4, 6)
    cpu = torch.arange(6, dtype=torch.float32)
    return {
        "f32": base, "f32 step": base[1::5], "f32 2d": m, "f32 2d T": m.T,
        "f32 2d sliced": m[::2, 1::2], "f32 empty": base[:0], "f64": torch.zeros(5, device="cuda", dtype=torch.float64),
        "i64 0d": torch.tensor(7, device="cuda"), "bool": torch.tensor([True, False], device="cuda"),
        "f32 cpu": cpu, "f32 cpu step": cpu[::2], "f32 pinned": cpu.pin_memory(),
        "f32 stride 0": base[:1].expand(5),
    }


@needs_gpu
@needs_torch
@pytest.mark.parametrize("name", sorted(TYPED))
def test_typed_parameter_on_torch_sees_what_the_general_path_sees(mod, name):
    # PyTorch's tensors come through its DLPack C exchange API, on the fast path too.
    for label, x in torch_inputs().items():
        compare_with_general_path(mod, name, x, label)


def jax_inputs():
    import jax  # callers are marked needs_jax
    import jax.numpy as jnp

    if jax.default_backend() != "gpu":
        pytest.skip("JAX has no GPU backend here")
    base = jnp.arange(24, dtype=jnp.float32)
    out = {
        "f32": base, "f32 2d": base.reshape(4, 6), "f32 empty": base[:0],
        "i32 0d": jnp.array(7, dtype=jnp.int32), "bool": jnp.array([True, False, True]),
        "f16": jnp.zeros(4, dtype=jnp.float16), "bf16": jnp.zeros(4, dtype=jnp.bfloat16),
    }
    for x in out.values():
        x.block_until_ready()
    return out


@needs_gpu
@needs_jax
@pytest.mark.parametrize("name", sorted(TYPED))
def test_typed_parameter_on_jax_sees_what_the_general_path_sees(mod, name):
    # Ready JAX arrays reach const parameters through JAX's interface, the rest (and the untyped
    # strided_view the comparison uses) through __dlpack__: the same memory either way.
    for label, x in jax_inputs().items():
        compare_with_general_path(mod, name, x, label)
        if TYPED[name][2] is False and label == "f32":
            assert mod.cf32_1d(x)[0] == x.unsafe_buffer_pointer()


@needs_gpu
@needs_cupy
def test_cupy_through_the_fast_path_takes_and_leaks_no_reference(mod):
    import cupy
    x = cupy.arange(8, dtype=cupy.float32)
    mod.f32_1d(x)
    before = sys.getrefcount(x)
    for _ in range(1000):
        assert mod.f32_1d(x)[0] == x.data.ptr
        mod.cf32_1d(x[::2])
    assert sys.getrefcount(x) == before


def test_the_fast_path_takes_and_leaks_no_reference(mod):
    for x in (INPUTS["f32"], INPUTS["Array"]):
        before = sys.getrefcount(x)
        for _ in range(1000):
            mod.f32_1d(x)
            mod.cf32_1d(x)
        assert sys.getrefcount(x) == before


def test_overloads_on_dtype_resolve_through_the_fast_path(mod):
    assert mod.kind(np.zeros(3, np.float32)) == "float32"
    assert mod.kind(np.zeros(3, np.float64)) == "float64"
    assert mod.kind(ap.zeros((3,), "float64")) == "float64"
    assert mod.kind(ap.zeros((3,), "float32")) == "float32"


def test_writes_through_the_fast_path_are_seen(mod):
    x = np.zeros(6, np.float32)
    ptr, shape, strides = mod.f32_1d(x[::2])
    assert ptr == x.ctypes.data and shape == [3] and strides == [2]
    a = ap.zeros((6,), "float32")
    assert mod.f32_1d(a)[0] == a.ptr


def test_ready_jax_arrays_reach_const_parameters_through_their_interface(mod):
    # A const view only reads: a ready JAX array's read-only interface serves (fake_jax_address's
    # memory here); a writable view or an untyped strided_view (which may be taken writable) gets
    # __dlpack__.
    ArrayImpl = fake_jax_type()
    address, device = fake_jax_address()  # memory CUDA knows, where it is asked
    x = ArrayImpl(address=address)
    refs = sys.getrefcount(x)
    for _ in range(3):  # the first call meets the type; later ones take the typed fast path
        asked = x.asked
        assert tuple(mod.cf32_1d(x)) == (address, [4], [1])
        assert tuple(mod.device_cf32_1d(x)) == (address, [4], [1])
        assert x.asked - asked <= 2  # is_ready() once a call: the fast path did not fall back
    assert x.asked - asked == 2
    assert sys.getrefcount(x) == refs
    assert x.p.exported == 0
    if device is not None:  # pageable host memory (JAX's unpinned_host kind): DLPack instead
        host = ArrayImpl(address=INPUTS["f32"].ctypes.data)
        assert mod.cf32_1d(host)[0] == host.p.data
    assert mod.f32_1d(x)[0] == x.p.data
    assert mod.strided(x)[0] == x.p.data
    pending = ArrayImpl(ready=False, address=address)
    assert mod.cf32_1d(pending)[0] == pending.p.data  # pending: DLPack orders it

