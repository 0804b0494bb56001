"""arrayport.ops against NumPy: every op x dtype x layout (contiguous, broadcast, strided, scalar)
and reductions over every axis form. The error cases, NEP 50 and producers: test_ops_errors.py;
on a GPU and with device=: test_ops_gpu.py. The references: ops_reference.py.

Tolerances (relative, documented in arrayport.ops): integers and bool exact; float64 1e-12;
float32 / complex64 2e-6 (element-wise) and 1e-5 (reductions: pairwise vs NumPy's pairwise with
another blocking); float16 1e-3 (one rounding of a float32 result, as NumPy does); bfloat16 1e-2
(NumPy has no bfloat16: compared against float32 arithmetic on the bfloat16-rounded inputs).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import arrayport as ap
from arrayport import ops
from ops_reference import (ALL_DTYPES, BINARY, LAYOUTS, NUMPY_DTYPES, RED_RTOL, UNARY,
                           binary_operands, check, make, ref_input, reduce_ref, rng_array,
                           supported, to_numpy)


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


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_sqrt_is_c99_csqrt_at_every_special_value(dtype):
    # NumPy's sqrt is C99's csqrt (Annex G): infinities, NaNs, signed zeros, and no overflow near
    # the largest finite values. Every pair of these as (re, im), each part compared exactly where
    # NumPy gives 0, an infinity or NaN (signs included), else to the dtype's tolerance.
    big = float(np.finfo(dtype).max) / 2
    values = [0.0, -0.0, 1.0, -1.0, 2.5, -3.0, 1e-310, -1e-310, big, -big, np.inf, -np.inf, np.nan]
    z = np.array([complex(r, i) for r in values for i in values], dtype=dtype)
    with np.errstate(all="ignore"):
        want = np.sqrt(z)
    got = np.asarray(ops.sqrt(z))
    rtol = 2e-6 if dtype == "complex64" else 1e-12
    for x, g, w in zip(z, got, want):
        for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
            if np.isnan(wp):
                assert np.isnan(gp), (x, g, w)
            elif np.isinf(wp) or wp == 0:
                assert gp == wp and np.signbit(gp) == np.signbit(wp), (x, g, w)
            else:
                assert gp == pytest.approx(wp, rel=rtol), (x, g, w)


@pytest.mark.parametrize("dtype, fill", [("uint8", 200), ("int32", 2**30), ("bool", True)])
def test_dot_has_the_dtype_of_the_product_as_numpy_dot_has(dtype, fill):
    # np.dot and np.vecdot sum in the dtype of x * y: uint8 and int32 wrap, bool is any(x & y).
    x, y = np.full(4, fill, dtype), np.full(4, 2 if dtype != "bool" else True, dtype)
    want = np.dot(x, y)
    got = ops.dot(x, y)
    assert got.dtype == np.asarray(want).dtype.name
    assert np.asarray(got) == want


@pytest.mark.parametrize("name", ["sum", "mean", "min", "max"])
def test_a_reduction_into_an_out_whose_elements_coincide_is_refused(name):
    # NumPy accumulates into such an out= in its loop's order (sum: 66 here); arrayport's result
    # would depend on the order of its writes: a ValueError naming out=, the memory untouched.
    from numpy.lib.stride_tricks import as_strided
    base = np.full(1, 7.0)
    with pytest.raises(ValueError, match=rf"^{name}: out: expected an array whose elements are "
                                         r"distinct, got one where several share memory"):
        getattr(ops, name)(np.arange(12.0).reshape(3, 4), axis=0, out=as_strided(base, (4,), (0,)))
    assert base[0] == 7.0


@pytest.mark.parametrize("name", ["add", "multiply", "maximum"])
def test_an_out_whose_elements_coincide_over_an_input_matches_numpy(name):
    # out= with a zero stride writes several results to one element; where that element is also
    # an input, the inputs are read before any write (through a temporary), as NumPy does.
    from numpy.lib.stride_tricks import as_strided
    want_x = np.arange(12.0).reshape(3, 4)
    got_x = want_x.copy()
    getattr(np, name)(np.ones((3, 4)), want_x[0], out=as_strided(want_x, (3, 4), (0, 8)))
    getattr(ops, name)(np.ones((3, 4)), got_x[0], out=as_strided(got_x, (3, 4), (0, 8)))
    assert np.array_equal(got_x, want_x)


@pytest.mark.parametrize("x, lo, hi", [
    (300, np.array([1], np.uint8), np.array([5], np.uint8)),   # x is an array to np.clip: int64
    (2.5, np.array([1], np.uint8), np.array([5], np.uint8)),
    (True, np.array([1], np.uint8), 0),
    (np.array([0, 9, 250], np.uint8), -1, 300),                # bounds that cannot act: the range
    (np.array([0, 9, 250], np.uint8), None, 300),
    (np.array([-5, 9], np.int64), -2**70, 2**70),
    (np.array([0, 9], np.uint8), None, -1),                    # one that would act: OverflowError
    (np.array([0, 9], np.uint8), 300, None),
])
def test_clip_takes_scalars_and_out_of_range_bounds_as_numpy_does(x, lo, hi):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.clip(x, lo, hi)
    except OverflowError:
        with pytest.raises(OverflowError, match=r"^clip: argument '(min|max)': "):
            ops.clip(x, lo, hi)
        return
    got = np.asarray(ops.clip(x, lo, hi))
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


@pytest.mark.parametrize("x1, x2", [
    (np.zeros((0, 3), np.int64), -1),                        # an empty result: no element raises
    (np.zeros((0, 3), np.int64), np.array(-39)),
    (2, np.array([-1, 2])),                                  # a negative exponent met: ValueError
    (np.arange(3, dtype=np.int32), -1),
    (np.arange(3, dtype=np.uint8), -1),                      # -1 as uint8: OverflowError
    (np.arange(3), np.array([1.5])),                         # a float exponent: floats
    (2, -1),                                                 # two Python ints
    (np.int64(2), np.int32(-1)),                             # 0-d arrays
    (np.array([True, False]), np.array([-1], np.int32)),
    (np.arange(6).reshape(2, 3).T, np.array([[2, -1]])),     # views, the negative not first
    (np.arange(6).reshape(2, 3).T, np.array([[2, 0]]).T[::-1].T),
    (2**40, np.array([-1], np.int32)),                       # the base's OverflowError first
    (np.arange(3, dtype=np.int32), np.array([0, 1, 2], np.uint8)),
])
def test_power_refuses_negative_integer_exponents_only_where_numpy_meets_one(x1, x2):
    try:
        with np.errstate(all="ignore"):
            want = np.power(x1, x2)
    except (ValueError, OverflowError) as e:
        with pytest.raises(type(e)):
            ops.power(x1, x2)
        return
    got = np.asarray(ops.power(x1, x2))
    assert got.dtype == want.dtype and got.shape == want.shape and got.tolist() == want.tolist()
