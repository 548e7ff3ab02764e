"""`rooflinectl profile --nproc-per-node N`: run the script under torch.distributed.run (torchrun),
each rank profiled by `python -m rooflinectl profile`, then read the ranks' files together.

No launcher of our own: torch.distributed.run starts, watches and tears down the processes
(--standalone: a rendezvous on this machine at a free port). NVLink multicast stays off in what
it launches (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1,
unless the environment sets them). The exit code is torchrun's: 0 when every rank succeeded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import click

from rooflinectl.capture.run.distributed import rank_info, rank_output_path, rank_pattern
from rooflinectl.ceilings.measure_link import keep_multicast_off
from rooflinectl.errors import UsageError


def torchrun_command(nproc: int, target: str, output: str, script_args: list[str], *, device: str,
                     save_trace: str | None, iterations_mode: str = "auto", profile_steps: str | None = None,
                     source: bool = True) -> list[str]:
    """The torch.distributed.run command line that profiles each rank (quietly: the parent speaks)."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
               "-m", "rooflinectl", "profile", target, "-o", output, "--device", device,
               "--iterations", iterations_mode, "-q"]
    if save_trace:
        command += ["--save-trace", save_trace]
    if profile_steps is not None:
        command += ["--profile-steps", str(profile_steps)]
    if not source:
        command.append("--no-source")
    return command + ["--", *script_args]


def launch_ranks(nproc: int, target: str, output: str, script_args: list[str], *, device: str,
                 save_trace: str | None, iterations_mode: str = "auto",
                 profile_steps: str | None = None, source: bool = True) -> tuple[int, list[Path]]:
    """Run the job; (torchrun's exit code, the rank profiles this run wrote, in rank order)."""
    env = dict(os.environ)
    keep_multicast_off(env)
    command = torchrun_command(nproc, target, output, script_args, device=device, save_trace=save_trace,
                               iterations_mode=iterations_mode, profile_steps=profile_steps, source=source)
    started = time.time()
    code = subprocess.call(command, env=env)
    expected = [Path(rank_output_path(output, {"rank": r, "world_size": nproc, "local_rank": r, "node_rank": 0}))
                for r in range(nproc)]
    return code, [p for p in expected if p.is_file() and p.stat().st_mtime >= started - 1.0]


def launch_and_show(ctx: click.Context, nproc: int, target: str, function: str | None, script_args: list[str],
                    output: str, *, device: str, top: int, save_trace: str | None, quiet: bool,
                    iterations_mode: str, profile_steps: str | None = None, source: bool = True) -> None:
    """`profile --nproc-per-node N`: torch.distributed.run starts the ranks; then their profiles are
    shown together, and the command exits with torchrun's code."""
    from rooflinectl.cli.common import console, terminal_width
    from rooflinectl.cli.profiles import load_profiles
    from rooflinectl.outputs.table import render_profile

    if function is not None:
        raise UsageError("--nproc-per-node runs a script under torchrun; FILE.py:FUNCTION targets run in one process.")
    if rank_info() is not None:
        raise UsageError("--nproc-per-node starts torchrun: this process already is a rank of a distributed job.")
    code, files = launch_ranks(nproc, target, output, script_args, device=device, save_trace=save_trace,
                               iterations_mode=iterations_mode, profile_steps=profile_steps, source=source)
    if files and not quiet:
        data, _ = load_profiles(files)
        width = terminal_width()
        console(width).print(render_profile(data, data.kernels, top=top, width=width))
    pattern = rank_pattern(output, {"rank": 0, "world_size": nproc, "local_rank": 0, "node_rank": 0})
    click.echo(f"{len(files)} of {nproc} rank profiles written: {pattern}"
               + ("" if code == 0 else f" (torchrun exited with {code})"), err=True)
    if code:
        ctx.exit(code)
