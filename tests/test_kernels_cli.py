"""`rooflinectl kernels` through click's CliRunner: the interpreter run, its profile file (which
show, plot and advise read), and the one-sentence errors with their exit codes."""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner

from rooflinectl.cli.main import main
from rooflinectl.outputs.profile_file import load_profile

torch = pytest.importorskip("torch")


def _invoke(*args: str):
    return CliRunner().invoke(main, ["kernels", *args])


@pytest.mark.triton
def test_interpreted_run_writes_a_profile_that_show_plot_and_advise_read(interpreted_kernels, tmp_path) -> None:
    profile, chart = tmp_path / "k.profile.json", tmp_path / "k.png"
    result = _invoke("--interpret", "--only", "copy,matmul", "--format", "json", "-o", str(profile),
                     "--plot", str(chart))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["interpreted"] is True and report["size"] == "small"
    assert [spec["name"] for spec in report["kernels"]] == ["copy", "matmul"]
    tiled = next(v for v in report["kernels"][1]["variants"] if v["variant"] == "tiled")
    m, n, k = 12, 72, 56  # the small matmul
    assert tiled["check"]["ok"] and tiled["flops"] == 2 * m * n * k
    assert tiled["autotune"][0]["best"]["BLOCK_M"] == 128
    assert tiled["vs_library"] == pytest.approx(
        next(v for v in report["kernels"][1]["variants"] if v["role"] == "library")["time_s"] / tiled["time_s"])

    data = load_profile(profile)
    rows = data.kernels.set_index("module")
    assert len(rows) == 6  # copy: coalesced, strided, torch; matmul: tiled, naive, torch
    assert rows.loc["copy/coalesced", "cost_source"] == "triton"
    assert rows.loc["copy/coalesced", "bytes"] == 2 * 4 * 16 * 1024
    assert rows.loc["matmul/torch matmul", "cost_source"] == "analytic"
    assert rows.loc["matmul/torch matmul", "flops"] == 2 * m * n * k  # the op's cost, from the reference kernel
    assert data.metadata["reference_kernels"]["interpreted"] is True
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    shown = CliRunner().invoke(main, ["show", str(profile), "--format", "csv"])
    assert shown.exit_code == 0 and "copy_strided_kernel" in shown.output
    advised = CliRunner().invoke(main, ["advise", str(profile), "--format", "json"])
    assert advised.exit_code == 0, advised.output
    assert "copy_strided_kernel" in advised.output  # far from its roof: the coalescing advice


@pytest.mark.triton
def test_table_output_lists_every_variant_and_says_times_are_the_interpreters(interpreted_kernels, tmp_path) -> None:
    result = _invoke("--interpret", "--only", "vector_add", "-o", str(tmp_path / "p.json"))
    assert result.exit_code == 0, result.output
    for text in ("vector_add", "triton", "torch add (library)", "ok", "Triton interpreter on the CPU"):
        assert text in result.output, text
    assert "the library wins" not in result.output  # no verdict from interpreter times


@pytest.mark.triton
def test_a_kernel_that_misses_its_reference_fails_the_run(interpreted_kernels, tmp_path, monkeypatch) -> None:
    coalescing = __import__("rooflinectl_kernels.coalescing", fromlist=["vector_add"])
    real = coalescing.vector_add
    monkeypatch.setattr(coalescing, "vector_add", lambda a, b: real(a, b) + 1)
    result = _invoke("--interpret", "--only", "vector_add", "-o", str(tmp_path / "p.json"))
    assert result.exit_code == 1, result.output
    assert "vector_add / triton" in result.output and "mismatch" in result.output


@pytest.mark.triton
def test_a_library_that_differs_is_reported_not_failed(interpreted_kernels, tmp_path, monkeypatch) -> None:
    """torch's own numerics (its CPU bf16 LayerNorm backward sums dw in bf16, say) are not the
    reference kernel's to fail: shown as "differs", said so, exit 0."""
    spec = interpreted_kernels.KERNELS["vector_add"]
    off = dataclasses.replace(spec.library, run=lambda i: i["a"] + i["b"] + 1)
    monkeypatch.setitem(interpreted_kernels.KERNELS, "vector_add",
                        dataclasses.replace(spec, variants=(spec.primary, off)))
    result = _invoke("--interpret", "--only", "vector_add", "-o", str(tmp_path / "p.json"), "--wide")
    assert result.exit_code == 0, result.output
    assert "differs" in result.output and "mismatch" not in result.output
    assert "vector_add / torch add: differs from the fp32 reference" in result.output
    assert "the reference kernels' Triton kernels alone can fail the run" in result.output


def _from_header(stdout: str) -> list[str]:
    """The variants table's lines, from its header ("kernel  variant ...") on."""
    lines = stdout.splitlines()
    return lines[next(i for i, line in enumerate(lines) if line.split()[:2] == ["kernel", "variant"]):]


@pytest.mark.slow
@pytest.mark.triton
@pytest.mark.parametrize("columns", [80, 100])
def test_the_table_fits_the_terminal_and_wide_shows_every_column(interpreted_kernels, tmp_path, columns) -> None:
    args = ("--interpret", "--only", "softmax,layernorm_fwd", "-o", str(tmp_path / "p.json"))
    narrow = CliRunner().invoke(main, ["kernels", *args], env={"COLUMNS": str(columns)})
    assert narrow.exit_code == 0, narrow.output
    table = _from_header(narrow.stdout)
    header = table[0].split()
    assert {"time", "%", "check"} <= set(header) and "FLOP/s" not in header  # the first to give way
    # header, roofs, table, notes and progress lines; "wrote PATH" is as long as the path
    report = [line for line in (narrow.stdout + narrow.stderr).splitlines() if not line.startswith("wrote ")]
    assert all(len(line) <= columns for line in report), "\n".join(report)
    rows = [line for line in table[2:] if line.rstrip().endswith(" ok")]
    assert len(rows) == 5 and not any("…" in cell for row in rows for cell in row.split()[-4:]), "\n".join(table)
    wide = CliRunner().invoke(main, ["kernels", *args, "--wide"], env={"COLUMNS": str(columns)})
    header = _from_header(wide.stdout)[0].split()
    assert {"FLOP/s", "B/s", "bound", "roof", "library"} <= set(header)


@pytest.mark.triton
def test_list_names_every_kernel(interpreted_kernels) -> None:
    result = _invoke("--list", "--interpret")
    assert result.exit_code == 0, result.output
    names = [line.split()[0] for line in result.output.splitlines() if line[:1].strip()]  # a concept may wrap under itself
    assert names == list(interpreted_kernels.KERNELS)


@pytest.mark.triton
def test_unknown_kernel_is_a_usage_error(interpreted_kernels, tmp_path) -> None:
    result = _invoke("--interpret", "--only", "copy,nope", "-o", str(tmp_path / "p.json"))
    assert result.exit_code == 2
    assert "no reference kernel named nope" in result.output and "softmax" in result.output


def test_without_a_gpu_one_sentence_and_exit_3(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    result = _invoke("-o", str(tmp_path / "p.json"))
    assert result.exit_code == 3
    assert result.output.count("\n") == 1 and "--interpret" in result.output
    assert not (tmp_path / "p.json").exists()


def test_interpreter_runs_small_sizes_only(tmp_path) -> None:
    result = _invoke("--interpret", "--size", "large", "-o", str(tmp_path / "p.json"))
    assert result.exit_code == 2 and "small" in result.output


def test_bad_paths_are_refused_before_running(tmp_path) -> None:
    assert _invoke("--interpret", "-o", str(tmp_path / "missing" / "p.json")).exit_code == 2
    result = _invoke("--interpret", "-o", str(tmp_path / "p.json"), "--plot", str(tmp_path / "chart.gif"))
    assert result.exit_code == 2 and ".png" in result.output
