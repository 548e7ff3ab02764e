"""Advice: rules that turn an analysed profile into ranked findings with a fix and a saving.

Importing this package registers every rule (each rules_* module registers its own).
"""

from __future__ import annotations

from rooflinectl.analysis.advice import (  # noqa: F401 - imported for their registrations
    rules_clocks,
    rules_counters,
    rules_distributed,
    rules_fusion,
    rules_gates,
    rules_gemm,
    rules_host,
    rules_kernels,
    rules_launch,
    rules_precision,
    rules_small_gemm,
    rules_waves,
)
from rooflinectl.analysis.advice.engine import AdviceReport, advise, exit_code, with_verifications
from rooflinectl.analysis.advice.registry import (
    RULES,
    SEVERITIES,
    Finding,
    Thresholds,
    Verification,
    rule,
)

__all__ = ["RULES", "SEVERITIES", "AdviceReport", "Finding", "Thresholds", "Verification", "advise", "exit_code",
           "rule", "with_verifications"]
