"""Which launches to measure, and which launches Nsight Compute will have measured.

Most kernels repeat: a transformer's layers launch the same kernels on the same shapes again and
again. The unit of sampling is the sampling class, what determines a launch's work: kernel name,
grid, block, shared memory, and the op, input shapes and dtypes it ran for (not the module, so
twelve identical layers are one class, not twelve kernel-table rows). One launch of a class (or
`samples` of them) is measured and its counters are applied to every row of the class
(attribution/counters.py).

`ncu --kernel-id :::^(N|M)$` selects the N'th and M'th invocation of *every* kernel. How ncu
numbers invocations is the crux: its documentation (2026.1) counts per (context, stream, kernel
name, grid, block, shared memory) when, as here, context and stream are not given, but ncu
2025.3.1 on the H200 (2026-11-30) counted per kernel name. Each number asked for costs a launch
of every kernel invoked that many times, so the plan picks the numbers as a weighted set cover:
greedily the number that covers the most classes still short of samples per launch it makes ncu
measure, until every class is covered, then a local search that drops or merges numbers while
that measures fewer launches. We plan with the name rule and, after the run, predict
the measured launches under each rule (NUMBERING_RULES) and keep the one that matches what ncu
printed, so a different numbering costs coverage, never correctness.

A launch is a LaunchKey: kernel name, grid, block, shared memory (from the profiler's trace),
the kernel-table row (group) it belongs to, -1 for a setup launch (outside the steady state: in
no row), and its work (op, shapes, dtype of that row). Launch indices are positions in the
launch sequence (kernels only, in launch order) that ncu sees between cudaProfilerStart and
cudaProfilerStop in the child run: setup launches included, since ncu numbers them too; only
launches of table rows are planned.

The warm run (capture/ncu/warm.py) plans the same way over warm_class, a sampling class within
one row: a row's warm DRAM bytes are its own launch's, so every row is measured (on the H200,
2026-12-02: ResNet-50 training 735 launches in the cold plan, 1,344 in the warm one; Llama-style
191 and 486; GPT-2 189 and 317).
"""

from __future__ import annotations

import functools
import heapq
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from itertools import combinations


@dataclass(frozen=True)
class LaunchKey:
    name: str
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    shared_memory: int | None
    group: int  # kernel-table row; -1: setup, in no row
    work: str  # the row's op, input shapes and dtype: with the kernel and its configuration, what fixes the work


def sampling_class(key: LaunchKey) -> Hashable:
    """What a launch shares with every launch that does the same work: one measurement serves them all."""
    return key.name, key.grid, key.block, key.shared_memory, key.work


def warm_class(key: LaunchKey) -> Hashable:
    """The warm run's unit: a sampling class within one kernel-table row. Where a launch's bytes
    come from depends on what ran before it, which differs between rows of one class (the forward's
    and the backward's weight casts; two identical blocks after different layers), so each row is
    measured on its own launch (attribution/counters.py keeps a row's own warm figure only)."""
    return sampling_class(key), key.group


_ANON = re.compile(r"\(anonymous namespace\)|<unnamed>")


@functools.lru_cache(maxsize=8192)  # compared launch by launch when joining: a few hundred names
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


def plan_numbers(keys: list[LaunchKey], eligible: list[bool], samples: int, rule: str = PLAN_RULE,
                 class_of: Callable[[LaunchKey], Hashable] = sampling_class) -> list[int] | None:
    """Invocation numbers to ask ncu for so that every class (class_of: sampling_class, or
    warm_class for the warm run) has `samples` measured launches among its eligible ones (a
    filter can pass only the launches it trusts; setup launches, group -1, are never planned),
    chosen to keep the launches ncu measures few (set cover, module docstring); None when
    samples <= 0: measure every launch."""
    if samples <= 0:
        return None
    numbers = invocation_numbers(keys, rule)
    problem = _Cover(Counter(numbers), defaultdict(Counter), Counter())
    for launch, number, ok in zip(keys, numbers, eligible):
        if ok and launch.group >= 0:
            cls = class_of(launch)
            problem.covers[number][cls] += 1
            problem.need[cls] = min(samples, problem.need[cls] + 1)
    return sorted(problem.improve(problem.greedy()))


@dataclass
class _Cover:
    """The plan as weighted set cover: choose invocation numbers so that each class gets its
    `need` measured launches, at the least launches measured in all."""

    cost: Counter  # number -> launches ncu measures when it is asked for: every launch so numbered, setup too
    covers: dict[int, Counter]  # number -> class -> eligible launches of the class that the number selects
    need: Counter  # class -> measured launches wanted

    def lacking(self, have: Counter) -> dict[Hashable, int]:
        return {cls: n - have[cls] for cls, n in self.need.items() if have[cls] < n}

    def have(self, chosen: set[int]) -> Counter:
        total: Counter = Counter()
        for number in chosen:
            total.update(self.covers[number])
        return total

    def greedy(self) -> set[int]:
        """The number that covers most of what is lacking per launch it costs, until nothing is
        (lazy: a number's gain only falls as others are chosen, so a stale gain is an upper bound)."""
        short = dict(self.need)

        def ratio(number: int) -> float:
            gain = sum(min(n, short[cls]) for cls, n in self.covers[number].items())
            return gain / self.cost[number]

        heap = [(-ratio(n), n) for n in self.covers]
        heapq.heapify(heap)
        chosen: set[int] = set()
        while heap and any(short.values()):
            _, number = heapq.heappop(heap)
            now = ratio(number)
            if now == 0:
                continue
            if heap and -now > heap[0][0]:
                heapq.heappush(heap, (-now, number))  # another may do better now: look again
                continue
            chosen.add(number)
            for cls, n in self.covers[number].items():
                short[cls] = max(0, short[cls] - n)
        return chosen

    def improve(self, chosen: set[int]) -> set[int]:
        """Local search after the greedy, each step cheaper than the last: drop one or two numbers
        and take instead the cheapest number (if any costs less) that covers what they alone
        covered. Greedy alone took 1, 6, 62, 128 (37 launches) on the H200's GPT-2 forward where
        1 and 8 (30) do."""
        by_class: dict[Hashable, dict[int, int]] = defaultdict(dict)
        for number, counts in self.covers.items():
            for cls, n in counts.items():
                by_class[cls][number] = n
        while True:
            have = self.have(chosen)
            for drop in [*([n] for n in sorted(chosen)), *map(list, combinations(sorted(chosen), 2))]:
                rest = have.copy()
                for number in drop:
                    rest.subtract(self.covers[number])
                lacking = self.lacking(rest)
                budget = sum(self.cost[n] for n in drop)
                if not lacking:  # redundant
                    chosen = chosen - set(drop)
                    break
                first = next(iter(lacking))
                fits = [n for n in by_class[first] if n not in chosen and self.cost[n] < budget
                        and all(by_class[cls].get(n, 0) >= k for cls, k in lacking.items())]
                if fits:
                    chosen = (chosen - set(drop)) | {min(fits, key=lambda n: (self.cost[n], n))}
                    break
            else:
                return chosen


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
