"""scripts/advice_check.py's CHECK line for --verify (scripts/gpu.d/73-advice.sh): honest about
what --verify did not time."""

from __future__ import annotations

import runpy
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "advice_check.py"


def row(rule: str, status: str, warning: bool = True, detail: str = "") -> dict:
    return {"rule": rule, "subject": f"{rule} subject", "status": status, "detail": detail, "warning": warning}


def test_a_warning_that_verify_did_not_time_counts_as_unmeasured_and_is_named():
    check = runpy.run_path(str(SCRIPT), run_name="advice_check")["measurement_check"]
    rows = [row("gemm.alignment", "not-run", detail="the profile keeps no stride or padding"),
            row("precision.fp32-matmul", "gain"), row("fusion.memory-chain", "no-gain"),
            row("stop.at-roof", "no verifier", warning=False)]
    line = check("vit", rows)
    assert line.startswith("CHECK verify vit: 3 warning-level findings, 1 without a measurement: FAILED")
    assert "gemm.alignment [gemm.alignment subject]: not-run (the profile keeps no stride or padding)" in line
    assert check("vit", rows[1:]) == "CHECK verify vit: 2 warning-level findings, 0 without a measurement: ok"
