"""Regression tests for what the fuzz targets (tests/fuzz) and the property tests found.

Each reproduces one finding through the public API: a producer's malformed description is refused
with an error naming the argument (never a crash or a view of other memory), and indexing keeps
NumPy's answers at the edges.
"""

from __future__ import annotations

import numpy as np
import pytest

import arrayport as ap
from dlpack_ctypes import Producer

_BUF = np.zeros(64, dtype=np.float32)


class CAI:
    """A __cuda_array_interface__ producer with whatever dict a test gives it."""

    def __init__(self, **fields):
        self.d = {"version": 3, "shape": (4,), "typestr": "<f4", "data": (_BUF.ctypes.data, False),
                  "strides": None}
        self.d.update(fields)

    @property
    def __cuda_array_interface__(self):
        return self.d


# ---- __cuda_array_interface__ ------------------------------------------------------------------

def test_cai_accepts_the_well_formed_dict():
    # The baseline the refusals below differ from in one field each.
    v = ap.view(CAI(), protocol="cai")
    assert v.shape == (4,) and v.ptr == _BUF.ctypes.data


def test_cai_typestr_with_a_lone_surrogate_is_a_type_error():
    # PyUnicode_AsUTF8 fails for it: the parser used to read through a NULL pointer (a crash).
    with pytest.raises(TypeError, match=r"^obj: __cuda_array_interface__\['typestr'\] is not valid UTF-8"):
        ap.view(CAI(typestr="<f\ud8004"), protocol="cai")


def test_cai_typestr_with_an_embedded_nul_is_refused():
    # Used to be read up to the NUL: "<f4\0junk" was taken as float32.
    with pytest.raises(TypeError, match=r"unsupported typestr"):
        ap.view(CAI(typestr="<f4\0junk"), protocol="cai")


def test_cai_negative_data_pointer_is_refused():
    with pytest.raises(ValueError, match=r"expected a non-negative pointer"):
        ap.view(CAI(data=(-_BUF.ctypes.data, False)), protocol="cai")


def test_cai_shape_whose_compact_strides_overflow_is_refused():
    # Row-major strides of this shape overflow int64 (signed overflow, UB, before the fix).
    with pytest.raises(ValueError, match=r"shape \(3, 4611686018427387904, 4\) has "
                                         r"55340232221128654848 elements, more than 2\^63-1"):
        ap.view(CAI(shape=(3, 2**62, 4)), protocol="cai")


def test_cai_empty_array_whose_implied_strides_overflow_is_accepted():
    # No element to address: the trailing extents' product may overflow (the fuzz oracle once
    # expected those unused strides to be compact).
    v = ap.view(CAI(shape=(0, 3, 2**62, 4)), protocol="cai")
    assert v.shape == (0, 3, 2**62, 4) and v.size == 0 and v.nbytes == 0


def test_cai_more_elements_than_int64_is_refused():
    # Stride-0 axes let the span fit while the element count overflowed int64 (UB in the
    # contiguity check and in size / nbytes).
    with pytest.raises(ValueError, match=r"has 13835058055282163712 elements, more than 2\^63-1"):
        ap.view(CAI(shape=(2**62, 3), strides=(0, 0)), protocol="cai")


# ---- DLPack --------------------------------------------------------------------------------------

def test_dlpack_byte_offset_past_the_address_space_is_refused_and_deleted_once():
    # data + byte_offset wrapped around to data - 8: a view of the memory before the tensor.
    p = Producer(values=(1.0, 2.0), byte_offset=2**64 - 8)
    with pytest.raises(ValueError, match=r"^obj: DLPack byte_offset 18446744073709551608 takes the data pointer past"):
        ap.view(p, protocol="dlpack")
    assert p.deleted == 1


def test_dlpack_shape_whose_compact_strides_overflow_is_refused_and_deleted_once():
    p = Producer(values=(1.0,), shape=(3, 2**62, 4))
    with pytest.raises(ValueError, match=r"shape \(3, 4611686018427387904, 4\) has "
                                         r"55340232221128654848 elements, more than 2\^63-1"):
        ap.view(p, protocol="dlpack")
    assert p.deleted == 1


def test_dlpack_empty_tensor_whose_implied_strides_overflow_is_accepted_and_deleted_once():
    p = Producer(values=(1.0,), shape=(0, 3, 2**62, 4))
    v = ap.view(p, protocol="dlpack")
    assert v.shape == (0, 3, 2**62, 4) and v.size == 0 and v.nbytes == 0
    del v
    assert p.deleted == 1


# ---- indexing --------------------------------------------------------------------------------------

def test_huge_slice_step_gives_a_stride_that_fits():
    # stride * step * itemsize overflowed int64 into a negative byte stride for a forward slice.
    a = ap.zeros((10,), "int64", memory="host")
    s = a[:: 3 * 2**60]
    assert s.shape == (1,)
    assert 0 < s.strides[0] < 2**63
    assert s.ptr == a.ptr
    np.testing.assert_array_equal(s.get(), np.zeros(1, np.int64))


def test_indexing_an_empty_array_keeps_a_null_pointer_null():
    # Offsets used to be added to the NULL data of an empty array (UB).
    a = ap.zeros((0, 5), "float32", memory="host")
    s = a[:, 3]
    assert s.shape == (0,) and s.ptr == a.ptr


@pytest.mark.parametrize("perm", [(0, 2, 1), (2, 1, 0), (1, 0, 2)])
def test_empty_arrays_are_contiguous_in_every_order(perm):
    # Found by the property tests (array/test_views.py): a zero extent that was not scanned first
    # was missed, so a transposed empty array was not C-contiguous and refused to reshape (NumPy
    # reshapes it).
    a = ap.zeros((0, 2, 0), "bool", memory="host").transpose(*perm)
    n = np.zeros((0, 2, 0), bool).transpose(*perm)
    assert a.c_contiguous == n.flags.c_contiguous == True  # noqa: E712
    assert a.f_contiguous == n.flags.f_contiguous == True  # noqa: E712
    assert a.reshape((0,)).shape == n.reshape((0,)).shape


def test_empty_arrays_view_as_any_dtype_whatever_their_strides():
    # Found by the property tests (array/test_views.py): view(dtype) checked the strides of an
    # empty array against the new itemsize; NumPy views it (its strides address nothing).
    a = ap.zeros((0, 2), "bool", memory="host").T
    n = np.zeros((0, 2), bool).T
    assert a.view("int16").shape == n.view(np.int16).shape
