"""arrayport: zero-copy arrays across Python, C++ and CUDA.

The compiled module ``arrayport._core`` is private; this package owns the public names.
"""

from __future__ import annotations

from pathlib import Path as _Path
from typing import TYPE_CHECKING, Any, Union

from ._core import (
    Array,
    CudaError,
    NoDeviceError,
    OutOfMemoryError,
    __version__,
    build_info,
    copy,
    devices,
    empty,
    empty_like,
    full,
    full_like,
    ones,
    ones_like,
    release_cached_memory,
    runtime_info,
    view,
    to_gpu,
    zeros,
    zeros_like,
)
from . import _copying, _operators, ctypeslib, cuda, ops
from ._array_api import asarray, from_dlpack

if TYPE_CHECKING:
    from typing import Protocol

    from typing_extensions import Buffer

    class _SupportsDLPack(Protocol):
        def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...
        def __dlpack_device__(self) -> tuple[int, int]: ...

    class _SupportsCudaArrayInterface(Protocol):
        @property
        def __cuda_array_interface__(self) -> dict[str, Any]: ...

    ArrayLike = Union[Array, Buffer, _SupportsDLPack, _SupportsCudaArrayInterface]
else:
    ArrayLike = Any
"""What a C++ function bound with arrayport's nanobind or pybind11 casters takes (its signature
names ``arrayport.ArrayLike``): an Array, or anything with the buffer protocol, ``__dlpack__`` or
``__cuda_array_interface__``."""

__all__ = [
    "Array",
    "ArrayLike",
    "CudaError",
    "NoDeviceError",
    "OutOfMemoryError",
    "__version__",
    "asarray",
    "build_info",
    "cmake_dir",
    "copy",
    "ctypeslib",
    "cuda",
    "devices",
    "empty",
    "empty_like",
    "from_dlpack",
    "full",
    "full_like",
    "include_dir",
    "ones",
    "ones_like",
    "ops",
    "release_cached_memory",
    "runtime_info",
    "view",
    "to_gpu",
    "zeros",
    "zeros_like",
]

_HERE = _Path(__file__).resolve().parent


def include_dir() -> str:
    """The directory holding ``arrayport/*.hpp`` (for ``-I``)."""
    return str(_HERE / "include")


def cmake_dir() -> str:
    """The directory holding ``arrayportConfig.cmake`` (for ``-Darrayport_DIR=``)."""
    return str(_HERE / "share" / "cmake" / "arrayport")
