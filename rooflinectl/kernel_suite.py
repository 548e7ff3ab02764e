"""The reference kernels (`rooflinectl kernels`) as a profile: their measured variants become
kernel-table rows that go through the same roofline analysis as a profiled run.

Each variant of a reference kernel is one row: its median time per call, the FLOPs and bytes its Triton
kernels declared through launch_metadata (cost_source "triton"), or for a torch variant the
reference kernel's cost of that call (cost_source "analytic": the op's minimum cost as the reference kernel's own
kernel declares it, or the call's own formula where it does other work, such as bf16 weights
instead of int8). Variants are timed one at a time, so the profile records no window, idle time
or launch order. The reference kernels live in the repo folder kernels/, imported as `rooflinectl_kernels`.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import sys
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd

from rooflinectl.analysis.kernel_suite import OWN_COST
from rooflinectl.analysis.roofline import place_on_roofline, summarise
from rooflinectl.capture.run.session import run_metadata
from rooflinectl.ceilings.model import Ceilings
from rooflinectl.errors import EnvironmentProblem
from rooflinectl.profile_model import ProfileData
from rooflinectl.profile_sections import Summary, finished_metadata
from rooflinectl.schema import KERNEL_COLUMNS, LATER_COLUMNS

PACKAGE = "rooflinectl_kernels"
INTERPRET_ENV = "TRITON_INTERPRET"
ROW_KEYS = ["name", "variant", "role"]  # kept beside the kernel table to tie rows to the `kernels` report
EXTRA_COLUMNS = [*ROW_KEYS, *OWN_COST]  # and what a variant's own kernels declare, where it is held to the op's minimum


class TritonModeFixed(EnvironmentProblem):
    """Triton's language was imported in the other mode (compiler or interpreter) before the
    reference kernels: its own library functions (tl.max, tl.sum...) are decorated then, once per process."""


def triton_interpreting() -> bool | None:
    """The mode triton.language was imported in: True interpreter, False compiler, None not yet."""
    if "triton.language" not in sys.modules:
        return None
    import triton.language as tl
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(tl.sum, InterpretedFunction)


def load_reference_kernels(interpret: bool) -> ModuleType:
    """Import the reference kernels with Triton compiling for the GPU, or running through its CPU
    interpreter (TRITON_INTERPRET=1). Triton fixes the mode when a function is decorated, at
    import: raises TritonModeFixed when triton was imported in the other mode already."""
    if importlib.util.find_spec("triton") is None:
        raise EnvironmentProblem("the reference kernels need triton: pip install triton")
    if interpret:
        os.environ[INTERPRET_ENV] = "1"
    elif os.environ.get(INTERPRET_ENV) == "1":
        del os.environ[INTERPRET_ENV]
    mode = triton_interpreting()
    if mode is not None and mode != interpret:
        raise TritonModeFixed(f"triton was imported {'for the GPU' if interpret else 'in interpreter mode'} before "
                              f"the reference kernels; start the process with TRITON_INTERPRET={'1' if interpret else '0'}")
    if importlib.util.find_spec(PACKAGE) is None:
        raise EnvironmentProblem(f"the reference kernels ({PACKAGE}) are not installed: run `pip install -e .` "
                                 "in the rooflinectl checkout (PYTHONPATH alone does not find them)")
    return importlib.import_module(PACKAGE)


def _torch_label(variant: str) -> str:
    return variant if variant.startswith("torch") else f"torch: {variant}"


def _cost_note(result: dict[str, Any]) -> str:
    source = result.get("cost_source")
    if result.get("bytes") is None:
        return "no cost: the reference kernel itself did not run, so the op's minimum is not known"
    if source == "call":
        return "the reference kernel's formula for this call (it does other work than the reference kernel)"
    if source == "triton":
        return "declared by the kernels' launch_metadata"
    note = "the op's minimum cost, as the reference kernel declares it"
    if result.get("own_bytes") is not None:
        note += (f"; its own kernels declare {result['own_flops']:.6g} FLOPs and {result['own_bytes']:.6g} bytes "
                 "(what a profile holds them to)")
    return note


def _row(result: dict[str, Any], device_kind: str) -> dict[str, Any]:
    triton = result["kind"] == "triton"
    kernels = result.get("kernels") or []
    known = result.get("bytes") is not None and result.get("flops") is not None
    return {
        "kernel": " + ".join(dict.fromkeys(kernels)) if triton else _torch_label(result["variant"]),
        "op": result["name"],
        "op_family": result["family"],
        "module": f"{result['name']}/{result['variant']}",  # the scope: keeps variants apart for advise
        "shapes": result["shapes"],
        "dtype": result["dtype"],
        "device": device_kind,
        "origin": "triton" if triton else "library" if result["role"] == "library" else "aten",
        "calls": max(len(kernels), 1),
        "time_s": float(result["time_s"]),
        "flops": float(result["flops"]) if known else math.nan,
        "bytes": float(result["bytes"]) if known else math.nan,
        "cost_source": ("triton" if triton else "analytic") if known else "none",
        "cost_note": _cost_note(result),
        "blocks": math.nan,
        "threads_per_block": math.nan,
        # the roof its declaration names (costs/triton_declared.py declared_cost); CPU ceilings have no tensor roofs
        "unit": (result.get("unit") or "simt") if device_kind == "cuda" else "simt",
        "precision": result.get("precision") or "",
        **LATER_COLUMNS,  # no source line: a reference kernel, not the user's code
        **{k: result[k] for k in ROW_KEYS},
        **{k: float(result[k]) if result.get(k) is not None else math.nan for k in OWN_COST},
    }


def suite_table(results: list[dict[str, Any]], ceilings: Ceilings, device_kind: str) -> pd.DataFrame:
    """One placed row per variant that ran (KERNEL_COLUMNS, plus name, variant, role), in the
    order given; one whose cost is not known (the reference kernel itself failed) has cost_source
    "none". Variants that failed or were not timed are left out (the report lists them)."""
    rows = [_row(r, device_kind) for r in results if not r.get("error") and r.get("time_s") is not None]
    if not rows:
        return pd.DataFrame(columns=list(KERNEL_COLUMNS) + EXTRA_COLUMNS)
    placed = place_on_roofline(pd.DataFrame(rows), ceilings)
    placed["rank"] = 0
    return placed[list(KERNEL_COLUMNS) + EXTRA_COLUMNS]


def suite_profile(table: pd.DataFrame, ceilings: Ceilings, device_kind: str, *, command: list[str],
                    extra: dict[str, Any]) -> ProfileData:
    """The profile file of a `rooflinectl kernels` run: the kernel table as `rooflinectl profile` writes it."""
    metadata = finished_metadata(run_metadata(device_kind), ceilings, command=command, completed=True, exit_code=0,
                                 reference_kernels=extra)
    kernels = table[list(KERNEL_COLUMNS)].reset_index(drop=True)
    return ProfileData(kernels=kernels, ceilings=ceilings, metadata=metadata, summary=_summary(kernels))


def _summary(kernels: pd.DataFrame) -> Summary:
    """The pipeline's summary (analysis.roofline.summarise) of the variants' launches: each row's
    calls as launches of its mean time. Variants are timed one at a time, so there is no window,
    idle time or launch order to report: those stay None."""
    per_launch = kernels["time_s"] / kernels["calls"].clip(lower=1)
    times = np.repeat(per_launch.to_numpy(dtype=float), kernels["calls"].clip(lower=1).to_numpy(dtype=int))
    ends = np.cumsum(times)
    launches = pd.DataFrame({"start_ns": (ends - times) * 1e9, "end_ns": ends * 1e9, "time_s": times})
    summary = summarise(kernels, launches, window_s=float(times.sum()), sequence=[])
    summary.update({"window_s": None, "device_busy_s": None, "device_idle_s": None, "device_idle_unprofiled_s": None,
                    "host_events": 0, "regions": []})
    return summary
