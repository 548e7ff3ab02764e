"""Record, beside a capture, the address each profiled allocation got (an experiment for issue 29).

python scripts/allocation_addresses.py OUT.addresses.json -- <rooflinectl profile arguments>

Runs `rooflinectl profile` in this process with the capture's tensor-access walk wrapped so that it
also keeps {allocation identity: (address, bytes)} from the profiler's event tree, and writes them
as JSON. The analytic cache model knows tensors by allocation identity; the caching allocator hands
a freed block, whose lines may still be in the L2, to the next tensor: the addresses say which.
On the H200 (2026-12-02) the ResNet-50 script recorded; the Llama-style and GPT-2 scripts failed
to import transformers under this wrapper (they import it under `rooflinectl profile`). What it
showed: docs/benchmarks/accuracy.md, "Every row measured warm".
"""

from __future__ import annotations

import json
import sys
from typing import Any

import rooflinectl.capture.run.session as session
from rooflinectl.cli.main import main

ADDRESSES: dict[int, tuple[int, int]] = {}


def _collect(node: Any) -> None:
    stack = [node]
    while stack:
        n = stack.pop()
        fields = n.extra_fields
        if type(fields).__name__ == "_ExtraFields_Allocation":
            identity = fields.allocation_id if fields.allocation_id is not None else fields.id
            if identity is not None and int(fields.alloc_size) > 0:
                ADDRESSES[int(identity)] = (int(fields.ptr), int(fields.alloc_size))
        stack.extend(n.children)


def _wrapped(original):
    def tensor_accesses(prof):
        try:
            for root in prof.profiler.kineto_results.experimental_event_tree():
                _collect(root)
        except Exception as exc:  # noqa: BLE001 - an experiment: say so and go on
            print(f"allocation_addresses: no event tree ({exc})", file=sys.stderr)
        return original(prof)
    return tensor_accesses


if __name__ == "__main__":
    out, rest = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    session.tensor_accesses = _wrapped(session.tensor_accesses)
    try:
        main(rest, standalone_mode=False)
    finally:
        with open(out, "w", encoding="utf-8") as fh:
            json.dump({str(k): v for k, v in ADDRESSES.items()}, fh)
        print(f"allocation_addresses: {len(ADDRESSES)} allocations written to {out}", file=sys.stderr)
