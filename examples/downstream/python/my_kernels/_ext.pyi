"""Types of the compiled module my_kernels._ext (keep in step with src/bind_*.cpp)."""

from typing import Any

# Whether the GPU kernel was compiled (a CUDA compiler was found at build time).
built_with_cuda: bool

# x, y: float32 vectors from any array library (NumPy, CuPy, PyTorch, JAX, Numba, arrayport.Array,
# memoryview, ...); y is written, so it must be writable.
def saxpy(a: float, x: Any, y: Any) -> None:
    """y = a * x + y, in place, for float32 vectors of equal length (any strides). On the GPU,
    on arrayport's current stream, when y is in GPU memory; on the CPU otherwise."""
