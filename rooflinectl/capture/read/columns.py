"""Records (dataclasses) to columns and back: the layout of the capture file.

A capture of a long run holds millions of records of a few distinct kernels and calls; as one
JSON object per record, every field name and every kernel name is written and read millions of
times. Here each field is one list, and a field holding text or lists is a table of its
distinct values plus one index per record, so each name is stored once and loads back shared.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from operator import attrgetter
from typing import Any


def to_columns(records: list[Any], cls: type) -> dict[str, Any]:
    """{field: [value per record]}, or for text, lists and dicts {"table": [distinct], "index": [...]}."""
    names = [f.name for f in fields(cls)]
    # one C-level pass makes a row tuple per record
    rows = map(attrgetter(*names), records) if len(names) > 1 else ((getattr(r, names[0]),) for r in records)
    return rows_to_columns(rows, cls)


def rows_to_columns(rows: Any, cls: type) -> dict[str, Any]:
    """to_columns of records given as rows: tuples of the record's fields in order."""
    names = [f.name for f in fields(cls)]
    columns = list(zip(*rows)) or [() for _ in names]  # zip turns the rows into columns
    out: dict[str, Any] = {}
    for name, values in zip(names, columns):
        if not any(isinstance(v, (str, list, tuple, dict)) for v in values[:1000]):
            out[name] = list(values)
            continue
        out[name] = _table_and_index(values)
    return out


def _table_and_index(values: Any) -> dict[str, list[Any]]:
    """{"table": distinct values, "index": position in table per record}. Lists and dicts are told
    apart by identity (the parser shares equal ones; the empty ones of a type are one entry), the
    rest by value."""
    positions: dict[Any, int] = {}
    types = set(map(type, values))
    if types <= {list, dict}:  # the common cases in one comprehension each (a million records)
        index = [positions.setdefault(id(v) if v else type(v), len(positions)) for v in values]
        by_position = dict(zip(index, values))  # each position's values are one object, or empties of one type
        return {"table": [by_position[i] for i in range(len(by_position))], "index": index}
    if not types & {list, dict}:
        index = [positions.setdefault(v, len(positions)) for v in values]
        return {"table": list(positions), "index": index}
    table: list[Any] = []
    index = []
    for v in values:
        key = (id(v) if v else type(v)) if isinstance(v, (list, dict)) else v
        at = positions.get(key)
        if at is None:
            at = positions[key] = len(table)
            table.append(v)
        index.append(at)
    return {"table": table, "index": index}


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
            lists.append(list(map(column["table"].__getitem__, column["index"])))  # no Python frame per record
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
    return list(map(shared.setdefault, values, values))
