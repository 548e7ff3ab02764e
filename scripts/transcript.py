"""An 80-column session on a real model, as a user sees it: `profile`, `show`, `advise`, and `diff`
of two profiles of the same script, each run with COLUMNS=80 and its output piped (issue 35).

Usage: python3 scripts/transcript.py OUT_DIR [--device cuda|cpu] [--small]

The commands run in OUT_DIR/session (examples/ linked in), so the transcript shows the commands a
user types there (`rooflinectl profile examples/real/gpt2_forward.py -- ...`). Writes
OUT_DIR/transcript.md (the markdown docs/transcript.md holds: device, date, each command and its
output, stdout and stderr together, in a code block) and prints CHECK lines: each command's exit
code, and rooflinectl's own lines (the script's TIMING/OUTPUT lines are the user's) within 80
columns with no trailing spaces; a FIGURE line with diff's step interval for the two profiles of
the same script, and a CHECK that --fail-on-regression 5 does not fail on them.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = "examples/real/gpt2_forward.py"
GPU_ARGS = ["--layers", "12", "--batch", "8", "--seq", "1024", "--steps", "20"]  # GPT-2 small, bf16
SMALL_ARGS = ["--layers", "2", "--batch", "1", "--seq", "64", "--dtype", "fp32", "--steps", "4"]
WIDTH = 80
USER_LINE_PREFIXES = ("TIMING ", "OUTPUT ")  # printed by the profiled script itself


def commands(device: str, small: bool) -> list[list[str]]:
    """The session: profile twice (the second to its own file), then show, advise and diff."""
    script_args = ["--device", device] + (SMALL_ARGS if small else GPU_ARGS)
    return [
        ["profile", SCRIPT, "--", *script_args],
        ["show", "--top", "10"],
        ["advise"],
        ["profile", SCRIPT, "-o", "again.profile.json", "--top", "5", "--", *script_args],
        ["diff", "rooflinectl.profile.json", "again.profile.json", "--fail-on-regression", "5", "--top", "8"],
    ]


def run_one(args: list[str], cwd: Path) -> tuple[int, str]:
    """One command as a user runs it in an 80-column terminal, piped: stdout and stderr together."""
    env = dict(os.environ, COLUMNS=str(WIDTH), PYTHONPATH=f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    env.pop("LINES", None)
    proc = subprocess.run([sys.executable, "-m", "rooflinectl", *args], cwd=cwd, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    return proc.returncode, proc.stdout


def bad_lines(output: str) -> list[str]:
    """rooflinectl's own lines wider than 80 columns or ending in a space."""
    return [line for line in output.splitlines()
            if not line.startswith(USER_LINE_PREFIXES) and (len(line) > WIDTH or line != line.rstrip())]


def noise_figure(session: Path) -> bool:
    """FIGURE: diff's step interval for the two profiles of the same script; CHECK: no regression
    outside the noise at 5% (the same script twice)."""
    import json

    rc, output = run_one(["diff", "rooflinectl.profile.json", "again.profile.json", "--fail-on-regression", "5",
                          "--format", "json"], session)
    try:
        report = json.loads(output)
    except ValueError:
        print(f"CHECK diff --format json: exit {rc}, not JSON: FAILED")
        return False
    noise = report.get("noise") or {}
    interval = report.get("step_interval_pct")
    interval_text = f"{interval[0]:+.1f}% to {interval[1]:+.1f}%" if interval else "none"
    print(f"FIGURE diff of the same script: total {report['measure']} {report['total_delta_pct']:+.1f}%, step "
          f"95% interval {interval_text} from {noise.get('base_n')} and {noise.get('new_n')} "
          f"{noise.get('source')}; regressions {report['regressions']}; within the noise {report['within_noise']}")
    print(f"CHECK same script twice, --fail-on-regression 5: exit {rc} ({'ok' if rc == 0 else 'FAILED'})")
    return rc == 0


def header(device: str) -> str:
    import torch

    if device == "cuda" and torch.cuda.is_available():
        name = torch.cuda.get_device_name(0)
    else:
        name = platform.processor() or platform.machine()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"# An 80-column session\n\n`profile`, `show`, `advise` and `diff` on a GPT-2-style forward "
            f"(`{SCRIPT}`, random weights from a `transformers` config), each run with `COLUMNS=80` and "
            f"its output piped, stdout and stderr together, as `scripts/transcript.py` records it.\n\n"
            f"- device: {name} ({device})\n- date: {date}\n- torch {torch.__version__}\n"
            f"- the script's own lines (`TIMING`, `OUTPUT`) are left as it prints them\n")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir", type=Path)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--small", action="store_true", help="tiny sizes (a CPU check of this script)")
    args = p.parse_args()
    session = args.out_dir / "session"
    session.mkdir(parents=True, exist_ok=True)
    link = session / "examples"
    if not link.exists():
        link.symlink_to(REPO / "examples")
    parts = [header(args.device)]
    failed = 0
    for cmd in commands(args.device, args.small or args.device == "cpu"):
        shown = "rooflinectl " + " ".join(cmd)
        print(f"== {shown}", flush=True)
        try:
            rc, output = run_one(cmd, session)
        except subprocess.TimeoutExpired:
            rc, output = 124, "(timed out after 300 s)\n"
        print(output, end="", flush=True)
        wide = bad_lines(output)
        ok = rc in (0, 1) and not wide  # advise and diff exit 1 on findings / a regression
        failed += not ok
        print(f"CHECK {shown[:60]}: exit {rc}, {len(wide)} line(s) over {WIDTH} columns or with trailing "
              f"spaces: {'ok' if ok else 'FAILED'}")
        for line in wide[:3]:
            print(f"  {len(line)}: {line!r}")
        parts.append(f"\n```console\n$ COLUMNS=80 {shown}\n{output.rstrip()}\n")
        parts.append(f"$ echo $?\n{rc}\n```\n")
    failed += not noise_figure(session)
    (args.out_dir / "transcript.md").write_text("".join(parts))
    print(f"CHECK transcript written to {args.out_dir / 'transcript.md'}: {'ok' if not failed else f'{failed} FAILED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
