"""arrayport.ops against NumPy: every op x dtype x layout (contiguous, broadcast, strided, scalar),
reductions over every axis form, NEP 50 result dtypes, and the error cases (out= untouched).

Tolerances (relative, documented in arrayport.ops): integers and bool exact; float64 1e-12;
float32 / complex64 2e-6 (element-wise) and 1e-5 (reductions: pairwise vs NumPy's pairwise with
another blocking); float16 1e-3 (one rounding of a float32 result, as NumPy does); bfloat16 1e-2
(NumPy has no bfloat16: compared against float32 arithmetic on the bfloat16-rounded inputs).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import arrayport as ap
from arrayport import ops
from conftest import HAS_GPU, needs_gpu
from dlpack_ctypes import Producer

NUMPY_DTYPES = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64", "complex64", "complex128"]
ALL_DTYPES = NUMPY_DTYPES[:5] + ["bfloat16"] + NUMPY_DTYPES[5:]
RTOL = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 2e-6, "complex64": 2e-6, "float64": 1e-12, "complex128": 1e-12}
RED_RTOL = {"float16": 1e-2, "bfloat16": 5e-2, "float32": 1e-5, "complex64": 1e-5, "float64": 1e-12, "complex128": 1e-12}


def rng_array(shape, dtype, seed=0, positive=False):
    r = np.random.default_rng(seed)
    if dtype == "bool":
        return r.integers(0, 2, shape).astype(bool)
    if dtype == "uint8":
        return r.integers(0, 255, shape).astype(np.uint8)
    if dtype in ("int32", "int64"):
        return r.integers(1 if positive else -100, 100, shape).astype(dtype)
    x = r.uniform(0.1 if positive else -4, 4, shape)
    if dtype.startswith("complex"):
        x = x + 1j * r.uniform(-4, 4, shape)
    return x.astype(dtype if dtype != "bfloat16" else "float32")


def make(x, dtype):
    """An operand of `dtype` from NumPy data: a NumPy array, or an arrayport Array for bfloat16."""
    if dtype == "bfloat16":
        return ops.astype(x, "bfloat16")
    return x.astype(dtype)


def to_numpy(a):
    if isinstance(a, ap.Array):
        if a.dtype == "bfloat16":
            a = ops.astype(a, "float32")
        return a.get() if a.memory == "device" else np.asarray(a)
    return np.asarray(a)


def ref_input(x, dtype):
    """What the kernel sees, as NumPy can compute with it (bfloat16 -> its float32 values)."""
    if dtype == "bfloat16":
        return to_numpy(ops.astype(x, "bfloat16"))
    return x.astype(dtype)


def reduce_ref(name, x, **kw):
    """NumPy's reduction, except that float16 sums are taken exactly (in float64) and rounded
    once: NumPy rounds every partial sum to float16, arrayport accumulates in float32."""
    if x.dtype == np.float16 and name in ("sum", "mean"):
        return getattr(np, name)(x.astype(np.float64), **kw).astype(np.float16)
    return getattr(np, name)(x, **kw)


def check(got, want, dtype, rtol_table=RTOL):
    got_np = to_numpy(got)
    assert got_np.shape == np.shape(want)
    if dtype in rtol_table:
        rtol = rtol_table[dtype]
        np.testing.assert_allclose(got_np, np.asarray(want), rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(got_np, want)


BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
          "maximum": np.maximum, "minimum": np.minimum}
UNARY = {"negative": np.negative, "square": np.square, "sqrt": np.sqrt, "abs": np.abs, "copy": np.copy}
LAYOUTS = ["contiguous", "broadcast", "strided", "scalar", "transposed"]


def supported(name, dtype):
    if dtype == "bool" and name in ("subtract", "negative", "square"):
        return False
    return True


def binary_operands(layout, dtype):
    a = rng_array((6, 8), dtype, 1, positive=True)
    b = rng_array((6, 8), dtype, 2, positive=True)
    if layout == "broadcast":
        a = rng_array((3, 1, 8), dtype, 1, positive=True)
        b = rng_array((5, 8), dtype, 2, positive=True)
    elif layout == "strided":
        a = rng_array((12, 16), dtype, 1, positive=True)[::2, 1::2]
        b = rng_array((6, 24), dtype, 2, positive=True)[:, ::3]
    elif layout == "transposed":
        a = rng_array((8, 6), dtype, 1, positive=True).T
    return a, b


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_matches_numpy(name, dtype, layout):
    a, b = binary_operands(layout, dtype)
    fn = getattr(ops, name)
    if not supported(name, dtype):
        with pytest.raises(TypeError, match=f"{name}: not supported for dtype bool"):
            fn(make(a, dtype), make(b, dtype))
        return
    if layout == "scalar":
        scalar = 3 if dtype not in ("float16", "bfloat16", "float32", "float64", "complex64", "complex128") else 1.5
        if dtype == "bool":
            scalar = True
        got = fn(make(a, dtype), scalar)
        ra = ref_input(a, dtype)
        with np.errstate(all="ignore"):
            want = BINARY[name](ra.astype("float32") if dtype == "bfloat16" else ra, scalar)
    else:
        got = fn(make(a, dtype), make(b, dtype))
        with np.errstate(all="ignore"):
            want = BINARY[name](ref_input(a, dtype), ref_input(b, dtype))
    if dtype != "bfloat16":
        assert got.dtype == str(want.dtype), (got.dtype, want.dtype)
    check(got, want, dtype if dtype == "bfloat16" else str(want.dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_unary_matches_numpy(name, dtype, layout):
    x = rng_array((7, 9), dtype, 3, positive=(name == "sqrt"))
    if layout == "strided":
        x = rng_array((14, 9), dtype, 3, positive=(name == "sqrt"))[::-2]
    fn = getattr(ops, name)
    if not supported(name, dtype):
        with pytest.raises(TypeError, match=f"{name}: not supported for dtype bool"):
            fn(make(x, dtype))
        return
    got = fn(make(x, dtype))
    rx = ref_input(x, dtype)
    want = UNARY[name](rx)
    if dtype != "bfloat16":
        assert got.dtype == str(want.dtype), (got.dtype, want.dtype)
    check(got, want, dtype if dtype == "bfloat16" else str(want.dtype))


def test_arrayport_arrays_as_inputs_and_out_in_place():
    x = ops.copy(np.arange(12, dtype=np.float32).reshape(3, 4))
    y = ops.copy(np.ones(4, dtype=np.float32))
    assert isinstance(x, ap.Array) and x.memory == "host"
    r = ops.add(x, y, out=x)
    assert r is x
    np.testing.assert_array_equal(np.asarray(x), np.arange(12, dtype=np.float32).reshape(3, 4) + 1)
    view = x[:, 1::2]
    ops.multiply(view, 2, out=view)
    want = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    want[:, 1::2] *= 2
    np.testing.assert_array_equal(np.asarray(x), want)


def test_out_into_numpy_array():
    out = np.zeros((2, 3))
    r = ops.add(np.ones((2, 3)), 2.0, out=out)
    assert r is out
    np.testing.assert_array_equal(out, 3.0)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("other", NUMPY_DTYPES)
def test_mixed_dtypes_follow_numpy_result_type(dtype, other):
    a = rng_array((4, 5), dtype, 1, positive=True)
    b = rng_array((5,), other, 2, positive=True)
    got = ops.add(a, b)
    want = np.add(a, b)
    assert got.dtype == str(want.dtype)
    check(got, want, str(want.dtype))


@pytest.mark.parametrize("dtype,scalar,expected", [
    ("uint8", 3, "uint8"), ("int32", 2.5, "float64"), ("float32", 2.5, "float32"),
    ("float32", 1j, "complex64"), ("float16", 1j, "complex64"), ("int64", 1j, "complex128"),
    ("bool", 1, "int64"), ("bool", True, "bool"), ("uint8", True, "uint8"),
    ("float64", 1j, "complex128"), ("bfloat16", 2.0, "bfloat16"), ("bfloat16", 2, "bfloat16"),
])
def test_python_scalars_follow_nep50(dtype, scalar, expected):
    a = make(rng_array((3,), dtype if dtype != "bfloat16" else "float32", positive=True), dtype)
    assert ops.add(a, scalar).dtype == expected
    if dtype != "bfloat16":
        assert str(np.result_type(np.empty(0, dtype), scalar)) == expected


def test_scalars_only_give_a_0d_array():
    r = ops.add(1, 2)
    assert r.shape == () and r.dtype == "int64" and int(np.asarray(r)) == 3
    assert ops.multiply(2, 1.5).dtype == "float64"


def test_bfloat16_promotion_rules():
    bf = ops.astype(np.ones(3, np.float32), "bfloat16")
    assert ops.add(bf, np.ones(3, np.float16)).dtype == "float32"
    assert ops.add(bf, np.ones(3, np.uint8)).dtype == "bfloat16"
    assert ops.add(bf, np.ones(3, np.int32)).dtype == "float64"
    assert ops.add(bf, np.ones(3, np.float32)).dtype == "float32"
    assert ops.add(bf, np.ones(3, np.complex64)).dtype == "complex64"


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_where(dtype):
    cond = rng_array((4, 1, 6), "bool", 5)
    x = rng_array((3, 6), dtype, 6)
    y = rng_array((6,), dtype, 7)
    got = ops.where(cond, make(x, dtype), make(y, dtype))
    want = np.where(cond, ref_input(x, dtype), ref_input(y, dtype))
    check(got, want, dtype)
    # A non-bool condition is its truth value; scalars broadcast.
    got = ops.where(np.array([0, 2, 0], np.int32), 1.5, np.arange(3.0))
    np.testing.assert_array_equal(np.asarray(got), [0.0, 1.5, 2.0])


@pytest.mark.parametrize("dtype", ["int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
def test_axpy(dtype):
    x = rng_array((5, 7), dtype, 1)
    y = rng_array((7,), dtype, 2)
    got = ops.axpy(3, make(x, dtype), make(y, dtype))
    want = 3 * ref_input(x, dtype) + ref_input(y, dtype)
    check(got, want, dtype)
    out = make(np.zeros((5, 7), dtype if dtype != "bfloat16" else "float32"), dtype)
    assert ops.axpy(make(x, dtype), make(x, dtype), make(y, dtype), out=out) is out
    check(out, ref_input(x, dtype) ** 2 + ref_input(y, dtype), dtype)


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "complex128"])
def test_divide_zero_value(dtype):
    a = np.array([1, 2, 3, 4], dtype)
    b = np.array([1, 0, 2, 0], dtype)
    got = ops.divide(a, b, zero_value=-1)
    want_dtype = "float64" if dtype == "int32" else dtype
    assert got.dtype == want_dtype
    np.testing.assert_allclose(np.asarray(got), np.array([1, -1, 1.5, -1], want_dtype))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(np.asarray(ops.divide(a, b)), np.divide(a, b))


@pytest.mark.parametrize("src", ALL_DTYPES)
@pytest.mark.parametrize("dst", ALL_DTYPES)
def test_astype(src, dst):
    x = rng_array((4, 6), src, 3, positive=True)[:, ::2]
    if src.startswith("complex") and not dst.startswith("complex"):
        x = x.real.astype(src)  # NumPy warns when dropping the imaginary part
    got = ops.astype(make(x, src), dst)
    assert got.dtype == dst
    ref = ref_input(x, src)
    if dst == "bfloat16":
        want = to_numpy(ops.astype(ref.astype(np.float32) if not src.startswith("complex") else ref.real.astype(np.float32), "bfloat16"))
        check(got, want, "bfloat16")
    else:
        if src.startswith("complex") and not dst.startswith("complex"):
            ref = ref.real
        check(got, ref.astype(dst), dst)


def test_integer_arithmetic_wraps_like_numpy():
    a = np.array([2**31 - 1, -(2**31)], np.int32)
    np.testing.assert_array_equal(np.asarray(ops.add(a, a)), a + a)
    np.testing.assert_array_equal(np.asarray(ops.negative(a)), -a)
    np.testing.assert_array_equal(np.asarray(ops.abs(a)), np.abs(a))
    u = np.array([200, 255], np.uint8)
    np.testing.assert_array_equal(np.asarray(ops.multiply(u, u)), u * u)


def test_maximum_minimum_propagate_nan():
    a = np.array([1.0, np.nan, 3.0])
    b = np.array([np.nan, 2.0, 1.0])
    np.testing.assert_array_equal(np.asarray(ops.maximum(a, b)), np.maximum(a, b))
    np.testing.assert_array_equal(np.asarray(ops.minimum(a, b)), np.minimum(a, b))


def test_large_contiguous_and_strided_use_threads():
    a = rng_array((1 << 20,), "float32", 1)
    b = rng_array((1 << 20,), "float32", 2)
    np.testing.assert_array_equal(np.asarray(ops.add(a, b)), a + b)
    np.testing.assert_array_equal(np.asarray(ops.multiply(a[::2], b[1::2])), a[::2] * b[1::2])
    m = a.reshape(1024, 1024)
    np.testing.assert_array_equal(np.asarray(ops.subtract(m, m.T)), m - m.T)


# ---- reductions ---------------------------------------------------------------------------------

AXES = [None, 0, 1, -1, (0, 2), (0, 1, 2), ()]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", ["sum", "mean", "min", "max"])
def test_reductions_match_numpy(name, dtype, axis, keepdims):
    x = rng_array((4, 5, 6), dtype, 9)
    if dtype.startswith("complex") and name in ("min", "max"):
        with pytest.raises(TypeError, match=f"{name}: not supported for dtype {dtype}"):
            getattr(ops, name)(x, axis=axis)
        return
    got = getattr(ops, name)(make(x, dtype), axis=axis, keepdims=keepdims)
    ref = ref_input(x, dtype)
    want = reduce_ref(name, ref, axis=axis, keepdims=keepdims)
    if dtype != "bfloat16":
        assert got.dtype == str(np.asarray(want).dtype), (got.dtype, np.asarray(want).dtype)
    kind = dtype if dtype in ("bfloat16", "float16") else str(np.asarray(want).dtype)
    check(got, want, kind, RED_RTOL)


@pytest.mark.parametrize("name", ["sum", "mean", "min", "max"])
def test_reductions_of_strided_views(name):
    base = rng_array((10, 12, 8), "float64", 4)
    x = base[::2, ::-3, 1:7]
    for axis in [None, 0, 1, (1, 2)]:
        check(getattr(ops, name)(x, axis=axis), getattr(np, name)(x, axis=axis), "float64")
    xt = base.transpose(2, 0, 1)
    check(getattr(ops, name)(xt, axis=(0, 2)), getattr(np, name)(xt, axis=(0, 2)), "float64")


def test_pairwise_sum_is_accurate():
    x = np.random.default_rng(0).uniform(0, 1, 10_000_003).astype(np.float32)
    exact = x.astype(np.float64).sum()
    got = float(np.asarray(ops.sum(x)))
    assert abs(got - exact) / exact < 1e-6
    naive_error = abs(float(np.cumsum(x, dtype=np.float32)[-1]) - exact) / exact
    assert abs(got - exact) / exact < naive_error / 10
    m = x[: 1001 * 9990].reshape(1001, 9990)[:, :9000]
    check(ops.sum(m, axis=1), m.sum(axis=1), "float32", RED_RTOL)


def test_cpu_sums_do_not_depend_on_the_thread_count():
    # One long reduction, three long ones and twelve: the same bits on 1 to 4 threads, whichever
    # way the work is split (each output is reduced in fixed chunks combined pairwise).
    import subprocess
    import sys

    code = ("import numpy as np, arrayport.ops as ops\n"
            "x = np.random.default_rng(5).standard_normal(2**20 + 7, dtype=np.float32)\n"
            "m = x[: 12 * (2**16 + 1)].reshape(12, -1)\n"
            "r = [ops.sum(x), ops.sum(x[: 3 * (2**16 + 5)].reshape(3, -1), axis=1), ops.sum(m, axis=1),\n"
            "     ops.mean(x.astype(np.float64)), ops.sum(m.T, axis=0)]\n"
            "print([np.asarray(v).tobytes().hex() for v in r])\n")
    outs = set()
    for threads in ("1", "2", "3", "4"):
        env = dict(__import__("os").environ, ARRAYPORT_NUM_THREADS=threads)
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert res.returncode == 0, res.stderr
        outs.add(res.stdout)
    assert len(outs) == 1, outs


def test_reduction_edge_cases():
    assert float(np.asarray(ops.sum(np.zeros(0)))) == 0.0
    assert ops.sum(np.zeros((3, 0)), axis=1).shape == (3,)
    with np.errstate(all="ignore"):
        assert np.isnan(float(np.asarray(ops.mean(np.zeros(0)))))
    assert ops.sum(np.arange(5, dtype=np.uint8)).dtype == "uint64"
    assert ops.sum(np.ones(5, bool)).dtype == "int64"
    assert int(np.asarray(ops.sum(np.ones(5, bool)))) == 5
    assert np.isnan(float(np.asarray(ops.max(np.array([1.0, np.nan, 2.0])))))
    assert float(np.asarray(ops.sum(np.float64(2.5)))) == 2.5  # a NumPy scalar is a 0-d array


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 7, 15, 16, 17, 100, 1001, 70_000, 300_001])
def test_max_min_of_contiguous_floats_at_every_edge(dtype, n):
    # The vectorised path: lengths around its step (16 floats / 8 doubles), the tail, the split
    # into parallel chunks; NaN in the first, middle and last place; infinities.
    x = np.random.default_rng(n).standard_normal(n).astype(dtype)
    assert float(np.asarray(ops.max(x))) == x.max() and float(np.asarray(ops.min(x))) == x.min()
    for pos in {0, n // 2, n - 1}:
        y = x.copy()
        y[pos] = np.nan
        assert np.isnan(float(np.asarray(ops.max(y)))) and np.isnan(float(np.asarray(ops.min(y))))
    y = x.copy()
    y[n // 3] = np.inf
    assert float(np.asarray(ops.max(y))) == np.inf
    y[n // 3] = -np.inf
    assert float(np.asarray(ops.min(y))) == -np.inf


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64"])
def test_integer_and_bool_sums_are_exact_at_every_length(dtype):
    # The contiguous integer path (bools counted in 16/32-byte vectors, 255 steps a flush) at every
    # length up to past its first flush, the chunk edges, and along rows; contiguous and reversed.
    r = np.random.default_rng(3)
    lengths = [*range(0, 300), 255 * 32 - 1, 255 * 32, 255 * 32 + 1, 2**16 - 1, 2**16, 2**16 + 1, 200_003]
    for n in lengths:
        x = r.integers(0, 2, n).astype(bool) if dtype == "bool" else r.integers(-100, 100, n).astype(dtype)
        if dtype == "uint8":
            x = r.integers(0, 256, n).astype(np.uint8)
        for v in (x, x[::-1]):
            got = ops.sum(v)
            assert got.dtype == str(v.sum().dtype)
            assert int(np.asarray(got)) == int(v.sum()), (n, v.strides)
    m = (r.integers(0, 2, (7, 1000)) > 0).astype(dtype)
    np.testing.assert_array_equal(np.asarray(ops.sum(m, axis=1)), m.sum(axis=1))
    np.testing.assert_array_equal(np.asarray(ops.sum(m[:, 3:], axis=1)), m[:, 3:].sum(axis=1))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_division_by_a_signed_zero_is_signed_by_the_dividend(dtype):
    # Found by the property sweep: dividing by -0.0 flipped the sign of the infinities.
    x = np.array([1 - 1j, -2 + 0j, 0j], dtype)
    for zero in (0.0, -0.0, complex(-0.0, -0.0)):
        with np.errstate(all="ignore"):
            want = x / np.array(zero, dtype)
        np.testing.assert_array_equal(np.asarray(ops.divide(x, np.array(zero, dtype))), want)


@pytest.mark.parametrize("name", ["min", "max"])
def test_min_max_over_an_empty_axis_raise_even_into_an_empty_result(name):
    # Found by the property sweep: NumPy raises for shape (0, 0) along axis 0, as for any
    # reduction over nothing; a non-empty axis into an empty result is fine.
    with pytest.raises(ValueError, match=f"{name}: zero-size array to reduction operation {name}"):
        getattr(ops, name)(np.zeros((0, 0)), axis=0)
    assert getattr(ops, name)(np.zeros((0, 3)), axis=1).shape == (0,)


def test_float64_to_float16_rounds_once():
    # Found by the property sweep: astype went through float first (1 in ~16,000 off by a unit).
    x = np.array([1 + 2.0**-11 + 2.0**-40, -(1 + 2.0**-11 + 2.0**-40), 1 + 3 * 2.0**-11 - 2.0**-40])
    np.testing.assert_array_equal(np.asarray(ops.astype(x, "float16")), x.astype(np.float16))
    np.testing.assert_array_equal(np.asarray(ops.astype(x + 0j, "float16")), x.astype(np.float16))
    r = np.random.default_rng(2).uniform(-4, 4, 1_000_000)
    np.testing.assert_array_equal(np.asarray(ops.astype(r, "float16")), r.astype(np.float16))


def test_a_bool_is_any_nonzero_byte():
    # Bools whose bytes are not 0 or 1 (a uint8 array viewed as bool) count once each.
    raw = np.random.default_rng(4).integers(0, 4, 10_007).astype(np.uint8)
    b = ap.asarray(raw).view("bool")
    assert int(np.asarray(ops.sum(b))) == np.count_nonzero(raw)
    assert int(np.asarray(ops.sum(b[1:]))) == np.count_nonzero(raw[1:])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_dot(dtype):
    x = rng_array((1000,), dtype, 1)
    y = rng_array((2000,), dtype, 2)[::2]
    got = ops.dot(make(x, dtype), make(y, dtype))
    want = np.dot(ref_input(x, dtype), ref_input(y, dtype)) if dtype != "bool" else np.dot(x, y)
    kind = dtype if dtype in ("bfloat16", "float16") else str(np.asarray(want).dtype)
    check(got, want, kind, {**RED_RTOL, "float16": 5e-2, "bfloat16": 1e-1})
    assert ops.dot(np.ones(3, np.int32), np.ones(3, np.float32)).dtype == "float64"


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "complex128"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_dot_along_axes_is_the_sum_of_the_product(dtype, axis, keepdims):
    x = rng_array((4, 5, 6), dtype, 3)
    y = rng_array((5, 12), dtype, 4)[:, ::2]       # broadcast against x, strided
    got = ops.dot(x, y, axis=axis, keepdims=keepdims)
    want = np.sum(x * y, axis=axis, keepdims=keepdims, dtype=(x * y).dtype)  # np.dot's dtype
    assert got.shape == np.shape(want) and got.dtype == str(np.asarray(want).dtype)
    check(got, want, str(np.asarray(want).dtype), RED_RTOL)


def test_dot_of_transposed_and_reversed_views():
    base = rng_array((8, 9), "float64", 5)
    x, y = base.T, base[::-1].T
    for axis in (None, 0, 1):
        check(ops.dot(x, y, axis=axis), np.sum(x * y, axis=axis), "float64")
    assert float(np.asarray(ops.dot(np.zeros((3, 0)), np.zeros((3, 0))))) == 0.0
    check(ops.dot(np.zeros((3, 0)), np.zeros((3, 0)), axis=1), np.zeros(3), "float64")


@pytest.mark.parametrize("name", ["sum", "mean", "min", "max"])
def test_reductions_write_into_out(name):
    x = rng_array((6, 7, 8), "float64", 6)
    want = getattr(np, name)(x, axis=1)
    out = np.full((6, 8), -1.0)
    assert getattr(ops, name)(x, axis=1, out=out) is out           # C-contiguous: written directly
    np.testing.assert_allclose(out, want, rtol=1e-12)
    strided = np.full((6, 16), -1.0)
    r = getattr(ops, name)(x, axis=1, out=strided[:, ::2])          # through a temporary
    assert isinstance(r, np.ndarray)
    np.testing.assert_allclose(strided[:, ::2], want, rtol=1e-12)
    np.testing.assert_array_equal(strided[:, 1::2], -1.0)
    keep = ap.zeros((6, 1, 8), "float64", memory="host")
    assert getattr(ops, name)(x, axis=1, keepdims=True, out=keep) is keep
    np.testing.assert_allclose(np.asarray(keep)[:, 0], want, rtol=1e-12)
    scalar = np.zeros((), np.float64)
    getattr(ops, name)(x, out=scalar)
    assert float(scalar) == pytest.approx(float(getattr(np, name)(x)), rel=1e-12)


def test_dot_writes_into_out():
    x, y = rng_array((5, 7), "float32", 1), rng_array((7,), "float32", 2)
    out = np.zeros(5, np.float32)
    assert ops.dot(x, y, axis=1, out=out) is out
    np.testing.assert_allclose(out, (x * y).sum(axis=1), rtol=1e-5)


def test_a_reduction_into_an_out_that_overlaps_its_input():
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    want = x.sum(axis=1)
    ops.sum(x, axis=1, out=x[:, 0])          # out is part of the input: through a temporary
    np.testing.assert_array_equal(x[:, 0], want)
    np.testing.assert_array_equal(x[:, 1:], np.arange(12, dtype=np.float64).reshape(3, 4)[:, 1:])


def test_reduction_out_errors_leave_out_untouched():
    x = np.ones((3, 4))
    out = np.full(3, 7.0)
    with pytest.raises(ValueError, match=r"sum: out: expected shape \(4,\), got \(3,\)"):
        ops.sum(x, axis=0, out=out)
    with pytest.raises(ValueError, match=r"sum: out: expected shape \(3, 1\), got \(3,\)"):
        ops.sum(x, axis=1, keepdims=True, out=out)
    with pytest.raises(TypeError, match="sum: out: expected dtype int64, got float64"):
        ops.sum(np.ones((3, 4), np.int32), axis=1, out=out)
    with pytest.raises(TypeError, match="mean: out: expected dtype float64, got float32"):
        ops.mean(x, axis=1, out=np.zeros(3, np.float32))
    readonly = np.full(3, 7.0)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="max: out: expected a writable array, got a read-only one"):
        ops.max(x, axis=1, out=readonly)
    with pytest.raises(TypeError, match=r"min: argument 'out': expected an arrayport.Array, any array"):
        ops.min(x, axis=1, out=[0, 0, 0])
    with pytest.raises(ValueError, match=r"dot: out: expected shape \(\), got \(3,\)"):
        ops.dot(x, x, out=out)
    np.testing.assert_array_equal(out, 7.0)
    np.testing.assert_array_equal(readonly, 7.0)


@pytest.mark.parametrize("case", ["shift right", "shift left", "reversed", "transposed", "broadcast row"])
def test_out_overlapping_an_input_gives_numpys_answer(case):
    def run(lib, x):
        if case == "shift right":
            lib.add(x[:-1], 1.0, out=x[1:])
        elif case == "shift left":
            lib.multiply(x[1:], 2.0, out=x[:-1])
        elif case == "reversed":
            lib.subtract(x, x[::-1], out=x)
        elif case == "transposed":
            m = x[:16].reshape(4, 4)
            lib.add(m, m.T, out=m)
        else:
            m = x[:16].reshape(4, 4)
            lib.add(m[0], m, out=m)              # row 0 read by every row, and written
    x = np.arange(20, dtype=np.float64)
    want = x.copy()
    run(np, want)
    run(ops, x)
    np.testing.assert_array_equal(x, want)


def test_out_that_is_an_input_element_for_element_is_written_in_place():
    x = np.arange(6, dtype=np.float32)
    assert ops.add(x, x, out=x) is x
    np.testing.assert_array_equal(x, 2 * np.arange(6, dtype=np.float32))
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    ops.multiply(m, m[:, :], out=m)          # another view of the same elements
    np.testing.assert_array_equal(m, np.arange(6, dtype=np.float32).reshape(2, 3) ** 2)


# ---- errors ---------------------------------------------------------------------------------------


def test_errors_name_the_argument_and_leave_out_untouched():
    out = np.full((2, 3), 7.0)
    with pytest.raises(ValueError, match=r"add: operands could not be broadcast together: 'x1' \(2, 3\) 'x2' \(4,\)"):
        ops.add(np.ones((2, 3)), np.ones(4), out=out)
    with pytest.raises(ValueError, match=r"add: out: expected shape \(2, 4\), got \(2, 3\)"):
        ops.add(np.ones((2, 4)), 1.0, out=out)
    with pytest.raises(TypeError, match="add: out: expected dtype float32, got float64"):
        ops.add(np.ones((2, 3), np.float32), np.float32(1), out=out)
    with pytest.raises(OverflowError, match="300 is out of range for uint8"):
        ops.add(np.ones((2, 3), np.uint8), 300, out=np.zeros((2, 3), np.uint8))
    readonly = np.full((2, 3), 7.0)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="add: out: expected a writable array, got a read-only one"):
        ops.add(np.ones((2, 3)), 1.0, out=readonly)
    with pytest.raises(TypeError, match="divide: out: expected dtype float64, got int64"):
        ops.divide(np.ones(3, np.int64), 2, out=np.zeros(3, np.int64))
    np.testing.assert_array_equal(out, 7.0)
    np.testing.assert_array_equal(readonly, 7.0)


def test_bad_inputs():
    with pytest.raises(TypeError, match=r"add: argument 'x2': expected an arrayport.Array, any array \(buffer protocol, __dlpack__ or __cuda_array_interface__\) or a Python scalar, got list"):
        ops.add(np.ones(3), [1, 2, 3])
    with pytest.raises(TypeError, match="add: argument 'x1' has dtype int8, expected one of bool"):
        ops.add(np.ones(3, np.int8), 1)
    with pytest.raises(TypeError, match="astype: dtype int16 is not supported"):
        ops.astype(np.ones(3), "int16")
    with pytest.raises(TypeError, match="sqrt: not supported for dtype bool|negative"):
        ops.negative(np.ones(3, bool))
    with pytest.raises(ValueError, match="max: zero-size array to reduction operation max which has no identity"):
        ops.max(np.zeros((0, 3)))
    with pytest.raises(ValueError, match=r"dot: operands could not be broadcast together: 'x' \(3,\) 'y' \(4,\)"):
        ops.dot(np.ones(3), np.ones(4))
    with pytest.raises(TypeError, match=r"sum: argument 'x': expected an arrayport.Array, any array \(buffer protocol, __dlpack__ or __cuda_array_interface__\), got float"):
        ops.sum(3.0)


REDUCTIONS = ["sum", "mean", "min", "max"]


def reduction(name, x):
    """ops.<name> of x (dot: of x with itself) as a function of the keyword arguments."""
    if name == "dot":
        return lambda **kw: ops.dot(x, x, **kw)
    return lambda **kw: getattr(ops, name)(x, **kw)


@pytest.mark.parametrize("name", REDUCTIONS + ["dot"])
@pytest.mark.parametrize("kwargs,error,message", [
    ({"axis": 2}, ValueError, "axis: 2 is out of bounds for an array of 2 dimensions (expected -2 to 1)"),
    ({"axis": -3}, ValueError, "axis: -3 is out of bounds for an array of 2 dimensions (expected -2 to 1)"),
    ({"axis": 2**70}, ValueError, "axis: 1180591620717411303424 is out of bounds for an array of 2 dimensions"),
    ({"axis": -(2**64)}, ValueError, "axis: -18446744073709551616 is out of bounds"),
    ({"axis": (0, 2**70)}, ValueError, "axis: 1180591620717411303424 is out of bounds"),
    ({"axis": (1, -1)}, ValueError, "axis: expected distinct axes, got axis 1 twice (as 1 and -1)"),
    ({"axis": (0, 0)}, ValueError, "axis: expected distinct axes, got axis 0 twice (as 0 and 0)"),
    ({"axis": 1.0}, TypeError, "axis: expected None, an int or a tuple of ints, got float"),
    ({"axis": True}, TypeError, "axis: expected None, an int or a tuple of ints, got bool"),
    ({"axis": [0, 1]}, TypeError, "axis: expected None, an int or a tuple of ints, got list"),
    ({"axis": (0, "1")}, TypeError, "axis: expected None, an int or a tuple of ints, got a tuple holding str"),
    ({"axis": (0, None)}, TypeError, "axis: expected None, an int or a tuple of ints, got a tuple holding NoneType"),
    ({"keepdims": "yes"}, TypeError, "keepdims: expected a bool, got str"),
    ({"keepdims": 1}, TypeError, "keepdims: expected a bool, got int"),
    ({"keepdims": None}, TypeError, "keepdims: expected a bool, got NoneType"),
    ({"out": 3}, TypeError, "argument 'out': expected an arrayport.Array, any array (buffer protocol, __dlpack__ or __cuda_array_interface__), got int"),
    ({"out": "x"}, TypeError, "argument 'out': expected an arrayport.Array, any array"),
    ({"device": "gpu"}, TypeError, "device: expected an int or an arrayport.cuda.Device, got str"),
    ({"device": 1.5}, TypeError, "device: expected an int or an arrayport.cuda.Device, got float"),
    ({"device": True}, TypeError, "device: expected an int or an arrayport.cuda.Device, got bool"),
])
def test_reduction_parameters_are_checked_and_named(name, kwargs, error, message):
    out = np.full(1, 7.0)
    with pytest.raises(error, match=re.escape(f"{name}: {message}")):
        reduction(name, np.ones((2, 3)))(**kwargs)
    np.testing.assert_array_equal(out, 7.0)


@pytest.mark.parametrize("name", REDUCTIONS + ["dot"])
def test_reduction_parameters_take_numpy_integers_and_bools(name):
    x = rng_array((2, 3, 4), "float64", 1)
    f = reduction(name, x)
    ref = (lambda **kw: np.sum(x * x, **kw)) if name == "dot" else (lambda **kw: getattr(np, name)(x, **kw))
    for kw in [{"axis": np.int64(1)}, {"axis": (np.int32(0), -1)}, {"axis": np.uint8(2), "keepdims": np.True_},
               {"keepdims": np.False_}, {"axis": 1, "keepdims": True}]:
        got, want = f(**kw), ref(**{k: bool(v) if k == "keepdims" else v for k, v in kw.items()})
        assert got.shape == np.shape(want), kw
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    with pytest.raises(ValueError, match=re.escape(f"{name}: axis: 0 is out of bounds for an array of 0 dimensions (it has no axes)")):
        reduction(name, np.float64(2.0))(axis=0)


ELEMENTWISE_CALLS = {
    "add": lambda **kw: ops.add(np.ones(3), 1.0, **kw),
    "subtract": lambda **kw: ops.subtract(np.ones(3), 1.0, **kw),
    "multiply": lambda **kw: ops.multiply(np.ones(3), 1.0, **kw),
    "divide": lambda **kw: ops.divide(np.ones(3), 1.0, **kw),
    "maximum": lambda **kw: ops.maximum(np.ones(3), 1.0, **kw),
    "minimum": lambda **kw: ops.minimum(np.ones(3), 1.0, **kw),
    "negative": lambda **kw: ops.negative(np.ones(3), **kw),
    "square": lambda **kw: ops.square(np.ones(3), **kw),
    "sqrt": lambda **kw: ops.sqrt(np.ones(3), **kw),
    "abs": lambda **kw: ops.abs(np.ones(3), **kw),
    "copy": lambda **kw: ops.copy(np.ones(3), **kw),
    "astype": lambda **kw: ops.astype(np.ones(3), "float64", **kw),
    "where": lambda **kw: ops.where(np.ones(3, bool), np.ones(3), 1.0, **kw),
    "axpy": lambda **kw: ops.axpy(2.0, np.ones(3), np.ones(3), **kw),
}


@pytest.mark.parametrize("name", list(ELEMENTWISE_CALLS))
@pytest.mark.parametrize("kwargs,error,message", [
    ({"out": 3}, TypeError, "argument 'out': expected an arrayport.Array, any array (buffer protocol, __dlpack__ or __cuda_array_interface__), got int"),
    ({"out": [0.0, 0.0, 0.0]}, TypeError, "argument 'out': expected an arrayport.Array, any array"),
    ({"out": np.zeros(4)}, ValueError, "out: expected shape (3,), got (4,)"),
    ({"out": np.zeros(3, np.float32)}, TypeError, "out: expected dtype float64, got float32"),
    ({"device": "gpu"}, TypeError, "device: expected an int or an arrayport.cuda.Device, got str"),
    ({"device": True}, TypeError, "device: expected an int or an arrayport.cuda.Device, got bool"),
])
def test_elementwise_parameters_are_checked_and_named(name, kwargs, error, message):
    with pytest.raises(error, match=re.escape(f"{name}: {message}")):
        ELEMENTWISE_CALLS[name](**kwargs)


def test_scalar_and_parameter_values_are_checked_and_named():
    u8 = np.ones(3, np.uint8)
    for call, error, message in [
        (lambda: ops.add(u8, 300), OverflowError, "add: argument 'x2': 300 is out of range for uint8"),
        (lambda: ops.subtract(-1, u8), OverflowError, "subtract: argument 'x1': -1 is out of range for uint8"),
        (lambda: ops.add(np.ones(3, np.int32), 2**40), OverflowError, "add: argument 'x2': 1099511627776 is out of range for int32"),
        (lambda: ops.add(np.ones(3, np.int64), 2**64), OverflowError, "add: argument 'x2': 18446744073709551616 is out of range for int64"),
        (lambda: ops.where(True, u8, 256), OverflowError, "where: argument 'y': 256 is out of range for uint8"),
        (lambda: ops.axpy(u8, 2, -5), OverflowError, "axpy: argument 'y': -5 is out of range for uint8"),
        (lambda: ops.divide(np.ones(3), 1.0, zero_value="x"), TypeError, "divide: zero_value: expected a number for dtype float64, got str"),
        (lambda: ops.divide(np.ones(3), 1.0, zero_value=1j), TypeError, "divide: zero_value: cannot convert a complex number to float64"),
        (lambda: ops.astype(np.ones(3), None), TypeError, "astype: dtype: expected a dtype name"),
        (lambda: ops.astype(np.ones(3), "int16"), TypeError, "astype: dtype int16 is not supported"),
    ]:
        with pytest.raises(error, match=re.escape(message)):
            call()


# ---- NEP 50: NumPy scalars are strong (0-d arrays), Python's own scalars weak ----------------------


class IntSub(int):
    pass


class FloatSub(float):
    pass


SCALARS = [True, 3, 1.5, 1.5 - 2j, IntSub(3), FloatSub(1.5),
           np.bool_(True), np.uint8(3), np.int32(3), np.int64(3), np.float16(1.5), np.float32(1.5),
           np.float64(1.5), np.complex64(1 + 1j), np.complex128(1 + 1j),
           np.array(3, np.uint8), np.array(1.5, np.float32)]


def same_outcome(call, ref, dtype):
    """call() gives NumPy's ref(): the same dtype and values (to the tolerance of the result's
    dtype or the input's `dtype`, which intermediate products round to), or the same exception."""
    try:
        with np.errstate(all="ignore"):
            want = ref()
    except (TypeError, OverflowError) as e:
        with pytest.raises(type(e)):
            call()
        return
    got = call()
    assert got.dtype == str(np.asarray(want).dtype), (got.dtype, np.asarray(want).dtype)
    tol = max(RTOL.get(str(np.asarray(want).dtype), 0), RTOL.get(dtype, 0))
    np.testing.assert_allclose(to_numpy(got), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("name", list(BINARY))
def test_scalars_promote_as_in_numpy_2(name, dtype):
    x = rng_array((5,), dtype, 7, positive=True)
    for s in SCALARS:
        same_outcome(lambda: getattr(ops, name)(x, s), lambda: BINARY[name](x, s), dtype)
        same_outcome(lambda: getattr(ops, name)(s, x), lambda: BINARY[name](s, x), dtype)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_where_and_axpy_scalars_promote_as_in_numpy_2(dtype):
    x = rng_array((5,), dtype, 7, positive=True)
    cond = np.array([True, False, True, True, False])
    for s in SCALARS:
        same_outcome(lambda: ops.where(cond, x, s), lambda: np.where(cond, x, s), dtype)
        same_outcome(lambda: ops.where(cond, s, x), lambda: np.where(cond, s, x), dtype)
        same_outcome(lambda: ops.axpy(s, x, x), lambda: s * x + x, dtype)
        same_outcome(lambda: ops.axpy(x, s, x), lambda: x * s + x, dtype)
        same_outcome(lambda: ops.axpy(x, x, s), lambda: x * x + s, dtype)
        same_outcome(lambda: ops.axpy(2, s, x), lambda: 2 * s + x, dtype)


def test_axpy_rounds_and_wraps_the_product_in_its_own_dtype():
    # NumPy's a * x + y: the product in uint8 wraps before an int32 y widens the sum; a float16
    # product is rounded to float16 before the add.
    u8 = np.full(4, 200, np.uint8)
    y = np.arange(4, dtype=np.int32)
    np.testing.assert_array_equal(np.asarray(ops.axpy(2, u8, y)), 2 * u8 + y)
    h = np.array([1.0009766, 3.0, 0.1, 65504.0], np.float16)
    with np.errstate(over="ignore"):  # 65504 * 65504 is inf in float16, as NumPy says
        np.testing.assert_array_equal(np.asarray(ops.axpy(h, h, h)), h * h + h)


def test_bridge_errors_name_the_op_and_the_argument():
    with pytest.raises(TypeError, match=r"add: argument 'x2': .*3s.*\(from numpy.ndarray\)"):
        ops.add(np.ones(2), np.zeros(2, "S3"))
    with pytest.raises(ValueError, match=r"add: argument 'x1': unsupported DLPack device type 4"):
        ops.add(Producer(device=(4, 0)), 1.0)


# ---- producers: every argument goes through the consume bridge ------------------------------------


def test_ops_take_a_dlpack_only_producer():
    x = Producer(values=(1.0, 2.0, 3.0, 4.0))
    np.testing.assert_array_equal(np.asarray(ops.add(x, 1)), [2.0, 3.0, 4.0, 5.0])
    assert float(np.asarray(ops.sum(x))) == 10.0
    strided = Producer(values=tuple(float(i) for i in range(6)), shape=(3,), strides=(2,))
    np.testing.assert_array_equal(np.asarray(ops.multiply(strided, 2.0)), [0.0, 4.0, 8.0])
    out = Producer(values=(0.0, 0.0, 0.0, 0.0))
    assert ops.multiply(x, np.full(4, 3.0), out=out) is out
    assert list(out.storage) == [3.0, 6.0, 9.0, 12.0]
    # Every tensor taken is given back, exactly once.
    for p in (x, strided, out):
        assert p.exported > 0 and p.deleted == p.exported


def test_a_read_only_dlpack_producer_is_refused_as_out():
    out = Producer(values=(7.0, 7.0), readonly=True)
    with pytest.raises(ValueError, match="add: out: expected a writable array, got a read-only one"):
        ops.add(np.ones(2), 1.0, out=out)
    assert list(out.storage) == [7.0, 7.0] and out.deleted == out.exported


class CAIOnly:
    """A PyCUDA-style object: only __cuda_array_interface__ (its pointer is never dereferenced)."""

    def __init__(self):
        self.__cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (0x10000, False),
                                         "version": 3, "strides": None, "stream": None}


@pytest.mark.skipif(HAS_GPU, reason="without a GPU only: the pointer is made up")
def test_a_cai_only_object_is_refused_without_a_gpu():
    reason = ap.runtime_info()["reason"]
    with pytest.raises(ap.NoDeviceError, match=r"add: argument 'x1': expected memory the CPU can read "
                       r"\(this machine has no usable CUDA device: .+\), got device memory \(from .*CAIOnly\)") as info:
        ops.add(CAIOnly(), 1.0)
    assert reason in str(info.value)
    with pytest.raises(ap.NoDeviceError, match=r"sum: argument 'x': expected memory the CPU can read"):
        ops.sum(CAIOnly())
    with pytest.raises(ap.NoDeviceError, match=r"add: argument 'out': expected memory the CPU can read"):
        ops.add(np.ones(4, np.float32), 1.0, out=CAIOnly())


def test_public_names():
    assert ap.ops is ops
    for name in ops.__all__:
        assert callable(getattr(ops, name))


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


@needs_gpu
def test_gpu_mixing_device_and_host_memory_is_an_error():
    dev = to_gpu(np.ones(3, np.float32), "device")
    with pytest.raises(ValueError, match="add: 'x1' is in device memory, which the CPU cannot read, and 'x2' in pageable host memory"):
        ops.add(dev, np.ones(3, np.float32))


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
