"""Rounds of post_stop_blocks.py processes, modes alternating (the order turns each round), whole
rounds only, until a time budget would be passed; each process's BLOCKS line appended to a file.

Each process is forked from this one after torch, transformers and rooflinectl's session are
imported (no CUDA in this parent: a child initialises its own), which saves each process the
imports: more processes in the same budget. A child that gives no BLOCKS line, or a parent
with other threads running (fork is unsafe then), switches to fresh interpreters (subprocess)
for the rest. Every child is one fresh process for the session (its first session, as the CLI's is).

Usage: python3 scripts/investigations/post_stop_rounds.py OUT_DIR --budget-s 200 --modes control ours
       [--spawn] -- [post_stop_blocks.py options]
Writes OUT_DIR/blocks.jsonl and OUT_DIR/<mode>-<round>.log; prints one line per process."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
TIMEOUT_S = 120  # one process at most (a hung one is killed; the round still counts what came back)


def preload(blocks_args: list[str]) -> None:
    """Import what every child would import (not CUDA: the parent never touches the device; an
    import that asks torch.cuda.is_available() asks NVML, not the driver, which fork would break)."""
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    import post_stop_blocks  # noqa: F401
    import torch  # noqa: F401

    from rooflinectl.capture.run import session  # noqa: F401
    if "llama" in blocks_args or "--model" not in blocks_args:
        from transformers import LlamaForCausalLM  # noqa: F401


def os_threads() -> int:
    try:
        with open("/proc/self/status") as status:
            return int(next(line.split()[1] for line in status if line.startswith("Threads:")))
    except (OSError, StopIteration, ValueError):
        return threading.active_count()


def run_forked(argv: list[str], log: Path, timeout_s: float, step: object = None) -> int:
    """post_stop_blocks.main(argv) in a forked child, its output to log; the child's exit code.
    step: built and warmed up in this process (--prebuild), the child measures at once."""
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            import post_stop_blocks

            post_stop_blocks.main(argv, step)  # exits itself (os._exit) after its BLOCKS line
            code = 0
        except BaseException as exc:  # noqa: BLE001 - the child must end here, whatever happened
            os.write(2, f"child failed: {type(exc).__name__}: {exc}\n".encode())
        os._exit(code)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return 124


def run_spawned(argv: list[str], log: Path, timeout_s: float) -> int:
    with open(log, "w") as out:
        try:
            return subprocess.run([sys.executable, str(HERE / "post_stop_blocks.py"), *argv], stdout=out,
                                  stderr=subprocess.STDOUT, timeout=timeout_s).returncode
        except subprocess.TimeoutExpired:
            return 124


def parse_row(log: Path) -> dict | None:
    """The process's BLOCKS row, None if it gave none (or one that does not parse)."""
    try:
        line = next((line for line in log.read_text(errors="replace").splitlines() if line.startswith("BLOCKS ")), None)
        return json.loads(line.split(" ", 1)[1]) if line is not None else None
    except (OSError, ValueError):
        return None


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--budget-s", type=float, default=200)
    p.add_argument("--modes", nargs="+", default=["control", "ours"])
    p.add_argument("--spawn", action="store_true", help="fresh interpreters, not forks")
    p.add_argument("--prebuild", action="store_true", help="CPU only: build and warm the step here, once; each "
                   "forked child measures at once (seconds a trial: many alternating trials on a noisy host)")
    cut = argv.index("--") if "--" in argv else len(argv)
    return p.parse_args(argv[:cut]), argv[cut + 1:]  # after --: post_stop_blocks.py's options


def fork_ready(blocks_args: list[str], started: float) -> bool:
    """Import what the children need; whether forking them is safe."""
    preload(blocks_args)
    import torch

    fork = True
    # torch's import starts one native thread of its own (idle; DataLoader forks its workers past
    # it every day); a Python thread running, or CUDA initialised, would make fork unsafe
    if threading.active_count() > 1 or torch.cuda.is_initialized():
        print("a Python thread runs or CUDA was initialised after the imports: fresh interpreters, not forks")
        fork = False
    print(f"imports done in {time.monotonic() - started:.1f} s ({os_threads()} OS threads); "
          f"{'forking' if fork else 'spawning'} each process", flush=True)
    return fork


def prebuilt(blocks_args: list[str], started: float) -> object:
    """The step built and warmed up here (CPU; None on CUDA, which cannot be used after fork)."""
    import post_stop_blocks

    options = post_stop_blocks.parse_args(["control", *blocks_args])
    if options.device == "cuda":
        print("--prebuild is for a CPU (CUDA cannot be used after fork): each process builds its own")
        return None
    step = post_stop_blocks.prepare(options)
    print(f"step built and warmed up here ({time.monotonic() - started:.1f} s from the start)", flush=True)
    return step


class Rounds:
    """The processes run so far, and how the next one runs (forked or spawned)."""

    def __init__(self, args: argparse.Namespace, blocks_args: list[str], fork: bool, step: object) -> None:
        self.args, self.blocks_args, self.fork, self.step = args, blocks_args, fork, step
        self.started = time.monotonic()
        self.slowest_s, self.rounds, self.failures = 0.0, 0, 0

    def left_s(self, budget_s: float) -> float:
        return budget_s - (time.monotonic() - self.started)

    def one(self, mode: str, sink: Any, budget_s: float) -> None:
        """One process of `mode`: its row (with its round) appended to sink, a line printed."""
        log = Path(self.args.out) / f"{mode}-{self.rounds}.log"
        began = time.monotonic()
        timeout_s = max(30.0, min(TIMEOUT_S, self.left_s(budget_s) + 20))
        argv = [mode, *self.blocks_args]
        code = run_forked(argv, log, timeout_s, self.step) if self.fork else run_spawned(argv, log, timeout_s)
        took_s = time.monotonic() - began
        self.slowest_s = max(self.slowest_s, took_s)
        row = parse_row(log)
        if row is not None:
            row["round"] = self.rounds
            sink.write("BLOCKS " + json.dumps(row) + "\n")
            sink.flush()
            said = f"ratio {row.get('ratio')}"
        else:
            said = f"no BLOCKS line: {log.read_text(errors='replace').strip().splitlines()[-3:]}"
        print(f"round {self.rounds} {mode}: {'fork' if self.fork else 'spawn'}, exit {code}, {took_s:.1f} s, {said}",
              flush=True)
        self.failures = 0 if row is not None else self.failures + 1
        if row is None and self.fork:
            print("a forked process gave no figures: fresh interpreters from here on", flush=True)
            self.fork, self.step = False, None


def main() -> int:
    started = time.monotonic()
    args, blocks_args = parse(sys.argv[1:])
    Path(args.out).mkdir(parents=True, exist_ok=True)
    fork = not args.spawn and fork_ready(blocks_args, started)
    step = prebuilt(blocks_args, started) if args.prebuild and fork else None
    runs = Rounds(args, blocks_args, fork, step)
    runs.started = started
    modes = args.modes
    with open(Path(args.out) / "blocks.jsonl", "a") as sink:
        while True:
            left_s = runs.left_s(args.budget_s)
            if left_s <= 0 or (runs.rounds and left_s < runs.slowest_s * len(modes) + 5):
                break  # whole rounds only
            runs.rounds += 1
            for i in range(len(modes)):
                runs.one(modes[(i + runs.rounds - 1) % len(modes)], sink, args.budget_s)  # the order turns
            if runs.failures >= 2 * len(modes):
                print(f"the last {runs.failures} processes gave no figures: stopping", flush=True)
                break
    print(f"{runs.rounds} rounds in {time.monotonic() - started:.0f} s (slowest process {runs.slowest_s:.1f} s)",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
