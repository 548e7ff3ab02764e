"""Each advice rule on constructed tables: a case that triggers it and one that must not."""

from __future__ import annotations

import math

import pytest
from advice_tables import cpu_ceilings, elementwise, gemm, h200_ceilings, profile, row, triton_row

from rooflinectl.analysis.advice import RULES, Thresholds, advise

ACT = (8192, 3072)


def findings(data, rule_id: str, **thresholds):
    report = advise(data, Thresholds(**thresholds))
    return [f for f in report.findings if f.rule_id == rule_id]


def gelu_chain_rows(calls: int = 10):
    return [
        elementwise("aten::add", ACT, extra="[3072]", calls=calls, module="mlp"),
        elementwise("aten::gelu", ACT, calls=calls, module="mlp"),
        elementwise("aten::add", ACT, inputs=2, calls=calls, module="mlp"),
    ]


def test_fusion_chain_estimates_the_intermediate_traffic():
    rows = [*gelu_chain_rows(), gemm("aten::mm", 8192, 3072, 3072, calls=10)]
    data = profile(rows, sequence=[3, 0, 1, 2] * 10)
    (f,) = findings(data, "fusion.memory-chain")
    # 3 kernels at one bandwidth: the external traffic is x, bias, residual in and one out.
    chain_bytes = f.numbers["chain_bytes"]
    n = ACT[0] * ACT[1]
    assert f.numbers["external_bytes"] == pytest.approx((3 * n + 3072) * 2, rel=1e-6)
    expected = 10 * f.numbers["chain_time_s"] * (1 - f.numbers["external_bytes"] / chain_bytes)
    assert f.est_saving_s == pytest.approx(expected, rel=1e-6)
    assert f.rows == (0, 1, 2) and "torch.compile" in f.recommendation
    assert f.severity == "warning"


def test_fusion_not_across_a_gemm_or_other_sizes():
    rows = [*gelu_chain_rows(), gemm("aten::mm", 8192, 3072, 3072, calls=10)]
    data = profile(rows, sequence=[3, 0, 3, 1, 3, 2] * 10)
    assert findings(data, "fusion.memory-chain") == []
    small = [elementwise("aten::add", (64, 64), calls=10), elementwise("aten::gelu", ACT, calls=10)]
    assert findings(profile(small, sequence=[0, 1] * 10), "fusion.memory-chain") == []


def test_fusion_without_launch_order_groups_by_module_and_size():
    assert len(findings(profile(gelu_chain_rows()), "fusion.memory-chain")) == 1


def tiny_rows():
    return [elementwise("aten::mul", (64, 64), calls=1000, efficiency=0.01),
            gemm("aten::addmm", 8, 64, 64, calls=1000, efficiency=0.01)]


def test_launch_overhead_from_idle_time():
    data = profile(tiny_rows(), summary={"device_idle_s": 0.02, "window_s": 0.025, "launches": 2000,
                                         "short_launches": 2000})
    (f,) = findings(data, "launch.overhead")
    assert f.est_saving_s == pytest.approx(0.02 - 2000 * 1e-6)
    assert f.idle_saving_s == pytest.approx(f.est_saving_s)
    assert "reduce-overhead" in f.recommendation


def test_launch_overhead_uses_idle_expected_without_the_profiler():
    data = profile(tiny_rows(), summary={"device_idle_s": 0.02, "device_idle_unprofiled_s": 0.008,
                                         "window_s": 0.025, "launches": 2000, "short_launches": 2000})
    (f,) = findings(data, "launch.overhead")
    assert f.est_saving_s == pytest.approx(0.008 - 2000 * 1e-6)  # idle without the profiler - 1 us/launch


def test_launch_overhead_says_when_the_idle_time_without_the_profiler_was_measured():
    summary = {"device_idle_s": 0.02, "device_idle_unprofiled_s": 0.008, "window_s": 0.025, "launches": 2000,
               "short_launches": 2000}
    (measured,) = findings(profile(tiny_rows(), summary={**summary, "device_idle_unprofiled_source": "measured"}),
                           "launch.overhead")
    (calibrated,) = findings(profile(tiny_rows(), summary={**summary, "device_idle_unprofiled_source": "calibration"}),
                             "launch.overhead")
    assert ("the steps timed without the profiler (un-profiled step - kernel busy per step) leave about 8.00 ms idle"
            in measured.evidence)
    assert ("without the profiler's own cost per event, about 8.00 ms idle (an estimate: no step was timed without "
            "the profiler)") in calibrated.evidence
    # an estimate says so with its range and ranks as a zero-saving note, below any measured saving
    assert "Saving: an estimate, between 0 and 6.00 ms" in calibrated.evidence and "estimate" not in measured.evidence
    assert measured.est_saving_s == pytest.approx(0.006) and calibrated.est_saving_s == 0.0
    assert calibrated.numbers["estimated_saving_s"] == pytest.approx(measured.est_saving_s)


def test_launch_overhead_holds_measured_idle_against_the_unprofiled_window():
    # profiled: 20 ms idle of a 25 ms window; measured without the profiler: 0.5 ms idle beside
    # 5 ms of kernels (9% of the 5.5 ms un-profiled window, under the 10% bar): no finding
    summary = {"device_idle_s": 0.02, "device_idle_unprofiled_s": 0.0005, "window_s": 0.025, "launches": 200,
               "short_launches": 200, "device_busy_s": 0.005, "device_idle_unprofiled_source": "measured"}
    assert findings(profile(tiny_rows(), summary=summary), "launch.overhead") == []
    (f,) = findings(profile(tiny_rows(), summary={**summary, "device_idle_unprofiled_s": 0.002}), "launch.overhead")
    assert f.est_saving_s == pytest.approx(0.002 - 200 * 1e-6)


def test_launch_overhead_silent_when_gaps_are_graph_sized():
    # 2000 launches with 0.3 us between them: already what a CUDA-graph replay leaves
    data = profile(tiny_rows(), summary={"device_idle_s": 0.0006, "window_s": 0.004, "launches": 2000,
                                         "short_launches": 2000})
    assert findings(data, "launch.overhead") == []


def test_launch_overhead_silent_when_busy_or_on_cpu():
    busy = profile(tiny_rows(), summary={"device_idle_s": 0.001, "window_s": 0.025})
    assert findings(busy, "launch.overhead") == []
    cpu = profile(tiny_rows(), ceilings=cpu_ceilings(), summary={"device_idle_s": 0.02, "window_s": 0.025})
    assert findings(cpu, "launch.overhead") == []


def test_fp32_gemm_on_cuda_cores_gets_tf32():
    data = profile([gemm("aten::mm", 4096, 4096, 4096, dtype="float32", efficiency=0.75)])
    (f,) = findings(data, "precision.fp32-matmul")
    time_s = float(data.kernels.at[0, "time_s"])
    new_s = 2 * 4096**3 / 494e12 / 0.75
    assert f.est_saving_s == pytest.approx(time_s - new_s, rel=1e-6)
    assert 'set_float32_matmul_precision("high")' in f.recommendation


def test_tf32_gemm_and_cpu_are_left_alone():
    tf32 = profile([gemm("aten::mm", 4096, 4096, 4096, dtype="float32", precision="tf32", unit="tensor")])
    assert findings(tf32, "precision.fp32-matmul") == []
    cpu = profile([gemm("aten::mm", 4096, 4096, 4096, dtype="float32")], ceilings=cpu_ceilings())
    assert findings(cpu, "precision.fp32-matmul") == []


def test_bf16_storage_for_memory_bound_fp32():
    rows = [elementwise("aten::gelu", ACT, dtype="float32", calls=5), gemm("aten::mm", 8192, 3072, 3072, calls=5)]
    (f,) = findings(profile(rows), "precision.bf16-storage")
    assert f.est_saving_s == pytest.approx(0.5 * float(profile(rows).kernels.at[0, "time_s"]))
    rows[0] = elementwise("aten::gelu", ACT, dtype="bfloat16", calls=5)
    assert findings(profile(rows), "precision.bf16-storage") == []


def decode_gemm(m: int):
    k = n = 4096
    return row("aten::addmm", "gemm", f"[{n}] x [{m}, {k}] x [{k}, {n}]", flops=2.0 * m * k * n * 100,
               bytes_=float((k * n + m * k + m * n + n) * 2 * 100), efficiency=0.8, calls=100)


def test_decode_gemv_gets_weight_only_quantisation():
    (f,) = findings(profile([decode_gemm(1)]), "quant.weight-only")
    time_s = float(profile([decode_gemm(1)]).kernels.at[0, "time_s"])
    assert 0.45 * time_s < f.est_saving_s < 0.5 * time_s  # weights are ~all the bytes, 2 -> 1 byte
    assert "Int8WeightOnly" in f.recommendation


def test_prefill_gemm_is_not_quantised():
    assert findings(profile([decode_gemm(512)]), "quant.weight-only") == []


def naive_attention_rows(b: int = 8, h: int = 12, s: int = 1024, d: int = 64):
    scores = f"[{b}, {h}, {s}, {s}]"
    return [
        gemm("aten::bmm", s, d, s, batch=b * h, module="attn"),
        elementwise("aten::div", (b, h, s, s), extra="[]", module="attn"),
        elementwise("aten::_softmax", (b, h, s, s), family="softmax", module="attn"),
        row("aten::bmm", "gemm", f"[{b * h}, {s}, {s}] x [{b * h}, {s}, {d}]", flops=2.0 * b * h * s * s * d,
            bytes_=float(b * h * (s * s + 2 * s * d) * 2), efficiency=0.5, module="attn"),
    ], scores


def test_naive_attention_gets_sdpa():
    rows, _ = naive_attention_rows()
    data = profile(rows, sequence=[0, 1, 2, 3])
    (f,) = findings(data, "attention.materialised-scores")
    assert set(f.rows) == {0, 1, 2, 3}
    score_bytes = 8 * 12 * 1024 * 1024 * 2
    side = float(data.kernels.loc[[1, 2], "time_s"].sum())
    gemms = float(data.kernels.loc[[0, 3], "time_s"].sum())
    assert f.est_saving_s == pytest.approx(side + min(2 * score_bytes / 4.8e12, gemms), rel=1e-6)
    assert "scaled_dot_product_attention" in f.recommendation


def test_classifier_softmax_is_not_attention():
    rows = [gemm("aten::mm", 64, 768, 50257), elementwise("aten::_softmax", (64, 50257), family="softmax")]
    assert findings(profile(rows), "attention.materialised-scores") == []


def kv_rows(lengths):
    rows = []
    for n in lengths:
        rows.append(row("aten::_scaled_dot_product_flash_attention", "attention",
                        f"[1, 12, 1, 64] x [1, 12, {n}, 64] x [1, 12, {n}, 64]", flops=4.0 * 12 * n * 64,
                        bytes_=float(2 * 12 * n * 64 * 2), time_s=8e-6, module="attn"))
        rows.append(row("aten::cat", "copy", f"[1, 12, {n - 1}, 64] x [1, 12, 1, 64]", flops=0.0,
                        bytes_=float(2 * 12 * n * 64 * 2), time_s=5e-6, module="attn"))
    return rows


def test_growing_kv_cache():
    (f,) = findings(profile(kv_rows(range(100, 108))), "attention.kv-cache-growth")
    assert f.est_saving_s == pytest.approx(8 * 5e-6)
    assert "paged" in f.recommendation.lower()
    assert findings(profile(kv_rows([100])), "attention.kv-cache-growth") == []


def custom_gemm_rows(custom_eff: float, family: str | None = "gemm"):
    """cuBLAS and a Triton kernel (declaring flops16, and its family as kernels/cost.py does) on
    the same fp16 4096^3 GEMM."""
    extra = {"family": family} if family else None
    return [gemm("aten::mm", 4096, 4096, 4096, dtype="float16", efficiency=0.75),
            triton_row("matmul_kernel", flops=2.0 * 4096**3, bytes_=3.0 * 4096**2 * 2, efficiency=custom_eff,
                       declared_extra=extra)]


def test_a_triton_kernel_that_names_no_family_is_not_compared_with_the_library():
    # how the math runs (flops16 on tensor cores) does not say the kernel is a GEMM
    assert findings(profile(custom_gemm_rows(0.2, family=None)), "library.fallback") == []
    assert profile(custom_gemm_rows(0.2, family=None)).kernels.at[1, "op_family"] == "other"


def test_slow_custom_gemm_falls_back_to_the_library():
    (f,) = findings(profile(custom_gemm_rows(0.2)), "library.fallback")
    t = float(profile(custom_gemm_rows(0.2)).kernels.at[1, "time_s"])
    assert f.rows == (1,)
    assert f.est_saving_s == pytest.approx(t * (1 - 0.2 / 0.75), rel=1e-6)
    assert findings(profile(custom_gemm_rows(0.6)), "library.fallback") == []


def test_stop_here_at_the_roof():
    data = profile(custom_gemm_rows(0.9))
    stops = findings(data, "roof.stop-here")
    assert [f.rows for f in stops] == [(1,)]  # the library row is at 0.75, under 0.8
    assert stops[0].est_saving_s == 0 and "at most 10.0%" in stops[0].recommendation
    assert findings(profile(custom_gemm_rows(0.5)), "roof.stop-here") == []


def test_custom_memory_kernel_far_from_roof():
    copy_bytes = 2.0 * math.prod(ACT) * 2  # read and write bf16
    rows = [triton_row("my_copy_kernel", flops=0.0, bytes_=copy_bytes, efficiency=0.2)]
    (f,) = findings(profile(rows), "custom.memory-far-from-roof")
    data = profile(rows)
    assert f.est_saving_s == pytest.approx(data.kernels.at[0, "time_s"] - data.kernels.at[0, "roof_time_s"] / 0.8)
    assert "oalesce" in f.recommendation
    rows = [triton_row("my_copy_kernel", flops=0.0, bytes_=copy_bytes, efficiency=0.7)]
    assert findings(profile(rows), "custom.memory-far-from-roof") == []


def test_custom_compute_kernel_far_from_roof():
    def rows(eff):
        return [triton_row("fused_mlp_kernel", flops=1e12, bytes_=1e8, efficiency=eff)]
    (f,) = findings(profile(rows(0.2)), "custom.compute-far-from-roof")
    assert "autotune" in f.recommendation
    assert findings(profile(rows(0.7)), "custom.compute-far-from-roof") == []


def moe_rows(ms, module="moe.experts"):
    return [gemm("aten::mm", m, 1024, 4096, efficiency=0.1, calls=4, module=module) for m in ms]


def test_moe_expert_gemms_get_grouped_gemm():
    (f,) = findings(profile(moe_rows([13, 57, 101, 33])), "moe.grouped-gemm")
    data = profile(moe_rows([13, 57, 101, 33]))
    expected = data.kernels["time_s"].sum() - data.kernels["roof_time_s"].sum() / 0.7
    assert f.est_saving_s == pytest.approx(expected, rel=1e-6)
    assert findings(profile(moe_rows([64], module="mlp")), "moe.grouped-gemm") == []


def test_small_grid():
    def rows(blocks):
        return [gemm("aten::mm", 128, 65536, 128, efficiency=0.1, blocks=blocks, calls=2)]
    (f,) = findings(profile(rows(16)), "grid.small")
    data = profile(rows(16))
    assert f.est_saving_s == pytest.approx(min(data.kernels.at[0, "time_s"] * (1 - 16 / 132),
                                               data.kernels.at[0, "headroom_s"]))
    assert "split-K" in f.recommendation
    assert findings(profile(rows(528)), "grid.small") == []


def test_small_grid_leaves_persistent_library_gemms_alone():
    # cuBLAS's nvjet GEMMs on the H200 launch 128 (or 112) blocks on 132 SMs and loop over tiles
    def rows(blocks, origin):
        return [gemm("aten::mm", 128, 65536, 128, efficiency=0.1, blocks=blocks, calls=2, origin=origin,
                     kernel="nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT")]
    assert findings(profile(rows(128, "library")), "grid.small") == []
    assert len(findings(profile(rows(128, "triton")), "grid.small")) == 1  # a custom kernel's grid is its own
    assert len(findings(profile(rows(16, "library")), "grid.small")) == 1  # far fewer blocks than SMs: still said


def test_above_roof_is_flagged_and_ignored_by_other_rules():
    rows = [triton_row("matmul_kernel", flops=2.0 * 4096**3, bytes_=3.0 * 4096**2 * 2, efficiency=1.5)]
    report = advise(profile(rows))
    assert [f.rule_id for f in report.findings] == ["data.above-roof"]
    assert "suspect count: FLOPs, from triton" in report.findings[0].evidence  # compute-bound: the FLOPs


def test_above_roof_names_the_bytes_of_a_memory_bound_row_and_the_gate_leaves_it_out():
    """A memory-bound row at 150% of its (DRAM) roof: the bytes are suspect; with a 50%-efficient
    row beside it, the efficiency gate sees 50%, not the mean with the impossible row."""
    rows = [gelu_chain_rows()[0] | {"kernel": "fast_gelu"}, *gelu_chain_rows()[1:2]]
    data = profile(rows)
    data.kernels.loc[0, "time_s"] = data.kernels.loc[0, "roof_time_s"] / 1.5
    data.kernels.loc[1, "time_s"] = data.kernels.loc[1, "roof_time_s"] / 0.5
    data.kernels["efficiency"] = data.kernels["roof_time_s"] / data.kernels["time_s"]
    data.kernels["above_roof"] = data.kernels["efficiency"] > 1.05
    data.kernels["suspect"] = ["bytes", ""]
    above = findings(data, "data.above-roof")
    assert len(above) == 1 and "suspect count: bytes" in above[0].evidence, above
    gate = findings(data, "gate.min-efficiency", min_efficiency=0.6)
    assert len(gate) == 1 and gate[0].numbers["efficiency"] == pytest.approx(0.5)


@pytest.mark.parametrize("gate, key, value", [
    ("gate.min-efficiency", "min_efficiency", 0.9),
    ("gate.unknown-share", "max_unknown_share", 0.1),
    ("gate.launch-overhead", "max_launch_overhead", 0.5),
])
def test_gates_fire_only_when_set_and_crossed(gate, key, value):
    rows = [*gelu_chain_rows(), gemm("aten::mm", 512, 512, 512, time_s=1e-3, cost_source="none")]
    data = profile(rows, summary={"device_idle_s": 0.02, "window_s": 0.025})
    assert findings(data, gate) == []
    (f,) = findings(data, gate, **{key: value})
    assert f.severity == "error"
    relaxed = {"min_efficiency": 0.01, "max_unknown_share": 0.99, "max_launch_overhead": 0.99}[key]
    assert findings(data, gate, **{key: relaxed}) == []


def test_every_rule_is_documented_with_its_severity():
    """docs/advice.md is what users read: each rule's section states the severity the registry
    gives it (an independent copy: a rule whose severity changes must change its documentation)."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "advice.md").read_text(encoding="utf-8")
    found = re.findall(r"^### ([\w.-]+)\n\n\*\*[^\n]*\*\* \((?:severity (\w+)|(CI gate))", text, re.M)
    documented = {rule_id: severity or "error" for rule_id, severity, _ in found}  # a CI gate fails as an error
    assert len(RULES) >= 15
    wrong = {rule_id: (entry.severity, documented.get(rule_id)) for rule_id, entry in RULES.items()
             if documented.get(rule_id) != entry.severity}
    assert not wrong, f"registry severity vs docs/advice.md: {wrong}"


def test_stop_here_at_the_measured_achievable_peak():
    """The roof is the theoretical peak no library reaches (issue 29): a GEMM at 75% of it but
    at 95% of the achievable peak this GPU measured is at the library's best, so stop here."""
    from dataclasses import replace

    from rooflinectl.ceilings.model import Roof

    achievable = {"tensor.fp16": Roof(0.75 / 0.95 * 989e12, "measured")}
    ceilings = replace(h200_ceilings(), achievable_flops_per_s=achievable)
    data = profile(custom_gemm_rows(0.6), ceilings=ceilings)
    assert data.kernels.at[0, "efficiency"] == pytest.approx(0.75)
    assert data.kernels.at[0, "efficiency_achievable"] == pytest.approx(0.95)
    stops = findings(data, "roof.stop-here")
    assert [f.rows for f in stops] == [(0,)]  # cuBLAS; the custom kernel (0.6 of the roof, 76% of achievable) is not
    assert "95.0% of the achievable peak" in stops[0].evidence
    # without a measured achievable peak, 75% of the roof is not "at the roof"
    assert findings(profile(custom_gemm_rows(0.6)), "roof.stop-here") == []


def test_two_expert_gemms_without_a_module_are_named_by_their_weights():
    """A loop of expert GEMMs outside any nn.Module (a plain MoE function): the up and the down
    projection are two findings, and their subjects say which (they read as duplicates when both
    were named `aten::mm`)."""
    up = moe_rows([144, 304, 752, 1824], module="")
    down = [gemm("aten::mm", m, 4096, 1024, efficiency=0.1, calls=4) for m in (144, 304, 752, 1824)]
    subjects = sorted(f.subject for f in findings(profile(up + down), "moe.grouped-gemm"))
    assert subjects == ["aten::mm on [1024, 4096] weights", "aten::mm on [4096, 1024] weights"]


def test_expert_gemms_in_one_module_are_two_patterns_and_a_grouped_gemm_is_left_alone():
    """Mixtral's experts on the H200 (transformers 5): the up and the down projection in one
    `experts` module read as one duplicated finding when named by the module alone; and a GEMM
    that is already `aten::_grouped_mm` gets no advice to become one."""
    up = moe_rows([144, 304, 752, 1824], module="model.layers.0.mlp.experts")
    down = [gemm("aten::mm", m, 4096, 1024, efficiency=0.1, calls=4, module="model.layers.0.mlp.experts")
            for m in (144, 304, 752, 1824)]
    subjects = sorted(f.subject for f in findings(profile(up + down), "moe.grouped-gemm"))
    assert len(set(subjects)) == 2 and all(s.startswith("model.layers.0.mlp.experts ") for s in subjects)
    grouped = [gemm("aten::_grouped_mm", m, 1024, 4096, efficiency=0.1, calls=4, module="mlp.experts")
               for m in (144, 304, 752)]
    assert findings(profile(grouped), "moe.grouped-gemm") == []
