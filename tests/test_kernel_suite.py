"""Reference kernel results -> kernel-table rows -> roofline placement and the library comparison, against
hand-computed values (no triton needed)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from rooflinectl.analysis.kernel_suite import compare_variants, target_status
from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.kernel_suite import _row, suite_profile, suite_table
from rooflinectl.outputs.profile_file import load_profile, save_profile
from rooflinectl.schema import KERNEL_COLUMNS


def _ceilings() -> Ceilings:
    return Ceilings("Test GPU", "cuda", memory_bytes_per_s={"dram": Roof(1e12, "measured")},
                    compute_flops_per_s={"tensor.bf16": Roof(1e15, "measured"), "simt.fp32": Roof(1e13, "spec")},
                    kernel_floor_s=Roof(1e-6, "measured"))


def _result(spec: str, variant: str, role: str, kind: str, time_s: float | None, flops: float | None,
            nbytes: float | None, unit: str = "simt", precision: str = "fp32", kernels: list[str] | None = None,
            **extra):
    """A harness result as `rooflinectl kernels` passes it on (kernels/harness.VariantResult)."""
    base = {"name": spec, "variant": variant, "role": role, "kind": kind, "family": "gemm",
            "shapes": "M=1", "dtype": "bf16", "kernels": kernels or ([f"{variant}_kernel"] if kind == "triton" else []),
            "time_s": time_s, "flops": flops, "bytes": nbytes, "unit": unit, "precision": precision,
            "own_flops": None, "own_bytes": None, "cost_source": "triton" if kind == "triton" else "op", "error": None}
    return base | extra


RESULTS = [
    _result("mm", "tiled", "kernel", "triton", 4e-3, 2e12, 1e9, "tensor", "bf16"),
    _result("mm", "naive", "twin", "triton", 1.0, 2e12, 1e9),
    _result("mm", "torch", "library", "torch", 2e-3, 2e12, 1e9, "tensor", "bf16"),
    _result("copy", "coalesced", "kernel", "triton", 1e-2, 0.0, 8e9, family="copy"),
    # three launches that move 3x the op's minimum: held to the minimum, their own bytes beside
    _result("copy", "passes", "twin", "triton", 3e-2, 0.0, 8e9, kernels=["a_kernel", "b_kernel", "a_kernel"],
            own_flops=0.0, own_bytes=2.4e10, cost_source="op"),
    _result("copy", "broken", "twin", "triton", None, None, None, error="RuntimeError: boom"),
]


def test_rows_are_placed_on_their_roofs() -> None:
    table = compare_variants(suite_table(RESULTS, _ceilings(), "cuda"), _ceilings())
    rows = table.set_index("module")
    assert list(rows.index) == ["mm/tiled", "mm/naive", "mm/torch", "copy/coalesced", "copy/passes"]  # broken left out
    tiled = rows.loc["mm/tiled"]
    assert (tiled["unit"], tiled["precision"], tiled["roof"]) == ("tensor", "bf16", "tensor.bf16")
    assert tiled["efficiency"] == pytest.approx((2e12 / 1e15) / 4e-3)  # compute time at the roof / time = 0.5
    assert tiled["vs_library"] == pytest.approx(2e-3 / 4e-3)
    naive = rows.loc["mm/naive"]
    assert (naive["unit"], naive["precision"], naive["roof"]) == ("simt", "fp32", "simt.fp32")
    assert naive["efficiency"] == pytest.approx((2e12 / 1e13) / 1.0)
    copy = rows.loc["copy/coalesced"]
    assert (copy["roof"], copy["roof_value"], copy["roof_source"]) == ("dram", 1e12, "measured")
    assert copy["efficiency"] == pytest.approx(8e9 / 1e12 / 1e-2)
    assert math.isnan(copy["vs_library"])  # the copy reference kernel here has no library row
    passes = rows.loc["copy/passes"]
    assert passes["calls"] == 3 and passes["kernel"] == "a_kernel + b_kernel"
    assert passes["efficiency"] == pytest.approx(8e9 / 1e12 / 3e-2)  # the op's minimum: a third of the fused copy
    assert passes["own_efficiency"] == pytest.approx(2.4e10 / 1e12 / 3e-2)  # what its kernels move: as fast
    assert "2.4e+10 bytes" in passes["cost_note"] and math.isnan(copy["own_efficiency"])
    assert rows.loc["mm/torch", "origin"] == "library" and rows.loc["mm/torch", "cost_source"] == "analytic"


def test_targets_read_the_right_figure() -> None:
    table = compare_variants(suite_table(RESULTS, _ceilings(), "cuda"), _ceilings()).set_index("module")
    assert target_status("roof", 0.75, table.loc["copy/coalesced"]) == (pytest.approx(0.8), True)
    assert target_status("roof", 0.85, table.loc["copy/coalesced"])[1] is False
    assert target_status("library", 0.85, table.loc["mm/tiled"]) == (pytest.approx(0.5), False)


def test_cpu_rows_hold_no_tensor_roof() -> None:
    table = suite_table(RESULTS[:1], _ceilings(), "cpu")
    assert table.iloc[0]["unit"] == "simt"


def test_roof_is_the_bound_placement_found_at_the_clock_it_used() -> None:
    """At half the roof's clock the tensor roof halves (placement scales it): the GEMM becomes
    compute-bound although at full clock its bytes would take longer. The variants table names the
    roof placement used, at the value it used."""
    ceilings = Ceilings("Test GPU", "cuda", memory_bytes_per_s={"dram": Roof(1e12, "measured")},
                        compute_flops_per_s={"tensor.bf16": Roof(1e15, "spec", clock_mhz=2000.0)},
                        kernel_floor_s=Roof(1e-6, "measured"))
    rows = pd.DataFrame([_row(_result("mm", "tiled", "kernel", "triton", 4e-3, 1e12, 1.6e9, "tensor", "bf16"), "cuda")])
    placed = place_on_roofline(rows.assign(sm_clock_mhz=1000.0), ceilings)
    row = compare_variants(placed, ceilings).iloc[0]
    assert row["bound"] == "compute"  # 1e12 / 5e14 = 2 ms > 1.6e9 / 1e12 = 1.6 ms
    assert (row["roof"], row["roof_value"]) == ("tensor.bf16", pytest.approx(5e14))
    assert row["efficiency"] == pytest.approx(1e12 / row["roof_value"] / 4e-3)


def test_a_latency_bound_row_names_the_roof_of_its_longer_time() -> None:
    ceilings = _ceilings()
    results = [_result("copy", "tiny", "kernel", "triton", 1e-5, 0.0, 1e5),  # 0.1 us of bytes: under the floor
               _result("mm", "tiny", "kernel", "triton", 1e-5, 2e8, 1e3, "tensor", "bf16")]  # 0.2 us of FLOPs
    table = compare_variants(suite_table(results, ceilings, "cuda"), ceilings)
    assert list(table["bound"]) == ["latency", "latency"]
    assert list(table["roof"]) == ["dram", "tensor.bf16"]


def test_summary_counts_the_time_whose_cost_is_unknown() -> None:
    """A torch variant timed after its reference kernel failed carries no cost: kept, counted as
    unknown time, and each row's calls are launches (short ones under 5 us)."""
    ceilings = _ceilings()
    results = [_result("mm", "tiled", "kernel", "triton", None, None, None, error="RuntimeError: boom"),
               _result("mm", "torch", "library", "torch", 3e-3, None, None),
               _result("copy", "passes", "twin", "triton", 1e-3, 0.0, 8e9, kernels=["a", "b", "c", "d"]),
               _result("copy", "tiny", "kernel", "triton", 1e-5, 0.0, 1e3, kernels=["a", "b", "c"])]
    table = suite_table(results, ceilings, "cuda")
    unknown = table.set_index("module").loc["mm/torch"]
    assert (unknown["cost_source"], unknown["bound"]) == ("none", "unknown")
    summary = suite_profile(table, ceilings, "cpu", command=["rooflinectl", "kernels"], extra={}).summary
    assert summary["known_cost_time_share"] == pytest.approx(1.01e-3 / 4.01e-3)
    assert summary["unknown_time_share"] == pytest.approx(3e-3 / 4.01e-3)
    assert (summary["launches"], summary["short_launches"]) == (1 + 4 + 3, 3)  # 1e-5 / 3 s each
    assert summary["window_s"] is None and summary["device_idle_s"] is None  # no timeline: variants timed apart


def test_profile_file_round_trip(tmp_path) -> None:
    ceilings = _ceilings()
    table = suite_table(RESULTS, ceilings, "cuda")
    profile = suite_profile(table, ceilings, "cpu", command=["rooflinectl", "kernels"], extra={"size": "small"})
    assert list(profile.kernels.columns) == list(KERNEL_COLUMNS)
    assert profile.summary["launches"] == 1 + 1 + 1 + 1 + 3
    assert profile.summary["total_kernel_time_s"] == pytest.approx(4e-3 + 1.0 + 2e-3 + 1e-2 + 3e-2)
    path = tmp_path / "kernels.profile.json"
    save_profile(profile, path)
    loaded = load_profile(path)
    assert loaded.kernels["efficiency"].tolist() == pytest.approx(profile.kernels["efficiency"].tolist())
    assert loaded.metadata["reference_kernels"] == {"size": "small"}
