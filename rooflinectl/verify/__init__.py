"""`advise --verify`: measure each mechanical fix on the GPU instead of trusting its estimate.

For every finding whose rule has a rebuilder (rooflinectl.verify.rebuild), its ops are built
with the profiled shapes and dtype on this GPU and timed as profiled and with the fix (CUDA
events, warm-up, median of repeats: ceilings.measure_gpu.time_cuda; the events enclose each whole
call, so a loop that keeps the GPU waiting for the host's launches is timed with those waits).
The measured saving is the rebuilt work's profiled time x (1 - fixed / original): the speed-up
measured here, applied to the time the profile counted (the rebuilt op runs alone, with warm
caches, so its own time is not the profile's); for a loop of launches (gemm.batch-small) it is
runs x (loop - one bmm), the measured difference once per run (Trial.saving_s). A fix that is
not at least 3% faster measured "no gain": the finding is demoted. The whole verification keeps
to a time budget (a few seconds); what does not fit says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rooflinectl.analysis.advice import AdviceReport, Verification, with_verifications
from rooflinectl.analysis.advice.engine import complete_table
from rooflinectl.analysis.advice.merge import is_note
from rooflinectl.errors import EnvironmentProblem, UsageError
from rooflinectl.profile_model import ProfileData
from rooflinectl.units import seconds
from rooflinectl.verify import rebuild, rebuild_launches, rebuild_ops  # noqa: F401 - register the rebuilders
from rooflinectl.verify.registry import (
    DEFAULT_NOT_REBUILT,
    NOT_REBUILT,
    REBUILDERS,
    NotRebuilt,
    Pair,
    Trial,
)

VERIFY_BUDGET_S = 5.0  # the whole verification's timing
SETUP_BUDGET_S = 60.0  # building the fixes: torch.compile's compilation, a CUDA graph's capture
MAX_TRIAL_S = 1.0  # one trial's timed repeats, both versions
MIN_GAIN = 0.03  # a fix less than 3% faster than the original measured no gain
MEMORY_SHARE = 0.5  # a trial may take at most this share of the free device memory

__all__ = ["MIN_GAIN", "VERIFY_BUDGET_S", "check_device", "plan", "verify_report"]


def check_device(profile: ProfileData) -> str:
    """This GPU's name, once it is known to be the profile's; one sentence otherwise."""
    import torch

    if profile.ceilings.device_kind != "cuda":
        raise UsageError("--verify rebuilds GPU ops: this profile was recorded on a CPU.")
    if not torch.cuda.is_available():
        raise EnvironmentProblem("--verify times the fixes on a GPU, and this machine has none "
                                 "(torch.cuda.is_available() is False).")
    here = torch.cuda.get_device_name()
    recorded = profile.ceilings.device_name
    if recorded and here != recorded:
        raise EnvironmentProblem(f"--verify must run on the profile's GPU: it was recorded on {recorded}, "
                                 f"this machine has {here}.")
    return here


@dataclass
class _Budget:
    deadline: float
    trials_left: int
    setup_left_s: float = SETUP_BUDGET_S

    def left_s(self) -> float:
        return self.deadline - time.perf_counter()

    def next_slice_s(self) -> float:
        """The time the next trial may take: an equal share of what is left, at most MAX_TRIAL_S."""
        share = self.left_s() / max(self.trials_left, 1)
        self.trials_left -= 1
        return min(MAX_TRIAL_S, share)


def _time_trial(trial: Trial, slice_s: float, budget: _Budget | None = None) -> tuple[float, float]:
    """(original, fixed) median seconds per call; the tensors are freed afterwards. Building the
    pair and its first calls (a compilation, a graph capture) is set-up: it moves the timing
    budget's deadline and is charged to the set-up budget instead."""
    import torch

    from rooflinectl.ceilings.measure_gpu import time_cuda

    start = time.perf_counter()
    pair: Pair | None = trial.make()
    try:
        original, fixed = pair
        original()
        fixed()
        torch.cuda.synchronize()
        if budget is not None:
            setup_s = time.perf_counter() - start
            budget.deadline += setup_s
            budget.setup_left_s -= setup_s
        t_original, _, _ = time_cuda(lambda _i: original(), budget_s=slice_s / 2, min_reps=3, max_reps=30)
        t_fixed, _, _ = time_cuda(lambda _i: fixed(), budget_s=slice_s / 2, min_reps=3, max_reps=30)
    finally:
        pair = original = fixed = None  # type: ignore[assignment]  # the tensors go with the calls
        torch.cuda.empty_cache()
    return t_original, t_fixed


def _verify_one(trials: list[Trial], budget: _Budget) -> Verification:
    import torch

    original_s = fixed_s = profiled_s = saving_s = 0.0
    for trial in trials:
        free_bytes, _ = torch.cuda.mem_get_info()
        if trial.bytes_needed > MEMORY_SHARE * free_bytes:
            return Verification("not-run", f"{trial.label} needs {trial.bytes_needed / 1e9:.1f} GB of device memory")
        if budget.left_s() <= 0 or budget.setup_left_s <= 0:
            return Verification("not-run", "the verification's time budget was spent")
        try:
            t_original, t_fixed = _time_trial(trial, budget.next_slice_s(), budget)
        except Exception as exc:  # noqa: BLE001 - torch's errors (out of memory, a capture refused, an
            # unsupported op) and a profiled function's own: the finding says which, the rest go on
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            return Verification("not-run", f"{trial.label}: {type(exc).__name__}: {first}")
        original_s += t_original
        fixed_s += t_fixed
        profiled_s += trial.profiled_s
        saving_s += trial.saving_s(t_original, t_fixed)
    labels = "; ".join(t.label for t in trials)
    runs = sum(t.runs for t in trials if t.runs is not None)
    per = f"per run, applied to {runs:g} runs" if runs else "per call"
    detail = (f"{labels}: {seconds(original_s, decimals=2)} as profiled, {seconds(fixed_s, decimals=2)} fixed "
              f"{per} ({original_s / fixed_s:.2f}x), on {seconds(profiled_s, decimals=2)} of profiled time")
    gain = fixed_s < (1.0 - MIN_GAIN) * original_s and saving_s > 0
    return Verification("gain" if gain else "no-gain", detail, measured_saving_s=saving_s,
                        original_s=original_s, fixed_s=fixed_s)


def plan(report: AdviceReport, profile: ProfileData) -> tuple[dict[int, list[Trial]], dict[int, Verification]]:
    """The trials of each finding a rebuilder covers (by the finding's position), and a "not-run"
    verification for each one whose op the profile does not describe well enough. No GPU needed."""
    kernels = complete_table(profile.kernels)
    kernels.attrs.update(summary=dict(profile.summary or {}), metadata=dict(profile.metadata or {}))
    plans: dict[int, list[Trial]] = {}
    skipped: dict[int, Verification] = {}
    for n, finding in enumerate(report.findings):
        rebuilder = REBUILDERS.get(finding.rule_id)
        if rebuilder is None:
            if not is_note(finding):  # an action whose fix cannot be measured says why
                skipped[n] = Verification("not-run", NOT_REBUILT.get(finding.rule_id, DEFAULT_NOT_REBUILT))
            continue
        try:
            plans[n] = rebuilder(finding, kernels)
        except NotRebuilt as exc:
            skipped[n] = Verification("not-run", str(exc))
    return plans, skipped


def verify_report(report: AdviceReport, profile: ProfileData, budget_s: float = VERIFY_BUDGET_S) -> AdviceReport:
    """The report with each mechanical fix measured on this GPU, re-ranked by measured saving."""
    check_device(profile)
    plans, verified = plan(report, profile)
    budget = _Budget(time.perf_counter() + budget_s, sum(len(t) for t in plans.values()))
    for n, trials in plans.items():
        verified[n] = _verify_one(trials, budget)
    return with_verifications(report, verified)
