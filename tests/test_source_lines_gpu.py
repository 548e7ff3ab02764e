"""Source lines on the GPU: a tiny GPT-2-like model's matmul kernels (cuBLAS/nvjet, found through
the op that launched them) carry the user's line, profiled as a script in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parent.parent

SCRIPT = """\
import torch

class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = torch.softmax(q @ k.transpose(-1, -2) / 8.0, dim=-1)
        return x + self.proj(scores @ v)

model = torch.nn.Sequential(*[Block(256) for _ in range(2)]).cuda()
x = torch.randn(8, 128, 256, device="cuda")
for _ in range(10):
    y = model(x)
torch.cuda.synchronize()
"""
QKV, SCORES, PROJ = 10, 11, 12  # the lines of SCRIPT above (1-based) that make the matmuls


def test_a_tiny_gpt_models_matmul_kernels_get_the_users_lines(tmp_path: Path) -> None:
    lines = SCRIPT.splitlines()
    assert "self.qkv(x)" in lines[QKV - 1] and "q @ k" in lines[SCORES - 1] and "self.proj" in lines[PROJ - 1]
    (tmp_path / "gpt.py").write_text(SCRIPT)
    done = subprocess.run([sys.executable, "-m", "rooflinectl", "profile", "gpt.py", "-o", "p.json", "--device",
                           "cuda", "-q"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    table = json.loads((tmp_path / "p.json").read_text())["kernels"]
    rows = [dict(zip(table["columns"], r)) for r in table["rows"]]
    gemms = [r for r in rows if r["op_family"] == "gemm"]
    assert gemms, [(r["kernel"], r["op"]) for r in rows]
    where = {r["source"] for r in gemms}
    # the module's line (Linear's addmm: the user's forward calls self.qkv / self.proj) and the @ lines
    assert where == {f"gpt.py:{n}" for n in (QKV, SCORES, PROJ)}, [(r["kernel"][:40], r["op"], r["source"]) for r in gemms]
    total = sum(r["time_s"] for r in rows)
    located = sum(r["time_s"] for r in rows if r["source"])
    assert located > 0.9 * total, [(r["kernel"][:40], r["source"]) for r in rows if not r["source"]]
