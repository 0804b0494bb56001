"""arrayport: zero-copy arrays across Python, C++ and CUDA.

The compiled module ``arrayport._core`` is private; this package owns the public names.
"""

from __future__ import annotations

from pathlib import Path as _Path

from ._core import (
    CudaError,
    NoDeviceError,
    OutOfMemoryError,
    __version__,
    build_info,
    devices,
    release_cached_memory,
    runtime_info,
)

__all__ = [
    "CudaError",
    "NoDeviceError",
    "OutOfMemoryError",
    "__version__",
    "build_info",
    "cmake_dir",
    "devices",
    "include_dir",
    "release_cached_memory",
    "runtime_info",
]

_HERE = _Path(__file__).resolve().parent


def include_dir() -> str:
    """The directory holding ``arrayport/*.hpp`` (for ``-I``)."""
    return str(_HERE / "include")


def cmake_dir() -> str:
    """The directory holding ``arrayportConfig.cmake`` (for ``-Darrayport_DIR=``)."""
    return str(_HERE / "share" / "cmake" / "arrayport")
