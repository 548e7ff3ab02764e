"""One finding per pattern: findings of one rule over the same ops and shapes in repeated modules
(layers, experts, blocks) become one, with a count and a compact module pattern; and the order a
person reads them in: actions (a saving) ranked by it, then the notes (no saving), one per rule.

Pure functions on findings and the kernel table; nothing here prints.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace

import pandas as pd

from rooflinectl.analysis.advice.common import cell_text
from rooflinectl.analysis.advice.registry import RULES, Finding, severity_rank

# A numeric segment of a dotted module path: `h.11.mlp` -> 11 (layer, expert, block index). Digits
# elsewhere (template arguments of kernel names, shapes) are not module indices.
_INDEX = re.compile(r"(?<=\.)\d+(?=\.|\b)")


def normalised(text: str) -> str:
    """The text with every module index replaced by `{N}`: the same pattern in any layer."""
    return _INDEX.sub("{N}", text)


def compact_range(values: list[int]) -> str:
    """[0, 1, 2, 3, 7, 9, 10] -> '0-3,7,9-10'."""
    ordered = sorted(set(values))
    parts: list[str] = []
    start = prev = ordered[0]
    for v in [*ordered[1:], None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ",".join(parts)


def module_pattern(texts: list[str]) -> str:
    """The first text with each module index that differs across the texts written as a range:
    ['t.h.0.mlp', 't.h.1.mlp', 't.h.2.mlp'] -> 't.h.{0-2}.mlp'. The texts share one normalised form."""
    columns = list(zip(*[[int(m) for m in _INDEX.findall(t)] for t in texts]))
    pieces = iter(columns)

    def fill(match: re.Match[str]) -> str:
        values = list(next(pieces, (int(match.group(0)),)))
        return match.group(0) if len(set(values)) == 1 else "{" + compact_range(values) + "}"

    return _INDEX.sub(fill, texts[0])


def _row_signature(kernels: pd.DataFrame, rows: tuple[int, ...]) -> tuple[tuple[str, ...], ...]:
    """What the finding's rows are, wherever they ran: op, kernel, shapes, dtype, module pattern."""
    keys = []
    for r in rows:
        if r >= len(kernels):
            continue
        row = kernels.iloc[r]
        keys.append((cell_text(row, "op"), normalised(cell_text(row, "kernel")), cell_text(row, "shapes"),
                     cell_text(row, "dtype"), normalised(cell_text(row, "module"))))
    return tuple(sorted(keys))


def pattern_key(f: Finding, kernels: pd.DataFrame) -> tuple[object, ...]:
    """Findings with one key are the same finding in repeated modules."""
    return (f.rule_id, normalised(f.subject), _row_signature(kernels, f.rows))


def _first_index(f: Finding) -> tuple[int, ...]:
    return tuple(int(m) for m in _INDEX.findall(f.subject))


def _patterned(texts: list[str]) -> str:
    """The texts as one with module ranges where they differ only in module indices (a fix that
    names its module), else the first as it is."""
    return module_pattern(texts) if len({normalised(t) for t in texts}) == 1 else texts[0]


def merged(instances: list[Finding]) -> Finding:
    """One finding standing for its instances: the first (lowest module index) as evidence, the
    savings and idle savings summed, the rows joined, the subject written as a module pattern."""
    if len(instances) == 1:
        return instances[0]
    ordered = sorted(instances, key=lambda f: (_first_index(f), f.subject, f.rows))
    first = ordered[0]
    pattern = module_pattern([f.subject for f in ordered])
    count = sum(f.count for f in ordered)
    return replace(
        first,
        severity=max((f.severity for f in ordered), key=severity_rank),
        subject=pattern,
        recommendation=_patterned([f.recommendation for f in ordered]),
        est_saving_s=sum(f.est_saving_s for f in ordered),
        idle_saving_s=sum(f.idle_saving_s for f in ordered),
        rows=tuple(sorted({r for f in ordered for r in f.rows})),
        count=count,
        instances=tuple(i for f in ordered for i in (f.instances or (f,))),
    )


def _spread(f: Finding, kernels: pd.DataFrame) -> Finding:
    """A finding whose subject is one module but whose rows run in that module of every layer (a
    rule that groups by shape across layers, such as moe.grouped-gemm) named by the modules'
    pattern: `model.layers.{0-3}.mlp.experts`, not layer 0's."""
    modules = sorted({cell_text(kernels.iloc[r], "module") for r in f.rows if r < len(kernels)})
    if f.subject not in modules or len(modules) < 2 or len({normalised(m) for m in modules}) != 1:
        return f
    return replace(f, subject=module_pattern(sorted(modules, key=lambda m: [int(i) for i in _INDEX.findall(m)])))


def merge_patterns(findings: list[Finding], kernels: pd.DataFrame) -> list[Finding]:
    """Findings of one rule over the same ops, kernels and shapes in modules that differ only in
    their indices (layers, experts), or over identical kernels, merged into one each; the order of
    first appearance kept."""
    groups: dict[tuple[object, ...], list[Finding]] = defaultdict(list)
    for f in findings:
        groups[pattern_key(f, kernels)].append(f)
    return [_spread(merged(group), kernels) for group in groups.values()]


def is_note(f: Finding) -> bool:
    """A note, not an action: a CI gate's verdict, or a finding that saves nothing (stop here, the
    numbers are wrong, a verified fix that measured slower)."""
    return RULES[f.rule_id].gate or f.ranked_saving_s <= 0


def merge_notes(notes: list[Finding]) -> list[Finding]:
    """The notes of one rule as one: the first as evidence, the others counted in its subject."""
    groups: dict[str, list[Finding]] = defaultdict(list)
    for f in notes:
        groups[f.rule_id].append(f)
    out = []
    for group in groups.values():
        if len(group) == 1:
            out.append(group[0])
            continue
        first = group[0]
        count = sum(f.count for f in group)
        out.append(replace(
            first, severity=max((f.severity for f in group), key=severity_rank),
            subject=f"{first.subject} and {len(group) - 1} more" if first.subject else first.subject,
            rows=tuple(sorted({r for f in group for r in f.rows})), count=count,
            instances=tuple(i for f in group for i in (f.instances or (f,)))))
    return out


def reading_order(f: Finding) -> tuple[object, ...]:
    """Actions first, by the saving they are ranked by (measured where --verify measured it, else
    the estimate), then the notes, most severe first; ties broken so the order is reproducible."""
    if is_note(f):
        return (1, -severity_rank(f.severity), 0.0, f.rule_id, f.rows, f.subject, f.evidence)
    return (0, 0, -round(f.ranked_saving_s, 12), -severity_rank(f.severity), f.rule_id, f.rows, f.subject,
            f.evidence)
