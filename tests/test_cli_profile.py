"""profile -> show end to end on CPU, through click's CliRunner, and the error paths."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinectl.cli.main import main
from rooflinectl.errors import EXIT_USAGE
from rooflinectl.outputs.profile_file import load_profile
from rooflinectl.schema import BOUNDS, COST_SOURCES, KERNEL_COLUMNS

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def mlp_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("prof") / "mlp.json"
    result = _invoke("profile", str(EXAMPLES / "mlp.py"), "-o", str(out), "--device", "cpu", "--",
                     "--batch", "16", "--width", "64", "--steps", "2")
    assert result.exit_code == 0, result.output
    assert "addmm" in result.output  # the table shows the op names, shortened
    return out


def test_profile_writes_contract_columns(mlp_profile: Path) -> None:
    data = load_profile(mlp_profile)
    assert list(data.kernels.columns) == list(KERNEL_COLUMNS)
    assert data.metadata["completed"] is True
    assert data.metadata["device_kind"] == "cpu"
    assert data.summary["regions"] == ["step"]
    gemms = data.kernels[data.kernels["op_family"] == "gemm"]
    # 2 steps x (forward 2 GEMMs + backward up to 4) per layer, 2 layers: every GEMM is 2*16*64*256 FLOPs
    assert set((gemms["flops"] / gemms["calls"]).round()) == {2 * 16 * 64 * 256}
    assert data.summary["known_cost_time_share"] > 0.95
    assert set(data.kernels["bound"]) <= set(BOUNDS)
    assert set(data.kernels["cost_source"]) <= set(COST_SOURCES)


def test_show_formats(mlp_profile: Path) -> None:
    table = _invoke("show", str(mlp_profile), "--top", "3")
    assert table.exit_code == 0, table.output
    assert "bound" in table.output and "known cost" in table.output
    csv = _invoke("show", str(mlp_profile), "--format", "csv", "--by", "op")
    assert csv.exit_code == 0, csv.output
    assert csv.output.splitlines()[0].startswith("kernel,op,op_family")
    ops = [line.split(",")[1] for line in csv.output.splitlines()[1:]]
    assert len(ops) == len(set(ops))  # one row per op (all fp32 SIMT on CPU)
    as_json = json.loads(_invoke("show", str(mlp_profile), "--format", "json", "--by", "module").output)
    assert {"summary", "kernels"} <= set(as_json)
    assert sum(r["time_share"] for r in as_json["kernels"]) == pytest.approx(1.0)


def test_show_without_profile_reads_default(tmp_path: Path, mlp_profile: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rooflinectl.profile.json").write_bytes(mlp_profile.read_bytes())
    result = _invoke("show", "--top", "2")
    assert result.exit_code == 0, result.output
    data = load_profile(mlp_profile)
    assert f"in {data.summary['launches']} launches" in result.output  # the default file's run, not another
    rows = [line for line in result.output.splitlines() if re.match(r"\s*\d+\.\d%\s+\d", line)]  # table rows: share, then calls
    assert len(rows) == 2  # --top 2
    # largest group first: show sums a kernel's rows over the modules it ran in (share, calls, ...)
    by_kernel = data.kernels.groupby(["kernel", "op", "shapes", "dtype"])[["time_s", "calls"]].sum()
    assert rows[0].split()[1] == str(int(by_kernel.sort_values("time_s", ascending=False).iloc[0]["calls"]))


def test_function_mode(tmp_path: Path) -> None:
    out = tmp_path / "fn.json"
    result = _invoke("profile", f"{EXAMPLES / 'train_step.py'}:step", "--warmup", "1", "--iters", "2",
                     "-o", str(out), "-q", "--device", "cpu")
    assert result.exit_code == 0, result.output
    data = load_profile(out)
    assert data.summary["iterations"] == 2
    addmm = data.kernels[data.kernels["op"] == "aten::addmm"]
    assert addmm["calls"].sum() == 2 * 2  # two Linear layers, two iterations


def test_failing_script_keeps_exit_code_and_writes_partial_profile(tmp_path: Path) -> None:
    script = tmp_path / "fails.py"
    script.write_text("import torch\nx = torch.randn(64, 64)\ny = x @ x\nraise ValueError('boom')\n")
    out = tmp_path / "partial.json"
    result = _invoke("profile", str(script), "-o", str(out), "-q", "--device", "cpu")
    assert result.exit_code == 1
    assert "ValueError: boom" in result.output
    assert "rooflinectl/capture" not in result.output  # the traceback starts at the user's frames
    data = load_profile(out)
    assert data.metadata["completed"] is False
    assert (data.kernels["op"] == "aten::mm").any()


def test_script_exit_code_is_kept(tmp_path: Path) -> None:
    script = tmp_path / "exits.py"
    script.write_text("import sys\nsys.exit(5)\n")
    result = _invoke("profile", str(script), "-o", str(tmp_path / "p.json"), "-q", "--device", "cpu")
    assert result.exit_code == 5


@pytest.mark.parametrize("target, message", [
    ("does_not_exist.py", "No such script"),
    ("examples/train_step.py:nope", "has no function named 'nope'"),
    ("examples/train_step.py:not-a-name", "is not a Python function name"),
])
def test_bad_targets_are_one_sentence(target: str, message: str) -> None:
    root = EXAMPLES.parent
    result = _invoke("profile", str(root / target) if not target.startswith("does") else target, "--device", "cpu")
    assert result.exit_code == EXIT_USAGE
    assert message in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("content, message", [
    ("not json", "not a readable rooflinectl profile"),
    ('{"format": "something-else"}', "is not a rooflinectl profile"),
    ('{"format": "rooflinectl-profile", "schema_version": 99}', "schema version 99"),
])
def test_bad_profile_files(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    result = _invoke("show", str(bad))
    assert result.exit_code == EXIT_USAGE
    assert message in result.output
    assert "Traceback" not in result.output


def test_missing_default_profile(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = _invoke("show")
    assert result.exit_code == EXIT_USAGE
    assert "No profile file" in result.output


def test_device_cuda_without_cuda_is_one_sentence() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    result = _invoke("profile", str(EXAMPLES / "mlp.py"), "--device", "cuda", "-q")
    assert result.exit_code == 3  # EXIT_ENVIRONMENT
    assert "CUDA is not available" in result.output and "Traceback" not in result.output


def test_function_mode_file_with_a_dataclass(tmp_path: Path) -> None:
    # @dataclass with string annotations looks its module up in sys.modules: a file imported for
    # FILE.py:FUNCTION must be registered there first (the counters suite failed so on the H200)
    target = tmp_path / "with_dataclass.py"
    target.write_text(
        "from __future__ import annotations\nfrom dataclasses import dataclass\nimport torch\n\n"
        "@dataclass\nclass Problem:\n    n: int\n\n"
        "def step():\n    x = torch.randn(Problem(64).n, 64)\n    return x @ x\n")
    out = tmp_path / "dc.json"
    result = _invoke("profile", f"{target}:step", "--warmup", "0", "--iters", "1", "-o", str(out), "-q",
                     "--device", "cpu")
    assert result.exit_code == 0, result.output
    assert (load_profile(out).kernels["op"] == "aten::mm").any()
