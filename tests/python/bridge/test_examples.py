"""Every binding example (examples/<style>/) is a downstream project: built here against the
installed package with find_package(arrayport), then called with NumPy, arrayport and, on a GPU
machine, CuPy and PyTorch arrays. The one kernel scales x in place by f."""

from __future__ import annotations

import contextlib

import importlib
import sys

import numpy as np
import pytest

import arrayport as ap
from conftest import REPO, needs_cupy, needs_gpu, needs_torch
from dlpack_ctypes import Producer

STYLES = ["nanobind", "pybind11", "capi", "ctypes", "cython", "swig"]


@pytest.fixture(scope="module", params=STYLES)
def scale(request, example_build):
    """The example's scale(x, f), built out of tree (once per session: the docs' tests share it)."""
    style = request.param
    build = example_build(style)
    sys.path.insert(0, str(build))
    try:
        if style == "ctypes":
            sys.path.insert(0, str(REPO / "examples" / "ctypes"))
            module = importlib.import_module("scale_ctypes")
            module.load(build)
        else:
            module = importlib.import_module(f"scale_{style}")
    finally:
        sys.path.remove(str(build))
    return style, module.scale


def test_scales_numpy_in_place(scale):
    _, f = scale
    x = np.arange(8, dtype=np.float32)
    f(x, 2.5)
    np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32) * 2.5)


def test_scales_a_strided_numpy_view(scale):
    _, f = scale
    x = np.arange(10, dtype=np.float32)
    f(x[::-3], -1.0)
    expected = np.arange(10, dtype=np.float32)
    expected[::-3] *= -1
    np.testing.assert_array_equal(x, expected)


def test_scales_an_arrayport_array(scale):
    _, f = scale
    a = ap.full((5,), 3.0, "float32", memory="host")
    f(a, 2.0)
    assert np.asarray(a).tolist() == [6.0] * 5


def test_scales_memoryview_and_array_array(scale):
    import array

    _, f = scale
    buf = array.array("f", [1.0, 2.0])
    f(buf, 3.0)
    assert list(buf) == [3.0, 6.0]


def test_wrong_dtype_is_a_type_error(scale):
    _, f = scale
    with pytest.raises(TypeError, match=r"float32"):
        f(np.zeros(3, np.float64), 1.0)


def test_read_only_input_is_refused(scale):
    style, f = scale
    x = np.zeros(3, np.float32)
    x.flags.writeable = False
    with pytest.raises(BufferError if style != "swig" else (BufferError, TypeError), match="writable|read-only"):
        f(x, 1.0)
    with pytest.raises((BufferError, TypeError)):
        f(b"\x00" * 8, 1.0)


@pytest.fixture(scope="module")
def swig_module(example_build):
    build = example_build("swig")
    sys.path.insert(0, str(build))
    try:
        return importlib.import_module("scale_swig")
    finally:
        sys.path.remove(str(build))


def test_swig_names_the_argument_and_the_dtypes(swig_module):
    with pytest.raises(TypeError, match=r"^x: expected a 1-dimensional float32 array, got a "
                                        r"1-dimensional float64 one$"):
        swig_module.scale(np.zeros(3, np.float64), 1.0)
    with pytest.raises(TypeError, match=r"^x: expected a 1-dimensional float32 array, got a "
                                        r"2-dimensional float32 one$"):
        swig_module.scale(np.zeros((2, 2), np.float32), 1.0)


def test_swig_const_views_take_read_only_arrays_and_dispatch_on_the_dtype(swig_module):
    for dtype in ("float32", "float64"):
        x = np.arange(10, dtype=dtype)
        x.flags.writeable = False
        assert swig_module.total(x) == 45.0
        assert swig_module.total(x[::-3]) == 9 + 6 + 3 + 0
        assert swig_module.total(ap.asarray(x)) == 45.0
    assert swig_module.total(np.broadcast_to(np.float32(2.0), (5,))) == 10.0
    with pytest.raises(TypeError, match="total"):  # no overload takes int32
        swig_module.total(np.arange(3, dtype=np.int32))


@needs_gpu
def test_swig_host_views_refuse_device_memory(swig_module):
    with pytest.raises(TypeError, match="total"):  # no overload takes memory the host cannot read
        swig_module.total(ap.zeros(3, "float32", memory="device"))


def test_not_an_array_is_a_type_error(scale):
    _, f = scale
    with pytest.raises(TypeError):
        f(3, 1.0)


def test_no_reference_is_leaked(scale):
    _, f = scale
    x = np.ones(4, np.float32)
    before = sys.getrefcount(x)
    for _ in range(2000):
        f(x, 1.0)
    assert sys.getrefcount(x) == before


@needs_gpu
@pytest.mark.parametrize("memory", ["device", "managed"])
def test_scales_gpu_memory_on_the_gpu(scale, memory):
    style, f = scale
    a = ap.full((1000,), 2.0, "float32", memory=memory)
    f(a[::2], 4.0)
    got = a.get()
    assert got[::2].tolist() == [8.0] * 500 and got[1::2].tolist() == [2.0] * 500


@needs_gpu
@needs_cupy
@needs_torch
def test_scales_cupy_and_torch_arrays(scale):
    _, f = scale
    import cupy
    c = cupy.arange(16, dtype=cupy.float32)
    f(c, 2.0)
    assert cupy.asnumpy(c).tolist() == [2.0 * i for i in range(16)]
    import torch
    t = torch.arange(16, dtype=torch.float32, device="cuda")
    f(t, 3.0)
    assert t.cpu().tolist() == [3.0 * i for i in range(16)]


@needs_gpu
@needs_torch
def test_the_kernel_runs_on_the_stream_python_made_current(scale):
    _, f = scale
    import torch
    a = ap.full((1 << 20,), 1.0, "float32", memory="device")
    ap.cuda.synchronize()
    s = ap.cuda.Stream()  # non-blocking: the legacy stream does not wait for it
    with s:
        with torch.cuda.stream(torch.cuda.ExternalStream(s.handle, device="cuda:0")):
            torch.cuda._sleep(200_000_000)  # s is busy for ~100 ms ...
        f(a, 3.0)                           # ... so the kernel, queued behind, has not run
    early = a.get(stream=ap.cuda.Stream())
    assert s.query() is False
    assert early[0] == 1.0 and early[-1] == 1.0
    s.synchronize()
    assert a.get()[0] == 3.0 and a.get()[-1] == 3.0


@needs_gpu
@needs_torch
@pytest.mark.parametrize("producer", [pytest.param("cupy", marks=needs_cupy), "torch",
                                      "arrayport-device", "arrayport-managed"])
def test_the_kernel_waits_for_the_producers_current_stream(scale, producer):
    # The producer fills the array on its stream A (CuPy's and PyTorch's current one, an Array's
    # own), behind ~100 ms of other work; the kernel runs on arrayport's stream B. The typed
    # parameter orders A before B (an event, no host wait): without that the kernel would scale
    # zeros and the fill would land afterwards.
    _, f = scale
    import torch
    n = 1 << 20
    if producer == "cupy":
        import cupy
        x = cupy.zeros(n, dtype=cupy.float32)
        a = cupy.cuda.Stream(non_blocking=True)
        a_handle, make_current, done = a.ptr, a, lambda: a.done
        read, fill = (lambda: cupy.asnumpy(x)), x.fill  # noqa: E731
    elif producer == "torch":
        x = torch.zeros(n, device="cuda")
        a = torch.cuda.Stream()
        a_handle, make_current, done = a.cuda_stream, torch.cuda.stream(a), a.query
        read, fill = (lambda: x.cpu().numpy()), x.fill_  # noqa: E731
    else:
        a = ap.cuda.Stream()
        x = ap.zeros(n, "float32", memory=producer.split("-")[1], stream=a)
        a_handle, make_current, done = a.handle, contextlib.nullcontext(), a.query
        read, fill = x.get, x.fill  # the fill is enqueued on the Array's stream, A
    # Warm-up outside the timed part: CuPy loads its fill kernel on first use (150-220 ms in a fresh
    # process on an H100), outlasting the ~100 ms sleep when this is the process's first CuPy test.
    # A fill of 0 is a memset and loads nothing.
    fill(1.0)
    f(x, 1.0)
    torch.cuda.synchronize()
    b = ap.cuda.Stream()
    with make_current:
        with torch.cuda.stream(torch.cuda.ExternalStream(a_handle, device="cuda:0")):
            torch.cuda._sleep(200_000_000)
        fill(2.0)
        with b:
            f(x, 3.0)
    assert done() is False, "the call must not have waited for the producer's stream"
    b.synchronize()
    got = read()
    assert got[0] == 6.0 and got[-1] == 6.0 and float(got.sum()) == 6.0 * n


@needs_gpu
@needs_cupy
@needs_torch
def test_bad_gpu_arrays_are_precise_errors(scale):
    _, f = scale
    import cupy
    with pytest.raises(TypeError, match=r"float32|DLPack type \(2, 32 bits\)"):
        f(cupy.zeros(3, cupy.float64), 1.0)
    with pytest.raises((ValueError, TypeError), match="dimension"):
        f(cupy.zeros((2, 3), cupy.float32), 1.0)
    import torch
    with pytest.raises(TypeError, match=r"float32|DLPack type \(2, 32 bits\)"):
        f(torch.zeros(3, dtype=torch.int32, device="cuda"), 1.0)


def test_nanobind_and_pybind11_extras(scale):
    style, _ = scale
    if style not in ("nanobind", "pybind11"):
        pytest.skip("overloads and vector returns are the C++ binders' examples")
    module = sys.modules[f"scale_{style}"]
    assert module.kind(np.zeros(2, np.float32)) == "float32"
    assert module.kind(np.zeros(2, np.float64)) == "float64"
    assert module.ndim(np.zeros((2, 3), np.int8)) == 2
    assert module.ndim(ap.zeros((4, 1, 2), "bfloat16", memory="host")) == 3
    with pytest.raises(TypeError):
        module.ndim([1, 2])  # not an array: no overload takes it
    with pytest.raises(TypeError, match=r"array: unsupported DLPack dtype .*\(from dlpack_ctypes.Producer\)"):
        module.ndim(Producer(dtype=(2, 8, 1)))  # an array that breaks a rule: its precise error
    r = module.arange(5)
    assert isinstance(r, ap.Array) and r.memory == "host"
    assert np.asarray(r).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize(
    "status, name, exc",
    [(700, "cudaErrorIllegalAddress", ap.CudaError), (2, "cudaErrorMemoryAllocation", ap.OutOfMemoryError)],
)
def test_a_cuda_error_in_an_extension_carries_code_name_api_and_stickiness(scale, status, name, exc):
    """set_error_from_current_exception raises through arrayport._core's C API (1.1), so a
    downstream extension's CudaError is the one arrayport raises itself."""
    style, _ = scale
    if style != "capi":
        pytest.skip("the CPython-API example reports C++ errors with set_error_from_current_exception")
    module = sys.modules["scale_capi"]
    with pytest.raises(exc) as info:
        module.raise_cuda_error(status, name)
    e = info.value
    assert type(e) is exc
    sticky = status == 700
    api = "cudaMalloc(&p, n)" if status == 2 else "scale_kernel<<<...>>>"
    assert (e.code, e.name, e.api, e.sticky) == (status, name, api, sticky)
    assert str(e).startswith(f"{api} failed: {name} ({status})")
    assert ("restart the process" in str(e)) == sticky
