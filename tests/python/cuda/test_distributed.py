"""The distributed examples (examples/distributed/), run across two processes with one GPU each:
PyTorch distributed over NCCL, and MPI through mpi4py. Needs two CUDA devices and the engine;
skips with the reason otherwise."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from arrayport import cuda

from conftest import REPO

N_GPUS = cuda.device_count()
pytestmark = pytest.mark.skipif(
    N_GPUS < 2, reason=f"needs 2 CUDA devices (one process each); this machine has {N_GPUS}")
EXAMPLES = REPO / "examples" / "distributed"


def test_torch_distributed_nccl_on_arrayport_arrays():
    pytest.importorskip("torch.distributed")
    r = subprocess.run([sys.executable, str(EXAMPLES / "torch_nccl.py"), "2"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-6000:]
    # The ranks print concurrently: their lines may run together.
    ranks = re.findall(r"rank (\d+/\d+) on .*? verified on arrayport device memory", r.stdout)
    assert sorted(ranks) == ["0/2", "1/2"], r.stdout
    print(r.stdout)


def test_mpi4py_allreduce_on_arrayport_arrays():
    pytest.importorskip("mpi4py")
    mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
    if not mpirun:
        pytest.skip("no mpirun/mpiexec on PATH")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    # Open MPI refuses more ranks than cores without --oversubscribe; MPICH's Hydra has no such flag.
    version = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=60)
    extra = ["--oversubscribe"] if "Open MPI" in version.stdout + version.stderr else []
    r = subprocess.run([mpirun, "-np", "2", *extra, sys.executable,
                        str(EXAMPLES / "mpi_allreduce.py")],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-6000:]
    assert "rank 0 on GPU 0" in r.stdout and "rank 1 on GPU 1" in r.stdout, r.stdout
    assert r.stdout.count("Allreduce verified") == 2, r.stdout
    assert "path: " in r.stdout
    print(r.stdout)
