"""arrayport.ops: element-wise operations and reductions on arrayport Arrays (CPU and CUDA).

Inputs (and ``out=``) are arrayport Arrays, Python scalars and any array that ``arrayport.view``
takes: the buffer protocol (NumPy, memoryview), ``__dlpack__`` and ``__cuda_array_interface__``
(CuPy, PyTorch, JAX, Numba). The producer's pending work is ordered before the current stream.
Results are Arrays in the inputs' memory kind and device; GPU work is enqueued on the calling
thread's current stream (``with arrayport.cuda.Stream():``), the result's stream. A new result of
an element-wise op is laid out as NumPy's order 'K' lays it out: compact, its axes in the memory
order of the first input of its full shape (a transposed input gives a transposed result, strides
as NumPy's), C order otherwise; ``copy`` and ``astype`` give C-contiguous results (``.reshape``
of an Array is for C-contiguous ones). An arrayport
Array operand (or ``out=``) on another stream is waited for with an event, and its stream waits
for the op in turn; a CPU op over pinned or managed memory waits for those streams first.

Result dtypes follow NumPy 2: ``np.result_type`` for arrays, NEP 50 for Python scalars (a Python
int/float/complex takes the array's dtype when its kind fits, so ``add(uint8_array, 300)`` raises
OverflowError and ``multiply(float32_array, 1j)`` is complex64). NumPy scalars are 0-d arrays,
strong as any array: ``add(float32_array, np.float64(1.5))`` is float64. ``axpy(a, x, y)`` is
``a * x + y``: the product's dtype first (where it wraps or rounds), then the sum's. bfloat16
promotes like float16, except that float16 with bfloat16 gives float32. Deviation from NumPy:
``out=`` must have the result dtype exactly (no casting). An ``out=`` that overlaps an input other
than element for element (``add(x[:-1], 1, out=x[1:])``) is computed through a temporary, as NumPy
does.
Supported dtypes: bool, uint8, int32, int64, float16, bfloat16, float32, float64, complex64,
complex128.

Comparisons (``equal, not_equal, less, less_equal, greater, greater_equal``) compare in the
promoted dtype and give bool (complex numbers order lexicographically, as NumPy's; NaN compares
false). ``logical_and/or/xor/not`` take any dtype as truth values. ``bitwise_and/or/xor/invert``
take bool and integers. ``isnan, isinf, isfinite`` give bool. ``exp, log, sin, cos, tanh`` take
floats and complex (integers give floats, as ``sqrt``); real results may differ from NumPy's in the
last bit (NumPy's own vector code and the CUDA math library each round their own way); complex ones
on the CPU are the C library's, as NumPy's, and on the GPU libcu++'s. ``clip(x, min,
max)`` is ``minimum(maximum(x, min), max)`` with NaN propagating; a bound of None is none.
``floor_divide`` and ``remainder`` are Python's floored division and modulo (NumPy's: an integer
zero divisor gives 0); ``power`` refuses integers to negative integer powers (ValueError, as NumPy),
checking an integer exponent array's minimum first; complex powers follow NumPy's (repeated
multiplication for integer exponents below 100, else ``exp(x2 * log(x1))``).

Reductions (``sum, mean, min, max, prod, any, all``) take ``axis`` (None: all, an int or a tuple),
``keepdims`` and ``out=`` (the result's shape and dtype exactly). ``prod`` widens integers as
``sum`` does; float products are rounded as a tree, NumPy's in order (equal where the product
is exact, else within about n ulp for n factors). ``any`` and ``all`` give bool, NaN counting as true. ``argmin`` and
``argmax`` take one axis or None (the flat index in C order) and give int64: the first extreme,
or the first NaN. ``dot(x, y, axis=None)`` is ``sum(x * y, axis)``
with x and y broadcast together and accumulated as one reduction: for 1-d arrays the inner
product (no conjugation), along an axis a batched inner product (``np.vecdot`` without its
conjugation) -- not NumPy's matrix product for 2-d arrays. Its dtype is that of ``x * y``, as
``np.dot``'s and ``np.vecdot``'s: uint8 products sum in uint8 (wrapping), bool ones give ``any(x &
y)``, where ``sum`` would widen them.

``device=N`` runs any op on GPU N wherever its operands live. An element-wise op whose array
operands are all contiguous host memory of the result's shape (NumPy in, no ``out=``) is staged in
chunks: the CPU threads copy each chunk into one of three pinned slots while the GPU computes the
chunks before it, reading the slots and writing a pinned result across the host link. Other calls
page-lock large host operands in place (``arrayport.cuda.register``) or copy small ones into
pinned memory, and the kernel reads and writes them across the link. The result is NumPy when
every array operand was host memory, ``out`` when given.
"""

from __future__ import annotations

from . import _core, _pipeline
from ._core.ops import (
    abs,
    add,
    all,
    any,
    argmax,
    argmin,
    astype,
    axpy,
    bitwise_and,
    bitwise_invert,
    bitwise_or,
    bitwise_xor,
    clip,
    copy,
    cos,
    divide,
    dot,
    equal,
    exp,
    floor_divide,
    greater,
    greater_equal,
    isfinite,
    isinf,
    isnan,
    less,
    less_equal,
    log,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    max,
    maximum,
    mean,
    min,
    minimum,
    multiply,
    negative,
    not_equal,
    power,
    prod,
    remainder,
    sin,
    sqrt,
    square,
    subtract,
    sum,
    tanh,
    where,
)

# The device= calls that C++ does not stage itself go to _pipeline.run: registered here, so that
# the compiled module never imports its package.
_core._set_pipeline(_pipeline.run)

__all__ = [
    "abs",
    "add",
    "all",
    "any",
    "argmax",
    "argmin",
    "astype",
    "axpy",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_or",
    "bitwise_xor",
    "clip",
    "copy",
    "cos",
    "divide",
    "dot",
    "equal",
    "exp",
    "floor_divide",
    "greater",
    "greater_equal",
    "isfinite",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "log",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multiply",
    "negative",
    "not_equal",
    "power",
    "prod",
    "remainder",
    "sin",
    "sqrt",
    "square",
    "subtract",
    "sum",
    "tanh",
    "where",
]
