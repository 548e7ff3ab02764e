"""`rooflinectl advise` through click: formats, exit codes, config, bad input."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest
from advice_tables import elementwise, gemm, profile
from click.testing import CliRunner

from rooflinectl.analysis.advice import RULES
from rooflinectl.cli.advise_cmd import command
from rooflinectl.outputs.profile_file import save_profile

ACT = (8192, 3072)


@pytest.fixture
def profile_path(tmp_path):
    rows = [
        elementwise("aten::add", ACT, extra="[3072]", calls=10, module="mlp"),
        elementwise("aten::gelu", ACT, calls=10, module="mlp"),
        gemm("aten::mm", 4096, 4096, 4096, dtype="float32", efficiency=0.75, calls=10),
    ]
    data = profile(rows, sequence=[0, 1, 2] * 10, summary={"device_idle_s": 0.001, "window_s": 0.2})
    path = tmp_path / "run.profile.json"
    save_profile(data, path)
    return path


def run(args, cwd=None):
    previous = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)  # the command reads the nearest pyproject.toml from here upwards
    try:
        return CliRunner().invoke(command, [str(a) for a in args], catch_exceptions=False)
    finally:
        os.chdir(previous)


def test_rich_default(profile_path):
    result = run([profile_path])
    assert result.exit_code == 0, result.output
    assert "fusion.memory-chain" in result.output and "precision.fp32-matmul" in result.output
    assert "Amdahl-capped" in result.output


def test_json_says_what_the_profile_holds(profile_path):
    data = json.loads(run([profile_path, "--format", "json"]).output)
    assert data["exit_code"] == 0 and data["fail_on"] is None
    assert data["findings"][0]["est_saving_s"] >= data["findings"][-1]["est_saving_s"]
    assert {"rule_id", "severity", "evidence", "recommendation", "rows", "numbers", "docs"} <= set(data["findings"][0])
    by_rule = {f["rule_id"]: f for f in data["findings"]}
    # the fp32 4096^3 mm (10 calls, at 75% of the 67 TFLOP/s SIMT roof) kept at 75% of the TF32 roof:
    # saving = 2*M*N*K*calls * (1/67e12 - 1/494e12) / 0.75, by hand
    mm = by_rule["precision.fp32-matmul"]
    assert mm["rows"] == [2]
    assert mm["est_saving_s"] == pytest.approx(2 * 4096**3 * 10 * (1 / 67e12 - 1 / 494e12) / 0.75, rel=1e-9)
    # add then gelu on the same [8192, 3072] activation, 10 times: one fused pass saves at most their time
    chain = by_rule["fusion.memory-chain"]
    assert sorted(chain["rows"]) == [0, 1]
    assert 0 < chain["est_saving_s"] < data["total_kernel_time_s"]


def test_markdown_table(profile_path):
    result = run([profile_path, "--format", "markdown"])
    assert result.output.startswith("## rooflinectl advice")
    assert "| # | severity | rule |" in result.output and "`precision.fp32-matmul`" in result.output


def test_github_annotations(profile_path):
    lines = run([profile_path, "--format", "github"]).output.splitlines()
    annotations = [line for line in lines if line.startswith("::")]
    assert annotations and all(line.split(" ", 1)[0] in ("::notice", "::warning", "::error") for line in annotations)
    assert all("\n" not in a for a in annotations)


def test_junit_one_case_per_rule(profile_path):
    result = run([profile_path, "--format", "junit", "--fail-on", "warning"])
    assert result.exit_code == 1
    root = ET.fromstring(result.output.split("\n", 1)[1])
    suite = root.find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == set(RULES)
    assert cases["precision.fp32-matmul"].find("failure") is not None
    assert cases["quant.weight-only"].find("failure") is None
    assert cases["gate.min-efficiency"].find("skipped") is not None
    assert int(suite.get("failures")) == sum(c.find("failure") is not None for c in cases.values())


@pytest.mark.parametrize("args, code", [
    ([], 0),
    (["--fail-on", "warning"], 1),
    (["--fail-on", "error"], 0),
    (["--min-efficiency", "0.99"], 1),  # a threshold alone fails on its gate
    (["--min-efficiency", "0.01"], 0),
    (["--max-launch-overhead", "0.001"], 1),
])
def test_exit_codes(profile_path, args, code):
    result = run([profile_path, "--format", "json", *args])
    assert result.exit_code == code, result.output
    assert json.loads(result.output)["exit_code"] == code


def test_input_errors_exit_2(tmp_path, profile_path):
    assert run([tmp_path / "missing.json"]).exit_code == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = run([bad])
    assert result.exit_code == 2 and "rooflinectl:" in result.output
    assert run([profile_path, "--format", "yaml"]).exit_code == 2
    assert run([profile_path, "--fail-on", "fatal"]).exit_code == 2


def test_config_file_sets_fail_level_and_flags_win(tmp_path, profile_path):
    (tmp_path / "pyproject.toml").write_text('[tool.rooflinectl]\nfail_on = "warning"\n')
    assert run([profile_path], cwd=tmp_path).exit_code == 1
    assert run([profile_path, "--fail-on", "error"], cwd=tmp_path).exit_code == 0
    config = tmp_path / "other.toml"
    config.write_text('[tool.rooflinectl]\ndisable = ["fusion.memory-chain", "precision.fp32-matmul", '
                      '"precision.bf16-storage"]\nfail_on = "warning"\n')
    assert run([profile_path, "--config", config]).exit_code == 0
    (tmp_path / "pyproject.toml").write_text('[tool.rooflinectl]\nfail_on = 3\n')
    assert run([profile_path], cwd=tmp_path).exit_code == 2


def test_output_file_and_list_rules(tmp_path, profile_path):
    out = tmp_path / "advice.md"
    result = run([profile_path, "--format", "markdown", "-o", out])
    assert result.exit_code == 0 and out.read_text().startswith("## rooflinectl advice")
    listing = run(["--list-rules"]).output
    assert all(rule_id in listing for rule_id in RULES)
