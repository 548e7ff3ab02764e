"""A process's place in a distributed job, as torchrun (torch.distributed.run) tells it through the
environment: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK (the node), and the host.

Nothing here starts or joins a process group: rooflinectl profiles each rank of a job the user
launched (or that `rooflinectl profile --nproc-per-node` launched through torch.distributed.run),
and each rank writes its own profile file, named so that no two ranks write one file.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

RANK_FIELDS = {"{rank}": "rank", "{local_rank}": "local_rank", "{node_rank}": "node_rank", "{world_size}": "world_size"}


def _int(env: Mapping[str, str], key: str, default: int) -> int:
    try:
        return int(env.get(key, default))
    except ValueError:
        return default


def rank_info(environ: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """{rank, world_size, local_rank, local_world_size, node_rank, host, pid} of this process, or
    None outside a distributed launch (no RANK and no WORLD_SIZE above 1)."""
    env = os.environ if environ is None else environ
    world = _int(env, "WORLD_SIZE", 1)
    if "RANK" not in env and world <= 1:
        return None
    return {
        "rank": _int(env, "RANK", 0),
        "world_size": world,
        "local_rank": _int(env, "LOCAL_RANK", 0),
        "local_world_size": _int(env, "LOCAL_WORLD_SIZE", world),
        "node_rank": _int(env, "GROUP_RANK", 0),
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }


def rank_output_path(pattern: str, info: dict[str, Any] | None) -> str:
    """The file this rank writes: {rank}, {local_rank}, {node_rank} and {world_size} replaced
    (plain text replacement: other braces in a path stay as they are). In a job of more than one
    rank a pattern without {rank} gets `.rank{R}` before its suffix (rooflinectl.profile.json ->
    rooflinectl.profile.rank3.json): ranks never write over each other's file."""
    if info is None:
        return pattern
    path = pattern
    for field, key in RANK_FIELDS.items():
        path = path.replace(field, str(info[key]))
    if "{rank}" not in pattern and info["world_size"] > 1:
        p = Path(path)
        path = str(p.with_name(f"{p.stem}.rank{info['rank']}{p.suffix}"))
    return path


def rank_pattern(pattern: str, info: dict[str, Any] | None) -> str:
    """The files of all ranks as one glob (rank replaced by *), to tell the user where they are."""
    if info is None:
        return pattern
    text = pattern if "{rank}" in pattern else rank_output_path(pattern, {**info, "rank": "{rank}"})
    for field, key in RANK_FIELDS.items():
        text = text.replace(field, str(info[key]) if key == "world_size" else "*")
    return text


def rank_device_index(info: dict[str, Any] | None, device_count: int) -> int | None:
    """The GPU this rank is expected to use before its script says so: LOCAL_RANK where it names a
    visible device (torchrun's convention, torch.cuda.set_device(local_rank)); None otherwise
    (one visible device per rank, or no launch: the current device)."""
    if info is None or device_count <= 1 or not 0 <= info["local_rank"] < device_count:
        return None
    return int(info["local_rank"])


def own_device_index() -> int:
    """The GPU this process works on: a torchrun rank's own (rank_device_index), which its script
    may not have selected yet, else the current device. The overhead probe runs there, so rank 1
    never opens a context on GPU 0, and the NVML sampler samples it."""
    import torch

    index = rank_device_index(rank_info(), torch.cuda.device_count())
    return torch.cuda.current_device() if index is None else index
