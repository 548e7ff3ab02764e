"""Chrome-trace events decoded into dicts of only the keys the reader uses (msgspec).

A general JSON decoder (orjson, json) makes a dict for every event and an object for every key
and value in it: a trace of 1,000,000 launches has 5,000,000 events, most of whose keys (pid,
flow ids, "Record function id", "est. achieved occupancy %", ...) the reader never looks at.
msgspec decodes each event into a dict of the named keys only (a TypedDict), `args` likewise,
and skips the rest without making objects of them: the reader reads both forms alike. An
op's input lists come as raw JSON text (msgspec.Raw): a long run repeats a few distinct inputs,
and the reader decodes each distinct text once (capture/read/builder.py).

On a 190 MB range of a 1,000,000-launch trace (2-core machine, two runs): orjson decoded it in
0.67-0.79 s and its objects were freed in 0.23-0.26 s; here 0.35-0.38 s and 0.15-0.16 s. The keys
to keep come from the reader's spec (capture/read/spec.py), so a field added there is decoded here
too. Used when msgspec is installed; without it the reader decodes dicts of every key as
before, into the same records (tests/test_typed_events.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypedDict

try:
    import msgspec
except ImportError:  # pragma: no cover - exercised where msgspec is not installed
    msgspec = None


def raw_json(value: Any) -> Any:
    """value as raw JSON text, the form a raw key's value takes in a typed event (None without msgspec)."""
    return None if msgspec is None else msgspec.Raw(msgspec.json.encode(value))


class TypedEvents(list):
    """A list of events from the typed decoder: dicts of the named keys only, an op's input lists
    (raw_arg_keys) as raw JSON text. Its type tells the reader which form it holds."""


def make_decoder(event_keys: Iterable[str], arg_keys: Iterable[str], raw_arg_keys: Iterable[str],
                 general: Callable[[bytes], Any]) -> Callable[[bytes], list[Any]] | None:
    """A function from a JSON array of events to TypedEvents, or None without msgspec.

    event_keys: the event's own keys to keep (`args` among them); arg_keys: the keys of `args` to
    keep, as decoded values; raw_arg_keys: those to keep as raw JSON text. Valid JSON whose
    values do not fit (an `args` that is not an object) is decoded by `general` instead (a plain
    list of dicts of every key); text that is not JSON raises ValueError (msgspec.DecodeError).
    """
    if msgspec is None:
        return None
    arg_types: dict[str, Any] = {key: Any for key in arg_keys}
    arg_types.update({key: msgspec.Raw for key in raw_arg_keys})
    args_type = TypedDict("TraceEventArgs", arg_types, total=False)  # type: ignore[misc] - keys with spaces
    event_types = {key: (args_type | None) if key == "args" else Any for key in event_keys}
    event_type = TypedDict("TraceEvent", event_types, total=False)  # type: ignore[misc]
    typed = msgspec.json.Decoder(list[event_type]).decode

    def decode(data: bytes) -> list[Any]:
        try:
            return TypedEvents(typed(data))
        except msgspec.ValidationError:  # JSON, but not events of these types: decoded in general
            return general(data)

    return decode
