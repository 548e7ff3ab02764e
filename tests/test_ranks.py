"""The rank profiles of the recorded 2-rank DDP GPT-2 run read together: merged table, waiting,
straggler, collectives' transfer bandwidth; and the CLI's file sets. Expectations come from the
raw Chrome traces (kernel durations and args), not from our parser's output."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from real_traces import raw_json, timed_median_s, trace

from rooflinectl.analysis.advice import advise
from rooflinectl.analysis.ranks import match_collectives, merge_ranks
from rooflinectl.ceilings.build import apply_measurements, gpu_spec_ceilings
from rooflinectl.ceilings.detect import GpuInfo
from rooflinectl.ceilings.measurement import Measurement
from rooflinectl.cli.main import main
from rooflinectl.cli.profiles import expand, rank_set_problem
from rooflinectl.outputs.profile_file import save_profile
from rooflinectl.pipeline import analyse_trace
from rooflinectl.profile_model import ProfileData

LINK_SIZES = [1 << 20, 1 << 24, 1 << 28]
LINK_BUSBW = [50e9, 250e9, 360e9]


@functools.cache
def _ceilings():
    measured = [Measurement("link.all_reduce", 360e9, "bytes/s", "test curve", details={
        "gpus": 2, "collective": "all_reduce", "sizes_bytes": LINK_SIZES, "bus_bytes_per_s": LINK_BUSBW})]
    info = GpuInfo(name="NVIDIA H200", sms=132, max_sm_clock_hz=1.98e9, compute_capability=(9, 0))
    return apply_measurements(gpu_spec_ceilings(info), measured)


@functools.cache
def _rank_profile(rank: int) -> ProfileData:
    meta = {"rank": rank, "world_size": 2, "local_rank": rank, "host": "h200-x2"}
    table, summary, _setup = analyse_trace(trace(f"ddp_gpt2.rank{rank}"), "cuda", meta, _ceilings())
    return ProfileData(table, _ceilings(), meta, summary)


def _nccl_durations(rank: int) -> list[tuple[str, int, float]]:
    """(collective, elements, seconds) of each NCCL kernel, from the raw trace, in time order."""
    kernels = [e for e in raw_json(f"ddp_gpt2.rank{rank}")["traceEvents"]
               if e.get("cat") == "kernel" and (e.get("args") or {}).get("Collective name")]
    return [(k["args"]["Collective name"], k["args"]["In msg nelems"], k["dur"] / 1e6)
            for k in sorted(kernels, key=lambda k: k["ts"])]


def test_collectives_match_and_the_waiting_rank_is_the_early_one() -> None:
    profiles = [_rank_profile(0), _rank_profile(1)]
    steps = profiles[0].summary["communication"]["iterations"]
    assert steps == 4  # 5 optimizer steps, the first is warm-up
    matches = match_collectives(profiles)
    # steady state: steps 2-5 (3 all-reduces each) and DDP's bucket rebuild in step 2 (2 broadcasts)
    assert len(matches) == 3 * steps + 2
    merged = merge_ranks(profiles)
    dist = merged.summary["distributed"]
    # by hand from the raw traces: the last 14 NCCL kernels of each rank, waiting = own - shortest
    d0, d1 = _nccl_durations(0)[-len(matches):], _nccl_durations(1)[-len(matches):]
    assert [(c, n) for c, n, _ in d0] == [(c, n) for c, n, _ in d1]
    wait0 = sum(a - min(a, b) for (_, _, a), (_, _, b) in zip(d0, d1))
    wait1 = sum(b - min(a, b) for (_, _, a), (_, _, b) in zip(d0, d1))
    ranks = {r["rank"]: r for r in dist["ranks"]}
    assert ranks[0]["wait_per_step_s"] == pytest.approx(wait0 / steps, rel=1e-6)
    assert ranks[1]["wait_per_step_s"] == pytest.approx(wait1 / steps, rel=1e-6)
    assert dist["straggler"]["rank"] == 1 and dist["straggler"]["how"] == "waited for"
    # transfer bandwidth of the 39385344-element all-reduce: bus bytes (x 2(2-1)/2) / the shorter kernel
    big = next(g for g in dist["collectives"] if g["shapes"] == "[39385344]")
    shortest = [min(a, b) for (_, n, a), (_, _, b) in zip(d0, d1) if n == 39385344]
    assert big["bus_bytes_per_s"] == pytest.approx(39385344 * 4 / (sum(shortest) / len(shortest)), rel=1e-6)
    # the measured curve at 157.5 MB, log-interpolated between 16 MiB (250 GB/s) and 256 MiB (360 GB/s)
    assert 250e9 < big["link_at_size_bytes_per_s"] < 360e9


@pytest.mark.parametrize("rank", [0, 1])
def test_each_ranks_step_time_is_its_cuda_event_time(rank: int) -> None:
    """The per-rank step time the merged view reports, against the script's own CUDA events."""
    ranks = merge_ranks([_rank_profile(0), _rank_profile(1)]).summary["distributed"]["ranks"]
    step = next(r["step_time_s"] for r in ranks if r["rank"] == rank)
    assert step == pytest.approx(timed_median_s(f"ddp_gpt2.rank{rank}"), rel=0.05)


def test_merged_table_is_the_mean_of_the_ranks_with_their_spread() -> None:
    profiles = [_rank_profile(0), _rank_profile(1)]
    merged = merge_ranks(profiles).kernels
    key = ["kernel", "op", "shapes", "dtype"]
    row = merged[merged["op"] == "c10d::allreduce_"].iloc[0]
    own = [p.kernels.set_index(key).loc[tuple(row[key]), "time_s"] for p in profiles]
    assert row["time_s"] == pytest.approx(sum(own) / 2)
    assert (row["time_min_s"], row["time_max_s"]) == pytest.approx((min(own), max(own)))
    assert row["slowest_rank"] == int(own[1] > own[0]) and row["rank"] == -1
    assert row["bound"] in ("link", "latency")


def test_advice_on_the_set_names_the_straggler_by_its_idle_gpu() -> None:
    report = advise(merge_ranks([_rank_profile(0), _rank_profile(1)]))
    found = report.findings_of("rank.straggler")
    assert len(found) == 1 and found[0].subject == "rank 1"
    assert "idle" in found[0].evidence and "host" in found[0].recommendation
    assert not report.findings_of("grid.small")  # NCCL's few blocks are by design


@pytest.mark.slow
def test_rank_sets_on_the_command_line(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    for r in (0, 1):
        save_profile(_rank_profile(r), folder / f"p.rank{r}.json")
    assert [p.name for p in expand([str(folder / "p.rank*.json")])] == ["p.rank0.json", "p.rank1.json"]
    (folder / "config.json").write_text('{"lr": 0.1}')  # a job's folder holds other JSON: not read as a profile
    (folder / "results.json").write_text("[1, 2]")
    assert [p.name for p in expand([str(folder)])] == ["p.rank0.json", "p.rank1.json"]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "p.json").write_text("{}")
    lonely = CliRunner().invoke(main, ["show", str(tmp_path / "other")])
    assert lonely.exit_code == 2 and "without rank profiles (*.rank*.json" in lonely.output, lonely.output
    shown = CliRunner().invoke(main, ["show", str(folder), "--top", "3", "--wide"])
    assert shown.exit_code == 0, shown.output
    assert "straggler: rank 1" in shown.output and "ranks/it" in shown.output  # the fastest-slowest rank column
    plotted = CliRunner().invoke(main, ["plot", str(folder / "p.rank0.json"), str(folder / "p.rank1.json"),
                                        "-o", str(tmp_path / "set.svg")])
    assert plotted.exit_code == 0, plotted.output
    svg = (tmp_path / "set.svg").read_text()
    assert 'id="link:curve"' in svg and 'id="link:transfer"' in svg  # the set is drawn as one, with its link panel
    compared = CliRunner().invoke(main, ["diff", str(folder), str(folder / "p.rank*.json"), "--format", "json"])
    assert compared.exit_code == 0, compared.output
    report = json.loads(compared.stdout)  # the same job on both sides: matched, and nothing moved
    assert report["changed"] and report["total_delta_pct"] == 0 and not report["new"] and not report["vanished"]
    advised = CliRunner().invoke(main, ["advise", str(folder), "--format", "json"])
    assert advised.exit_code == 0 and '"rank.straggler"' in advised.stdout
    shutil.copy(folder / "p.rank0.json", folder / "p.rank0.copy.json")
    twice = CliRunner().invoke(main, ["show", str(folder)])
    assert twice.exit_code == 2 and "rank 0 appears twice" in twice.output
    assert rank_set_problem([_rank_profile(0), ProfileData(_rank_profile(1).kernels, _ceilings(), {"rank": 1})]) \
        == "they come from jobs of different sizes (2, None ranks)"


def test_the_merged_profile_keeps_rank_0s_runs_on_the_merged_rows() -> None:
    """Rank 0's back-to-back runs name its own table's rows; the merged table orders rows anew, so
    each entry must name the merged row of the same kernel, op and shapes."""
    first = _rank_profile(0)
    merged = merge_ranks([first, _rank_profile(1)])
    keys = ["kernel", "op", "shapes"]
    own = [(first.kernels.loc[e["row"], keys].tolist(), e["length"], e["span_s"])
           for e in first.summary["back_to_back_runs"]]
    moved = [(merged.kernels.loc[e["row"], keys].tolist(), e["length"], e["span_s"])
             for e in merged.summary["back_to_back_runs"]]
    assert own and moved == own
