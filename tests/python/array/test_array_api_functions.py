"""The array API functions arrayport composes from its views, copies and ops (array_api's
manipulation and math modules) against NumPy: every dtype the namespace holds, shapes with empty
and unit extents, C-contiguous, transposed and reversed layouts, every axis; on host memory and,
with a GPU, on device and managed memory. Rounding and sign are bit-exact, -0.0 and NaN
included; the statistics and vecdot agree to a few ulps (NumPy's vecdot sums in another order)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import HAS_GPU

xp = pytest.importorskip("arrayport.array_api")

DEVICES = [("cpu", 0)] + ([("cuda", 0), ("cuda_managed", 0)] if HAS_GPU else [])
DTYPES = ["bool", "uint8", "int32", "int64", "float32", "float64", "complex64", "complex128"]
REAL = ["uint8", "int32", "int64", "float32", "float64"]
SETTINGS = settings(max_examples=250, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
shapes = st.lists(st.integers(0, 4), min_size=1, max_size=4).map(tuple)
LAYOUTS = ["c", "transposed", "reversed"]
SPECIALS = [-0.0, 0.0, np.nan, np.inf, -np.inf, 0.5, -0.5, 1.5, -2.5, 2.0**53 + 2, -(2.0**60)]


def host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def values(shape, dtype, rng):
    """Values of `dtype` with the special floats (signed zeros, NaN, infinities, halves, beyond
    2^53) among them."""
    n = int(np.prod(shape))
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dtype in ("uint8", "int32", "int64"):
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi, n).astype(dtype).reshape(shape)
    v = rng.uniform(-8, 8, n)
    k = rng.integers(0, len(SPECIALS), n)
    pick = rng.random(n) < 0.3
    v[pick] = np.array(SPECIALS)[k[pick]]
    if dtype.startswith("complex"):
        w = rng.uniform(-8, 8, n)
        return (v + 1j * w).astype(dtype).reshape(shape)
    return v.astype(dtype).reshape(shape)


def laid_out(n, layout, device):
    """n on `device` in `layout`, and the NumPy array of the same view."""
    a = xp.asarray(n, device=device)
    if layout == "transposed" and n.ndim >= 2:
        return xp.matrix_transpose(a), np.swapaxes(n, -1, -2)
    if layout == "reversed" and n.ndim >= 1:
        return a[::-1], n[::-1]
    return a, n


def same(got, expected, exact=True):
    g = host(got)
    assert g.shape == expected.shape, (g.shape, expected.shape)
    assert g.dtype == expected.dtype, (g.dtype, expected.dtype)
    if exact:
        np.testing.assert_array_equal(g, expected)
        if g.dtype.kind == "f":  # the signs of zeros too
            # Not of NaNs: IEEE 754 leaves the sign of an invalid operation's NaN (inf - inf)
            # open; x86 sets it, CUDA does not. test_ops_gpu checks the signs NaNs carry through.
            kept = ~np.isnan(expected)
            np.testing.assert_array_equal(np.signbit(g)[kept], np.signbit(expected)[kept])
    else:
        tol = 2e-5 if g.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(g, expected, rtol=tol, atol=tol)


case = st.tuples(shapes, st.sampled_from(LAYOUTS), st.integers(0, 2**32 - 1))


@SETTINGS
@given(c=case, dtype=st.sampled_from(REAL), device=st.sampled_from(DEVICES))
def test_rounding_and_sign_are_numpys_bits(c, dtype, device):
    shape, layout, seed = c
    a, n = laid_out(values(shape, dtype, np.random.default_rng(seed)), layout, device)
    with np.errstate(all="ignore"):
        for name in ("floor", "ceil", "trunc", "round", "sign"):
            same(getattr(xp, name)(a), getattr(np, name)(n))
        if dtype.startswith("float"):
            same(xp.reciprocal(a), np.reciprocal(n))


@SETTINGS
@given(c=case, dtype=st.sampled_from(["complex64", "complex128"]), device=st.sampled_from(DEVICES))
def test_complex_sign_conj_and_reciprocal_match_numpy(c, dtype, device):
    shape, layout, seed = c
    a, n = laid_out(values(shape, dtype, np.random.default_rng(seed)), layout, device)
    same(xp.conj(a), np.conj(n))
    same(xp.round(a), np.round(n))  # part by part: bit-exact, signed zeros and NaNs included
    finite = np.isfinite(n)  # NumPy's x/|x| and ours differ in ulps, and at infinities in NaNs
    with np.errstate(all="ignore"):
        same(host(xp.sign(a))[finite], np.sign(n)[finite], exact=False)
        same(host(xp.reciprocal(a))[finite], np.reciprocal(n)[finite], exact=False)
    assert host(xp.sign(xp.asarray(np.zeros(2, dtype), device=device))).tolist() == [0, 0]


@SETTINGS
@given(c=case, dtype=st.sampled_from(DTYPES), data=st.data(), device=st.sampled_from(DEVICES))
def test_flip_roll_moveaxis_unstack_match_numpy(c, dtype, data, device):
    shape, layout, seed = c
    a, n = laid_out(values(shape, dtype, np.random.default_rng(seed)), layout, device)
    nd = n.ndim
    axes = data.draw(st.none() | st.integers(-nd, nd - 1) |
                     st.sets(st.integers(0, nd - 1), min_size=1).map(tuple))
    same(xp.flip(a, axis=axes), np.flip(n, axis=axes))
    shift = data.draw(st.integers(-9, 9))
    if axes is None:
        same(xp.roll(a, shift), np.roll(n, shift))
    else:
        shifts = shift if isinstance(axes, int) else tuple(
            data.draw(st.integers(-9, 9)) for _ in axes)
        same(xp.roll(a, shifts, axis=axes), np.roll(n, shifts, axis=axes))
    rep_axis = data.draw(st.none() | st.integers(-nd, nd - 1))
    length = n.size if rep_axis is None else n.shape[rep_axis]
    repeats = data.draw(st.integers(0, 3) | st.lists(st.integers(0, 3), min_size=length,
                                                     max_size=length).map(
        lambda v: np.array(v, dtype=np.int64)))
    if rep_axis is None and not isinstance(repeats, int):
        same(xp.repeat(a, repeats), np.repeat(n, repeats))
    else:
        same(xp.repeat(a, repeats, axis=rep_axis), np.repeat(n, repeats, axis=rep_axis))
    src = data.draw(st.integers(-nd, nd - 1))
    dst = data.draw(st.integers(-nd, nd - 1))
    same(xp.moveaxis(a, src, dst), np.moveaxis(n, src, dst))
    axis = data.draw(st.integers(-nd, nd - 1))
    parts = xp.unstack(a, axis=axis)
    assert len(parts) == n.shape[axis]
    for p, q in zip(parts, np.moveaxis(n, axis, 0)):
        same(p, q)


@SETTINGS
@given(c=case, dtypes=st.lists(st.sampled_from(DTYPES), min_size=1, max_size=3),
       data=st.data(), device=st.sampled_from(DEVICES))
def test_concat_and_stack_match_numpy(c, dtypes, data, device):
    shape, layout, seed = c
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    pairs = []
    for dt in dtypes:  # one shape but along `axis`, each in its own dtype and layout
        s = list(shape)
        s[axis] = data.draw(st.integers(0, 3))
        n = values(tuple(s), dt, rng)
        a = xp.asarray(n, device=device)
        pairs.append((a[::-1], n[::-1]) if layout == "reversed" else (a, n))
    same(xp.concat([a for a, _ in pairs], axis=axis), np.concat([n for _, n in pairs], axis=axis))
    same(xp.concat([a for a, _ in pairs], axis=None), np.concat([n for _, n in pairs], axis=None))
    n0 = pairs[0][1]
    equal = [(xp.asarray(n0, device=device), n0)] * len(dtypes)
    at = data.draw(st.integers(-n0.ndim - 1, n0.ndim))
    same(xp.stack([a for a, _ in equal], axis=at), np.stack([n for _, n in equal], axis=at))


@SETTINGS
@given(c=case, dtype=st.sampled_from(DTYPES), data=st.data(), device=st.sampled_from(DEVICES))
def test_tile_tril_triu_meshgrid_match_numpy(c, dtype, data, device):
    shape, layout, seed = c
    a, n = laid_out(values(shape, dtype, np.random.default_rng(seed)), layout, device)
    reps = tuple(data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=5)))
    same(xp.tile(a, reps), np.tile(n, reps))
    if n.ndim >= 2:
        k = data.draw(st.integers(-5, 5))
        same(xp.tril(a, k=k), np.tril(n, k))
        same(xp.triu(a, k=k), np.triu(n, k))
    ones = [values((e,), dtype, np.random.default_rng(seed + i)) for i, e in enumerate(shape)]
    for indexing in ("xy", "ij"):
        got = xp.meshgrid(*[xp.asarray(v, device=device) for v in ones], indexing=indexing)
        for g, e in zip(got, np.meshgrid(*ones, indexing=indexing)):
            same(g, e)


@SETTINGS
@given(c=case, dtype=st.sampled_from(DTYPES), data=st.data(), device=st.sampled_from(DEVICES))
def test_statistics_and_vecdot_match_numpy(c, dtype, data, device):
    shape, layout, seed = c
    rng = np.random.default_rng(seed)
    n = values(shape, dtype, rng)
    if dtype.startswith(("float", "complex")):
        n[~np.isfinite(n)] = 1  # the statistics of infinities are NaN either way
    a, n = laid_out(n, layout, device)
    nd = n.ndim
    axis = data.draw(st.none() | st.integers(-nd, nd - 1) |
                     st.sets(st.integers(0, nd - 1), min_size=1).map(tuple))
    keep = data.draw(st.booleans())
    same(xp.count_nonzero(a, axis=axis, keepdims=keep), np.asarray(
        np.count_nonzero(n, axis=axis, keepdims=keep), dtype="int64"))
    if dtype.startswith(("float", "complex")):
        corr = data.draw(st.sampled_from([0, 1, 0.5]))
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "degrees of freedom <= 0"
            for name in ("var", "std"):
                got = getattr(xp, name)(a, axis=axis, correction=corr, keepdims=keep)
                same(got, np.asarray(getattr(np, name)(n, axis=axis, ddof=corr, keepdims=keep)),
                     exact=False)
    if dtype != "bool" and nd >= 1:
        m = values(n.shape[-1:], dtype, rng)
        with np.errstate(all="ignore"):
            expected = np.vecdot(n, m)
        finite = np.isfinite(expected)
        got = host(xp.vecdot(a, xp.asarray(m, device=device)))
        assert got.dtype == expected.dtype
        same(np.asarray(got)[finite], np.asarray(expected)[finite],
             exact=dtype in ("uint8", "int32", "int64"))


@SETTINGS
@given(c=case, dtype=st.sampled_from(DTYPES), data=st.data(), device=st.sampled_from(DEVICES))
def test_diff_matches_numpy(c, dtype, data, device):
    shape, layout, seed = c
    rng = np.random.default_rng(seed)
    a, n = laid_out(values(shape, dtype, rng), layout, device)
    axis = data.draw(st.integers(-n.ndim, n.ndim - 1))
    order = data.draw(st.integers(0, 4))
    with np.errstate(all="ignore"):
        same(xp.diff(a, axis=axis, n=order), np.diff(n, n=order, axis=axis))
        edge = list(n.shape)
        edge[axis] = data.draw(st.integers(0, 2))
        p, q = values(tuple(edge), dtype, rng), values(tuple(edge), dtype, rng)
        same(xp.diff(a, axis=axis, n=order, prepend=xp.asarray(p, device=device),
                     append=xp.asarray(q, device=device)),
             np.diff(n, n=order, axis=axis, prepend=p, append=q))


@SETTINGS
@given(c=case, dtypes=st.tuples(st.sampled_from(["float32", "float64"]),
                                st.sampled_from(["float32", "float64"])),
       scalar=st.sampled_from([None, -0.0, 0.0, 2.5, -np.inf, np.nan]),
       device=st.sampled_from(DEVICES))
def test_copysign_and_nextafter_are_numpys_bits(c, dtypes, scalar, device):
    shape, layout, seed = c
    rng = np.random.default_rng(seed)
    a, n = laid_out(values(shape, dtypes[0], rng), layout, device)
    m = values(n.shape[-1:], dtypes[1], rng)  # broadcast along the last axis
    m[rng.random(m.shape) < 0.5] *= -1  # NaNs of both signs
    same(xp.copysign(a, xp.asarray(m, device=device)), np.copysign(n, m))
    with np.errstate(all="ignore"):
        same(xp.nextafter(a, xp.asarray(m, device=device)), np.nextafter(n, m))
    if scalar is not None:
        same(xp.copysign(a, scalar), np.copysign(n, scalar))
        same(xp.copysign(scalar, a), np.copysign(scalar, n))
        with np.errstate(all="ignore"):
            same(xp.nextafter(a, scalar), np.nextafter(n, scalar))
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtypes[0])
    info = np.finfo(dtypes[0])
    ends = np.concatenate([edges, [info.max, info.smallest_subnormal]])
    p, q = (v.ravel().astype(dtypes[0]) for v in np.meshgrid(ends, ends))
    with np.errstate(all="ignore"):  # zeros, infinities, NaNs, the largest and smallest values
        same(xp.nextafter(xp.asarray(p, device=device), xp.asarray(q, device=device)),
             np.nextafter(p, q))


def test_refusals_name_the_argument_and_what_came():
    a = xp.zeros((2, 3))
    with pytest.raises(ValueError,
                       match=r"concat: arrays\[1\]: expected shape \(2, \*\) .*got \(3, 3\)"):
        xp.concat([a, xp.zeros((3, 3))], axis=1)
    with pytest.raises(ValueError, match="concat: arrays: expected at least one array, got none"):
        xp.concat([])
    with pytest.raises(TypeError,
                       match="concat: arrays: expected a list or tuple of arrays, got Array"):
        xp.concat(a)
    with pytest.raises(ValueError,
                       match=r"stack: arrays\[1\]: expected shape \(2, 3\), got \(3,\)"):
        xp.stack([a, xp.zeros(3)])
    with pytest.raises(IndexError, match=r"flip: axis: expected in \[-2, 1\], got 2"):
        xp.flip(a, axis=2)
    with pytest.raises(ValueError, match="roll: shift: expected 2 shifts"):
        xp.roll(a, (1,), axis=(0, 1))
    with pytest.raises(ValueError, match=r"repeat: repeats: expected an int or 3 ints "
                                         r"\(x.shape\[1\]\), got int64 of shape \(2,\)"):
        xp.repeat(a, np.array([1, 2]), axis=1)
    with pytest.raises(ValueError, match="repeat: repeats: expected counts >= 0, got -1"):
        xp.repeat(a, -1)
    with pytest.raises(ValueError, match=r"diff: n: expected an int >= 0, got -1"):
        xp.diff(a, n=-1)
    with pytest.raises(TypeError,
                       match="copysign: expected float32 or float64 operands, got int64"):
        xp.copysign(xp.zeros(2, dtype=xp.int64), 1)
    with pytest.raises(TypeError, match="round: x: expected a numeric dtype, got bool"):
        xp.round(xp.zeros(2, dtype=xp.bool))
    with pytest.raises(ValueError, match="moveaxis: source and destination: expected as many"):
        xp.moveaxis(a, (0, 1), 0)
    with pytest.raises(ValueError, match=r"tile: repetitions: expected ints >= 0, got \(-1,\)"):
        xp.tile(a, (-1,))
    with pytest.raises(ValueError,
                       match="tril: x: expected an array of 2 or more dimensions, got 1-d"):
        xp.tril(xp.zeros(3))
    with pytest.raises(ValueError, match="meshgrid: indexing: expected 'xy' or 'ij', got 'yx'"):
        xp.meshgrid(xp.zeros(2), indexing="yx")
    with pytest.raises(TypeError, match="floor: x: expected a real numeric dtype, got complex128"):
        xp.floor(xp.zeros(2, dtype=xp.complex128))
    with pytest.raises(TypeError, match="sign: x: expected a numeric dtype, got bool"):
        xp.sign(xp.zeros(2, dtype=xp.bool))
    with pytest.raises(TypeError, match="var: x: expected a floating-point dtype, got int32"):
        xp.var(xp.zeros(2, dtype=xp.int32))
    with pytest.raises(ValueError, match=r"vecdot: x1 and x2: expected equal extents on axis -1"):
        xp.vecdot(a, xp.zeros(2))
    with pytest.raises(IndexError, match=r"count_nonzero: axis: expected in \[-2, 1\], got 5"):
        xp.count_nonzero(a, axis=5)
