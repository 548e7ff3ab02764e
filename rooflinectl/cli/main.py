"""The `rooflinectl` command group: a few lines; each subcommand lives in its own module."""

from __future__ import annotations

import importlib

import click
from click.shell_completion import CompletionItem

from rooflinectl._version import __version__
from rooflinectl.errors import RooflineError

# One registry of subcommands: name -> (module under rooflinectl.cli holding `command`, the first
# line of its help). A module is imported only when its command runs or shows its own help:
# `--help`, `--version` and Tab completion list the commands from here without importing torch
# or pandas (seconds). tests/test_cli_startup.py keeps each line equal to the command's own help.
COMMANDS: dict[str, tuple[str, str]] = {
    "profile": ("profile_cmd", "Run TARGET (a script, or FILE.py:FUNCTION) under the profiler and print its top kernels."),
    "analyse": ("analyse_cmd", "Build the profile of a saved trace (torch.profiler's Chrome trace, or a --save-capture file) without running it."),
    "show": ("show_cmd", "Print the kernel table of PROFILE (default: rooflinectl.profile.json here, else this folder's"),
    "ceilings": ("ceilings_cmd", "Detected, spec and measured ceilings, ridge points, and what could not be read."),
    "plot": ("plot_cmd", "Roofline chart of PROFILE (default: ./rooflinectl.profile.json); with two, BEFORE -> AFTER arrows."),
    "advise": ("advise_cmd", "Recommendations from a profile: each finding with evidence, the fix and the time it saves."),
    "diff": ("diff_cmd", "Per kernel group: the change in time and the move on the roofline; new and vanished kernels."),
    "kernels": ("kernels_cmd", "Run the reference kernels: check each against its torch reference, time it, and place it"),
    "report": ("report_cmd", "One self-contained, interactive HTML report: summary, roofline, kernel table, advice, clocks."),
    "validate": ("validate_cmd", "Analytic FLOPs and bytes against measured ones, per kernel group and per op family, with ratios"),
}


def _short_help(name: str, limit: int = 45) -> str:
    """The registry's help line shortened as click shortens a command's own."""
    return click.Command(name, help=COMMANDS[name][1]).get_short_help_str(limit)


class _Group(click.Group):
    """Subcommands imported on first use (COMMANDS); RooflineError turned into one sentence on
    stderr and its exit code (never a traceback)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        return importlib.import_module(f"rooflinectl.cli.{COMMANDS[cmd_name][0]}").command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [(name, _short_help(name, limit)) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        items = [CompletionItem(name, help=_short_help(name)) for name in self.list_commands(ctx)
                 if name.startswith(incomplete)]
        return items + click.Command.shell_complete(self, ctx, incomplete)  # the group's own options

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
