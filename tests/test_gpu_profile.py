"""End-to-end on a CUDA GPU (the H200 test machine): every kernel costed, formulas exact."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

import rooflinectl  # noqa: E402

pytestmark = pytest.mark.gpu


def _rows(profile: rooflinectl.Profile, family: str):
    table = profile.kernels
    return table[table["op_family"] == family]


def test_bf16_mlp_gemms_are_2mnk_and_compute_bound() -> None:
    m, k, n = 4096, 4096, 8192
    layer = torch.nn.Linear(k, n, bias=False).cuda().to(torch.bfloat16)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)

    def step() -> None:
        with torch.no_grad():
            torch.nn.functional.gelu(layer(x))

    profile = rooflinectl.profile(step, warmup=2, iters=4)
    gemms = _rows(profile, "gemm")
    assert len(gemms) >= 1, profile.kernels.to_string()
    assert gemms["flops"].sum() == pytest.approx(4 * 2 * m * n * k)  # 4 iters x 2*M*N*K
    main = gemms[gemms["time_s"] > 0.05 * gemms["time_s"].sum()]  # cuBLAS may add a tiny helper kernel
    assert set(main["bound"]) == {"compute"}, gemms.to_string()
    assert (gemms["precision"] == "bf16").all() and (gemms["unit"] == "tensor").all()
    gelu = profile.kernels[profile.kernels["op"] == "aten::gelu"]
    assert gelu["bytes"].sum() == pytest.approx(4 * 2 * m * n * 2)  # read + write M*N bf16, 4 iters
    assert set(gelu["bound"]) == {"memory"}
    assert profile.summary["known_cost_time_share"] == pytest.approx(1.0)
    assert not profile.kernels["above_roof"].any(), profile.kernels.to_string()


def test_naive_attention_every_kernel_costed() -> None:
    b, h, s, d = 4, 16, 2048, 64
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))

    def attention() -> None:
        scores = torch.matmul(q, k.transpose(-2, -1))
        torch.matmul(torch.softmax(scores, dim=-1), v)

    profile = rooflinectl.profile(attention, warmup=2, iters=3)
    table = profile.kernels
    assert (table["cost_source"] != "none").all(), table.to_string()
    gemm_flops = _rows(profile, "gemm")["flops"].sum()
    assert gemm_flops == pytest.approx(3 * 2 * (2 * b * h * s * s * d))  # QK^T and PV, 3 iters
    softmax = _rows(profile, "softmax")
    assert softmax["bytes"].sum() == pytest.approx(3 * 2 * b * h * s * s * 2)  # read + write the scores
    assert set(softmax["bound"]) == {"memory"}


def test_script_profile_writes_file_and_keeps_exit_code(tmp_path) -> None:
    from click.testing import CliRunner

    from rooflinectl.cli.main import main

    script = tmp_path / "boom.py"
    script.write_text("import torch\nx = torch.randn(1024, 1024, device='cuda')\n(x @ x).sum()\nraise SystemExit(7)\n")
    out = tmp_path / "p.json"
    result = CliRunner().invoke(main, ["profile", str(script), "-o", str(out), "-q"])
    assert result.exit_code == 7, result.output
    data = rooflinectl.load(str(out))
    assert data.metadata["completed"] is False
    assert data.metadata["device_kind"] == "cuda"
    assert (data.kernels["op"] == "aten::mm").any()


@pytest.mark.triton
def test_triton_launch_metadata_is_the_cost() -> None:
    import triton
    import triton.language as tl

    def metadata(grid, kernel_metadata, args):
        n = args["n"]
        return {"name": "scale_kernel", "flops32": n, "bytes": 2 * 4 * n}

    @triton.jit(launch_metadata=metadata)
    def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)

    n = 1 << 24
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)

    def launch() -> None:
        scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)

    profile = rooflinectl.profile(launch, warmup=2, iters=5)
    rows = profile.kernels[profile.kernels["kernel"] == "scale_kernel"]
    assert len(rows) == 1, profile.kernels.to_string()
    row = rows.iloc[0]
    assert row["cost_source"] == "triton"
    assert row["calls"] == 5
    assert row["bytes"] == pytest.approx(5 * 8 * n)
    assert row["flops"] == pytest.approx(5 * n)
    assert row["bound"] == "memory"
    assert not math.isnan(row["efficiency"])
