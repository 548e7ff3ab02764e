"""Read a Chrome-trace JSON file (as torch.profiler exports it) in bounded memory.

A trace of a long run holds millions of events (about 1.5 kB of JSON per kernel launch); loading
it whole makes a Python dict per event and costs several times the file's size in memory. Here
the `traceEvents` array is cut into chunks of whole events, each chunk is decoded on its own
(orjson when installed, else the standard library), and the caller sees the events chunk by
chunk; the other top-level keys (baseTimeNanoseconds, distributedInfo, ...) come as one dict.

How a chunk is cut: at a `}` followed by `,` and `{` (whitespace allowed). Such a place may lie
inside a string or a nested object; then the chunk is not valid JSON (an unterminated string or
an unclosed bracket) and decoding fails, so we take more text and cut again. A chunk that
decodes is therefore a run of whole top-level events. Files that do not look like a Chrome
trace (no `"traceEvents": [` near the top) are decoded whole.
"""

from __future__ import annotations

import gc
import gzip
import json
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from rooflinectl.errors import RooflineError

try:  # a fast C decoder; the standard library's decodes the same JSON, about 2-3x slower
    import orjson

    _decode: Callable[[bytes], Any] = orjson.loads
    DECODER = "orjson"
except ImportError:  # pragma: no cover - exercised where orjson is not installed
    orjson = None
    _decode = json.loads
    DECODER = "json"


def decode_json(data: bytes) -> Any:
    """JSON bytes to Python data (orjson when installed)."""
    return _decode(data)


def encode_json(value: Any) -> bytes:
    """Python data to JSON bytes (orjson when installed and it can encode the value)."""
    if orjson is not None:
        try:
            return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:  # something orjson does not encode (an int beyond 64 bits, ...)
            pass
    return json.dumps(value).encode("utf-8")


BLOCK_BYTES = 8 << 20  # read and decode about this much at a time
HEADER_LIMIT_BYTES = 64 << 20  # the header (device properties, ...) is far smaller
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_CUT = re.compile(rb"\}\s*,\s*(?=\{)")


class TraceFormatError(RooflineError, ValueError):
    """The file is not a JSON object, or not one we can read as a Chrome trace (an input error:
    one sentence and exit code 2 from the CLI)."""


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building millions of small containers.

    Python runs a collection every few hundred allocations and each full collection walks every
    live object: decoding a large trace with the collector on is 3-5x slower. Nothing here makes
    reference cycles, so pausing it loses nothing; it is restored as it was afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _GzipReader:
    """gzip's reader with its failures as one sentence: a truncated file raises EOFError (which
    click reports as "Aborted!") and a damaged one zlib.error or BadGzipFile."""

    def __init__(self, path: str | Path) -> None:
        self.path, self.handle = path, gzip.open(path, "rb")  # noqa: SIM115 - closed by close()

    def read(self, size: int = -1) -> bytes:
        try:
            return self.handle.read(size)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise TraceFormatError(f"{self.path} is a damaged or truncated gzip file ({exc}).") from None

    def close(self) -> None:
        self.handle.close()

    def __enter__(self) -> _GzipReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_trace(path: str | Path) -> IO[bytes]:
    """The file's bytes, gunzipped when it is gzip (by its magic number, not its name)."""
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    if gzipped:
        return _GzipReader(path)  # type: ignore[return-value]
    return open(path, "rb")  # noqa: SIM115 - the caller closes it


def _decode_or_fail(data: bytes, path: str | Path) -> Any:
    try:
        return _decode(data)
    except ValueError as exc:
        raise TraceFormatError(f"{path} is not valid JSON ({exc}).") from None
    except RecursionError:
        raise TraceFormatError(f"{path} is not a Chrome trace: its JSON is nested too deeply.") from None


def read_events(path: str | Path, decode_events: Callable[[bytes], list[Any]] | None = None
                ) -> tuple[dict[str, Any], Iterator[list[Any]]]:
    """(top-level keys other than traceEvents, an iterator of lists of events in file order).

    decode_events decodes a JSON array of whole events (the caller's choice of form; None:
    decode_json's dicts); the last chunk, which holds the keys after the array too, is dicts.
    Consume the iterator fully before relying on the top-level dict: keys written after the
    event array (torch writes `traceName` there) are added when the array's end is reached.
    """
    handle = open_trace(path)
    head = b""
    match = None
    while match is None and len(head) < HEADER_LIMIT_BYTES:
        block = handle.read(BLOCK_BYTES)
        if not block:
            break
        head += block
        match = _EVENTS_KEY.search(head)
    top: Any = None
    if match is not None:
        before = head[: match.start()].rstrip().rstrip(b",")
        try:
            top = _decode(before + b"}")
        except ValueError:
            top = None  # an odd header: decode the whole object below
    if not isinstance(top, dict):  # not the usual layout: decode it whole (memory grows with it)
        whole = _decode_or_fail(head + handle.read(), path)
        handle.close()
        if not isinstance(whole, dict) or not isinstance(whole.get("traceEvents", []), list):
            raise TraceFormatError(f"{path} is not a Chrome trace (a JSON object with a traceEvents list).")
        events = whole.pop("traceEvents", [])
        return whole, iter([events])
    assert match is not None
    return top, _chunks(handle, head[match.end():], top, path, decode_events or decode_json)


def _last_cut(buffer: bytes) -> re.Match[bytes] | None:
    """The last place in buffer where one top-level event may end and the next begin."""
    end = len(buffer)
    while (pos := buffer.rfind(b"}", 0, end)) >= 0:
        cut = _CUT.match(buffer, pos)
        if cut is not None:
            return cut
        end = pos
    return None


def _chunks(handle: IO[bytes], buffer: bytes, top: dict[str, Any], path: str | Path,
            decode_events: Callable[[bytes], list[Any]]) -> Iterator[list[Any]]:
    """Decode whole events from buffer (the text after `[`), reading more as needed."""
    try:
        while True:
            if len(buffer) < BLOCK_BYTES:
                block = handle.read(BLOCK_BYTES)
                if not block:
                    break  # end of file: the rest is decoded below
                buffer += block
            cut = _last_cut(buffer)
            events = None
            if cut is not None:
                try:
                    events = decode_events(b"[" + buffer[: cut.start() + 1] + b"]")
                except ValueError:  # the cut fell inside a string or a nested object
                    events = None
            if cut is None or events is None:  # take more text and cut again
                more = handle.read(BLOCK_BYTES)
                if not more:
                    break
                buffer += more
                continue
            buffer = buffer[cut.end():]
            yield events
        # The rest: the last events, `]`, and the keys after the array (`"traceName": ...}`).
        tail = _decode_or_fail(b'{"traceEvents": [' + buffer, path)
        if not isinstance(tail.get("traceEvents"), list):
            raise TraceFormatError(f"{path} is not a Chrome trace (traceEvents is not a list).")
        events = tail.pop("traceEvents")
        top.update(tail)
        yield events
    finally:
        handle.close()
