"""Does a stopped session of ours slow the steps after it? A paired design for a noisy host.

Two player processes take turns step by step, passing a token through pipes: one runs the
control (6 plain steps in the middle), the other ours (rooflinectl's ProfilingSession with the
default sampling, which stops after 5 optimizer steps). Each pair of steps runs within a few
tens of ms, so whatever else the host does then (other tenants, clocks) hits both alike. The
figure of a trial is the median over pairs of log(ours / control) after the middle, less the same
before it: the levels of the two processes cancel too. A cost of ours that stays after the stop
shows as a shift of that figure above 0; the spread of the before-halves is the design's floor.
The order within a pair turns each trial.

- CPU: the players are forked from this process, which built and warmed up the step (both start
  identical), pinned to one core.
- CUDA (cannot be used after fork): each player is a fresh interpreter that builds its own step;
  a turn ends with torch.cuda.synchronize() (a turn's time is its step, the GPU's part included,
  and the other player finds the GPU idle).

Usage: python3 scripts/investigations/post_stop_pingpong.py [--device cpu|cuda] [--model mlp|llama]
       [--budget-s 600] [--steps 60] [--out FILE]
Prints one PINGPONG line per trial, then FIGURE and CHECK lines."""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import select
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import post_stop_blocks  # noqa: E402
import post_stop_stats  # noqa: E402

MIDDLE_STEPS = post_stop_blocks.MIDDLE_STEPS
PHASE_TIMEOUT_S = 60  # the players' start (building and warming up the model), then their turns
PLAYER_TIMEOUT_S = 2 * PHASE_TIMEOUT_S + 10  # a player ends by then whatever happens (its alarm)


def play(step: Callable[[], None], mode: str, device: str, fds: tuple[int, int, int], steps: int,
         variant: str = "") -> None:
    """A player: before steps, the middle, after steps, each on its turn; its step times (ms) as
    one JSON line to the out fd. fds: (wait for the token, give it, out)."""
    wait_fd, give_fd, out_fd = fds
    sync = (lambda: __import__("torch").cuda.synchronize()) if device == "cuda" else (lambda: None)

    def turn(run: Callable[[], object]) -> float:
        os.read(wait_fd, 1)
        began = time.perf_counter()
        run()
        sync()
        took_ms = (time.perf_counter() - began) * 1e3
        os.write(give_fd, b"x")
        return took_ms

    before = [turn(step) for _ in range(steps)]
    session = None
    if mode == "ours":
        from rooflinectl.capture.run.session import ProfilingSession

        session = ProfilingSession(device, profile_steps="auto")
        turn(session.start)
    else:
        turn(lambda: None)
    middle = [turn(step) for _ in range(MIDDLE_STEPS)]
    stopped = session is None or (session.limit is not None and session.limit.stopped)
    if session is not None and variant in ("no-marker", "noop-marker") and session.limit is not None:
        session.limit.remove()  # the iteration marker too: what is left is all the rest of ours
        if variant == "noop-marker":  # in its place, a global optimizer hook that does nothing
            from torch.optim.optimizer import register_optimizer_step_post_hook

            register_optimizer_step_post_hook(lambda *_: None)
    if session is not None and variant == "drop-events":
        from rooflinectl.capture.run.session import let_go_of_events

        let_go_of_events(session.prof)  # the profiler's recorded events freed (and malloc_trim): their memory
    if session is not None and variant == "gc-freeze":
        gc.freeze()  # what we keep alive no longer costs the cyclic GC anything
    after = [turn(step) for _ in range(steps)]
    os.write(out_fd, (json.dumps({"mode": mode, "before": before, "after": after, "middle": middle,
                                  "stopped": stopped}) + "\n").encode())


def player_failed(handles: list[object]) -> bool:
    """Whether a player has ended with an error (its partner would then wait for ever)."""
    for handle in handles:
        if isinstance(handle, int):
            continue  # a forked player ends by its alarm at worst
        code = handle.poll()  # type: ignore[attr-defined]
        if code is not None and code != 0:
            return True
    return False


def read_lines(fd: int, count: int, deadline: float, handles: list[object]) -> list[str]:
    """Up to `count` lines from fd before the deadline (fewer if the writers end, a player fails
    or time runs out)."""
    data = b""
    while data.count(b"\n") < count and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], min(1.0, max(0.0, deadline - time.monotonic())))
        if not ready:
            if player_failed(handles):
                break
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").splitlines()


def start_players(modes: tuple[str, str], args: argparse.Namespace, step: Callable[[], None] | None,
                  pipes: dict[str, tuple[int, int]], variant: str) -> list[object]:
    """The two players: forked (CPU, step given) or fresh interpreters (CUDA). Returns their handles."""
    ends = [(pipes["b_to_a"][0], pipes["a_to_b"][1]), (pipes["a_to_b"][0], pipes["b_to_a"][1])]
    out_fd = pipes["results"][1]
    handles: list[object] = []
    for mode, (wait_fd, give_fd) in zip(modes, ends, strict=True):
        if step is not None:
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    signal.alarm(PLAYER_TIMEOUT_S)  # a player whose partner died waits for no turn for ever
                    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
                    os.write(out_fd, b"READY\n")
                    play(step, mode, args.device, (wait_fd, give_fd, out_fd), args.steps, variant)
                    code = 0
                finally:
                    os._exit(code)
            handles.append(pid)
        else:
            argv = [sys.executable, __file__, "--player", mode, "--device", args.device, "--model", args.model,
                    "--steps", str(args.steps), "--variant", variant, "--fds", f"{wait_fd},{give_fd},{out_fd}"]
            handles.append(subprocess.Popen(argv, pass_fds=(wait_fd, give_fd, out_fd), stdout=subprocess.DEVNULL,
                                            stderr=args.log_file or subprocess.DEVNULL))
    return handles


def end_players(handles: list[object]) -> None:
    """Wait for the players (10 s at most each, then kill)."""
    for handle in handles:
        if isinstance(handle, int):
            until = time.monotonic() + 10
            while os.waitpid(handle, os.WNOHANG) == (0, 0):
                if time.monotonic() > until:
                    os.kill(handle, signal.SIGKILL)
                    os.waitpid(handle, 0)
                    break
                time.sleep(0.05)
        else:
            try:
                handle.wait(timeout=10)  # type: ignore[attr-defined]
            except subprocess.TimeoutExpired:
                handle.kill()  # type: ignore[attr-defined]
                handle.wait()  # type: ignore[attr-defined]


def trial(args: argparse.Namespace, step: Callable[[], None] | None, ours_first: bool, variant: str) -> dict:
    """One trial: the two players started, their turns begun once both are ready, their times."""
    pipes = {name: os.pipe() for name in ("a_to_b", "b_to_a", "results")}
    modes = ("ours", "control") if ours_first else ("control", "ours")
    handles = start_players(modes, args, step, pipes, variant)
    os.close(pipes["results"][1])
    lines = read_lines(pipes["results"][0], 2, time.monotonic() + PHASE_TIMEOUT_S, handles)  # built, warmed up
    if lines.count("READY") == 2:
        os.write(pipes["b_to_a"][1], b"x")  # the first player's first turn
        lines += read_lines(pipes["results"][0], 2, time.monotonic() + PHASE_TIMEOUT_S, handles)
    end_players(handles)
    for fd in (*pipes["a_to_b"], *pipes["b_to_a"], pipes["results"][0]):
        os.close(fd)
    rows = {}
    for line in lines:
        if line.startswith("{"):
            row = json.loads(line)
            rows[row["mode"]] = row
    if len(rows) < 2:
        return {"failed": f"players gave {sorted(rows)} ({lines.count('READY')} ready)"}
    pair = {side: [math.log(o / c) for o, c in zip(rows["ours"][side], rows["control"][side], strict=True)]
            for side in ("before", "after")}
    return {"variant": variant, "ours_first": ours_first, "before": statistics.median(pair["before"]),
            "after": statistics.median(pair["after"]),
            "effect": statistics.median(pair["after"]) - statistics.median(pair["before"]),
            "control_ms": statistics.median(rows["control"]["after"]),
            "ours_ms": statistics.median(rows["ours"]["after"]), "stopped": rows["ours"]["stopped"]}


def summary(trials: list[dict], args: argparse.Namespace) -> list[str]:
    """A FIGURE line per variant (ours as it is: no variant named), a CHECK line for ours as it is."""
    pct, lines = post_stop_stats.pct, []
    for variant in dict.fromkeys(args.variant.split(",")):
        got = [t for t in trials if t["variant"] == variant]
        effects, befores = [t["effect"] for t in got], [t["before"] for t in got]
        if len(effects) < 3:
            lines.append(f"CHECK post-stop pingpong{' ' + variant if variant else ''}: FAILED: {len(effects)} trials "
                         "(need 3)")
            continue
        low, high = post_stop_stats.median_interval(effects)
        lines.append(
            f"FIGURE post-stop pingpong ({args.model}, {args.device}{', ' + variant if variant else ''}): {len(got)} "
            f"trials of {args.steps} step pairs before and after; ours/control after the stop less before it: median "
            f"{pct(statistics.median(effects)):+.2f}% (95% interval {pct(low):+.2f}% to {pct(high):+.2f}%); before the "
            f"middle: median {pct(statistics.median(befores)):+.2f}% (range {pct(min(befores)):+.2f}% to "
            f"{pct(max(befores)):+.2f}%); control step {statistics.median(t['control_ms'] for t in got):.3f} ms; the "
            f"session stopped in {sum(t['stopped'] for t in got)} of {len(got)}")
        if not variant:
            lines.append(f"CHECK post-stop pingpong: {post_stop_stats.verdict(low, high, args.bound_pct)}")
    return lines


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--model", choices=["mlp", "llama", "resnet"], default="llama")
    p.add_argument("--budget-s", type=float, default=600)
    p.add_argument("--steps", type=int, default=60, help="step pairs before and after the middle")
    p.add_argument("--bound-pct", type=float, default=3.0)
    p.add_argument("--out", help="append the PINGPONG lines to this file too")
    p.add_argument("--log", help="the players' stderr (CUDA players), appended")
    p.add_argument("--spawn", action="store_true", help="fresh interpreters as players on a CPU too (as on CUDA)")
    p.add_argument("--variant", default="", help="what ours also does after its stop: nothing (''), no-marker "
                   "(the iteration marker removed), noop-marker (a hook that does nothing instead), gc-freeze, drop-events (the profiler's events freed); several, "
                   "comma-separated, alternate by pairs of trials (which candidate costs)")
    p.add_argument("--player", choices=["ours", "control"], help=argparse.SUPPRESS)
    p.add_argument("--fds", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def run_player(args: argparse.Namespace) -> None:
    """A fresh interpreter's player (CUDA): build, say READY, play."""
    signal.alarm(PLAYER_TIMEOUT_S)
    wait_fd, give_fd, out_fd = (int(fd) for fd in args.fds.split(","))
    step = post_stop_blocks.prepare(post_stop_blocks.parse_args(["control", "--device", args.device,
                                                                 "--model", args.model]))
    os.write(out_fd, b"READY\n")
    play(step, args.player, args.device, (wait_fd, give_fd, out_fd), args.steps, args.variant)
    os._exit(0)


def main() -> int:
    args = parse()
    if args.player:
        run_player(args)
    args.log_file = open(args.log, "a") if args.log else None  # noqa: SIM115 - the players' stderr, to the end
    started = time.monotonic()
    step = None
    if args.device == "cpu" and not args.spawn:
        from rooflinectl.capture.run import session  # noqa: F401  # imported once, before the forks

        step = post_stop_blocks.prepare(post_stop_blocks.parse_args(["control", "--device", "cpu",
                                                                     "--model", args.model]))
    trials: list[dict] = []
    slowest_s = 0.0
    while time.monotonic() - started + slowest_s < args.budget_s:
        began = time.monotonic()
        variants = args.variant.split(",")
        got = trial(args, step, ours_first=len(trials) % 2 == 0, variant=variants[len(trials) // 2 % len(variants)])
        slowest_s = max(slowest_s, time.monotonic() - began)
        if "failed" in got:
            print(f"trial failed: {got['failed']}", flush=True)
            if not trials:
                break  # the first one failed: something is wrong, not noise
            continue
        line = "PINGPONG " + json.dumps({k: round(v, 5) if isinstance(v, float) else v for k, v in got.items()})
        print(line, flush=True)
        if args.out:
            with open(args.out, "a") as sink:
                sink.write(line + "\n")
        trials.append(got)
    print("\n".join(summary(trials, args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
