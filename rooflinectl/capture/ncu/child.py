"""What runs under ncu: the user's program again, with the counted part marked for ncu.

python -m rooflinectl.capture.ncu.child --status FILE [--regions] script PATH [ARGS...]
python -m rooflinectl.capture.ncu.child --status FILE [--regions] function PATH NAME --warmup W --iters I

The counted part is what the profiled run counted: the `rooflinectl.region` blocks when the
program has any (--regions), else the whole script, or the `--iters` calls of a function after
its unprofiled warm-up. ncu runs with --profile-from-start off; this process calls
cudaProfilerStart/Stop around the counted part, so ncu sees, numbers and measures only those
launches. The program runs as `rooflinectl profile` ran it (its own __main__, argv and
sys.path[0]); its exit code becomes ours, and a small status file says how it ended.
"""

from __future__ import annotations

import argparse
import json
import runpy
import sys
from pathlib import Path

from rooflinectl.atomic import write_atomic
from rooflinectl.errors import RooflineError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rooflinectl.capture.ncu.child")
    p.add_argument("--status", required=True)
    p.add_argument("--regions", action="store_true", help="count only rooflinectl.region blocks")
    sub = p.add_subparsers(dest="mode", required=True)
    script = sub.add_parser("script")
    script.add_argument("path")
    script.add_argument("args", nargs=argparse.REMAINDER)
    function = sub.add_parser("function")
    function.add_argument("path")
    function.add_argument("name")
    function.add_argument("--warmup", type=int, default=3)
    function.add_argument("--iters", type=int, default=10)
    return p


def _counted(regions: bool):
    """Context for the counted part: armed regions, or one profiler range around it."""
    from contextlib import contextmanager

    import torch

    from rooflinectl.capture.run.region import arm_counter_ranges

    cuda = torch.cuda.is_available()  # without CUDA (tests) there is nothing to count

    @contextmanager
    def block():
        if regions:
            arm_counter_ranges(True)
        elif cuda:
            torch.cuda.profiler.start()
        try:
            yield
        finally:
            if regions:
                arm_counter_ranges(False)
            elif cuda:
                torch.cuda.profiler.stop()
    return block()


def run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        code, completed = _run_program(args)
    except RooflineError as exc:  # e.g. FILE.py has no such function: one sentence, as the CLI says it
        print(f"rooflinectl: {exc}", file=sys.stderr)
        code, completed = exc.exit_code, False
    write_atomic(args.status, json.dumps({"exit_code": code, "completed": completed}))
    return code


def _run_program(args: argparse.Namespace) -> tuple[int, bool]:
    from rooflinectl.capture.run.runner import _as_main_script, _guarded, load_function

    path = Path(args.path)
    if args.mode == "script":
        script_args = args.args[1:] if args.args[:1] == ["--"] else args.args

        def body() -> None:
            with _counted(args.regions):
                runpy.run_path(str(path), run_name="__main__")

        with _as_main_script(path, script_args):
            code, completed = _guarded(body)
    else:
        def body() -> None:
            import torch

            fn, fargs, fkwargs = load_function(path, args.name)
            for _ in range(max(args.warmup, 0)):
                fn(*fargs, **fkwargs)
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            with _counted(args.regions):
                for _ in range(args.iters):
                    fn(*fargs, **fkwargs)
                if torch.cuda.is_available():
                    torch.cuda.synchronize()

        with _as_main_script(path, []):
            code, completed = _guarded(body)
    return code, completed


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
