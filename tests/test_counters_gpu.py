"""The counters tier for real (H200 machine: CUDA and Nsight Compute). Run by scripts/gpu-check
(`pytest -m gpu`); skipped where either is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinectl.cli.main import main
from rooflinectl.outputs.profile_file import load_profile

pytestmark = [pytest.mark.gpu, pytest.mark.ncu]
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_mlp_with_counters_validate_and_levels(tmp_path):
    out = tmp_path / "mlp.json"
    result = CliRunner().invoke(main, ["profile", str(EXAMPLES / "mlp.py"), "-o", str(out), "--counters", "ncu",
                                       "--", "--batch", "256", "--width", "1024", "--steps", "2"])
    assert result.exit_code == 0, result.output
    data = load_profile(out)
    counters = data.summary["counters"]
    assert counters["status"] == "measured", counters
    print("ncu numbered invocations by:", counters["numbering_rule"], "| notes:", counters["notes"])
    k = data.kernels
    kernel_rows = ~k["kernel"].str.startswith(("Memcpy", "Memset"))
    assert (k.loc[kernel_rows, "measured_launches"] > 0).all(), k.loc[kernel_rows & (k["measured_launches"] == 0), "kernel"]
    # two regions of the same step: each group measured once, so fewer launches than were counted
    assert counters["launches_measured"] < counters["launches_counted"]
    gemms = k[(k["op_family"] == "gemm") & (k["measured_launches"] > 0)]
    assert "tensor.bf16" in set(gemms["measured_precision"])  # (a split-K reduce kernel runs on CUDA cores)
    per_op = gemms.groupby(["op", "shapes"])[["flops", "measured_flops"]].sum()
    ratio = per_op["measured_flops"] / per_op["flops"]
    assert ((ratio > 0.999) & (ratio < 1.3)).all(), ratio  # executed >= useful; tiles pad 256 rows by 12.5% at most

    report = CliRunner().invoke(main, ["validate", str(out), "--format", "markdown"])
    assert report.exit_code == 0 and "| gemm |" in report.output, report.output
    chart = CliRunner().invoke(main, ["plot", str(out), "--levels", "-o", str(tmp_path / "levels.png")])
    assert chart.exit_code == 0, chart.output


LOOP = """
import torch

torch.manual_seed(0)
block = lambda: torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512))
model = torch.nn.Sequential(block(), block()).cuda()  # two identical layers: rows apart, one sampling class each
x = torch.randn(64, 512, device="cuda")
with torch.no_grad():
    for _ in range(6):
        y = model(x)
print(float(y.sum()))
"""


def test_script_without_region_joins_the_whole_script_to_its_steady_state(tmp_path):
    # no region: ncu sees the whole script (randn, the warm-up forward), the table holds the
    # steady iterations; every launch measured (0) and one per sampling class (1) must give the same
    # rows, the second layer's rows taking the counters measured on the first's (or the reverse)
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    tables = {}
    for samples in ("0", "1"):
        out = tmp_path / f"loop{samples}.json"
        result = CliRunner().invoke(main, ["profile", str(script), "-o", str(out), "--counters", "ncu",
                                           "--ncu-samples", samples])
        assert result.exit_code == 0, result.output
        data = load_profile(out)
        counters = data.summary["counters"]
        assert counters["status"] == "measured", counters
        assert data.summary["iterations_method"] == "module_forward" and data.summary["setup_launches"] > 0
        print(f"samples {samples}:", counters["numbering_rule"], counters["launches_measured"], "of",
              counters["launches_counted"], "| setup measured:", counters["setup_launches_measured"],
              "| in window:", counters["launches_in_window"], "| notes:", counters["notes"])
        k = data.kernels[~data.kernels["kernel"].str.startswith(("Memcpy", "Memset"))]
        assert (k["measured_launches"] > 0).all(), k[["kernel", "measured_launches"]]
        tables[samples] = k.set_index(["kernel", "op", "shapes", "module"])
    every, sampled = tables["0"], tables["1"]
    assert (sampled["measured_own_launches"] == 0).any() and sampled["measured_launches"].gt(0).all()
    assert int(every["measured_own_launches"].sum()) == int(every["calls"].sum())  # every steady launch measured
    joined = tables["1"].join(every, rsuffix="_all")
    # per launch: the two runs may set apart a different number of warm-up iterations (chosen from
    # each run's own iteration times), so their totals differ by whole iterations
    per_launch = (joined["measured_flops"] / joined["calls"]).to_numpy()
    assert per_launch == pytest.approx((joined["measured_flops_all"] / joined["calls_all"]).to_numpy(), rel=1e-3)
