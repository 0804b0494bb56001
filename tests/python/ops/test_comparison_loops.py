"""Float comparisons and tests (bool results) at every position of the CPU's 32-element vector
steps, and maximum, minimum and clip (vector selects, two vectors a step): lengths 0..100 and
around 2^16, start offsets, special values (NaN, infinities, signed zeros, subnormals, the
extremes) in every lane, array and scalar operands, and out=."""

from __future__ import annotations

import numpy as np
import pytest

from arrayport import ops

BINARY = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
UNARY = ["isnan", "isinf", "isfinite"]
DTYPES = ["float32", "float64"]


def special_values(dtype):
    f = np.finfo(dtype)
    return np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, f.max, -f.max,
                     f.tiny, f.smallest_subnormal, -f.smallest_subnormal, 2.5], dtype)


def operands(dtype, n, seed):
    """x, y of length n: random small integers (so equal pairs are common) with specials
    scattered over every lane."""
    rng = np.random.default_rng(seed)
    sv = special_values(dtype)
    x = rng.integers(-3, 4, n).astype(dtype)
    y = rng.integers(-3, 4, n).astype(dtype)
    for v in (x, y):
        where = rng.random(n) < 0.3
        v[where] = rng.choice(sv, int(where.sum()))
    return x, y


def same(got, want):
    got = got.get() if hasattr(got, "get") else np.asarray(got)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BINARY + UNARY)
def test_every_length_and_offset_matches_numpy(name, dtype):
    for n in list(range(101)) + [65535, 65536, 65537, 100003]:
        for off in (0, 1, 3):
            x, y = operands(dtype, n + off, n)
            x, y = x[off:], y[off:]
            args = (x,) if name in UNARY else (x, y)
            same(getattr(ops, name)(*args), getattr(np, name)(*args))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_scalar_operands_match_numpy(name, dtype):
    x, _ = operands(dtype, 97, 1)
    for s in special_values(dtype):
        s = s.item()
        same(getattr(ops, name)(x, s), getattr(np, name)(x, np.asarray(s, dtype)))
        same(getattr(ops, name)(s, x), getattr(np, name)(np.asarray(s, dtype), x))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BINARY + UNARY)
def test_out_matches_numpy(name, dtype):
    x, y = operands(dtype, 1000, 2)
    args = (x,) if name in UNARY else (x, y)
    out = np.ones(1000, bool)
    r = getattr(ops, name)(*args, out=out)
    want = getattr(np, name)(*args)
    np.testing.assert_array_equal(out, want)
    same(r, want)


SELECTS = ["maximum", "minimum"]


def scalar_path(x):
    """x as a strided view: the strided loop, which applies the functors element by element."""
    return np.repeat(x, 2)[::2]


def same_bits(got, want):
    got = got.get() if hasattr(got, "get") else np.asarray(got)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", SELECTS)
def test_selects_match_numpy_and_their_functor_bit_for_bit(name, dtype):
    # NumPy orders +0.0 and -0.0 differently on different CPUs (its AVX-512 loop returns the
    # second operand of an equal pair): values are compared with NumPy, bits with the functor.
    for n in list(range(40)) + [65535, 65536, 65537]:
        for off in (0, 1):
            x, y = operands(dtype, n + off, n)
            x, y = x[off:], y[off:]
            got = getattr(ops, name)(x, y)
            np.testing.assert_array_equal(np.asarray(got), getattr(np, name)(x, y))
            same_bits(got, np.asarray(getattr(ops, name)(scalar_path(x), scalar_path(y))))


@pytest.mark.parametrize("dtype", DTYPES)
def test_selects_with_scalars_keep_signed_zeros(dtype):
    x, _ = operands(dtype, 97, 3)
    for s in special_values(dtype):
        s = s.item()  # a Python float: repeated across the vector's lanes, -0.0 as -0.0
        for name in SELECTS:
            for args in ((x, s), (s, x)):
                got = getattr(ops, name)(*args)
                ref = getattr(ops, name)(*(scalar_path(a) if isinstance(a, np.ndarray) else a
                                           for a in args))
                same_bits(got, np.asarray(ref))
        for lo, hi in ((s, 1.0), (-1.0, s), (s, s)):
            got = ops.clip(x, lo, hi)
            same_bits(got, np.asarray(ops.clip(scalar_path(x), lo, hi)))
            np.testing.assert_array_equal(np.asarray(got), np.clip(x, dtype_of(lo, dtype),
                                                                   dtype_of(hi, dtype)))


def dtype_of(v, dtype):
    return np.asarray(v, dtype)
