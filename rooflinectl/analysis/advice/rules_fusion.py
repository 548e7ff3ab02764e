"""Rules about memory traffic between kernels: fusion of element-wise chains, attention."""

from __future__ import annotations

from collections import Counter, defaultdict

import pandas as pd

from rooflinectl.analysis.advice.common import (
    FUSIBLE_FAMILIES,
    cell_float,
    cell_text,
    element_bytes,
    known_cost,
    launch_sequence,
    main_shape,
    numel,
    parse_shapes,
    time_per_call_s,
    where,
)
from rooflinectl.analysis.advice.registry import AdviceContext, Finding, make_finding, rule
from rooflinectl.units import percent, seconds, si


def _fusible(row: pd.Series) -> bool:
    return (
        cell_text(row, "op_family") in FUSIBLE_FAMILIES
        and cell_text(row, "origin") != "inductor"
        and cell_text(row, "bound") in ("memory", "latency")
        and known_cost(row)  # the estimate uses bytes and achieved bandwidth, not the roof
        and cell_float(row, "bytes", 0.0) > 0
    )


def _chains_from_sequence(kernels: pd.DataFrame, seq: list[int]) -> Counter[tuple[int, ...]]:
    """Maximal runs of consecutive fusible launches over tensors of one size, in launch order
    (a row may come more than once), counted by pattern.

    Within one call of a module, a row may repeat: GPT-2's tanh GELU launches one `mul` group
    three times among its eight ops, and compiling the module fuses all eight. A row seen again
    after launches of other modules, or with no module path (or an optimizer's per-parameter
    update), ends the run instead: that is the next iteration's (or parameter's) chain. A run
    stays inside one module's code (see _nested), which the fix then names.
    """
    fusible = {i for i in range(len(kernels)) if _fusible(kernels.iloc[i])}
    sizes = {i: numel(main_shape(kernels.iloc[i].get("shapes", ""))) for i in fusible}
    modules = {i: cell_text(kernels.iloc[i], "module") for i in fusible}
    chains: Counter[tuple[int, ...]] = Counter()
    run: list[int] = []
    for pos in [*seq, -1]:
        if (run and pos in fusible and sizes[pos] == sizes[run[0]] and _nested(modules[run[0]], modules[pos])
                and (pos not in run or _same_call(run, pos, modules))):
            run.append(pos)
            continue
        if len(run) >= 2:
            chains[tuple(run)] += 1
        run = [pos] if pos in fusible else []
    return chains


def _nested(first: str, module: str) -> bool:
    """Whether a launch in `module` may join a run that began in `first`: the same module, one
    inside the other (GPT-2's residual add in h.0 and the layer norm in h.0.ln_2), or unknown.
    A sibling (the next block's activation) starts a new run: the fix names one module's code."""
    return not first or not module or first == module or module.startswith(first + ".") or first.startswith(module + ".")


def _same_call(run: list[int], pos: int, modules: dict[int, str]) -> bool:
    """Whether a row coming again continues the run: yes when every launch since its last one ran
    in the same named module (one call of it); not for an optimizer's per-parameter updates."""
    module = modules[pos]
    if not module or module.startswith("optimizer "):
        return False
    last = len(run) - 1 - run[::-1].index(pos)
    return all(modules[q] == module for q in run[last:])


def _chains_without_sequence(kernels: pd.DataFrame) -> Counter[tuple[int, ...]]:
    """No launch order recorded: group fusible rows by (module, tensor size, dtype) instead."""
    groups: dict[tuple[str, int, str], list[int]] = defaultdict(list)
    for i in range(len(kernels)):
        row = kernels.iloc[i]
        if _fusible(row):
            key = (cell_text(row, "module"), numel(main_shape(row.get("shapes", ""))), cell_text(row, "dtype"))
            groups[key].append(i)
    chains: Counter[tuple[int, ...]] = Counter()
    for rows in groups.values():
        if len(rows) >= 2:
            calls = min(int(cell_float(kernels.iloc[i], "calls", 1.0)) for i in rows)
            chains[tuple(rows)] = max(1, calls)
    return chains


# The element-wise ops of an Adam/AdamW/SGD update written per parameter (torch.optim without
# foreach or fused): the ops a chain of the optimizer's own update is made of.
OPTIMIZER_UPDATE_OPS = {"aten::add_", "aten::mul_", "aten::lerp_", "aten::addcmul_", "aten::addcdiv_", "aten::sqrt",
                        "aten::div", "aten::div_", "aten::sqrt_", "aten::mul", "aten::add", "aten::copy_"}
OPTIMIZER_MARKERS = {"aten::lerp_", "aten::addcmul_", "aten::addcdiv_"}


def optimizer_name(parts: list[pd.Series]) -> str | None:
    """'AdamW' when the chain is an optimizer's per-parameter update ('' when the optimizer is
    not named), None when it is not one: its rows run under the optimizer's step annotation
    (module 'optimizer AdamW.step'), or it is made of the update's ops only (older profiles)."""
    modules = [cell_text(r, "module") for r in parts]
    for module in modules:
        if module.startswith("optimizer "):
            return module.removeprefix("optimizer ").split(".")[0]
    ops = {cell_text(r, "op") for r in parts}
    if ops <= OPTIMIZER_UPDATE_OPS and ops & OPTIMIZER_MARKERS:
        return ""
    return None


def _optimizer_finding(chains: list[tuple[tuple[int, ...], float, float, str, str]], name: str) -> Finding:
    """All per-parameter update chains of one optimizer: one finding with one fix."""
    saving_s = sum(c[1] for c in chains)
    chain_s = sum(c[2] for c in chains)
    shapes = sorted({c[3] for c in chains})
    who = f"torch.optim.{name}" if name else "the optimizer"
    return make_finding(
        "fusion.memory-chain",
        evidence=(f"{who} updates its parameters one tensor at a time: {len(chains)} chains of small "
                  f"element-wise kernels ({chains[0][4]}) over {len(shapes)} parameter shape(s), "
                  f"{seconds(chain_s, decimals=2)} per step."),
        recommendation=(f"Construct it with fused=True ({who}(params, ..., fused=True): one kernel updates "
                        "every parameter), or foreach=True (a few multi-tensor kernels); compiling the "
                        "optimizer step with torch.compile fuses it too."),
        est_saving_s=saving_s,
        rows=sorted({r for c in chains for r in c[0]}),
        numbers={"chains": float(len(chains)), "parameter_shapes": float(len(shapes)), "chain_time_s": chain_s},
        subject=f"{name or 'optimizer'} step",
    )


@rule(id="fusion.memory-chain", title="Fuse a chain of memory-bound kernels", severity="warning")
def fusion_chain(ctx: AdviceContext) -> list[Finding]:
    """Consecutive memory-bound element-wise / norm / softmax / reduction kernels over tensors of
    one size (from the launch order; without it, rows grouped by module and size).

    Estimate: a fused kernel moves only the chain's external inputs and outputs; each link's
    intermediate (written by one kernel, read by the next: 2 x elements x element size) stays on
    chip. Fused time = external bytes / the best bandwidth a kernel of the chain already achieved
    (at least the kernel floor). Saving = chain time - fused time, per occurrence.
    Approximation: the intermediate is taken to be the size of the chain's largest input.
    An optimizer's per-parameter update (under its step annotation, or made of the update's ops)
    is one finding for all its chains, with the optimizer's own fused=True / foreach=True as the fix.
    """
    kernels = ctx.kernels
    seq = launch_sequence(ctx)
    chains = _chains_from_sequence(kernels, seq) if seq else _chains_without_sequence(kernels)
    floor_s = float(ctx.ceilings.kernel_floor_s.value)
    findings: list[Finding] = []
    optimizer_chains: dict[str, list[tuple[tuple[int, ...], float, float, str, str]]] = defaultdict(list)
    for sequence, count in sorted(chains.items()):
        parts = [kernels.iloc[i] for i in sequence]  # in launch order, a row as often as it launched
        cost = _chain_cost(parts, count, floor_s)
        if cost is None:
            continue
        optimizer = optimizer_name(parts)
        if optimizer is not None:
            short = _short_ops(parts)
            optimizer_chains[optimizer].append((tuple(sorted(set(sequence))), cost["saving_s"],
                                                cost["chain_time_s"] * count, cell_text(parts[0], "shapes"), short))
            continue
        findings.append(_chain_finding(parts, sequence, count, cost))
    findings += [_optimizer_finding(found, name) for name, found in sorted(optimizer_chains.items())]
    return findings


def _short_ops(parts: list[pd.Series]) -> str:
    return "+".join((cell_text(r, "op") or cell_text(r, "kernel")).split("::")[-1].lstrip("_") for r in parts)


def _chain_cost(parts: list[pd.Series], count: int, floor_s: float) -> dict[str, float] | None:
    """The chain's time and bytes per occurrence and the fused estimate (fusion_chain's docstring);
    None when nothing would be saved."""
    chain_s = sum(time_per_call_s(r) for r in parts)
    chain_bytes = sum(cell_float(r, "bytes", 0.0) / max(1.0, cell_float(r, "calls", 1.0)) for r in parts)
    link_bytes = 2.0 * numel(main_shape(parts[0].get("shapes", ""))) * element_bytes(parts[0])
    external_bytes = max(chain_bytes - (len(parts) - 1) * link_bytes, link_bytes)
    best_bw = max(cell_float(r, "achieved_bytes_per_s", 0.0) for r in parts)
    if best_bw <= 0 or chain_s <= 0:
        return None
    fused_s = max(external_bytes / best_bw, floor_s)
    saving_s = count * max(0.0, chain_s - fused_s)
    if saving_s <= 0:
        return None
    return {"chain_time_s": chain_s, "chain_bytes": chain_bytes, "external_bytes": external_bytes,
            "occurrences": float(count), "fused_time_s": fused_s, "saving_s": saving_s, "best_bytes_per_s": best_bw}


def _chain_finding(parts: list[pd.Series], sequence: tuple[int, ...], count: int, cost: dict[str, float]) -> Finding:
    ops = " -> ".join(cell_text(r, "op") or cell_text(r, "kernel") for r in parts)
    short = _short_ops(parts)
    custom = any(cell_text(r, "origin") in ("triton", "other") for r in parts)
    module = next((cell_text(r, "module") for r in parts if cell_text(r, "module")), "")
    place = f" in {module}" if module else ""
    if custom:
        fix = (f"Fuse {ops}{place} into one Triton kernel: load each input once, compute the chain "
               "in registers, store only the final result.")
    else:
        fix = (f"Wrap the code{place} in torch.compile (Inductor fuses {ops} into one kernel), or "
               "use a fused op (e.g. a fused bias+GELU, add+LayerNorm, or fused softmax).")
    return make_finding(
        "fusion.memory-chain",
        evidence=(f"{len(parts)} memory-bound kernels launched back to back {count}x over "
                  f"{parts[0].get('shapes', '')}: {ops}; {seconds(cost['chain_time_s'], decimals=2)} per chain, "
                  f"moving {cost['chain_bytes'] / 1e6:.2f} MB of which {cost['external_bytes'] / 1e6:.2f} MB is "
                  f"the chain's own input/output (best kernel at {si(cost['best_bytes_per_s'], 'B/s', decimals=2)})."),
        recommendation=fix,
        est_saving_s=cost["saving_s"],
        rows=sorted(set(sequence)),
        sequence=sequence,
        numbers={k: cost[k] for k in ("chain_time_s", "chain_bytes", "external_bytes", "occurrences", "fused_time_s")},
        subject=f"{short} in {module}" if module else short,
    )


def _gemm_output_numel(shapes: list[tuple[int, ...]]) -> int:
    """Elements of a (batched) matmul's output: a[..., M, K] x b[..., K, N] -> a[:-1] x N."""
    mats = [s for s in shapes if len(s) >= 2]
    if len(mats) < 2:
        return -1
    a, b = mats[-2], mats[-1]
    return numel(a[:-1]) * b[-1]


def _score_neighbours(kernels: pd.DataFrame, softmax: int, scores: int,
                      module: str) -> tuple[list[int], list[int], list[int], list[int]]:
    """The rows around a softmax over `scores` elements: matmuls that read the score matrix
    (consumers) and write it (producers), element-wise work over it (scalers), and
    nn.MultiheadAttention's head-average of the weights (a mean over it in the same module)."""
    consumers, producers, scalers, averaged = [], [], [], []
    for j in range(len(kernels)):
        other = kernels.iloc[j]
        family = cell_text(other, "op_family")
        if family == "gemm":
            shapes = parse_shapes(other.get("shapes", ""))
            if any(numel(s) == scores and len(s) >= 3 for s in shapes):
                consumers.append(j)
            elif _gemm_output_numel(shapes) == scores:
                producers.append(j)
        elif family in ("elementwise", "copy") and j != softmax and numel(main_shape(other.get("shapes", ""))) == scores:
            scalers.append(j)
        # nn.MultiheadAttention with need_weights=True (its default) averages the weights it
        # returns over the heads: a mean over the score matrix's elements in the same module
        elif (cell_text(other, "op") == "aten::mean" and cell_text(other, "module") == module
              and numel(main_shape(other.get("shapes", ""))) == scores):
            averaged.append(j)
    return consumers, producers, scalers, averaged


@rule(id="attention.materialised-scores", title="Use scaled_dot_product_attention", severity="warning")
def attention_scores(ctx: AdviceContext) -> list[Finding]:
    """A softmax over a [.., S, S]-like score matrix that a matmul writes and another matmul reads
    (naive attention: Q K^T, softmax, P V), plus the element-wise kernels over the same matrix.

    Estimate: scaled_dot_product_attention (FlashAttention) never writes the score matrix, so it
    saves the softmax and element-wise kernels' time over it, plus the GEMMs' write and read of it
    (2 x elements x element size at the DRAM roof, capped by the GEMMs' time). Inside
    nn.MultiheadAttention (recognised by its head-average of the weights, a mean over the score
    matrix) the fix is need_weights=False, and that mean is saved too.
    """
    kernels = ctx.kernels
    dram = ctx.ceilings.memory_bytes_per_s.get("dram")
    findings: list[Finding] = []
    for i in range(len(kernels)):
        row = kernels.iloc[i]
        if cell_text(row, "op_family") != "softmax":
            continue
        shape = main_shape(row.get("shapes", ""))
        if len(shape) < 3 or shape[-1] < 16:
            continue
        scores = numel(shape)
        module = cell_text(row, "module")
        consumers, producers, scalers, averaged = _score_neighbours(kernels, i, scores, module)
        if not consumers:
            continue
        scalers += averaged
        calls = max(1.0, cell_float(row, "calls", 1.0))
        score_bytes = scores * element_bytes(row) * calls
        gemm_rows = consumers + producers
        gemm_s = sum(cell_float(kernels.iloc[j], "time_s", 0.0) for j in gemm_rows)
        bw = float(dram.value) if dram else 0.0
        gemm_part_s = min(2.0 * score_bytes / bw, gemm_s) if bw > 0 else 0.0
        side_s = cell_float(row, "time_s", 0.0) + sum(cell_float(kernels.iloc[j], "time_s", 0.0) for j in scalers)
        saving_s = side_s + gemm_part_s
        if averaged:
            fix = ("This is nn.MultiheadAttention computing the attention weights it returns (need_weights=True "
                   "is its default): call it with need_weights=False and it runs "
                   "scaled_dot_product_attention, which never writes the score matrix.")
        else:
            fix = ("Replace matmul-softmax-matmul with "
                   "torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=..., "
                   "is_causal=...) (FlashAttention / memory-efficient kernels): the score "
                   "matrix stays on chip.")
        findings.append(make_finding(
            "attention.materialised-scores",
            evidence=(f"{where(row)} normalises a materialised score matrix of {scores:,} elements "
                      f"({score_bytes / 1e6:.1f} MB over {int(calls)} calls) that "
                      f"{len(consumers)} matmul group(s) read; softmax and element-wise work on it "
                      f"takes {seconds(side_s, decimals=2)}."),
            recommendation=fix,
            est_saving_s=saving_s,
            rows=[i, *gemm_rows, *scalers],
            numbers={"score_elements": float(scores), "score_bytes": score_bytes,
                     "softmax_and_elementwise_s": side_s, "gemm_score_traffic_s": gemm_part_s},
            subject=module or cell_text(row, "op"),
        ))
    return findings


def _decode_groups(kernels: pd.DataFrame, families: tuple[str, ...], decode_only: bool) -> dict[tuple[str, str], list[int]]:
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i in range(len(kernels)):
        row = kernels.iloc[i]
        if cell_text(row, "op_family") not in families:
            continue
        shapes = parse_shapes(row.get("shapes", ""))
        if decode_only and not (shapes and len(shapes[0]) >= 3 and shapes[0][-2] == 1):
            continue
        groups[(cell_text(row, "op"), cell_text(row, "module"))].append(i)
    return groups


@rule(id="attention.kv-cache-growth", title="Pre-allocate / page the KV cache", severity="warning")
def kv_cache_growth(ctx: AdviceContext) -> list[Finding]:
    """Decode attention (query length 1) over a key/value length that grows from call to call
    (4 or more distinct shapes for one op and module), usually with the cache re-built by cat.

    Estimate: a pre-allocated (static or paged) cache writes one new token in place, so the
    time of the copy/cat kernels whose shapes grow with the cache is saved; the attention itself
    is not counted as saved.
    """
    kernels = ctx.kernels
    findings: list[Finding] = []
    decode = _decode_groups(kernels, ("attention", "gemm"), decode_only=True)
    copies = _decode_groups(kernels, ("copy",), decode_only=False)
    total_s = ctx.run_time_s
    for (op, module), rows in sorted(decode.items()):
        distinct = {cell_text(kernels.iloc[i], "shapes") for i in rows}
        if len(distinct) < 4:
            continue
        growing = [j for (_, cmod), cr in sorted(copies.items()) if cmod == module
                   for j in cr if len({cell_text(kernels.iloc[k], "shapes") for k in cr}) >= 4]
        copy_s = sum(cell_float(kernels.iloc[j], "time_s", 0.0) for j in growing)
        attn_s = sum(cell_float(kernels.iloc[i], "time_s", 0.0) for i in rows)
        findings.append(make_finding(
            "attention.kv-cache-growth",
            evidence=(f"{op}{' in ' + module if module else ''} runs decode attention (query length 1) "
                      f"over {len(distinct)} different key/value lengths ({seconds(attn_s, decimals=2)}, "
                      f"{percent(attn_s / total_s) if total_s else '?'} of the run); "
                      f"{len(growing)} copy groups re-build the cache ({seconds(copy_s, decimals=2)})."),
            recommendation=("Keep the KV cache pre-allocated and write each token in place "
                            "(index_copy_ / a static cache), and use paged attention for many "
                            "sequences (vLLM PagedAttention, flash_attn_with_kvcache, FlexAttention "
                            "with a paged block mask)" + ("; static shapes also allow CUDA graphs." if ctx.on_gpu else ".")),
            est_saving_s=copy_s,
            rows=[*rows, *growing],
            numbers={"kv_lengths": float(len(distinct)), "attention_s": attn_s, "cache_copy_s": copy_s},
            subject=module or op,
            severity=None if copy_s > 0 else "info",
        ))
    return findings
