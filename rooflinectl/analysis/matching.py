"""Match the kernel groups of two profiles: the one matcher behind `diff` and `plot BEFORE AFTER`.

Both tables are first put per iteration (summary "iterations"), so runs of different lengths
compare. Then groups are matched in levels, each on the rows still unmatched, from strict to
loose; at each level the rows of each side are summed per key (rooflinectl.aggregate: one NaN
rule) and a key present on both sides is one matched pair:
  exact      kernel, op, module, shapes, dtype      (the same group)
  suffix     kernel and op without numeric/hash suffix, module, shapes, dtype
             (a re-compiled Triton kernel: _0 -> _1)
  op-shapes  op, module, shapes, dtype              (another library kernel for the same work)
  kernel-op  kernel, op, module                     (the same code on other shapes)
  op         op, module                             (the op, whatever its kernels and shapes)
  fused      torch.compile: the kernels Inductor generated in a module (op "fused(add, mul, ...)")
             against the other side's rows of the ops they fused, in that module or below it
             (module "" : anywhere); eager GELU, add and layer norm against the fused kernels
             that replaced them, so a user sees what compilation bought per group
  op-shapes-anywhere, op-anywhere   op (and shapes, dtype) in any module: a compiled region
             names only its outer module, the eager run each layer's (GEMMs left as extern calls)
  module     module, when named                     (naive attention's bmm, softmax, bmm in `attn`
                                                    against the fused SDPA kernel in `attn`)
What matches nothing at any level is returned per side.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from rooflinectl.aggregate import aggregate, single_or_count
from rooflinectl.profile_model import ProfileData, iterations_of

_SUFFIX = re.compile(r"(_[0-9]+|_[0-9a-f]{8,})+$")
SIDES = ("base", "new")
NAME_COLUMNS = ("kernel", "op", "module", "shapes", "dtype")
SUMMED_COLUMNS = ("calls", "time_s", "flops", "bytes", "roof_time_s")
LEVELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("exact", ("kernel", "op", "module", "shapes", "dtype")),
    ("suffix", ("kernel_stem", "op_stem", "module", "shapes", "dtype")),
    ("op-shapes", ("op_stem", "module", "shapes", "dtype")),
    ("kernel-op", ("kernel_stem", "op_stem", "module")),
    ("op", ("op_stem", "module")),
    ("fused", ("fused_key",)),
    ("op-shapes-anywhere", ("op_stem", "shapes", "dtype")),
    ("op-anywhere", ("op_stem",)),
    ("module", ("module",)),
)


_FUSED = re.compile(r"^fused\((.*)\)$")


def _fused_ops(op: str) -> list[str]:
    match = _FUSED.match(op)
    return [o.strip() for o in match.group(1).split(",") if o.strip()] if match else []


def _fused_keys(left: dict[str, pd.DataFrame]) -> None:
    """Set `fused_key` on both sides: "M" for a generated kernel in module M, and for a row of
    the other side whose aten op one of M's generated kernels fused, in M or below it (the
    longest such M); "" (no match) elsewhere."""
    for side in SIDES:
        fused = left[side]["op"].map(_fused_ops)
        left[side]["fused_key"] = [f"fused|{m}" if ops else "" for m, ops in zip(left[side]["module"], fused)]
    for side, other in (("base", "new"), ("new", "base")):
        union: dict[str, set[str]] = {}
        for module, op in zip(left[other]["module"], left[other]["op"]):
            union.setdefault(module, set()).update(_fused_ops(op))
        union = {m: ops for m, ops in union.items() if ops}
        keys = list(left[side]["fused_key"])
        for i, (module, op) in enumerate(zip(left[side]["module"], left[side]["op"])):
            if keys[i]:
                continue
            name = op.split("::", 1)[-1]
            owners = [m for m, ops in union.items() if (name in ops or f"native_{name}" in ops) and (not m or module == m or module.startswith(m + "."))]
            if owners:
                keys[i] = f"fused|{max(owners, key=len)}"
        left[side]["fused_key"] = keys


def normalise_kernel(name: str) -> str:
    """Drop the numeric or hash suffix compilers add: triton_poi_fused_add_0 -> triton_poi_fused_add."""
    return _SUFFIX.sub("", name)


def per_iteration(profile: ProfileData) -> pd.DataFrame:
    """The kernel table with calls, time, FLOPs, bytes and roof time per iteration (the one
    normalisation used to compare profiles; rates and efficiencies are unchanged by it)."""
    table = profile.kernels.reset_index(drop=True).copy()
    iterations = iterations_of(profile)
    for column in SUMMED_COLUMNS:
        if column in table.columns:
            table[column] = table[column].astype(float) / iterations
    return table


@dataclass
class GroupMatch:
    """pairs: one row per matched pair: `level`, `{column}_{side}` for the NAME_COLUMNS (the
    group's one value, or "N kernels" ...), the SUMMED_COLUMNS, cost_source and bound, and
    `rows_{side}` (positions in the input tables); sorted by base time, largest first.
    only_base, only_new: the input rows that matched nothing."""

    pairs: pd.DataFrame
    only_base: pd.DataFrame
    only_new: pd.DataFrame


def _prepared(table: pd.DataFrame) -> pd.DataFrame:
    out = table.reset_index(drop=True).copy()
    for column in (*NAME_COLUMNS, "bound", "cost_source"):
        if column not in out.columns:
            out[column] = ""
        out[column] = out[column].fillna("").astype(str)
    for column in SUMMED_COLUMNS:
        if column not in out.columns:
            out[column] = float("nan") if column != "calls" else 0
    out["kernel_stem"] = out["kernel"].map(normalise_kernel)
    out["op_stem"] = out["op"].map(normalise_kernel)
    out["position"] = range(len(out))
    return out


def _summed(rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    names = {c: (c, single_or_count(f"{c}s" if c != "shapes" else "shapes")) for c in NAME_COLUMNS}
    return aggregate(rows, keys, **names, bound=("bound", lambda s: s.iloc[0] if s.nunique() == 1 else "mixed"),
                     rows=("position", tuple))


def match_groups(base: pd.DataFrame, new: pd.DataFrame) -> GroupMatch:
    """Pair the groups of two kernel tables (give them per_iteration) level by level."""
    left = {"base": _prepared(base), "new": _prepared(new)}
    pairs: list[pd.DataFrame] = []
    for level, key_tuple in LEVELS:
        keys = list(key_tuple)
        if level == "fused":
            _fused_keys(left)
        sides = {s: left[s][left[s]["module"] != ""] if level == "module" else
                 left[s][left[s]["fused_key"] != ""] if level == "fused" else left[s] for s in SIDES}
        if any(side.empty for side in sides.values()):
            continue
        both = _summed(sides["base"], keys).merge(_summed(sides["new"], keys), on=keys, suffixes=("_base", "_new"))
        if both.empty:
            continue
        for column in NAME_COLUMNS:
            if column in keys:  # a key is shared: give each side its own copy, like the other columns
                both[f"{column}_base"] = both[f"{column}_new"] = both[column]
        both["level"] = level
        pairs.append(both.drop(columns=keys))
        for side in SIDES:
            taken = {i for group in both[f"rows_{side}"] for i in group}
            left[side] = left[side][~left[side]["position"].isin(taken)]
    columns = ["level"] + [f"{c}_{s}" for s in SIDES for c in (*NAME_COLUMNS, *SUMMED_COLUMNS, "cost_source", "bound", "rows")]
    table = pd.concat(pairs, ignore_index=True)[columns] if pairs else pd.DataFrame(columns=columns)
    table = table.sort_values(["time_s_base", "time_s_new"], ascending=False, kind="stable", ignore_index=True)
    return GroupMatch(pairs=table,
                      only_base=base.reset_index(drop=True).iloc[sorted(left["base"]["position"])],
                      only_new=new.reset_index(drop=True).iloc[sorted(left["new"]["position"])])
