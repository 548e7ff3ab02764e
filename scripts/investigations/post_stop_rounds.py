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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--budget-s", type=float, default=200)
    p.add_argument("--modes", nargs="+", default=["control", "ours"])
    p.add_argument("--spawn", action="store_true", help="fresh interpreters, not forks")
    p.add_argument("--prebuild", action="store_true", help="CPU only: build and warm the step here, once; each "
                   "forked child measures at once (seconds a trial: many alternating trials on a noisy host)")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args, blocks_args = p.parse_args(argv[:cut]), argv[cut + 1:]  # after --: post_stop_blocks.py's options
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    fork = not args.spawn
    if fork:
        preload(blocks_args)
        # torch's import starts one native thread of its own (idle; DataLoader forks its workers
        # past it every day); a Python thread running would make fork unsafe
        if threading.active_count() > 1:
            print(f"{threading.active_count()} Python threads run after the imports: fresh interpreters, not forks")
            fork = False
        import torch

        if torch.cuda.is_initialized():
            print("CUDA was initialised by the imports: fresh interpreters, not forks")
            fork = False
        print(f"imports done in {time.monotonic() - start:.1f} s ({os_threads()} OS threads); "
              f"{'forking' if fork else 'spawning'} each process", flush=True)
    step = None
    if args.prebuild and fork:
        import post_stop_blocks

        blocks_options = post_stop_blocks.parse_args(["control", *blocks_args])
        if blocks_options.device == "cuda":
            print("--prebuild is for a CPU (CUDA cannot be used after fork): each process builds its own")
        else:
            step = post_stop_blocks.prepare(blocks_options)
            print(f"step built and warmed up here ({time.monotonic() - start:.1f} s from the start)", flush=True)
    slowest_s, rounds, failures = 0.0, 0, 0
    with open(out / "blocks.jsonl", "a") as sink:
        while True:
            left_s = args.budget_s - (time.monotonic() - start)
            if left_s <= 0 or (rounds and left_s < slowest_s * len(args.modes) + 5):
                break
            rounds += 1
            for i in range(len(args.modes)):
                mode = args.modes[(i + rounds - 1) % len(args.modes)]
                log = out / f"{mode}-{rounds}.log"
                began = time.monotonic()
                left_s = args.budget_s - (time.monotonic() - start)
                timeout_s = max(30.0, min(TIMEOUT_S, left_s + 20))
                code = run_forked([mode, *blocks_args], log, timeout_s, step) if fork else \
                    run_spawned([mode, *blocks_args], log, timeout_s)
                took_s = time.monotonic() - began
                slowest_s = max(slowest_s, took_s)
                row = parse_row(log)
                if row is not None:
                    row["round"] = rounds
                    sink.write("BLOCKS " + json.dumps(row) + "\n")
                    sink.flush()
                    said = f"ratio {row.get('ratio')}"
                else:
                    said = f"no BLOCKS line: {log.read_text(errors='replace').strip().splitlines()[-3:]}"
                print(f"round {rounds} {mode}: {'fork' if fork else 'spawn'}, exit {code}, {took_s:.1f} s, {said}",
                      flush=True)
                failures = 0 if row is not None else failures + 1
                if row is None and fork:
                    print("a forked process gave no figures: fresh interpreters from here on", flush=True)
                    fork = False
            if failures >= 2 * len(args.modes):
                print(f"the last {failures} processes gave no figures: stopping", flush=True)
                break
    print(f"{rounds} rounds in {time.monotonic() - start:.0f} s (slowest process {slowest_s:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
