"""Does a stopped session of ours slow the steps after it? A paired design for a noisy shared CPU.

Two processes forked from one that built and warmed up the step (so both start identical) take
turns step by step, passing a token through pipes, pinned to the same core: one runs the control
(6 plain steps in the middle), the other ours (rooflinectl's ProfilingSession with the default
sampling, which stops after 5 optimizer steps). Each pair of steps runs within a few tens of ms,
so whatever else the machine does hits both alike; the figure of a trial is the median over pairs
of log(ours / control) after the middle, less the same before it (where both are identical). The
order within a pair turns each trial. A cost of ours that stays after the stop shows as a shift
of that figure above 0; the spread of the before-halves shows the design's own floor.

CPU only (CUDA cannot be used after fork).
Usage: python3 scripts/investigations/post_stop_pingpong.py [--model mlp|llama] [--budget-s 600] [--steps 60]
Prints one PINGPONG line per trial and a summary (post_stop_stats' Hodges-Lehmann and bootstrap)."""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import post_stop_blocks  # noqa: E402
import post_stop_stats  # noqa: E402

MIDDLE_STEPS = post_stop_blocks.MIDDLE_STEPS


def play(step: Callable[[], None], mode: str, wait_fd: int, give_fd: int, steps: int, out_fd: int) -> None:
    """The child's side: before steps, the middle, after steps, each step on its turn; its step
    times (ms) written as JSON to out_fd."""
    def turn(run: Callable[[], None]) -> float:
        os.read(wait_fd, 1)
        began = time.perf_counter()
        run()
        took_ms = (time.perf_counter() - began) * 1e3
        os.write(give_fd, b"x")
        return took_ms

    before = [turn(step) for _ in range(steps)]
    session = None
    if mode == "ours":
        from rooflinectl.capture.run.session import ProfilingSession

        session = ProfilingSession("cpu", profile_steps="auto")
        turn(session.start)
    else:
        turn(lambda: None)
    middle = [turn(step) for _ in range(MIDDLE_STEPS)]
    after = [turn(step) for _ in range(steps)]
    stopped = session is None or (session.limit is not None and session.limit.stopped)
    os.write(out_fd, json.dumps({"mode": mode, "before": before, "after": after, "middle": middle,
                                 "stopped": stopped}).encode() + b"\n")


def trial(step: Callable[[], None], steps: int, ours_first: bool) -> dict:
    """Fork the two players, let them alternate, collect their times."""
    a_to_b, b_to_a, results = os.pipe(), os.pipe(), os.pipe()
    first, second = ("ours", "control") if ours_first else ("control", "ours")
    core = {min(os.sched_getaffinity(0))}
    pids = []
    for mode, wait_fd, give_fd in ((first, b_to_a[0], a_to_b[1]), (second, a_to_b[0], b_to_a[1])):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.alarm(120)  # a player whose partner died waits for no turn for ever
                os.sched_setaffinity(0, core)
                play(step, mode, wait_fd, give_fd, steps, results[1])
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    os.write(b_to_a[1], b"x")  # the first player's first turn
    os.close(results[1])
    data = b""
    while chunk := os.read(results[0], 1 << 16):
        data += chunk
    for pid in pids:
        os.waitpid(pid, 0)
    for fd in (*a_to_b, *b_to_a, results[0]):
        os.close(fd)
    rows = {r["mode"]: r for r in map(json.loads, data.decode().splitlines())}
    if len(rows) < 2:
        return {"failed": f"players gave {sorted(rows)}"}
    pair_before = [math.log(o / c) for o, c in zip(rows["ours"]["before"], rows["control"]["before"], strict=True)]
    pair_after = [math.log(o / c) for o, c in zip(rows["ours"]["after"], rows["control"]["after"], strict=True)]
    return {"ours_first": ours_first, "before": statistics.median(pair_before), "after": statistics.median(pair_after),
            "effect": statistics.median(pair_after) - statistics.median(pair_before),
            "control_ms": statistics.median(rows["control"]["after"]), "stopped": rows["ours"]["stopped"]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=["mlp", "llama"], default="llama")
    p.add_argument("--budget-s", type=float, default=600)
    p.add_argument("--steps", type=int, default=60, help="steps before and after the middle")
    args = p.parse_args()
    options = post_stop_blocks.parse_args(["control", "--device", "cpu", "--model", args.model])
    step = post_stop_blocks.prepare(options)
    started, trials = time.monotonic(), []
    while time.monotonic() - started < args.budget_s:
        got = trial(step, args.steps, ours_first=len(trials) % 2 == 0)
        if "failed" in got:
            print(f"trial failed: {got['failed']}", flush=True)
            continue
        trials.append(got)
        print("PINGPONG " + json.dumps({k: round(v, 5) if isinstance(v, float) else v for k, v in got.items()}),
              flush=True)
    effects = [t["effect"] for t in trials]
    befores = [t["before"] for t in trials]
    low, high = post_stop_stats.median_interval(effects)
    print(f"FIGURE post-stop pingpong ({args.model}, CPU): {len(trials)} trials, ours/control after the stop less "
          f"before it: median {post_stop_stats.pct(statistics.median(effects)):+.2f}% (95% interval "
          f"{post_stop_stats.pct(low):+.2f}% to {post_stop_stats.pct(high):+.2f}%); before the middle (identical "
          f"processes): median {post_stop_stats.pct(statistics.median(befores)):+.2f}%; control step "
          f"{statistics.median(t['control_ms'] for t in trials):.3f} ms; stopped in {sum(t['stopped'] for t in trials)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
