"""The parallel trace reader (capture/read/trace_parallel.py) against the serial one, on real H200
traces: the same records, field by field, and a serial read whenever the file is not what the
parallel reader expects."""

from __future__ import annotations

import dataclasses
import gzip
import json
import pickle
from pathlib import Path

import pytest

from rooflinectl.capture.read import trace_parallel
from rooflinectl.capture.read.builder import TraceBuilder
from rooflinectl.capture.read.chrome_json import TraceFormatError, read_events
from rooflinectl.capture.read.identities import identity_candidates
from rooflinectl.capture.read.raw import RawTrace
from rooflinectl.capture.read.trace import read_chrome_trace

DATA = Path(__file__).parent / "data" / "h200_real"
TRACES = ["gpt2_fwd_eager.trace.json.gz", "gpt2_fwd_reduce_overhead.trace.json.gz", "ddp_gpt2.rank0.trace.json.gz"]


def _serial(path: Path) -> RawTrace:
    """The serial reader alone (what read_chrome_trace did before the parallel path)."""
    top, chunks = read_events(path)
    builder = TraceBuilder()
    for events in chunks:
        builder.add(events)
    return builder.finish(top)


def _plain_copy(name: str, tmp_path: Path) -> Path:
    """The recorded trace as torch wrote it, un-gzipped (the parallel reader seeks in the file)."""
    out = tmp_path / name.removesuffix(".gz")
    out.write_bytes(gzip.decompress((DATA / name).read_bytes()))
    return out


def _records(trace: RawTrace) -> dict[str, object]:
    def rows(records: list[object]) -> list[tuple[object, ...]]:
        return [tuple(getattr(r, f.name) for f in dataclasses.fields(r)) for r in records]

    return {"ops": rows(trace.ops), "kernels": rows(trace.kernels), "syncs": rows(trace.syncs),
            "launch_ts_ns": trace.launch_ts_ns, "graph_launches": trace.graph_launches,
            "graph_captures": trace.graph_captures, "distributed": trace.distributed, "origin_ns": trace.origin_ns}


@pytest.mark.parametrize("name", TRACES)
def test_worker_processes_read_the_same_records_as_the_serial_reader(name: str, tmp_path: Path) -> None:
    path = _plain_copy(name, tmp_path)
    serial = _serial(path)
    parallel = trace_parallel.read_parallel(path, 3)
    assert parallel is not None
    assert len(parallel.kernels) == len(serial.kernels) > 100
    assert _records(parallel) == _records(serial)
    # equal input lists are one object across the ranges, as the serial reader makes them
    # (memory, and attribution costs each distinct call once)
    assert len({id(o.input_dims) for o in parallel.ops}) == len({id(o.input_dims) for o in serial.ops})
    if "reduce_overhead" in name:  # a CUDA-graph capture: its runtime calls crossed into another range
        assert serial.graph_captures and parallel.graph_captures == serial.graph_captures


@pytest.mark.slow
@pytest.mark.parametrize("block_bytes", [4096, 64])  # many events a block; a block shorter than an event
def test_ranges_in_small_blocks_and_many_parts_join_to_the_same_trace(tmp_path: Path, block_bytes: int,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    path = _plain_copy(TRACES[1], tmp_path)
    monkeypatch.setattr(trace_parallel, "BLOCK_BYTES", block_bytes)  # each range decoded in many blocks
    import mmap

    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        top, start, separator = trace_parallel._layout(data)
        ranges = trace_parallel._ranges(data, start, len(data), separator, 7)
    assert len(ranges) == 7
    parts = [trace_parallel.read_range(str(path), a, b, i == len(ranges) - 1, separator)
             for i, (a, b) in enumerate(ranges)]
    joiner = trace_parallel._Joiner()
    for part in parts:
        joiner.add(part)
    assert _records(joiner.finish(top)) == _records(_serial(path))


def test_events_written_at_the_left_margin_are_cut_too(tmp_path: Path) -> None:
    """The layout scripts/bench_scale.py synth writes: each event indented from column 0."""
    doc = json.loads(gzip.decompress((DATA / TRACES[0]).read_bytes()))
    events = doc.pop("traceEvents")
    path = tmp_path / "margin.json"
    path.write_text(json.dumps(doc, indent=2)[:-2] + ',\n  "traceEvents": [\n'
                    + ",\n".join(json.dumps(e, indent=2) for e in events) + '\n  ],\n  "traceName": "x"\n}\n')
    parallel = trace_parallel.read_parallel(path, 4)
    assert parallel is not None
    assert _records(parallel) == _records(_serial(path))


def test_what_it_cannot_cut_is_left_to_the_serial_reader(tmp_path: Path) -> None:
    doc = json.loads(gzip.decompress((DATA / TRACES[0]).read_bytes()))
    one_line = tmp_path / "one_line.json"
    one_line.write_text(json.dumps(doc))  # no newlines between events: no place to cut
    assert trace_parallel.read_parallel(one_line, 4) is None
    assert trace_parallel.read_parallel(DATA / TRACES[0], 4) is None  # gzipped: nothing to seek in
    # a range that does not decode (a broken event in the middle): the workers give up, and the
    # serial reader says what is wrong, as it always did
    broken = _plain_copy(TRACES[0], tmp_path)
    text = broken.read_bytes()
    middle = text.index(b'"ph": "X"', len(text) // 2)
    broken.write_bytes(text[:middle] + b'"ph": X' + text[middle + 9:])
    assert trace_parallel.read_parallel(broken, 4) is None
    with pytest.raises(TraceFormatError):
        read_chrome_trace(broken)


def test_worker_count_follows_size_cores_and_the_environment() -> None:
    assert trace_parallel.worker_count(10 << 20, {}) == 0  # small: serial
    assert trace_parallel.worker_count(10 << 20, {"ROOFLINECTL_READ_WORKERS": "3"}) == 3
    assert trace_parallel.worker_count(1 << 30, {"ROOFLINECTL_READ_WORKERS": "0"}) == 0
    big = trace_parallel.worker_count(1 << 30, {})
    assert 0 <= big <= trace_parallel.MAX_WORKERS


def test_read_chrome_trace_uses_the_workers_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _plain_copy(TRACES[0], tmp_path)
    calls = []
    real = trace_parallel.read_parallel
    monkeypatch.setattr(trace_parallel, "read_parallel", lambda p, n, meanwhile=None, before_join=None: calls.append(n) or real(p, n))
    monkeypatch.setenv("ROOFLINECTL_READ_WORKERS", "2")
    assert _records(read_chrome_trace(path)) == _records(_serial(path))
    assert calls == [2]


@pytest.mark.parametrize("workers", ["3", "0"])
def test_the_callers_work_runs_once_while_the_workers_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           workers: str) -> None:
    """`analyse` imports torch and pandas meanwhile; with workers it runs after they start and
    before their first range is joined, without them before reading; never twice, never lost."""
    path = _plain_copy(TRACES[0], tmp_path)
    monkeypatch.setenv("ROOFLINECTL_READ_WORKERS", workers)
    seen: list[int] = []
    joined: list[int] = []
    real_add = trace_parallel._Joiner.add
    monkeypatch.setattr(trace_parallel._Joiner, "add", lambda self, part: joined.append(1) or real_add(self, part))
    trace = read_chrome_trace(path, meanwhile=lambda: seen.append(len(joined)))
    assert seen == [0]  # once, before anything was joined
    assert bool(joined) == (workers != "0")
    assert _records(trace) == _records(_serial(path))


def test_the_callers_work_is_not_run_twice_when_the_workers_fail(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = _plain_copy(TRACES[0], tmp_path)
    monkeypatch.setenv("ROOFLINECTL_READ_WORKERS", "2")
    monkeypatch.setattr(trace_parallel._Joiner, "add", lambda self, part: (_ for _ in ()).throw(EOFError()))
    seen: list[int] = []
    trace = read_chrome_trace(path, meanwhile=lambda: seen.append(1))
    assert seen == [1]  # run while the workers read; the serial read that follows does not repeat it
    assert _records(trace) == _records(_serial(path))


def _torch_layout(events: list[dict[str, object]]) -> bytes:
    """A trace file laid out as torch writes one: each event a block between `\\n  {` and `\\n  }`."""
    body = ",".join("\n  {" + json.dumps(e)[1:-1] + "\n  }" for e in events)
    return ('{\n  "schemaVersion": 1,\n  "traceEvents": [' + body + '\n  ],\n  "traceName": "t"\n}\n').encode()


def test_equal_inputs_in_many_small_blocks_keep_their_own_values(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Ops of a few input shapes in random order, one block each: a block's input lists are let
    go once joined, and a later block's may take their addresses; shapes must not cross over."""
    import random

    rng = random.Random(7)
    shapes = [[[n, 8], [n, 8]] for n in (2, 3, 5, 7, 11)]
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": float(i), "dur": 0.5,
               "args": {"External id": i + 1, "Input Dims": rng.choice(shapes), "Input type": ["float", "float"],
                        "Input Strides": [[8, 1], [8, 1]], "Concrete Inputs": ["", ""]}} for i in range(400)]
    path = tmp_path / "small.json"
    path.write_bytes(_torch_layout(events))
    monkeypatch.setattr(trace_parallel, "BLOCK_BYTES", 64)
    import mmap

    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        top, start, separator = trace_parallel._layout(data)
        ranges = trace_parallel._ranges(data, start, len(data), separator, 8)
    joiner = trace_parallel._Joiner()
    for i, (a, b) in enumerate(ranges):  # as the workers' parts arrive: unpickled one after the other
        part = trace_parallel.read_range(str(path), a, b, i == len(ranges) - 1, separator)
        joiner.add(pickle.loads(pickle.dumps(part)))
        del part
    joined = joiner.finish(top)
    assert [op.input_dims for op in joined.ops] == [e["args"]["Input Dims"] for e in events]
    assert len({id(op.input_dims) for op in joined.ops}) == len(shapes)


def test_a_blank_line_before_the_first_event_is_read_in_parallel_too(tmp_path: Path) -> None:
    """torch 2.14's CPU export puts an indented blank line after `"traceEvents": [`."""
    text = gzip.decompress((DATA / TRACES[0]).read_bytes())
    at = text.index(b'"traceEvents": [') + len(b'"traceEvents": [')
    path = tmp_path / "blank_line.json"
    path.write_bytes(text[:at] + b"\n    " + text[at:])
    parallel = trace_parallel.read_parallel(path, 3)
    assert parallel is not None
    assert _records(parallel) == _records(_serial(path))


def test_a_worker_imports_no_numpy_and_starts_no_thread_pools() -> None:
    """On a many-core machine importing numpy started a BLAS thread pool in every worker (2.2 s of
    CPU each on the H200's 16 cores, for ranges that take 0.15 s)."""
    import subprocess
    import sys

    code = "import sys, rooflinectl.capture.read.trace_parallel as t; print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'pandas', 'torch')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert {trace_parallel.WORKER_THREADS_ENV[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")} == {"1"}


@pytest.mark.parametrize("name", ["gpt2_train_eager.trace.json.gz", "resnet50_train_eager.trace.json.gz",
                                  "ddp_gpt2.rank0.trace.json.gz"])
@pytest.mark.slow
def test_identity_times_come_before_any_range_is_joined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        name: str) -> None:
    """`profile` reads tensor identities, and frees the profiler's events, before the workers'
    records are joined: the times it gets must be exactly those of the ops the serial reader's
    identity_candidates finds (profiler clock, whole microseconds), and nothing joined yet."""
    path = _plain_copy(name, tmp_path)
    monkeypatch.setenv("ROOFLINECTL_READ_WORKERS", "3")
    joined: list[int] = []
    real_add = trace_parallel._Joiner.add
    monkeypatch.setattr(trace_parallel._Joiner, "add", lambda self, part: joined.append(1) or real_add(self, part))
    got: list[tuple[int, list[int]]] = []
    trace = read_chrome_trace(path, before_join=lambda times: got.append((len(joined), times)))
    reference = _serial(path)
    expected = sorted((reference.origin_ns + reference.ops[i].ts_ns) // 1000 for i in identity_candidates(reference))
    assert len(got) == 1 and got[0][0] == 0  # once, before the first range was joined
    assert sorted(got[0][1]) == expected and len(expected) > 100
    assert _records(trace) == _records(reference)
