"""arrayport arrays through MPI (mpi4py), one process per GPU.

    mpirun -np 2 python examples/distributed/mpi_allreduce.py

Each rank makes an arrayport array in device memory on GPU (rank % GPUs) and sums it across ranks
with MPI Allreduce. Where the MPI library is CUDA-aware, the device array goes to MPI as it is
(mpi4py reads its __cuda_array_interface__: no copy); otherwise it is staged through host memory
(a.get(), then a copy back). The path taken is printed. MPI reads device memory outside any CUDA
stream, so the array's stream is synchronised before the call.
"""

from __future__ import annotations

import ctypes
import sys
import time

import numpy as np
from mpi4py import MPI

import arrayport as ap
from arrayport import cuda


def mpi_is_cuda_aware() -> bool:
    """Open MPI's MPIX_Query_cuda_support(), looked up through mpi4py's own MPI library."""
    try:
        query = ctypes.CDLL(MPI.__file__).MPIX_Query_cuda_support
    except (OSError, AttributeError):
        return False  # not Open MPI, or built without the CUDA extension: stage through the host
    query.restype = ctypes.c_int
    return query() == 1


def allreduce(comm: MPI.Comm, a: ap.Array, cuda_aware: bool) -> str:
    """Sums `a` across ranks in place; returns the path taken."""
    cuda.current_stream().synchronize()  # MPI reads the memory outside any stream
    if cuda_aware:
        comm.Allreduce(MPI.IN_PLACE, a)
        return "CUDA-aware MPI on device memory (zero-copy, __cuda_array_interface__)"
    host = a.get()
    comm.Allreduce(MPI.IN_PLACE, host)
    a[...] = host
    return "host-staged (MPI is not CUDA-aware): device -> host -> MPI -> device"


def main() -> int:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if cuda.device_count() < 1:
        print(f"rank {rank}: needs a CUDA device", file=sys.stderr)
        return 1
    device = rank % cuda.device_count()
    cuda.set_device(device)
    aware = mpi_is_cuda_aware()

    n = 1 << 22
    a = ap.full((n,), rank + 1, "float64", memory="device")
    path = allreduce(comm, a, aware)
    expected = size * (size + 1) / 2
    ok = bool(np.all(a.get() == expected))

    b = ap.ones((1 << 25,), "float32", memory="device")  # 128 MiB
    comm.Barrier()
    start = time.perf_counter()
    allreduce(comm, b, aware)
    seconds = time.perf_counter() - start
    ok = ok and bool(np.all(b.get() == size))

    results = comm.gather((rank, device, ok), root=0)
    if rank == 0:
        name = cuda.Device(device).name
        print(f"MPI: {MPI.Get_library_version().splitlines()[0]}")
        print(f"path: {path}")
        for r, d, good in results:
            print(f"rank {r} on GPU {d} ({name}): Allreduce {'verified' if good else 'WRONG'}")
        print(f"Allreduce of 128 MiB: {seconds * 1e3:.1f} ms ({b.nbytes / seconds / 1e9:.1f} GB/s)")
    return 0 if comm.allreduce(0 if ok else 1) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
