"""arrayport.array_api, the array API namespace (Array.__array_namespace__): what it holds and
what it lacks, creation defaults, the reductions' keyword forms, and the views (reshape,
permute_dims, expand_dims, squeeze, matrix_transpose, mT) against NumPy over shapes and axes, on
host memory and, with a GPU, on device and managed memory."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arrayport as ap
from conftest import HAS_GPU

xp = pytest.importorskip("arrayport.array_api")

DEVICES = [("cpu", 0)] + ([("cuda", 0), ("cuda_managed", 0)] if HAS_GPU else [])
DTYPES = ["bool", "uint8", "int32", "int64", "float32", "float64", "complex64", "complex128"]
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


def host(a):
    return a.get() if isinstance(a, ap.Array) else np.asarray(a)


def test_an_array_names_this_namespace_and_checks_the_version():
    a = ap.asarray([1.0, 2.0])
    assert a.__array_namespace__() is xp
    assert a.__array_namespace__(api_version="2023.12") is xp
    with pytest.raises(ValueError, match="api_version: expected None or one of .*got '2030.1'"):
        a.__array_namespace__(api_version="2030.1")
    assert xp.__array_api_version__ == "2024.12"


def test_it_holds_the_dtypes_ops_computes_in_and_no_others():
    for name in DTYPES:
        assert getattr(xp, name) == np.dtype(name)
    for name in ("int8", "int16", "uint16", "uint32", "uint64", "acos", "matmul", "sort"):
        assert not hasattr(xp, name), name  # absent, so that hasattr tells what it lacks
    assert xp.pow is ap.ops.power and xp.add is ap.ops.add


@pytest.mark.parametrize("device", DEVICES)
def test_creation_defaults_follow_the_standard(device):
    assert xp.zeros(3, device=device).dtype == xp.float64
    assert xp.full((2,), 7, device=device).dtype == xp.int64
    assert xp.full((2,), True, device=device).dtype == xp.bool
    assert xp.full((2,), 1j, device=device).dtype == xp.complex128
    a = xp.ones((2, 3), dtype=xp.int32, device=device)
    assert a.device == device and host(a).tolist() == [[1, 1, 1]] * 2
    assert host(xp.arange(1, 7, 2, device=device)).tolist() == [1, 3, 5]
    assert host(xp.linspace(0, 1, 5, device=device)).tolist() == [0, 0.25, 0.5, 0.75, 1.0]
    np.testing.assert_array_equal(host(xp.eye(3, 4, k=1, device=device)), np.eye(3, 4, 1))
    z = xp.zeros_like(a)
    assert z.device == device and z.dtype == xp.int32 and host(z).sum() == 0
    assert host(xp.full_like(a, 5)).tolist() == [[5, 5, 5]] * 2
    assert a.to_device(device) is a
    assert a.to_device(("cpu", 0)).device == ("cpu", 0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_take_the_standards_keywords(device, dtype):
    n = np.arange(1, 13).reshape(3, 4).astype(dtype)
    a = xp.asarray(n, device=device)
    if dtype != "bool":
        np.testing.assert_array_equal(host(xp.sum(a, axis=1, keepdims=True)),
                                      n.sum(axis=1, keepdims=True))
        assert xp.sum(a).dtype == np.sum(n).dtype
        got = xp.prod(a, axis=0, dtype=xp.complex128 if "complex" in dtype else xp.float64)
        np.testing.assert_allclose(host(got), n.prod(axis=0, dtype=got.dtype), rtol=1e-12)
    if dtype not in ("bool", "complex64", "complex128"):  # the standard leaves complex unordered
        np.testing.assert_array_equal(host(xp.max(a, axis=(0, 1))), n.max())
        np.testing.assert_array_equal(host(xp.argmin(a, axis=1, keepdims=True)),
                                      n.argmin(axis=1, keepdims=True))
    np.testing.assert_array_equal(host(xp.all(a, axis=0)), n.all(axis=0))
    np.testing.assert_array_equal(host(xp.any(a, axis=-1, keepdims=True)),
                                  n.any(axis=-1, keepdims=True))
    with pytest.raises(TypeError):
        xp.sum(a, 0)  # axis is keyword-only in the standard


@SETTINGS
@given(shape=shapes, data=st.data(), device=st.sampled_from(DEVICES))
def test_views_reshape_and_reorder_axes_as_numpy(shape, data, device):
    n = np.arange(int(np.prod(shape)), dtype="int32").reshape(shape)
    a = xp.asarray(n, device=device)
    perm = data.draw(st.permutations(range(len(shape))))
    np.testing.assert_array_equal(host(xp.permute_dims(a, tuple(perm))), n.transpose(perm))
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    np.testing.assert_array_equal(host(xp.expand_dims(a, axis=axis)), np.expand_dims(n, axis))
    ones = tuple(i for i, e in enumerate(shape) if e == 1)
    if ones:
        picked = tuple(data.draw(st.sets(st.sampled_from(ones), min_size=1)))
        np.testing.assert_array_equal(host(xp.squeeze(a, axis=picked)), n.squeeze(picked))
        # The same axes of a permuted view (no longer C-contiguous): still a view, squeezed.
        p = xp.permute_dims(a, tuple(perm))
        moved = tuple(perm.index(i) for i in picked)
        squeezed = xp.squeeze(p, axis=moved)
        np.testing.assert_array_equal(host(squeezed), n.transpose(perm).squeeze(moved))
        assert squeezed.size == 0 or squeezed.ptr == p.ptr
    if len(shape) >= 2:
        np.testing.assert_array_equal(host(xp.matrix_transpose(a)), np.swapaxes(n, -1, -2))
        np.testing.assert_array_equal(host(a.mT), np.swapaxes(n, -1, -2))
    flat = xp.reshape(a, (-1,))
    np.testing.assert_array_equal(host(flat), n.reshape(-1))
    if len(shape) >= 2 and min(shape) > 1:  # not C-contiguous: copied, unless copy=False
        t = xp.permute_dims(a, tuple(reversed(range(len(shape)))))
        np.testing.assert_array_equal(host(xp.reshape(t, (-1,))), n.T.reshape(-1))
        with pytest.raises(ValueError, match="reshape: copy=False, but x is not C-contiguous"):
            xp.reshape(t, (-1,), copy=False)
    copied = xp.reshape(a, (n.size,), copy=True)
    assert copied.size == 0 or copied.ptr != a.ptr


def test_view_functions_refuse_bad_axes_by_name():
    a = xp.zeros((2, 1, 3))
    with pytest.raises(ValueError, match="squeeze: axis 0 has extent 2, expected 1"):
        xp.squeeze(a, axis=0)
    with pytest.raises(IndexError, match=r"squeeze: axis: expected in \[-3, 2\], got 3"):
        xp.squeeze(a, axis=3)
    with pytest.raises(IndexError, match=r"expand_dims: axis: expected in \[-4, 3\], got 4"):
        xp.expand_dims(a, axis=4)
    with pytest.raises(ValueError, match="mT: expected an array of at least 2 dimensions, got 1"):
        xp.zeros(3).mT


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_signbit_real_and_imag_match_numpy(device, dtype):
    v = np.array([-0.0, 0.0, -1.5, 2.0, -np.inf, np.inf, np.nan, -np.nan], "float64")
    if dtype.startswith("complex"):
        n = np.empty(v.size, dtype)
        n.real, n.imag = v, v[::-1]  # every pairing of specials, none made by arithmetic
    else:
        n = v.astype(dtype)
    a = xp.asarray(n, device=device)
    np.testing.assert_array_equal(host(xp.real(a)), np.real(n))
    np.testing.assert_array_equal(host(xp.imag(a)), np.imag(n))
    np.testing.assert_array_equal(host(xp.real(a[::-2])), np.real(n[::-2]))  # any layout
    np.testing.assert_array_equal(host(xp.imag(a[::-2])), np.imag(n[::-2]))
    if not dtype.startswith("complex"):
        np.testing.assert_array_equal(host(xp.signbit(a)), np.signbit(n))
    else:
        with pytest.raises(TypeError, match="signbit: x: expected float32 or float64, got"):
            xp.signbit(a)


def test_dtype_functions_are_numpys_rules():
    a = xp.asarray([1], dtype=xp.uint8)
    assert xp.result_type(a, xp.int32) == xp.int32
    assert xp.result_type(xp.float32, xp.complex64, a) == xp.complex64
    assert xp.can_cast(xp.int32, xp.float64) and not xp.can_cast(xp.float64, xp.int32)
    assert xp.can_cast(a, xp.int32)
    assert xp.isdtype(xp.int32, "integral") and not xp.isdtype(xp.float32, "integral")
    assert xp.isdtype(xp.complex64, ("real floating", "complex floating"))
    with pytest.raises(TypeError, match="isdtype: dtype: expected one of bool, uint8"):
        xp.isdtype(np.dtype("int16"), "integral")
    assert xp.finfo(xp.float32).eps == np.finfo(np.float32).eps
    assert xp.iinfo(a).max == 255
    assert xp.astype(a, xp.uint8, copy=False) is a
    assert xp.astype(a, xp.float32).dtype == xp.float32


def test_inspection_lists_devices_and_dtypes():
    info = xp.__array_namespace_info__()
    assert set(info.dtypes()) == set(DTYPES)
    assert set(info.dtypes(kind="integral")) == {"uint8", "int32", "int64"}
    assert info.default_dtypes() == {"real floating": xp.float64,
                                     "complex floating": xp.complex128, "integral": xp.int64,
                                     "indexing": xp.int64}
    assert info.devices()[0] == ("cpu", 0)
    assert (("cuda", 0) in info.devices()) == HAS_GPU
    assert info.default_device() == xp.empty(0).device
    assert info.capabilities()["boolean indexing"] is False


@SETTINGS
@given(shape=shapes, data=st.data(), device=st.sampled_from(DEVICES))
def test_broadcasting_matches_numpy(shape, data, device):
    n = np.arange(int(np.prod(shape)), dtype="float32").reshape(shape)
    a = xp.asarray(n, device=device)
    # A target: leading axes, and any extent-1 axis stretched (to 0 too).
    lead = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    target = lead + tuple(data.draw(st.integers(0, 3)) if e == 1 else e for e in shape)
    b = xp.broadcast_to(a, target)
    np.testing.assert_array_equal(host(b), np.broadcast_to(n, target))
    assert b.readonly and b.device == a.device and (b.size == 0 or b.ptr == a.ptr)
    k = data.draw(st.integers(0, len(target)))
    other = np.zeros(tuple(data.draw(st.sampled_from([1, e])) for e in target[len(target) - k:]))
    assert xp.broadcast_shapes(target, other.shape) == np.broadcast_shapes(target, other.shape)
    got = xp.broadcast_arrays(a, xp.asarray(other, device=device))
    for g, w in zip(got, np.broadcast_arrays(n, other)):
        np.testing.assert_array_equal(host(g), w)


def test_broadcasting_refusals_name_the_shapes():
    with pytest.raises(ValueError, match=r"broadcast_to: cannot broadcast an array of shape \(2,\) "
                                         r"to \(3,\): axis 0 has extent 2, neither 1 nor 3"):
        xp.broadcast_to(xp.zeros(2), (3,))
    with pytest.raises(ValueError, match="the shape has fewer dimensions than the array"):
        xp.broadcast_to(xp.zeros((1, 2)), (2,))
    with pytest.raises(ValueError, match="broadcast_to: shape: expected non-negative ints"):
        xp.broadcast_to(xp.zeros(2), (-1, 2))
    with pytest.raises(ValueError, match=r"broadcast_shapes: shapes \(3,\), \(0,\) do not broadcast"):
        xp.broadcast_shapes((3,), (0,))


def test_finfo_and_iinfo_give_python_numbers():
    for d in (xp.float32, xp.float64, xp.complex64, xp.complex128):
        f = xp.finfo(d)
        assert isinstance(f.bits, int) and all(isinstance(v, float) for v in
                                               (f.eps, f.max, f.min, f.smallest_normal))
        assert f.eps == float(np.finfo(d).eps) and f.dtype == np.finfo(d).dtype
    i = xp.iinfo(xp.int32)
    assert (i.bits, i.max, i.min) == (32, 2**31 - 1, -2**31) and type(i.max) is int


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float32"])
def test_sum_and_prod_in_a_dtype_give_that_dtype(device, dtype):
    n = np.array([[200, 100, 7], [3, 250, 9]], dtype)
    a = xp.asarray(n, device=device)
    for d in ("uint8", "int32", "int64", "float32", "float64"):
        for name in ("sum", "prod"):
            got = getattr(xp, name)(a, axis=1, dtype=getattr(xp, d))
            assert got.dtype == np.dtype(d)
            np.testing.assert_array_equal(host(got), getattr(np, name)(n, axis=1, dtype=d))


class Exporter:
    """What a consumer asking for a copy gets: Array.__dlpack__(copy=True)'s capsule."""

    def __init__(self, a, **kw):
        self.a, self.kw = a, kw

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**{**kw, **self.kw, "copy": True})

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


@pytest.mark.parametrize("device", DEVICES)
def test_dlpack_copy_true_exports_a_fresh_copy(device):
    a = xp.asarray(np.arange(6.0).reshape(2, 3), device=device)
    b = ap.view(Exporter(a))
    assert b.ptr != a.ptr and b.memory == a.memory and host(b).tolist() == host(a).tolist()
    a.fill(7)  # the copy is independent
    assert host(b)[0, 0] == 0
    n = np.from_dlpack(Exporter(a, dl_device=(1, 0))) if device == ("cpu", 0) else None
    if n is not None:
        assert n.ctypes.data != a.ptr and n[0, 0] == 7
    ro = ap._core._readonly_view(a)
    w = ap.view(Exporter(ro, max_version=(1, 0)))
    assert not w.readonly and w.ptr != ro.ptr  # a copy is the consumer's to write
