"""`rooflinectl profile`'s options and the script's arguments kept apart: an option rooflinectl does
not know, written before the script or (when the command line has one) before `--`, is a typo to
report (with the option it was probably meant to be), not an argument to hand to the script.
Arguments after the script path go to the script unchanged, and so does everything after `--`."""

from __future__ import annotations

import difflib

import click

from rooflinectl.errors import UsageError


def option_names(command: click.Command) -> list[str]:
    """Every option string the command knows (--warmup, -o, --output, ...)."""
    return [name for param in command.params if isinstance(param, click.Option)
            for name in (*param.opts, *param.secondary_opts)]


DASHED = "rooflinectl.before_dashes"  # ctx.meta: the arguments before `--`, when the line has one


class ScriptCommand(click.Command):
    """A click command that remembers what came before `--` (click's parser drops the `--`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            ctx.meta[DASHED] = list(args[:args.index("--")])
        return super().parse_args(ctx, args)


def _typo(name: str, command: click.Command) -> UsageError:
    close = difflib.get_close_matches(name, option_names(command), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return UsageError(f"`profile` has no option {name}{hint}; arguments for the script go after its path or after "
                      "`--`: rooflinectl profile [OPTIONS] SCRIPT [--] ARGS.")


def check_target(target: str, command: click.Command, ctx: click.Context | None = None) -> None:
    """Refuse an unknown option where only rooflinectl's go: in the target's place, where click
    leaves one written before the script (`profile --wramup 3 script.py`, which would then run
    `--wramup` as the script), or anywhere before a `--` on the command line."""
    if target.startswith("-") and target != "-":
        raise _typo(target.split("=", 1)[0], command)
    known = set(option_names(command))
    for argument in (ctx.meta.get(DASHED) or []) if ctx is not None else []:
        name = argument.split("=", 1)[0]
        if argument.startswith("-") and argument != "-" and name not in known and not _short_cluster(name, known):
            raise _typo(name, command)


def _short_cluster(name: str, known: set[str]) -> bool:
    """`-qo` style: one dash and letters that are each a known short option (or a value glued on)."""
    return len(name) > 2 and name[1] != "-" and f"-{name[1]}" in known


def forwarded_lookalike(script_args: tuple[str, ...], command: click.Command,
                        ctx: click.Context | None = None) -> str | None:
    """One line when an argument handed to the script looks like a misspelt rooflinectl option
    (`script.py --wramup 3`): it still goes to the script, unchanged; the line says where
    rooflinectl's own options go. None when nothing looks like one, or when the command line has
    a `--` (what follows it is the script's by intent)."""
    if ctx is not None and DASHED in ctx.meta:
        return None
    known = option_names(command)
    for argument in script_args:
        name = argument.split("=", 1)[0]
        if not name.startswith("--") or name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.85)
        if close:
            return (f"{name} goes to the script; if it is rooflinectl's {close[0]}, put it before the script "
                    "path.")
    return None
