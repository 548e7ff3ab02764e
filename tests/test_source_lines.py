"""Source lines (capture/source_lines.py, attribution/sources.py): each kernel group names the
user's line that called its op, library frames skipped; findings carry it to every advice format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from rooflinectl.capture.run import source_lines

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent


def _line(marker: str) -> int:
    """The line of this file that holds `marker` in a comment: the expectation, read independently."""
    return next(n for n, text in enumerate(HERE.read_text().splitlines(), 1) if f"# {marker}" in text)


def _here(marker: str) -> str:
    return f"{os.path.relpath(HERE, os.getcwd())}:{_line(marker)}"


@pytest.fixture
def capture_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Source capture as in a fresh process: other tests of this process may have compiled with
    Dynamo, which keeps the mode out (that case has its own test)."""
    monkeypatch.setattr(source_lines, "_dynamo_compiled_something", lambda: False)


def _profile(fn, **kwargs):  # noqa: ANN001, ANN202
    from rooflinectl.api import profile
    from tests.advice_tables import cpu_ceilings

    return profile(fn, warmup=1, iters=2, device="cpu", ceilings=cpu_ceilings(), **kwargs).data


def _rows(kernels: pd.DataFrame, op: str) -> pd.DataFrame:
    return kernels[kernels["op"] == op]


def test_a_matmul_row_carries_the_line_that_called_it(capture_on: None) -> None:
    x, w = torch.randn(32, 48), torch.randn(48, 16)

    def step() -> torch.Tensor:
        return x @ w  # LINE-MATMUL

    data = _profile(step)
    mm = _rows(data.kernels, "aten::mm")
    assert len(mm) == 1 and mm["source"].iloc[0] == _here("LINE-MATMUL"), mm[["op", "source"]]
    assert mm["source_function"].iloc[0].endswith("step") and mm["source_call"].iloc[0] == "Tensor.matmul"
    assert data.metadata["source_lines"]["status"] == "on"


def test_library_frames_are_skipped_for_the_users_call_and_named(capture_on: None) -> None:
    layer = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU())
    x = torch.randn(8, 16)

    def step() -> torch.Tensor:
        return layer(x)  # LINE-MODULE

    data = _profile(step)
    addmm = _rows(data.kernels, "aten::addmm")
    assert list(addmm["source"]) == [_here("LINE-MODULE")]
    # the library call: the torch function Linear.forward made, through that library function
    assert addmm["source_call"].iloc[0] == "torch Linear.forward / torch.nn.functional.linear"
    assert all(not s.startswith(("torch/", "rooflinectl/")) and "site-packages" not in s
               for s in data.kernels["source"] if s)


def test_backward_work_takes_its_forward_line(capture_on: None) -> None:
    w = torch.randn(32, 32, requires_grad=True)
    x = torch.randn(16, 32)

    def step() -> None:
        y = x @ w  # LINE-FORWARD
        y.sum().backward()  # LINE-BACKWARD

    data = _profile(step)
    backward = data.kernels[data.kernels["source_function"].str.endswith("(backward)")]
    mm = backward[backward["op"] == "aten::mm"]
    assert len(mm) >= 1 and set(mm["source"]) == {_here("LINE-FORWARD")}, backward[["op", "source"]]
    assert mm["source_call"].iloc[0] == "backward of Tensor.matmul"


def test_show_by_line_sums_the_rows_of_each_line(capture_on: None) -> None:
    from rooflinectl.analysis.regroup import regroup

    a, b = torch.randn(64, 64), torch.randn(64, 64)

    def step() -> torch.Tensor:
        c = (a @ b).relu()  # LINE-TWO-OPS
        return c + 1.0  # LINE-ONE-OP

    data = _profile(step)
    by_line = regroup(data.kernels, "line", data.ceilings).set_index("source")
    kernels = data.kernels
    for marker in ("LINE-TWO-OPS", "LINE-ONE-OP"):
        mine = kernels[kernels["source"] == _here(marker)]
        assert by_line.loc[_here(marker), "time_s"] == pytest.approx(mine["time_s"].sum())
        assert by_line.loc[_here(marker), "flops"] == pytest.approx(mine["flops"].sum())
    assert by_line.loc[_here("LINE-TWO-OPS"), "op"] == "2 ops"


def test_nothing_stays_installed_and_no_capture_when_turned_off(capture_on: None) -> None:
    x = torch.randn(8, 8)
    data = _profile(lambda: x @ x)
    assert torch._C._len_torch_function_stack() == 0
    with source_lines.source_lines_enabled(False):
        off = _profile(lambda: x @ x)
    assert set(off.kernels["source"]) == {""} and off.metadata["source_lines"]["status"] == "off"
    assert set(data.kernels["source"]) != {""}


def test_a_compiled_function_is_not_compiled_again_because_of_the_mode(capture_on: None) -> None:
    """The mode leaves at Dynamo's compile start (before Dynamo reads the mode stack): one compile
    in the session, and the un-profiled calls after it hit that graph."""
    from torch._dynamo.testing import CompileCounter

    from rooflinectl.capture.run.session import profiling

    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(lambda t: (t * 2).sin() + 1, backend=counter)
    x = torch.randn(16)
    with profiling("cpu") as capture:
        for _ in range(3):
            compiled(x)
    for _ in range(3):
        compiled(x)
    assert counter.frame_count == 1
    info = capture.metadata["source_lines"]
    assert info["status"] == "stopped" and "torch.compile" in info["why"]
    assert torch._C._len_torch_function_stack() == 0


def test_no_mode_at_all_where_dynamo_compiled_before_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_lines, "_dynamo_compiled_something", lambda: True)
    metadata: dict[str, object] = {}
    with source_lines.source_lines(metadata):
        assert torch._C._len_torch_function_stack() == 0
    assert "torch.compile" in metadata["source_lines"]["why"]  # type: ignore[index]


def test_a_profile_written_before_source_lines_loads_with_empty_ones(tmp_path: Path) -> None:
    from rooflinectl.analysis.advice import advise
    from rooflinectl.analysis.regroup import regroup
    from rooflinectl.outputs.profile_file import load_profile

    old = json.loads((REPO / "tests/data/h200_mlp.profile.json").read_text())
    assert "source" not in old["kernels"]["columns"]  # written before the column existed
    data = load_profile(REPO / "tests/data/h200_mlp.profile.json")
    assert set(data.kernels["source"]) == {""} and set(data.kernels["source_function"]) == {""}
    assert len(regroup(data.kernels, "line", data.ceilings)) >= 1
    assert all(f.source == "" for f in advise(data).findings)


SCRIPT = """\
import torch
x = torch.randn(256, 256)
w = torch.randn(256, 256)
layer = torch.nn.Linear(256, 256)
for _ in range(6):
    y = x @ w
    z = layer(y)
    a = z * 2.0
    b = a + 1.0
    c = b.relu()
    d = c * 3.0
"""


@pytest.mark.slow
def test_a_script_profiled_end_to_end_gets_its_lines_in_every_advice_format(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rooflinectl", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)

    done = run("profile", "train.py", "-o", "p.json", "--device", "cpu", "-q")
    assert done.returncode == 0, done.stderr[-2000:]
    table = json.loads((tmp_path / "p.json").read_text())["kernels"]
    rows = [dict(zip(table["columns"], r)) for r in table["rows"]]
    assert {r["source"] for r in rows if r["op"] == "aten::mm"} == {"train.py:6"}
    assert {r["source"] for r in rows if r["op"] == "aten::addmm"} == {"train.py:7"}
    github = run("advise", "p.json", "--format", "github", "--fail-on", "info")
    assert github.returncode != 0, github.stdout
    annotated = [line for line in github.stdout.splitlines() if line.startswith("::") and "file=" in line]
    assert annotated and all(",line=" in line for line in annotated), github.stdout
    assert any(f"file=train.py,line={n}," in line for line in annotated for n in range(8, 12)), github.stdout
    markdown = run("advise", "p.json", "--format", "markdown").stdout
    assert "**Source:** train.py:" in markdown, markdown
    junit = run("advise", "p.json", "--format", "junit", "--fail-on", "info").stdout
    assert "train.py:" in junit, junit
    wide = run("show", "p.json", "--wide").stdout
    assert "train.py:6" in wide and "source" in wide, wide
    assert run("report", "p.json", "-o", "r.html").returncode == 0
    assert "train.py:" in (tmp_path / "r.html").read_text()


def test_a_triton_launch_from_python_takes_the_line_that_launched_it(capture_on: None) -> None:
    """Triton's interpreter calls no launch hook (tests/test_triton_args.py): the hook is driven as
    Triton's JITFunction.run drives it, then the summary is joined to a traced kernel."""
    pytest.importorskip("triton")
    from triton import knobs
    from triton.compiler.compiler import CompiledKernel

    from rooflinectl.attribution.join import attribute
    from rooflinectl.capture.run.triton_hook import triton_launches
    from tests.test_triton_args import _Fn, _Kernel, _trace

    declared = _Fn(lambda grid, metadata, args: {"name": "mine", "flops32": 256, "bytes": 2048})
    lazy = CompiledKernel.launch_metadata(_Kernel("mine", declared, ("x",)), (1, 1, 1), 0, torch.empty(4))
    metadata: dict = {}
    sink: list[dict] = []
    with triton_launches(sink), source_lines.source_lines(metadata):
        knobs.runtime.launch_enter_hook(lazy)  # LINE-TRITON (what JITFunction.run calls at a launch)
    assert len(sink) == 1 and isinstance(sink[0].get("source"), int), sink
    location = metadata["source_lines"]["locations"][sink[0]["source"]]
    assert f"{location[0]}:{location[1]}" == _here("LINE-TRITON") and location[3].endswith("triton mine")
    launches = attribute(_trace(sink, name="mine"), "cuda", metadata).launches
    assert list(launches["source"]) == [_here("LINE-TRITON")]


def test_a_finding_merged_across_layers_keeps_its_first_instances_line() -> None:
    from rooflinectl.analysis.advice.location import located
    from rooflinectl.analysis.advice.merge import merge_patterns
    from rooflinectl.analysis.advice.registry import RULES, Finding

    kernels = pd.DataFrame({"op": ["aten::mul"] * 2, "kernel": ["k"] * 2, "shapes": ["[8]"] * 2, "dtype": ["fp32"] * 2,
                            "module": ["m.h.1.act", "m.h.0.act"], "time_s": [2.0, 1.0],
                            "source": ["model.py:9", "model.py:3"], "source_function": ["Block.forward"] * 2,
                            "source_call": ["Tensor.mul"] * 2})
    rule = sorted(RULES)[0]
    raw = [located(Finding(rule, "t", "warning", "e", "r", 0.1, rows=(i,), subject=f"mul in m.h.{1 - i}.act"), kernels)
           for i in (0, 1)]
    assert [f.source for f in raw] == ["model.py:9", "model.py:3"]
    [merged] = merge_patterns(raw, kernels)
    assert merged.count == 2 and merged.source == "model.py:3"  # layer 0's, the first instance


COMPILED_SCRIPT = """\
import torch
from torch._dynamo.testing import CompileCounter
counter = CompileCounter()
f = torch.compile(lambda t: (t * 2).sin() + 1, backend=counter)
x = torch.randn(16)
layer = torch.nn.Linear(16, 16)
for _ in range(10):
    y = layer(f(x))
print("FRAMES", counter.frame_count)
"""


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--source", "--no-source"])
def test_a_script_that_compiles_after_profiling_started_compiles_once(tmp_path: Path, flag: str) -> None:
    """Dynamo is imported by the script, after the session began: the mode still leaves at the
    compile start (the callback is registered when Dynamo's callback module is imported)."""
    (tmp_path / "c.py").write_text(COMPILED_SCRIPT)
    done = subprocess.run([sys.executable, "-m", "rooflinectl", "profile", "c.py", "-o", "p.json", "--device", "cpu",
                           "-q", flag], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    frames = [line for line in done.stdout.splitlines() + done.stderr.splitlines() if line.startswith("FRAMES")]
    assert frames == ["FRAMES 1"], done.stdout[-2000:]
    info = json.loads((tmp_path / "p.json").read_text())["metadata"]["source_lines"]
    assert info["status"] == ("stopped" if flag == "--source" else "off"), info


def test_github_paths_are_named_from_the_repository_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rooflinectl.analysis.advice.engine import AdviceReport
    from rooflinectl.analysis.advice.registry import Finding
    from rooflinectl.cli.advise_cmd import repository_root
    from rooflinectl.outputs.advice_render import github_file

    (tmp_path / "repo" / ".git").mkdir(parents=True)
    run_dir = tmp_path / "repo" / "train"
    run_dir.mkdir()
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    assert repository_root(run_dir) == str(tmp_path / "repo")
    report = AdviceReport(findings=[], rules=[], run_time_s=1.0, total_kernel_time_s=1.0, total_saving_s=0.0,
                          device_name="x", source_root=str(run_dir), paths_from=repository_root(run_dir))
    found = Finding("r", "t", "warning", "e", "f", 0.0, source="model/net.py:42")
    assert github_file(found, report) == "file=train/model/net.py,line=42,"
    outside = Finding("r", "t", "warning", "e", "f", 0.0, source="/elsewhere/x.py:7")
    assert github_file(outside, report) == "file=/elsewhere/x.py,line=7,"
    assert github_file(Finding("r", "t", "warning", "e", "f", 0.0), report) == ""
    monkeypatch.setenv("GITHUB_WORKSPACE", str(run_dir))
    assert repository_root(run_dir / "model") == str(run_dir)
