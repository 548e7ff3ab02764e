"""On the GPU (the H200 machine), issue 29: every aten kernel gets its op's tensor reads and
writes (the kernel's External id names the op), and the analytic level tells `mul(fresh, old)`
from `mul(fresh, fresh)`: 4 MB tensors, the old one written before 128 MB of others, against
the device's own L2 size and roofs at the H200's measured ratio (DRAM binds from 0.578 of the
bytes)."""

from __future__ import annotations

import pandas as pd
import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu


def _ceilings():
    from rooflinectl.ceilings.model import Ceilings, Roof

    l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
    memory = {"dram": Roof(4.67e12, "measured"), "l2": Roof(8.08e12, "measured")}
    return Ceilings(torch.cuda.get_device_name(0), "cuda", memory, {"simt.fp32": Roof(60e12, "spec")},
                    details={"device": {"l2_bytes": l2_bytes}})


def test_the_level_follows_the_tensors_a_kernel_reads() -> None:
    from rooflinectl.attribution.tensor_accesses import launch_accesses
    from rooflinectl.capture.run.runner import profile_calls
    from rooflinectl.pipeline import _analyse, profile_data

    n = 1 << 20  # 4 MB of fp32

    def step() -> None:
        old = torch.rand(n, device="cuda")
        fillers = [torch.rand(n, device="cuda") for _ in range(32)]  # 128 MB written after old
        fresh, fresh2 = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
        torch.mul(fresh, old)
        torch.sub(fresh, fresh2)
        del fillers

    capture = profile_calls(step, (), {}, warmup=1, iters=3, device_kind="cuda")
    ceilings = _ceilings()
    launches = _analyse(capture.trace, "cuda", capture.metadata, ceilings, 3, "auto")[3]
    accesses = launch_accesses(capture.trace, launches, "cuda")
    known = [a is not None for a, op in zip(accesses, launches["op"]) if op in ("aten::mul", "aten::sub")]
    assert known and all(known)
    table = profile_data(capture, command=["test"], completed=True, exit_code=0, ceilings=ceilings).kernels
    levels = pd.Series(table["memory_level"].to_numpy(), index=table["op"]).to_dict()
    assert levels["aten::mul"] == "dram", table[["op", "memory_level", "dram_bytes_modelled", "bytes"]]
    assert levels["aten::sub"] == "l2", table[["op", "memory_level", "dram_bytes_modelled", "bytes"]]
