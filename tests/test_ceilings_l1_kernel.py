"""The L1 measurement kernel, run by Triton's interpreter on CPU: it must load what l1_bytes says
(each program's window, every pass), or the measured L1 roof is wrong by the same factor.

Run in a fresh process: the interpreter must be on before triton is first imported."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.triton

CHECK = """
import torch
from rooflinectl.ceilings import gpu_kernels
kernels = gpu_kernels.triton_kernels()
programs, window, block, iters = 3, 16, 4, 5
x = torch.arange(programs * window, dtype=torch.float32)
out = torch.zeros(programs * block)
kernels.l1[(programs,)](x, out, gpu_kernels.L1_STRIDE, ITERS=iters, WINDOW=window, BLOCK=block)
# every element of a program's window is loaded once per pass, into lane (index % block)
expected = (x.view(programs, window // block, block).sum(dim=1) * iters).flatten()
assert torch.equal(out, expected), (out, expected)
assert gpu_kernels.l1_bytes(programs, iters, window) == 4 * programs * window * iters
print("ok")
"""


@pytest.mark.slow
def test_l1_kernel_reads_its_window_every_pass():
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
