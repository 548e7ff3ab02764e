"""The analytic memory level against the H200's warm-cache counters, on recorded training runs
(issue 29): the capture of each run is analysed again on the CPU, with the profile's roofs, and
its analytic level compared with the level the counters decided, group by group.

The counters are an independent measurement (Nsight Compute's DRAM bytes with the caches as the
program left them, tests/data/README.md). The shape rule alone fails here: 86.8% on GPT-2 and
64.0% on ResNet-50 (92.3% on Llama-style; docs/benchmarks/accuracy.md).

Runs NAME, NAME-2, NAME-3 were recorded when a group's warm figure was shared by its sampling
class (another layer's launch): a figure borrowed from another context scrambles the level (Llama-
style and GPT-2: 53-80% agreement on those groups, 95-99% on the rest). Since 2026-12-02 a group
gets only its own launches' figure (attribution/counters.py); on these runs that is exactly the
figure of groups whose measured launches were all their own, so only those keep a counters' level
here. NAME-4 and resnet-5 were recorded with own figures only (piece 75, 2026-12-02 14:29-14:58
UTC). Agreement with the tensor-identity model (analysis/reuse_distance.py: read-only tensors held
to 0.7 of the L2, a tensor's lines as old as where its last toucher touched them, the L2 letting
lines go from 0.7 to 1.3 times its size):
- own figures, recorded: Llama-style 94.2%, GPT-2 95.4%, ResNet-50 89.7% and 89.1%;
- own figures, from the earlier runs: Llama-style 97.2% and 95.2%, GPT-2 99.0% and 98.7%,
  ResNet-50 92.9%, 93.1% and 92.8%;
- shared by class, as recorded (for the record): 89.0%, 82.9%, 94.4%, 94.6%, 91.0%, 91.3%, 91.2%.
ResNet-50's own-figure runs miss the 90% target (docs/benchmarks/accuracy.md).
llama-5, gpt2-5 and resnet-6 were recorded with the warm run measuring one launch of every row
(2026-12-02 16:17-16:30 UTC): the counters decide 99.2%, 100% and 92.8% of memory-bound time, and
the analytic level agrees on 87.9%, 93.6% and 88.1% of it: the target is missed on Llama-style and
ResNet-50. llama-6 and gpt2-6, the same on another machine (16:48 UTC): 87.2% and 93.6%.
llama-7, gpt2-7 and resnet-7 (19:08-19:18 UTC) were recorded with tensors known by their storage
address (capture/run/tensor_accesses.py): 92.2%, 94.3% and 90.0%. Held to the same counters, the
address-keyed analytic level agrees 4.0-4.1 points more on Llama-style, 0.9-1.0 on GPT-2 and 0.5 on
ResNet-50 (matched groups) than the allocation-keyed one: a cast's fresh destination lands in a
block whose lines are still in the L2.
The counters' level is decided again here by this checkout's rule, which leaves a row whose warm
figure DRAM could not have moved in its time on its analytic level.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflinectl.analysis.counter_levels import (
    level_agreement,
    with_ceilings_levels,
)
from rooflinectl.analysis.roofline import place_on_roofline
from rooflinectl.capture.run.session import load_capture
from rooflinectl.outputs.profile_file import load_profile
from rooflinectl.pipeline import analyse_trace

DATA = Path(__file__).parent / "data" / "h200_levels"
KEYS = ["kernel", "op", "shapes", "calls"]
SHARED_RUNS = ["llama", "llama-2", "gpt2", "gpt2-2", "resnet", "resnet-2", "resnet-3"]  # warm figures shared by class
OWN_RUNS = ["llama-4", "gpt2-4", "resnet-4", "resnet-5"]  # own launches' figures only
EVERY_ROW_RUNS = ["llama-5", "gpt2-5", "resnet-6", "llama-6", "gpt2-6"]  # the warm run measured one launch of every row
ADDRESS_RUNS = ["llama-7", "gpt2-7", "resnet-7"]  # every row measured, tensors known by address
RUNS = SHARED_RUNS + OWN_RUNS + EVERY_ROW_RUNS + ADDRESS_RUNS


def _analytic(name: str, own_only: bool = False):
    """The recorded table with this checkout's analytic level, and the counters' level decided
    again from the recorded warm figures by this checkout's rule; own_only: the counters decide
    only groups whose measured launches were all their own (a shared run's figure is then what a
    group's own launches alone give)."""
    data = load_profile(str(DATA / f"{name}.profile.json.gz"))
    capture = load_capture(str(DATA / f"{name}.capture.json.gz"))
    table, _, _ = analyse_trace(capture.trace, capture.device_kind, capture.metadata, data.ceilings)
    recorded = data.kernels.reset_index(drop=True)
    assert (table[KEYS].astype(str).to_numpy() == recorded[KEYS].astype(str).to_numpy()).all()
    analytic = table["memory_level"].replace("", "dram").to_numpy()
    out = recorded.assign(memory_level_analytic=analytic, memory_level=analytic, memory_level_source="analytic",
                          dram_bytes_modelled=table["dram_bytes_modelled"].to_numpy())
    shared = out["measured_own_launches"].fillna(0) < out["measured_launches"].fillna(0)
    warm = out["dram_bytes_warm"].mask(shared) if own_only else out["dram_bytes_warm"]
    out = with_ceilings_levels(out.assign(dram_bytes_warm=warm), data.ceilings)  # this checkout's rule
    return out, data.ceilings


@pytest.mark.parametrize(("name", "agreement", "compared"), [
    ("llama-7", 0.92, 0.99), ("gpt2-7", 0.94, 0.99), ("resnet-7", 0.90, 0.92),
    ("llama-5", 0.875, 0.99), ("gpt2-5", 0.93, 0.99), ("resnet-6", 0.88, 0.92), ("llama-6", 0.87, 0.99),
    ("gpt2-6", 0.93, 0.99),
    ("llama-4", 0.94, 0.77), ("gpt2-4", 0.95, 0.90), ("resnet-4", 0.895, 0.56), ("resnet-5", 0.89, 0.56),
    ("llama", 0.97, 0.55), ("llama-2", 0.95, 0.5), ("gpt2", 0.985, 0.6), ("gpt2-2", 0.98, 0.6),
    ("resnet", 0.925, 0.3), ("resnet-2", 0.93, 0.3), ("resnet-3", 0.925, 0.3)])
def test_the_analytic_level_agrees_with_the_counters_own_figures(name: str, agreement: float, compared: float) -> None:
    table, _ = _analytic(name, own_only=name in SHARED_RUNS)
    agreed = level_agreement(table)
    assert agreed["level_compared_time_share"] > compared, agreed  # the share of memory-bound time the counters decided
    assert agreed["level_agree_time_share"] >= agreement, agreed


@pytest.mark.parametrize(("by_allocation", "by_address", "gain"), [
    ("llama-6", "llama-7", 0.035), ("llama-5", "llama-7", 0.035), ("gpt2-6", "gpt2-7", 0.005)])
def test_tensors_known_by_address_agree_more_with_the_same_counters(by_allocation: str, by_address: str,
                                                                    gain: float) -> None:
    """The counters of a run recorded with tensors known by allocation, against that run's analytic
    level and against the level of a run recorded with tensors known by address (the same script
    and step, groups matched by kernel, op, shapes and module in order): the counters barely move
    between the runs (their levels differ on 1.0% of llama-6's time), the analytic level moves on
    the casts into fresh tensors, towards the counters."""
    old, _ = _analytic(by_allocation)
    new, _ = _analytic(by_address)
    keys = ["kernel", "op", "shapes", "module"]

    def indexed(table):
        table = table.assign(nth=table.groupby(keys).cumcount())
        return table.set_index([*keys, "nth"])

    renamed = indexed(new)[["memory_level_analytic"]].rename(columns={"memory_level_analytic": "memory_level_analytic_new"})
    both = indexed(old).join(renamed, how="inner")
    decided = both[(both["memory_level_source"] == "counters") & (both["bound"] == "memory")
                   & ~both["cost_source"].isin(["none", "ncu"])]
    time_s = decided["time_s"]
    before = float(time_s[decided["memory_level"] == decided["memory_level_analytic"]].sum() / time_s.sum())
    after = float(time_s[decided["memory_level"] == decided["memory_level_analytic_new"]].sum() / time_s.sum())
    assert after >= before + gain, (before, after)


def test_a_figure_shared_by_class_agrees_less_than_an_own_one() -> None:
    """On the shared runs of the Llama-style and GPT-2 scripts, the groups whose warm figure was
    borrowed from another group's launches agree with the analytic level far less than those
    measured by their own (attribution/counters.py's reason not to share it)."""
    for name in ("llama", "llama-2", "gpt2", "gpt2-2"):
        table, _ = _analytic(name)
        own = table["measured_own_launches"].fillna(0) >= table["measured_launches"].fillna(0)
        shared, mine = level_agreement(table[~own]), level_agreement(table[own])
        assert shared["level_agree_time_share"] < 0.85 and mine["level_agree_time_share"] > 0.95, (name, shared, mine)


@pytest.mark.parametrize("name", RUNS)
def test_no_row_sits_above_the_roof_its_analytic_level_holds_it_to(name: str) -> None:
    table, ceilings = _analytic(name)
    placed = place_on_roofline(table.assign(memory_level=table["memory_level_analytic"], memory_level_source="analytic")
                               .drop(columns=["roof_time_s"], errors="ignore"), ceilings)
    known = placed[placed["cost_source"] != "none"]
    assert (known["efficiency"] <= 1.03).all(), known.loc[known["efficiency"] > 1.03, ["op", "shapes", "efficiency"]]


@pytest.mark.parametrize("name", RUNS)
def test_no_row_sits_above_the_roof_the_counters_hold_it_to(name: str) -> None:
    table, ceilings = _analytic(name)
    placed = place_on_roofline(table.drop(columns=["roof_time_s"], errors="ignore"), ceilings)
    known = placed[placed["cost_source"] != "none"]
    assert (known["efficiency"] <= 1.03).all(), known.loc[known["efficiency"] > 1.03, ["op", "shapes", "efficiency"]]


def test_a_warm_figure_beyond_drams_peak_leaves_the_analytic_level() -> None:
    """resnet-6, as recorded: an in-place ReLU of 25.7 MB (layer2.2) ran at 5.0 TB/s, while its
    warm figure from ncu's run (57 MB a launch, more than its 51 MB) held it to DRAM: 107% of the
    4.68 TB/s roof. DRAM's peak (4.8 TB/s by the spec sheet) could not have moved that in its
    time, so the analytic level (L2) stays, and the row sits under its roof."""
    recorded = load_profile(str(DATA / "resnet-6.profile.json.gz")).kernels.reset_index(drop=True)
    relu = (recorded["op"] == "aten::clamp_min_") & (recorded["module"] == "ResNet.layer2.2.relu") \
        & (recorded["shapes"] == "[32, 512, 28, 28]")
    assert relu.sum() == 1
    row = recorded[relu].iloc[0]
    assert row["memory_level_source"] == "counters" and row["efficiency"] > 1.05  # as recorded
    assert row["dram_bytes_warm"] > row["bytes"] > 4.8e12 * row["time_s"]
    table, ceilings = _analytic("resnet-6")
    placed = place_on_roofline(table.drop(columns=["roof_time_s"], errors="ignore"), ceilings)
    again = placed[relu.to_numpy()].iloc[0]
    assert again["memory_level_source"] == "analytic" and again["memory_level"] == "l2"
    assert again["efficiency"] < 1.0


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
