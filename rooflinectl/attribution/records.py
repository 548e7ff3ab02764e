"""The launch table, built one launch at a time: what attribution knows of each kernel launch
(or unit of CPU work) and of the op its cost comes from, as LAUNCH_COLUMNS rows.

A long run has millions of launches: each is a tuple (no dict, no dataclass instance), and the
rows move into columns every CHUNK rows, so the table is never held twice over.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import pandas as pd

from rooflinectl.attribution.precision import unit_and_precision
from rooflinectl.costs import OpCost

LAUNCH_COLUMNS = ["kernel", "op", "op_family", "module", "shapes", "dtype", "device", "origin", "time_s",
                  "flops", "bytes", "cost_source", "cost_note", "blocks", "threads_per_block",
                  "registers_per_thread", "shared_bytes_per_block", "unit",
                  "precision", "start_ns", "end_ns", "launch_ns", "correlation"]
PER_LAUNCH_COLUMNS = ("start_ns", "end_ns", "launch_ns", "correlation")  # one launch's own: not in a table row


class Launch(NamedTuple):  # a tuple: made once per launch, millions of times on a long run
    """What one kernel launch (GPU) or one unit of CPU work brings to its record, whatever its cost."""

    kernel: str
    module: str
    device: str
    time_s: float
    start_ns: int
    end_ns: int
    launch_ns: int
    blocks: float = math.nan
    threads_per_block: float = math.nan
    registers_per_thread: float = math.nan
    shared_bytes_per_block: float = math.nan
    correlation: int = -1  # the trace's id of the launch (GPU), -1 on CPU


class Attribution(NamedTuple):
    """The op a launch's cost comes from, and how: cost None means unknown (cost_source none)."""

    op: str
    cost: OpCost | None
    share: float  # the part of the op's cost this launch carries
    shapes: str
    origin: str
    source: str  # cost_source when the cost is known
    note: str = ""  # cost_note when the cost is unknown; appended to a known cost's own note


class Records:
    """LAUNCH_COLUMNS rows as tuples, moved into columns every CHUNK rows (no dict per launch, and
    at most CHUNK rows held twice while a million-launch table is built)."""

    CHUNK = 1 << 16

    def __init__(self, metadata: dict[str, Any]) -> None:
        self.metadata = metadata
        self.rows: list[tuple[Any, ...]] = []
        self.columns: list[list[Any]] = [[] for _ in LAUNCH_COLUMNS]
        self._units: dict[tuple[str, str, str], tuple[str, str]] = {}

    def add(self, launch: Launch, how: Attribution) -> None:
        """One launch's row, in LAUNCH_COLUMNS order."""
        cost = how.cost
        if cost is not None:
            family, dtype, note = cost.family, cost.dtype, f"{cost.note}; {how.note}" if how.note else cost.note
        else:
            family, dtype, note = "other", "", how.note
        if cost is not None and cost.unit:  # declared by the kernel itself
            unit = (cost.unit, dtype)
        else:
            key = (family, dtype, launch.device)
            unit = self._units.get(key)
            if unit is None:
                unit = self._units[key] = (unit_and_precision(family, dtype, launch.device, self.metadata)
                                           if dtype else ("simt", ""))
        self.rows.append((
            launch.kernel, how.op, family, launch.module, how.shapes, dtype, launch.device, how.origin, launch.time_s,
            cost.flops * how.share if cost is not None else math.nan,
            cost.bytes * how.share if cost is not None else math.nan,
            how.source if cost is not None else "none", note, launch.blocks, launch.threads_per_block,
            launch.registers_per_thread, launch.shared_bytes_per_block, unit[0], unit[1],
            launch.start_ns, launch.end_ns, launch.launch_ns, launch.correlation,
        ))
        if len(self.rows) >= self.CHUNK:
            self._flush()

    def _flush(self) -> None:
        for column, values in zip(self.columns, zip(*self.rows)):
            column.extend(values)
        self.rows = []

    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame, each column let go once converted."""
        self._flush()
        data = {name: pd.Series(self.columns.pop(0)) for name in LAUNCH_COLUMNS}
        return pd.DataFrame(data, columns=LAUNCH_COLUMNS)
