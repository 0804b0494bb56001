"""Element-wise ops over N-d operands in any axis order: the kernel walks them in the output's
memory order, and a new result takes NumPy's order 'K' (the axis order of the first input of the
result's full shape), so that a transposed input runs as one flat pass.

Swept by Hypothesis: rank 2 to 4, extents 1 to 9 (1s included), every axis permutation, reversed
axes, a second operand in the same order, in C order or broadcast, out= in either order, and the
containers NumPy, arrayport Array (and with a GPU device memory). Values are NumPy's (exact for
exact ops, within the dtype's tolerance otherwise); where every input shares one layout, the
result's strides are NumPy's too. copy and astype stay C-contiguous whatever the input's order.
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
from test_ops_properties import BINARY, NUMPY_DTYPES, SETTINGS, UNARY, assert_close, exactness
from test_ops_properties import values

CONTAINERS = ["numpy", "array"] + (["device"] if HAS_GPU else [])


@st.composite
def layouts(draw):
    nd = draw(st.integers(2, 4))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=nd, max_size=nd)))
    perm = tuple(draw(st.permutations(range(nd))))
    flips = tuple(draw(st.lists(st.booleans(), min_size=nd, max_size=nd)))
    return shape, perm, flips


def laid_out(rng, dtype, shape, perm, flips, container):
    """(operand, NumPy twin): values of `shape` stored with axes in `perm` order (outermost
    first), reversed along the `flips` axes."""
    stored = values(rng, int(np.prod(shape)), dtype).reshape([shape[p] for p in perm])
    inverse = tuple(int(i) for i in np.argsort(perm))
    key = tuple(slice(None, None, -1) if f else slice(None) for f in flips)
    twin = stored.transpose(inverse)[key]
    if container == "numpy":
        return twin, twin
    base = ap.view(stored) if container == "array" else ap.copy(stored, memory="device")
    return base.transpose(inverse)[key], twin


def run(name, operands, out=None):
    with np.errstate(all="ignore"):
        return getattr(ops, name)(*operands, **({} if out is None else {"out": out}))


def numpy_result(name, operands):
    fn = BINARY.get(name) or UNARY[name]
    with np.errstate(all="ignore"):
        return fn(*operands)


@SETTINGS
@given(name=st.sampled_from(sorted(set(BINARY) | set(UNARY))),
       dtype=st.sampled_from(NUMPY_DTYPES), layout=layouts(),
       other=st.sampled_from(["same", "c", "broadcast"]),
       out=st.sampled_from([None, "c", "same"]), container=st.sampled_from(CONTAINERS),
       seed=st.integers(0, 2**32 - 1))
def test_ops_over_permuted_axes_match_numpy(name, dtype, layout, other, out, container, seed):
    rng = np.random.default_rng(seed)
    shape, perm, flips = layout
    x, rx = laid_out(rng, dtype, shape, perm, flips, container)
    operands, twins = [x], [rx]
    if name in BINARY:
        if other == "same":
            y, ry = laid_out(rng, dtype, shape, perm, flips, container)
        elif other == "c":
            y, ry = laid_out(rng, dtype, shape, tuple(range(len(shape))), (False,) * len(shape),
                             container)
        else:  # the last axis alone, broadcast over the others
            y, ry = laid_out(rng, dtype, (1,) * (len(shape) - 1) + shape[-1:],
                             tuple(range(len(shape))), (False,) * len(shape), container)
        operands.append(y)
        twins.append(ry)
    try:
        want = numpy_result(name, twins)
    except (TypeError, ValueError) as e:
        with pytest.raises(type(e)):
            run(name, operands)
        return
    if str(want.dtype) not in {"bool", "uint8", "int32", "int64", "uint64", "float16", "float32",
                               "float64", "complex64", "complex128"}:
        with pytest.raises(TypeError):
            run(name, operands)
        return
    target = None
    if out is not None and str(want.dtype) in NUMPY_DTYPES:
        order = perm if out == "same" else tuple(range(len(shape)))
        target, _ = laid_out(rng, str(want.dtype), shape, order, (False,) * len(shape), container)
    got = run(name, operands, target)
    if target is not None:
        assert got is target
    assert str(got.dtype) == str(want.dtype)
    assert_close(got, want, str(want.dtype), exactness(name, dtype)(str(want.dtype)))
    if target is None and (name in UNARY or other == "same") and name != "copy":
        # An axis of extent 1 may have any stride; the others are NumPy's.
        longer = [d for d, e in enumerate(shape) if e > 1]
        assert [got.strides[d] for d in longer] == [want.strides[d] for d in longer], (
            got.strides, want.strides)


COPIES = {"copy": lambda a: ops.copy(a), "astype": lambda a: ops.astype(a, "float64"),
          "clip": lambda a: ops.clip(a, None, None)}


@pytest.mark.parametrize("container", CONTAINERS)
@pytest.mark.parametrize("name", sorted(COPIES))
def test_copies_of_transposed_arrays_are_c_contiguous(name, container):
    x, rx = laid_out(np.random.default_rng(0), "float32", (3, 4, 5), (2, 0, 1), (False,) * 3,
                     container)
    got = COPIES[name](x)
    assert got.c_contiguous
    np.testing.assert_array_equal(np_of(got), rx.astype(got.dtype))


@pytest.mark.parametrize("container", CONTAINERS)
def test_a_transposed_result_is_one_flat_pass_over_every_operand(container):
    # (rows, cols) F-ordered: the result is F-ordered too, NumPy's strides, the values NumPy's.
    x, rx = laid_out(np.random.default_rng(1), "float64", (300, 200), (1, 0), (False, False),
                     container)
    y, ry = laid_out(np.random.default_rng(2), "float64", (300, 200), (1, 0), (False, False),
                     container)
    got = ops.multiply(x, y)
    assert got.strides == (8, 2400) and not got.c_contiguous
    np.testing.assert_array_equal(np_of(got), rx * ry)
    assert ops.exp(x).strides == (8, 2400)
