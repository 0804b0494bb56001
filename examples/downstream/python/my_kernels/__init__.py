"""my_kernels: y = a * x + y on any float32 arrays, on the CPU or the GPU, through arrayport."""

from __future__ import annotations

# arrayport first: the extension finds arrayport._core loaded (its current stream, its exceptions).
import arrayport as _arrayport  # noqa: F401

from ._ext import built_with_cuda, saxpy

__all__ = ["built_with_cuda", "saxpy"]
