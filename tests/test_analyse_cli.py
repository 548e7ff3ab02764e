"""`rooflinectl analyse TRACE`: a saved trace (torch.profiler's own Chrome trace recorded on an
H200, or a capture file) analysed on this CPU machine, held to the roofs of the GPU it names."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflinectl.cli.main import main
from rooflinectl.errors import EXIT_USAGE
from rooflinectl.outputs.profile_file import load_profile

DATA = Path(__file__).parent / "data"
GPT2 = DATA / "h200_real" / "gpt2_fwd_eager.trace.json.gz"  # bare torch.profiler, batch 4, seq 512, bf16
H200_DRAM_BYTES_PER_S = 4.8e12  # NVIDIA's H200 datasheet
H200_BF16_DENSE_FLOPS_PER_S = 989e12


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("analyse") / "gpt2.json"
    result = _invoke("analyse", str(GPT2), "-o", str(out), "--top", "5")
    assert result.exit_code == 0, result.output
    return result, load_profile(out)


def test_a_chrome_trace_from_an_h200_is_held_to_an_h200s_roofs(gpt2) -> None:
    result, data = gpt2
    assert data.metadata["device_kind"] == "cuda" and data.metadata["device_name"] == "NVIDIA H200"
    assert data.ceilings.device_name == "NVIDIA H200"  # not this machine's CPU
    assert data.ceilings.memory_bytes_per_s["dram"].value == pytest.approx(H200_DRAM_BYTES_PER_S)
    assert data.ceilings.compute_flops_per_s["tensor.bf16"].value == pytest.approx(H200_BF16_DENSE_FLOPS_PER_S, rel=0.01)
    assert "the spec roofs of the NVIDIA H200 the trace names" in result.output
    assert "profile written to" in result.output


def test_its_logits_gemm_carries_2mnk_per_call(gpt2) -> None:
    _, data = gpt2
    logits = data.kernels[data.kernels["shapes"].str.contains("50257", regex=False)
                          & (data.kernels["op_family"] == "gemm")]
    assert len(logits) == 1
    row = logits.iloc[0]
    m, k, n = 4 * 512, 768, 50257  # [2048, 768] x [768, 50257]
    assert row["flops"] == pytest.approx(2 * m * n * k * row["calls"])
    assert row["bound"] == "compute"
    assert data.summary["iterations_method"] == "kernel_sequence"  # the five forwards, found in a bare trace


def test_a_plain_json_trace_reads_as_the_gzipped_one(gpt2, tmp_path: Path) -> None:
    plain = tmp_path / "gpt2.json"
    plain.write_bytes(gzip.decompress(GPT2.read_bytes()))
    out = tmp_path / "p.json"
    assert _invoke("analyse", str(plain), "-o", str(out), "-q").exit_code == 0
    again = load_profile(out)
    assert again.kernels[["kernel", "op", "calls", "flops", "bytes"]].equals(
        gpt2[1].kernels[["kernel", "op", "calls", "flops", "bytes"]])


def test_a_capture_file_is_analysed_too(tmp_path: Path) -> None:
    out = tmp_path / "mlp.json"
    result = _invoke("analyse", str(DATA / "h200_mlp_bf16.capture.json.gz"), "-o", str(out), "-q")
    assert result.exit_code == 0, result.output
    data = load_profile(out)
    assert data.ceilings.device_name == data.metadata["device_name"] == "NVIDIA H200"
    assert (data.kernels["op_family"] == "gemm").any() and data.summary["known_cost_time_share"] > 0.9


@pytest.mark.parametrize(("content", "says"), [
    (None, "is not a file"),
    (b'{"traceEvents": []}', "holds no CPU ops and no kernels"),
    (b"not json at all", "not"),
    (b'{"format": "rooflinectl-profile", "kernels": []}', "holds no CPU ops and no kernels"),
])
def test_what_is_not_a_trace_gets_one_sentence_and_exit_2(tmp_path: Path, content: bytes | None, says: str) -> None:
    path = tmp_path / "input.json"
    if content is not None:
        path.write_bytes(content)
    out = tmp_path / "out.json"
    result = _invoke("analyse", str(path), "-o", str(out))
    assert result.exit_code == EXIT_USAGE
    assert says in result.output and "Traceback" not in result.output
    assert not out.exists()  # no profile for what is not a trace


def test_an_output_that_is_not_a_profile_is_not_replaced(tmp_path: Path) -> None:
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"mine": True}))
    result = _invoke("analyse", str(GPT2), "-o", str(notes), "-q")
    assert result.exit_code == EXIT_USAGE and "Refusing to replace" in result.output
    assert json.loads(notes.read_text()) == {"mine": True}


def test_the_trace_profile_saved_gives_the_profile_again(tmp_path: Path) -> None:
    """`profile --save-trace` then `analyse` of that trace: the same rows and costs on this CPU
    (the example has no two inputs that are one tensor: nothing only a live capture knows)."""
    examples = Path(__file__).resolve().parents[1] / "examples"
    live, again, trace = tmp_path / "live.json", tmp_path / "again.json", tmp_path / "t.json.gz"
    ran = _invoke("profile", str(examples / "mlp.py"), "-o", str(live), "--save-trace", str(trace), "-q",
                  "--device", "cpu", "--", "--batch", "16", "--width", "64", "--steps", "2")
    assert ran.exit_code == 0, ran.output
    result = _invoke("analyse", str(trace), "-o", str(again), "-q")
    assert result.exit_code == 0, result.output
    assert "this machine's CPU" in result.output  # a CPU trace names no CPU
    a, b = load_profile(live), load_profile(again)
    columns = ["kernel", "op", "shapes", "calls", "flops", "bytes"]
    assert len(a.kernels) > 5 and a.kernels[columns].equals(b.kernels[columns])
    assert b.summary["regions"] == a.summary["regions"] == ["step"]


def test_a_profile_of_ours_is_replaced_without_force(tmp_path: Path) -> None:
    """The -o guard knows a profile file by the format key the writer puts in it: analysing again
    into the same file replaces it (a wrong marker would refuse, as for any other file)."""
    out = tmp_path / "again.json"
    for _ in range(2):
        result = _invoke("analyse", str(GPT2), "-o", str(out), "-q")
        assert result.exit_code == 0, result.output
    assert load_profile(out).metadata["source_file"] == str(GPT2)
