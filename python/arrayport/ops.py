"""arrayport.ops: element-wise operations and reductions on arrayport Arrays (CPU and CUDA).

Inputs (and ``out=``) are arrayport Arrays, Python scalars and any array that ``arrayport.view``
takes: the buffer protocol (NumPy, memoryview), ``__dlpack__`` and ``__cuda_array_interface__``
(CuPy, PyTorch, JAX, Numba). The producer's pending work is ordered before the current stream.
Results are Arrays in the inputs' memory kind and device; GPU work is enqueued on the calling
thread's current stream (``with arrayport.cuda.Stream():``).

Result dtypes follow NumPy 2: ``np.result_type`` for arrays, NEP 50 for Python scalars (a Python
int/float/complex takes the array's dtype when its kind fits, so ``add(uint8_array, 300)`` raises
OverflowError and ``multiply(float32_array, 1j)`` is complex64). bfloat16 promotes like float16,
except that float16 with bfloat16 gives float32. Deviations from NumPy: ``out=`` must have the
result dtype exactly (no casting), and ``out=`` may alias an input exactly but must not overlap it
partially. Supported dtypes: bool, uint8, int32, int64, float16, bfloat16, float32, float64,
complex64, complex128.
"""

from __future__ import annotations

from ._core.ops import (
    abs,
    add,
    astype,
    axpy,
    copy,
    divide,
    dot,
    max,
    maximum,
    mean,
    min,
    minimum,
    multiply,
    negative,
    sqrt,
    square,
    subtract,
    sum,
    where,
)

__all__ = [
    "abs",
    "add",
    "astype",
    "axpy",
    "copy",
    "divide",
    "dot",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multiply",
    "negative",
    "sqrt",
    "square",
    "subtract",
    "sum",
    "where",
]
