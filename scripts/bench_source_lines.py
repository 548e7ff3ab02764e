"""What source-line capture (capture/source_lines.py) costs per torch call: figures for
docs/benchmarks/source-lines.md.

python scripts/bench_source_lines.py [--calls 20000] [--repeats 7]

Loops of small torch calls, timed under a CPU torch.profiler recording shapes (as rooflinectl
records) without and with the source-line mode, and without any profiler with and without the
mode: (1) a one-element in-place add called from this file (the user's frame is the caller's);
(2) an nn.Linear(4, 4) module call (the torch call comes from torch's Linear.forward, three
library frames below this file's frame: the walk up to the user's frame is longer); (3) the same
add called from a user frame under 30 nested user functions (the walk stops at the first user
frame, so depth above it costs nothing). Each case runs without and with the mode back to back,
`--repeats` times: the medians, and the median of the pairs' differences (what the mode adds),
in microseconds per torch call.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import time
from collections.abc import Callable

import torch

from rooflinectl.capture.run.source_lines import source_lines


def _adds(n: int, t: torch.Tensor) -> None:
    for _ in range(n):
        t.add_(1)


def _linears(n: int, layer: torch.nn.Module, x: torch.Tensor) -> None:
    for _ in range(n):
        layer(x)


def _deep(depth: int, work: Callable[[], None]) -> None:
    if depth == 0:
        work()
    else:
        _deep(depth - 1, work)


def _once_s(work: Callable[[], None], profiled: bool, mode: bool) -> float:
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True)
    if profiled:
        prof.start()
    try:
        with source_lines({}) if mode else _nothing():
            start = time.perf_counter()
            work()
            return time.perf_counter() - start
    finally:
        if profiled:
            prof.stop()


def _paired_us(work: Callable[[], None], calls: int, repeats: int, profiled: bool) -> tuple[float, float, float]:
    """(without, with, added) microseconds per call: without and with the mode measured back to back,
    `repeats` times; the medians of each and of the pairs' differences (a shared, busy machine
    shifts both of a pair alike)."""
    pairs = [(_once_s(work, profiled, False), _once_s(work, profiled, True)) for _ in range(repeats)]
    scale = 1e6 / calls
    return (statistics.median(a for a, _ in pairs) * scale, statistics.median(b for _, b in pairs) * scale,
            statistics.median(b - a for a, b in pairs) * scale)


class _nothing:  # noqa: N801 - a stand-in context manager
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=25)
    args = p.parse_args()
    n = args.calls
    t, layer, x = torch.zeros(1), torch.nn.Linear(4, 4), torch.randn(1, 4)
    cases = {"add_ (user frame calls it)": lambda: _adds(n, t),
             "nn.Linear call (via torch's Linear.forward)": lambda: _linears(n, layer, x),
             "add_ under 30 nested user frames": lambda: _deep(30, lambda: _adds(n, t))}
    _adds(1000, t)  # warm up
    rows = []
    for name, work in cases.items():
        figures = {}
        for prof, label in ((True, "profiled"), (False, "plain")):
            none, mode, added = _paired_us(work, n, args.repeats, prof)
            figures.update({f"{label}_none_us": none, f"{label}_mode_us": mode, f"added_{label}_us": added})
        rows.append({"case": name, **{k: round(v, 3) for k, v in figures.items()}})
    print(json.dumps({"machine": platform.processor() or platform.machine(), "python": platform.python_version(),
                      "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "date": dt.date.today().isoformat(), "calls": n, "repeats": args.repeats}))
    print("| case | profiled, no mode | profiled, mode | added | no profiler, no mode | no profiler, mode | added |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['case']} | {r['profiled_none_us']:.2f} | {r['profiled_mode_us']:.2f} | "
              f"{r['added_profiled_us']:+.2f} | {r['plain_none_us']:.2f} | {r['plain_mode_us']:.2f} | "
              f"{r['added_plain_us']:+.2f} |")


if __name__ == "__main__":
    main()
