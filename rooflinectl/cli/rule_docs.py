"""The advice rules' documentation, from one source: each rule's docstring (analysis/advice).

The same text is the `## Rules` section of docs/advice.md (written by scripts/advice_docs.py,
checked by tests/test_advice_docs.py), `rooflinectl advise --explain RULE_ID` (one rule, offline,
as the installed version has it) and `rooflinectl advise --list-rules` (every rule, in short).
The reports' links point at the section of the installed version's tag (registry.docs_url).
"""

from __future__ import annotations

import difflib
import textwrap

from rooflinectl.analysis.advice import RULES
from rooflinectl.analysis.advice.registry import Rule
from rooflinectl.errors import UsageError

RULES_HEADING = "## Rules"
RULES_INTRO = ("Generated from the rules' docstrings (`python scripts/advice_docs.py`): `rooflinectl advise "
               "--explain RULE_ID` prints a rule's section as the installed version has it, and "
               "`rooflinectl advise --list-rules` lists every rule.")


def _kind(entry: Rule) -> str:
    return f"CI gate, on with `--{entry.threshold.replace('_', '-')}`" if entry.gate else f"severity {entry.severity}"


def rule_section(entry: Rule) -> list[str]:
    """A rule's section of docs/advice.md as paragraphs: heading, title and kind, then its docstring."""
    return [f"### {entry.id}", f"**{entry.title}** ({_kind(entry)}).", *entry.paragraphs]


def rules_markdown() -> str:
    """The whole `## Rules` section of docs/advice.md, rules in id order."""
    blocks = [RULES_HEADING, RULES_INTRO]
    for rule_id in sorted(RULES):
        blocks += rule_section(RULES[rule_id])
    return "\n\n".join(blocks) + "\n"


def explain_text(rule_id: str, width: int = 80) -> str:
    """`advise --explain RULE_ID`: the rule's section of docs/advice.md, each paragraph wrapped to
    `width` columns between words (an id, a flag or a formula is never cut); an unknown id is a
    UsageError naming the nearest ones."""
    entry = RULES.get(rule_id)
    if entry is None:
        raise UsageError(unknown_rule(rule_id))
    wrap = textwrap.TextWrapper(width=width, break_long_words=False, break_on_hyphens=False)
    return "\n\n".join("\n".join(wrap.wrap(p)) for p in rule_section(entry)) + "\n"


def unknown_rule(rule_id: str) -> str:
    """One sentence for an id no rule has: the rules under it when it is a prefix (`fusion`), else
    the closest id, else where the list is."""
    under = sorted(r for r in RULES if r.startswith(rule_id.rstrip(".") + ".")) if rule_id else []
    close = under or difflib.get_close_matches(rule_id, sorted(RULES), n=2, cutoff=0.6)
    hint = (f"did you mean {' or '.join(close)}?" if close
            else "`rooflinectl advise --list-rules` lists them")
    return f"--explain: no rule is named {rule_id!r} ({hint})."


def rules_help(width: int = 80) -> str:
    """Every rule with its kind and its documented estimate, wrapped to `width` columns between
    words (a rule id or a shape is never cut)."""
    wrap = textwrap.TextWrapper(width=width, break_long_words=False, break_on_hyphens=False)
    indented = textwrap.TextWrapper(width=width, initial_indent="    ", subsequent_indent="    ",
                                    break_long_words=False, break_on_hyphens=False)
    lines = []
    for rule_id in sorted(RULES):
        entry = RULES[rule_id]
        kind = f"gate, --{entry.threshold.replace('_', '-')}" if entry.gate else entry.severity
        lines += wrap.wrap(f"{rule_id} ({kind}): {entry.title}")
        for paragraph in entry.paragraphs:
            lines += indented.wrap(paragraph)
        lines.append("")
    return "\n".join(lines)
