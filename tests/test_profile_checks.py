"""A profile's numbers are checked on load (issue 16, cases 9 and 12): NaN, negative or absurd
values and malformed sections are one sentence naming the field, exit 2, never shown as fact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rooflinectl.cli.main import main
from rooflinectl.errors import EXIT_INCOMPLETE, EXIT_USAGE

GOOD = Path(__file__).parent / "data" / "h200_attention_naive.profile.json"


def _cell(raw: dict[str, Any], row: int, column: str, value: Any) -> None:
    raw["kernels"]["rows"][row][raw["kernels"]["columns"].index(column)] = value


def _drop_column(raw: dict[str, Any], column: str) -> None:
    i = raw["kernels"]["columns"].index(column)
    raw["kernels"]["columns"].pop(i)
    for row in raw["kernels"]["rows"]:
        row.pop(i)


CORRUPTIONS = [
    (lambda r: r["summary"].update(window_s=float("nan")), "summary.window_s is NaN"),
    (lambda r: r["summary"].update(device_idle_s=-0.5), "summary.device_idle_s is -0.5"),
    (lambda r: r["summary"].update(total_kernel_time_s=1e300), "summary.total_kernel_time_s is 1e+300"),
    (lambda r: r["summary"].update(iterations=0), "summary.iterations is 0"),
    (lambda r: _cell(r, 0, "time_s", -1.0), "kernel row 0 (" ),
    (lambda r: _cell(r, 1, "time_s", None), "time_s is missing or NaN"),
    (lambda r: _cell(r, 2, "flops", -5.0), "flops is -5"),
    (lambda r: _cell(r, 0, "calls", "3"), "calls is '3'"),
    (lambda r: _cell(r, 0, "time_share", 4.0), "time_share is 4"),
    (lambda r: _cell(r, 0, "bound", "fast"), "bound is 'fast'"),
    (lambda r: r["ceilings"]["memory_bytes_per_s"]["dram"].update(value=0), "ceilings.memory_bytes_per_s.dram.value"),
    (lambda r: r["ceilings"]["compute_flops_per_s"]["tensor.bf16"].update(value=float("nan")),
     "ceilings.compute_flops_per_s.tensor.bf16.value is NaN"),
    (lambda r: r["ceilings"]["compute_flops_per_s"]["tensor.bf16"].update(value=-1e12), "tensor.bf16.value is -1e+12"),
    (lambda r: r.update(summary="fast"), "summary is a str"),
    (lambda r: r.update(metadata=[1, 2]), "metadata is a list"),
    (lambda r: r["kernels"].update(rows=[[1, 2]]), "kernels.rows must be lists of"),
    (lambda r: r["summary"].update(regions="step"), "summary.regions is 'step': it must be a list"),
    # nested shapes (summary_shapes.py): the readers index these as objects and lists
    (lambda r: r["summary"].update(clocks="x"), "summary.clocks is 'x': it must be an object"),
    (lambda r: r["summary"].update(clocks={"status": "ok", "sm_clock_mhz": {"mean": "fast", "min": 1, "max": 2}}),
     "summary.clocks.sm_clock_mhz.mean is 'fast': it must be a number"),
    (lambda r: r["summary"].update(clocks={"status": "ok", "power_w": {"max": 700}}),
     "summary.clocks.power_w.mean is missing: it must be a number"),
    (lambda r: r["summary"].update(communication={"launches": 3, "busy_s": 1e-3, "overlapped_s": 0.0,
                                                  "exposed_s": "a lot", "exposed_per_iteration_s": 0.0}),
     "summary.communication.exposed_s is 'a lot': it must be a number"),
    (lambda r: r["summary"].update(counters=[1]), "summary.counters is a list: it must be an object"),
    (lambda r: r["summary"].update(iteration_times_s=[1e-3, "x"]), "summary.iteration_times_s[1] is 'x'"),
    (lambda r: r["metadata"].update(rank="zero"), "metadata.rank is 'zero': it must be a number"),
    (lambda r: r["metadata"].update(completed="yes"), "metadata.completed is 'yes': it must be true or false"),
    (lambda r: r["metadata"].update(nvml={"status": "ok", "devices": [{"index": 0, "samples": {"sm_clock_mhz": 5}}]}),
     "metadata.nvml.devices[0].samples.sm_clock_mhz is 5: it must be a list"),
    (lambda r: r.update(setup_kernels="none"), "setup_kernels is a str; it must be an object"),
    (lambda r: _drop_column(r, "bound"), "the kernel table has no bound column"),
    (lambda r: r["summary"].update(back_to_back_runs="fast"), "summary.back_to_back_runs must be a list of objects"),
    (lambda r: r["summary"].update(back_to_back_runs=[{"row": 0, "length": 8, "runs": 2, "span_s": -1.0, "busy_s": 0.0}]),
     "summary.back_to_back_runs[0].span_s is -1"),
]


@pytest.mark.parametrize("corrupt, field", CORRUPTIONS)
@pytest.mark.parametrize("command", ["show", "advise", "plot"])
def test_bad_numbers_are_named(tmp_path: Path, corrupt, field: str, command: str) -> None:
    raw = json.loads(GOOD.read_text())
    corrupt(raw)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw))  # NaN goes in as JSON's NaN literal, as a careless writer would put it
    args = [command, str(bad)] + (["-o", str(tmp_path / "x.png")] if command == "plot" else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == EXIT_USAGE, result.output
    assert field in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_unknown_costs_are_allowed(tmp_path: Path) -> None:
    raw = json.loads(GOOD.read_text())
    for column in ("flops", "bytes", "intensity", "efficiency", "roof_time_s"):
        _cell(raw, 0, column, None)  # null: unknown, by contract
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(raw))
    result = CliRunner().invoke(main, ["show", str(ok), "--format", "json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    first = dict(zip(raw["kernels"]["columns"], raw["kernels"]["rows"][0]))
    (row,) = [r for r in shown["kernels"] if (r["kernel"], r["op"], r["shapes"]) == (first["kernel"], first["op"], first["shapes"])]
    assert row["flops"] is None and row["bytes"] is None  # shown as unknown (null), never as zero


def test_diff_on_a_bad_profile_fails_the_gate(tmp_path: Path) -> None:
    raw = json.loads(GOOD.read_text())
    raw["summary"]["window_s"] = float("nan")
    bad = tmp_path / "nan.json"
    bad.write_text(json.dumps(raw))
    result = CliRunner().invoke(main, ["diff", str(GOOD), str(bad), "--fail-on-regression", "5"])
    assert result.exit_code == EXIT_USAGE and "summary.window_s is NaN" in result.output


# case 8: an incomplete profile fails a gate ---------------------------------------------------------

def _failed_run(tmp_path: Path, empty: bool) -> Path:
    raw = json.loads(GOOD.read_text())
    raw["metadata"].update(completed=False, exit_code=1)
    if empty:
        raw["kernels"]["rows"] = []
    path = tmp_path / "failedrun.json"
    path.write_text(json.dumps(raw))
    return path


@pytest.mark.parametrize("empty", [True, False])
def test_advise_gate_fails_on_a_failed_run(tmp_path: Path, empty: bool) -> None:
    failed = _failed_run(tmp_path, empty)
    gated = CliRunner().invoke(main, ["advise", str(failed), "--fail-on", "warning"])
    assert gated.exit_code == EXIT_INCOMPLETE, gated.output
    assert "INCOMPLETE PROFILE: its run did not complete (exit code 1)" in gated.output
    for fmt, marker in (("github", "::error title=rooflinectl: incomplete profile::"),
                        ("junit", 'name="profile.complete"'), ("json", '"incomplete": "its run did not complete')):
        out = CliRunner().invoke(main, ["advise", str(failed), "--fail-on", "error", "--format", fmt])
        assert out.exit_code == EXIT_INCOMPLETE and marker in out.output, out.output
    ungated = CliRunner().invoke(main, ["advise", str(failed)])  # named, but no gate asked: exit 0
    assert ungated.exit_code == 0 and "INCOMPLETE PROFILE" in ungated.output


def test_advise_gate_fails_on_a_completed_run_without_kernels(tmp_path: Path) -> None:
    raw = json.loads(GOOD.read_text())
    raw["kernels"]["rows"] = []
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(raw))
    result = CliRunner().invoke(main, ["advise", str(empty), "--min-efficiency", "0.1"])
    assert result.exit_code == EXIT_INCOMPLETE and "it recorded no kernels" in result.output


def test_diff_gate_fails_on_a_failed_run(tmp_path: Path) -> None:
    failed = _failed_run(tmp_path, empty=True)
    gated = CliRunner().invoke(main, ["diff", str(GOOD), str(failed), "--fail-on-regression", "5"])
    assert gated.exit_code == EXIT_INCOMPLETE, gated.output
    assert "NEW: its run did not complete" in gated.output
    assert CliRunner().invoke(main, ["diff", str(GOOD), str(failed)]).exit_code == 0  # no gate asked


# "window 18.7 ms: device busy 26.7 ms" ------------------------------------------------------------

@pytest.mark.parametrize("capture", ["h200_mlp_bf16.capture.json.gz", "h200_attention_naive_bf16.capture.json.gz"])
def test_the_window_holds_the_device_busy_time(capture: str) -> None:
    """Kernels run after the host launched them: the window follows the device timeline, so the
    device can never be busy longer than the window (the cause of the stale committed profile was
    a window measured on the host, before 6aa8882)."""
    from rooflinectl.capture.run.session import load_capture
    from rooflinectl.ceilings.model import Ceilings, Roof
    from rooflinectl.pipeline import analyse_trace

    c = load_capture(str(GOOD.parent / capture))
    ceilings = Ceilings("H200", "cuda", {"dram": Roof(4.8e12, "spec")}, {"tensor.bf16": Roof(9.89e14, "spec")})
    _, summary, _ = analyse_trace(c.trace, c.device_kind, c.metadata, ceilings)
    assert 0 < summary["device_busy_s"] <= summary["window_s"]


def test_a_stale_window_is_said_not_shown_as_fact(tmp_path: Path) -> None:
    """A profile written before 6aa8882 could hold a window shorter than the busy time (the H200
    MLP profile once read window 18.7 ms, busy 26.7 ms): made here, since the committed one is re-recorded."""
    raw = json.loads(GOOD.read_text())
    raw["summary"].update(window_s=0.7 * raw["summary"]["device_busy_s"], device_idle_s=0.0)
    stale = tmp_path / "stale.profile.json"
    stale.write_text(json.dumps(raw))
    result = CliRunner().invoke(main, ["show", str(stale), "--top", "1"])
    assert result.exit_code == 0
    assert "busy longer than the window" in result.output
