"""arrayport.ops on a GPU (device and managed memory, against NumPy), and device=N: the op on GPU N
wherever its operands live (NumPy in, NumPy out)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import arrayport as ap
from arrayport import ops
from conftest import HAS_GPU, needs_gpu
from ops_reference import (BINARY, RED_RTOL, binary_operands, check, reduce_ref, rng_array,
                           to_numpy)


# ---- GPU (device and managed memory): run on the GPU machine --------------------------------------

GPU_MEMORY = ["device", "managed"]


def to_gpu(x, memory):
    """NumPy data in `memory`: through managed memory, which the CPU path can write."""
    managed = ap.empty(x.shape, dtype=str(x.dtype), memory="managed")
    ops.copy(x, out=managed)
    if memory == "managed":
        return managed
    dev = ap.empty(x.shape, dtype=str(x.dtype), memory="device")
    ops.copy(managed, out=dev)
    return dev


@needs_gpu
@pytest.mark.parametrize("memory", GPU_MEMORY)
@pytest.mark.parametrize("dtype", ["int32", "float16", "float32", "float64", "complex64"])
@pytest.mark.parametrize("layout", ["contiguous", "broadcast", "strided", "scalar", "transposed"])
def test_gpu_binary(memory, dtype, layout):
    a, b = binary_operands(layout, dtype)
    ga = to_gpu(np.ascontiguousarray(a), memory)
    if layout in ("strided", "transposed"):
        ga = to_gpu(np.ascontiguousarray(a), memory)  # strided inputs come from GPU views below
    for name, ref in BINARY.items():
        other = 2 if layout == "scalar" else to_gpu(np.ascontiguousarray(b), memory)
        want_b = 2 if layout == "scalar" else b
        got = getattr(ops, name)(ga, other)
        assert got.memory == memory
        with np.errstate(all="ignore"):
            want = ref(np.ascontiguousarray(a), want_b)
        check(got, want, str(want.dtype))
    big = rng_array((1 << 20) + 3, dtype, 5)
    gbig = to_gpu(big, memory)
    check(ops.add(gbig[1:], gbig[:-1]), big[1:] + big[:-1], dtype)  # unaligned: no vector path
    check(ops.add(gbig, gbig), big + big, dtype)
    check(ops.multiply(gbig[::3], 3), big[::3] * 3, dtype)


@needs_gpu
@pytest.mark.parametrize("memory", GPU_MEMORY)
def test_gpu_out_where_astype_axpy_dot(memory):
    x = rng_array((300, 7), "float32", 1)
    y = rng_array((7,), "float32", 2)
    gx, gy = to_gpu(x, memory), to_gpu(y, memory)
    out = to_gpu(np.zeros((300, 7), np.float32), memory)
    assert ops.add(gx, gy, out=out) is out
    check(out, x + y, "float32")
    check(ops.where(to_gpu(x > 0, memory), gx, gy), np.where(x > 0, x, y), "float32")
    check(ops.astype(gx, "float64"), x.astype(np.float64), "float64")
    check(ops.astype(ops.astype(gx, "bfloat16"), "float32"), to_numpy(ops.astype(ops.astype(x, "bfloat16"), "float32")), "float32")
    check(ops.axpy(2.0, gx, gy), 2 * x + y, "float32")
    check(ops.divide(gx, to_gpu(np.zeros((300, 7), np.float32), memory), zero_value=5), np.full((300, 7), 5, np.float32), "float32")
    v = rng_array((100_001,), "float64", 3)
    check(ops.dot(to_gpu(v, memory), to_gpu(v, memory)), np.dot(v, v), "float64", RED_RTOL)
    for axis in (0, 1, (0, 1)):
        check(ops.dot(gx, gy, axis=axis), (x * y).sum(axis=axis), "float32", RED_RTOL)
    check(ops.dot(gx.T, gx.T, axis=0), (x * x).sum(axis=1), "float32", RED_RTOL)


@needs_gpu
@pytest.mark.parametrize("memory", GPU_MEMORY)
def test_gpu_reductions_into_out_and_overlapping_out(memory):
    x = rng_array((40, 30), "float64", 7)
    gx = to_gpu(x, memory)
    out = to_gpu(np.zeros(40), memory)
    assert ops.sum(gx, axis=1, out=out) is out
    check(out, x.sum(axis=1), "float64", RED_RTOL)
    wide = to_gpu(np.full(80, -1.0), memory)
    ops.max(gx, axis=1, out=wide[::2])
    check(wide[::2], x.max(axis=1), "float64")
    check(wide[1::2], np.full(40, -1.0), "float64")
    ops.dot(gx, gx, axis=1, out=out)
    check(out, (x * x).sum(axis=1), "float64", RED_RTOL)
    v = to_gpu(np.arange(10, dtype=np.float64), memory)
    ops.add(v[:-1], 1.0, out=v[1:])
    want = np.arange(10, dtype=np.float64)
    np.add(want[:-1], 1.0, out=want[1:])
    check(v, want, "float64")


@needs_gpu
@pytest.mark.parametrize("memory", GPU_MEMORY)
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "float16", "float32", "float64", "complex128"])
@pytest.mark.parametrize("name", ["sum", "mean", "min", "max"])
def test_gpu_reductions(memory, dtype, name):
    if dtype.startswith("complex") and name in ("min", "max"):
        return
    x = rng_array((6, 50, 40), dtype, 2)
    gx = to_gpu(x, memory)
    for axis in [None, 0, 1, -1, (0, 2)]:
        got = getattr(ops, name)(gx, axis=axis)
        want = reduce_ref(name, x, axis=axis)
        assert got.memory == memory
        check(got, want, dtype if dtype == "float16" else str(np.asarray(want).dtype), RED_RTOL)
    big = rng_array((3_000_001,), dtype, 3)
    want = reduce_ref(name, big)
    kind = dtype if dtype == "float16" else str(np.asarray(want).dtype)
    check(getattr(ops, name)(to_gpu(big, memory)), want, kind, {**RED_RTOL, "float16": 5e-2})


NEW_BINARY = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
              "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
              "bitwise_xor"]
NEW_UNARY = ["logical_not", "bitwise_invert", "isnan", "isinf", "isfinite", "exp", "log", "sin",
             "cos", "tanh"]


@needs_gpu
@pytest.mark.parametrize("memory", GPU_MEMORY)
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "float16", "float32",
                                   "float64"])
def test_gpu_comparison_logical_bitwise_and_math_ops(memory, dtype):
    # Each op on GPU memory against NumPy: the same dtype, exact values (math: within 1e-6 of
    # NumPy's, 1e-3 for float16), the same refusals; NaN and infinities among the floats.
    rng = np.random.default_rng(7)
    x = rng.uniform(-3, 3, 1027).astype(dtype) if dtype != "bool" else rng.random(1027) < 0.5
    y = rng.uniform(-3, 3, 1027).astype(dtype) if dtype != "bool" else rng.random(1027) < 0.5
    if dtype.startswith("float"):
        x[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0]
        y[:6] = [np.nan, 1.0, -np.inf, -0.0, 0.0, np.nan]
    gx, gy = to_gpu(x, memory), to_gpu(y, memory)
    for name in NEW_BINARY + NEW_UNARY:
        args_np, args_gpu = ((x, y), (gx, gy)) if name in NEW_BINARY else ((x,), (gx,))
        try:
            with np.errstate(all="ignore"):
                want = getattr(np, name)(*args_np)
        except TypeError:
            with pytest.raises(TypeError, match="not supported for dtype"):
                getattr(ops, name)(*args_gpu)
            continue
        got = getattr(ops, name)(*args_gpu)
        assert got.memory == memory and str(got.dtype) == str(want.dtype), (name, got.dtype)
        if want.dtype.kind == "f":
            tol = 1e-3 if want.dtype == np.float16 else 1e-6
            np.testing.assert_allclose(to_numpy(got), want, rtol=tol, atol=tol, err_msg=name)
        else:
            np.testing.assert_array_equal(to_numpy(got), want, err_msg=name)
    lo = np.full(1027, 1 if dtype == "uint8" else -1, dtype)
    hi = 2 if dtype != "bool" else True
    np.testing.assert_array_equal(to_numpy(ops.clip(gx, to_gpu(lo, memory), hi)),
                                  np.clip(x, lo, hi))


@needs_gpu
def test_a_gpu_op_into_an_out_whose_elements_coincide_is_refused():
    # On the GPU, several threads would write one element in no defined order: refused, naming
    # out=. (torch's expand is a writable view with stride 0.)
    torch = pytest.importorskip("torch")
    base = torch.full((1,), 7.0, device="cuda")
    with pytest.raises(ValueError, match=r"^add: out: expected an array whose elements are "
                                         r"distinct.*on the GPU, the writes to one element race"):
        ops.add(torch.ones(4, device="cuda"), torch.arange(4.0, device="cuda"), out=base.expand(4))
    assert float(base[0]) == 7.0


@needs_gpu
def test_device_keeps_the_operands_order_of_greater_and_clip():
    # greater runs as less with its operands swapped, clip with one bound as maximum/minimum:
    # device= (staged, or through the pipeline with an out=) still gets them in the caller's order.
    x, y = np.arange(8.0), np.full(8, 3.5)
    np.testing.assert_array_equal(ops.greater(x, y, device=0), x > y)
    out = np.zeros(8, bool)
    assert ops.greater_equal(x, y, out=out, device=0) is out
    np.testing.assert_array_equal(out, x >= y)
    np.testing.assert_array_equal(ops.clip(x, 2.0, device=0), np.clip(x, 2.0, None))
    np.testing.assert_array_equal(ops.clip(x, None, 2.0, device=0), np.clip(x, None, 2.0))
    o = np.zeros(8)
    ops.clip(x, y, None, out=o, device=0)
    np.testing.assert_array_equal(o, np.clip(x, y, None))


@needs_gpu
def test_gpu_mixing_device_and_host_memory_is_an_error():
    dev = to_gpu(np.ones(3, np.float32), "device")
    with pytest.raises(ValueError, match="add: 'x1' is in device memory, which the CPU cannot read, and 'x2' in pageable host memory"):
        ops.add(dev, np.ones(3, np.float32))


@needs_gpu
@pytest.mark.parametrize("memory", ["device", "managed"])
def test_gpu_integer_power_refuses_a_negative_exponent_wherever_it_sits(memory):
    # The exponents' minimum is a reduction on the GPU, waited for before the kernel runs.
    base = np.arange(1, 7, dtype=np.int64).reshape(2, 3)
    for k in range(6):
        e = np.full(6, 2, np.int64)
        e[k] = -1
        e = e.reshape(2, 3)
        transposed = to_gpu(e.T.copy(), memory).T
        for x1, x2 in ((to_gpu(base, memory), to_gpu(e, memory)), (2, transposed)):
            with pytest.raises(ValueError, match="^power: integers to negative integer powers"):
                ops.power(x1, x2)
        with pytest.raises(ValueError, match="^power: integers to negative integer powers"):
            ops.power(base, e, device=0)
    got = ops.power(to_gpu(base, memory), to_gpu(np.full((2, 3), 3, np.int32), memory))
    np.testing.assert_array_equal(np.asarray(ap.copy(got, memory="host")), base**3)


# ---- device=: the op on a GPU wherever its operands live ------------------------------------------


def test_device_without_a_gpu_is_a_no_device_error_naming_the_op():
    if HAS_GPU:
        pytest.skip("checks the behaviour without a CUDA device")
    with pytest.raises(ap.NoDeviceError, match=r"^add: device=0: .*needs a CUDA device"):
        ops.add(np.ones(3), 1.0, device=0)
    with pytest.raises(ap.NoDeviceError, match=r"^sum: device=0: "):
        ops.sum(np.ones(3), device=0)
    with pytest.raises(ap.NoDeviceError, match="cuda.register needs a CUDA device"):
        ap.cuda.register(np.ones(3))


def test_device_calls_go_to_the_staging_the_package_registered():
    """_core never imports arrayport._pipeline: arrayport.ops registers its run() at import, and
    every device= call C++ does not stage itself reaches the registered function with its
    operands, out and parameters."""
    from arrayport import _core, _pipeline

    x, y = np.ones(3), np.arange(3.0)
    calls = []
    _core._set_pipeline(lambda *args: calls.append(args) or "staged")
    try:
        assert ops.sum(x, axis=0, device=99) == "staged"
        assert ops.divide(x, y, zero_value=2.0, device=99) == "staged"
        assert ops.add(x, 1.0, out=y, device=99) == "staged"
    finally:
        _core._set_pipeline(_pipeline.run)
    assert [(c[0], c[3], c[4]) for c in calls] == [
        ("sum", 99, {"axis": 0, "keepdims": False}),
        ("divide", 99, {"zero_value": 2.0}),
        ("add", 99, {}),
    ]
    assert calls[0][1][0] is x and calls[1][1][0] is x and calls[1][1][1] is y
    assert calls[2][2] is y
    with pytest.raises(TypeError, match="^_set_pipeline: run: expected a callable, got int$"):
        _core._set_pipeline(42)
    with pytest.raises(ap.NoDeviceError if not HAS_GPU else ValueError, match="^sum: device=99: "):
        ops.sum(x, device=99)   # the package's staging is back


def test_device_must_be_an_int_or_a_device():
    with pytest.raises(TypeError, match="add: device: expected an int or an arrayport.cuda.Device, got str"):
        ops.add(np.ones(3), 1.0, device="cuda")


@needs_gpu
@pytest.mark.parametrize("n", [1000, 3 << 20])   # copied into pinned memory / page-locked in place
def test_device_runs_host_operands_on_the_gpu_and_returns_numpy(n):
    x, y = rng_array((n,), "float32", 1), rng_array((n,), "float32", 2)
    got = ops.add(x, y, device=0)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, x + y, rtol=2e-6)
    np.testing.assert_allclose(ops.axpy(2.0, x, y, device=0), 2 * x + y, rtol=2e-6)
    np.testing.assert_allclose(ops.divide(x, np.zeros_like(x), zero_value=5, device=0), 5)
    np.testing.assert_allclose(float(ops.sum(x.astype(np.float64), device=0)), x.astype(np.float64).sum(), rtol=1e-12)
    m = x[: n // 4 * 4].reshape(4, -1)
    np.testing.assert_allclose(ops.max(m, axis=1, device=0), m.max(axis=1))
    np.testing.assert_allclose(ops.dot(m, m, axis=1, device=0), (m * m).sum(axis=1), rtol=1e-5)
    out = np.zeros(n, np.float32)
    assert ops.multiply(x, 3.0, out=out, device=0) is out          # host out=, written in place
    np.testing.assert_allclose(out, 3 * x, rtol=2e-6)
    d = to_gpu(x, "device")                                        # a GPU operand, a host out=
    assert ops.add(d, y, out=out, device=0) is out
    np.testing.assert_allclose(out, x + y, rtol=2e-6)
    with pytest.raises(TypeError, match="add: out: expected dtype float32, got float64"):
        ops.add(x, y, out=np.zeros(n), device=0)
    readonly = np.zeros(n, np.float32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="add: out: expected a writable array, got a read-only one"):
        ops.add(x, y, out=readonly, device=0)


@needs_gpu
@pytest.mark.parametrize("chunk_bytes", [None, "16384"])  # the default, and chunks of 4096 elements
@pytest.mark.parametrize("n", [1, 4095, 4097, 70_001])
def test_device_stages_host_operands_in_chunks_and_matches_numpy(monkeypatch, n, chunk_bytes):
    # Host operands of the result's shape take the staged path: chunks copied into three pinned
    # slots while the GPU computes the ones before (with 16 KiB chunks, 70,001 elements are 18
    # chunks: every slot refilled several times); mixed dtypes, scalars and three inputs too.
    if chunk_bytes:
        monkeypatch.setenv("ARRAYPORT_STAGE_CHUNK_BYTES", chunk_bytes)

    def not_staged(name, *args):
        raise AssertionError(f"{name} was not staged")

    if n > 1:  # the staged path must take these (one element goes through _pipeline)
        monkeypatch.setattr("arrayport._pipeline.run", not_staged)
    x, y = rng_array((n,), "float32", 11), rng_array((n,), "float32", 12)
    i = rng_array((n,), "int32", 13)
    z = rng_array((n,), "float64", 14)
    cond = x > 0
    cases = [
        (ops.add(x, y, device=0), x + y),
        (ops.multiply(x, 3.0, device=0), x * np.float32(3.0)),
        (ops.subtract(i, z, device=0), i - z),                     # int32 - float64: float64
        (ops.maximum(i, 7, device=0), np.maximum(i, 7)),
        (ops.where(cond, x, y, device=0), np.where(cond, x, y)),
        (ops.axpy(2.0, x, y, device=0), np.float32(2.0) * x + y),
        (ops.sqrt(z * z, device=0), np.sqrt(z * z)),
        (ops.astype(x, "int64", device=0), x.astype(np.int64)),
        (ops.divide(x, np.zeros_like(x), zero_value=5, device=0), np.full(n, 5, np.float32)),
        (ops.add(x.reshape(1, n), y.reshape(1, n), device=0), (x + y).reshape(1, n)),
    ]
    for got, want in cases:
        assert isinstance(got, np.ndarray) and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # bfloat16, which NumPy has no dtype for, comes back as a pinned Array.
    h = ops.astype(x, "bfloat16", device=0)
    assert isinstance(h, ap.Array) and h.memory == "pinned" and h.shape == (n,)
    np.testing.assert_allclose(ops.astype(h, "float32").get(), x, rtol=1e-2)
    monkeypatch.undo()
    # Layouts the staged path does not take (strided, broadcast) go through pinned copies.
    np.testing.assert_allclose(ops.add(x[::2], y[::2], device=0), x[::2] + y[::2], rtol=1e-6)
    yy = np.stack([y, y])
    np.testing.assert_allclose(ops.add(x.reshape(1, n), yy, device=0), x + yy, rtol=1e-6)


@needs_gpu
def test_device_with_an_operand_already_on_the_gpu_returns_a_gpu_array():
    x = rng_array((5000,), "float32", 3)
    d = to_gpu(x, "device")
    got = ops.add(d, x, device=0)
    assert isinstance(got, ap.Array) and got.memory == "device"
    check(got, x + x, "float32")
    if ap.cuda.device_count() < 2:
        with pytest.raises(ValueError, match=r"add: device=1: "):
            ops.add(x, x, device=1)
    else:
        with pytest.raises(ValueError, match=r"add: device=1, but the operand is in device memory of device 0"):
            ops.add(d, x, device=1)


@needs_gpu
def test_register_page_locks_host_memory_that_the_gpu_writes_in_place():
    x = np.zeros(1 << 20, np.float32)                   # 4 MiB: its own pages
    r = ap.cuda.register(x)
    assert r.memory == "pinned" and r.ptr == x.ctypes.data and r.shape == x.shape
    ops.add(r, 2.0, out=r)                              # a GPU kernel writes the NumPy memory
    ap.cuda.synchronize()
    assert (x == 2.0).all()
    with pytest.raises(ValueError, match="register: these pages are already page-locked"):
        ap.cuda.register(x)
    del r
    again = ap.cuda.register(x)                         # unlocked when the Array died
    del again
    with pytest.raises(ValueError, match="register: expected pageable host memory, got pinned memory"):
        ap.cuda.register(ap.empty(16, memory="pinned"))
    with pytest.raises(ValueError, match="register: expected pageable host memory, got device memory"):
        ap.cuda.register(ap.empty(16, memory="device"))


HOST_ZERO_D = [
    ("numpy scalar", lambda v, dt: np.dtype(dt).type(v)),
    ("0-d ndarray", lambda v, dt: np.array(v, dt)),
    ("0-d host Array", lambda v, dt: ap.asarray(np.array(v, dt))),
]


@needs_gpu
@pytest.mark.parametrize("kind", [k for k, _ in HOST_ZERO_D])
@pytest.mark.parametrize(("x_dtype", "s_dtype", "value"), [
    ("float16", "float32", 0.5), ("float32", "float64", -1.25), ("int32", "int64", -3),
    ("uint8", "int64", 7), ("float32", "bool", True), ("complex64", "complex128", 1 - 2j),
    ("uint8", "int32", 300), ("int64", "int32", -(2**31))])
def test_a_0d_host_operand_goes_by_value_to_a_gpu_op(kind, x_dtype, s_dtype, value):
    # As PyTorch takes a 0-d CPU tensor with CUDA ones: the element travels by value, and its
    # dtype promotes strongly (NEP 50), exactly as NumPy computes it on the host.
    make = dict(HOST_ZERO_D)[kind]
    xs = (np.arange(1, 50) % 7).astype(x_dtype)
    x = ap.copy(xs, memory="device")
    s = make(value, s_dtype)
    ref_s = np.array(value, s_dtype)
    for name in ("add", "multiply", "subtract"):
        got = getattr(ops, name)(x, s)
        want = getattr(np, name)(xs, ref_s)
        assert got.memory == "device"
        assert str(got.dtype) == str(want.dtype), (name, got.dtype, want.dtype)
        np.testing.assert_array_equal(got.get(), want)
    if np.dtype(x_dtype).kind in "fc" and np.dtype(s_dtype).kind in "fc":
        ys = xs[::-1].copy()
        got = ops.axpy(s, x, ap.copy(ys, memory="device"))
        want = ref_s * xs + ys
        assert str(got.dtype) == str(want.dtype)
        np.testing.assert_allclose(got.get(), want, rtol=1e-3 if "16" in x_dtype else 1e-6)


@needs_gpu
def test_a_host_array_of_one_element_with_a_gpu_array_is_still_refused():
    # Only 0-d operands travel by value; a (1,) array is an array the GPU cannot read.
    x = ap.copy(np.ones(4, np.float32), memory="device")
    with pytest.raises(ValueError, match="pageable host memory, which the GPU cannot read"):
        ops.add(x, np.ones(1, np.float32))
    # A 0-d operand of a dtype ops do not compute in is refused as on the host, naming it.
    with pytest.raises(TypeError, match="add: argument 'x2' has dtype int8, expected one of"):
        ops.add(x, np.int8(1))


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "float16", "bfloat16",
                                   "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("name", ["sum", "mean"])
@pytest.mark.parametrize("key", [np.s_[::-1], np.s_[::2], np.s_[:]])
def test_reducing_an_empty_axis_of_a_view_without_data(name, dtype, key):
    # An empty Array has no data pointer while its rows still have offsets (a reversed view's
    # are negative): found by UBSan under the property sweep, pointer arithmetic on NULL.
    a = ap.zeros((3, 0), dtype)[key]
    got = getattr(ops, name)(a, axis=1)
    ref_dtype = "float32" if dtype == "bfloat16" else dtype
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "mean of empty slice"
        want = getattr(np, name)(np.zeros((3, 0), ref_dtype)[key], axis=1)
    np.testing.assert_array_equal(to_numpy(got), want.astype(to_numpy(got).dtype))


@needs_gpu
@pytest.mark.parametrize("memory", GPU_MEMORY)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "complex64"])
@pytest.mark.parametrize("n", [16385, (1 << 20) + 3, 3 * (1 << 20) + 7, (1 << 22) + 4 * 333 + 1])
def test_gpu_long_full_reductions_take_numpys_index_and_sum(memory, dtype, n):
    # The vector kernels of long contiguous reductions: two vectors a thread in flight, argmin and
    # argmax taking a thread's elements in index order. Coarse values make ties (the first index
    # wins); a NaN anywhere wins, the first of two.
    rng = np.random.default_rng(n)
    x = rng.integers(-1, 2, n).astype(dtype)
    g = to_gpu(x, memory)
    for name in ("argmin", "argmax"):
        assert int(to_numpy(getattr(ops, name)(g))) == getattr(np, name)(x), name
    # -1, 0, 1 products: the sum is exact in any order.
    assert to_numpy(ops.dot(g, g)) == np.dot(x, x)
    if dtype == "int32":
        return
    for first, second in ([n - 1, n // 2], [n // 2 + 1, 3], [0, n - 1]):
        y = x.copy()
        y[[first, second]] = np.nan
        gy = to_gpu(y, memory)
        for name in ("argmin", "argmax"):
            assert int(to_numpy(getattr(ops, name)(gy))) == min(first, second), (name, first)


@pytest.mark.parametrize("memory", ["host"] + (GPU_MEMORY if HAS_GPU else []))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [7, 4099])
def test_nan_sign_bits_are_numpys(memory, dtype, n):
    # negative flips a NaN's sign bit, copy and where keep it, as NumPy's do (GPU negation is an
    # arithmetic instruction, whose NaN result need not keep or flip the sign).
    ints = "int32" if dtype == "float32" else "int64"
    bits = np.array([0x7FC00000, -0x400000, 0x7F800001, -0x7FFFFF] if dtype == "float32" else
                    [0x7FF8000000000000, -0x8000000000000, 0x7FF0000000000001, -0xFFFFFFFFFFFFF],
                    ints)
    x = np.resize(bits, n).view(dtype)
    g = x if memory == "host" else to_gpu(x, memory)
    cond = np.arange(n) % 2 == 0
    c = cond if memory == "host" else to_gpu(cond, memory)
    for got, want in ((ops.negative(g), np.negative(x)), (ops.copy(g), x.copy()),
                      (ops.where(c, g, 1.0), np.where(cond, x, 1.0))):
        assert np.array_equal(np.signbit(to_numpy(got)), np.signbit(want)), (memory, got)
