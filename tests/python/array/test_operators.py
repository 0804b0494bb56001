"""Array's operators and methods (arrayport/_operators.py) against NumPy's on the same values:
dtype x shape x layout x the other operand's kind (Array, NumPy array, NumPy scalar, Python
scalar, nested list), forward, reflected and in place; the result's dtype must be NumPy 2's
(NEP 50), its values within ops' documented tolerances."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arrayport as ap

DTYPES = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64", "complex64",
          "complex128"]
RTOL = {"float16": 1e-3, "float32": 2e-6, "complex64": 2e-6, "float64": 1e-12, "complex128": 1e-12}
BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "//": operator.floordiv, "%": operator.mod, "**": operator.pow,
          "&": operator.and_, "|": operator.or_, "^": operator.xor}
INPLACE = {"+": operator.iadd, "-": operator.isub, "*": operator.imul, "/": operator.itruediv,
           "//": operator.ifloordiv, "%": operator.imod, "**": operator.ipow,
           "&": operator.iand, "|": operator.ior, "^": operator.ixor}
COMPARISONS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
               ">": operator.gt, ">=": operator.ge}


def values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    v = rng.uniform(1, 5, size=shape)  # no zeros (division), small enough for every dtype
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.uniform(1, 5, size=shape)
    return np.array(v, dtype=dtype)  # an ndarray also for shape () (not a NumPy scalar)


def layout(n, kind):
    """A view of n in one layout (a NumPy array, whose memory the Array then views)."""
    if kind == "strided":
        big = np.repeat(n, 2, axis=-1) if n.ndim else n
        return big[..., ::2] if n.ndim else n
    if kind == "reversed":
        return n[::-1] if n.ndim else n
    if kind == "transposed":
        return np.ascontiguousarray(n.T).T if n.ndim else n
    return n


def close(got, want, dtype):
    got_np = np.asarray(got.get() if isinstance(got, ap.Array) else got)
    assert got_np.shape == np.shape(want)
    assert got_np.dtype == np.asarray(want).dtype, (got_np.dtype, np.asarray(want).dtype)
    rtol = RTOL.get(got_np.dtype.name)
    if rtol:
        np.testing.assert_allclose(got_np, want, rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(got_np, want)


def not_arrayports(want):
    """Whether NumPy's result is one arrayport.ops refuses: a dtype it has not (bool // bool is
    int8)."""
    return np.asarray(want).dtype.name not in DTYPES


def other_operand(kind, n_other, dtype):
    """(what the Array's operator gets, what NumPy's gets) for the other operand."""
    if kind == "array":
        return ap.asarray(n_other), n_other
    if kind == "numpy":
        return n_other, n_other
    if kind == "numpy-scalar":
        s = np.dtype(dtype).type(n_other.flat[0] if n_other.size else 2)
        return s, s
    if kind == "python-scalar":
        s = {"b": True, "u": 3, "i": -3, "f": 2.5, "c": 1.5 - 2j}[np.dtype(dtype).kind]
        return s, s
    if n_other.ndim == 0:  # tolist() of 0-d is a Python scalar: the same on both sides
        return n_other.item(), n_other.item()
    return n_other.tolist(), np.asarray(n_other.tolist())  # a nested list, as NumPy reads it


shapes = st.sampled_from([(), (1,), (7,), (3, 4), (2, 3, 5), (0, 3)])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op=st.sampled_from(list(BINARY) + list(COMPARISONS)), d1=st.sampled_from(DTYPES),
       d2=st.sampled_from(DTYPES),
       shape=shapes, kind=st.sampled_from(["array", "numpy", "numpy-scalar", "python-scalar", "list"]),
       lay=st.sampled_from(["contiguous", "strided", "reversed", "transposed"]),
       reflected=st.booleans(), seed=st.integers(0, 2**16))
def test_binary_operators_match_numpy(op, d1, d2, shape, kind, lay, reflected, seed):
    n = layout(values(shape, d1, seed), lay)
    a = ap.asarray(n)
    theirs, numpy_theirs = other_operand(kind, values(shape, d2, seed + 1), d2)
    f = {**BINARY, **COMPARISONS}[op]
    left, right = (theirs, a) if reflected else (a, theirs)
    n_left, n_right = (numpy_theirs, n) if reflected else (n, numpy_theirs)
    try:
        with np.errstate(all="ignore"):
            want = f(n_left, n_right)
    except (TypeError, ValueError, OverflowError) as e:  # NumPy refuses (bool -, shapes, -3 as
        # uint8): so must arrayport
        with pytest.raises(type(e)):
            f(left, right)
        return
    if not_arrayports(want):
        with pytest.raises(TypeError, match="not supported for dtype"):
            f(left, right)
        return
    got = f(left, right)
    assert isinstance(got, ap.Array)  # also with NumPy on the left: it defers to the Array
    close(got, want, d1)


@settings(max_examples=200, deadline=None)
@given(op=st.sampled_from(list(INPLACE)), dtype=st.sampled_from(DTYPES), shape=shapes,
       kind=st.sampled_from(["array", "numpy-scalar", "python-scalar"]), seed=st.integers(0, 2**16))
def test_in_place_operators_write_the_array_or_refuse_a_cast(op, dtype, shape, kind, seed):
    n = values(shape, dtype, seed)
    a = ap.asarray(n.copy())
    theirs, numpy_theirs = other_operand(kind, values(shape, dtype, seed + 1), dtype)
    with np.errstate(all="ignore"):
        try:
            want = BINARY[op](n, numpy_theirs)
        except ValueError:  # integers to negative integer powers: so must arrayport refuse
            with pytest.raises(ValueError, match="negative integer powers"):
                INPLACE[op](a, theirs)
            return
        except TypeError:
            want = None
    if want is not None and not_arrayports(want):
        want = None
    if want is None or np.asarray(want).dtype != n.dtype:
        # NumPy would cast back (same_kind) or refuse; arrayport never casts silently: refuses.
        with pytest.raises(TypeError):
            INPLACE[op](a, theirs)
        return
    ptr = a.ptr
    result = INPLACE[op](a, theirs)
    assert result is a and a.ptr == ptr  # in place: the same memory
    close(a, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_operators_match_numpy(dtype):
    n = values((3, 4), dtype, 1)
    a = ap.asarray(n)
    for f in (operator.neg, operator.pos, abs, operator.invert):
        try:
            want = f(n)
        except TypeError:
            with pytest.raises(TypeError, match="not supported for dtype"):
                f(a)
            continue
        close(f(a), want, dtype)


@pytest.mark.parametrize("other", ["x", None, object()])
def test_comparing_with_what_is_no_array_is_identity_or_python_s_type_error(other):
    a = ap.asarray(np.arange(3.0))
    assert (a == other) is False and (a != other) is True and (other == a) is False
    for f in (operator.lt, operator.le, operator.gt, operator.ge):
        with pytest.raises(TypeError, match="not supported between instances"):
            f(a, other)


def test_an_array_is_unhashable_and_equal_values_compare_equal():
    a = ap.asarray(np.arange(4.0))
    with pytest.raises(TypeError, match="unhashable type: 'arrayport.Array'"):
        hash(a)
    assert (a == a.copy()).tolist() == [True] * 4
    assert (a[::-1] <= 1.5).tolist() == [False, False, True, True]
    assert (np.arange(4) > a).tolist() == [False] * 4  # NumPy on the left defers to the Array


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_methods_match_numpy(dtype, axis, keepdims):
    n = values((4, 5), dtype, 2)
    a = ap.asarray(n)
    for name in ("sum", "mean", "min", "max", "prod", "any", "all", "argmin", "argmax"):
        if name in ("min", "max") and n.dtype.kind == "c":
            with pytest.raises(TypeError):
                getattr(a, name)(axis, keepdims)
            continue
        if name in ("argmin", "argmax") and isinstance(axis, tuple):  # one axis, as NumPy's
            with pytest.raises(TypeError, match=f"{name}: axis: expected None or an int"):
                getattr(a, name)(axis, keepdims)
            continue
        with np.errstate(over="ignore"):  # a float16 product of 20 values: inf on both sides
            want = getattr(n, name)(axis=axis, keepdims=keepdims)
        got = getattr(a, name)(axis, keepdims)
        got_np = np.asarray(got.get())
        rtol = {"float16": 1e-2, "float32": 1e-5, "complex64": 1e-5}.get(dtype, 1e-12)
        assert got_np.shape == np.shape(want) and got_np.dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got_np, want, rtol=rtol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tolist_item_astype_and_iteration_match_numpy(dtype):
    n = values((2, 3), dtype, 3)
    a = ap.asarray(n)
    assert a.tolist() == n.tolist()
    assert type(a[1, 2].item()) is type(n[1, 2].item()) and a[1, 2].item() == n[1, 2].item()
    assert [row.tolist() for row in a] == [row.tolist() for row in n]
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        iter(a[0, 0])
    with pytest.raises(ValueError, match="item: can only convert an array of size 1"):
        a.item()
    for to in ("float64", "int32", "complex128"):
        if n.dtype.kind == "c" and to != "complex128":
            continue  # NumPy warns (ComplexWarning) and drops the imaginary part
        close(a.astype(to), n.astype(to), to)


def test_bfloat16_tolist_and_item_are_its_exact_float_values():
    b = ap.ops.astype(np.array([1.0, 2.5, -3.0], np.float32), "bfloat16")
    assert b.tolist() == [1.0, 2.5, -3.0] and b[1].item() == 2.5


def test_the_inner_product_operator_is_ops_dot_for_1d():
    x, y = np.arange(5.0), np.arange(5.0)[::-1]
    assert (ap.asarray(x) @ ap.asarray(y)).item() == x @ y
    assert (x @ ap.asarray(y)).item() == x @ y
    with pytest.raises(TypeError, match="expected two 1-d arrays"):
        ap.asarray(np.eye(2)) @ ap.asarray(np.eye(2))


@pytest.mark.parametrize("other", ["x", b"ab", None, object(), {1: 2}])
def test_an_operand_that_is_no_array_is_python_s_type_error(other):
    # The Array declines (NotImplemented); text on the left has its own rules (bytes + buffer
    # concatenates, as with an ndarray), so the reflected side is checked for the others only.
    a = ap.asarray(np.arange(3.0))
    for f in BINARY.values():
        # a * "x" falls to str's repetition, which asks a for an index: a TypeError all the same.
        with pytest.raises(TypeError, match="unsupported operand type|only integer scalar arrays"):
            f(a, other)
        if not isinstance(other, (str, bytes)):
            with pytest.raises(TypeError, match="unsupported operand type"):
                f(other, a)


def test_numpy_functions_still_return_numpy_arrays():
    # __array_priority__ changes NumPy's operators only: its functions convert as before.
    a = ap.asarray(np.arange(3.0))
    assert type(np.add(a, 1)) is np.ndarray and type(np.sqrt(a)) is np.ndarray
