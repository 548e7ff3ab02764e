"""Collective costs: nccl-tests' bus bytes by hand, and the NCCL kernels of the real 2-rank DDP trace."""

from __future__ import annotations

import pandas as pd
import pytest
from real_traces import raw_json, trace

from rooflinectl.ceilings.build import gpu_spec_ceilings
from rooflinectl.ceilings.detect import GpuInfo
from rooflinectl.costs.collectives import (
    collective_cost,
    collective_from_args,
    collective_from_gloo,
    collective_kind,
)
from rooflinectl.pipeline import analyse_trace


@pytest.mark.parametrize(("name", "kind"), [
    ("allreduce", "all_reduce"), ("allreduce_coalesced", "all_reduce"), ("gloo:all_reduce", "all_reduce"),
    ("_allgather_base", "all_gather"), ("allgather_into_tensor_coalesced", "all_gather"),
    ("_reduce_scatter_base", "reduce_scatter"), ("reduce_scatter_tensor_coalesced", "reduce_scatter"),
    ("all_to_allv", "all_to_all"), ("alltoall_base", "all_to_all"), ("broadcast", "broadcast"),
    ("reduce", "reduce"), ("send", "send"), ("recv", "recv"), ("gather", "gather"), ("scatter", "scatter"),
    ("barrier", "barrier"), ("aten::add", None),
])
def test_collective_names(name: str, kind: str | None) -> None:
    assert collective_kind(name) == kind


def _args(name: str, n_in: int, n_out: int, group: int, dtype: str = "Float") -> dict:
    return {"Collective name": name, "In msg nelems": n_in, "Out msg nelems": n_out, "Group size": group,
            "dtype": dtype, "Process Group Ranks": str(list(range(group)))}


@pytest.mark.parametrize(("name", "n_in", "n_out", "group", "dtype", "bus_bytes"), [
    # all-reduce: S = count x 4, bus = S x 2(n-1)/n
    ("allreduce", 1000, 1000, 2, "Float", 4000 * 2 * 1 / 2),
    ("allreduce", 1000, 1000, 8, "BFloat16", 2000 * 2 * 7 / 8),
    # all-gather: S = the gathered total (out), bus = S x (n-1)/n
    ("all_gather", 250, 1000, 4, "Float", 4000 * 3 / 4),
    # reduce-scatter: S = the whole input, bus = S x (n-1)/n
    ("reduce_scatter", 1000, 250, 4, "Float", 4000 * 3 / 4),
    # all-to-all: S = the whole buffer, (n-1)/n
    ("all_to_all", 1000, 1000, 4, "Half", 2000 * 3 / 4),
    # broadcast, send: factor 1
    ("broadcast", 76, 76, 2, "Long", 76 * 8),
    ("send", 10, 10, 2, "Float", 40),
    # one rank: an all-reduce moves nothing over a link
    ("allreduce", 1000, 1000, 1, "Float", 0.0),
])
def test_bus_bytes_by_hand(name: str, n_in: int, n_out: int, group: int, dtype: str, bus_bytes: float) -> None:
    c = collective_from_args(_args(name, n_in, n_out, group, dtype))
    assert c is not None
    cost = collective_cost(c)
    assert cost.bytes == pytest.approx(bus_bytes)
    assert cost.flops == 0.0 and cost.family == "collective"


def test_unknown_dtype_or_missing_size_is_no_cost() -> None:
    assert collective_from_args(_args("allreduce", 10, 10, 2, "Quantum")) is None
    assert collective_from_args({"Collective name": "allreduce", "dtype": "Float", "Group size": 2}) is None


def test_gloo_annotation_takes_the_world_size() -> None:
    c = collective_from_gloo("gloo:all_reduce", [[1051136]], ["float"], 2)
    assert c is not None and collective_cost(c).bytes == pytest.approx(1051136 * 4 * 2 * 1 / 2)
    gathered = collective_from_gloo("gloo:all_gather", [[1]], ["long int"], 2)
    assert gathered is not None and gathered.size_bytes == 2 * 8


def _h200() -> object:
    return gpu_spec_ceilings(GpuInfo(name="NVIDIA H200", sms=132, max_sm_clock_hz=1.98e9, compute_capability=(9, 0)))


def test_real_ddp_trace_nccl_kernels_carry_their_collectives() -> None:
    """The 13 all-reduces of the recorded 2-rank DDP GPT-2 run, read from the raw trace's kernel
    args (not through our parser), each costed size x 4 bytes x 2(2-1)/2."""
    raw = raw_json("ddp_gpt2.rank0")
    expected = {}
    for e in raw["traceEvents"]:
        args = e.get("args") or {}
        if e.get("cat") == "kernel" and args.get("Collective name") == "allreduce":
            n = args["In msg nelems"]
            expected.setdefault(n, [0, 0.0])
            expected[n][0] += 1
            expected[n][1] += n * 4 * 2 * (2 - 1) // 2
    assert sum(v[0] for v in expected.values()) == 13
    table, _, setup = analyse_trace(trace("ddp_gpt2.rank0"), "cuda", {}, _h200())
    table = pd.concat([table, setup])  # the whole run: the first step's all-reduce and DDP's broadcasts are setup
    rows = table[table["op"] == "c10d::allreduce_"].groupby("shapes")[["calls", "bytes"]].sum()
    got = {int(s.strip("[]")): [int(c), float(b)] for s, c, b in zip(rows.index, rows["calls"], rows["bytes"])}
    assert got == expected  # bytes are integers here: exact
    reduces = table[table["op"] == "c10d::allreduce_"]
    assert set(reduces["unit"]) == {"link"} and set(reduces["cost_source"]) == {"analytic"}
    assert set(reduces["precision"]) == {"fp32"}
    broadcast = table[table["op"] == "c10d::broadcast_"]
    assert broadcast["calls"].sum() == 4
