"""Read a large Chrome trace with several processes: each decodes a range of the event array.

Reading a trace is Python work per event (decoding, then a record per op and kernel): about
22 us per kernel launch on one core, seconds for a long run. The exported file splits cleanly:
torch writes each top-level event as its own indented block, so `\\n  },\\n  {` (with the first
event's indentation; JSON strings hold no raw newline, and nested objects are indented deeper)
separates two top-level events and nothing else. The file is cut there into
ranges, a few per worker process (`python -m rooflinectl.capture.read.trace_parallel`, which imports
neither torch, pandas nor numpy); a worker decodes each of its ranges in blocks, runs the
TraceBuilder over it, and writes its rows in columns (capture/read/columns.py) before starting its
next range.
The parent joins the ranges in file order as they land, while the workers read on (on two cores
that saved 2.5 s of a 16.6 s read), shares equal input lists across them as the serial reader
does, and finishes the trace: the same RawTrace as read_chrome_trace's serial path
(tests/test_trace_parallel.py).

The columns travel as pickle files in a temporary folder the parent made for this read (mode
0700) and removes: only our own workers' output is unpickled, never a file the user gave.

When the profiler that wrote the trace still holds its events (`profile`, capture/run/session.py),
the parent joins nothing until every range is read: the workers also write the start times of
the ops that may share an input, the caller reads those ops' tensor identities from the
profiler's event tree and frees its events, and only then are the records joined. The process's
peak is then the profiler's own, not the profiler's events plus the trace's records.

Used when the file is large and the machine has spare cores (ROOFLINECTL_READ_WORKERS=N sets the
number of workers, 0 switches it off). Anything unexpected (another layout, a gzipped file, a
worker that fails) returns None and the caller reads the file serially: never a lost trace.
"""

from __future__ import annotations

import mmap
import os
import pickle
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rooflinectl.capture.progress import report
from rooflinectl.capture.read.builder import TraceBuilder
from rooflinectl.capture.read.chrome_json import (
    _EVENTS_KEY,
    HEADER_LIMIT_BYTES,
    decode_json,
    gc_paused,
)
from rooflinectl.capture.read.columns import from_columns, rows_to_columns, to_columns
from rooflinectl.capture.read.identities import identity_times_us, profiler_times_us
from rooflinectl.capture.read.raw import RawKernel, RawOp, RawSync, RawTrace
from rooflinectl.capture.read.spec import INPUT_LISTS, decode_events

WORKERS_ENV = "ROOFLINECTL_READ_WORKERS"
MIN_PARALLEL_BYTES = 64 << 20  # below this, starting processes costs more than it saves
BYTES_PER_WORKER = 32 << 20
MAX_WORKERS = 8
RANGES_PER_WORKER = 3  # the parent joins a worker's first ranges while it reads its later ones
BLOCK_BYTES = 8 << 20  # a worker decodes this much at a time (bounded memory)
WORKER_TIMEOUT_S = 600.0
# A worker is one thread of Python: no math library may start a thread pool per core in it (the
# worker imports no numpy; this holds if a later import brings one in).
WORKER_THREADS_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def worker_count(size_bytes: int, environ: dict[str, str] | None = None) -> int:
    """How many workers to read a file of this size with (0: read it serially)."""
    text = (environ if environ is not None else os.environ).get(WORKERS_ENV, "").strip()
    if text:
        try:
            return max(int(text), 0)
        except ValueError:
            pass
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    if size_bytes < MIN_PARALLEL_BYTES or cpus < 2:
        return 0
    # the parent waits while they work: on a few cores each core takes a range, on more one is left
    return max(min(MAX_WORKERS, cpus if cpus < 4 else cpus - 1, size_bytes // BYTES_PER_WORKER), 0)


def _ranges(data: mmap.mmap | bytes, start: int, end: int, separator: bytes, parts: int) -> list[tuple[int, int]]:
    """[start, end) cut into up to `parts` ranges of whole events: each ends after an event's `}`
    and the next begins at the following event's `{` (the separating comma belongs to neither)."""
    cuts = [start]
    for i in range(1, parts):
        at = data.find(separator, max(start + (end - start) * i // parts, cuts[-1]), end)
        if at < 0:
            break
        close = at + separator.index(b"}") + 1
        opening = at + separator.rindex(b"{")
        if close <= cuts[-1]:
            continue
        cuts += [close, opening]
    cuts.append(end)
    return [(cuts[i], cuts[i + 1]) for i in range(0, len(cuts), 2)]


def _layout(data: mmap.mmap) -> tuple[dict[str, Any], int, bytes] | None:
    """(the top-level keys before the event array, where the array's first event begins, the
    separator between its events), or None when the file is not laid out that way."""
    match = _EVENTS_KEY.search(data, 0, min(len(data), HEADER_LIMIT_BYTES))  # in place: no copy of the file
    if match is None:
        return None
    try:
        top = decode_json(data[: match.start()].rstrip().rstrip(b",") + b"}")
    except ValueError:
        return None
    rest = data[match.end(): match.end() + 256]
    first = rest.find(b"{")
    line_start = rest.rfind(b"\n", 0, first) + 1
    indent = rest[line_start:first]
    # the first event's `{` begins a line, after blank space only, indented by spaces alone
    if not isinstance(top, dict) or first < 0 or line_start == 0 or rest[:first].strip() or indent.strip(b" "):
        return None
    return top, match.end(), b"\n" + indent + b"},\n" + indent + b"{"


def read_parallel(path: str | Path, workers: int, meanwhile: Callable[[], None] | None = None,
                  before_join: Callable[[list[int]], None] | None = None) -> RawTrace | None:
    """The trace read by `workers` processes, or None when it cannot be (see the module doc).
    meanwhile: called once the workers have started, before their results are joined.
    before_join: called once every range is read and before any is joined, with the start times
    (whole microseconds of the profiler's clock, as identity_candidates' ops would give them) of
    the ops that may share an input. While the profiler that wrote the trace still holds its
    events, the caller reads their identities there and frees them (capture/run/session.py): the
    joined records then grow from what is left, not on top of the profiler's events."""
    try:
        with open(path, "rb") as handle:
            if handle.read(2) == b"\x1f\x8b":  # gzip: no ranges to seek to
                return None
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                layout = _layout(data)
                if layout is None:
                    return None
                top, start, separator = layout
                ranges = _ranges(data, start, len(data), separator, workers * RANGES_PER_WORKER)
    except (OSError, ValueError):
        return None
    if len(ranges) < 2:
        return None
    joiner = _Joiner()
    identities = None
    if before_join is not None:
        def identities(sides: list[dict[str, Any]]) -> None:
            first_us = min(side["first_us"] for side in sides)
            times_us = [t for side in sides for t in side["identity_us"]]
            before_join(profiler_times_us(times_us, first_us, {**top, **sides[-1]["tail"]}))
    # One pause for the whole read: re-enabled between ranges, the collector walked every object
    # joined so far each time (12 collections, 0.69 s of the parent's CPU, 1,000,000 launches).
    with gc_paused():
        if not _run_workers(str(path), ranges, separator, min(workers, len(ranges)), joiner.add, meanwhile,
                            identities):
            return None
        return joiner.finish(top)


def _run_workers(path: str, ranges: list[tuple[int, int]], separator: bytes, workers: int,
                 take: Callable[[dict[str, Any]], None], meanwhile: Callable[[], None] | None = None,
                 identities: Callable[[list[dict[str, Any]]], None] | None = None) -> bool:
    """The ranges read by `workers` processes, range i by worker i % workers, each in file order;
    each range's result handed to `take` in file order as soon as it is written, while the
    workers go on with their next ranges (and let go: the ranges' columns are never all held at
    once). With `identities`, the workers also write each range's identity times (its first time,
    the start times of its ops that may share an input, the keys after the array); `identities`
    gets them, in file order, once every range is written, and only then are the ranges taken.
    False if any worker failed."""
    package_root = str(Path(__file__).resolve().parents[3])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])),
           **WORKER_THREADS_ENV}
    with tempfile.TemporaryDirectory(prefix="rooflinectl-read-") as folder:
        procs: list[subprocess.Popen[str]] = []
        timer = threading.Timer(WORKER_TIMEOUT_S, lambda: [p.kill() for p in procs])
        try:
            for w in range(workers):
                specs = [f"{i}:{a}:{b}:{int(i == len(ranges) - 1)}" for i, (a, b) in enumerate(ranges)
                         if i % workers == w]
                with open(os.path.join(folder, f"worker{w}.err"), "wb") as errors:
                    procs.append(subprocess.Popen(  # noqa: S603 - our own module, our own arguments
                        [sys.executable, "-m", "rooflinectl.capture.read.trace_parallel", path, separator.hex(), folder,
                         str(int(identities is not None)), *specs],
                        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, text=True))
            timer.start()
            if meanwhile is not None:
                meanwhile()
            for i in range(len(ranges)):
                line = procs[i % workers].stdout.readline()  # type: ignore[union-attr] - piped above
                if line.strip() != str(i):  # the worker died (or was killed by the timer) before writing it
                    return False
                if identities is None:
                    take(_load(folder, f"{i}.pickle"))
            if identities is not None:
                identities([_load(folder, f"{i}.identities.pickle") for i in range(len(ranges))])
                report(f"joining the trace's records ({len(ranges)} ranges)")
                for i in range(len(ranges)):
                    take(_load(folder, f"{i}.pickle"))
            return all(p.wait() == 0 for p in procs)
        except (OSError, subprocess.SubprocessError, pickle.UnpicklingError, EOFError):
            return False
        finally:
            timer.cancel()
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
                if proc.stdout is not None:
                    proc.stdout.close()


def _load(folder: str, name: str) -> Any:
    """A worker's pickle, removed once loaded: our own workers' file, in the folder we made (0700),
    never a file the user gave."""
    path = os.path.join(folder, name)
    with open(path, "rb") as handle, gc_paused():
        part = pickle.load(handle)  # noqa: S301 - our own data, not the user's
    os.unlink(path)
    return part


class _Joiner:
    """The workers' records joined in file order, finished as the serial reader finishes them."""

    def __init__(self) -> None:
        self.builder = TraceBuilder()
        self.tail: dict[str, Any] = {}

    def add(self, part: dict[str, Any]) -> None:
        builder = self.builder
        with gc_paused():
            while part["blocks"]:
                block = part["blocks"].pop(0)  # let go of each block's columns once read
                self._share(block["ops"])
                builder.ops += from_columns(block["ops"], RawOp)
                builder.kernels += from_columns(block["kernels"], RawKernel)
                builder.syncs += from_columns(block["syncs"], RawSync)
                builder.launch_us.update(zip(block["launch_correlations"], block["launch_us"]))
                builder.graph_launches += block["graph_launches"]
                builder.runtime_calls += block["runtime_calls"]
                builder.capture_calls += block["capture_calls"]
        builder.first_us = min(builder.first_us, part["first_us"])
        builder.events += part.get("events", 0)  # finish() refuses events without a start time
        builder.undated += part.get("undated", 0)
        self.tail.update(part.get("tail") or {})

    def _share(self, ops: dict[str, Any]) -> None:
        """Equal input lists made one object across blocks and ranges (a worker's ops already share
        theirs), in the block's columns before any record is made: once per distinct combination
        of the four lists' table entries, not once per op."""
        columns = [ops.get(name) for name in INPUT_LISTS]
        if not all(isinstance(c, dict) for c in columns):  # plain lists: a block without ops
            return
        keys = list(zip(*(c["index"] for c in columns)))  # per op: its four lists' places in the tables
        at: dict[tuple[int, ...], int] = {}
        shared = []
        for key in dict.fromkeys(keys):
            at[key] = len(shared)
            shared.append(self.builder._shared(tuple(c["table"][i] for c, i in zip(columns, key))))
        index = list(map(at.__getitem__, keys))
        for n, name in enumerate(INPUT_LISTS):
            ops[name] = {"table": [lists[n] for lists in shared], "index": index}

    def finish(self, top: dict[str, Any]) -> RawTrace:
        with gc_paused():
            return self.builder.finish({**top, **self.tail})


def read_range(path: str, start: int, end: int, last: bool, separator: bytes,
               identities: bool = False) -> dict[str, Any]:
    """In the worker: the records of the events in [start, end) of the file, in columns, block by
    block (each block's records leave as columns before the next is decoded: a worker holds one
    block's objects at a time, not its whole range's). identities: also "identity_us", the start
    times of the range's ops that may share an input (trace.identity_times_us)."""
    identity_us: list[float] = []
    builder = TraceBuilder(records=False)  # rows go on as columns: no record objects made here
    tail: dict[str, Any] = {}
    blocks_out = []
    close, opening = separator.index(b"}") + 1, separator.rindex(b"{")
    # read, not mapped: a mapped file's pages would count in the worker's resident memory
    with open(path, "rb") as handle, gc_paused():
        handle.seek(start)
        left, carry = end - start, b""
        while left > 0 or carry:
            block = handle.read(min(BLOCK_BYTES, left)) if left > 0 else b""
            left -= len(block)
            buffer = carry + block
            if left > 0:  # cut after the last whole event; the rest waits for the next block
                at = buffer.rfind(separator)
                if at < 0:
                    carry = buffer
                    continue
                piece, carry = buffer[: at + close], buffer[at + opening:]
            else:
                piece, carry = buffer, b""
            if last and left <= 0:  # the array's end and the keys after it
                rest = decode_json(b'{"traceEvents": [' + piece)
                events = rest.pop("traceEvents")
                tail = rest
            else:
                events = decode_events(b"[" + piece + b"]")
            builder.add(events)
            del events
            if identities:
                identity_us += identity_times_us(builder.op_rows)
            blocks_out.append(_taken(builder))
    return {"blocks": blocks_out, "first_us": builder.first_us, "tail": tail, "identity_us": identity_us,
            "events": builder.events, "undated": builder.undated}


def _taken(builder: TraceBuilder) -> dict[str, Any]:
    """The builder's records so far, in columns, and the builder emptied of them (its shared
    names and input lists stay, so equal lists of later blocks are the same objects)."""
    out = {
        "ops": rows_to_columns(builder.op_rows, RawOp), "kernels": rows_to_columns(builder.kernel_rows, RawKernel),
        "syncs": to_columns(builder.syncs, RawSync), "launch_correlations": list(builder.launch_us),
        "launch_us": list(builder.launch_us.values()), "graph_launches": builder.graph_launches,
        "runtime_calls": builder.runtime_calls,  # a graph capture may begin in another range
        "capture_calls": builder.capture_calls,
    }
    builder.op_rows, builder.kernel_rows, builder.syncs, builder.launch_us = [], [], [], {}
    builder.graph_launches, builder.runtime_calls, builder.capture_calls = [], [], 0
    return out


def main(argv: list[str]) -> int:
    """Worker: PATH SEPARATOR_HEX FOLDER IDENTITIES(0|1) INDEX:START:END:LAST ...; each range's
    result pickled to FOLDER/INDEX.pickle (with IDENTITIES 1, its identity times to
    FOLDER/INDEX.identities.pickle first), then its index printed (the parent loads it then,
    while this goes on)."""
    path, separator, folder, identities, *specs = argv
    for spec in specs:
        index, start, end, last = spec.split(":")
        result = read_range(path, int(start), int(end), last == "1", bytes.fromhex(separator), identities == "1")
        sides = {"first_us": result["first_us"], "identity_us": result.pop("identity_us"), "tail": result["tail"]}
        for name, value in ([("identities", sides)] if identities == "1" else []) + [("", result)]:
            out = os.path.join(folder, f"{index}{'.' + name if name else ''}.pickle")
            with open(out + ".part", "wb") as handle:
                pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(out + ".part", out)
        del result
        print(index, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
