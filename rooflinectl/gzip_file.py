"""Files written gzipped when their name ends in .gz, plain otherwise (Chrome traces: Perfetto and
TensorBoard open both), always atomically (rooflinectl/atomic.py). A utility of no stage: capture
(the script's own exported traces) and outputs (our trace export) use it."""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from rooflinectl.atomic import atomic_file


def is_gzip_name(path: str | os.PathLike[str]) -> bool:
    return str(path).endswith(".gz")


@contextmanager
def atomic_packed(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """A binary handle whose bytes appear at `path` once the block ends cleanly, gzipped when the
    name ends in .gz."""
    with atomic_file(path, binary=True) as raw:
        if is_gzip_name(path):
            with gzip.GzipFile(fileobj=raw, mode="wb") as packed:
                yield packed
        else:
            yield raw


def write_packed_text(path: str | os.PathLike[str], text: str) -> None:
    """UTF-8 text at `path`, gzipped when the name ends in .gz."""
    with atomic_packed(path) as handle:
        handle.write(text.encode("utf-8"))
