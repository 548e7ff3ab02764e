"""The multi-rank path on CPU: two processes under torch.distributed.run with gloo, each profiled,
then read together; and a rank's file name and message under torchrun's environment."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinectl.cli.launch import torchrun_command
from rooflinectl.cli.main import main
from rooflinectl.outputs.profile_file import load_profile

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
WIDTH = 256  # examples/real/manual_dp.py: Linear(256, 1024), GELU, Linear(1024, 256) per layer


@pytest.mark.slow
def test_two_gloo_ranks_profiled_and_read_together(tmp_path: Path) -> None:
    # --iterations 3: the 3 timed steps after the warm-up one, whatever the machine's load (which of
    # the first steps are slow enough to be warm-up is choose_warmup's, tested on given times);
    # --profile-steps 4: each rank stops its profiler after 4 of its 7 steps and times steps 6 and 7
    command = [sys.executable, "-m", "rooflinectl", "profile", "--nproc-per-node", "2", "--device", "cpu",
               "-o", str(tmp_path / "job.r{rank}.json"), "--top", "3", "--iterations", "3", "--profile-steps", "4",
               str(EXAMPLES / "real" / "manual_dp.py"), "--",
               "--device", "cpu", "--layers", "1", "--batch", "8", "--warmup", "1", "--steps", "6"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    decoder = json.JSONDecoder()  # two processes share the pipe: a TIMING line may sit after other text
    parts = done.stdout.split("TIMING ")[1:]
    assert all(p.startswith("{") for p in parts), [p[:60] for p in parts]
    timing = [decoder.raw_decode(part)[0] for part in parts]
    assert sorted(t["rank"] for t in timing) == [0, 1]  # the script's own output is untouched
    assert "per rank, per step" in done.stdout and "2 of 2 rank profiles written" in done.stderr
    params = 2 * WIDTH * 4 * WIDTH + 4 * WIDTH + WIDTH  # one all-reduce of every gradient, flattened
    pids = set()
    for rank in (0, 1):
        data = load_profile(tmp_path / f"job.r{rank}.json")
        m = data.metadata
        assert (m["rank"], m["world_size"], m["local_rank"], m["host"]) == (rank, 2, rank, socket.gethostname())
        pids.add(m["pid"])
        reduce_rows = data.kernels[data.kernels["op"] == "gloo:all_reduce"]
        s = data.summary
        assert (s["iterations_found"], s["iterations"], s["warmup_iterations"]) == (4, 3, 1)  # 1 warm-up + 3 steps
        steps = s["iterations"]
        assert reduce_rows["calls"].sum() == steps  # one all-reduce per step
        # all-reduce over 2 ranks: bus bytes = elements x 4 B x 2(2-1)/2 per call
        assert (reduce_rows["bytes"] / reduce_rows["calls"]).tolist() == [params * 4 * 2 * 1 / 2]
        assert set(data.kernels["rank"]) == {rank}
        assert data.summary["communication"]["launches"] == steps
        assert data.summary["iterations_marker"].startswith("Optimizer.step#")
        assert (s["profile_steps_stopped"], s["profile_steps_seen"], s["unprofiled_steps"]) == (True, 7, 2)
        own_ms = next(t for t in timing if t["rank"] == rank)["iter_ms"][-2:]  # the script's own clock, steps 6-7
        ours_ms = [t * 1e3 for t in s["unprofiled_step_times_s"]]
        assert all(0.5 < a / b < 2.0 for a, b in zip(ours_ms, own_ms, strict=True)), (ours_ms, own_ms)
    assert len(pids) == 2
    header = next(line for line in done.stdout.splitlines() if line.startswith("rank "))
    assert "step" in header and "unprofiled" in header  # the ranks table shows both step times
    shown = CliRunner().invoke(main, ["show", str(tmp_path / "job.r*.json"), "--format", "json"])
    assert shown.exit_code == 0, shown.output
    dist = json.loads(shown.stdout)["summary"]["distributed"]  # the note on the merge goes to stderr
    assert dist["ranks_found"] == [0, 1] and dist["missing_ranks"] == []


def test_a_rank_under_torchrun_writes_its_own_file_and_rank0_says_where(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for key, value in {"RANK": "0", "WORLD_SIZE": "4", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "4"}.items():
        monkeypatch.setenv(key, value)
    args = ["profile", str(EXAMPLES / "mlp.py"), "--device", "cpu", "--top", "2", "--", "--batch", "8", "--width", "32",
            "--steps", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "rooflinectl.profile.rank0.json").is_file() and not (tmp_path / "rooflinectl.profile.json").exists()
    assert "rooflinectl show 'rooflinectl.profile.rank*.json'" in result.output
    monkeypatch.setenv("RANK", "3")
    quiet = CliRunner().invoke(main, args)
    assert quiet.exit_code == 0 and "device:" not in quiet.output  # only rank 0 prints the table
    assert load_profile(tmp_path / "rooflinectl.profile.rank3.json").metadata["rank"] == 3


def test_the_launch_goes_through_torch_distributed_run() -> None:
    command = torchrun_command(2, "train.py", "out.{rank}.json", ["--lr", "1"], device="auto", save_trace=None)
    assert command[1:5] == ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    assert command[-3:] == ["--", "--lr", "1"] and "-q" in command
