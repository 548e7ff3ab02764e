"""Write the `## Rules` section of docs/advice.md from the rules' docstrings (the one source of a
rule's documentation: `rooflinectl advise --explain RULE_ID` prints the same text offline).

python scripts/advice_docs.py          # rewrite the section in place
python scripts/advice_docs.py --check  # exit 1 when the page differs from the docstrings

The section runs from its heading to the next `## ` heading (or the end of the page); the rest of
the page is left as written. tests/test_advice_docs.py fails when the two disagree.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rooflinectl.cli.rule_docs import RULES_HEADING, rules_markdown

PAGE = Path(__file__).resolve().parents[1] / "docs" / "advice.md"


def with_rules(page: str) -> str:
    """The page with its `## Rules` section replaced by the one the registry writes."""
    start = page.index(f"\n{RULES_HEADING}\n") + 1
    after = page.find("\n## ", start + len(RULES_HEADING))
    rest = page[after + 1:] if after >= 0 else ""
    return page[:start] + rules_markdown() + ("\n" + rest if rest else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether the page is up to date")
    args = parser.parse_args()
    page = PAGE.read_text(encoding="utf-8")
    wanted = with_rules(page)
    if args.check:
        print(f"{PAGE.name}: {'up to date' if wanted == page else 'differs from the docstrings'}")
        return 0 if wanted == page else 1
    PAGE.write_text(wanted, encoding="utf-8")
    print(f"wrote the rules of {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
