"""How many of a launch's bytes DRAM served, from which tensors it read and wrote (tensor
identities from the profiler, attribution/tensor_accesses.py) and an LRU model of the cache.

Pure: launches in launch order in, two numbers per launch out. The cache is modelled as LRU over
tensors (the GPU's L2 is not exactly LRU, and holds lines, not tensors), one position per launch:
a launch touches its tensors all through its run, interleaved and in order, so a tensor's first
lines are as old as the start of the launch that last touched it and its last lines as old as
that launch's end. A read, in the same order, is then (cached_bytes)
- served by the cache when every line's age fits: for the first lines, that launch's whole
  footprint and every distinct byte touched since; for the last, only what came after that launch,
  plus the tensor itself and the reading launch's own traffic (its writes, its other inputs not
  already counted), which the read interleaves with and which push the lines not yet read older;
- served in part when only some lines fit (the age changes linearly along the tensor). Before
  2026-12-02 every line was as old as the first: a batch norm reading the 24.5 MB output of a
  convolution with a 73.6 MB footprint was all DRAM; by the counters 26% of its bytes were. Over
  all of a ResNet-50 run's measured rows the model's DRAM bytes went from 1.15 to 1.06 of the
  counters' (each capped at the row's bytes), over its memory-bound rows from 0.92 to 0.85: the
  level agreement moved by a point or less either way (docs/benchmarks/accuracy.md);
- from DRAM otherwise, and when the tensor is read for the first time in the profile (a weight at
  the first step).
On a GPU two measured departures from an exact LRU (scripts/l2_reuse_sweep.py: ncu's DRAM reads
of consumers at 4-128 MiB with the caches as the program left them; docs/benchmarks/accuracy.md):
- a tensor whose last touch only read it (weights, inputs read again: clean lines) is held to
  CLEAN_SHARE of the capacity, one written or updated in place by its last toucher to all of it.
  The H200's L2 behaves as if it kept read lines in both of its halves and written lines in one:
  a tensor read right after being written came half from DRAM at 47 MiB, one read right after
  being read at 35 MiB (0.74 of it);
- a line leaves gradually (FALL_OFF): the share cached falls linearly from 0.7 to 1.3 times the
  capacity (21% of a 64 MiB tensor written just before was still cached).
The mean error of the sweep's 80 consumers' DRAM share: 0.054 with both (0.7 and 0.3); 0.056
with a clean share of 0.6, 0.072 with 0.8, 0.134 with one capacity; 0.056 with a fall-off of
0.25, 0.062 with 0.2, 0.087 without (an exact LRU with the clean share). On the recorded training
runs the fall-off moved the level agreement by +0.9 to -1.2 points (tests/test_levels_h200_counters.py).
A CPU's cache was not measured so: there every tensor gets the whole capacity, at once.
What a launch writes goes to DRAM once (L2 is write-back: the lines are written back when
evicted, which on a cache full of written data happens as the writer brings its own lines in), so
written bytes count as DRAM bytes.

This is what shapes and launch order could not say (issue 29): in `mul(grad, saved_activation)`
the gradient was written by the kernel before and is still cached, the activation was written in
the forward pass, long evicted. Against the H200's warm-cache counters it was chosen over two
neighbours, each one rule apart (docs/benchmarks/accuracy.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

CLEAN_SHARE = 0.7  # of a GPU's L2, for a tensor its last toucher only read (measured on the H200: see above)
FALL_OFF = 0.3  # a GPU's L2 lets a line go from 0.7 to 1.3 times its capacity (measured on the H200: see above)
MAX_MODELLED_LAUNCHES = 300_000  # the latest launches the LRU walk covers (pure Python: ~10 us per tensor touched)


class _Fenwick:
    """Bytes per position of last touch, with sums over positions after a given one."""

    def __init__(self, size: int) -> None:
        self.tree = [0] * (size + 1)
        self.total = 0

    def add(self, position: int, value: int) -> None:
        self.total += value
        i = position + 1
        tree, n = self.tree, len(self.tree)
        while i < n:
            tree[i] += value
            i += i & -i

    def after(self, position: int) -> int:
        """Sum over positions > position."""
        i, upto, tree = position + 1, 0, self.tree
        while i > 0:
            upto += tree[i]
            i -= i & -i
        return self.total - upto


def cached_bytes(distance_bytes: float, footprint_bytes: float, own_bytes: float, nbytes: int,
                 capacity_bytes: float, fall_off: float = 0.0) -> float:
    """Bytes of a re-read tensor the cache still holds, in an LRU whose launches touch their
    tensors all through their run, in order. distance_bytes: what was touched from the start of the
    launch that last touched it on (the tensor included); footprint_bytes: that launch's share of
    it; own_bytes: what the reading launch brings in beside it (its writes, its other inputs not
    counted in the distance). The tensor's line at t (0: first, 1: last, read in the same order)
    was followed by (1 - t) of the last toucher's footprint and everything since, then, as the
    reader interleaves, by t of the tensor itself and of the reader's own bytes:
        age(t) = distance - t * footprint + t * (nbytes + own_bytes)
    A line is cached when its age is under the capacity; with fall_off w > 0 the share cached
    falls linearly from 1 at (1 - w) x capacity to 0 at (1 + w) x capacity (a cache that is not
    an exact LRU). The result is nbytes x the mean over t in [0, 1] of that share (closed form:
    the share is a clipped linear function of t)."""
    slope = nbytes + own_bytes - footprint_bytes  # of age(t)
    if fall_off <= 0:  # the share of t where age(t) <= capacity
        start, end = distance_bytes, distance_bytes + slope
        if start <= capacity_bytes and end <= capacity_bytes:
            return float(nbytes)
        if start > capacity_bytes and end > capacity_bytes:
            return 0.0
        t = (capacity_bytes - start) / slope  # where age crosses the capacity
        return nbytes * (1.0 - t if slope < 0 else t)
    width = 2 * fall_off * capacity_bytes
    share_at_start = ((1 + fall_off) * capacity_bytes - distance_bytes) / width  # unclipped, at t = 0
    return nbytes * _mean_clipped(share_at_start, share_at_start - slope / width)


def _mean_clipped(u0: float, u1: float) -> float:
    """The mean of clip(u, 0, 1) for u going linearly from u0 to u1."""
    if abs(u1 - u0) < 1e-12:
        return min(max(u0, 0.0), 1.0)
    return (_clipped_integral(u1) - _clipped_integral(u0)) / (u1 - u0)


def _clipped_integral(u: float) -> float:
    """The integral of clip(x, 0, 1) from 0 to u (module level: called once per re-read tensor)."""
    return 0.0 if u <= 0 else u * u / 2 if u <= 1 else u - 0.5


def dram_bytes_by_reuse(accesses: Sequence[tuple[list[int], list[int]] | None], other_bytes: np.ndarray,
                        capacity_bytes: float, in_place: Sequence[bool] | None = None,
                        clean_share: float = 1.0, fall_off: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Per launch: (DRAM bytes, bytes its tensors span), both NaN for a launch without accesses
    (its `other_bytes` still pass through the modelled cache, as data never read again).
    in_place: per launch, whether its op updates its first input in place (`add_`): the capture
    records that input as read only, but its lines are then written ones. clean_share: the share
    of the capacity a tensor its last toucher only read is held to (CLEAN_SHARE on a GPU);
    fall_off: how gradually a line leaves the cache around its capacity (FALL_OFF on a GPU, 0: at
    once, an exact LRU)."""
    n = len(accesses)
    first = max(0, n - MAX_MODELLED_LAUNCHES)  # the latest: the capture keeps the latest ops' tensors too
    dram = np.full(n, np.nan)
    touched = np.full(n, np.nan)
    lru = _Fenwick(n)  # one position per launch: its tensors are touched all through its run, interleaved
    last: dict[int, tuple[int, int, bool]] = {}  # identity -> (launch position, bytes, written) of its last touch
    fill = np.nan_to_num(np.asarray(other_bytes, dtype=float), nan=0.0, posinf=0.0)
    for i in range(first, n):
        access = accesses[i]
        if access is None:
            lru.add(i, int(fill[i]))
            continue
        reads, writes = access
        from_dram = spanned = 0.0
        written = float(sum(writes[1::2]))
        inputs = [(reads[j], reads[j + 1], last.get(reads[j])) for j in range(0, len(reads), 2)]
        for identity, nbytes, seen in inputs:
            spanned += nbytes
            if seen is None:
                from_dram += nbytes  # first read in the profile
                continue
            # the distance: bytes at positions from the launch that last touched it on (that launch's whole footprint)
            own = written + sum(b for other, b, at in inputs if other != identity and (at is None or at[0] < seen[0]))
            capacity = capacity_bytes if seen[2] else capacity_bytes * clean_share
            distance = lru.after(seen[0] - 1)
            footprint = distance - lru.after(seen[0])  # the last toucher's bytes not touched again since
            from_dram += nbytes - cached_bytes(distance, footprint, own, nbytes, capacity, fall_off)
        for j in range(1, len(writes), 2):
            from_dram += writes[j]
            spanned += writes[j]
        updated = set(writes[0::2])
        if in_place is not None and in_place[i] and reads:
            updated.add(reads[0])
        for pairs in (reads, writes):
            for j in range(0, len(pairs), 2):
                identity, nbytes = pairs[j], pairs[j + 1]
                seen = last.get(identity)
                if seen is not None:
                    lru.add(seen[0], -seen[1])
                lru.add(i, nbytes)
                last[identity] = (i, nbytes, identity in updated)
        dram[i], touched[i] = from_dram, spanned
    return dram, touched
