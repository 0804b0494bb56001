"""exp, log, sin, cos, tanh and power where their implementations branch: complex arguments over
every pairing of special components (C99 Annex G's cases), and float32 and float64 over the
vector loops' length edges (AVX2 and AVX-512 lanes) with special values in every lane position.

On the CPU complex results are the C library's, as NumPy's: equal bit for bit up to NaN signs.
On a GPU (libcu++, glibc's tanh algorithm) they must agree in which components are NaN or
infinite and be within the dtype's tolerance elsewhere. float32 and float64 results are within
2e-6 and 1e-12 relative (the vector loops are libmvec's, NumPy's its own), with NaN and infinity
where NumPy has them."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import arrayport as ap
from arrayport import ops
from conftest import HAS_GPU

MEMORY = ["host"] + (["device", "managed"] if HAS_GPU else [])
UNARY = ["exp", "log", "sin", "cos", "tanh"]
COMPONENTS = [0.0, -0.0, 0.5, -0.5, 1.0, -2.0, 3.0, 30.0, -30.0, 100.0, 800.0, -800.0, 1e-40,
              np.inf, -np.inf, np.nan]
RTOL = {"complex64": 2e-6, "complex128": 1e-12, "float32": 2e-6, "float64": 1e-12}


def complex_grid(dtype):
    pairs = list(itertools.product(COMPONENTS, repeat=2))
    z = np.empty(len(pairs), dtype)
    z.real, z.imag = zip(*pairs)  # set, not computed: no arithmetic changes a special component
    return z


def placed(x, memory):
    return x if memory == "host" else ap.asarray(x, memory=memory)


def host(a):
    return a.get() if isinstance(a, ap.Array) else np.asarray(a)


def assert_matches(got, want, dtype, memory):
    got = host(got)
    assert got.dtype == want.dtype
    if memory == "host" and dtype.startswith("complex"):
        np.testing.assert_array_equal(got, want)  # NaN matches NaN: bit equality up to NaN signs
        return
    parts = (lambda v: (v.real, v.imag)) if dtype.startswith("complex") else (lambda v: (v,))
    for g, w in zip(parts(got), parts(want)):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(np.isposinf(g), np.isposinf(w))
        np.testing.assert_array_equal(np.isneginf(g), np.isneginf(w))
    finite = np.isfinite(got) & np.isfinite(want)
    # Relative to the element's modulus: a component near zero carries its partner's error.
    err = np.abs(got[finite] - want[finite])
    scale = np.maximum(np.abs(want[finite]), np.finfo(got.real.dtype).tiny)
    assert np.all(err <= RTOL[dtype] * scale), np.max(err / scale)


@pytest.mark.parametrize("memory", MEMORY)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", UNARY)
def test_complex_functions_at_special_components_match_numpy(name, dtype, memory):
    z = complex_grid(dtype)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(z)
    assert_matches(getattr(ops, name)(placed(z, memory)), want, dtype, memory)


@pytest.mark.parametrize("memory", MEMORY)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_power_at_special_bases_and_exponents_matches_numpy(dtype, memory):
    base = complex_grid(dtype)
    exps = np.array([0, 1, 2, 3, -1, 7, 99, 100, -99, 0.5, 1.5 - 2j, 2j, -3 + 0.25j, np.inf,
                     complex(np.nan, 0), complex(0, np.nan)], dtype)
    b, e = np.repeat(base, exps.size), np.tile(exps, base.size)
    with np.errstate(all="ignore"):
        want = np.power(b, e)
    got = ops.power(placed(b, memory), placed(e, memory))
    if memory != "host":  # repeated products, and exp(e log b), round differently on the GPU
        got = host(got)
        has_nan = lambda v: np.isnan(v.real) | np.isnan(v.imag)
        np.testing.assert_array_equal(has_nan(got)[has_nan(want)], True)
        ok = np.isfinite(want) & (np.abs(want) < 1e30)  # overflowing ones may round to inf
        assert not has_nan(got[ok]).any()
        scale = np.maximum(np.abs(want[ok]), 1)
        assert np.all(np.abs(got[ok] - want[ok]) <= 64 * RTOL[dtype] * scale)
        return
    assert_matches(got, want, dtype, memory)


SPECIALS = {
    "float32": [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 1e-45, 88.8, -104.0, 1e30],
    "float64": [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 5e-324, 709.8, -745.2, 1e300],
}


@pytest.mark.parametrize("memory", MEMORY)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", UNARY)
def test_vector_loops_at_every_lane_edge_match_numpy(name, dtype, memory):
    # Lanes: 8 (AVX2) and 16 (AVX-512) float32, 4 and 8 float64.
    rng = np.random.default_rng(7)
    specials = np.array(SPECIALS[dtype], dtype)
    for n in [1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, (1 << 16) - 1,
              (1 << 16) + 9]:
        x = rng.uniform(-20, 20, n).astype(dtype)
        at = rng.integers(0, n, size=min(n, 6))  # specials in assorted lanes, the tail's too
        x[at] = specials[rng.integers(0, specials.size, size=at.size)]
        with np.errstate(all="ignore"):
            want = getattr(np, name)(x)
        assert_matches(getattr(ops, name)(placed(x, memory)), want, dtype, memory)
        # In place from an address one element past a vector's: loads and stores are unaligned.
        y = np.empty(n + 1, dtype)[1:]
        y[...] = x
        getattr(ops, name)(y, out=y)
        assert_matches(y, want, dtype, "host")


POWER_SPECIALS = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -3.0, 3.0, np.inf, -np.inf, np.nan, 1e-30,
                  1e30]


@pytest.mark.parametrize("memory", MEMORY)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_power_at_every_lane_edge_matches_numpy(dtype, memory):
    # Arrays on both sides and a scalar on either (the vector loop repeats it), over lengths
    # around the lanes, with special bases and exponents (negative bases with integer exponents).
    rng = np.random.default_rng(11)
    specials = np.array(POWER_SPECIALS, dtype)
    for n in [1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 65, (1 << 14) + 3]:
        b = rng.uniform(-4, 4, n).astype(dtype)
        e = rng.integers(-6, 7, n).astype(dtype) + (rng.random(n) < 0.5) * 0.5
        for x in (b, e):
            at = rng.integers(0, n, size=min(n, 6))
            x[at] = specials[rng.integers(0, specials.size, size=at.size)]
        with np.errstate(all="ignore"):
            # Python scalars, -0.0 among them: repeated across the lanes with their sign.
            cases = [((b, e), np.power(b, e))] + [
                ((b, s), np.power(b, dtype_scalar(s, dtype))) for s in (2.5, -0.0, -1.0)] + [
                ((s, e), np.power(dtype_scalar(s, dtype), e)) for s in (1.5, -0.0, -np.inf)]
        for (x, y), want in cases:
            got = ops.power(placed(x, memory) if isinstance(x, np.ndarray) else x,
                            placed(y, memory) if isinstance(y, np.ndarray) else y)
            assert_matches(got, want, dtype, memory)
            if memory == "host":  # zeros and infinities keep NumPy's sign (NaNs' may differ)
                signed = ~np.isnan(want)
                np.testing.assert_array_equal(np.signbit(host(got))[signed],
                                              np.signbit(want)[signed])


def dtype_scalar(v, dtype):
    return np.dtype(dtype).type(v)


def float32_power_cases(rng, n):
    """Bases and exponents over every region float32 power branches on: any positive normal or
    subnormal base with exponents of every magnitude, bases within a few ulps of 1 with exponents
    that take the result to the float range's ends, results near overflow, underflow and the
    subnormals, negative bases with integer exponents, and special values."""
    bits = rng.integers(1, 0x7F800000, n, dtype=np.uint32)  # every positive finite float
    x1 = bits.view(np.float32)
    y1 = (rng.uniform(-1, 1, n) * 2.0 ** rng.integers(-30, 40, n)).astype(np.float32)
    x2 = (1 + rng.integers(-64, 65, n) * 2.0 ** -23).astype(np.float32)
    y2 = (rng.uniform(-1, 1, n) * 2.0 ** rng.integers(20, 32, n)).astype(np.float32)
    # x^y near 2^128 and 2^-149: y = target / log2 x, a few ulps either side.
    x3 = rng.uniform(0.01, 100, n).astype(np.float32)
    target = rng.choice([127.99, 128.01, -125.9, -126.1, -148.9, -149.6], n)
    with np.errstate(all="ignore"):
        y3 = (target / np.log2(x3.astype(np.float64))).astype(np.float32)
    x4 = -rng.uniform(0.1, 10, n).astype(np.float32)
    y4 = rng.integers(-40, 41, n).astype(np.float32)
    x5 = rng.uniform(0, 4, n).astype(np.float32)  # exponents of any finite magnitude
    y5 = rng.integers(0, 0x7F800000, n, dtype=np.uint32).view(np.float32) * rng.choice([-1, 1], n)
    specials = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, 2.0 ** -126, 3e38],
                        np.float32)
    x6, y6 = (v.ravel() for v in np.meshgrid(specials, np.concatenate([specials, [0.5, -3.0]])))
    return (np.concatenate(v).astype(np.float32) for v in ((x1, x2, x3, x4, x5, x6),
                                                           (y1, y2, y3, y4, y5, y6)))


def ulps_apart(got, want):
    """Distance in float32 ulps, 0 where both are NaN (the integers order floats by value)."""
    g, w = (np.where(v < 0, np.int64(-(2**31)) - v, v) for v in
            (a.view(np.int32).astype(np.int64) for a in (got, want)))
    return np.where(np.isnan(got) & np.isnan(want), 0, np.abs(g - w))


@pytest.mark.parametrize("scalar", [None, "base", "exponent"])
def test_float32_power_is_within_an_ulp_of_the_exact_power(scalar):
    # The exact power is float64's rounded once more (NumPy's float64 power is within an ulp of
    # float64); arrayport's float32 power on AVX-512 is its own loop, glibc's powf elsewhere.
    rng = np.random.default_rng(5)
    x, y = float32_power_cases(rng, 20_000)
    if scalar == "base":
        x = np.float32(rng.choice(x[np.isfinite(x) & (x > 0)]))
    elif scalar == "exponent":
        y = np.float32(rng.choice([0.5, -2.75, 1e-7, 3e4]))
    # Arrays on both sides: NumPy takes a scalar exponent of 0.5 as sqrt (NaN for -inf, -0.0 for
    # -0.0, where C's pow and the Array API give inf and 0.0).
    xs, ys = (np.array(v, np.float64) for v in np.broadcast_arrays(x, y))
    with np.errstate(all="ignore"):
        want = np.power(xs, ys).astype(np.float32)
    got = host(ops.power(x, y))
    assert got.dtype == np.float32
    far = ulps_apart(got, want)
    worst = np.argmax(far)
    assert far[worst] <= 1, (np.broadcast_to(x, got.shape)[worst],
                             np.broadcast_to(y, got.shape)[worst], got[worst], want[worst])
    signed = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got)[signed], np.signbit(want)[signed])
    for k, v in enumerate((x, y)):  # in place, over either operand: the same bits
        if np.ndim(v):
            args = [x, y]
            args[k] = inout = v.copy()
            ops.power(*args, out=inout)
            np.testing.assert_array_equal(inout, got)
