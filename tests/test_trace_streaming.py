"""The streamed trace reader gives what decoding the whole file gives, in bounded chunks."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from rooflinectl.capture.read import chrome_json
from rooflinectl.capture.read.chrome_json import TraceFormatError, read_events
from rooflinectl.capture.read.identities import identity_candidates
from rooflinectl.capture.read.trace import from_chrome_trace, read_chrome_trace

REAL = Path(__file__).parent / "data" / "h200_real"


def _event(i: int, name: str) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 100.0 + i, "dur": 0.5,
            "args": {"External id": i, "Input Dims": [[2, 3], []], "Input type": ["float", "Scalar"],
                     "Input Strides": [[3, 1], []], "Concrete Inputs": ["", "1"]}}


def _write(path: Path, events: list[dict], indent: int | None = 2) -> dict:
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "x"}], "baseTimeNanoseconds": 7000,
           "traceEvents": events, "traceName": "after the events"}
    path.write_text(json.dumps(doc, indent=indent))
    return doc


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("decoder", ["default", "stdlib"])
def test_chunks_are_whole_events_even_where_strings_look_like_a_cut(tmp_path, monkeypatch, indent, decoder) -> None:
    """Names holding `}, {` and braces (as C++ lambdas do) must not split an event; the standard
    library's decoder (used where orjson is not installed) reads the same."""
    monkeypatch.setattr(chrome_json, "BLOCK_BYTES", 300)  # many chunks, cuts tried inside strings
    if decoder == "stdlib":
        monkeypatch.setattr(chrome_json, "_decode", json.loads)
    names = ["aten::add", 'f<{lambda()#1}, {"ph": "X"}>', "g}, {h", "}\\\"}, {\\\"", "plain"]
    events = [_event(i, names[i % len(names)]) for i in range(60)]
    doc = _write(tmp_path / "t.json", events, indent)
    top, chunks = read_events(tmp_path / "t.json")
    parts = list(chunks)
    assert len(parts) > 3
    assert [e for part in parts for e in part] == doc["traceEvents"]
    assert top == {k: v for k, v in doc.items() if k != "traceEvents"}  # keys after the array too


def test_gzip_and_plain_read_alike(tmp_path) -> None:
    doc = _write(tmp_path / "t.json", [_event(i, "aten::mul") for i in range(5)])
    with gzip.open(tmp_path / "t.json.gz", "wt") as handle:
        json.dump(doc, handle)
    plain, gz = read_chrome_trace(tmp_path / "t.json"), read_chrome_trace(tmp_path / "t.json.gz")
    assert plain.to_json() == gz.to_json()
    assert [o.ts_ns for o in plain.ops] == [0, 1000, 2000, 3000, 4000]
    assert plain.origin_ns == 7000 + 100_000  # baseTimeNanoseconds + the first event's ts


def test_equal_inputs_are_stored_once(tmp_path) -> None:
    _write(tmp_path / "t.json", [_event(i, "aten::mul") for i in range(50)])
    ops = read_chrome_trace(tmp_path / "t.json").ops
    assert len({id(o.input_dims) for o in ops}) == 1
    assert ops[0].input_dims == [[2, 3], []] and ops[7].concrete_inputs == ["", "1"]


@pytest.mark.parametrize("text", ["", "{", '{"traceEvents": [{"ph": "X",', "[1, 2]", '{"traceEvents": 3}'])
def test_broken_files_raise_one_error(tmp_path, text) -> None:
    (tmp_path / "bad.json").write_text(text)
    with pytest.raises(TraceFormatError):
        read_chrome_trace(tmp_path / "bad.json")


@pytest.mark.parametrize("name", ["gpt2_fwd_eager", "ddp_gpt2.rank0", "gpt2_fwd_reduce_overhead", "moe_loop"])
def test_real_h200_traces_stream_as_they_decode_whole(name, monkeypatch) -> None:
    """The streamed reader against the reference: the same events decoded whole by json.load."""
    monkeypatch.setattr(chrome_json, "BLOCK_BYTES", 64 << 10)
    path = REAL / f"{name}.trace.json.gz"
    with gzip.open(path, "rt") as handle:
        whole = from_chrome_trace(json.load(handle))
    streamed = read_chrome_trace(path)
    assert streamed.to_json() == whole.to_json()
    assert len(streamed.kernels) > 0


def test_identity_candidates_are_ops_that_can_share_an_input() -> None:
    def op(i, types, dims, strides):
        return {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "tid": 1, "ts": float(i), "dur": 0.1,
                "args": {"Input type": types, "Input Dims": dims, "Input Strides": strides}}
    trace = from_chrome_trace({"traceEvents": [
        op(0, ["float", "float"], [[4, 4], [4, 4]], [[4, 1], [4, 1]]),  # x * x (or x * y of one layout)
        op(1, ["float", "float"], [[4, 4], [4, 4]], [[1, 4], [4, 1]]),  # x * x.t(): different layouts
        op(2, ["float", "Scalar"], [[4, 4], []], [[4, 1], []]),  # one tensor
        op(3, ["TensorList", "Scalar"], [[[4], [4]], []], [[[1], [1]], []]),  # a list: element dtypes
        op(4, ["Scalar", "Scalar"], [[], []], [[], []]),
    ]})
    assert [trace.ops[i].name for i in identity_candidates(trace)] == ["op0", "op3"]


def test_capture_file_round_trips_column_by_column(tmp_path) -> None:
    from rooflinectl.capture.run.session import Capture, load_capture, save_capture

    with gzip.open(REAL / "gpt2_fwd_eager.trace.json.gz", "rt") as handle:
        trace = from_chrome_trace(json.load(handle))
    trace.ops[3].input_storages = [140000, [140000, 0], None]
    save_capture(Capture("cuda", trace, {"device_name": "NVIDIA H200"}), str(tmp_path / "c.json.gz"))
    again = load_capture(str(tmp_path / "c.json.gz"))
    assert again.trace.ops == trace.ops and again.trace.kernels == trace.kernels
    assert again.trace.launch_ts_ns == trace.launch_ts_ns and again.trace.origin_ns == trace.origin_ns
    assert again.metadata == {"device_name": "NVIDIA H200"}
    assert len({id(k.name) for k in again.trace.kernels}) == len({k.name for k in trace.kernels})  # stored once


def test_capture_columns_missing_from_a_file_get_their_defaults() -> None:
    from rooflinectl.capture.read.raw import RawTrace

    data = {"layout": "columns", "ops": {"external_id": [5], "name": {"table": ["aten::mm"], "index": [0]},
                                        "category": {"table": ["cpu_op"], "index": [0]}, "tid": [1], "ts_ns": [0],
                                        "dur_ns": [10]},
            "kernels": {"name": {"table": ["k"], "index": [0]}, "category": {"table": ["kernel"], "index": [0]},
                        "ts_ns": [3], "dur_ns": [2], "external_id": [5], "correlation": [9]}}
    trace = RawTrace.from_json(data)
    assert trace.ops[0].name == "aten::mm" and trace.ops[0].input_dims == [] and trace.ops[0].input_storages == []
    assert trace.kernels[0].grid is None and trace.kernels[0].stream == 0 and trace.launch_ts_ns == {}


@pytest.mark.slow
def test_without_orjson_the_standard_library_reads_and_writes_the_same(tmp_path) -> None:
    """The GPU machine may lack orjson (installed --no-deps): every path falls back to json."""
    import subprocess
    import sys

    code = f"""
import sys, json
sys.modules["orjson"] = None  # import orjson now fails
from rooflinectl.capture.read import chrome_json
from rooflinectl.capture.run.session import Capture, load_capture, save_capture
from rooflinectl.capture.read.trace import read_chrome_trace
assert chrome_json.DECODER == "json"
chrome_json.BLOCK_BYTES = 1 << 16
trace = read_chrome_trace({str(REAL / "gpt2_fwd_eager.trace.json.gz")!r})
save_capture(Capture("cuda", trace, {{}}), {str(tmp_path / "c.json.gz")!r})
again = load_capture({str(tmp_path / "c.json.gz")!r}).trace
print(json.dumps([len(trace.ops), len(trace.kernels), again.ops == trace.ops, again.kernels == trace.kernels,
                  len({{id(o.input_dims) for o in trace.ops}})]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    ops, kernels, same_ops, same_kernels, distinct_inputs = json.loads(done.stdout.strip().splitlines()[-1])
    with gzip.open(REAL / "gpt2_fwd_eager.trace.json.gz", "rt") as handle:
        reference = from_chrome_trace(json.load(handle))
    assert (ops, kernels) == (len(reference.ops), len(reference.kernels))
    assert same_ops and same_kernels and distinct_inputs < ops


def test_tensor_identities_go_to_the_op_that_started_nearest() -> None:
    """Two aten::mul a microsecond apart; the event tree's start times differ from the trace's by
    a nanosecond (three decimals of microseconds), across a microsecond boundary: each op must
    get its own identities, never its neighbour's."""
    from rooflinectl.capture.read.identities import add_tensor_info

    def mul(ts_us: float) -> dict:
        return {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "tid": 1, "ts": ts_us, "dur": 0.5,
                "args": {"Input type": ["float", "float"], "Input Dims": [[4], [4]], "Input Strides": [[1], [1]]}}

    trace = from_chrome_trace({"baseTimeNanoseconds": 1_000_000_000, "traceEvents": [mul(10.0), mul(11.499)]})
    first, second = (trace.origin_ns + op.ts_ns for op in trace.ops)
    assert second - first == 1499
    add_tensor_info(trace, {("aten::mul", first + 1): {"storages": [7, 7]},  # x * x
                            ("aten::mul", second + 2): {"storages": [7, 8]}})  # x * y, past the microsecond
    assert [op.input_storages for op in trace.ops] == [[7, 7], [7, 8]]


def test_a_saved_capture_is_recognised_as_ours(tmp_path) -> None:
    """profile --save-capture replaces an earlier capture of ours without --force: the marker it
    looks for must be in the file as save_capture writes it (orjson writes no spaces)."""
    from rooflinectl.capture.run.session import Capture, save_capture
    from rooflinectl.cli.profile_cmd import is_capture

    with gzip.open(REAL / "mlp_small.trace.json.gz", "rt") as handle:
        trace = from_chrome_trace(json.load(handle))
    save_capture(Capture("cuda", trace, {}), str(tmp_path / "c.json.gz"))
    assert is_capture(tmp_path / "c.json.gz")


def test_columns_keep_each_value_its_type_and_share_only_what_was_shared() -> None:
    from dataclasses import dataclass, field

    from rooflinectl.capture.read.columns import from_columns, to_columns

    @dataclass
    class Row:
        text: str
        lists: list = field(default_factory=list)
        mixed: object = None
        number: float = 0.0

    shared = [1, 2]
    equal_not_shared = [1, 2]
    rows = [Row("a", [], [], 1), Row("b", shared, {}, 2.5), Row("a", shared, shared, 3),
            Row("c", equal_not_shared, None, 4), Row("a", [], "", 5), Row("b", {}, {"k": 1}, 6)]
    columns = to_columns(rows, Row)
    assert columns["number"] == [1, 2.5, 3, 4, 5, 6]
    assert columns["text"] == {"table": ["a", "b", "c"], "index": [0, 1, 0, 2, 0, 1]}
    # an empty dict never comes back as an empty list (nor "" as either)
    back = from_columns(columns, Row)
    assert back == rows
    assert [type(r.lists) for r in back] == [list, list, list, list, list, dict]
    assert [type(r.mixed) for r in back] == [list, dict, list, type(None), str, dict]
    assert back[1].lists is back[2].lists and back[2].mixed is back[1].lists  # shared stays shared
    assert back[3].lists is not back[1].lists  # equal is not the same object unless the parser made it so
    assert to_columns([], Row) == {"text": [], "lists": [], "mixed": [], "number": []}


def test_times_become_nanoseconds_as_python_rounds_them() -> None:
    import random

    from rooflinectl.capture.read.builder import ns_from

    rng = random.Random(7)
    base = 5175733827172.983
    times = [base + rng.uniform(0, 1e6) for _ in range(2000)]
    times += [base + k * 0.0005 for k in range(2000)]  # halves of a nanosecond: round half to even
    times += [float(k) + 0.5e-3 for k in range(-50, 50)]  # exact halves near zero
    assert ns_from(times, base) == [int(round((t - base) * 1000.0)) for t in times]
    assert ns_from(times[-100:], 0.0) == [int(round(t * 1000.0)) for t in times[-100:]]
    assert all(type(v) is int for v in ns_from(times[:3], base))
