"""Which tensors an op read and wrote, from the profiler's event tree (capture/run/
tensor_accesses.py), and the memory level they give a row, live on the CPU (issue 29): the case
shapes could not tell, `mul(fresh, old)` against `mul(fresh, fresh)`, all tensors of one shape."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from rooflinectl.capture.run.tensor_accesses import tensor_accesses
from rooflinectl.ceilings.model import Ceilings, Roof

KB = 1024


def _pairs(flat: list[int]) -> list[tuple[int, int]]:
    return list(zip(flat[::2], flat[1::2]))


def test_an_op_reads_its_inputs_and_writes_the_output_it_allocated() -> None:
    x = torch.rand(128, 256)
    row = torch.rand(1, 256)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                profile_memory=True) as prof:
        y = torch.add(x, row.expand(128, 256))
        z = torch.mul(y, y)
    found = {name: value for (name, _), value in tensor_accesses(prof).items()}
    add_reads, add_writes = found["aten::add"]
    assert sorted(b for _, b in _pairs(add_reads)) == [256 * 4, 128 * 256 * 4]  # the broadcast reads one row
    assert [b for _, b in _pairs(add_writes)] == [128 * 256 * 4]
    mul_reads, mul_writes = found["aten::mul"]
    written = _pairs(add_writes)[0][0]
    assert [i for i, _ in _pairs(mul_reads)] == [written, written]  # the identity add's output was given
    assert len(_pairs(mul_writes)) == 1 and _pairs(mul_writes)[0][0] != written
    del z


def test_a_workspace_freed_inside_the_op_is_not_an_output() -> None:
    x = torch.rand(64, 64)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                profile_memory=True) as prof:
        y = x.t().contiguous().sum(0)  # contiguous copies; the sum's output is 64 floats
    found = {name: value for (name, _), value in tensor_accesses(prof).items()}
    assert [b for _, b in _pairs(found["aten::sum"][1])] == [64 * 4]
    del y


def _ceilings(capacity_bytes: int) -> Ceilings:
    memory = {"dram": Roof(10e9, "measured"), "cache": Roof(40e9, "measured")}
    return Ceilings("test CPU", "cpu", memory, {"simt.fp32": Roof(50e9, "measured")},
                    details={"device": {"llc_bytes": capacity_bytes}})


@pytest.mark.parametrize("order", ["old first", "fresh first"])
def test_mul_of_an_old_tensor_is_held_to_dram_and_of_fresh_ones_to_the_cache(order: str) -> None:
    """256 KiB tensors against a 2 MiB cache: `old` is written, then 4 MiB of other tensors, then
    `fresh` and `fresh2`. mul(fresh, old) reads old from DRAM (a third of its bytes) and writes
    its output (a third): 2/3 >= DRAM roof / cache roof (0.25), DRAM. mul(fresh, fresh2): 1/3,
    DRAM too at 0.25; at a cache roof 2.5 times DRAM's (0.4) the two part: so the roofs are set
    to make 0.4 the share, and the shape rule (both rows: inputs of the same shape just written)
    cannot tell them apart."""
    from rooflinectl.capture.run.runner import profile_calls
    from rooflinectl.pipeline import profile_data

    n = 64 * KB  # 256 KiB of fp32

    def step() -> None:
        old = torch.rand(n)
        fillers = [torch.rand(n) for _ in range(16)]  # 4 MiB written after old
        fresh, fresh2 = torch.rand(n), torch.rand(n)
        pair = (fresh, old) if order == "old first" else (old, fresh)
        torch.mul(*pair)
        torch.sub(fresh, fresh2)
        del fillers

    ceilings = _ceilings(2 * 1024 * KB)
    ceilings.memory_bytes_per_s["cache"] = Roof(25e9, "measured")  # DRAM binds from 10 / 25 = 0.4 of the bytes
    capture = profile_calls(step, (), {}, warmup=1, iters=3, device_kind="cpu")
    table = profile_data(capture, command=["test"], completed=True, exit_code=0, ceilings=ceilings).kernels
    levels = pd.Series(table["memory_level"].to_numpy(), index=table["op"]).to_dict()
    assert levels["aten::mul"] == "dram", table[["op", "memory_level"]]
    assert levels["aten::sub"] == "cache", table[["op", "memory_level"]]


def test_a_long_run_keeps_the_latest_ops(monkeypatch) -> None:
    """Past the cap, the ops kept are the last ones (the steady state ends a run)."""
    import rooflinectl.capture.run.tensor_accesses as accesses

    monkeypatch.setattr(accesses, "MAX_ACCESS_OPS", 10)
    x = torch.rand(8)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                profile_memory=True) as prof:
        for _ in range(30):
            x = x * 2
        torch.neg(x)
    found = accesses.tensor_accesses(prof)
    assert len(found) == 10
    assert "aten::neg" in {name for name, _ in found}


def test_tensors_are_known_by_their_storage_address() -> None:
    """A cache holds lines by address: an op's inputs and outputs are keyed by where their storage
    lies (a view by its base), so a block the allocator hands to the next tensor keeps its key."""
    x = torch.rand(128, 256)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                profile_memory=True) as prof:
        y = torch.add(x, 1.0)
        z = torch.mul(y[:64], 2.0)  # a view of y: y's storage
    found = {name: value for (name, _), value in tensor_accesses(prof).items()}
    assert x.data_ptr() in [i for i, _ in _pairs(found["aten::add"][0])]  # beside the scalar's tensor
    assert [i for i, _ in _pairs(found["aten::add"][1])] == [y.data_ptr()]
    assert y.data_ptr() in [i for i, _ in _pairs(found["aten::mul"][0])]
    assert [i for i, _ in _pairs(found["aten::mul"][1])] == [z.data_ptr()]
