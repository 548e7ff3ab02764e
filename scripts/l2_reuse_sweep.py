"""How much of a re-read tensor the H200's L2 still holds, by size and by what touched it last
(issue 29: the analytic memory level's cache model, analysis/reuse_distance.py).

    ncu --cache-control none --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum \
        --csv python3 scripts/l2_reuse_sweep.py            # DRAM bytes per launch, caches as left
    python3 scripts/l2_reuse_sweep.py --time               # the consumer's time, bandwidth by size

Five patterns, each after a flush (a 512 MiB zero_ that evicts everything), at sizes S from 4 to
128 MiB (fp32, one tensor of S bytes unless said):
- rw:        a.fill_(1)       then a.sum()         read after a write of S (producer footprint S)
- chain:     y = neg(x)       then exp(y)          read after a read+write (footprint 2S), own writes S
- chain_sum: y = neg(x)       then y.sum()         the same producer, the reader's own traffic ~0
- twice:     x.amax()         then sigmoid(x)      read after a read (footprint S), own writes S
- twice_sum: x.amax()         then x.sum()         the same, own traffic ~0
The launch order is fixed (per size, per pattern: flush, producer, consumer; the sweep runs twice
and the second is the measured one), so `scripts/l2_reuse_figures.py` pairs ncu's rows with it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch

SIZES_MIB = (4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 48, 56, 64, 80, 96, 128)
PATTERNS = ("rw", "chain", "chain_sum", "twice", "twice_sum")
FLUSH_BYTES = 512 * 1024 * 1024
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU only for a smoke test
_BUFFERS: list = []  # the tensors, made once per process


def launches() -> list[tuple[str, int, str]]:
    """(pattern, size in MiB, role) per kernel launch of one sweep, in launch order."""
    return [(p, s, role) for s in SIZES_MIB for p in PATTERNS for role in ("flush", "producer", "consumer")]


def _produce(pattern: str, x: torch.Tensor, flush: torch.Tensor) -> Callable[[], torch.Tensor]:
    """Flush, run the pattern's producer on x, and return its consumer (not yet run)."""
    flush.zero_()
    if pattern == "rw":
        x.fill_(1.0)
        return x.sum
    if pattern in ("chain", "chain_sum"):
        y = torch.neg(x)
        return (lambda: torch.exp(y)) if pattern == "chain" else y.sum
    x.amax()
    return (lambda: torch.sigmoid(x)) if pattern == "twice" else x.sum


def sweep(tensors: dict[int, torch.Tensor], flush: torch.Tensor) -> None:
    for size in SIZES_MIB:
        for pattern in PATTERNS:
            _produce(pattern, tensors[size], flush)()


def timed(tensors: dict[int, torch.Tensor], flush: torch.Tensor, repeats: int = 20) -> None:
    """The consumer's median time per pattern and size (CUDA events), as GB/s of the re-read tensor."""
    for pattern in PATTERNS:
        for size in SIZES_MIB:
            x, times = tensors[size], []
            for _ in range(repeats):
                consume = _produce(pattern, x, flush)
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                consume()
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end) / 1e3)
            median_s = sorted(times)[len(times) // 2]
            print(f"TIME {pattern} {size} MiB: {median_s * 1e6:.1f} us, {x.numel() * 4 / median_s / 1e9:.0f} GB/s read")


def _buffers() -> tuple[dict[int, torch.Tensor], torch.Tensor]:
    if not _BUFFERS:
        _BUFFERS.append({s: torch.ones(s * 1024 * 1024 // 4, device=DEVICE) for s in SIZES_MIB})
        _BUFFERS.append(torch.empty(FLUSH_BYTES // 4, device=DEVICE))
    return _BUFFERS[0], _BUFFERS[1]


def profiled() -> None:
    """One sweep, for `rooflinectl profile scripts/l2_reuse_sweep.py:profiled --save-capture`: the
    capture's tensor records give the cache model's DRAM bytes per launch, to set beside ncu's."""
    sweep(*_buffers())


def main() -> None:
    tensors, flush = _buffers()
    if "--time" in sys.argv:
        timed(tensors, flush)
        return
    for _ in range(2):  # the first pass warms the allocator; the second is measured
        sweep(tensors, flush)
    if DEVICE == "cuda":
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
