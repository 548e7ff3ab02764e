"""`rooflinectl report`: the HTML file's data, its safety, its modes, the API and the packaging.
The page itself is driven in a real browser by tests/test_report_browser.py."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner
from nvml_samples import SW_POWER_CAP, steady_then_capped
from report_profiles import DATA, HOSTILE, HOSTILE_ROWS, MLP, hostile_profile

from rooflinectl.analysis.charts import clock_strip_or_why
from rooflinectl.api import Profile
from rooflinectl.cli.main import main
from rooflinectl.cli.report_cmd import load_report_profiles
from rooflinectl.html_report import report_document
from rooflinectl.outputs.escape import plain
from rooflinectl.outputs.profile_file import load_profile
from rooflinectl.outputs.report_data import clock_view
from rooflinectl.outputs.report_html import ASSETS, render_report, script_safe_json

ROOT = Path(__file__).parent.parent


def page_data(page: str) -> dict:
    """The JSON the page carries, read back as the browser's JSON.parse would."""
    match = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert match is not None
    return json.loads(match.group(1))


def test_json_in_a_script_element_cannot_end_it_and_reads_back_the_same() -> None:
    document = {"names": list(HOSTILE), "nested": {"<k>": "a&b"}}
    text = script_safe_json(document)
    assert not set(text) & set("<>&\u2028\u2029")  # nothing the HTML parser could act on
    assert all(ord(c) < 128 for c in text)  # lone surrogates too: escaped, never encoded
    assert json.loads(text) == document


def test_hostile_names_travel_as_data_only() -> None:
    page = render_report(report_document("single", [hostile_profile()], ["mlp"]))
    assert page.count("<script") == 3  # the data element, the chart library, report.js: no script from a name
    data_text = page.split('id="report-data">', 1)[1].split("</script>", 1)[0]
    assert "__pwned" in data_text and "<" not in data_text  # the payloads sit escaped inside the JSON only
    assert "__pwned" not in page.replace(data_text, "")
    data = page_data(page)
    assert [data["views"][0]["rows"]["kernel"][r] for r in HOSTILE_ROWS] == list(HOSTILE)  # the very text, unchanged
    assert page.encode("utf-8")  # a lone surrogate would not encode


def test_the_page_holds_every_group_with_shows_columns_and_the_advice() -> None:
    data = load_profile(MLP)
    data.metadata = {k: v for k, v in data.metadata.items() if k != "nvml"}  # the clock view's other case: no samples
    document = report_document("single", [data], ["mlp"])
    view = document["views"][0]
    assert len(view["rows"]["kernel"]) == len(data.kernels) == len(view["rows"]["cells"])
    assert [c["name"] for c in view["columns"]][:4] == ["share", "calls", "time", "FLOPs"]
    first = data.kernels.iloc[0]
    assert view["rows"]["x"][0] == pytest.approx(first["flops"] / first["bytes"])  # placed as plot places it
    assert view["rows"]["y"][0] == pytest.approx(first["flops"] / first["time_s"])
    assert view["summary"][0].startswith("device: NVIDIA H200")
    assert {r["key"] for r in view["roofs"]} >= {"dram", "tensor.bf16"}
    findings = document["advice"]["findings"]
    assert findings and all(0 <= r < len(data.kernels) for f in findings for r in f["rows"])
    assert document["advice"]["headline"].startswith(f"{len(findings)} finding(s); estimated saving ")
    assert view["clocks"] == {"why": "the profile holds no NVML samples"}


def test_clock_view_holds_the_samples_and_the_capped_ones() -> None:
    data = load_profile(MLP)
    data.metadata = {**data.metadata, "nvml": steady_then_capped(0, 200_000_000, 100_000_000, reason=SW_POWER_CAP)}
    data.summary = {k: v for k, v in data.summary.items() if k != "clocks"}  # the samples' own span, from 0
    view = clock_view(clock_strip_or_why(data))
    assert len(view["t_s"]) == 11 and view["power_limit_w"] == 700.0
    assert view["capped"] == [t >= 0.1 for t in view["t_s"]]
    assert view["sm_clock_mhz"][-1] == 1485 and view["reasons"][-1] == "sw_power_cap"


def test_report_command_writes_one_file_and_refuses_other_suffixes(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["report", str(MLP), "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "Plotly" in page and "http://" not in page.split("<script>")[0]
    bad = CliRunner().invoke(main, ["report", str(MLP), "-o", str(tmp_path / "r.json")])
    assert bad.exit_code == 2 and "HTML file" in bad.output and not (tmp_path / "r.json").exists()
    again = CliRunner().invoke(main, ["report", str(MLP), "-o", str(out)])
    assert again.exit_code == 0, again.output  # its own report it replaces
    theirs = tmp_path / "index.html"
    theirs.write_text("<html><body>someone's page</body></html>")
    refused = CliRunner().invoke(main, ["report", str(MLP), "-o", str(theirs)])
    assert refused.exit_code == 2 and "--force" in refused.output and "someone's" in theirs.read_text()
    assert CliRunner().invoke(main, ["report", str(MLP), "-o", str(theirs), "--force"]).exit_code == 0
    missing = CliRunner().invoke(main, ["report", str(tmp_path / "nope.json"), "-o", str(out)])
    assert missing.exit_code == 2 and "No profile file" in missing.output and "Traceback" not in missing.output


def test_two_profiles_make_a_comparison_with_arrows_and_the_diff(tmp_path: Path) -> None:
    out = tmp_path / "cmp.html"
    naive, sdpa = DATA / "h200_attention_naive.profile.json", DATA / "h200_attention_sdpa.profile.json"
    result = CliRunner().invoke(main, ["report", str(naive), str(sdpa), "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = page_data(out.read_text(encoding="utf-8"))
    assert data["mode"] == "compare" and [v["name"] for v in data["views"]] == ["h200_attention_sdpa", "h200_attention_naive"]
    cmp = data["comparison"]
    diff = json.loads(CliRunner().invoke(main, ["diff", str(naive), str(sdpa), "--format", "json"]).stdout)
    assert len(cmp["changes"]) == len(diff["changed"]) and len(cmp["arrows"]) == len(diff["changed"])
    sdpa_rows = len(load_profile(sdpa).kernels)
    assert all(0 <= r < sdpa_rows for a in cmp["arrows"] for r in a["rows"])


def test_profile_report_and_notebook_view(tmp_path: Path) -> None:
    profile = Profile(hostile_profile())
    profile.report(str(tmp_path / "api.html"))
    assert page_data((tmp_path / "api.html").read_text(encoding="utf-8"))["views"][0]["rows"]["kernel"][HOSTILE_ROWS[0]] == HOSTILE[0]
    shown = profile._repr_html_()
    assert "device: NVIDIA H200" in shown and 'src="data:image/png;base64,' in shown  # summary and chart inline
    assert "&lt;/script&gt;&lt;script&gt;window.__pwned" in shown and "<script" not in shown  # names as text
    assert "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT" in shown  # the top rows
    assert shown.encode("utf-8")


def test_a_lone_surrogate_is_shown_not_written_raw() -> None:
    """A profile's JSON may hold "\\ud800": no terminal, chart or file can encode it raw."""
    assert plain("lone \ud800 \udfff end") == "lone \\ud800 \\udfff end"
    assert plain("ünïcødé 🚀") == "ünïcødé 🚀"


def test_the_assets_are_package_data() -> None:
    """`pip install .` ships what the page inlines: pyproject's package-data names each asset."""
    assets = resources.files("rooflinectl.outputs").joinpath(ASSETS)
    names = {p.name for p in assets.iterdir()}
    assert {"plotly-basic.min.js", "report.js", "report.css", "THIRD_PARTY.md"} <= names
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["rooflinectl.outputs"]
    assert all(any(Path(f"{ASSETS}/{n}").match(g) for g in globs) for n in names)


def test_profile_writes_the_report_beside_the_profile(tmp_path: Path) -> None:
    script = tmp_path / "mm.py"
    script.write_text("import torch\nx = torch.randn(64, 64)\nfor _ in range(3):\n    y = x @ x\n")
    out, page = tmp_path / "p.json", tmp_path / "p.html"
    result = CliRunner().invoke(main, ["profile", str(script), "-o", str(out), "-q", "--device", "cpu",
                                       "--report", str(page)])
    assert result.exit_code == 0, result.output
    data = page_data(page.read_text(encoding="utf-8"))
    assert data["views"][0]["rows"]["kernel"] == load_profile(out).kernels["kernel"].tolist()
    refused = CliRunner().invoke(main, ["profile", str(script), "-o", str(out), "--report", str(tmp_path / "r.pdf")])
    assert refused.exit_code == 2 and "HTML file" in refused.output  # said before the script runs


def test_a_jobs_rank_files_make_a_per_rank_report(tmp_path: Path) -> None:
    """The recorded 2-rank DDP GPT-2 run: the merged view first, then each rank's own table, and
    the ranks side by side as `show` prints them."""
    from test_ranks import _rank_profile

    from rooflinectl.outputs.profile_file import save_profile

    for rank in (0, 1):
        save_profile(_rank_profile(rank), tmp_path / f"p.rank{rank}.json")
    out = tmp_path / "ranks.html"
    result = CliRunner().invoke(main, ["report", str(tmp_path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = page_data(out.read_text(encoding="utf-8"))
    assert data["mode"] == "ranks" and [v["name"] for v in data["views"]] == ["all ranks (mean)", "rank 0", "rank 1"]
    for rank in (0, 1):
        assert data["views"][rank + 1]["rows"]["kernel"] == _rank_profile(rank).kernels["kernel"].tolist()
    ranks = data["views"][0]["ranks"]
    assert [row[0].rstrip(" *") for row in ranks["ranks"]["rows"]] == ["0", "1"]
    assert any(line.startswith("straggler: rank 1") for line in ranks["lines"])
    assert ranks["collectives"]["rows"]  # the all-reduces, matched across the ranks


def test_markdown_advice_links_to_the_report(tmp_path: Path) -> None:
    link = "reports/run 1 (new).html"
    result = CliRunner().invoke(main, ["advise", str(MLP), "--format", "markdown", "--report-link", link])
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("**Interactive report**") and last.endswith("(reports/run%201%20%28new%29.html)")
    assert "[reports/run 1 \\(new\\).html]" in last  # the text escaped for Markdown
    wrong = CliRunner().invoke(main, ["advise", str(MLP), "--format", "json", "--report-link", link])
    assert wrong.exit_code == 2 and "--format markdown" in wrong.output


def test_report_without_arguments_reads_this_folders_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    missing = CliRunner().invoke(main, ["report"])
    assert missing.exit_code == 2 and "No profile file at rooflinectl.profile.json" in missing.output
    (tmp_path / "rooflinectl.profile.json").write_bytes(MLP.read_bytes())
    result = CliRunner().invoke(main, ["report"])
    assert result.exit_code == 0 and "report written to report.html" in result.output, result.output
    assert page_data((tmp_path / "report.html").read_text(encoding="utf-8"))["mode"] == "single"


def test_two_profiles_of_the_same_name_are_told_apart(tmp_path: Path) -> None:
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "rooflinectl.profile.json").write_bytes(MLP.read_bytes())
    mode, _, names, _ = load_report_profiles((str(tmp_path / "a" / "rooflinectl.profile.json"),
                                              str(tmp_path / "b" / "rooflinectl.profile.json")))
    assert mode == "compare" and names[0] != names[1] and names[0].endswith("a/rooflinectl.profile.json")
