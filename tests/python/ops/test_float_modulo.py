"""Float remainder and floor_divide, bit for bit against NumPy: both are NumPy's npy_divmod over an
exact fmod (on x86-64 hosts the x87 partial remainder, as NumPy's compiled loops use), so every
finite result is determined. Swept over every pairing of special values, random bit patterns of
every exponent, and lengths around the vector widths, on each memory kind."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import arrayport as ap
from arrayport import ops
from conftest import HAS_GPU

MEMORY = ["host"] + (["device", "managed"] if HAS_GPU else [])
SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 3.0, -7.5, 1e-30, -1e-30, 1e30, -1e30, np.inf,
           -np.inf, np.nan]
OPS = ["remainder", "floor_divide"]


def specials(dtype):
    f = np.finfo(dtype)
    values = SPECIAL + [float(f.tiny), float(f.smallest_subnormal), float(f.max), -float(f.max)]
    a, b = zip(*itertools.product(values, repeat=2))
    return np.array(a, dtype), np.array(b, dtype)


def random_bits(dtype, n, seed):
    """Floats of every exponent, finite: random bit patterns with the NaN/inf exponent avoided."""
    rng = np.random.default_rng(seed)
    bits = np.dtype(dtype).itemsize * 8
    u = np.dtype(f"uint{bits}")
    raw = rng.integers(0, np.iinfo(u).max, n, dtype=u, endpoint=True).view(dtype)
    return np.where(np.isfinite(raw), raw, np.asarray(1.5, dtype))


def assert_bits(got, want, memory):
    got = got.get() if isinstance(got, ap.Array) else np.asarray(got)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    # Same bits, the sign of zero included (NaN signs aside: the C library's, not specified).
    np.testing.assert_array_equal(got[ok].view(f"u{got.itemsize}"),
                                  want[ok].view(f"u{want.itemsize}"))


def placed(x, memory):
    return x if memory == "host" else ap.asarray(x, memory=memory)


@pytest.mark.parametrize("memory", MEMORY)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", OPS)
def test_special_pairs_are_numpys_bits(name, dtype, memory):
    a, b = specials(dtype)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
    assert_bits(getattr(ops, name)(placed(a, memory), placed(b, memory)), want, memory)


@pytest.mark.parametrize("memory", MEMORY)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("seed", range(4))
def test_random_exponents_are_numpys_bits(name, dtype, memory, seed):
    a, b = random_bits(dtype, 4099, seed), random_bits(dtype, 4099, seed + 100)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
    assert_bits(getattr(ops, name)(placed(a, memory), placed(b, memory)), want, memory)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 7, 8, 9, 15, 16, 17, 31, 33, 127, 129])
def test_lengths_strides_and_scalars_are_numpys_bits(dtype, n):
    rng = np.random.default_rng(n)
    a = rng.uniform(-50, 50, 2 * n).astype(dtype)
    b = rng.uniform(-3, 3, 2 * n).astype(dtype)
    for name in OPS:
        with np.errstate(all="ignore"):
            for x, y in [(a[:n], b[:n]), (a[::2], b[1::2]), (a[:n], b[0]),
                         (a[0], b[:n])]:
                want = np.asarray(getattr(np, name)(x, y))
                got = getattr(ops, name)(x, y)
                assert_bits(got, want.astype(dtype), "host")
