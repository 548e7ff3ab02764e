"""Records (dataclasses) to columns and back: the layout of the capture file.

A capture of a long run holds millions of records of a few distinct kernels and calls; as one
JSON object per record, every field name and every kernel name is written and read millions of
times. Here each field is one list, and a field holding text or lists is a table of its
distinct values plus one index per record, so each name is stored once and loads back shared.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any


def to_columns(records: list[Any], cls: type) -> dict[str, Any]:
    """{field: [value per record]}, or for text, lists and dicts {"table": [distinct], "index": [...]}."""
    out: dict[str, Any] = {}
    for f in fields(cls):
        values = [getattr(r, f.name) for r in records]
        if not any(isinstance(v, (str, list, tuple, dict)) for v in values[:1000]):
            out[f.name] = values
            continue
        positions: dict[Any, int] = {}
        table: list[Any] = []
        index = []
        for v in values:
            key = (id(v) if v else ()) if isinstance(v, (list, dict)) else v  # shared by the parser: by identity
            at = positions.get(key)
            if at is None:
                at = positions[key] = len(table)
                table.append(v)
            index.append(at)
        out[f.name] = {"table": table, "index": index}
    return out


def from_columns(columns: dict[str, Any], cls: type) -> list[Any]:
    """Records from to_columns's data; a field the file lacks gets its default."""
    n = max((len(c["index"]) if isinstance(c, dict) else len(c) for c in columns.values()), default=0)
    lists = []
    for f in fields(cls):
        column = columns.get(f.name)
        if column is None:
            default = f.default_factory() if f.default_factory is not MISSING else f.default  # type: ignore[misc]
            lists.append([default] * n)  # a default list is shared: records never mutate their lists
        elif isinstance(column, dict):
            table = column["table"]
            lists.append([table[i] for i in column["index"]])
        else:
            lists.append(_shared_if_few(column))
    return list(map(cls, *lists))


def _shared_if_few(values: list[Any]) -> list[Any]:
    """A column of a few distinct numbers (thread ids, devices) made to share one object per
    value: JSON decoding makes a new integer object for every entry."""
    try:
        if len(set(values[:4096])) > 64:
            return values
    except TypeError:  # unhashable values
        return values
    shared: dict[Any, Any] = {}
    return [shared.setdefault(v, v) for v in values]
