"""The analytic memory level against the H200's warm-cache counters, on recorded training runs
(issue 29): the capture of each run is analysed again on the CPU, with the profile's roofs, and
its analytic level compared with the level the counters decided, group by group.

The counters are an independent measurement (Nsight Compute's DRAM bytes with the caches as the
program left them, tests/data/README.md). The shape rule alone fails here: 86.8% on GPT-2 and
64.0% on ResNet-50 (92.3% on Llama-style; docs/benchmarks/accuracy.md). The figures asserted are
those measured with the tensor-identity model and read-only tensors held to 0.7 of the L2
(CLEAN_SHARE, from scripts/l2_reuse_sweep.py), on two or three runs of each script recorded the
same day (NAME-2, NAME-3 after the model was chosen on the first runs and resnet-2):
Llama-style 90.1% and 85.1%, GPT-2 93.2% and 93.5%, ResNet-50 89.7%, 90.8% and 89.4%. The 90%
target is not met on every run (docs/benchmarks/accuracy.md). With one capacity for every tensor
they were 90.4%, 85.4%, 93.2%, 93.5%, 88.9%, 89.8% and 92.3%.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflinectl.analysis.counter_levels import level_agreement
from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.capture.run.session import load_capture
from rooflinectl.outputs.profile_file import load_profile
from rooflinectl.pipeline import analyse_trace

DATA = Path(__file__).parent / "data" / "h200_levels"
KEYS = ["kernel", "op", "shapes", "calls"]
RUNS = ["llama", "llama-2", "gpt2", "gpt2-2", "resnet", "resnet-2", "resnet-3"]


def _analytic(name: str):
    data = load_profile(str(DATA / f"{name}.profile.json.gz"))
    capture = load_capture(str(DATA / f"{name}.capture.json.gz"))
    table, _, _ = analyse_trace(capture.trace, capture.device_kind, capture.metadata, data.ceilings)
    recorded = data.kernels.reset_index(drop=True)
    assert (table[KEYS].astype(str).to_numpy() == recorded[KEYS].astype(str).to_numpy()).all()
    return recorded.assign(memory_level_analytic=table["memory_level"].to_numpy(),
                           dram_bytes_modelled=table["dram_bytes_modelled"].to_numpy()), data.ceilings


@pytest.mark.parametrize(("name", "agreement"), [
    ("llama", 0.90), ("llama-2", 0.85), ("gpt2", 0.93), ("gpt2-2", 0.93),
    ("resnet", 0.895), ("resnet-2", 0.90), ("resnet-3", 0.89)])
def test_the_analytic_level_agrees_with_the_counters(name: str, agreement: float) -> None:
    table, _ = _analytic(name)
    agreed = level_agreement(table)
    assert agreed["level_compared_time_share"] > 0.9  # the counters decided most memory-bound time
    assert agreed["level_agree_time_share"] >= agreement, agreed


@pytest.mark.parametrize("name", RUNS)
def test_no_row_sits_above_the_roof_its_analytic_level_holds_it_to(name: str) -> None:
    table, ceilings = _analytic(name)
    placed = place_on_roofline(table.assign(memory_level=table["memory_level_analytic"], memory_level_source="analytic")
                               .drop(columns=["roof_time_s"], errors="ignore"), ceilings)
    known = placed[placed["cost_source"] != "none"]
    assert (known["efficiency"] <= 1.03).all(), known.loc[known["efficiency"] > 1.03, ["op", "shapes", "efficiency"]]


@pytest.mark.parametrize("name", RUNS)
def test_the_modelled_dram_bytes_sum_to_the_warm_counters_within_a_quarter(name: str) -> None:
    """Over the memory-bound groups the counters decided, the model's DRAM bytes against the warm
    run's: 0.968 and 0.977 (Llama-style), 0.947 and 0.946 (GPT-2), 0.923, 0.925 and 0.900 (ResNet-50)
    of them (docs/benchmarks/accuracy.md), and
    `validate` shows them beside each other."""
    from rooflinectl.analysis.validate import validate_rows
    from rooflinectl.outputs.validate_render import validate_markdown

    table, ceilings = _analytic(name)
    rows = validate_rows(table, ceilings)
    decided = rows[(rows["memory_level_source"] == "counters") & (rows["bound"] == "memory")]
    ratio = decided["dram_bytes_modelled"].sum() / decided["dram_bytes_warm"].sum()
    assert 0.8 <= ratio <= 1.25, ratio
    assert "modelled / warm DRAM" in validate_markdown({}, rows, rows.iloc[0:0], {}, 5)
