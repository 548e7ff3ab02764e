"""The summary lines about iterations and setup: how the counted work was chosen, per iteration,
and what was left out (weight upload, warm-up, compilation). Renders text; computes nothing."""

from __future__ import annotations

from typing import Any

from rooflinectl.outputs.plot_names import shorten_kernel_name
from rooflinectl.units import percent, seconds, si

METHOD_WORDS = {
    "profiler_step": "ProfilerStep annotations (the script's prof.step())",
    "optimizer_step": "optimizer steps",
    "module_forward": "calls of the top-level module",
    "compiled_call": "calls of a compiled graph",
    "kernel_sequence": "repeated kernel sequences",
}


def _count(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def iteration_lines(s: dict[str, Any]) -> list[str]:
    """What was counted and how: steady-state iterations (how found), per-iteration figures, and
    a line when the loop found holds a minority of the run's work (attribution/steady.loop_share)."""
    counted, phases = _counted_lines(s), _phase_lines(s)
    if phases and s.get("iterations_method") == "none":  # not "none found": one was found, and set aside
        counted = counted[:1]
    return counted + phases


def _phase_lines(s: dict[str, Any]) -> list[str]:
    minority, share = s.get("loop_minority"), s.get("loop_kernel_share")
    if not minority or not isinstance(share, (int, float)):
        return []
    if minority == "kernel_sequence" and s.get("iterations_method") == "none":
        return [f"phases: a repeated kernel sequence held only {percent(share)} of the kernel time outside setup-like "
                "work (uploads, compilation): another phase did most of the work, so the whole run is counted"]
    return [f"phases: the loop found holds only {percent(share)} of the run's kernel time outside setup-like work "
            "(uploads, compilation); the rest ran in another phase, outside the table (`--iterations none` counts "
            "the whole run)"]


def _counted_lines(s: dict[str, Any]) -> list[str]:
    method = s.get("iterations_method")
    iterations = max(_count(s.get("iterations")), 1)
    total = s.get("total_kernel_time_s") or 0.0
    known = f"known cost {percent(s.get('known_cost_time_share'))}, unknown {percent(s.get('unknown_time_share'))}"
    launches = _count(s.get("launches"))
    if method in METHOD_WORDS:
        found, warmup = _count(s.get("iterations_found")), _count(s.get("warmup_iterations"))
        marker = str(s.get("iterations_marker") or "")
        if method == "kernel_sequence" and marker:
            marker = f"each starting with {shorten_kernel_name(marker, max_chars=40)}"
        return [
            f"steady state: {iterations} iteration(s) of {found} found by {METHOD_WORDS[method]}"
            + (f" [{marker}]" if marker else "") + f", {warmup} warm-up set apart;"
            f" {seconds(s.get('iteration_time_s'))} per iteration (median, device time)",
            f"per iteration: kernel time {seconds(total / iterations)} in {launches / iterations:.4g} launches; {known}",
        ]
    head = f"kernel time {seconds(total)} in {launches} launches"
    if method == "function" or (method is None and iterations > 1):
        return [f"{head} ({iterations} iteration(s), function mode: {seconds(total / iterations)} per iteration); {known}"]
    if method == "none":
        return [f"{head}; {known}",
                "iterations: none found (no ProfilerStep, optimizer step, repeated module call or repeated kernel "
                "sequence): the whole run is counted, setup included"]
    if method == "off":
        return [f"{head}; {known}", "iterations: not looked for (--iterations none): the whole run is counted"]
    runs = _count(s.get("region_runs"))
    if method == "regions" and runs:  # how often the region ran, not "1 iteration(s)"
        return [f"{head} (region{'s' if len(s.get('regions') or []) > 1 else ''} ran {runs} time"
                f"{'s' if runs > 1 else ''}); {known}"]
    return [f"{head}{f' ({iterations} iterations)' if iterations > 1 else ''}; {known}"]


def setup_lines(s: dict[str, Any]) -> list[str]:
    """The setup on its own line: what ran outside the steady state, with its time."""
    if s.get("iterations_method") not in METHOD_WORDS:
        return []
    parts = [f"{seconds(s.get('setup_wall_s'))} of the run's {seconds(s.get('run_wall_s'))} wall time",
             f"kernels {seconds(s.get('setup_kernel_time_s') or 0.0)} in {_count(s.get('setup_launches'))} launches"]
    if s.get("setup_transfer_time_s"):
        parts[-1] += (f" (host transfers {seconds(s['setup_transfer_time_s'])},"
                      f" {si(s.get('setup_transfer_bytes'), 'B')})")
    parts.append(f"{_count(s.get('warmup_iterations'))} warm-up iteration(s)")
    if s.get("compile_s"):
        parts.append(f"compilation {seconds(s['compile_s'])} (host)")
    return ["setup (outside the steady state; not in the table or the advice; `show --include-setup`): "
            + "; ".join(parts)]


UNPROFILED_MARKERS = {"optimizer_step": "optimizer steps", "module_forward": "calls of the top-level module",
                      "compiled_graph": "calls of the compiled graph"}


def unprofiled_lines(s: dict[str, Any]) -> list[str]:
    """--profile-steps (auto by default): the step time of the iterations that ran after the
    profiler stopped, beside the profiled one (what the profiler's own cost added to a step); or,
    in one line, why none was timed (the idle and launch figures are then estimates)."""
    steps = s.get("profile_steps")
    if steps is None:
        return _unprofiled_calls_line(s)
    option = "--profile-steps auto" if s.get("profile_steps_rule") == "auto" else f"--profile-steps {steps}"
    estimate = "; idle and launch figures are estimates"
    marker = UNPROFILED_MARKERS.get(str(s.get("profile_steps_marker")), "iterations")
    name = f" ({s['profile_steps_marker_name']})" if s.get("profile_steps_marker_name") else ""
    if not s.get("profile_steps_stopped") and not _count(s.get("profile_steps_seen")):
        return [f"{option}: no iteration was seen as the run went (no optimizer step, no eager call "
                "of an nn.Module, no call of a torch.compile'd graph): all of the run was profiled" + estimate]
    if not s.get("profile_steps_stopped"):
        return [f"{option}: the run ended after {_count(s.get('profile_steps_seen'))} {marker}{name}, too few to "
                f"stop after {steps}; all of it was profiled, nothing timed without the profiler" + estimate]
    if s.get("profile_steps_error"):
        return [f"{option}: the profiler could not be stopped ({s['profile_steps_error']}); "
                "the run went on under it" + estimate]
    timed = _count(s.get("unprofiled_steps"))
    head = f"{option}: profiled {steps} {marker}{name}, then the run went on without the profiler"
    if not timed:
        return [head + "; fewer than two iterations followed, none timed (a run of M iterations times M - N - 1)"
                + estimate]
    clock = "CUDA events" if s.get("unprofiled_timed_by") == "cuda_events" else "wall clock"
    unprofiled = s.get("unprofiled_step_time_s")
    profiled = s.get("iteration_time_s")
    versus = ""
    if isinstance(profiled, (int, float)) and isinstance(unprofiled, (int, float)) and unprofiled > 0:
        versus = f"; profiled steady state {seconds(profiled)} ({(profiled / unprofiled - 1) * 100:+.1f}%)"
    return [head, f"un-profiled step: {seconds(unprofiled)} (median of {timed} timed by {clock}){versus}",
            *_tail_line(s, float(unprofiled) if isinstance(unprofiled, (int, float)) else 0.0, timed)]


def _tail_line(s: dict[str, Any], step_s: float, timed: int) -> list[str]:
    """Work after the sampled loop's last iteration ran un-profiled and unseen: say so when it
    is more than two steps and a tenth of the timed steps' total."""
    tail_s = s.get("unprofiled_tail_s")
    if not isinstance(tail_s, (int, float)) or tail_s <= max(2 * step_s, 0.1 * step_s * timed):
        return []
    return [f"after the loop's last iteration, {seconds(tail_s)} of the run went on un-profiled and unseen (another "
            "loop or phase?): `--profile-steps all` profiles the whole run"]


def _unprofiled_calls_line(s: dict[str, Any]) -> list[str]:
    """Function mode: the calls timed without the profiler, beside the profiled ones."""
    timed = _count(s.get("unprofiled_steps"))
    unprofiled = s.get("unprofiled_step_time_s")
    if s.get("iterations_method") != "function" or not timed or not isinstance(unprofiled, (int, float)):
        return []
    clock = "CUDA events" if s.get("unprofiled_timed_by") == "cuda_events" else "wall clock"
    versus = ""
    window_s, calls = s.get("window_s"), s.get("iterations")
    if isinstance(window_s, (int, float)) and calls and unprofiled > 0:
        profiled = window_s / calls
        versus = f"; profiled call {seconds(profiled)} ({(profiled / unprofiled - 1) * 100:+.1f}%)"
    return [f"un-profiled call: {seconds(unprofiled)} (median of {timed} timed by {clock} without the profiler){versus}"]
