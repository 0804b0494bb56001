"""arrayport arrays through PyTorch distributed (NCCL), one process per GPU.

    python examples/distributed/torch_nccl.py          # spawns one process per visible GPU
    torchrun --nproc-per-node=2 examples/distributed/torch_nccl.py

Each rank makes arrayport arrays in device memory on its own GPU, hands them to torch without a
copy (DLPack: the tensor's data_ptr is the array's ptr), runs all_reduce, broadcast and all_gather
on them, and checks the results through arrayport. arrayport's current stream is PyTorch's
current stream (adopted), so the work of both libraries is ordered on one stream with no
synchronisation in between.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np


def run(rank: int, world: int, n: int = 1 << 22) -> None:
    import torch
    import torch.distributed as dist

    import arrayport as ap
    from arrayport import cuda

    device = rank % torch.cuda.device_count()
    torch.cuda.set_device(device)
    cuda.set_device(device)
    dist.init_process_group("nccl", rank=rank, world_size=world,
                            device_id=torch.device("cuda", device))
    try:
        with cuda.Stream.adopt(torch.cuda.current_stream()):
            # all_reduce, in place, into arrayport memory
            x = ap.full((n,), rank + 1, "float32", memory="device")
            t = torch.from_dlpack(x)
            assert t.data_ptr() == x.ptr and t.device.index == device, "not zero-copy"
            dist.all_reduce(t)
            total = world * (world + 1) / 2
            assert np.all(x.get() == total), "all_reduce gave a wrong sum"

            # broadcast from rank 0
            y = ap.full((n,), 10 * rank + 7, "int32", memory="device")
            dist.broadcast(torch.from_dlpack(y), src=0)
            assert np.all(y.get() == 7), "broadcast did not deliver rank 0's data"

            # all_gather into one arrayport array, each rank's slice a view of it
            mine = ap.full((n,), rank, "float32", memory="device")
            gathered = ap.empty((world, n), "float32", memory="device")
            dist.all_gather_into_tensor(torch.from_dlpack(gathered), torch.from_dlpack(mine))
            host = gathered.get()
            assert all(np.all(host[r] == r) for r in range(world)), "all_gather mismatch"

            # bandwidth of all_reduce on arrayport memory (the bus bandwidth NCCL's tests report)
            big = ap.ones((1 << 26,), "float32", memory="device")  # 256 MiB
            tb = torch.from_dlpack(big)
            dist.all_reduce(tb)
            torch.cuda.synchronize()
            reps = 10
            start = time.perf_counter()
            for _ in range(reps):
                dist.all_reduce(tb)
            torch.cuda.synchronize()
            seconds = (time.perf_counter() - start) / reps
            busbw = 2 * (world - 1) / world * big.nbytes / seconds / 1e9
        print(f"rank {rank}/{world} on {torch.cuda.get_device_name(device)}: all_reduce, broadcast, "
              f"all_gather verified on arrayport device memory (zero-copy); all_reduce of 256 MiB "
              f"{seconds * 1e3:.2f} ms, bus bandwidth {busbw:.0f} GB/s", flush=True)
    finally:
        dist.destroy_process_group()


def main() -> int:
    if "RANK" in os.environ:  # started by torchrun
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
        return 0
    import torch
    import torch.multiprocessing as mp

    world = int(sys.argv[1]) if len(sys.argv) > 1 else torch.cuda.device_count()
    if world < 1 or torch.cuda.device_count() < 1:
        print("needs at least one CUDA device", file=sys.stderr)
        return 1
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    mp.spawn(run, args=(world,), nprocs=world, join=True)  # spawn: no CUDA across fork()
    return 0


if __name__ == "__main__":
    sys.exit(main())
