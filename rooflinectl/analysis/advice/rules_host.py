"""Rules about the host inside the counted work: synchronisations that drain the device, and host
transfers that cross the link from pageable memory."""

from __future__ import annotations

from rooflinectl.analysis.advice.common import cell_float, cell_text, summary_float
from rooflinectl.analysis.advice.registry import AdviceContext, Finding, make_finding, rule
from rooflinectl.attribution.transfers import memory_level
from rooflinectl.units import percent, seconds, si

MIN_SYNC_IDLE_SHARE = 0.05  # device idle after syncs, share of the window, from which the rule speaks


@rule(id="host.sync", title="Take host synchronisations out of the loop", severity="warning")
def host_sync(ctx: AdviceContext) -> list[Finding]:
    """Inside the counted work (the steady-state iterations, or the regions) the host waited for
    the device (cudaStreamSynchronize / cudaDeviceSynchronize / a synchronous cudaMemcpy: what
    `.item()`, `.cpu()`, `print(tensor)`, `bool(tensor)` or `torch.cuda.synchronize()` do), and
    the device then sat idle until the host launched again: at least 5% of the window.

    Estimate: without the wait the host would have queued the next kernels that much earlier, so
    per sync the device idle time after it (last kernel end before it to first kernel start after
    it), at most the time the host was blocked in it, is saved (summary host_sync_idle_s); an
    upper bound, since the host may still be slower than the device there.
    """
    if not ctx.on_gpu:
        return []
    idle_s = summary_float(ctx, "host_sync_idle_s")
    window_s = summary_float(ctx, "window_s")
    calls = summary_float(ctx, "host_sync_calls") or 0.0
    if not idle_s or not window_s or idle_s < MIN_SYNC_IDLE_SHARE * window_s:
        return []
    iterations = max(summary_float(ctx, "iterations") or 1.0, 1.0)
    ops = ctx.summary.get("host_sync_ops") or []
    named = ", ".join(f"{name} x{int(count)}" for name, count in ops) or "unknown ops"
    return [make_finding(
        "host.sync",
        evidence=(f"{int(calls)} host synchronisation(s) in the counted work ({calls / iterations:.3g} per "
                  f"iteration), from {named}; they cost {seconds(idle_s, decimals=2)} of device idle time "
                  f"({percent(idle_s / window_s)} of the {seconds(window_s, decimals=2)} window), and the host "
                  f"waited {seconds(summary_float(ctx, 'host_sync_s'), decimals=2)} in them."),
        recommendation=("Keep values on the device inside the loop: accumulate losses and metrics as tensors and "
                        "call .item() / .cpu() / print every N steps or after the loop; avoid Python `if tensor:` "
                        "and data-dependent shapes (nonzero, boolean masks) in the step; copy results out with "
                        ".to('cpu', non_blocking=True) into pinned memory and synchronise once."),
        est_saving_s=idle_s,
        numbers={"host_sync_calls": calls, "host_sync_idle_s": idle_s, "window_s": window_s},
        subject="synchronisations",
        idle_saving_s=idle_s,
    )]


@rule(id="transfer.pageable", title="Pin host memory for transfers", severity="warning")
def pageable_transfer(ctx: AdviceContext) -> list[Finding]:
    """Host-device copies in the counted work from or to pageable memory ("Memcpy HtoD (Pageable
    -> Device)"): the driver stages them through a pinned buffer, slower than the link allows,
    and they cannot overlap compute.

    Estimate: the same bytes at the pinned host-link roof: saving = time - bytes / pinned
    bandwidth, per row (with non_blocking=True the copy can also overlap compute, not counted).
    """
    if not ctx.on_gpu or ctx.kernels.empty:
        return []
    pinned = ctx.ceilings.memory_roof("host_pinned", fall_back=False)  # DRAM says nothing of the link
    if pinned is None or pinned.value <= 0:
        return []
    findings: list[Finding] = []
    for i, row in ctx.kernels.iterrows():
        kernel = cell_text(row, "kernel")
        if memory_level(kernel) != "host_pageable":
            continue
        time_s, nbytes = cell_float(row, "time_s", 0.0), cell_float(row, "bytes")
        if nbytes != nbytes or time_s <= 0:
            continue
        saving_s = max(time_s - nbytes / pinned.value, 0.0)
        if saving_s <= 0:
            continue
        to_host = "DtoH" in kernel
        findings.append(make_finding(
            "transfer.pageable",
            evidence=(f"{kernel}: {si(nbytes, 'B')} in {int(cell_float(row, 'calls', 1))} copies took "
                      f"{seconds(time_s, decimals=2)} ({si(nbytes / time_s, 'B/s')}); the pinned host link "
                      f"allows {si(pinned.value, 'B/s')} ({pinned.source})."),
            recommendation=("Copy into a pinned buffer (torch.empty(..., pin_memory=True)) with "
                             ".copy_(x, non_blocking=True), or keep the values on the device."
                             if to_host else
                             "Pin the source: DataLoader(..., pin_memory=True) or tensor.pin_memory(), then "
                             ".to('cuda', non_blocking=True) so the copy runs at the link's rate and overlaps "
                             "compute."),
            est_saving_s=saving_s,
            rows=(int(i),),
            numbers={"time_s": time_s, "bytes": nbytes, "pinned_bytes_per_s": pinned.value},
            subject=kernel,
        ))
    return findings
