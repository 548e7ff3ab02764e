"""The LRU model of which bytes DRAM served (analysis/reuse_distance.py, issue 29), on made-up
launch sequences whose answer follows from the cache's size by hand, and the level a row gets
from it (analysis/memory_levels.row_levels)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rooflinectl.analysis.memory_levels import row_levels
from rooflinectl.analysis.reuse_distance import CLEAN_SHARE, FALL_OFF, dram_bytes_by_reuse

MB = 1_000_000
CAPACITY = 60 * MB


def _run(*accesses, other=None):
    other_bytes = np.asarray(other if other is not None else [0.0] * len(accesses), dtype=float)
    return dram_bytes_by_reuse(list(accesses), other_bytes, CAPACITY)


def test_an_input_just_written_is_served_by_the_cache_and_a_write_goes_to_dram() -> None:
    dram, spanned = _run(([], [1, 10 * MB]), ([1, 10 * MB], [2, 10 * MB]))
    assert dram.tolist() == [10 * MB, 10 * MB]  # the first launch writes; the second reads 1 from L2, writes 2
    assert spanned.tolist() == [10 * MB, 20 * MB]


def test_a_saved_activation_comes_from_dram_and_the_gradient_beside_it_from_the_cache() -> None:
    """mul(grad, saved): both 16 MB; 80 MB written in between evicts the saved one only."""
    saved, grad, out = 1, 2, 3
    steps = [([], [saved, 16 * MB])] + [([], [10 + i, 16 * MB]) for i in range(5)] + [([], [grad, 16 * MB])]
    dram, _ = _run(*steps, ([grad, 16 * MB, saved, 16 * MB], [out, 16 * MB]))
    assert dram[-1] == 32 * MB  # the saved read and the write; the gradient was in L2


def test_a_tensor_read_for_the_first_time_comes_from_dram() -> None:
    dram, _ = _run(([7, 5 * MB], []))
    assert dram.tolist() == [5 * MB]


def test_a_loop_on_a_tensor_that_fits_is_cached_and_on_one_that_does_not_is_not() -> None:
    small = [([1, 16 * MB], [])] * 4
    big = [([2, 100 * MB], [])] * 4
    assert _run(*small)[0].tolist() == [16 * MB, 0, 0, 0]
    assert _run(*big)[0].tolist() == [100 * MB] * 4  # re-read in order, it evicts its own lines


def test_distinct_tensors_count_once_however_often_they_are_touched() -> None:
    """Ten touches of one 10 MB tensor between a write and a read are 10 MB, not 100 MB."""
    steps = [([], [1, 30 * MB])] + [([2, 10 * MB], [])] * 10
    dram, _ = _run(*steps, ([1, 30 * MB], []))
    assert dram[-1] == 0


def test_launches_without_accesses_still_fill_the_cache() -> None:
    dram, spanned = _run(([], [1, 10 * MB]), None, ([1, 10 * MB], []), other=[0, 70 * MB, 0])
    assert np.isnan(dram[1]) and np.isnan(spanned[1])
    assert dram[2] == 10 * MB  # 70 MB of unknown traffic evicted it


def _frame(n: int, modelled: list[float], spanned: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"kernel": ["k"] * n, "op": ["aten::mul"] * n, "shapes": [""] * n, "bytes": spanned,
                         "time_s": [1e-5] * n, "modelled_dram_bytes": modelled, "spanned_bytes": spanned})


@pytest.mark.parametrize(("dram_mb", "level"), [(16.0, "l2"), (32.0, "dram"), (26.0, "l2"), (26.2, "dram")])
def test_a_row_is_held_to_the_level_whose_term_binds(dram_mb: float, level: str) -> None:
    """DRAM binds from DRAM roof / L2 roof of the bytes: 0.545 here (4.67 / 8.57 TB/s), 26.2 of 48 MB."""
    launches = _frame(1, [dram_mb * MB], [48 * MB])
    share = 4.67 / 8.57
    assert row_levels(launches, pd.Series([0]), 1, CAPACITY, "l2", share).tolist() == [level]


def test_rows_without_known_accesses_keep_the_shape_rule() -> None:
    launches = _frame(2, [np.nan, np.nan], [1 * MB, 1 * MB])  # a loop on a 1 MB footprint: resident by shapes
    assert row_levels(launches, pd.Series([0, 0]), 1, CAPACITY, "l2", 0.5).tolist() == ["l2"]


def test_the_readers_own_traffic_is_interleaved_with_the_read() -> None:
    """A 40 MB tensor written by a launch of 40 MB, then read by one that writes 40 MB: the
    distance (40 MB) fits 60 MB, the reader's own 40 MB does not fit beside it, so the part read
    before its writes fill the 20 MB left is cached: (60 - 40) / 40 of the read."""
    dram, _ = _run(([], [1, 40 * MB]), ([1, 40 * MB], [2, 40 * MB]))
    assert dram[1] == pytest.approx(20 * MB + 40 * MB)


def test_a_tensors_last_lines_are_as_old_as_the_end_of_the_launch_that_wrote_them() -> None:
    """A convolution-like launch reads 48 MB and writes 24 MB (72 MB: more than 60 MB), then a
    reader of its output with no traffic of its own: the output's line at t is followed by
    (1 - t) x 72 MB of the writer's traffic and, as the reader goes, by t x 24 MB of the output
    re-read, so it is cached where 72 - 48 t <= 60: t >= 0.25, three quarters of it."""
    dram, _ = _run(([1, 48 * MB], [2, 24 * MB]), ([2, 24 * MB], []))
    assert dram[1] == pytest.approx(0.25 * 24 * MB)


def test_with_a_fall_off_a_line_at_the_capacity_is_half_cached() -> None:
    """A 10 MB tensor written, then 50 MB of other writes, then read: every line is 60 MB old, the
    capacity. An exact LRU keeps it all; an L2 letting lines go from 0.7 to 1.3 times its size
    (FALL_OFF 0.3) keeps (1.3 - 1) / (1.3 - 0.7) of it, half."""
    steps = [([], [1, 10 * MB]), ([], [2, 50 * MB]), ([1, 10 * MB], [])]
    exact, _ = dram_bytes_by_reuse(steps, np.zeros(3), CAPACITY)
    gradual, _ = dram_bytes_by_reuse(steps, np.zeros(3), CAPACITY, fall_off=FALL_OFF)
    assert exact[2] == 0 and FALL_OFF == 0.3
    assert gradual[2] == pytest.approx(5 * MB)


def test_a_long_run_models_its_latest_launches(monkeypatch) -> None:
    import rooflinectl.analysis.reuse_distance as reuse

    monkeypatch.setattr(reuse, "MAX_MODELLED_LAUNCHES", 2)
    dram, _ = _run(([], [1, MB]), ([], [2, MB]), ([2, MB], []))
    assert np.isnan(dram[0]) and dram[1] == MB and dram[2] == 0


def test_a_tensor_only_read_last_holds_less_of_the_cache_than_one_written_last() -> None:
    """The H200's L2 keeps read lines in both halves (scripts/l2_reuse_sweep.py): a 48 MB tensor
    re-read after a launch that wrote it is cached, after one that only read it is not (48 MB is
    over CLEAN_SHARE of 60 MB, 42 MB, and under 60 MB)."""
    written, read = 1, 2
    after_write = _run_gpu(([], [written, 48 * MB]), ([written, 48 * MB], []))
    after_read = _run_gpu(([read, 48 * MB], []), ([read, 48 * MB], []))
    assert after_write.tolist() == [48 * MB, 0]
    assert after_read.tolist() == [48 * MB, 48 * MB]
    on_a_cpu = _run(([read, 48 * MB], []), ([read, 48 * MB], []))[0]  # not measured there: one capacity
    assert on_a_cpu.tolist() == [48 * MB, 0]


def _run_gpu(*accesses, in_place=None):
    return dram_bytes_by_reuse(list(accesses), np.zeros(len(accesses)), CAPACITY, in_place, CLEAN_SHARE)[0]


def test_an_in_place_update_makes_its_tensor_a_written_one() -> None:
    """add_ is recorded as reading its first input: told it updates it in place, the next reader
    sees written lines (all of the cache), not read ones."""
    x, y = 1, 2
    steps = [([x, 48 * MB], []), ([x, 48 * MB, y, 1 * MB], []), ([x, 48 * MB], [])]
    plain = _run_gpu(*steps)
    updated = _run_gpu(*steps, in_place=[False, True, False])
    assert plain[2] == 48 * MB  # 49 MB since a read-only touch: over 42 MB
    assert updated[2] == 0  # 49 MB since a write: under 60 MB
