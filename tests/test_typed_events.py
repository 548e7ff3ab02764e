"""Typed events (msgspec: only the keys the reader uses, input lists as raw JSON text) give the
same records, value for value and type for type, as the dicts a general JSON decoder gives."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from rooflinectl.capture.read import builder as builder_module
from rooflinectl.capture.read import chrome_json
from rooflinectl.capture.read.builder import TraceBuilder
from rooflinectl.capture.read.chrome_json import TraceFormatError
from rooflinectl.capture.read.spec import decode_events
from rooflinectl.capture.read.trace import from_chrome_trace, read_chrome_trace
from rooflinectl.capture.read.typed_events import TypedEvents

msgspec = pytest.importorskip("msgspec")

REAL = Path(__file__).parent / "data" / "h200_real"


def _typed(value: Any) -> Any:
    """value with the type of every part spelled out: 0 and 0.0, or a list and a tuple, differ."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, tuple((f.name, _typed(getattr(value, f.name)))
                                            for f in dataclasses.fields(value) if f.compare))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(map(_typed, value)))
    if isinstance(value, dict):
        return ("dict", tuple((k, _typed(v)) for k, v in value.items()))
    return (type(value).__name__, value)


def _kinds_read(monkeypatch) -> list[str]:
    """The type of the event list each TraceBuilder.add call gets, as reading goes on."""
    kinds: list[str] = []
    add = TraceBuilder.add

    def counting(self, events):
        kinds.append(type(events).__name__)
        return add(self, events)

    monkeypatch.setattr(TraceBuilder, "add", counting)
    return kinds


def test_the_reader_decodes_typed_events() -> None:
    events = decode_events(b'[{"ph": "X", "cat": "kernel", "name": "k", "ts": 1.5, "pid": 3, "args": '
                           b'{"correlation": 7, "est. achieved occupancy %": 50, "grid": [1, 2, 3]}}]')
    assert isinstance(events, TypedEvents)
    assert events == [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1.5,  # keys never read (pid) are skipped
                       "args": {"correlation": 7, "grid": [1, 2, 3]}}]


@pytest.mark.parametrize("name", ["gpt2_train_eager", "gpt2_fwd_compiled", "resnet50_train_eager",
                                  "ddp_gpt2.rank0", "gpt2_fwd_reduce_overhead", "moe_grouped"])
@pytest.mark.slow
def test_real_h200_traces_read_typed_as_they_read_as_dicts(name, monkeypatch) -> None:
    """Compiled, CUDA-graph, training and distributed traces: every record, typed or dict-decoded,
    the same to the type of each value (Inductor's and collectives' args included)."""
    path = REAL / f"{name}.trace.json.gz"
    with gzip.open(path, "rt") as handle:
        reference = from_chrome_trace(json.load(handle))  # dicts, the whole file at once
    monkeypatch.setattr(chrome_json, "BLOCK_BYTES", 64 << 10)  # many chunks: all but the last typed
    kinds = _kinds_read(monkeypatch)
    typed = read_chrome_trace(path)
    assert kinds.count("TypedEvents") >= 3 and kinds[-1] == "list"
    assert _typed(typed) == _typed(reference)
    assert len({id(o.input_dims) for o in typed.ops}) == len({id(o.input_dims) for o in reference.ops})


def _trace_text(events: list[dict[str, Any]]) -> bytes:
    return json.dumps({"traceEvents": events, "traceName": "t"}, indent=2).encode()


def test_missing_keys_take_the_dict_readers_defaults(tmp_path, monkeypatch) -> None:
    """Events lacking args, input lists, grid, dur or tid: the typed defaults (raw `[]` for input
    lists among them) must give what the dict reader's .get defaults give."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "ts": 1.0, "dur": 1.0},  # no args, no tid
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "ts": 2.0, "tid": 4,
         "args": {"External id": 2, "Input Dims": [[4], [4]]}},  # no types, strides, values, dur
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "ts": 3.0, "tid": 4, "dur": 1,
         "args": {"External id": 3, "Input Dims": [[4], [4]], "Input type": None}},
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 2.5, "dur": 0.5, "args": {"correlation": 9}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "ts": 4.0, "args": {"correlation": 10}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 2.2, "dur": 0.1, "tid": "main",
         "args": {"correlation": 9, "External id": 2}},
        {"ph": "i", "name": "marker", "ts": 5.0},
    ]
    (tmp_path / "t.json").write_bytes(_trace_text(events * 40))
    reference = from_chrome_trace({"traceEvents": events * 40, "traceName": "t"})
    monkeypatch.setattr(chrome_json, "BLOCK_BYTES", 4096)
    kinds = _kinds_read(monkeypatch)
    typed = read_chrome_trace(tmp_path / "t.json")
    assert "TypedEvents" in kinds
    assert _typed(typed) == _typed(reference)
    assert typed.ops[0].input_dims == [] and typed.syncs[0].dur_ns == 0
    # a complete event with no start time is damage, said by either reader, never dropped in silence
    undated = events + [{"ph": "X", "cat": "cpu_op", "name": "no time"}]
    (tmp_path / "u.json").write_bytes(_trace_text(undated * 40))
    with pytest.raises(TraceFormatError, match="40 of the trace's .* have no usable start time"):
        read_chrome_trace(tmp_path / "u.json")
    with pytest.raises(TraceFormatError, match="no usable start time"):
        from_chrome_trace({"traceEvents": undated * 40, "traceName": "t"})


def test_events_that_do_not_fit_the_types_are_read_as_dicts(tmp_path, monkeypatch) -> None:
    """Valid JSON of other types (an `args` that is a list) is decoded the general way, and reads
    as it always did."""
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "tid": 1, "ts": float(i), "dur": 0.5,
               "args": {"External id": i, "Input Dims": [[2]]} if i % 7 else []} for i in range(200)]
    (tmp_path / "t.json").write_bytes(_trace_text(events))
    monkeypatch.setattr(chrome_json, "BLOCK_BYTES", 2048)
    assert not isinstance(decode_events(b'[{"ph": "X", "args": []}]'), TypedEvents)
    typed = read_chrome_trace(tmp_path / "t.json")
    assert _typed(typed) == _typed(from_chrome_trace({"traceEvents": events}))


def test_text_that_is_not_json_is_refused() -> None:
    with pytest.raises(ValueError):
        decode_events(b'[{"ph": "X", "args": {"Input Dims": [[1]}]')


def test_raw_input_lists_are_decoded_once_per_distinct_text(monkeypatch) -> None:
    """A long run repeats a few distinct inputs: each distinct text is decoded once, and ops with
    equal inputs share one copy of the lists (as the dict reader makes them share)."""
    event = (b'{"ph": "X", "cat": "cpu_op", "name": "aten::mul", "ts": %d, "args": {"Input Dims": [[8], [8]], '
             b'"Input type": ["float", "float"]}}')
    builder = TraceBuilder()
    decoded: list[bytes] = []
    original = builder_module.decode_json

    def counting(data: bytes) -> Any:
        decoded.append(bytes(data))
        return original(data)

    monkeypatch.setattr(builder_module, "decode_json", counting)
    for block in range(3):
        builder.add(decode_events(b"[" + b",".join(event % (block * 10 + i) for i in range(10)) + b"]"))
    ops = builder.finish().ops
    assert len(ops) == 30 and len({id(o.input_dims) for o in ops}) == 1
    assert ops[0].input_dims == [[8], [8]] and ops[0].input_types == ["float", "float"]
    assert sorted(decoded) == sorted([b"[[8], [8]]", b'["float", "float"]', b"[]", b"[]"])
