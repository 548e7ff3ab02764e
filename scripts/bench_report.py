"""Size and open time of the HTML report (`rooflinectl report`), for docs/benchmarks/report.md.

python scripts/bench_report.py groups OUT.profile.json --groups 1000 [--source PROFILE]
    a profile of N kernel groups: the source profile's rows (default: the H200 MLP profile in
    tests/data) repeated under N distinct module names (`layers.K`), times and shares as recorded
    (shares renormalised); synthetic, and it says so in its command.
python scripts/bench_report.py screenshots PROFILE [PROFILE] OUT_DIR
    the README's pictures: the roofline with the largest group hovered, and the advice with its
    first finding's kernels marked in the table (two profiles: the comparison chart).
python scripts/bench_report.py measure PROFILE [PROFILE ...] [--opens 3] [--screenshot DIR]
    per profile: the seconds to build and write the report (in this process, after imports), the
    file's size, and the time headless Chromium takes to open it: from navigation to the page's
    `ready` mark, measured by the test's DevTools client (wall) and by the page itself
    (performance.now() when it has drawn everything); the median of --opens opens.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from cdp_pipe import Browser, find_chromium  # noqa: E402

from rooflinectl.cli.report_cmd import load_report_profiles  # noqa: E402
from rooflinectl.html_report import report_document  # noqa: E402
from rooflinectl.outputs.profile_file import load_profile, save_profile  # noqa: E402
from rooflinectl.outputs.report_html import write_report  # noqa: E402

SOURCE = ROOT / "tests" / "data" / "report_mlp.profile.json"  # the report fixture: 26 groups (tests/report_profiles.py)


def make_groups(out: Path, groups: int, source: Path) -> None:
    import pandas as pd

    data = load_profile(source)
    rows = data.kernels
    copies = []
    for k in range(-(-groups // len(rows))):
        copy = rows.copy()
        copy["module"] = [f"layers.{k}" + (f".{m}" if m else "") for m in copy["module"]]
        copies.append(copy)
    table = pd.concat(copies, ignore_index=True).head(groups)
    table["time_share"] = table["time_s"] / table["time_s"].sum()
    data.kernels = table.sort_values("time_s", ascending=False, ignore_index=True)
    data.metadata = {**data.metadata, "command": ["scripts/bench_report.py", "groups", str(groups), source.name]}
    save_profile(data, out)
    print(f"wrote {out}: {len(table)} groups")


def measure(paths: list[Path], opens: int, screenshots: Path | None) -> None:
    executable = find_chromium()
    if executable is None:
        sys.exit("no chromium on PATH (apt-get install chromium)")
    print(f"machine: {platform.node()}, {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"load average before: {' '.join(f'{v:.1f}' for v in os.getloadavg())} on {os.cpu_count()} CPUs")
    print("| profile | groups | build+write s | size MB | open s (wall): median (min-max) | page ready ms: median (min-max) |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp, Browser(executable) as browser:
        for path in paths:
            mode, profiles, names, _ = load_report_profiles((str(path),))
            start = time.perf_counter()
            page = write_report(report_document(mode, profiles, names), Path(tmp) / f"{path.stem}.html")
            build_s = time.perf_counter() - start
            walls, ready = [], []
            for _ in range(opens):
                browser.call("Page.navigate", {"url": "about:blank"}, session=True)
                walls.append(browser.open(page, timeout_s=120))
                ready.append(browser.evaluate("window.rooflineReport.readyMs"))
            errors = browser.errors()
            if screenshots is not None:
                browser.screenshot(screenshots / f"{path.stem}.png")
            groups = len(profiles[0].kernels)
            print(f"| {path.name} | {groups} | {build_s:.2f} | {page.stat().st_size / 1e6:.2f} | "
                  f"{statistics.median(walls):.2f} ({min(walls):.2f}-{max(walls):.2f}) | "
                  f"{statistics.median(ready):.0f} ({min(ready):.0f}-{max(ready):.0f}) |"
                  + (f" console errors: {json.dumps(errors)[:200]}" if errors else ""))
    print(f"load average after: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")


def screenshots(paths: list[Path], out_dir: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp, Browser(find_chromium() or "chromium", width=1400, height=1000) as b:
        mode, profiles, names, _ = load_report_profiles(tuple(str(p) for p in paths))
        page = write_report(report_document(mode, profiles, names), Path(tmp) / "report.html")
        b.open(page)
        stem = "report-comparison" if mode == "compare" else "report"
        b.evaluate("document.getElementById('roofline').scrollIntoView(); 1")
        largest = b.evaluate("(function () { var best = null, t = -1, rows = window.rooflineReport.view().rows;"
                             " document.querySelectorAll('#roofline-chart path.point').forEach(function (p) {"
                             " var tr = p.closest('.trace').__data__[0].trace; if (tr.meta !== 'group') return;"
                             " var i = tr.customdata[p.__data__.i]; if (rows.time_s[i] > t) { t = rows.time_s[i];"
                             " var r = p.getBoundingClientRect(); best = [r.left + r.width / 2, r.top + r.height / 2]; } });"
                             " return best; })()")
        b.mouse("mouseMoved", largest[0], largest[1])
        time.sleep(0.5)
        b.screenshot(out_dir / f"{stem}-roofline.png")
        if mode != "compare":
            b.mouse("mouseMoved", 2, 2)
            b.evaluate("document.querySelector('.finding').click(); document.getElementById('advice').scrollIntoView(); 1")
            b.screenshot(out_dir / f"{stem}-advice.png")
            b.evaluate("document.getElementById('summary').scrollIntoView(); window.scrollBy(0, -60); 1")
            b.screenshot(out_dir / f"{stem}-summary.png")
            if b.evaluate("!!document.getElementById('clock-chart')"):
                b.screenshot(out_dir / f"{stem}-clocks.png", selector="#clocks")
        print(f"wrote {stem}-*.png to {out_dir}; console errors: {b.errors()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    g = sub.add_parser("groups")
    g.add_argument("out", type=Path)
    g.add_argument("--groups", type=int, default=1000)
    g.add_argument("--source", type=Path, default=SOURCE)
    m = sub.add_parser("measure")
    m.add_argument("profiles", type=Path, nargs="+")
    m.add_argument("--opens", type=int, default=3)
    m.add_argument("--screenshot", type=Path, default=None)
    sc = sub.add_parser("screenshots")
    sc.add_argument("paths", type=Path, nargs="+")
    args = parser.parse_args()
    if args.what == "screenshots":
        screenshots(args.paths[:-1], args.paths[-1])
    elif args.what == "groups":
        make_groups(args.out, args.groups, args.source)
    else:
        measure(args.profiles, args.opens, args.screenshot)


if __name__ == "__main__":
    main()
