"""Property-based tests (Hypothesis) of every op in arrayport.ops against NumPy 2.

Swept together: dtype (bool, uint8, int32, int64, float16, bfloat16, float32, float64, complex64,
complex128, and mixed pairs), length (1 to 5000, and the edges of the kernels' vectors and chunks:
7-9, 15-17, 31-33, 63-65, 127-129, 255-257, 511-513 and 1023-1025 (the CPU's converted pieces),
255 * 32 +- 1 (the bool counter's flush), 2^16 +- 1 (the CPU reduction's chunk), 2^17 + 1),
layout (contiguous, strided, reversed, broadcast, transposed, 0-d, empty), container (NumPy
through the consume bridge, an arrayport Array over the same memory, and with a GPU a copy in
device memory: the CUDA kernels), axis (None, each, negative, tuples) and keepdims.

What is compared: the result dtype is NumPy 2's exactly (bfloat16: NumPy's float16 rules, except
that bfloat16 with float16 gives float32). Values are exact where NumPy is exact: bool and integer
results (wrapping included), min/max, copy/astype, where, negative, abs, maximum, minimum. Other
floating results are within a relative tolerance of their dtype: element-wise float16 1e-3,
bfloat16 1e-2, float32/complex64 2e-6, float64/complex128 1e-12. Float sums, means and dots are
within k * eps * sum(|terms|), k = 2 * (log2(n) + 2): both sides sum pairwise, blocked differently
(a cancelling sum near zero is still held to that absolute bound); float16 and bfloat16 sums are
compared with the exact sum, as arrayport accumulates them in float32 (NumPy in float16). Float
products are of powers of two, exact in any order; any/all and argmin/argmax are exact.
Where NumPy raises TypeError, OverflowError or ValueError, arrayport raises the same class; where
NumPy's result dtype is one arrayport does not have (square of bool: int8), a TypeError.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arrayport as ap
from arrayport import ops
from conftest import HAS_GPU
from ops_reference import to_numpy as np_of

# ARRAYPORT_TEST_EXAMPLES scales the sweep down where a test runs it again in a child process
# (test_cpu_baseline.py): that many examples instead of 300, and 1000 for the MORE ones.
EXAMPLES = int(os.environ.get("ARRAYPORT_TEST_EXAMPLES", "300"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

MORE = settings(SETTINGS, max_examples=EXAMPLES * 10 // 3)

NUMPY_DTYPES = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64", "complex64",
                "complex128"]
DTYPES = NUMPY_DTYPES + ["bfloat16"]
RESULT_DTYPES = set(DTYPES) | {"uint64"}
INEXACT = {"float16", "bfloat16", "float32", "float64", "complex64", "complex128"}
RTOL = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 2e-6, "complex64": 2e-6, "float64": 1e-12,
        "complex128": 1e-12}
EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "complex64": 2.0**-23,
       "float64": 2.0**-52, "complex128": 2.0**-52}
EDGES = [7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257,
         511, 512, 513, 1023, 1024, 1025, 255 * 32 - 1, 255 * 32, 255 * 32 + 1,
         2**16 - 1, 2**16, 2**16 + 1, 2**17 + 1]
lengths = st.one_of(st.integers(1, 300), st.integers(301, 5000), st.sampled_from(EDGES))
lengths0 = st.one_of(st.just(0), lengths)  # empty too
dtypes = st.sampled_from(DTYPES)
seeds = st.integers(0, 2**32 - 1)
# With a GPU, operands in device memory too: the same sweep through the CUDA kernels.
containers = st.sampled_from(["numpy", "array"] + (["device"] if HAS_GPU else []))


# ---- operands ------------------------------------------------------------------------------------


def values(rng, n, dtype, special=False, zeros=0.0, coarse=False):
    """n values of dtype (bfloat16: float32 values, converted by the caller): small ones, some
    extreme integers, and (special) NaN, infinities and signed zeros among floats. zeros: the
    share made 0; coarse: floats rounded to integers (ties for argmin/argmax)."""
    x = plain_values(rng, n, dtype, special)
    if coarse and x.dtype.kind in "fc":
        x = (np.round(x.real) + 1j * np.round(x.imag)).astype(x.dtype) if x.dtype.kind == "c" \
            else np.round(x)
    if zeros:
        x[rng.random(n) < zeros] = 0
    return x


def plain_values(rng, n, dtype, special):
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if dtype == "uint8":
        return rng.integers(0, 256, n).astype(np.uint8)
    if dtype in ("int32", "int64"):
        info = np.iinfo(dtype)
        big = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        return np.where(rng.random(n) < 0.1, big, rng.integers(-100, 100, n)).astype(dtype)
    x = rng.uniform(-4, 4, n)
    if dtype.startswith("complex"):
        x = x + 1j * rng.uniform(-4, 4, n)
    if special and n and not dtype.startswith("complex"):
        where = rng.random(n) < 0.05
        x[where] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0], int(where.sum()))
    return x.astype("float32" if dtype == "bfloat16" else dtype)


def as_operand(x, dtype, container):
    """x (NumPy; bfloat16 data as float32) as the operand ops sees: NumPy itself, an arrayport
    Array over its memory, a copy in GPU memory ("device", laid out as x where x is a keyed view;
    the CUDA kernels run), or (bfloat16) an Array converted from x's source, laid out as x is."""
    # np.array(order="C"), not np.ascontiguousarray: that one makes a 0-d array 1-d.
    if container == "device":
        if isinstance(x, Keyed):
            d = ap.copy(np.array(x.source, order="C"), memory="device")
            return (ops.astype(d, "bfloat16") if dtype == "bfloat16" else d)[x.key]
        d = ap.copy(np.array(x, order="C"), memory="device")
        return ops.astype(d, "bfloat16") if dtype == "bfloat16" else d
    if dtype == "bfloat16":
        if isinstance(x, Keyed):
            return ops.astype(np.array(x.source, order="C"), "bfloat16")[x.key]
        return ops.astype(x, "bfloat16")
    return ap.view(x) if container == "array" else x


class Keyed(np.ndarray):
    """A NumPy view that remembers its source and the key taking it from there (so a bfloat16
    Array can be laid out the same way)."""


def keyed(source, key):
    v = source[key].view(Keyed)
    v.source, v.key = source, key
    return v


def reference(x, dtype):
    """What NumPy computes with: x's values (bfloat16: the float32 values of the rounded data)."""
    if dtype == "bfloat16":
        return np.asarray(ops.astype(ops.astype(np.asarray(x, np.float32), "bfloat16"), "float32"))
    return np.asarray(x).view(np.ndarray)


def layout_1d(rng, n, dtype, layout, special=False):
    """A 1-d operand of n elements (0-d / length 1 for those layouts) in `layout`."""
    if layout == "contiguous":
        return values(rng, n, dtype, special)
    if layout == "strided":
        return keyed(values(rng, 2 * n, dtype, special), slice(None, None, 2))
    if layout == "reversed":
        return keyed(values(rng, n, dtype, special), slice(None, None, -1))
    if layout == "broadcast":  # stride 0 over n elements
        v = values(rng, 1, dtype, special)
        return np.broadcast_to(v, (n,)) if dtype != "bfloat16" else values(rng, 1, dtype)
    if layout == "0-d":
        return values(rng, 1, dtype, special).reshape(())
    raise AssertionError(layout)


LAYOUTS_1D = ["contiguous", "strided", "reversed", "broadcast", "0-d"]


# ---- comparison ----------------------------------------------------------------------------------


def assert_close(got, want, kind, exact, rtol=None):
    got, want = np_of(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if exact or kind not in INEXACT:
        np.testing.assert_array_equal(got, want)
    else:
        tol = RTOL[kind] if rtol is None else rtol
        np.testing.assert_allclose(got, want.astype(got.dtype) if kind != "bfloat16" else want,
                                   rtol=tol, atol=tol, equal_nan=True)


def bf16_result(dtypes_in, numpy_dtype):
    """NumPy's result dtype with bfloat16 operands taken as float16, mapped back: float16 is
    bfloat16 when any operand was bfloat16, float32 when both 16-bit kinds met."""
    if "bfloat16" not in dtypes_in:
        return numpy_dtype
    if numpy_dtype == "float16":
        return "float32" if "float16" in dtypes_in else "bfloat16"
    return numpy_dtype


def outcome(call, ref, kind_of_result, exact, rtol=None, compare=None):
    """call() matches NumPy's ref(): dtype and values (by compare(got, want, dtype) where
    given), or the same exception class."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ComplexWarning: NumPy's casts drop imaginary parts
            want, want_dtype = ref()
    except (TypeError, OverflowError, ValueError) as e:
        with pytest.raises(type(e)):
            call()
        return
    if want_dtype not in RESULT_DTYPES:  # NumPy has a dtype ops has not (square(bool): int8)
        with pytest.raises(TypeError):
            call()
        return
    got = call()
    assert str(got.dtype) == want_dtype, (got.dtype, want_dtype)
    if compare is not None:
        compare(got, want, want_dtype)
    else:
        assert_close(got, want, want_dtype, exact(want_dtype), rtol)


# ---- element-wise ops ----------------------------------------------------------------------------

UNARY = {"negative": np.negative, "square": np.square, "sqrt": np.sqrt, "abs": np.abs,
         "copy": np.copy, "logical_not": np.logical_not, "bitwise_invert": np.bitwise_invert,
         "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "exp": np.exp,
         "log": np.log, "sin": np.sin, "cos": np.cos, "tanh": np.tanh}
BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
          "maximum": np.maximum, "minimum": np.minimum, "equal": np.equal,
          "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
          "greater": np.greater, "greater_equal": np.greater_equal,
          "logical_and": np.logical_and, "logical_or": np.logical_or,
          "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and,
          "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
          "floor_divide": np.floor_divide, "remainder": np.remainder, "power": np.power}
EXACT_OPS = {"negative", "abs", "copy", "maximum", "minimum", "where", "astype", "clip"}


def exactness(name, *input_dtypes):
    # abs of a complex number is a hypot (libm's, within an ulp): not exact.
    exact_op = name in EXACT_OPS and not (name == "abs" and any(
        str(d).startswith("complex") for d in input_dtypes))
    return lambda d: exact_op or d not in INEXACT


@SETTINGS
@given(name=st.sampled_from(list(UNARY)), dtype=dtypes, n=lengths0,
       layout=st.sampled_from(LAYOUTS_1D), container=containers,
       special=st.booleans(), seed=seeds)
def test_unary_ops_match_numpy(name, dtype, n, layout, container, special, seed):
    x = layout_1d(np.random.default_rng(seed), n, dtype, layout, special)
    ref_x = reference(x, dtype)

    def ref():
        r = UNARY[name](ref_x.astype("float16") if dtype == "bfloat16" else ref_x)
        return UNARY[name](ref_x), bf16_result([dtype], str(r.dtype))

    outcome(lambda: getattr(ops, name)(as_operand(x, dtype, container)), ref, None,
            exactness(name, dtype))


@SETTINGS
@given(name=st.sampled_from(list(BINARY)), d1=dtypes, d2=dtypes, n=lengths0,
       l1=st.sampled_from(LAYOUTS_1D), l2=st.sampled_from(LAYOUTS_1D),
       container=containers, special=st.booleans(), seed=seeds)
def test_binary_ops_match_numpy(name, d1, d2, n, l1, l2, container, special, seed):
    rng = np.random.default_rng(seed)
    x, y = layout_1d(rng, n, d1, l1, special), layout_1d(rng, n, d2, l2, special)
    rx, ry = reference(x, d1), reference(y, d2)

    def ref():
        t1 = np.zeros(1, "float16" if d1 == "bfloat16" else d1)
        t2 = np.zeros(1, "float16" if d2 == "bfloat16" else d2)
        dt = str(BINARY[name](t1, t2).dtype)  # NumPy's refusals (bool - bool) raise here
        return BINARY[name](rx, ry), bf16_result([d1, d2], dt)

    compare = None
    if name == "power" and container == "device":
        compare = lambda got, want, kind: assert_power_close(got, want, kind, rx, ry)  # noqa: E731
    outcome(lambda: getattr(ops, name)(as_operand(x, d1, container), as_operand(y, d2, container)),
            ref, None, exactness(name), compare=compare)


def assert_power_close(got, want, kind, x, y):
    """Complex x ** y from the GPU's clog and cexp (libcu++'s, not glibc's) within RTOL times
    the element's condition number 1 + |y| (|log |x|| + pi). Where that leaves under 1 % of
    precision (int64 exponents near 2^63) even an overflowed result's signs follow the last bit
    of arg(x), so those elements are not compared. Other kinds compare as assert_close does."""
    if kind not in ("complex64", "complex128"):
        return assert_close(got, want, kind, False)
    got, want = np_of(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    xs, ys = (np.broadcast_to(np.asarray(v).astype("complex128"), want.shape) for v in (x, y))
    with np.errstate(all="ignore"):
        cond = 1 + np.abs(ys) * (np.abs(np.log(np.abs(xs))) + np.pi)
    cond = np.where((xs == 0) | (ys == 0), 1.0, cond)  # the exact special cases
    tol = RTOL[kind] * cond
    kept = ~(tol >= 1e-2)  # NaN operands have a NaN condition: kept, and must give NaN
    for part in (np.real, np.imag):
        g, w = part(got)[kept], part(want)[kept]
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        inf = np.isinf(w)
        np.testing.assert_array_equal(g[inf], w[inf])
        np.testing.assert_array_equal(np.isinf(g), inf)
    both = kept & np.isfinite(got) & np.isfinite(want)
    err = np.abs(got[both] - want[both])
    scale = np.maximum(np.abs(want[both]), np.finfo(got.real.dtype).tiny)
    assert np.all(err <= tol[both] * scale), np.max(err / (tol[both] * scale))


SCALARS = [True, 0, 3, -7, 300, 2**40, 1.5, -0.0, float("nan"), 1.5 - 2j,
           np.bool_(True), np.uint8(7), np.int32(-3), np.int64(2**40), np.float16(1.5),
           np.float32(2.5), np.float64(-1.25), np.complex64(1 - 1j), np.complex128(2 + 0.5j)]


@SETTINGS
@given(name=st.sampled_from(list(BINARY)), dtype=st.sampled_from(NUMPY_DTYPES), n=lengths,
       layout=st.sampled_from(LAYOUTS_1D), scalar=st.sampled_from(SCALARS),
       scalar_first=st.booleans(), seed=seeds)
def test_scalars_promote_as_numpy_2_does(name, dtype, n, layout, scalar, scalar_first, seed):
    x = layout_1d(np.random.default_rng(seed), n, dtype, layout)
    args = (scalar, x) if scalar_first else (x, scalar)

    def ref():
        r = BINARY[name](*(a.view(np.ndarray) if isinstance(a, np.ndarray) else a for a in args))
        return r, str(np.asarray(r).dtype)

    outcome(lambda: getattr(ops, name)(*args), ref, None, exactness(name))


@SETTINGS
@given(src=dtypes, dst=dtypes, n=lengths0, layout=st.sampled_from(LAYOUTS_1D),
       container=containers, seed=seeds)
def test_astype_matches_numpy(src, dst, n, layout, container, seed):
    x = layout_1d(np.random.default_rng(seed), n, src, layout)
    if src in INEXACT and dst in ("uint8", "int32", "int64"):
        # In range: NaN and out-of-range floats have no defined integer (C leaves it open).
        x = np.clip(reference(x, src).real, -100, 100).astype("float32" if src == "bfloat16" else
                                                               src if not src.startswith("complex")
                                                               else "float64")
        src = str(x.dtype) if src != "bfloat16" else src
    rx = reference(x, src)

    def ref():
        if dst == "bfloat16":  # NumPy has no bfloat16: ops' own float32 -> bfloat16, exact first
            r = rx.real if src.startswith("complex") else rx
            return np_of(ops.astype(r.astype(np.float64), "bfloat16")), "bfloat16"
        return rx.astype(dst), dst

    outcome(lambda: ops.astype(as_operand(x, src, container), dst), ref, None, lambda d: True)


@SETTINGS
@given(dc=st.sampled_from(NUMPY_DTYPES), dx=st.sampled_from(NUMPY_DTYPES),
       dy=st.sampled_from(NUMPY_DTYPES), n=lengths0, lc=st.sampled_from(LAYOUTS_1D),
       lx=st.sampled_from(LAYOUTS_1D), ly=st.sampled_from(LAYOUTS_1D),
       container=containers, seed=seeds)
def test_where_matches_numpy(dc, dx, dy, n, lc, lx, ly, container, seed):
    rng = np.random.default_rng(seed)
    c, x, y = (layout_1d(rng, n, d, lay) for d, lay in ((dc, lc), (dx, lx), (dy, ly)))

    def ref():
        r = np.where(c.view(np.ndarray), x.view(np.ndarray), y.view(np.ndarray))
        return r, str(r.dtype)

    outcome(lambda: ops.where(*(as_operand(v, d, container) for v, d in ((c, dc), (x, dx), (y, dy)))),
            ref, None, lambda d: True)


@SETTINGS
@given(dx=st.sampled_from(NUMPY_DTYPES), dlo=st.sampled_from(NUMPY_DTYPES + ["none", "scalar"]),
       dhi=st.sampled_from(NUMPY_DTYPES + ["none", "scalar"]), n=lengths0,
       lx=st.sampled_from(LAYOUTS_1D), lb=st.sampled_from(LAYOUTS_1D), container=containers,
       special=st.booleans(), seed=seeds)
def test_clip_matches_numpy(dx, dlo, dhi, n, lx, lb, container, special, seed):
    # A bound is an array (of any dtype), a Python scalar or None (no bound).
    rng = np.random.default_rng(seed)
    x = layout_1d(rng, n, dx, lx, special)

    def bound(d):
        if d == "none":
            return None, None
        if d == "scalar":
            v = float(rng.uniform(-3, 3)) if dx in INEXACT else int(rng.integers(-3, 3))
            return (bool(v) if dx == "bool" else v), (bool(v) if dx == "bool" else v)
        b = layout_1d(rng, n, d, lb, special)
        return as_operand(b, d, container), b.view(np.ndarray)

    (lo, nlo), (hi, nhi) = bound(dlo), bound(dhi)

    def ref():
        if nlo is None and nhi is None:  # x itself (NumPy's goes through positive, which bool lacks)
            return x.view(np.ndarray), dx
        r = np.clip(x.view(np.ndarray), nlo, nhi)
        return r, str(np.asarray(r).dtype)

    outcome(lambda: ops.clip(as_operand(x, dx, container), lo, hi), ref, None, lambda d: True)


@SETTINGS
@given(da=st.sampled_from(NUMPY_DTYPES), dx=st.sampled_from(NUMPY_DTYPES),
       dy=st.sampled_from(NUMPY_DTYPES), n=lengths0, la=st.sampled_from(LAYOUTS_1D),
       lx=st.sampled_from(LAYOUTS_1D), ly=st.sampled_from(LAYOUTS_1D),
       scalar_a=st.sampled_from([None, 2, -1.5, 0.5j, np.float32(0.5)]),
       container=containers, seed=seeds)
def test_axpy_matches_a_times_x_plus_y(da, dx, dy, n, la, lx, ly, scalar_a, container, seed):
    rng = np.random.default_rng(seed)
    a, x, y = (layout_1d(rng, n, d, lay) for d, lay in ((da, la), (dx, lx), (dy, ly)))
    if scalar_a is not None:
        a = scalar_a

    def plain(v):
        return v.view(np.ndarray) if isinstance(v, np.ndarray) else v

    def ref():
        r = plain(a) * plain(x) + plain(y)
        return r, str(np.asarray(r).dtype)

    # The product rounds to its own dtype first, on both sides: the tolerance of the narrowest
    # inexact operand applies.
    kinds = [str(np.asarray(v).dtype) for v in (a, x, y)]
    rtol = max([RTOL.get(k, 0) for k in kinds] + [1e-12])
    operand = (lambda v, d: as_operand(v, d, container) if isinstance(v, np.ndarray) else v)
    outcome(lambda: ops.axpy(operand(a, da), operand(x, dx), operand(y, dy)), ref, None,
            lambda d: d not in INEXACT, rtol=rtol)


@SETTINGS
@given(name=st.sampled_from(list(BINARY)), dtype=st.sampled_from(NUMPY_DTYPES),
       rows=st.integers(0, 40), cols=st.integers(0, 70),
       layout=st.sampled_from(["row", "column", "transposed", "strided", "scalar"]), seed=seeds)
def test_binary_ops_broadcast_2d_layouts_as_numpy_does(name, dtype, rows, cols, layout, seed):
    rng = np.random.default_rng(seed)
    x = values(rng, rows * cols, dtype).reshape(rows, cols)
    y = {"row": lambda: values(rng, cols, dtype).reshape(1, cols),
         "column": lambda: values(rng, rows, dtype).reshape(rows, 1),
         "transposed": lambda: values(rng, rows * cols, dtype).reshape(cols, rows).T,
         "strided": lambda: values(rng, 4 * rows * cols, dtype).reshape(2 * rows, 2 * cols)[::2, ::-2],
         "scalar": lambda: values(rng, 1, dtype).reshape(())}[layout]()

    def ref():
        r = BINARY[name](x, y)
        return r, str(r.dtype)

    outcome(lambda: getattr(ops, name)(x, ap.view(y)), ref, None, exactness(name))


@SETTINGS
@given(name=st.sampled_from(list(BINARY) + list(UNARY)), dtype=st.sampled_from(NUMPY_DTYPES),
       n=lengths, shift=st.integers(-3, 3), seed=seeds)
def test_out_overlapping_an_input_gives_numpys_answer(name, dtype, n, shift, seed):
    base = values(np.random.default_rng(seed), n + 6, dtype)
    src, dst = base[3:3 + n], base[3 + shift:3 + shift + n]
    expected_base = base.copy()
    s, d = expected_base[3:3 + n], expected_base[3 + shift:3 + shift + n]
    fn = BINARY.get(name) or UNARY[name]
    args = (src, src) if name in BINARY else (src,)
    try:
        with np.errstate(all="ignore"):
            want = fn(*((s, s) if name in BINARY else (s,)))
    except (TypeError, ValueError) as e:  # ValueError: integers to negative integer powers
        with pytest.raises(type(e)):
            getattr(ops, name)(*args, out=dst)
        return
    if str(want.dtype) not in RESULT_DTYPES:
        with pytest.raises(TypeError, match="not supported for dtype"):
            getattr(ops, name)(*args, out=dst)
        return
    if want.dtype != base.dtype:
        with pytest.raises(TypeError, match="out: expected dtype"):
            getattr(ops, name)(*args, out=dst)
        return
    d[...] = want
    with np.errstate(all="ignore"):
        assert getattr(ops, name)(*args, out=dst) is dst
    assert_close(base, expected_base, dtype, exactness(name)(dtype))


# ---- reductions ----------------------------------------------------------------------------------

REDUCTIONS = ["sum", "mean", "min", "max"]


@st.composite
def reduction_cases(draw):
    """(array maker, axis, keepdims): 0 to 3 dimensions, one long one at times, any layout."""
    ndim = draw(st.integers(0, 3))
    if ndim == 1:
        shape = (draw(st.one_of(lengths, st.just(0))),)
    elif ndim >= 2:
        shape = tuple(draw(st.integers(0, 12)) for _ in range(ndim))
        if draw(st.booleans()):  # a long last axis: each output reduced in chunks
            shape = shape[:-1] + (draw(st.sampled_from([2**16 - 1, 2**16 + 1, 3000])),)
            shape = tuple(min(e, 3) for e in shape[:-1]) + shape[-1:]
    else:
        shape = ()
    layout = draw(st.sampled_from(["contiguous", "strided", "reversed", "transposed",
                                   "broadcast"]))
    axis = draw(st.one_of(
        st.none(),
        st.integers(-ndim, ndim - 1) if ndim else st.none(),
        st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(
            lambda a: tuple(d - ndim if i % 2 else d for i, d in enumerate(a))) if ndim else st.none()))
    return shape, layout, axis, draw(st.booleans())


def make_layout(rng, shape, dtype, layout, special=False, values=values):
    n = math.prod(shape)
    if layout == "strided" and shape:
        big = values(rng, 2 * n, dtype, special).reshape(shape[:-1] + (2 * shape[-1],))
        return keyed(big, (Ellipsis, slice(None, None, 2)))
    if layout == "reversed" and shape:
        return keyed(values(rng, n, dtype, special).reshape(shape), (Ellipsis, slice(None, None, -1)))
    if layout == "transposed" and len(shape) >= 2:
        t = values(rng, n, dtype, special).reshape(shape[::-1])
        return t.T if dtype != "bfloat16" else values(rng, n, dtype).reshape(shape)
    if layout == "broadcast" and shape and dtype != "bfloat16":
        return np.broadcast_to(values(rng, shape[-1], dtype, special), shape)
    return values(rng, n, dtype, special).reshape(shape)


def sum_tolerance(dtype, terms, axis, keepdims):
    """k * eps * sum(|terms|) along axis: the bound both pairwise sums keep."""
    n = max(1, terms.size // max(1, np.sum(np.zeros(terms.shape, np.int8), axis=axis).size))
    k = 2 * (math.log2(n) + 2)
    with np.errstate(all="ignore"):
        return k * EPS[dtype] * np.sum(np.abs(terms.astype(np.complex128 if dtype.startswith("complex")
                                                           else np.float64)), axis=axis,
                                       keepdims=keepdims)


def rounded(want, dtype):
    """want (float64/complex128) rounded to dtype, as a result of that dtype is (overflow: inf)."""
    with np.errstate(all="ignore"):
        if dtype == "bfloat16":
            return np_of(ops.astype(np.asarray(want, np.float64), "bfloat16"))
        return np.asarray(want).astype(dtype)


def exact_sum(terms, axis, keepdims):
    """The correctly rounded sum of `terms` along `axis` (math.fsum), NaN where fsum cannot say
    (inf - inf, overflow). NumPy's own float sum is no reference: it is pairwise only along a
    contiguous axis, and sums a strided one in order (1e-12 off for 2^16 terms)."""
    t = np.asarray(terms)
    t = t.astype(np.complex128 if np.iscomplexobj(t) else np.float64)
    axes = tuple(range(t.ndim)) if axis is None else tuple(
        a % t.ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
    if t.size == 0:
        return np.sum(t, axis=axis, keepdims=keepdims)
    kept = t.ndim - len(axes)
    moved = np.moveaxis(t, axes, tuple(range(kept, t.ndim)))
    rows = moved.reshape(moved.shape[:kept] + (-1,))

    def fsum(row):
        try:
            if np.iscomplexobj(row):
                return complex(math.fsum(row.real), math.fsum(row.imag))
            return math.fsum(row)
        except (ValueError, OverflowError):
            return np.nan

    flat = rows.reshape(-1, rows.shape[-1])
    out = np.array([fsum(r) for r in flat], dtype=t.dtype).reshape(rows.shape[:-1])
    return np.expand_dims(out, axes) if keepdims else out


def check_float_reduction(got, want, terms, dtype, axis, keepdims, divide_by=1):
    got = np_of(got).astype(np.complex128 if dtype.startswith("complex") else np.float64)
    # Around the exact sum where it is finite; NumPy's result says the infinities and NaNs.
    exact = exact_sum(terms, axis, keepdims) / divide_by
    want = np.asarray(want).astype(exact.dtype)
    want = np.where(np.isfinite(exact) & np.isfinite(want), exact, want)
    want = rounded(want, dtype).astype(got.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    bound = sum_tolerance(dtype, terms, axis, keepdims) / divide_by
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    error = np.abs(got[finite] - want[finite])
    bound = np.broadcast_to(bound, want.shape)[finite]
    assert np.all(error <= bound + 1e-300), np.max(error - bound)


@MORE
@given(name=st.sampled_from(REDUCTIONS), dtype=dtypes, case=reduction_cases(),
       container=containers, special=st.booleans(), seed=seeds)
def test_reductions_match_numpy(name, dtype, case, container, special, seed):
    shape, layout, axis, keepdims = case
    x = make_layout(np.random.default_rng(seed), shape, dtype, layout,
                    special and name in ("min", "max"))
    rx = reference(x, dtype)
    call = lambda: getattr(ops, name)(as_operand(x, dtype, container), axis=axis,  # noqa: E731
                                      keepdims=keepdims)
    if dtype.startswith("complex") and name in ("min", "max"):
        with pytest.raises(TypeError, match=f"{name}: not supported for dtype {dtype}"):
            call()
        return
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the mean of nothing
            if dtype in ("float16", "bfloat16") and name in ("sum", "mean"):
                want = getattr(np, name)(rx.astype(np.float64), axis=axis, keepdims=keepdims)
            else:
                want = getattr(np, name)(rx, axis=axis, keepdims=keepdims)
    except ValueError:  # min/max of nothing
        with pytest.raises(ValueError, match="zero-size array to reduction operation"):
            call()
        return
    want_dtype = str(getattr(np, name)(np.zeros(1, "float16" if dtype == "bfloat16" else dtype)).dtype)
    want_dtype = "bfloat16" if dtype == "bfloat16" and want_dtype == "float16" else want_dtype
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = call()
    assert str(got.dtype) == want_dtype, (got.dtype, want_dtype)
    if name in ("min", "max") or want_dtype not in INEXACT:
        assert_close(got, want, want_dtype, exact=True)
    else:
        kind = dtype if dtype in INEXACT else "float64"
        n_red = max(1, rx.size // max(1, np.asarray(want).size))
        check_float_reduction(got, want, rx, kind, axis, keepdims,
                              divide_by=n_red if name == "mean" else 1)
        if dtype in ("float16", "bfloat16"):  # one rounding of the float32 accumulation
            assert_close(got, np.asarray(want), dtype, exact=False, rtol=RTOL[dtype] * 4)


@SETTINGS
@given(d1=st.sampled_from(NUMPY_DTYPES), d2=st.sampled_from(NUMPY_DTYPES), case=reduction_cases(),
       other=st.sampled_from(["same shape", "broadcast row", "0-d"]),
       container=containers, seed=seeds)
def test_dot_is_the_sum_of_the_product(d1, d2, case, other, container, seed):
    shape, layout, axis, keepdims = case
    rng = np.random.default_rng(seed)
    x = make_layout(rng, shape, d1, layout)
    y = {"same shape": lambda: make_layout(rng, shape, d2, "contiguous"),
         "broadcast row": lambda: values(rng, shape[-1] if shape else 1, d2),
         "0-d": lambda: values(rng, 1, d2).reshape(())}[other]()
    rx, ry = x.view(np.ndarray), y.view(np.ndarray)
    call = lambda: ops.dot(as_operand(x, d1, container), as_operand(y, d2, container),  # noqa: E731
                           axis=axis, keepdims=keepdims)
    try:
        t = str(np.multiply(np.zeros(1, d1), np.zeros(1, d2)).dtype)
        with np.errstate(all="ignore"):
            product = rx * ry  # in NumPy's dtype t; ops accumulates in t too (no widening)
            want = np.sum(product, axis=axis, keepdims=keepdims, dtype=t)
    except (TypeError, ValueError) as e:
        with pytest.raises(type(e)):
            call()
        return
    with np.errstate(all="ignore"):
        got = call()
    assert str(got.dtype) == t, (got.dtype, t)
    if t not in INEXACT:
        assert_close(got, want, t, exact=True)
    else:
        # ops multiplies in t's compute type (float for float16) and does not round the product
        # to float16: the bound is that of the exact products' sum.
        terms = np.broadcast_to(rx, product.shape).astype(np.float64 if not t.startswith("complex") else np.complex128) * ry
        check_float_reduction(got, np.sum(terms, axis=axis, keepdims=keepdims), terms, t, axis,
                              keepdims)


TRUTH_AND_INDEX = ["any", "all", "argmin", "argmax"]


@MORE
@given(name=st.sampled_from(TRUTH_AND_INDEX), dtype=dtypes, case=reduction_cases(),
       container=containers, special=st.booleans(), zeros=st.sampled_from([0.0, 0.5, 0.99]),
       seed=seeds)
def test_truth_and_index_reductions_match_numpy(name, dtype, case, container, special, zeros,
                                                seed):
    # Exact: any/all give bool, argmin/argmax the int64 index of the first extreme or NaN. Many
    # zeros decide any/all late; coarse values make ties, where the first index must win.
    shape, layout, axis, keepdims = case
    gen = lambda rng, n, d, sp=False: values(rng, n, d, sp, zeros=zeros, coarse=True)  # noqa: E731
    x = make_layout(np.random.default_rng(seed), shape, dtype, layout, special, values=gen)
    rx = reference(x, dtype)
    call = lambda: getattr(ops, name)(as_operand(x, dtype, container), axis=axis,  # noqa: E731
                                      keepdims=keepdims)
    if name.startswith("arg") and isinstance(axis, tuple):
        with pytest.raises(TypeError, match=f"{name}: axis: expected None or an int, got a tuple"):
            call()
        return
    try:
        want = getattr(np, name)(rx, axis=axis, keepdims=keepdims)
    except ValueError:  # argmin/argmax of nothing
        with pytest.raises(ValueError, match=f"attempt to get {name} of an empty sequence"):
            call()
        return
    got = call()
    assert str(got.dtype) == ("bool" if name in ("any", "all") else "int64"), got.dtype
    assert_close(got, want, str(got.dtype), exact=True)


def unit_values(rng, n, dtype, special, budget):
    """Values whose product is exact in any order: +-1 (or +-1j), with at most `budget` of them
    +-2 or +-0.5 (so no partial product leaves float32's exponents), and (special) NaN,
    infinities and zeros. Integers: values() (their products wrap exactly in any order)."""
    if dtype in ("bool", "uint8", "int32", "int64"):
        return values(rng, n, dtype)
    x = rng.choice([-1.0, 1.0], n)
    big = rng.choice(n, min(n, budget), replace=False) if n else []
    x[big] *= rng.choice([2.0, 0.5], len(big))
    if dtype.startswith("complex"):
        x = x * rng.choice([1, 1j], n)
    elif special and n:
        where = rng.random(n) < 0.02
        x[where] = rng.choice([np.nan, np.inf, -np.inf, 0.0], int(where.sum()))
    return x.astype("float32" if dtype == "bfloat16" else dtype)


@SETTINGS
@given(dtype=dtypes, case=reduction_cases(), container=containers, special=st.booleans(),
       seed=seeds)
def test_prod_matches_numpy(dtype, case, container, special, seed):
    # Floats: products of powers of two, exact in any order, against the exact product rounded
    # once (NumPy rounds float16 products at every step, arrayport accumulates them in float32).
    shape, layout, axis, keepdims = case
    rows = max(1, math.prod(shape[:-1]))
    budget = 100 // rows if layout == "broadcast" else 100  # a broadcast row repeats its factors
    gen = lambda rng, n, d, sp=False: unit_values(rng, n, d, sp, budget)  # noqa: E731
    x = make_layout(np.random.default_rng(seed), shape, dtype, layout, special, values=gen)
    rx = reference(x, dtype)
    got = ops.prod(as_operand(x, dtype, container), axis=axis, keepdims=keepdims)
    want_dtype = str(np.prod(np.zeros(1, "float16" if dtype == "bfloat16" else dtype)).dtype)
    want_dtype = "bfloat16" if dtype == "bfloat16" and want_dtype == "float16" else want_dtype
    assert str(got.dtype) == want_dtype, (got.dtype, want_dtype)
    with np.errstate(all="ignore"):
        if want_dtype in INEXACT:
            exact = np.prod(rx.astype(np.complex128 if dtype.startswith("complex") else np.float64),
                            axis=axis, keepdims=keepdims)
            want = rounded(exact, want_dtype)
        else:
            want = np.prod(rx, axis=axis, keepdims=keepdims)
    assert_close(got, want, want_dtype, exact=True)


def test_the_sweep_reaches_every_op():
    # Every public op is swept above (a new op must join the sweep).
    swept = set(UNARY) | set(BINARY) | set(REDUCTIONS) | set(TRUTH_AND_INDEX) | {
        "astype", "where", "axpy", "dot", "clip", "prod"}
    assert swept == set(ops.__all__)
