"""Which launches to measure, and which launches Nsight Compute will have measured.

Most kernels repeat: a transformer's layers launch the same kernels with the same launch
configuration again and again. Replaying one launch of each group is enough, and `ncu
--kernel-id :::N` selects "the N'th invocation" of each kernel. How ncu numbers invocations is
the crux: its documentation (2026.1) counts per (context, stream, kernel name, grid, block,
shared memory) when, as here, context and stream are not given, but ncu 2025.3.1 on the H200
(2026-11-30) counted per kernel name: planned by launch configuration, two rows of one kernel
name went unmeasured. We plan with the name rule and, after the run, predict the measured
launches under each rule (NUMBERING_RULES) and keep the one that matches what ncu printed, so a
different numbering costs coverage, never correctness.

A launch is a LaunchKey: kernel name, grid, block, shared memory (from the profiler's trace)
and the kernel-table row (group) it belongs to, -1 for a setup launch (outside the steady
state: in no row). Launch indices are positions in the launch sequence (kernels only, in launch
order) that ncu sees between cudaProfilerStart and cudaProfilerStop in the child run: setup
launches included, since ncu numbers them too; only launches of table rows are planned.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass


@dataclass(frozen=True)
class LaunchKey:
    name: str
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    shared_memory: int | None
    group: int  # kernel-table row; -1: setup, in no row


_ANON = re.compile(r"\(anonymous namespace\)|<unnamed>")


def function_name(kernel: str) -> str:
    """The kernel's function identifier without return type, namespaces, templates or parameters:
    'void at::native::(anonymous namespace)::foo<float, 4>(int)' -> 'foo'. Nsight Compute and
    torch.profiler demangle and simplify names differently; this part they agree on."""
    text = _ANON.sub("anon", kernel.strip())
    cut = len(text)
    for i, ch in enumerate(text):
        if ch in "<(":
            cut = i
            break
    head = text[:cut].strip()
    head = head.split()[-1] if head else text
    return head.rsplit("::", 1)[-1]


NUMBERING_RULES: dict[str, Callable[[LaunchKey], Hashable]] = {
    "config": lambda k: (k.name, k.grid, k.block, k.shared_memory),
    "config-without-shared-memory": lambda k: (k.name, k.grid, k.block),
    "name": lambda k: k.name,
    "function": lambda k: function_name(k.name),
}
PLAN_RULE = "name"  # what ncu 2025.3.1 did on the H200


def invocation_numbers(keys: list[LaunchKey], rule: str = PLAN_RULE) -> list[int]:
    """Each launch's invocation number (1-based) among launches with the same key under `rule`."""
    key_of = NUMBERING_RULES[rule]
    seen: dict[Hashable, int] = {}
    out = []
    for launch in keys:
        key = key_of(launch)
        seen[key] = seen.get(key, 0) + 1
        out.append(seen[key])
    return out


def plan_numbers(keys: list[LaunchKey], eligible: list[bool], samples: int, rule: str = PLAN_RULE) -> list[int] | None:
    """Invocation numbers to ask ncu for so that every group has `samples` measured launches
    among the eligible ones (a filter can pass only the launches it trusts; setup launches,
    group -1, are never planned); None when samples <= 0: measure every launch."""
    if samples <= 0:
        return None
    numbers = invocation_numbers(keys, rule)
    taken: dict[int, int] = {}
    wanted: set[int] = set()
    for launch, number, ok in zip(keys, numbers, eligible):
        if ok and launch.group >= 0 and taken.get(launch.group, 0) < samples:
            taken[launch.group] = taken.get(launch.group, 0) + 1
            wanted.add(number)
    return sorted(wanted)


def predict(keys: list[LaunchKey], numbers: list[int] | None, rule: str, launch_count: int | None = None) -> list[int]:
    """Indices of the launches ncu measures when it selects invocation `numbers` (None: all)
    numbered by `rule`, at most launch_count of them, in launch order."""
    if numbers is None:
        chosen = list(range(len(keys)))
    else:
        wanted = set(numbers)
        chosen = [i for i, n in enumerate(invocation_numbers(keys, rule)) if n in wanted]
    return chosen[:launch_count] if launch_count is not None else chosen


def kernel_id_filter(numbers: list[int]) -> str:
    """`--kernel-id` value selecting those invocations of every kernel: ':::^(1|3)$'."""
    return ":::^(" + "|".join(str(n) for n in numbers) + ")$"
