"""The pytest plugin on the CPU: pytest inside pytest (pytester), against spec roofs (instant,
and the same on every machine). Figures are checked against hand counts of tiny float32 ops:
(a + b) * b on n elements reads a and b and writes one output if fused (min_bytes = 12 n), and
moves 24 n as two ops (each reads two, writes one)."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rooflinectl.pytest_plugin import records
from rooflinectl.pytest_plugin.report import escape_markdown

pytest_plugins = ["pytester"]
torch = pytest.importorskip("torch")
N = 1000
PLUGIN = ("-p", "rooflinectl.pytest_plugin", "-p", "no:cacheprovider", "--roofline-ceilings", "spec")
ROOT = Path(__file__).resolve().parent.parent

CHAIN = f'''
import os
import pytest
import torch

N = {N}


def chain(a, b):
    for _ in range(int(os.environ.get("SLOW", "1"))):
        out = (a + b) * b
    return out


def test_chain_figures(roofline):
    a, b = torch.randn(N), torch.randn(N)
    r = roofline(chain, a, b, warmup=1, iters=2)
    assert r.min_bytes == 12 * N
    assert r.bytes == 24 * N
    assert r.flops == 2 * N
    assert r.kernel("add").op == "aten::add"


def test_chain_is_fused(roofline):
    a, b = torch.randn(N), torch.randn(N)
    r = roofline(chain, a, b, warmup=1, iters=2)
    assert r.bytes <= 1.05 * r.min_bytes
'''


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*PLUGIN, *args)


@pytest.fixture(scope="module", autouse=True)
def _profiler_imported() -> None:
    """pytester's in-process runs put sys.modules back as they found it, and what the profiler
    imports on first use (triton, torch's inductor operators) cannot be imported a second time
    once dropped: one profile here, before any inner run, imports it for them all."""
    from rooflinectl.ceilings import current_ceilings
    from rooflinectl.pytest_plugin.result import measure

    measure(torch.add, (torch.ones(4), torch.ones(4)), {}, warmup=0, iters=1, device_kind="cpu",
            ceilings=current_ceilings("cpu", use_measured=False), label="warm-up")


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


def test_passing_and_failing_assertions_name_the_figure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_chain=CHAIN)
    result = _run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*assert 24000.0 <= (1.05 * 12000.0)",
        "*where 24000.0 = <roofline chain on *: *% of roof (*-bound), * vs min 12 kB, 2 kFLOP; top aten::*>.bytes",
        "*- roofline -*",
        "test*kernel*efficiency*bound*time*un-profiled*note",
        "test_chain.py::test_chain_figures *aten::* *%*",
        "test_chain.py::test_chain_is_fused *aten::* *%*",
    ])


def test_the_figures_match_hand_counts_and_the_documented_definitions() -> None:
    from rooflinectl.ceilings import current_ceilings
    from rooflinectl.pytest_plugin.result import KernelNotFound, measure

    ceilings = current_ceilings("cpu", use_measured=False)
    a, b = torch.randn(N), torch.randn(N)
    r = measure(lambda x, y: (x + y) * y, (a, b), {}, warmup=1, iters=3, device_kind="cpu", ceilings=ceilings,
                label="chain")
    assert (r.min_bytes, r.bytes, r.flops) == (12 * N, 24 * N, 2 * N)
    k = r.kernels
    assert r.time_s == pytest.approx(k["time_s"].sum() / 3)
    dram = ceilings.memory_bytes_per_s["dram"].value  # both ops memory-bound at the roof: bytes / bandwidth
    assert r.efficiency == pytest.approx((24 * N * 3 / dram) / k["time_s"].sum(), rel=1e-6)
    assert r.kernel("aten::mul").bytes == 12 * N and r.kernel("MUL").launches == 1
    assert len(r.unprofiled_times_s) == 3 and r.timed_by == "host_clock" and r.unprofiled_time_s > 0
    with pytest.raises(KernelNotFound, match=r"no kernel or op of chain matches 'conv'; its kernels: aten::(add|mul)"):
        r.kernel("conv")
    with pytest.raises(KernelNotFound, match=r"2 kernels of chain match 'aten'; name one: aten::"):
        r.kernel("aten")
    doubled = measure(lambda x: (x + 1, x + x.t()), (torch.ones(8, 8),), {}, warmup=0, iters=1, device_kind="cpu",
                      ceilings=ceilings, label="two adds")
    with pytest.raises(KernelNotFound, match=r"2 kernels of two adds match 'aten::add'; name one: "
                                             r"aten::add \(aten::add, \[8, 8\] x \[(8, 8)?\]\); aten::add \(aten::add, \[8, 8\] x \["):
        doubled.kernel("aten::add")  # one op on two shapes: two rows, named with their shapes
    assert "% of roof" in repr(r) and len(repr(r)) < 240  # pytest shows reprs up to 240 characters


def test_a_kernel_above_its_roof_is_never_a_success() -> None:
    from rooflinectl.ceilings import current_ceilings
    from rooflinectl.ceilings.model import Roof
    from rooflinectl.pytest_plugin.result import AboveRoof, measure

    ceilings = current_ceilings("cpu", use_measured=False)
    ceilings.memory_bytes_per_s["dram"] = Roof(1e3, "estimate", "a roof far below any real op: 1 kB/s")
    r = measure(torch.add, (torch.ones(N), torch.ones(N)), {}, warmup=0, iters=1, device_kind="cpu",
                ceilings=ceilings, label="add")
    assert r.above_roof == ["aten::add"]
    with pytest.raises(AboveRoof, match=r"^add: aten::add ran at \d+% of its roof \(simt.fp32, memory-bound\): the roof "
                                        r"or the count is wrong, so no efficiency can be asserted"):
        assert r.efficiency >= 0.5
    with pytest.raises(AboveRoof, match=r"^aten::add ran at"):
        r.kernel("add").efficiency  # noqa: B018
    assert r.kernel("add").raw_efficiency > 1.05 and "ABOVE its roof" in repr(r.kernel("add"))
    assert "efficiency unknown: 1 kernel(s) ABOVE their roof" in repr(r)
    record = r.record()
    assert record["efficiency"] is None and record["above_roof"] == "aten::add"


def test_a_view_or_a_repeated_tensor_is_read_once() -> None:
    from rooflinectl.pytest_plugin.result import tensor_bytes

    x = torch.zeros(100)
    assert tensor_bytes(x, x, [x]) == 400
    assert tensor_bytes(x[:50], x[50:]) == 400  # two halves of one storage
    assert tensor_bytes(x, x[:10]) == 400  # a view of a storage already counted whole: at most its size
    assert tensor_bytes(torch.nn.Linear(10, 4)) == (40 + 4) * 4


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CPU-only machine's behaviour")
def test_a_missing_device_skips_with_the_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_dev='''
import pytest, torch

@pytest.mark.roofline(device="cuda")
def test_marked(roofline):
    torch.zeros(1, device="cuda")  # never reached: skipped before the body

def test_asked(roofline):
    roofline(torch.add, torch.ones(3), torch.ones(3), device="cuda")

def test_cpu_roofs(roofline):
    r = roofline(torch.add, torch.ones(3), torch.ones(3), warmup=0, iters=1)
    assert r.ceilings.device_kind == "cpu"

@pytest.mark.roofline(device="tpu")
def test_bad_device(roofline):
    pass
''')
    result = _run(pytester, "-rs")
    result.assert_outcomes(passed=1, skipped=2, errors=1)
    result.stdout.fnmatch_lines(["*@pytest.mark.roofline(device='tpu'): use one of auto, cuda, cpu*"])
    assert result.stdout.str().count("no CUDA GPU here (torch.cuda.is_available() is False)") >= 2
    result.stdout.fnmatch_lines(["test_dev.py::test_marked *- * skipped: roofline(device='cuda'): no CUDA GPU here*"])


def test_report_files_and_junit_properties(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_rep='''
import pytest, torch

@pytest.mark.parametrize("n", [8], ids=["a|<b>"])
def test_two_calls(roofline, n):
    roofline(torch.add, torch.ones(n), torch.ones(n), warmup=0, iters=1)
    roofline(torch.mul, torch.ones(n), torch.ones(n), warmup=0, iters=1, label="mul")
''')
    for name in ("r.json", "r.md"):
        _run(pytester, f"--roofline-report={name}", "--junitxml=j.xml").assert_outcomes(passed=1)
    data = json.loads((pytester.path / "r.json").read_text())
    assert data["format"] == "rooflinectl-pytest-report"
    rows = data["rows"]
    assert [(r["test"], r["call"], r["label"]) for r in rows] == [
        ("test_rep.py::test_two_calls[a|<b>]", 1, "add"), ("test_rep.py::test_two_calls[a|<b>]", 2, "mul")]
    assert rows[0]["bytes"] == 3 * 8 * 4 and rows[0]["outcome"] == "passed" and rows[0]["efficiency"] > 0
    md = (pytester.path / "r.md").read_text()
    assert "| passed | test\\_rep.py::test\\_two\\_calls[a\\|&lt;b&gt;] |" in md
    assert "test\\_two\\_calls[a\\|&lt;b&gt;] #2 | aten::mul |" in md
    junit = (pytester.path / "j.xml").read_text()
    assert re.search(r'<property name="roofline.efficiency" value="[0-9.e-]+"', junit)
    assert '<property name="roofline2.label" value="mul"' in junit
    assert '<property name="roofline.bytes" value="96.0"' in junit


def test_records_round_trip_through_properties() -> None:
    record = {"label": "f", "efficiency": 0.5, "time_s": 1e-3, "bound": "memory"}
    props = records.properties(record, 1) + records.properties({**record, "label": "g"}, 2) + [("other", 1)]
    back = records.from_properties(props)
    assert [b["label"] for b in back] == ["f", "g"] and back[0]["efficiency"] == 0.5


SPEED = CHAIN.split("def test_chain_figures")[0] + '''
def test_chain_speed(roofline):
    roofline(chain, torch.randn(N), torch.randn(N), warmup=1, iters=2)


def test_not_run(roofline):
    pass
'''


def test_baseline_compare_catches_an_injected_regression(pytester: pytest.Pytester, monkeypatch) -> None:
    pytester.makepyfile(test_chain=SPEED)
    path = pytester.path / ".rooflinectl" / "baselines" / "main.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"format": records.BASELINE_FORMAT, "tests": {"test_chain.py::gone": [{"time_s": 1}]}}))
    _run(pytester, "--roofline-save=main", "-k", "speed").assert_outcomes(passed=1)
    saved = json.loads(path.read_text())
    assert sorted(saved["tests"]) == ["test_chain.py::gone", "test_chain.py::test_chain_speed"]  # merged
    assert saved["tests"]["test_chain.py::test_chain_speed"][0]["bytes"] == 24 * N
    # the same function: within the threshold (wide: microsecond ops on a shared CPU vary several-fold)
    result = _run(pytester, "--roofline-compare=main", "--roofline-fail-on-regression=1000%", "-k", "speed")
    result.assert_outcomes(passed=1)
    monkeypatch.setenv("SLOW", "300")  # 300 times the work per call, the same figures per op
    result = _run(pytester, "--roofline-compare=main", "--roofline-fail-on-regression=1000%", "-k", "speed")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*roofline regression in chain (call 1) against *main.json: time regressed: "
                                 "* us per call, baseline * us (+*%, allowed +1000.0%)",
                                 "test_chain.py::test_chain_speed *vs baseline: eff *, time +* REGRESSED"])


def test_regressions_of_efficiency_and_time() -> None:
    saved = {"efficiency": 0.8, "time_s": 1e-3}
    assert records.regressions({"efficiency": 0.77, "time_s": 1.04e-3}, saved, 0.05) == []
    found = records.regressions({"efficiency": 0.7, "time_s": 1.2e-3}, saved, 0.05)
    assert found[0].startswith("efficiency regressed: 70.0% of roof, baseline 80.0%")
    assert found[1].startswith("time regressed: 1200 us per call, baseline 1000 us (+20.0%")
    assert records.regressions({"efficiency": None, "time_s": 1e-3}, saved, 0.05)[0].startswith(
        "efficiency regressed: unknown")


@pytest.mark.parametrize("bad", ["nan", "inf", "-5%", "five"])
def test_bad_thresholds_are_refused_in_one_sentence(pytester: pytest.Pytester, bad: str) -> None:
    result = _run(pytester, "--roofline-compare=x", f"--roofline-fail-on-regression={bad}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*the regression threshold must be a finite percentage of 0 or more, such as 5%: "
                                 f"got '{bad}'"])
    assert records.parse_threshold("5%") == records.parse_threshold("5") == 0.05


def test_bad_baseline_options_are_refused(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--roofline-fail-on-regression=5%")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--roofline-fail-on-regression needs --roofline-compare NAME*"])
    result = _run(pytester, "--roofline-compare=nothing")
    result.stderr.fnmatch_lines(["*no roofline baseline at *nothing.json: save one first with --roofline-save*"])
    result = _run(pytester, "--roofline-report=no/such/folder/r.json")
    result.stderr.fnmatch_lines(["*--roofline-report: the folder */no/such/folder does not exist*"])


def test_exitfirst_keyword_and_last_failed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_chain=CHAIN)
    args = ("-p", "rooflinectl.pytest_plugin", "--roofline-ceilings", "spec")  # the cache provider on: --lf
    result = pytester.runpytest(*args, "-x", "-k", "fused or figures", "-p", "no:randomly")
    assert result.parseoutcomes().get("failed") == 1
    result = pytester.runpytest(*args, "--lf", "--roofline-report=r.json")
    result.assert_outcomes(failed=1)
    rows = json.loads((pytester.path / "r.json").read_text())["rows"]
    assert [(r["test"], r["outcome"]) for r in rows] == [("test_chain.py::test_chain_is_fused", "failed")]


def test_ceilings_are_found_once_per_session(pytester: pytest.Pytester, monkeypatch) -> None:
    import rooflinectl.ceilings as ceilings_module

    calls = []

    def fake_measure(kind: str):
        calls.append(kind)
        return ceilings_module.current_ceilings(kind, use_measured=False)

    monkeypatch.setattr(ceilings_module, "measure_ceilings", fake_measure)
    pytester.makepyfile(test_two='''
import torch

def test_one(roofline):
    roofline(torch.add, torch.ones(3), torch.ones(3), warmup=0, iters=1)

def test_two(roofline):
    roofline(torch.add, torch.ones(3), torch.ones(3), warmup=0, iters=1)
''')
    pytester.runpytest("-p", "rooflinectl.pytest_plugin", "-p", "no:cacheprovider").assert_outcomes(passed=2)
    assert calls == ["cpu"]  # default --roofline-ceilings measure: measured (or read from the cache) once


def test_the_measurement_lock_serialises_two_processes(tmp_path: Path, monkeypatch) -> None:
    from rooflinectl.pytest_plugin.lock import LockTimeout, measurement_lock

    monkeypatch.setenv("ROOFLINECTL_PYTEST_LOCK", str(tmp_path / "lock"))
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom rooflinectl.pytest_plugin.lock import measurement_lock\n"
         "with measurement_lock('cuda'):\n    print('held', flush=True)\n    time.sleep(1.5)\n"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "held"
        refused = "another process held the measurement lock .*lock.cuda for more than 0.1 s"
        with pytest.raises(LockTimeout, match=refused), measurement_lock("cuda", timeout_s=0.1):
            pass
        start = time.perf_counter()
        with measurement_lock("cuda"):
            waited_s = time.perf_counter() - start
        with measurement_lock("cpu", timeout_s=0.1):  # another device's lock is free
            pass
    finally:
        holder.wait(timeout=30)
    assert waited_s > 0.3


def test_under_xdist_the_controller_gathers_the_workers_figures(pytester: pytest.Pytester, monkeypatch) -> None:
    pytest.importorskip("xdist")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    pytester.makepyfile(test_chain=CHAIN)
    result = pytester.runpytest_subprocess(*PLUGIN, "-n", "2", "--roofline-report=r.json")
    result.assert_outcomes(passed=1, failed=1)
    rows = json.loads((pytester.path / "r.json").read_text())["rows"]
    assert sorted((r["test"], r["bytes"]) for r in rows) == [("test_chain.py::test_chain_figures", 24 * N),
                                                             ("test_chain.py::test_chain_is_fused", 24 * N)]


def test_plugin_start_up_imports_nothing_heavy() -> None:
    code = ("import sys, rooflinectl.pytest_plugin\n"
            "print(sorted(m for m in ('torch', 'pandas', 'numpy', 'rooflinectl.api') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    assert out.strip() == "[]"


def test_the_entry_point_is_declared_under_the_module_name() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[project.entry-points.pytest11]", 1)[1].split("\n[", 1)[0]
    assert '"rooflinectl.pytest_plugin" = "rooflinectl.pytest_plugin"' in section


def test_markdown_escaping() -> None:
    assert escape_markdown("a|b<script>`x`*_") == "a\\|b&lt;script&gt;\\`x\\`\\*\\_"
    assert not math.isnan(records.parse_threshold("0"))
