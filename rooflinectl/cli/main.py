"""The `rooflinectl` command group: a few lines; each subcommand lives in its own module."""

from __future__ import annotations

import importlib

import click

from rooflinectl._version import __version__
from rooflinectl.errors import RooflineError

# One registry of subcommands: module name under rooflinectl.cli, and its click command object name.
COMMANDS: tuple[str, ...] = (
    "profile_cmd",
    "show_cmd",
    "ceilings_cmd",
    "plot_cmd",
    "advise_cmd",
    "diff_cmd",
    "kernels_cmd",
    "validate_cmd",
)


class _Group(click.Group):
    """Turns RooflineError into one sentence on stderr and its exit code (never a traceback)."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except RooflineError as exc:
            click.echo(f"rooflinectl: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rooflinectl")
def main() -> None:
    """Roofline profiler and advisor for PyTorch and Triton code.

    Exit codes: 0 ok; 1 findings or regression at the level asked (advise, diff);
    2 usage or input error; 3 something the machine lacks; 4 counters that could not be read
    (profile --counters ncu); 5 a gate asked of an incomplete profile; a profiled script that
    fails keeps its own exit code.
    """


for _name in COMMANDS:
    _module = importlib.import_module(f"rooflinectl.cli.{_name}")
    main.add_command(_module.command)

