"""Measure the link between this machine's GPUs: NCCL all-reduce bus bandwidth per message size.

The figure is nccl-tests' busbw (doc/PERFORMANCE.md there): algbw = size / time, busbw = algbw x
2(n-1)/n for an all-reduce over n GPUs (the same factor costs/collectives.py applies to the
profiled collectives, so the two compare). fp32 buffers of zeros (NCCL's speed does not depend on
the values), warm-up first; each size's time is the mean of back-to-back calls between CUDA
events on every GPU, the slowest GPU's. The best size's figure is the link roof; the curve says
from which message size the link, not NCCL's latency, sets the pace.

How: torch.cuda.nccl.all_reduce in this process (all local GPUs, one communicator), else one
process per GPU through torch.distributed's NCCL backend (torch.multiprocessing spawn, a file
store in a temporary folder). NVLink multicast (NVLS) stays off as in every run rooflinectl
starts (MULTICAST_OFF, unless the environment sets those variables itself).
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rooflinectl.ceilings.measurement import Measurement
from rooflinectl.ceilings.topology import read_topology

SIZES_BYTES = tuple(1 << k for k in (12, 15, 18, 20, 22, 24, 26, 28, 30))  # 4 KiB .. 1 GiB
TIME_PER_SIZE_S = 0.1
MIN_REPS, MAX_REPS = 5, 200
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
LINK_BUDGET_S = 60.0  # the link step's own time (process start and NCCL set-up included)


def keep_multicast_off(environ: Any = None) -> None:
    """Set the variables that keep NVLink multicast off, where the environment does not set them."""
    env = os.environ if environ is None else environ
    for key, value in MULTICAST_OFF.items():
        env.setdefault(key, value)


def bus_bytes_per_s(size_bytes: int, time_s: float, gpus: int) -> float:
    """nccl-tests' all-reduce busbw: size / time x 2(n-1)/n."""
    return size_bytes / time_s * 2.0 * (gpus - 1) / gpus


def reps_for(size_bytes: int) -> int:
    """Calls per size, the same on every process: the time slice at a 100 GB/s guess plus 20 us a call."""
    guess_s = size_bytes / 100e9 + 20e-6
    return int(min(max(TIME_PER_SIZE_S / guess_s, MIN_REPS), MAX_REPS))


def _events_time_s(devices: list[int], call: Callable[[], None], reps: int) -> float:
    """Mean seconds per call over `reps` back-to-back calls: CUDA events on each device, the slowest."""
    import torch

    starts = [torch.cuda.Event(enable_timing=True) for _ in devices]
    ends = [torch.cuda.Event(enable_timing=True) for _ in devices]
    for d, event in zip(devices, starts):
        event.record(torch.cuda.current_stream(d))
    for _ in range(reps):
        call()
    for d, event in zip(devices, ends):
        event.record(torch.cuda.current_stream(d))
    for d in devices:
        torch.cuda.synchronize(d)
    return max(a.elapsed_time(b) for a, b in zip(starts, ends)) / 1e3 / reps


def measure_in_process(gpus: int, sizes: tuple[int, ...] = SIZES_BYTES) -> dict[int, tuple[float, int]]:
    """{size: (seconds per all-reduce, calls timed)} through torch.cuda.nccl (one process, all GPUs)."""
    import torch
    import torch.cuda.nccl as nccl

    devices = list(range(gpus))
    out: dict[int, tuple[float, int]] = {}
    for size in sizes:
        buffers = [torch.zeros(size // 4, device=f"cuda:{d}") for d in devices]
        call = lambda b=buffers: nccl.all_reduce(b)  # noqa: E731
        for _ in range(2):  # the first call creates the communicators
            call()
        for d in devices:
            torch.cuda.synchronize(d)
        reps = reps_for(size)
        out[size] = (_events_time_s(devices, call, reps), reps)
        del buffers
    return out


def _worker(rank: int, gpus: int, sizes: tuple[int, ...], folder: str) -> None:
    """One process of the spawned measurement: NCCL all-reduce per size, rank 0 writes the times."""
    keep_multicast_off()
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{folder}/store", rank=rank, world_size=gpus)
    try:
        times: dict[str, list[float]] = {}
        for size in sizes:
            buf = torch.zeros(size // 4, device=f"cuda:{rank}")
            for _ in range(2):
                dist.all_reduce(buf)
            torch.cuda.synchronize()
            dist.barrier()
            reps = reps_for(size)
            seconds = torch.tensor([_events_time_s([rank], lambda b=buf: dist.all_reduce(b), reps)], device=f"cuda:{rank}")
            dist.all_reduce(seconds, op=dist.ReduceOp.MAX)  # the slowest GPU's time
            times[str(size)] = [float(seconds.item()), reps]
        if rank == 0:
            Path(folder, "times.json").write_text(json.dumps(times), encoding="utf-8")
    finally:
        dist.destroy_process_group()


def measure_spawned(gpus: int, sizes: tuple[int, ...] = SIZES_BYTES) -> dict[int, tuple[float, int]]:
    """{size: (seconds per all-reduce, calls timed)} with one process per GPU (torch.distributed NCCL)."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="rooflinectl-link-") as folder:
        mp.spawn(_worker, args=(gpus, sizes, folder), nprocs=gpus, join=True)
        times = json.loads(Path(folder, "times.json").read_text(encoding="utf-8"))
    return {int(size): (float(t), int(reps)) for size, (t, reps) in times.items()}


def measure_link() -> list[Measurement]:
    """All-reduce bus bandwidth between the local GPUs at each size, the best of them (the link
    roof), and the topology seen; one GPU gives a note and no figure."""
    import torch

    gpus = torch.cuda.device_count()
    topology = read_topology()
    topo = Measurement("link.topology", None, "", "NVML NVLink/PCIe queries and `nvidia-smi topo -m`",
                       details=topology)
    if gpus < 2:
        return [topo, Measurement("link.all_reduce", None, "bytes/s", note=f"{gpus} GPU visible: no link to measure")]
    keep_multicast_off()
    first_error = ""
    try:
        times = measure_in_process(gpus)
        how = f"torch.cuda.nccl.all_reduce over {gpus} GPUs in one process"
    except Exception as exc:  # noqa: BLE001 - no legacy NCCL binding: one process per GPU instead
        first_error = f"torch.cuda.nccl: {type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
        start = time.monotonic()
        times = measure_spawned(gpus)
        how = f"torch.distributed NCCL all_reduce, one process per GPU ({gpus}; {time.monotonic() - start:.0f} s with set-up)"
    curve = {size: bus_bytes_per_s(size, t, gpus) for size, (t, _) in sorted(times.items())}
    out = [topo]
    for size, busbw in curve.items():
        out.append(Measurement(f"link.all_reduce.{size}", busbw, "bytes/s",
                               f"{how}, {size} B fp32, mean of {times[size][1]} calls", first_error))
    best = max(curve, key=lambda s: curve[s])
    knee = next((s for s in curve if curve[s] >= 0.5 * curve[best]), best)
    out.append(Measurement(
        "link.all_reduce", curve[best], "bytes/s",
        f"best all-reduce bus bandwidth (nccl-tests busbw) of {len(curve)} sizes, at {best} B; {how}",
        f"half of it from {knee} B on; median over sizes {statistics.median(curve.values()) / 1e9:.1f} GB/s",
        details={"gpus": gpus, "collective": "all_reduce", "dtype": "fp32",
                 "sizes_bytes": list(curve), "bus_bytes_per_s": list(curve.values()),
                 "env": {k: os.environ.get(k) for k in MULTICAST_OFF}}))
    return out
