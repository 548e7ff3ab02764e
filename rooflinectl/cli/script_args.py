"""`rooflinectl profile`'s options and the script's arguments kept apart: an option rooflinectl does
not know, written before the script, is a typo to report (with the option it was probably meant
to be), not an argument to hand to the script. Arguments after the script path or after `--` go
to the script unchanged."""

from __future__ import annotations

import difflib

import click

from rooflinectl.errors import UsageError


def option_names(command: click.Command) -> list[str]:
    """Every option string the command knows (--warmup, -o, --output, ...)."""
    return [name for param in command.params if isinstance(param, click.Option)
            for name in (*param.opts, *param.secondary_opts)]


def check_target(target: str, command: click.Command) -> None:
    """Refuse a target that is an option: click leaves an unknown option before the script in the
    target's place (`profile --wramup 3 script.py`), which would then be run as the script."""
    if not target.startswith("-") or target == "-":
        return
    name = target.split("=", 1)[0]
    close = difflib.get_close_matches(name, option_names(command), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise UsageError(f"`profile` has no option {name}{hint}; arguments for the script go after its path or after "
                     "`--`: rooflinectl profile [OPTIONS] SCRIPT [--] ARGS.")


def forwarded_lookalike(script_args: tuple[str, ...], command: click.Command) -> str | None:
    """One line when an argument handed to the script looks like a misspelt rooflinectl option
    (`script.py --wramup 3`): it still goes to the script, unchanged; the line says where
    rooflinectl's own options go. None when nothing looks like one."""
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
