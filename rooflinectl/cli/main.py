"""The `rooflinectl` command group: a few lines; each subcommand lives in its own module."""

from __future__ import annotations

import importlib
from contextlib import suppress

import click
from click.shell_completion import CompletionItem

from rooflinectl._version import __version__
from rooflinectl.errors import (
    EXIT_ENVIRONMENT,
    EXIT_USAGE,
    NO_ROOM,
    RooflineError,
    no_room_error,
    printable,
)

# One registry of subcommands: name -> (module under rooflinectl.cli holding `command`, the first
# line of its help). A module is imported only when its command runs or shows its own help:
# `--help`, `--version` and Tab completion list the commands from here without importing torch
# or pandas (seconds). tests/test_cli_startup.py keeps each line equal to the command's own help.
COMMANDS: dict[str, tuple[str, str]] = {
    "profile": ("profile_cmd", "Run a script or FILE.py:FUNCTION under the profiler; top kernels."),
    "analyse": ("analyse_cmd", "Build a profile from a saved torch.profiler trace, not run again."),
    "show": ("show_cmd", "Print the kernel table of a profile, as text, CSV or JSON."),
    "ceilings": ("ceilings_cmd", "What this GPU or CPU can do: spec, detected and measured roofs."),
    "plot": ("plot_cmd", "Draw the roofline chart of a profile, or BEFORE -> AFTER of two."),
    "advise": ("advise_cmd", "Recommend fixes: each finding with evidence and the time it saves."),
    "diff": ("diff_cmd", "Compare two profiles: per group, time change and roofline move."),
    "kernels": ("kernels_cmd", "Run the reference kernels and place them on the roofline."),
    "report": ("report_cmd", "Write one self-contained, interactive HTML report of profiles."),
    "validate": ("validate_cmd", "Check analytic FLOPs and bytes against measured counters."),
}

# The order `--help` lists them in: the order of a first session. A registered command this list
# does not name (added later) follows, alphabetically, so the list never hides one.
WORKFLOW_ORDER = ("profile", "analyse", "show", "plot", "advise", "diff", "report", "ceilings", "kernels",
                  "validate")


def workflow_order() -> list[str]:
    """The registered commands in workflow order, then any the order does not name."""
    named = [name for name in WORKFLOW_ORDER if name in COMMANDS]
    return named + sorted(set(COMMANDS) - set(named))


def _short_help(name: str, limit: int = 45) -> str:
    """The registry's help line shortened as click shortens a command's own."""
    return click.Command(name, help=COMMANDS[name][1]).get_short_help_str(limit)


class _Group(click.Group):
    """Subcommands imported on first use (COMMANDS); RooflineError turned into one sentence on
    stderr and its exit code (never a traceback)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return workflow_order()

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        return importlib.import_module(f"rooflinectl.cli.{COMMANDS[cmd_name][0]}").command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Each line is a whole sentence that fits 80 columns (tests/test_cli_conventions.py): shown
        # as written, never cut with "...".
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        items = [CompletionItem(name, help=_short_help(name)) for name in self.list_commands(ctx)
                 if name.startswith(incomplete)]
        return items + click.Command.shell_complete(self, ctx, incomplete)  # the group's own options

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        _unencodable_as_escapes()
        try:
            return super().invoke(ctx)
        except RooflineError as exc:
            _say(str(exc))
            ctx.exit(exc.exit_code)
        except OSError as exc:  # a write that ran out of room outside atomic.py (a chart on standard output)
            if exc.errno not in NO_ROOM:
                raise
            error = no_room_error(exc, exc.filename or "the output")
            _say(str(error))
            ctx.exit(error.exit_code)
        except RecursionError:  # a last guard: deep input is refused where it is read
            _say("the input is nested too deeply to read.")
            ctx.exit(EXIT_USAGE)
        except MemoryError:
            _say("out of memory: the input is too large for this machine.")
            ctx.exit(EXIT_ENVIRONMENT)


def _say(message: str) -> None:
    """One line on stderr, printable (errors.printable): nothing in it can act on a terminal or a CI log."""
    click.echo(f"rooflinectl: {printable(message)}", err=True)


def _unencodable_as_escapes() -> None:
    """stdout and stderr write what their encoding cannot hold (PYTHONIOENCODING=ascii and a
    non-ASCII kernel name, a lone surrogate from a JSON file) as backslash escapes, not a crash."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and not getattr(stream, "closed", False):
            with suppress(ValueError, OSError):  # a stream that cannot change now: left as it is
                reconfigure(errors="backslashreplace")


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rooflinectl")
def main() -> None:
    """Roofline profiler and advisor for PyTorch and Triton code.

    Exit codes: 0 ok; 1 findings or regression at the level asked (advise, diff);
    2 usage or input error; 3 something the machine lacks; 4 counters that could not be read
    (profile --counters ncu); 5 a gate asked of an incomplete profile, or of numbers it cannot
    judge (no summary, zero times, every cost unknown); 6 an output could not be written (full
    disk, `ulimit -f`, quota; no half file is left); a profiled script that fails keeps its own
    exit code.
    """
