"""The launch table, built one launch at a time: what attribution knows of each kernel launch
(or unit of CPU work) and of the op its cost comes from, as LAUNCH_COLUMNS rows.

A long run has millions of launches of a few hundred kinds (kernel, op, shapes, launch
configuration): each launch keeps its own numbers in typed arrays and a kind number, so no
Python object is made per launch and the table is built by indexing, not row by row.
"""

from __future__ import annotations

import math
from array import array
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from rooflinectl.attribution.precision import unit_and_precision
from rooflinectl.costs import OpCost

LAUNCH_COLUMNS = ["kernel", "op", "op_family", "module", "shapes", "op_args", "dtype", "device", "origin", "time_s",
                  "flops", "bytes", "min_bytes", "cost_source", "cost_note", "blocks", "threads_per_block",
                  "registers_per_thread", "shared_bytes_per_block", "unit",
                  "precision", "source", "source_function", "source_call", "start_ns", "end_ns", "launch_ns",
                  "correlation"]
PER_LAUNCH_COLUMNS = ("start_ns", "end_ns", "launch_ns", "correlation")  # one launch's own: not in a table row
# The columns a launch shares with every launch of its kind (Records.add), in Records' order.
KIND_COLUMNS = ("kernel", "op", "op_family", "module", "shapes", "op_args", "dtype", "device", "origin", "cost_source",
                "cost_note", "blocks", "threads_per_block", "registers_per_thread", "shared_bytes_per_block",
                "unit", "precision", "source", "source_function", "source_call", "min_ratio")
# min_ratio: the op's minimum bytes over the bytes its cost counts (1 where they are the same, NaN
# without a cost): a launch's min_bytes is its bytes times its kind's ratio (frame)
_KIND_FLOATS = frozenset({"blocks", "threads_per_block", "registers_per_thread", "shared_bytes_per_block",
                          "min_ratio"})


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
    source_line: tuple[str, str, str] = ("", "", "")  # the user's path:line, function, library call (attribution/sources.py)


class Attribution(NamedTuple):
    """The op a launch's cost comes from, and how: cost None means unknown (cost_source none)."""

    op: str
    cost: OpCost | None
    share: float  # the part of the op's cost this launch carries
    shapes: str
    origin: str
    source: str  # cost_source when the cost is known
    note: str = ""  # cost_note when the cost is unknown; appended to a known cost's own note
    op_args: str = ""  # the op's arguments a verifier rebuilds it with (attribution/op_args.py)


class Records:
    """LAUNCH_COLUMNS rows, kept as columns: a launch's own numbers (time, FLOPs, bytes, times,
    correlation) in typed arrays, and the rest of its row (kernel, op, shapes, launch
    configuration...) as a kind: one tuple per distinct row, numbered, and one number per launch.
    A million launches of a few hundred kernels hold a few hundred tuples, not a million."""

    def __init__(self, metadata: dict[str, Any]) -> None:
        self.metadata = metadata
        self.kinds: list[tuple[Any, ...]] = []  # KIND_COLUMNS values, one tuple per distinct kind
        self._kind_numbers: dict[tuple[Any, ...], int] = {}
        self._units: dict[tuple[str, str, str], tuple[str, str]] = {}
        self._kind = array("q")
        self._floats = {name: array("d") for name in ("time_s", "flops", "bytes")}
        self._ints = {name: array("q") for name in PER_LAUNCH_COLUMNS}
        # in the order of add_kinds' tuples: kind, time_s, flops, bytes, start, end, launch, correlation
        self._columns = (self._kind, *self._floats.values(), *self._ints.values())

    def add(self, launch: Launch, how: Attribution) -> int:
        """One launch's row; returns its kind, which add_kinds takes for later launches whose row
        differs only in the launch's own numbers."""
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
        values = (launch.kernel, how.op, family, launch.module, how.shapes, how.op_args, dtype, launch.device, how.origin,
                  how.source if cost is not None else "none", note, launch.blocks, launch.threads_per_block,
                  launch.registers_per_thread, launch.shared_bytes_per_block, unit[0], unit[1], *launch.source_line,
                  _min_ratio(cost))
        kind = self._kind_numbers.get(values)
        if kind is None:
            kind = self._kind_numbers[values] = len(self.kinds)
            self.kinds.append(values)
        self.add_kinds([(kind, launch.time_s, cost.flops * how.share if cost is not None else math.nan,
                         cost.bytes * how.share if cost is not None else math.nan,
                         launch.start_ns, launch.end_ns, launch.launch_ns, launch.correlation)])
        return kind

    def add_kinds(self, launches: list[tuple[int, float, float, float, int, int, int, int]]) -> None:
        """Launches of kinds add returned, only their own numbers: (kind, time_s, flops, bytes,
        start_ns, end_ns, launch_ns, correlation) each, in launch order (one extend per column)."""
        if not launches:
            return
        for column, values in zip(self._columns, zip(*launches)):
            column.extend(values)

    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame in LAUNCH_COLUMNS order (text columns as objects, numbers as
        float64 and the launch's times as int64)."""
        if not self._kind:
            return pd.DataFrame({name: pd.Series([], dtype=object) for name in LAUNCH_COLUMNS}, columns=LAUNCH_COLUMNS)
        kind = np.frombuffer(self._kind, dtype=np.int64)
        data: dict[str, Any] = {}
        for name, values in zip(KIND_COLUMNS, zip(*self.kinds)):
            distinct = np.empty(len(values), dtype=float if name in _KIND_FLOATS else object)
            distinct[:] = values
            data[name] = distinct[kind]
        data.update({name: np.frombuffer(values, dtype=np.float64) for name, values in self._floats.items()})
        data["min_bytes"] = data["bytes"] * data.pop("min_ratio")
        data.update({name: np.frombuffer(values, dtype=np.int64) for name, values in self._ints.items()})
        return pd.DataFrame(data, columns=LAUNCH_COLUMNS)


def _min_ratio(cost: OpCost | None) -> float:
    """min_bytes / bytes of a cost (1 when its bytes are the minimum; NaN without a cost)."""
    if cost is None:
        return math.nan
    if cost.min_bytes is None or cost.bytes == cost.min_bytes:
        return 1.0
    return cost.min_bytes / cost.bytes if cost.bytes > 0 else math.nan
