"""`rooflinectl kernels`: run the reference kernels (kernels/), check them, place them on the roofline."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import sys
from pathlib import Path
from typing import Any

import click

from rooflinectl._version import __version__
from rooflinectl.cli.common import WIDE_WIDTH, emit, format_option, terminal_width
from rooflinectl.errors import EXIT_FINDINGS, EnvironmentProblem, UsageError

CHART_SUFFIXES = (".png", ".svg", ".pdf")
RESTART_ENV = "ROOFLINECTL_KERNELS_RESTARTED"
CHART_LABELS = 12  # groups named on the chart, longest first
INTERPRETER_NOTE = ("Triton interpreter on the CPU: the checks and the declared costs are real; the times are "
                    "the interpreter's, far slower than any GPU, and say nothing about speed.")


def _selected(specs: dict[str, Any], only: tuple[str, ...]) -> list[Any]:
    names = [n.strip() for value in only for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in specs]
    if unknown:
        raise UsageError(f"no reference kernel named {', '.join(unknown)}; the reference kernels are: {', '.join(specs)}")
    return [specs[n] for n in names] if names else list(specs.values())


def _check_paths(output: str, plot_path: str | None) -> None:
    """Refuse bad paths before minutes of kernels, not after."""
    for path in (output, plot_path):
        if path is not None and not Path(path).resolve().parent.is_dir():
            raise UsageError(f"cannot write {path}: its folder does not exist")
    if plot_path is not None and Path(plot_path).suffix.lower() not in CHART_SUFFIXES:
        raise UsageError(f"cannot write {plot_path}: the chart is saved as .png, .svg or .pdf")


def run_suite(selected: list[Any], size: str, device: Any) -> list[dict[str, Any]]:
    """Each reference kernel's entry: what it teaches, its target, every variant's result (as dicts)."""
    from rooflinectl.outputs.plot_names import ellipsize  # pandas: not at --help
    from rooflinectl_kernels.harness import (
        run_kernel,  # imported after load_reference_kernels fixed the mode
    )

    entries = []
    for i, spec in enumerate(selected, 1):
        click.echo(ellipsize(f"[{i}/{len(selected)}] {spec.name}: {spec.concept}", terminal_width()), err=True)
        results = run_kernel(spec, size, device)
        entries.append({
            "name": spec.name, "concept": spec.concept, "family": spec.family,
            "shape": dict(spec.shapes[size]),
            "target": dataclasses.asdict(spec.target) if spec.target else None,
            "results": [r.to_dict() for r in results],
        })
    return entries


def _restart_in_mode(interpret: bool) -> None:
    """Run this command again in a fresh process with TRITON_INTERPRET set from the start (torch
    imports triton before any command runs, so the interpreter cannot be switched on later).
    Only once, and only from the command line (never replacing a test runner or a notebook):
    otherwise the refusal is reported."""
    if os.environ.get(RESTART_ENV) or Path(sys.argv[0]).name not in ("rooflinectl", "__main__.py"):
        return
    env = {**os.environ, RESTART_ENV: "1", "TRITON_INTERPRET": "1" if interpret else "0"}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "rooflinectl", *sys.argv[1:]], env)


def _failed_kernels(entries: list[dict[str, Any]]) -> list[str]:
    """Triton variants that raised or missed their reference (library rows are only reported)."""
    return [f"{e['name']} / {r['variant']}" for e in entries for r in e["results"]
            if r["kind"] == "triton" and (r.get("error") or not (r.get("check") or {}).get("ok", False))]


# Its own default file: a run of the reference kernels never replaces the profile of the user's
# own program (`profile`'s rooflinectl.profile.json), which show/plot/advise read by default.
KERNELS_PROFILE_PATH = "rooflinectl.kernels.profile.json"


def kernel_list(specs: list[Any], width: int) -> str:
    """One reference kernel a line, its concept wrapped under itself between words to `width` columns."""
    import textwrap

    name_width = max([len(spec.name) for spec in specs] + [12]) + 1
    wrap = textwrap.TextWrapper(width=width, subsequent_indent=" " * name_width, break_long_words=False,
                                break_on_hyphens=False)
    return "\n".join(wrap.fill(f"{spec.name:{name_width - 1}} {spec.concept}") for spec in specs)


@click.command("kernels")
@click.option("--only", multiple=True, metavar="NAME", help="Run these reference kernels only (repeat or comma-separate).")
@click.option("--size", type=click.Choice(["small", "large"]), default=None,
              help="Input sizes: large (the default on a GPU: inputs beyond L2, the targets' sizes) or small.")
@click.option("--plot", "plot_path", default=None, metavar="FILE", help="Also write the roofline chart (.png, .svg, .pdf).")
@format_option("kernels", from_output=False)
@click.option("-o", "--output", default=KERNELS_PROFILE_PATH, show_default=True,
              help="The profile file of the run (for show, plot, advise); not `profile`'s default file.")
@click.option("--interpret", is_flag=True,
              help="No GPU: run the small sizes on the CPU through Triton's interpreter (to learn, not to time).")
@click.option("--wide", is_flag=True, help="Every column of the table, whatever the terminal's width.")
@click.option("--list", "list_only", is_flag=True, help="List the reference kernels and exit.")
def command(only: tuple[str, ...], size: str | None, plot_path: str | None, fmt: str | None, output: str,
            interpret: bool, wide: bool, list_only: bool) -> None:
    """Run the reference kernels and place them on the roofline.

    Each is checked against its torch reference, timed, and drawn beside the library equivalent
    on the same shapes. The profile goes to its own file,
    rooflinectl.kernels.profile.json (-o), never over `profile`'s rooflinectl.profile.json.

    The table fits the terminal as `show` does (--wide: every column). Exit codes: 0 every
    Triton kernel matched its reference; 1 one failed or did not match (a torch variant that
    differs from the reference is reported, not failed); 2 usage error; 3 no GPU (use
    --interpret) or no triton.
    """
    import torch

    interpret = interpret or os.environ.get("TRITON_INTERPRET") == "1"
    if interpret and size == "large":
        raise UsageError("--interpret runs the small sizes only: the large ones would take hours on the CPU")
    size = size or ("small" if interpret else "large")
    if not list_only:
        _check_paths(output, plot_path)
        if not interpret and not torch.cuda.is_available():
            raise EnvironmentProblem("no CUDA GPU here, and the reference kernels are timed on one; "
                                     "`rooflinectl kernels --interpret` runs the small sizes on the CPU through "
                                     "Triton's interpreter (to learn from, not to time)")
    from rooflinectl.kernel_suite import TritonModeFixed, load_reference_kernels

    try:
        package = load_reference_kernels(interpret)
    except TritonModeFixed:
        _restart_in_mode(interpret)
        raise
    selected = _selected(package.KERNELS, only)
    if list_only:
        click.echo(kernel_list(selected, min(terminal_width(), 100)))
        return
    device_kind = "cpu" if interpret else "cuda"
    entries = run_suite(selected, size, torch.device(device_kind))
    _report(entries, device_kind=device_kind, size=size, interpret=interpret, fmt=fmt or "table", output=output,
            plot_path=plot_path, wide=wide)
    failed = _failed_kernels(entries)
    if failed:
        click.echo(f"rooflinectl: {len(failed)} kernel(s) failed or missed their reference: {', '.join(failed)}",
                   err=True)
        click.get_current_context().exit(EXIT_FINDINGS)


def _report(entries: list[dict[str, Any]], *, device_kind: str, size: str, interpret: bool, fmt: str, output: str,
            plot_path: str | None, wide: bool = False) -> None:
    from rooflinectl.analysis.kernel_suite import compare_variants, target_statuses
    from rooflinectl.ceilings import current_ceilings
    from rooflinectl.kernel_suite import suite_profile, suite_table
    from rooflinectl.outputs.formats import render
    from rooflinectl.outputs.profile_file import save_profile

    ceilings = current_ceilings(device_kind)
    results = [r for e in entries for r in e["results"]]
    table = suite_table(results, ceilings, device_kind)
    report = compare_variants(table, ceilings)
    extra = {"size": size, "interpreted": interpret, "kernels": [e["name"] for e in entries]}
    profile = suite_profile(table, ceilings, device_kind, command=["rooflinectl", *sys.argv[1:]], extra=extra)
    save_profile(profile, output)
    if plot_path is not None:
        from rooflinectl.analysis.charts import chart_model
        from rooflinectl.outputs.plot import plot_profile, save_figure

        title = f"Reference kernels on {ceilings.device_name} (--size {size})"
        try:
            save_figure(plot_profile(profile, model=chart_model(profile), top=CHART_LABELS, title=title), plot_path)
        except Exception as exc:  # the chart is a by-product: the figures and the profile must still come out
            click.echo(f"rooflinectl: could not draw {plot_path} ({type(exc).__name__}: {exc}); "
                       f"`rooflinectl plot {output}` draws it from the profile", err=True)
            plot_path = None
    if fmt == "json":
        header = {"tool_version": __version__, "device_name": ceilings.device_name, "device_kind": device_kind,
                  "created": profile.metadata["created"], "size": size, "interpreted": interpret,
                  "torch": profile.metadata.get("torch"), "triton": profile.metadata.get("triton"),
                  "cuda": profile.metadata.get("cuda"), "profile": output, "chart": plot_path}
        emit(render("kernels", fmt, report=report, entries=entries, ceilings=ceilings, header=header), None, 0)
        return
    text = f"device: {ceilings.device_name} ({device_kind}); size {size}; {len(entries)} reference kernel(s)"
    if interpret:
        text += "\n" + INTERPRETER_NOTE
    width = WIDE_WIDTH if wide else terminal_width()
    targets = target_statuses(report, entries) if device_kind == "cuda" and size == "large" else None
    emit(render("kernels", fmt, report=report, entries=entries, ceilings=ceilings, header=text, targets=targets,
                with_verdicts=not interpret, width=None if wide else width), None, width)
    click.echo(f"wrote {output}" + (f" and {plot_path}" if plot_path else "")
               + f" ({dt.datetime.now().strftime('%H:%M:%S')})", err=True)
