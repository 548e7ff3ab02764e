"""`rooflinectl diff`: matching groups across profiles, roofline movement, regression exit codes."""

from __future__ import annotations

import json

import pytest
from advice_tables import elementwise, gemm, profile
from click.testing import CliRunner

from rooflinectl.analysis.diff import diff_profiles
from rooflinectl.analysis.matching import match_groups, normalise_kernel
from rooflinectl.cli.diff_cmd import command
from rooflinectl.outputs.diff import movement
from rooflinectl.outputs.profile_file import save_profile

ACT = (4096, 1024)


def base_rows():
    return [
        gemm("aten::mm", 4096, 1024, 1024, dtype="float32", efficiency=0.7, module="mlp.fc1"),
        elementwise("triton_poi_fused_add_gelu_0", ACT, origin="inductor", kernel="triton_poi_fused_add_gelu_0",
                    module="mlp"),
        elementwise("aten::mul", ACT, module="scale"),
    ]


def new_rows(gemm_eff=0.7):
    return [
        gemm("aten::mm", 4096, 1024, 1024, dtype="float32", precision="tf32", unit="tensor", efficiency=gemm_eff,
             module="mlp.fc1", kernel="sm90_xmma_gemm_tf32"),
        elementwise("triton_poi_fused_add_gelu_3", ACT, origin="inductor", kernel="triton_poi_fused_add_gelu_3",
                    module="mlp"),
        elementwise("aten::tanh", ACT, module="act"),
    ]


def test_normalise_kernel_drops_compiler_suffixes():
    assert normalise_kernel("triton_poi_fused_add_gelu_0") == "triton_poi_fused_add_gelu"
    assert normalise_kernel("triton_red_fused__softmax_12") == "triton_red_fused__softmax"
    assert normalise_kernel("matmul_kernel") == "matmul_kernel"


def test_groups_match_by_suffix_and_op():
    base, new = profile(base_rows()), profile(new_rows())
    pairs = match_groups(base.kernels, new.kernels).pairs
    matched = {(p.rows_base, p.rows_new): p.level for p in pairs.itertuples()}
    assert matched[(0,), (0,)] == "op-shapes"  # another cuBLAS kernel for the same mm
    assert matched[(1,), (1,)] == "suffix"  # re-compiled Triton kernel
    report = diff_profiles(base, new)
    assert [r["label"] for r in report.new] == ["aten::tanh @ act [4096, 1024]"]
    assert [r["label"] for r in report.vanished] == ["aten::mul @ scale [4096, 1024]"]


def test_movement_on_the_roofline():
    report = diff_profiles(profile(base_rows()), profile(new_rows()))
    mm = next(g for g in report.changed if g.label.startswith("aten::mm"))
    assert mm.delta_s < 0 and mm.perf_ratio > 5  # fp32 CUDA cores -> TF32 tensor cores
    assert movement(mm).startswith("up ")
    assert report.changed == sorted(report.changed, key=lambda g: -abs(g.delta_s))


def test_per_iteration_normalisation():
    base = profile(base_rows(), summary={"iterations": 1})
    new = profile(base_rows(), summary={"iterations": 2})
    new.kernels["time_s"] *= 2
    report = diff_profiles(base, new)
    assert all(abs(g.delta_pct) < 1e-9 for g in report.changed)


def save(tmp_path, name, data):
    path = tmp_path / name
    save_profile(data, path)
    return path


@pytest.mark.parametrize("gemm_eff, pct, code", [(0.7, 5, 0), (0.05, 5, 1), (0.05, None, 0)])
def test_cli_regression_exit_codes(tmp_path, gemm_eff, pct, code):
    base = save(tmp_path, "base.json", profile(base_rows()))
    new = save(tmp_path, "new.json", profile(new_rows(gemm_eff)))
    args = [str(base), str(new), "--format", "json"] + (["--fail-on-regression", str(pct)] if pct is not None else [])
    result = CliRunner().invoke(command, args, catch_exceptions=False)
    assert result.exit_code == code, result.output
    data = json.loads(result.output)
    assert bool(data["regressions"]) == (code == 1)


def test_cli_formats_and_bad_input(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no rooflinectl.profile.json here: `diff BASE` has no NEW to compare
    base = save(tmp_path, "base.json", profile(base_rows()))
    new = save(tmp_path, "new.json", profile(new_rows()))
    runner = CliRunner()
    rich = runner.invoke(command, [str(base), str(new)], catch_exceptions=False)
    assert rich.exit_code == 0 and "vanished: aten::mul" in rich.output
    md = runner.invoke(command, [str(base), str(new), "--format", "markdown"], catch_exceptions=False)
    assert "| group | base | new |" in md.output
    assert runner.invoke(command, [str(base), str(tmp_path / "nope.json")]).exit_code == 2
    assert runner.invoke(command, [str(base)]).exit_code == 2


def test_config_regression_threshold(tmp_path):
    base = save(tmp_path, "base.json", profile(base_rows()))
    new = save(tmp_path, "new.json", profile(new_rows(0.05)))
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.rooflinectl.diff]\nfail_on_regression = 10\n")
    result = CliRunner().invoke(command, [str(base), str(new), "--config", str(config)], catch_exceptions=False)
    assert result.exit_code == 1, result.output


def test_compiled_kernels_match_the_eager_ops_they_fused():
    """Eager: add and GELU in each block, a layer norm, the GEMMs per layer. Compiled (module
    only the compiled model's root): one fused kernel of those ops, the GEMMs as extern calls."""
    eager = profile([
        elementwise("aten::add", ACT, inputs=2, module="gpt.blocks.0"),
        elementwise("aten::gelu", ACT, module="gpt.blocks.0.mlp"),
        elementwise("aten::layer_norm", ACT, module="gpt.blocks.0.ln", family="norm"),
        elementwise("aten::mul", ACT, module="other"),  # not in any fused kernel: vanishes
        gemm("aten::mm", 4096, 1024, 1024, module="gpt.blocks.0.mlp.fc"),
    ])
    compiled = profile([
        elementwise("fused(add, gelu, native_layer_norm, view)", ACT, origin="inductor", module="gpt",
                    kernel="triton_per_fused_add_gelu_native_layer_norm_view_0"),
        gemm("aten::mm", 4096, 1024, 1024, module="gpt", kernel="nvjet_sm90_tst_128x256"),
    ])
    match = match_groups(eager.kernels, compiled.kernels)
    levels = {(p.rows_base, p.rows_new): p.level for p in match.pairs.itertuples()}
    assert levels[(0, 1, 2), (0,)] == "fused"  # add, gelu, layer norm -> the kernel that fused them
    assert levels[(4,), (1,)] == "op-shapes-anywhere"  # the GEMM, same shapes, named by another module
    assert list(match.only_base["op"]) == ["aten::mul"] and match.only_new.empty


def test_a_stale_window_is_not_compared(tmp_path):
    """The committed gelu_chain.before profile predates device-timeline windows (busy 1.73 ms in a
    0.46 ms window): comparing windows would call the fused version (0.57 ms of kernels in 0.89 ms)
    a 94% regression. diff compares kernel time instead, and says why in one line."""
    from pathlib import Path

    data = Path(__file__).parent / "data" / "advice"
    before, after = data / "h200_gelu_chain.before.profile.json", data / "h200_gelu_chain.after.profile.json"
    busy_before = json.loads(before.read_text())["summary"]["device_busy_s"]
    busy_after = json.loads(after.read_text())["summary"]["device_busy_s"]
    result = CliRunner().invoke(command, [str(before), str(after), "--fail-on-regression", "5", "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["measure"] == "kernel time"
    assert report["base_total_s"] == pytest.approx(busy_before) and report["new_total_s"] == pytest.approx(busy_after)
    assert [n for n in report["notes"] if "BASE's window was measured on the host" in n]
    table = CliRunner().invoke(command, [str(before), str(after)])
    assert sum("measured on the host" in line for line in table.output.splitlines()) == 1, table.output
