"""The rebuilder registry: for each advice rule whose fix is mechanical on the op level, one
function that rebuilds the finding's ops with the profiled shapes and dtypes, as profiled and
with the fix. One entry per rule id, registered by decorator, duplicates refused.

A rebuilder is `fn(finding, kernels) -> list[Trial]` (the run's summary and metadata in
`kernels.attrs["summary"]`, `["metadata"]`); it raises NotRebuilt (one sentence)
when the profile does not say enough to build the op. It allocates nothing: a Trial's `make`
does, when the runner calls it on the GPU, and the tensors go when the trial is done.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rooflinectl.analysis.advice.registry import Finding

Pair = tuple[Callable[[], Any], Callable[[], Any]]  # (as profiled, with the fix), each one call


class NotRebuilt(Exception):
    """The profile does not say enough to rebuild the op (the message says what is missing)."""


@dataclass(frozen=True)
class Trial:
    """One op to time twice: as profiled and with the fix."""

    label: str  # what is built, e.g. "mm [2048, 768] x [768, 50257] -> N 50304"
    make: Callable[[], Pair]  # allocates the tensors on the GPU and returns the two calls
    profiled_s: float  # the profile's time of the work one original call stands for, all calls
    bytes_needed: int  # device memory the trial allocates, both versions together
    runs: float | None = None  # set: one call is a whole run of the user's loop, host launches included

    def saving_s(self, original_s: float, fixed_s: float) -> float:
        """What the fix saves over the profiled work, from one call of each version timed.

        A kernel's fix: its measured speed-up applied to the time the profile counted (the rebuilt
        op runs alone, with warm caches, so its own time is not the profile's). A loop's fix (runs
        set): the call costs what one run of the loop costs, the host's launches included, which
        kernel time does not show, so the measured difference counts once per run.
        """
        if self.runs is not None:
            return self.runs * (original_s - fixed_s)
        return self.profiled_s * (1.0 - fixed_s / original_s)


Rebuilder = Callable[[Finding, pd.DataFrame], list[Trial]]
REBUILDERS: dict[str, Rebuilder] = {}

# Why the fixes of the rules without a rebuilder are not measured: what they change is not an op
# that the profile describes (the default covers the rest).
_KERNEL = "its fix is a different kernel (source, grid or launch configuration), not an op that can be rebuilt"
NOT_REBUILT: dict[str, str] = {
    "grid.small": _KERNEL, "grid.wave-quantisation": _KERNEL, "kernel.low-occupancy": _KERNEL,
    "custom.compute-far-from-roof": _KERNEL, "custom.memory-far-from-roof": _KERNEL, "library.fallback": _KERNEL,
    "counters.dram-rereads": _KERNEL, "counters.poor-reuse": _KERNEL, "counters.wasted-flops": _KERNEL,
    "gemm.skinny": "its fix changes the work itself (batching rows, merging GEMMs that share an input)",
    "host.sync": "its fix takes a host synchronisation out of the program's loop, which the profile does not hold",
    "transfer.pageable": "its fix pins the program's host buffers, which the profile does not hold",
    "quant.weight-only": "its fix needs a quantisation library's kernels (torchao), not a torch op",
    "attention.kv-cache-growth": "its fix changes how the program keeps its cache, not one op",
    "clocks.throttled": "its fix is the GPU's power or cooling, not the program",
    "gpu.shared": "its fix is a GPU to oneself, not the program",
}
DEFAULT_NOT_REBUILT = "its fix changes the program or the run beyond one op: nothing to rebuild from the profile"


def rebuilds(rule_id: str) -> Callable[[Rebuilder], Rebuilder]:
    """Register the rebuilder of one advice rule's findings; a second one for the rule is refused."""

    def register(fn: Rebuilder) -> Rebuilder:
        if rule_id in REBUILDERS:
            raise ValueError(f"a rebuilder for {rule_id!r} is already registered")
        REBUILDERS[rule_id] = fn
        return fn

    return register
