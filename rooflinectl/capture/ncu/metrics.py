"""The metrics read from Nsight Compute and what each is worth in FLOPs and bytes.

Names checked on the H200 with ncu 2025.3 (docs: NOTES-profiling "Nsight Compute"). FLOPs follow
ncu's own roofline sections: CUDA-core add and mul count 1, fma 2; half-precision instructions
are packed pairs (hadd, hmul x2, hfma x4); tensor-core `sm__ops_path_tensor_*` counters are
already operations (2 per multiply-accumulate). Bytes: DRAM read + write, L2 (lts__t_bytes) and
L1/TEX (l1tex__t_bytes) traffic.

DRAM writes: ncu flushes the caches before it replays a kernel, and what the kernel writes goes
into L2 (write-back) and reaches DRAM only when evicted. An output that fits in L2 (60 MB on an
H200) is still there when the kernel ends, so `dram__bytes_write` misses it: on a GPT-2 forward
it read 0.09 of what the SMs wrote into L2 over 236 launches, 0.00 for nearly every kernel but
the 260 MB logits GEMM (scripts/l2_writes_probe.py, 2026-11-30). The write-back happens later,
during some other kernel, so the kernel's DRAM writes are taken as the larger of ncu's DRAM
writes and the bytes its SMs stored into L2 (`lts__t_sectors_srcunit_tex_op_write`, 32-byte
sectors; atomics and reductions are other ops, not counted). Where that metric is not collected,
ncu's DRAM writes stand.

Where we differ from the analytic model: transcendental functions (exp, erf) run as FMA
polynomials on CUDA cores, so ncu counts several FLOPs where the model counts one; a comparison
or a move executes no float instruction, and both count zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DURATION = "gpu__time_duration.sum"  # ns

# metric -> (roof key of the FLOPs it counts, FLOPs per counted unit)
FLOP_METRICS: dict[str, tuple[str, float]] = {
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": ("simt.fp32", 1.0),
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": ("simt.fp32", 1.0),
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": ("simt.fp32", 2.0),
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum": ("simt.fp64", 1.0),
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum": ("simt.fp64", 1.0),
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum": ("simt.fp64", 2.0),
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum": ("simt.fp16", 2.0),
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum": ("simt.fp16", 2.0),
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum": ("simt.fp16", 4.0),
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum": ("tensor.bf16", 1.0),
    "sm__ops_path_tensor_src_fp16.sum": ("tensor.fp16", 1.0),
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum": ("tensor.tf32", 1.0),
    "sm__ops_path_tensor_src_fp8.sum": ("tensor.fp8", 1.0),
    "sm__ops_path_tensor_src_int8.sum": ("tensor.int8", 1.0),
    "sm__ops_path_tensor_src_fp64.sum": ("tensor.fp64", 1.0),  # not checked on sm_90: used only if listed
}
DRAM_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
L2_METRIC = "lts__t_bytes.sum"
L1_METRIC = "l1tex__t_bytes.sum"
L2_STORE_METRIC = "lts__t_sectors_srcunit_tex_op_write.sum"  # sectors the SMs stored into L2
SECTOR_BYTES = 32

# Requested only when `ncu --query-metrics` lists them on this GPU (the others were seen on sm_90).
OPTIONAL_METRICS = frozenset({"sm__ops_path_tensor_src_fp64.sum"})
ALL_METRICS: tuple[str, ...] = (DURATION, *FLOP_METRICS, *DRAM_METRICS, L2_METRIC, L1_METRIC, L2_STORE_METRIC)


def base_name(metric: str) -> str:
    """'dram__bytes_read.sum' -> 'dram__bytes_read' (what `ncu --query-metrics` lists)."""
    return metric.split(".", 1)[0]


# Metrics every GPU ncu supports (Volta on) has: a query result without them was misread.
SANITY_METRICS = ("gpu__time_duration", "dram__bytes_read", "lts__t_bytes",
                  "smsp__sass_thread_inst_executed_op_ffma_pred_on")


def metrics_to_request(available: set[str] | None) -> tuple[list[str], list[str]]:
    """(metrics to ask for, metrics left out because this GPU does not list them).

    available: base names from `ncu --query-metrics`, or None when the query failed (or lacks
    SANITY_METRICS, so was misread): then the names checked on sm_90 are requested and the
    unchecked optional ones left out.
    """
    if available is not None and not all(m in available for m in SANITY_METRICS):
        available = None
    wanted, missing = [], []
    for metric in ALL_METRICS:
        if available is None:
            (missing if metric in OPTIONAL_METRICS else wanted).append(metric)
        elif base_name(metric) in available:
            wanted.append(metric)
        else:
            missing.append(metric)
    return wanted, missing


@dataclass
class MeasuredLaunch:
    """One kernel launch as Nsight Compute measured it."""

    name: str  # the kernel name ncu printed (demangled, maybe simplified by ncu's renaming)
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    time_s: float  # duration under replay (serialised, caches flushed)
    flops_by_roof: dict[str, float] = field(default_factory=dict)  # "tensor.bf16" -> FLOPs
    dram_bytes: float = float("nan")  # read + written (the larger of ncu's DRAM writes and the L2 stores)
    l2_bytes: float = float("nan")
    l1_bytes: float = float("nan")
    dram_write_bytes: float = float("nan")  # as ncu counted them during the kernel
    l2_store_bytes: float = float("nan")  # what the SMs stored into L2 (nan: not collected)

    @property
    def flops(self) -> float:
        return float(sum(self.flops_by_roof.values()))

    @property
    def main_roof(self) -> str:
        """The roof key holding most of the FLOPs ('' when the kernel executed none)."""
        positive = {k: v for k, v in self.flops_by_roof.items() if v > 0}
        return max(positive, key=lambda k: (positive[k], k)) if positive else ""


def measured_launch(name: str, grid: tuple[int, int, int] | None, block: tuple[int, int, int] | None,
                    values: dict[str, float]) -> MeasuredLaunch:
    """Turn one launch's metric values (metric name -> number; absent = not collected) into FLOPs
    per roof and bytes per memory level."""
    flops: dict[str, float] = {}
    for metric, (roof, weight) in FLOP_METRICS.items():
        if metric in values:
            flops[roof] = flops.get(roof, 0.0) + weight * values[metric]
    read, write = (values.get(m, float("nan")) for m in DRAM_METRICS)
    stored = SECTOR_BYTES * values[L2_STORE_METRIC] if L2_STORE_METRIC in values else float("nan")
    written = max(write, stored) if stored == stored else write  # NaN: the L2 stores were not collected
    return MeasuredLaunch(
        name=name, grid=grid, block=block,
        time_s=values.get(DURATION, float("nan")) * 1e-9,
        flops_by_roof=flops,
        dram_bytes=float(read + written),  # NaN when either DRAM counter is missing
        l2_bytes=values.get(L2_METRIC, float("nan")),
        l1_bytes=values.get(L1_METRIC, float("nan")),
        dram_write_bytes=float(write),
        l2_store_bytes=float(stored),
    )
