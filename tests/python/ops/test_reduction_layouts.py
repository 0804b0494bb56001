"""Reductions over layouts that take different CPU paths give the same bits.

A reduction along a strided axis whose kept outputs lie side by side in memory (``sum(a, axis=0)``
of a C-ordered matrix) runs a strip of neighbouring outputs at a time; the same outputs with the
kept axis strided (``a[:, ::2]``, one output at a time) must give identical bits: both paths
accumulate each output through the same pairwise tree and chunks. Swept by Hypothesis over the
free-order reductions, the dtypes, row counts around the pairwise block (128) and the chunk
(2^16), column counts around the strip widths, NaN and infinities among floats; every result is
also NumPy's (exactly where NumPy is exact, within k * eps * sum(|terms|) for float sums).
A full reduction of a transposed array runs in memory order; argmin and argmax keep C order.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrayport as ap
from arrayport import ops
from conftest import HAS_GPU
from ops_reference import to_numpy as np_of
from test_ops_properties import SETTINGS, values

FREE_ORDER = ["sum", "mean", "min", "max", "prod", "any", "all"]
DTYPES = ["bool", "uint8", "int32", "int64", "float32", "float64", "complex64", "complex128"]
ROWS = st.one_of(st.integers(1, 300), st.sampled_from([127, 128, 129, 255, 256, 257,
                                                        2**16 - 1, 2**16, 2**16 + 1]))
COLS = st.one_of(st.integers(2, 40), st.sampled_from([63, 64, 65, 127, 128, 129]))


def numpy_reduction(name, x, axis):
    if name in ("min", "max") and x.dtype.kind == "c":
        raise TypeError
    with np.errstate(all="ignore"):
        return getattr(np, name)(x, axis=axis)


def assert_same_bits(a, b):
    """Bit for bit (signed zeros too), up to the sign and payload of NaNs: a compiler may swap the
    operands of a commutative add, and x86 passes on the first operand's NaN."""
    nan = np.isnan(a) if a.dtype.kind in "fc" else np.zeros(a.shape, bool)
    np.testing.assert_array_equal(nan, np.isnan(b) if b.dtype.kind in "fc" else nan)
    np.testing.assert_array_equal(a[~nan].view(np.uint8), b[~nan].view(np.uint8))


@SETTINGS
@given(name=st.sampled_from(FREE_ORDER), dtype=st.sampled_from(DTYPES), rows=ROWS, cols=COLS,
       special=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_strips_and_single_outputs_give_the_same_bits(name, dtype, rows, cols, special, seed):
    if rows * cols > 2**19:
        cols = max(2, 2**19 // rows)
    x = values(np.random.default_rng(seed), rows * 2 * cols, dtype, special).reshape(rows, 2 * cols)
    strided = x[:, ::2]                    # kept axis strided: one output at a time
    packed = np.ascontiguousarray(strided)  # kept axis contiguous: strips
    try:
        want = numpy_reduction(name, packed, 0)
    except TypeError:
        with pytest.raises(TypeError):
            getattr(ops, name)(packed, axis=0)
        return
    a = np_of(getattr(ops, name)(strided, axis=0))
    b = np_of(getattr(ops, name)(packed, axis=0))
    assert a.dtype == b.dtype == want.dtype
    assert_same_bits(a, b)
    if want.dtype.kind not in "fc":
        np.testing.assert_array_equal(b, want)
    elif name in ("min", "max"):
        np.testing.assert_array_equal(b, want)  # NaN where NumPy has NaN
    elif name in ("sum", "mean") and not special:
        # NumPy adds a column in order, arrayport pairwise: both within this bound of the truth.
        terms = np.abs(packed.astype(want.dtype))
        bound = 2 * (np.log2(rows) + 2) * np.finfo(want.dtype).eps * np.sum(terms, axis=0)
        bound = bound / (rows if name == "mean" else 1) + np.finfo(want.dtype).tiny
        both = np.isfinite(b) & np.isfinite(want)
        assert np.all(np.abs(b[both] - want[both]) <= bound[both])


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_contiguous_arg_extremes_at_every_position(name, dtype):
    # A contiguous run keeps each vector lane's extreme and the block of 1,024 that raised it,
    # then searches the best block 64 bytes at a time for its first index, and the last values
    # (fewer than four vectors) alone: the extreme alone, twice (the first wins), and a NaN (the
    # first NaN wins) at every position of rows across those edges and chunks of 2^16.
    rng = np.random.default_rng(13)
    extreme = 120 if name == "argmax" else 1
    for n in (1, 15, 64, 65, 255, 256, 257, 1023, 1025, 2047, 2049, 4160, 2**16 + 70):
        base = rng.integers(10, 100, n).astype(dtype)
        spots = sorted(set(range(0, n, max(1, n // 97))) | {n - 1} | set(range(min(n, 70))))
        rows = []
        for i in spots:
            x = base.copy()
            x[i] = extreme
            rows.append(x)
            if i + 37 < n:  # a tie after it
                y = x.copy()
                y[i + 37] = x[i]
                rows.append(y)
            if dtype.startswith("float") and i + 5 < n:  # a NaN after it
                z = x.copy()
                z[i + 5] = z[(i + 9) % n] = np.nan
                rows.append(z)
        m = np.stack(rows)
        np.testing.assert_array_equal(np_of(getattr(ops, name)(m, axis=1)),
                                      getattr(np, name)(m, axis=1))
        for x in rows[::7]:
            assert np_of(getattr(ops, name)(x)) == getattr(np, name)(x)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", ["sum", "mean"])
def test_complex_columns_sum_their_parts_with_one_outputs_bits(name, dtype):
    # Complex columns run as twice as many float columns: the bits of one output at a time,
    # through the pairwise leaf, its recursion and the chunks of 2^16 rows.
    rng = np.random.default_rng(12)
    for rows, cols in [(2, 4), (9, 64), (300, 132), (70_001, 4)]:
        x = (rng.uniform(-4, 4, (rows, 2 * cols)) + 1j * rng.uniform(-4, 4, (rows, 2 * cols)))
        x = x.astype(dtype)
        x[rng.random(x.shape) < 0.01] = np.nan + 1j * np.inf
        packed = np.ascontiguousarray(x[:, ::2])
        got = np_of(getattr(ops, name)(packed, axis=0))
        assert got.dtype == np.dtype(dtype)
        assert_same_bits(got, np_of(getattr(ops, name)(x[:, ::2], axis=0)))
        with np.errstate(all="ignore"):
            want = getattr(np, name)(packed, axis=0)
        np.testing.assert_allclose(got, want, rtol=1e-4)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64"])
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "any", "all"])
def test_integer_columns_in_any_order_are_numpys_exactly(name, dtype):
    # Integer and bool sums, products, extremes and any/all do not depend on the order, so their
    # columns are read a row at a time with no tree, and long ones in parts that threads combine:
    # full-range values (sums and products wrap as NumPy's do), blocks of 4 KiB of accumulators
    # and a short one, columns of 2 to 70,001 rows, a 3-d array reduced along its middle axis.
    rng = np.random.default_rng(11)
    for shape, axis in [((2, 3), 0), ((9, 4097), 0), ((130, 513), 0), ((70_001, 2), 0),
                        ((4099, 129), 0), ((5, 300, 66), 1), ((2, 2**17 + 3, 3), 1)]:
        if dtype == "bool":
            x = rng.random(shape) < (0.999 if name == "all" else 0.001 if name == "any" else 0.5)
        else:
            info = np.iinfo(dtype)
            x = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
            if name in ("any", "all"):
                x[rng.random(shape) < 0.3] = 0
        try:
            want = numpy_reduction(name, x, axis)
        except TypeError:
            continue
        got = np_of(getattr(ops, name)(x, axis=axis))
        assert got.dtype == want.dtype, (shape, got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want, err_msg=str(shape))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["max", "min"])
def test_column_extremes_meet_a_nan_at_every_row_and_signed_zero_ties(name, dtype):
    # Column max/min first run a leaf of rows (up to 128) with one select and a record of NaNs,
    # and run it again with NumPy's full rule where one went by: a NaN at each row of two leaves
    # and the rows left after the last eight, in the first, a middle and the last column; the
    # columns a multiple of the vector in blocks of 1 KiB of a row and a last, short one.
    rows, cols = 263, 264
    base = np.random.default_rng(5).uniform(-4, 4, (rows, cols)).astype(dtype)
    for r in range(rows):
        x = base.copy()
        for c in (0, (r * 7) % cols, cols - 1):
            x[r, c] = np.nan
        got = np_of(getattr(ops, name)(x, axis=0))
        want = getattr(np, name)(x, axis=0)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got, want)
    # Ties of -0.0 and +0.0 (either is a right answer, and NumPy's pick varies with its SIMD
    # lanes): the first row's zero, as one output at a time keeps it.
    zeros = np.zeros((rows, 2 * cols), dtype)
    zeros[np.random.default_rng(6).random((rows, 2 * cols)) < 0.5] = -0.0
    packed = np.ascontiguousarray(zeros[:, ::2])
    got = np_of(getattr(ops, name)(packed, axis=0))
    assert_same_bits(got, np_of(getattr(ops, name)(zeros[:, ::2], axis=0)))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(packed[0]))


ARG_SHAPES = [((2, 3), 0), ((9, 1025), 0), ((130, 2049), 0), ((70_001, 2), 0), ((4099, 129), 0),
              ((5, 300, 66), 1), ((2, 2**17 + 3, 3), 1)]


def tied_values(rng, shape, dtype):
    """Few distinct values, so that a column's extreme repeats (the first must win); for floats a
    NaN in one row in a thousand and two in one column (the first must win)."""
    x = rng.integers(0, 4, shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.integers(0, 3, shape)
    x = x.astype(dtype)
    if x.dtype.kind in "fc":
        x[rng.random(shape) < 0.001] = np.nan
        column = x.reshape(-1, shape[-1])[:, shape[-1] // 2]
        column[[len(column) // 3, len(column) // 2]] = np.nan
    return x


@pytest.mark.parametrize("dtype", DTYPES + ["float16"])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_column_arg_extremes_are_numpys(name, dtype):
    # argmin/argmax along a strided axis with the outputs side by side read the rows in order,
    # blocks of 1,024 outputs at a time and long columns in parts taken in order: ties and NaNs
    # everywhere, blocks and a short last one, parts, and a 3-d array along its middle axis.
    rng = np.random.default_rng(21)
    for shape, axis in ARG_SHAPES:
        x = tied_values(rng, shape, dtype)
        got = np_of(getattr(ops, name)(x, axis=axis))
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, getattr(np, name)(x, axis=axis), err_msg=str(shape))
    if dtype.startswith("float"):  # a NaN at every row, in the first, a middle and the last column
        base = rng.uniform(-4, 4, (263, 1030)).astype(dtype)
        for r in range(0, 263, 3):
            x = base.copy()
            x[r, [0, (r * 7) % 1030, 1029]] = np.nan
            x[(r + 100) % 263, [0, 1029]] = np.nan
            np.testing.assert_array_equal(np_of(getattr(ops, name)(x, axis=0)),
                                          getattr(np, name)(x, axis=0))


def test_column_and_transposed_args_do_not_depend_on_the_thread_count():
    # Long columns are split into as many parts as there are threads, and a transposed matrix's
    # runs into tasks: the extreme tied across every split, on 1 to 8 threads.
    import os
    import subprocess
    import sys

    code = ("import numpy as np, arrayport.ops as ops\n"
            "ok = []\n"
            "for shape in [(70_001, 3), (2**17 + 3, 1), (3, 2**16 + 1)]:\n"
            "    n = shape[0]\n"
            "    x = np.zeros(shape, np.float32)\n"
            "    x[[n // 2 + 1, n - 2]] = 5\n"
            "    x[[n // 3, n - 1]] = -5\n"
            "    y = x.copy()\n"
            "    y[[3 * n // 4, n - 3]] = np.nan\n"
            "    for f in ('argmax', 'argmin'):\n"
            "        for z in (x, y):\n"
            "            ok.append(np.array_equal(np.asarray(getattr(ops, f)(z, axis=0)),\n"
            "                                     getattr(np, f)(z, axis=0)))\n"
            "            ok.append(int(np.asarray(getattr(ops, f)(z.T))) == getattr(np, f)(z.T))\n"
            "print(ok)\n")
    for threads in ("1", "3", "8"):
        env = dict(os.environ, ARRAYPORT_NUM_THREADS=threads)
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert res.returncode == 0, res.stderr
        assert "False" not in res.stdout and "True" in res.stdout, (threads, res.stdout)


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_args_of_long_transposed_runs_cross_segments(name, dtype):
    # A transposed run longer than 2^16 is searched in segments of 2^16 taken in order: the
    # extreme on either side of the edge, tied in the other run, and NaNs after it.
    n = 2**16 + 40
    sign = 1 if name == "argmax" else -1
    for pos in (0, 2**16 - 1, 2**16, n - 1):
        x = np.full((2, n), 50, dtype)
        x[1, pos] = x[0, n - 1 - pos // 2] = 50 + sign * 7
        cases = [x]
        if dtype.startswith("float"):
            y = x.copy()
            y[1, (pos + 3) % n] = y[0, n - 2] = np.nan
            cases.append(y)
        for z in cases:
            assert np_of(getattr(ops, name)(z.T)) == getattr(np, name)(z.T), pos


@pytest.mark.parametrize("dtype", DTYPES + ["float16"])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_args_of_transposed_arrays_keep_c_order(name, dtype):
    # A full argmin/argmax of a transposed matrix searches its contiguous runs and maps each
    # index back to C order: ties between runs go to the lower C index, not the first in memory.
    rng = np.random.default_rng(22)
    for shape in [(300, 200), (2, 70_001), (70_001, 2), (1, 5), (4, 6, 5)]:
        x = tied_values(rng, shape, dtype)
        for t in (x.T, x.transpose(1, 0, *range(2, x.ndim)), x.T[::2], x.T[:, ::-1]):
            assert np_of(getattr(ops, name)(t)) == getattr(np, name)(t), (shape, t.strides)


@pytest.mark.parametrize("container", ["numpy", "array"] + (["device"] if HAS_GPU else []))
@pytest.mark.parametrize("name", FREE_ORDER + ["argmin", "argmax"])
def test_full_reductions_of_transposed_arrays_match_numpy(name, container):
    rng = np.random.default_rng(3)
    x = np.round(rng.standard_normal((300, 200)) * 4).astype("float64")  # ties for argmin/max
    x[7, 5] = x[2, 150] = 1000.0  # the maximum twice: x.T's C order meets [5, 7] first,
    x[9, 3] = x[1, 160] = -1000.0  # memory order [150, 2]; the minimum likewise
    source = {"numpy": x, "array": ap.view(x), "device": ap.copy(x, memory="device")
              if container == "device" else None}[container]
    got = getattr(ops, name)(source.T)
    want = getattr(np, name)(x.T)
    if name in ("sum", "mean", "prod"):
        np.testing.assert_allclose(np_of(got), want, rtol=1e-12)
    else:
        assert np_of(got) == want


GPU_SHAPES = [(1, 32), (3, 33), (255, 64), (257, 31), (1000, 40), (4097, 96), (70000, 33),
              (200, 3, 50)]


@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA device")
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["bool", "int32", "float32", "float64", "complex64"])
@pytest.mark.parametrize("name", FREE_ORDER + ["argmin", "argmax"])
def test_column_reductions_on_the_gpu_match_numpy(name, dtype, shape):
    # Outputs side by side, reduced along axis 0: the GPU's column kernel (a warp per 32
    # neighbouring outputs, rows split over blocks where outputs are few).
    x = values(np.random.default_rng(len(shape) * shape[0]), int(np.prod(shape)), dtype,
               special=dtype.startswith("float")).reshape(shape)
    if name == "prod" and x.dtype.kind in "fc":
        x = x[:20]  # longer products of values up to 4 overflow where the grouping decides
    try:
        want = numpy_reduction(name, x, 0)
    except (TypeError, ValueError) as e:
        with pytest.raises(type(e)):
            getattr(ops, name)(ap.copy(x, memory="device"), axis=0)
        return
    got = np_of(getattr(ops, name)(ap.copy(x, memory="device"), axis=0))
    assert got.dtype == want.dtype
    if want.dtype.kind in "fc" and name in ("sum", "mean"):
        # Both within k * eps * sum(|terms|) of the truth (NumPy adds in order, the GPU as a tree).
        eps = np.finfo(want.dtype).eps
        bound = 2 * (np.log2(x.shape[0]) + 2) * eps * np.sum(np.abs(x), axis=0)
        bound = bound / (x.shape[0] if name == "mean" else 1)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        both = np.isfinite(got) & np.isfinite(want)
        assert np.all(np.abs(got[both] - want[both]) <= bound[both] + np.finfo(want.dtype).tiny)
    elif want.dtype.kind in "fc" and name == "prod":
        np.testing.assert_allclose(got, want, rtol=1e-5 if want.dtype.itemsize <= 8 else 1e-12,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)
