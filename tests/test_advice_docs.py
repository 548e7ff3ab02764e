"""A rule's documentation, one text everywhere (issue 35: "rule links point at the docs shipped
with the package"): docs/advice.md's `## Rules` section is the rules' docstrings, `advise
--explain RULE_ID` prints a rule's section offline, and every report links the section of the
installed version's tag, at an anchor the page has."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinectl._version import __version__
from rooflinectl.analysis.advice import RULES
from rooflinectl.analysis.advice.registry import docs_ref
from rooflinectl.cli.main import main

ROOT = Path(__file__).parents[1]
PAGE = ROOT / "docs" / "advice.md"
PROFILE = ROOT / "tests" / "data" / "h200_attention_naive.profile.json"
PINNED = f"https://github.com/rooflinectl/rooflinectl/blob/v{__version__}/docs/advice.md#"


def _rules_section(page: str) -> str:
    start = page.index("\n## Rules\n") + 1
    end = page.find("\n## ", start + 1)
    return page[start:] if end < 0 else page[start:end + 1]


def _sections(page: str) -> dict[str, str]:
    """Each rule's section of the page: from its `### id` heading to the next heading."""
    parts = re.split(r"^(?=### )", _rules_section(page), flags=re.M)[1:]
    return {part.split("\n", 1)[0].removeprefix("### "): part for part in parts}


def _github_anchors(page: str) -> set[str]:
    """The anchors GitHub gives a page's headings: the text in lower case, punctuation other than
    `-` and `_` dropped, spaces as `-` (a repeated heading gets -1, -2: none here)."""
    headings = re.findall(r"^#{1,6} (.+)$", page, flags=re.M)
    return {re.sub(r"[^a-z0-9 _-]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def _advise(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["advise", str(PROFILE), *args], env={"COLUMNS": "80"})
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def test_the_pages_rules_are_the_docstrings() -> None:
    """docs/advice.md holds the text the registry writes, to the character (scripts/advice_docs.py
    rewrites it): a docstring changed without the page, or the page edited by hand, fails here."""
    from rooflinectl.cli.rule_docs import rules_markdown

    page = PAGE.read_text(encoding="utf-8")
    assert _rules_section(page) == rules_markdown(), "run `python scripts/advice_docs.py`"
    assert set(_sections(page)) == set(RULES)


def test_every_rule_link_lands_on_its_section_of_this_version() -> None:
    anchors = _github_anchors(PAGE.read_text(encoding="utf-8"))
    for rule_id, entry in RULES.items():
        assert entry.docs_url.startswith(PINNED) and "/main/" not in entry.docs_url, entry.docs_url
        anchor = entry.docs_url.removeprefix(PINNED)
        assert anchor in anchors, (rule_id, anchor)
    assert "estimates-and-how-they-are-capped" in anchors  # the slug rule holds for the page's other headings


def test_a_development_build_links_main() -> None:
    assert docs_ref("0.1.0") == "v0.1.0" and docs_ref("1.2.0rc1") == "v1.2.0rc1"
    assert docs_ref("0.2.0.dev3") == "main" and docs_ref("0.1.0+g1234abc") == "main"


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_explain_prints_the_rules_section_of_the_page(rule_id: str) -> None:
    result = CliRunner().invoke(main, ["advise", "--explain", rule_id], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    section = _sections(PAGE.read_text(encoding="utf-8"))[rule_id]
    assert " ".join(result.output.split()) == " ".join(section.split())
    assert all(len(line) <= 80 and line == line.rstrip() for line in result.output.splitlines())


@pytest.mark.parametrize("asked, hint", [
    ("fusion.memry-chain", "(did you mean fusion.memory-chain?)"),
    ("fusion", "(did you mean fusion.memory-chain?)"),  # a prefix, as --select takes: the rules under it
    ("gate", "gate.launch-overhead or gate.min-efficiency"),
    ("no-such-thing", "(`rooflinectl advise --list-rules` lists them)"),
])
def test_explain_of_an_unknown_rule_is_one_sentence_and_exit_2(asked: str, hint: str) -> None:
    result = CliRunner().invoke(main, ["advise", "--explain", asked])
    assert result.exit_code == 2, result.output
    message = result.output.strip()
    assert message.startswith(f"rooflinectl: --explain: no rule is named '{asked}'"), message
    assert hint in message and message.endswith(".") and "\n" not in message, message


def test_reports_link_the_installed_versions_docs() -> None:
    """markdown, json, junit and github carry each finding's link, pinned to this version; the
    terminal and the annotations say how to read it offline; markdown for a PR comment does not."""
    code, text = _advise("--format", "json")
    findings = json.loads(text)["findings"]
    assert code == 0 and findings
    rules = {f["rule_id"] for f in findings}
    assert all(f["docs"] == PINNED + f["rule_id"].replace(".", "") for f in findings)

    _, markdown = _advise("--format", "markdown")
    for rule_id in rules:
        assert f"[About this rule]({PINNED}{rule_id.replace('.', '')})" in markdown, rule_id
    assert "--explain" not in markdown and "rooflinectl advise" not in markdown

    _, github = _advise("--format", "github")
    annotations = [line for line in github.splitlines() if line.startswith("::")]
    assert len(annotations) == len(findings)
    for line, f in zip(annotations, findings, strict=True):
        assert line.endswith(f"Docs: {f['docs']} (offline: rooflinectl advise --explain {f['rule_id']})"), line

    _, table = _advise()
    hints = [line.strip() for line in table.splitlines() if line.strip().startswith("docs:")]
    assert hints == [f"docs: rooflinectl advise --explain {f['rule_id']}" for f in findings]


def test_junit_cases_link_their_rule() -> None:
    code, text = _advise("--format", "junit", "--fail-on", "warning")
    assert code == 1
    cases = ET.fromstring(text).iter("testcase")
    linked = 0
    for case in cases:
        body = " ".join(node.text or "" for node in case if node.tag in ("failure", "system-out"))
        if body.strip():
            assert f"About this rule: {PINNED}{case.get('name', '').replace('.', '')}" in body, body
            linked += 1
    assert linked >= 3


def test_the_html_report_links_each_finding_to_its_docs() -> None:
    from rooflinectl.analysis.advice import advise
    from rooflinectl.outputs.profile_file import load_profile
    from rooflinectl.outputs.report_data import advice_view

    view = advice_view(advise(load_profile(PROFILE)))
    assert view["findings"] and all(f["docs"] == PINNED + f["rule"].replace(".", "") for f in view["findings"])
    script = (ROOT / "rooflinectl" / "outputs" / "report_assets" / "report.js").read_text(encoding="utf-8")
    assert "link.href = f.docs;" in script  # the card's `docs:` line (an https link only)


def test_markdown_notes_name_no_option_to_type() -> None:
    """A PR comment is read, not typed into: what was left out is said without `--all` or
    `--hide-below 0` (the terminal says both)."""
    _, markdown = _advise("--format", "markdown", "--top", "1")
    notes = [line for line in markdown.splitlines() if line.startswith("_")]
    assert any("not shown" in n for n in notes) and any("left out" in n for n in notes), notes
    assert not [n for n in notes if "--" in n], notes
    table = " ".join(_advise("--top", "1")[1].split())
    assert "--all shows them" in table and "--hide-below 0 shows them" in table


@pytest.mark.browser
def test_the_report_page_links_each_finding_in_a_browser(tmp_path: Path) -> None:
    """The page's finding cards carry a link to their rule's docs (headless Chromium)."""
    from cdp_pipe import Browser, find_chromium

    from rooflinectl.html_report import report_document
    from rooflinectl.outputs.report_html import write_report

    document = report_document("single", [load_profile_file()], ["attention"])
    page = write_report(document, tmp_path / "report.html")
    with Browser(find_chromium()) as browser:
        browser.open(page)
        assert browser.errors() == []
        links = browser.evaluate("Array.from(document.querySelectorAll('.finding a')).map(a => a.href)")
    expected = [f["docs"] for f in document["advice"]["findings"]]
    assert expected and links == expected and all(x.startswith(PINNED) for x in links)


def load_profile_file():
    from rooflinectl.outputs.profile_file import load_profile

    return load_profile(PROFILE)


def test_the_docs_script_rewrites_only_the_rules_section() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("advice_docs", ROOT / "scripts" / "advice_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = PAGE.read_text(encoding="utf-8")
    assert module.with_rules(page) == page  # up to date: nothing to change
    stale = page.replace("**Fuse a chain of memory-bound kernels**", "**An old title**")
    assert stale != page and module.with_rules(stale) == page
    later = page + "\n## After the rules\n\nKept.\n"
    assert module.with_rules(later.replace("**Pin host memory", "**Old")) == later
