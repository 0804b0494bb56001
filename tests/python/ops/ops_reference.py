"""What arrayport.ops is checked against (tests/python/ops): operands of every dtype (bfloat16 as
an arrayport Array), NumPy's results as arrayport computes them, and the tolerances
(arrayport.ops documents them: integers and bool exact; float64 1e-12; float32 / complex64 2e-6
element-wise and 1e-5 for reductions; float16 1e-3, one rounding of a float32 result as NumPy
does; bfloat16 1e-2, against float32 arithmetic on the bfloat16-rounded inputs)."""

from __future__ import annotations

import numpy as np

import arrayport as ap
from arrayport import ops

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
