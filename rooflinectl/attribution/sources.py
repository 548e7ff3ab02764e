"""The user's source line of each op: the innermost source scope around it (capture/run/source_lines.py).

Backward ops have no Python caller: they take their forward op's line, found as their module is
(autograd's sequence number links a backward op to the forward op that recorded it), with the
function marked "(backward)". A backward op without that link takes the scope around it, the
`loss.backward()` line when the backward ran on the calling thread, else none.
"""

from __future__ import annotations

from typing import Any

from rooflinectl.capture.read.raw import RawOp
from rooflinectl.capture.read.spec import SOURCE_PREFIX

NO_SOURCE = ("", "", "")  # source, source_function, source_call of an op without a line
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "


def location_texts(metadata: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The run's interned locations as (path:line, function, call) tuples, by scope number; []
    when the run kept none (an older capture, --no-source, a trace another tool recorded)."""
    table = (metadata.get("source_lines") or {}).get("locations") or []
    out = []
    for entry in table:
        try:
            path, line, function, call = entry
            out.append((f"{path}:{int(line)}", str(function), str(call)))
        except (TypeError, ValueError):  # a malformed entry: data, never trusted
            out.append(NO_SOURCE)
    return out


class SourceIndex:
    """Op index -> (source, source_function, source_call), remembered per op."""

    def __init__(self, ops: list[RawOp], parent: list[int], forward_by_seq: dict[int, int],
                 metadata: dict[str, Any]) -> None:
        self.ops, self.parent, self.forward_by_seq = ops, parent, forward_by_seq
        self.texts = location_texts(metadata)
        self._found: dict[int, tuple[str, str, str]] = {}

    def __bool__(self) -> bool:
        return bool(self.texts)

    def source(self, i: int) -> tuple[str, str, str]:
        if i < 0 or not self.texts:
            return NO_SOURCE
        found = self._found.get(i)
        if found is None:
            found = self._found[i] = self._find(i)
        return found

    def _find(self, i: int) -> tuple[str, str, str]:
        around, outer, backward_seq = -1, -1, -1
        while i >= 0:
            op = self.ops[i]
            if op.name.startswith(SOURCE_PREFIX):
                if around < 0 and backward_seq < 0:
                    around = i
                elif outer < 0 and backward_seq >= 0:
                    outer = i
            if op.name.startswith(BACKWARD_PREFIX) and op.sequence_nr >= 0:
                backward_seq = op.sequence_nr
            i = self.parent[i]
        forward = self.forward_by_seq.get(backward_seq, -1)
        if forward >= 0:
            path, function, call = self.source(forward)
            if path:
                return path, f"{function} (backward)", f"backward of {call}"
        if around >= 0:
            return self._text(around)
        if outer >= 0:  # backward work without its forward: the line that ran the backward
            path, function, call = self._text(outer)
            return (path, f"{function} (backward)", call) if path else NO_SOURCE
        return NO_SOURCE

    def _text(self, i: int) -> tuple[str, str, str]:
        number = self.ops[i].name[len(SOURCE_PREFIX):]
        return self.location(int(number)) if number.isdigit() else NO_SOURCE

    def location(self, number: Any) -> tuple[str, str, str]:
        """The texts of location `number` (NO_SOURCE for anything else: a profile is data)."""
        return self.texts[number] if type(number) is int and 0 <= number < len(self.texts) else NO_SOURCE
