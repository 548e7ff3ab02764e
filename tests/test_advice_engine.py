"""The advice engine: registry, Amdahl cap, ranking, severity, determinism, config."""

from __future__ import annotations

import pytest
from advice_tables import elementwise, gemm, profile, triton_row

from rooflinectl.analysis.advice import RULES, Thresholds, advise, exit_code, rule
from rooflinectl.analysis.advice.registry import make_finding
from rooflinectl.cli.config import load_config
from rooflinectl.errors import UsageError

ACT = (8192, 3072)


def mixed_rows():
    return [
        elementwise("aten::add", ACT, extra="[3072]", calls=10, module="mlp"),
        elementwise("aten::gelu", ACT, calls=10, module="mlp"),
        gemm("aten::mm", 4096, 4096, 4096, dtype="float32", efficiency=0.75, calls=10),
        triton_row("matmul_kernel", flops=2.0 * 4096**3, bytes_=3.0 * 4096**2 * 2, efficiency=0.2),
    ]


def mixed_profile(order=(0, 1, 2, 3)):
    """The rows in the given order (the launch sequence follows them)."""
    rows = mixed_rows()
    position = {old: new for new, old in enumerate(order)}
    return profile([rows[i] for i in order], sequence=[position[i] for i in [0, 1, 2] * 10 + [3]],
                   summary={"device_idle_s": 0.05, "window_s": 0.2, "launches": 31})


def test_duplicate_rule_ids_are_refused():
    with pytest.raises(ValueError, match="already registered"):
        rule(id="fusion.memory-chain", title="again", severity="info")(lambda ctx: [])
    with pytest.raises(ValueError, match="severity"):
        rule(id="x.new", title="x", severity="fatal")
    assert "x.new" not in RULES


def _findings_by_kernel(data):
    """Findings with their rows named by kernel, so two orders of the same table compare."""
    kernels = data.kernels["kernel"]
    return [(f.rule_id, f.severity, round(f.est_saving_s, 15), tuple(sorted(kernels[r] for r in f.rows)))
            for f in advise(data).findings]


def test_findings_ranked_by_saving_whatever_the_row_order():
    report = advise(mixed_profile())
    savings = [f.est_saving_s for f in report.findings]
    assert savings == sorted(savings, reverse=True)
    ids = {f.rule_id for f in report.findings}
    assert {"fusion.memory-chain", "precision.fp32-matmul", "custom.compute-far-from-roof", "launch.overhead"} <= ids
    # the ranking depends on the work, not on where the rows stand in the table
    assert _findings_by_kernel(mixed_profile((3, 2, 1, 0))) == _findings_by_kernel(mixed_profile())


def test_total_saving_is_amdahl_capped():
    report = advise(mixed_profile())
    assert 0 < report.total_saving_s <= report.run_time_s
    for f in report.findings:
        rows_s = float(mixed_profile().kernels.loc[list(f.rows), "time_s"].sum()) if f.rows else 0.0
        assert f.est_saving_s <= rows_s + f.idle_saving_s + 1e-12


def test_a_rule_promising_too_much_is_capped(monkeypatch):
    def greedy(ctx):
        return [make_finding("test.greedy", evidence="e", recommendation="r", est_saving_s=99.0, rows=[0])]

    monkeypatch.setitem(RULES, "test.greedy", RULES["fusion.memory-chain"].__class__(
        id="test.greedy", title="greedy", severity="warning", fn=greedy, doc="test"))
    data = mixed_profile()
    report = advise(data)
    (f,) = report.findings_of("test.greedy")
    assert f.est_saving_s == pytest.approx(float(data.kernels.at[0, "time_s"]))
    assert report.total_saving_s <= report.run_time_s


def test_small_savings_become_info_and_fail_on_levels():
    report = advise(mixed_profile(), Thresholds(min_saving_share=0.99))
    assert all(f.severity == "info" for f in report.findings)
    assert exit_code(report, None) == 0
    assert exit_code(report, "warning") == 0
    assert exit_code(report, "info") == 1
    loud = advise(mixed_profile())
    assert exit_code(loud, "warning") == 1 and exit_code(loud, "error") == 0


def test_disabled_rules_and_per_rule_cap():
    report = advise(mixed_profile(), Thresholds(disabled_rules=("launch.overhead",)))
    assert not report.findings_of("launch.overhead")
    assert "launch.overhead" not in [r.id for r in report.rules]
    rows = [gemm("aten::mm", 4096, 4096, 4096 + 64 * i, dtype="float32", efficiency=0.75) for i in range(3)]
    many = [elementwise(f"my_kernel_{i}", (4096, 1024 + i), origin="triton", efficiency=0.1) for i in range(4)]
    capped = advise(profile(rows + many), Thresholds(max_findings_per_rule=2))
    assert len(capped.findings_of("custom.memory-far-from-roof")) == 2
    assert capped.omitted == {"custom.memory-far-from-roof": 2}


def test_missing_columns_do_not_break_rules():
    data = mixed_profile()
    data.kernels = data.kernels.drop(columns=["blocks", "above_roof", "module"])
    assert advise(data).findings


def write(tmp_path, body: str):
    path = tmp_path / "pyproject.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_config_from_pyproject(tmp_path):
    path = write(tmp_path, '[project]\nname = "x"\n[tool.rooflinectl]\nfail-on = "warning"\n'
                           'min_efficiency = 0.4\ndisable = ["roof.stop-here"]\n'
                           '[tool.rooflinectl.advise]\nmax_unknown_share = 0.2\n')
    config = load_config(path)
    assert config.values == {"fail_on": "warning", "min_efficiency": 0.4, "disable": ("roof.stop-here",),
                             "max_unknown_share": 0.2}
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    assert load_config(start=nested).values == config.values


@pytest.mark.parametrize("body", ['[tool.rooflinectl]\nfail_on = "fatal"\n',
                                  '[tool.rooflinectl]\nmin_efficiency = "high"\n',
                                  '[tool.rooflinectl\n'])
def test_bad_config_is_a_usage_error(tmp_path, body):
    with pytest.raises(UsageError):
        load_config(write(tmp_path, body))


def test_overlapping_findings_combine_without_passing_the_row_time(monkeypatch):
    def half(rule_id):
        def fn(ctx):
            t = float(ctx.kernels.at[0, "time_s"])
            return [make_finding(rule_id, evidence="e", recommendation="r", est_saving_s=0.6 * t, rows=[0])]
        return fn

    cls = RULES["fusion.memory-chain"].__class__
    for rid in ("test.a", "test.b"):
        monkeypatch.setitem(RULES, rid, cls(id=rid, title=rid, severity="warning", fn=half(rid), doc="test"))
    data = profile([gemm("aten::mm", 4096, 4096, 4096, efficiency=0.7)])
    report = advise(data, Thresholds(disabled_rules=tuple(r for r in RULES if not r.startswith("test."))))
    t = float(data.kernels.at[0, "time_s"])
    assert report.total_saving_s == pytest.approx(t * (1 - 0.4 * 0.4))


def test_every_rule_is_in_the_docs():
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "advice.md").read_text(encoding="utf-8")
    missing = [rid for rid in RULES if f"### {rid}\n" not in text]
    assert not missing, f"document these rules in docs/advice.md: {missing}"
