"""Sampling by class on the GPT-2 forward recorded on the H200 (tests/data/h200_real/
gpt2_fwd_eager: 2 layers, no module annotations) and on twelve identical layers built from it:
the planned launches drop from one per kernel-table row to about one per sampling class, the
launches ncu measures under its per-name numbering cover every class, and every row gets its
class's mean measurement times its calls."""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections import Counter, defaultdict

import pandas as pd
import pytest
from counters_data import H200
from real_traces import trace

from rooflinectl.attribution.counters import (
    CounterJoin,
    counters_by_row,
    join_measurements,
    launch_keys,
)
from rooflinectl.capture.ncu.metrics import MeasuredLaunch
from rooflinectl.capture.ncu.sampling import (
    LaunchKey,
    kernel_id_filter,
    plan_numbers,
    predict,
    warm_class,
)
from rooflinectl.capture.run.session import Capture
from rooflinectl.pipeline import build_profile

FORWARD = 45  # launches of one steady forward of the 2-layer trace: 5 embedding, 2 x 19 per layer, ln_f, lm_head
LAYER = slice(5, 24)


def work_of(key: LaunchKey) -> tuple:
    """What a launch's work depends on, written here from the LaunchKey's fields (not sampling_class)."""
    return key.name, key.grid, key.block, key.shared_memory, key.work


@pytest.fixture(scope="module")
def gpt2_keys() -> list[LaunchKey]:
    raw = trace("gpt2_fwd_eager")
    capture = Capture("cuda", raw, {"device_name": "NVIDIA H200"})
    _data, launches = build_profile(capture, command=["test"], completed=True, exit_code=0, ceilings=H200)
    return launch_keys(launches, raw)


@pytest.fixture(scope="module")
def twelve_layers(gpt2_keys) -> list[LaunchKey]:
    """Five forwards of a 12-layer GPT-2 made of the recorded layer: each layer's launches in rows
    of their own, as module keying gives them (transformer.h.0 ... h.11), no setup in the window
    (function mode: warm-up before cudaProfilerStart)."""
    steady = [k for k in gpt2_keys if k.group >= 0]
    forward = steady[:FORWARD]
    layer = forward[LAYER]
    assert [work_of(k) for k in steady[FORWARD:2 * FORWARD]] == [work_of(k) for k in forward]  # a period
    assert [work_of(k) for k in forward[24:43]] == [work_of(k) for k in layer]  # the two layers are alike
    rows = sorted({k.group for k in layer})
    keys = []
    for _ in range(5):
        keys += forward[:5]
        for n in range(12):
            keys += [dataclasses.replace(k, group=1000 + 100 * n + rows.index(k.group)) for k in layer]
        keys += forward[43:]
    return keys


def ncu_selects(keys: list[LaunchKey], numbers: list[int]) -> list[int]:
    """Positions ncu 2025.3.1 measures for --kernel-id :::^(N|M)$: the N'th invocation of each
    kernel name (as seen on the H200), written independently of sampling.invocation_numbers."""
    wanted = re.compile(kernel_id_filter(numbers).split(":")[-1])
    seen: Counter = Counter()
    chosen = []
    for i, k in enumerate(keys):
        seen[k.name] += 1
        if wanted.fullmatch(str(seen[k.name])):
            chosen.append(i)
    return chosen


def cheapest_cover(keys: list[LaunchKey], most: int) -> int:
    """The fewest launches any choice of at most `most` invocation numbers measures while giving
    every class of the counted launches one measured launch: exhaustive search."""
    count: Counter = Counter()
    numbers_of: dict[tuple, set[int]] = defaultdict(set)
    cost: Counter = Counter()
    for k in keys:
        count[k.name] += 1
        cost[count[k.name]] += 1
        if k.group >= 0:
            numbers_of[work_of(k)].add(count[k.name])
    candidates = sorted(set().union(*numbers_of.values()))
    best = math.inf
    for size in range(1, most + 1):
        for combo in itertools.combinations(candidates, size):
            total = sum(cost[n] for n in combo)
            if total < best and all(ns.intersection(combo) for ns in numbers_of.values()):
                best = total
    return best


def per_row(keys: list[LaunchKey]) -> list[LaunchKey]:
    """The same launches sampled by kernel-table row (the plan before classes): each row its own work."""
    return [dataclasses.replace(k, work=f"row {k.group}") for k in keys]


def test_recorded_forward_measures_one_launch_per_class_at_the_least_cost(gpt2_keys):
    counted = [k for k in gpt2_keys if k.group >= 0]
    classes = {work_of(k) for k in counted}
    assert len(counted) == 270 and len(classes) == 20  # 6 forwards after 2 of setup; the trace has no modules
    numbers = plan_numbers(gpt2_keys, [True] * len(gpt2_keys), 1)
    measured = ncu_selects(gpt2_keys, numbers)
    assert {work_of(gpt2_keys[p]) for p in measured if gpt2_keys[p].group >= 0} == classes
    assert predict(gpt2_keys, numbers, "name") == measured
    # setup launches (the first two forwards) are numbered too: the cheapest cover needs 3 numbers
    assert len(measured) == cheapest_cover(gpt2_keys, 3)
    assert len(measured) < 2 * len(classes)


def test_twelve_identical_layers_are_sampled_once_not_twelve_times(twelve_layers):
    keys = twelve_layers
    assert len(keys) == 1175  # as the H200 benchmark's 5 forwards of GPT-2 small (12 layers)
    rows = {k.group for k in keys}
    classes = {work_of(k) for k in keys}
    assert (len(rows), len(classes)) == (7 + 12 * 14, 20)
    by_row = per_row(keys)
    row_numbers = plan_numbers(by_row, [True] * len(keys), 1)
    row_plan = ncu_selects(by_row, row_numbers)
    assert len(row_plan) >= len(rows)  # one launch per row at the least
    numbers = plan_numbers(keys, [True] * len(keys), 1)
    measured = ncu_selects(keys, numbers)
    assert {work_of(keys[p]) for p in measured} == classes
    assert len(measured) == cheapest_cover(keys, 2) < len(rows) / 5
    assert predict(keys, numbers, "name") == measured


def test_the_warm_plan_measures_every_row_of_a_class_on_its_own_launch(twelve_layers):
    # a warm figure depends on what ran before the launch: twelve identical layers are one class
    # for the cold run but twelve rows, each measured in the warm run
    keys = twelve_layers
    rows = {k.group for k in keys if k.group >= 0}
    cold = ncu_selects(keys, plan_numbers(keys, [True] * len(keys), 1))
    warm_numbers = plan_numbers(keys, [True] * len(keys), 1, class_of=warm_class)
    warm = ncu_selects(keys, warm_numbers)
    assert {keys[p].group for p in cold} < rows  # the cold plan leaves most rows to their class
    assert {keys[p].group for p in warm if keys[p].group >= 0} == rows
    assert predict(keys, warm_numbers, "name") == warm
    assert len(warm) <= 2 * len(rows)  # the cover keeps the measured launches near one per row


def test_samples_per_class_and_the_launch_skip(twelve_layers):
    keys = twelve_layers
    numbers = plan_numbers(keys, [True] * len(keys), 2)
    per_class = Counter(work_of(keys[p]) for p in ncu_selects(keys, numbers))
    assert min(per_class.values()) >= 2 and len(per_class) == 20
    eligible = [i >= 235 for i in range(len(keys))]  # --ncu-launch-skip 235: the first forward is not trusted
    numbers = plan_numbers(keys, eligible, 1)
    trusted = {work_of(keys[p]) for p in ncu_selects(keys, numbers) if p >= 235}
    assert trusted == {work_of(k) for k in keys}


def _launch(flops: float, dram: float, l2: float = 0.0, roof: str = "tensor.bf16") -> MeasuredLaunch:
    return MeasuredLaunch("k", None, None, 1e-6, {roof: flops}, dram_bytes=dram, l2_bytes=l2, l1_bytes=2 * l2)


def test_each_row_gets_its_class_mean_times_its_calls():
    # two layers, each: a layer norm (class L), two GEMMs of one kernel on two shapes (classes A, B),
    # and a row whose launches ran two grids (classes X, Y); two forwards: calls 2 (X/Y row: 3 launches)
    def key(name, grid, group, work):
        return LaunchKey(name, (grid, 1, 1), (128, 1, 1), 0, group, work)

    layer = lambda base: [key("ln", 8, base, "ln"), key("gemm", 64, base + 1, "mm a"),  # noqa: E731
                          key("gemm", 64, base + 2, "mm b")]
    setup = [key("ln", 8, -1, "ln")]
    mixed = [key("sum", 4, 6, "sum"), key("sum", 4, 6, "sum"), key("sum", 2, 6, "sum")]
    keys = setup + layer(0) + layer(3) + layer(0) + layer(3) + mixed
    calls = pd.Series([2, 2, 2, 2, 2, 2, 3])
    pairs = [
        (0, _launch(1e6, 1e6)),  # setup launch of class L: left out
        (1, _launch(10, 100, 7)),  # row 0 (L)
        (4, _launch(14, 140, 9)),  # row 3 (L): class L's mean is 12 FLOPs, 120 DRAM bytes, 8 L2 bytes
        (2, _launch(1000, 300)),  # row 1 (A): row 4 shares it
        (12, _launch(3000, 500)),  # row 5 (B), second forward: row 2 shares it
        (13, _launch(5, 50, roof="simt.fp32")),  # row 6, grid 4 (X)
        (15, _launch(8, 80, roof="simt.fp32")),  # row 6, grid 2 (Y)
    ]
    table = counters_by_row(keys, CounterJoin(pairs, "name"), calls)
    expect = {  # row: (FLOPs, DRAM bytes, L2 bytes, launches behind them, own launches among them)
        0: (12 * 2, 120 * 2, 8 * 2, 2, 1), 3: (12 * 2, 120 * 2, 8 * 2, 2, 1),
        1: (1000 * 2, 300 * 2, 0, 1, 1), 4: (1000 * 2, 300 * 2, 0, 1, 0),
        2: (3000 * 2, 500 * 2, 0, 1, 0), 5: (3000 * 2, 500 * 2, 0, 1, 1),
        6: ((5 + 5 + 8) / 3 * 3, (50 + 50 + 80) / 3 * 3, 0, 2, 2),  # two launches of grid 4, one of grid 2
    }
    assert sorted(table.index) == sorted(expect)
    for row, (flops, dram, l2, launches, own) in expect.items():
        got = table.loc[row]
        assert (got["measured_flops"], got["dram_bytes"], got["l2_bytes"]) == pytest.approx((flops, dram, l2)), row
        assert (got["measured_launches"], got["measured_own_launches"]) == (launches, own), row
        assert got["l1_bytes"] == pytest.approx(2 * l2)
    assert table.loc[0, "measured_precision"] == "tensor.bf16" and table.loc[6, "measured_precision"] == "simt.fp32"


def test_the_join_finds_ncus_selection_and_shares_it_over_the_layers(twelve_layers):
    keys = twelve_layers
    classes = sorted({work_of(k) for k in keys})
    flops_of = {c: 1000.0 * (i + 1) for i, c in enumerate(classes)}  # one value per class, as identical work gives
    numbers = plan_numbers(keys, [True] * len(keys), 1)
    measured = [MeasuredLaunch(keys[p].name, keys[p].grid, keys[p].block, 1e-6, {"tensor.bf16": flops_of[work_of(keys[p])]},
                               dram_bytes=2 * flops_of[work_of(keys[p])])
                for p in ncu_selects(keys, numbers)]
    join = join_measurements(keys, measured, numbers)
    assert join.rule in ("name", "config", "config-without-shared-memory") and join.unmatched == 0
    assert [p for p, _ in join.pairs] == ncu_selects(keys, numbers)
    rows = sorted({k.group for k in keys})
    calls = pd.Series(0, index=range(max(rows) + 1))
    row_class: dict[int, tuple] = {}
    for k in keys:
        calls[k.group] += 1
        row_class[k.group] = work_of(k)
    table = counters_by_row(keys, join, calls)
    assert sorted(table.index) == rows  # every row has counters, though 30 launches were measured
    for row in rows:
        assert table.loc[row, "measured_flops"] == pytest.approx(flops_of[row_class[row]] * calls[row])
    assert int(table["measured_own_launches"].sum()) == len(measured)  # each measured launch is one row's own
    assert int((table["measured_own_launches"] == 0).sum()) >= len(rows) - len(measured)  # the rest share


def test_the_warm_dram_bytes_are_a_rows_own_not_its_class():
    # two layers of one class (rows 0 and 1: one launch each per forward, two forwards): the cold
    # run's counters are shared over the class, the warm run's DRAM bytes are not (what ran
    # before a launch sets them): row 1, whose launches the warm run did not measure, gets none
    def key(group):
        return LaunchKey("mul", (64, 1, 1), (128, 1, 1), 0, group, "mul a")

    keys = [key(0), key(1), key(0), key(1)]
    calls = pd.Series([2, 2])
    cold = CounterJoin([(0, _launch(10, 100))], "name")
    warm = CounterJoin([(0, _launch(0, 30)), (2, _launch(0, 50))], "name")  # both of row 0's launches
    table = counters_by_row(keys, cold, calls, warm)
    assert table.loc[0, "dram_bytes"] == table.loc[1, "dram_bytes"] == pytest.approx(100 * 2)  # shared by class
    assert table.loc[0, "dram_bytes_warm"] == pytest.approx((30 + 50) / 2 * 2)
    assert math.isnan(table.loc[1, "dram_bytes_warm"])
