"""Advice that fits what it saw (issue 16, newcomer list): one fused-optimizer finding for an
AdamW update, need_weights=False inside nn.MultiheadAttention, no CUDA graphs on a CPU profile,
small findings left out (and counted), a sentence when nothing is found, --select / --ignore."""

from __future__ import annotations

import json

import pytest
import torch
from advice_tables import elementwise, gemm, profile
from click.testing import CliRunner

import rooflinectl
from rooflinectl.analysis.advice import Thresholds, advise
from rooflinectl.cli.main import main
from rooflinectl.errors import EXIT_USAGE
from rooflinectl.outputs.profile_file import save_profile

SHOW_ALL = Thresholds(hide_below_share=0.0)


def test_adamw_update_is_one_finding_with_the_optimizers_own_fix() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 32))
    opt = torch.optim.AdamW(model.parameters(), foreach=False)  # one chain per parameter tensor
    x = torch.randn(16, 64)

    def step() -> None:
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()

    report = advise(rooflinectl.profile(step, warmup=1, iters=2).data, SHOW_ALL)
    fusion = [f for f in report.findings if f.rule_id == "fusion.memory-chain"]
    optimizer = [f for f in fusion if f.subject == "AdamW step"]
    assert len(optimizer) == 1  # was one finding per parameter shape, 4 here
    assert "fused=True" in optimizer[0].recommendation and "foreach=True" in optimizer[0].recommendation
    assert optimizer[0].numbers["parameter_shapes"] == 4  # two weights, two biases
    assert not any("bias+GELU" in f.recommendation and "addcdiv" in f.evidence for f in fusion)


@pytest.mark.parametrize("need_weights", [True, False])
def test_attention_inside_multihead_attention(need_weights: bool) -> None:
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(64, 4, batch_first=True)
    q = torch.randn(4, 128, 64)
    with torch.no_grad():
        data = rooflinectl.profile(lambda: mha(q, q, q, need_weights=need_weights), warmup=1, iters=2).data
    found = [f for f in advise(data, SHOW_ALL).findings if f.rule_id == "attention.materialised-scores"]
    if need_weights:
        assert len(found) == 1
        assert "need_weights=False" in found[0].recommendation  # not "replace matmul-softmax-matmul"
        assert "Replace matmul-softmax-matmul" not in found[0].recommendation
    else:
        assert found == []  # need_weights=False runs scaled_dot_product_attention: nothing to say


def test_no_cuda_graphs_on_a_cpu_profile() -> None:
    data = rooflinectl.profile(lambda: [torch.ones(4).add_(1) for _ in range(50)], warmup=1, iters=2).data
    report = advise(data, Thresholds(hide_below_share=0.0, max_launch_overhead=0.0))
    assert any(f.rule_id == "gate.launch-overhead" for f in report.findings)
    assert not any("CUDA graph" in f.recommendation or "cuda.graphs" in f.recommendation for f in report.findings)


def _tiny_fill_profile():
    """Two element-wise kernels of weight initialisation, fusible for 5 us, beside 44 ms of GEMMs."""
    rows = [gemm("aten::mm", 8192, 8192, 8192, dtype="float32", efficiency=0.75, calls=2),
            elementwise("aten::add", (1 << 16,), calls=1, module="init", efficiency=0.01),
            elementwise("aten::gelu", (1 << 16,), calls=1, module="init", efficiency=0.01)]
    return profile(rows, sequence=[1, 2, 0, 0])


def test_small_findings_are_left_out_and_counted(tmp_path) -> None:
    data = _tiny_fill_profile()
    shown = advise(data)
    everything = advise(data, SHOW_ALL)
    assert shown.hidden == 1 and len(everything.findings) == len(shown.findings) + 1
    assert {f.rule_id for f in everything.findings} - {f.rule_id for f in shown.findings} == {"fusion.memory-chain"}
    assert all(f.est_saving_s >= 0.001 * shown.run_time_s for f in shown.findings if not f.rule_id.startswith("roof."))
    path = tmp_path / "p.json"
    save_profile(data, path)
    out = CliRunner().invoke(main, ["advise", str(path)])
    assert "left out (--hide-below 0 shows them)" in out.output
    more = CliRunner().invoke(main, ["advise", str(path), "--hide-below", "0", "--format", "json"])
    assert len(json.loads(more.output)["findings"]) == len(everything.findings)


def test_no_findings_is_a_sentence_not_an_empty_table(tmp_path) -> None:
    rows = [gemm("aten::mm", 4096, 4096, 4096, dtype="bfloat16", efficiency=0.5, calls=1)]
    path = tmp_path / "p.json"
    save_profile(profile(rows, sequence=[0]), path)
    out = CliRunner().invoke(main, ["advise", str(path), "--select", "fusion"])
    assert out.exit_code == 0, out.output
    assert "No findings" in out.output and "┏" not in out.output and "#  severity" not in out.output
    md = CliRunner().invoke(main, ["advise", str(path), "--select", "fusion", "--format", "markdown"])
    assert "No findings" in md.output


def test_select_and_ignore(tmp_path) -> None:
    path = tmp_path / "p.json"
    save_profile(_tiny_fill_profile(), path)
    only = json.loads(CliRunner().invoke(main, ["advise", str(path), "--select", "precision,data",
                                                "--format", "json"]).output)
    assert only["rules"] and all(r.startswith(("precision.", "data.")) for r in only["rules"])
    rest = json.loads(CliRunner().invoke(main, ["advise", str(path), "--ignore", "precision",
                                                "--format", "json"]).output)
    assert rest["rules"] and not any(r.startswith("precision.") for r in rest["rules"])
    typo = CliRunner().invoke(main, ["advise", str(path), "--select", "fusoin"])
    assert typo.exit_code == EXIT_USAGE and "no rule is named fusoin" in typo.output
