"""The HTML report in a real browser: headless Chromium (Debian's `chromium`, which CI installs)
driven over the DevTools protocol (tests/cdp_pipe.py). Skips where there is no Chromium."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from cdp_pipe import Browser, find_chromium
from nvml_samples import steady_then_capped
from report_profiles import DATA, HOSTILE, HOSTILE_ROWS, hostile_profile

from rooflinectl.cli.report_cmd import load_report_profiles
from rooflinectl.html_report import report_document
from rooflinectl.outputs.report_html import write_report

pytestmark = pytest.mark.browser

POINT_CENTRE = """(function (row) {
  var found = null;
  document.querySelectorAll('#roofline-chart .scatterlayer .trace path.point').forEach(function (p) {
    var trace = p.closest('.trace').__data__[0].trace;
    if (trace.meta === 'group' && trace.customdata[p.__data__.i] === row) {
      var r = p.getBoundingClientRect(); found = [r.left + r.width / 2, r.top + r.height / 2];
    }
  });
  return found;
})(%d)"""


@pytest.fixture(scope="module")
def browser():
    with Browser(find_chromium()) as b:
        yield b


def _table_rows(b: Browser) -> int:
    return b.evaluate("document.querySelectorAll('#kernel-table tbody tr').length")


def _settled(read, timeout_s: float = 3.0):
    """A value read again until it stops changing (the filter redraws once typing pauses)."""
    deadline, last = time.monotonic() + timeout_s, read()
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = read()
        if now == last:
            return now
        last = now
    return last


def _on_screen(b: Browser, row: int) -> tuple[float, float]:
    b.evaluate(f"document.getElementById('roofline-chart').scrollIntoView({{block: 'center'}}); {row}")
    centre = b.evaluate(POINT_CENTRE % row)
    assert centre is not None, f"row {row} has no point on the chart"
    return centre[0], centre[1]


def _hover(b: Browser, row: int) -> list:
    """Move the mouse off the chart, then onto the row's point; wait for the hover box (the chart
    library throttles hover events): [row hovered, kernel line shown, the box's display]."""
    b.mouse("mouseMoved", 2, 2)
    x, y = _on_screen(b, row)
    b.mouse("mouseMoved", x, y)
    ask = ("[window.rooflineReport.state.hovered, document.querySelector('#hover .k') && "
           "document.querySelector('#hover .k').textContent, getComputedStyle(document.getElementById('hover')).display]")
    deadline = time.monotonic() + 3
    shown = b.evaluate(ask)
    while (shown[0] != row or shown[2] != "block") and time.monotonic() < deadline:
        time.sleep(0.05)
        shown = b.evaluate(ask)
    return shown


@pytest.mark.slow
def test_report_in_a_browser(tmp_path: Path, browser: Browser) -> None:
    data = hostile_profile()
    data.metadata = {**data.metadata, "nvml": steady_then_capped(0, 400_000_000, 300_000_000)}
    document = report_document("single", [data], ["mlp"])
    page = write_report(document, tmp_path / "report.html")
    browser.open(page)
    assert browser.errors() == []
    groups = len(data.kernels)
    assert browser.evaluate("window.rooflineReport.pointsOnChart()") == groups  # every group is a point
    assert _table_rows(browser) == groups

    # hovering a point shows the kernel name of the point hovered, as text; a hostile one among them
    hovered = set()
    for row in HOSTILE_ROWS:
        shown = _hover(browser, row)
        assert shown[2] == "block" and shown[1] == data.kernels.at[shown[0], "kernel"]
        hovered.add(shown[0])
    assert hovered == set(HOSTILE_ROWS)

    # a click selects the point's table row and marks the findings about it
    findings = document["advice"]["findings"]
    browser.click(*_on_screen(browser, next(r for f in findings for r in f["rows"] if r >= 6)))
    selected = browser.evaluate("window.rooflineReport.state.selected")
    assert browser.evaluate("document.querySelector('#kernel-table tr.selected').dataset.row") == str(selected)
    about = [n for n, f in enumerate(findings) if selected in f["rows"]]
    assert browser.evaluate("Array.from(document.querySelectorAll('.finding.active')).map("
                            "function (c) { return Number(c.dataset.index); })") == about
    assert data.kernels.at[selected, "kernel"] in browser.evaluate("document.getElementById('selection').textContent")

    # the text filter and the module menu reduce the table to the rows they match
    browser.evaluate("document.getElementById('filter-text').focus()")
    browser.call("Input.insertText", {"text": "gelu"}, session=True)
    text = data.kernels[["kernel", "op", "module", "op_family"]].astype(str).agg(" ".join, axis=1)
    expected = int(text.str.contains("gelu", case=False).sum())
    assert 0 < expected < groups and _settled(lambda: _table_rows(browser)) == expected
    assert browser.evaluate("window.rooflineReport.pointsOnChart()") == expected
    browser.evaluate("var f = document.getElementById('filter-text'); f.value = '';"
                     " f.dispatchEvent(new Event('input')); var m = document.getElementById('filter-module');"
                     " m.value = 'Sequential'; m.dispatchEvent(new Event('change')); 1")
    assert _settled(lambda: _table_rows(browser)) == int((data.kernels["module"] == "Sequential").sum()) > 0

    # nothing in a name ran or became markup: it is the text of its cell
    assert browser.evaluate("window.__pwned") is None
    assert browser.evaluate("document.querySelectorAll('script').length") == 3
    assert browser.evaluate("document.querySelectorAll('img, svg[onload], b:not(.finding b)').length") == 0
    browser.evaluate("var m = document.getElementById('filter-module'); m.value = ''; m.dispatchEvent(new Event('change')); 1")
    cells = browser.evaluate("Array.from(document.querySelectorAll('#kernel-table tbody tr')).map("
                             "function (tr) { return [Number(tr.dataset.row), tr.children[tr.children.length - 2].textContent]; })")
    names = dict(cells)
    for row, name in zip(HOSTILE_ROWS, HOSTILE):
        assert names[row] == name
    assert browser.evaluate("document.querySelectorAll('#clock-chart .scatterlayer .trace').length") >= 2
    assert browser.errors() == []


def test_a_comparison_page_draws_an_arrow_per_matched_group(tmp_path: Path, browser: Browser) -> None:
    mode, profiles, names, _ = load_report_profiles((str(DATA / "h200_attention_naive.profile.json"),
                                                      str(DATA / "h200_attention_sdpa.profile.json")))
    document = report_document(mode, profiles, names)
    browser.open(write_report(document, tmp_path / "cmp.html"))
    assert browser.errors() == []
    drawn = [a for a in document["comparison"]["arrows"] if None not in (a["x0"], a["y0"], a["x1"], a["y1"])]
    assert drawn
    assert browser.evaluate("document.getElementById('roofline-chart').data.filter("
                            "function (t) { return t.meta === 'arrow'; }).reduce(function (n, t) {"
                            " return n + t.x.filter(function (v) { return v === null; }).length; }, 0)") == len(drawn)
    assert browser.evaluate("document.querySelectorAll('#diff-table tbody tr').length") \
        == len(document["comparison"]["changes"]) > 0
