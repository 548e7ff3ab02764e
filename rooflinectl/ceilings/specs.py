"""The spec table: dense peaks and DRAM bandwidth of NVIDIA GPUs from Volta to Blackwell.

One data module, two kinds of facts:
- RATES: dense FLOP per clock per SM for each architecture family (FMA counts 2). A peak that
  follows the SM clock is SMs x rate x clock, with the clock NVML reports (the way Nsight
  Compute builds its rooflines). GeForce parts run FP16/BF16/TF32/FP8 tensor math with FP32
  accumulate (what cuBLAS uses for torch) at half the rate of their datacenter siblings.
- SPECS: one entry per product: a regex on the device name, the rate family, SM count and the
  boost clock the datasheet assumes, DRAM bandwidth, and the datasheet's dense peaks with the
  URL they come from. Datasheet figures "with sparsity" are halved to dense ones here.
Datasheets quote tensor peaks at a lower clock than the maximum (H100 SXM: bf16 989 TFLOP/s is
132 SMs x 4096 x 1.83 GHz, while NVML reports 1980 MHz), so the clock-scaled figure can sit up
to ~15% above the datasheet one; tests/test_ceilings_specs.py checks every entry for that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

TERA = 1e12
GB_PER_S = 1e9

PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")

_SM80_TENSOR = {"tensor.tf32": 1024, "tensor.bf16": 2048, "tensor.fp16": 2048, "tensor.int8": 4096}
_SM90_TENSOR = {
    "tensor.tf32": 2048, "tensor.bf16": 4096, "tensor.fp16": 4096,
    "tensor.fp8": 8192, "tensor.int8": 8192,
}
_GA10X_SIMT = {"simt.fp64": 4, "simt.fp32": 256}  # 128 FP32 lanes and 2 FP64 units per SM

# Dense FLOP (or integer OP) per clock per SM. Sources: Volta, Ampere (GA100, GA102), Ada,
# Hopper and Blackwell architecture whitepapers; the same figures are tabulated in torch's
# private torch.cuda._device_limits and in Nsight Compute's `*.peak_sustained` metrics.
RATES: dict[str, dict[str, int]] = {
    "sm70": {"simt.fp64": 64, "simt.fp32": 128, "tensor.fp16": 1024},
    "sm80": {"simt.fp64": 64, "tensor.fp64": 128, "simt.fp32": 128, **_SM80_TENSOR},
    "sm86": {**_GA10X_SIMT, "tensor.tf32": 512, "tensor.bf16": 1024, "tensor.fp16": 1024,
             "tensor.int8": 2048},
    "sm86-geforce": {**_GA10X_SIMT, "tensor.tf32": 256, "tensor.bf16": 512, "tensor.fp16": 512,
                     "tensor.int8": 2048},
    "sm89": {**_GA10X_SIMT, "tensor.tf32": 512, "tensor.bf16": 1024, "tensor.fp16": 1024,
             "tensor.fp8": 2048, "tensor.int8": 2048},
    "sm89-geforce": {**_GA10X_SIMT, "tensor.tf32": 256, "tensor.bf16": 512, "tensor.fp16": 512,
                     "tensor.fp8": 1024, "tensor.int8": 2048},
    "sm90": {"simt.fp64": 128, "tensor.fp64": 256, "simt.fp32": 256, **_SM90_TENSOR},
    "sm100": {"simt.fp64": 128, "tensor.fp64": 128, "simt.fp32": 256, "tensor.tf32": 4096,
              "tensor.bf16": 8192, "tensor.fp16": 8192, "tensor.fp8": 16384,
              "tensor.int8": 16384, "tensor.fp4": 32768},
    "sm120-geforce": {**_GA10X_SIMT, "tensor.tf32": 256, "tensor.bf16": 512, "tensor.fp16": 512,
                      "tensor.fp8": 1024, "tensor.int8": 2048, "tensor.fp4": 4096},
}

# Rate family assumed for a GPU the table does not know, by compute capability. The datacenter
# rates are the higher ones: an unknown GPU gets a roof that is too high rather than too low
# (a kernel above its roof reads as a bug in the numbers).
RATES_BY_CC: dict[tuple[int, int], str] = {
    (7, 0): "sm70", (7, 2): "sm70", (8, 0): "sm80", (8, 6): "sm86", (8, 7): "sm86",
    (8, 9): "sm89", (9, 0): "sm90", (10, 0): "sm100", (12, 0): "sm120-geforce",
}

# FP32 CUDA cores per SM, to turn NVML's core count into SMs when torch cannot say.
FP32_CORES_PER_SM_BY_MAJOR: dict[int, int] = {7: 64, 8: 64, 9: 128, 10: 128, 12: 128}

_URL_V100 = "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
_URL_A100 = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
_URL_A10 = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/a10-datasheet.pdf"
_URL_A10G = "https://aws.amazon.com/ec2/instance-types/g5/"
_URL_L4 = "https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet"
_URL_L40S = "https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413"
_URL_H100 = "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
_URL_H200 = "https://www.nvidia.com/en-us/data-center/h200/"
_URL_GH200 = "https://resources.nvidia.com/en-us-grace-cpu/grace-hopper-superchip"
_URL_B200 = "https://www.nvidia.com/en-us/data-center/hgx/"
_URL_GA102 = "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf"
_URL_ADA = "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"
_URL_RTX_BLACKWELL = "https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf"


@dataclass(frozen=True)
class GpuSpec:
    """One product. Peaks in FLOP/s (dense), bandwidth in bytes/s, clock in MHz."""

    name: str
    pattern: str  # regex searched in the normalised device name (see normalise_name)
    rates: str  # key of RATES
    sms: int
    boost_mhz: float  # the clock the datasheet's CUDA-core peaks assume
    dram_bytes_per_s: float
    datasheet_flops_per_s: dict[str, float] = field(default_factory=dict)
    source: str = ""
    note: str = ""
    host_link_bytes_per_s: float | None = None  # per direction, where it is not PCIe (NVLink-C2C)

    def clock_scaled_flops_per_s(self, key: str, sms: int, sm_clock_hz: float) -> float | None:
        """SMs x FLOP/clock/SM x clock, or None when this architecture lacks that path."""
        return clock_scaled_flops_per_s(self.rates, key, sms, sm_clock_hz)


def clock_scaled_flops_per_s(rates: str, key: str, sms: int, sm_clock_hz: float) -> float | None:
    """The peak of one compute path: SMs x its FLOP/clock/SM in RATES[rates] x the SM clock; None
    when that architecture lacks the path. The one formula: build.py's spec roofs use it too."""
    rate = RATES.get(rates, {}).get(key)
    return None if rate is None else sms * rate * sm_clock_hz


def _tf(**peaks_tflops: float) -> dict[str, float]:
    """Datasheet peaks given in TFLOP/s, keyed "tensor_bf16" -> "tensor.bf16", in FLOP/s."""
    return {k.replace("_", ".", 1): v * TERA for k, v in peaks_tflops.items()}


_HOPPER_SXM = _tf(simt_fp64=34, tensor_fp64=67, simt_fp32=67, tensor_tf32=494.5,
                  tensor_bf16=989.5, tensor_fp16=989.5, tensor_fp8=1979, tensor_int8=1979)
_HOPPER_NVL = _tf(simt_fp64=30, tensor_fp64=60, simt_fp32=60, tensor_tf32=417.5,
                  tensor_bf16=835, tensor_fp16=835, tensor_fp8=1670, tensor_int8=1670)
_A100 = _tf(simt_fp64=9.7, tensor_fp64=19.5, simt_fp32=19.5, tensor_tf32=156, tensor_bf16=312,
            tensor_fp16=312, tensor_int8=624)

# Order matters: the first pattern that matches wins, so the specific ones come first.
SPECS: tuple[GpuSpec, ...] = (
    GpuSpec("GH200 144GB HBM3e", r"gh200.*144g", "sm90", 132, 1980, 4900 * GB_PER_S,
            _HOPPER_SXM, _URL_GH200, host_link_bytes_per_s=450 * GB_PER_S),
    GpuSpec("GH200 96GB HBM3", r"gh200", "sm90", 132, 1980, 4000 * GB_PER_S, _HOPPER_SXM,
            _URL_GH200, "the 480GB in the name is the Grace LPDDR5X; the GPU has 96 GB HBM3",
            host_link_bytes_per_s=450 * GB_PER_S),
    GpuSpec("H200 NVL", r"h200.*nvl", "sm90", 132, 1785, 4800 * GB_PER_S, _HOPPER_NVL, _URL_H200),
    GpuSpec("H200 SXM", r"h200", "sm90", 132, 1980, 4800 * GB_PER_S, _HOPPER_SXM, _URL_H200),
    GpuSpec("H100 NVL", r"h100.*nvl", "sm90", 132, 1785, 3900 * GB_PER_S, _HOPPER_NVL, _URL_H100),
    GpuSpec("H100 PCIe", r"h100.*pcie", "sm90", 114, 1755, 2000 * GB_PER_S,
            _tf(simt_fp64=26, tensor_fp64=51, simt_fp32=51, tensor_tf32=378, tensor_bf16=756.5,
                tensor_fp16=756.5, tensor_fp8=1513, tensor_int8=1513), _URL_H100),
    GpuSpec("H100 SXM", r"h100", "sm90", 132, 1980, 3350 * GB_PER_S, _HOPPER_SXM, _URL_H100),
    GpuSpec("B200", r"(?<![a-z])b200", "sm100", 148, 1965, 7700 * GB_PER_S,
            _tf(simt_fp64=37, tensor_fp64=37, simt_fp32=75, tensor_tf32=1100, tensor_bf16=2250,
                tensor_fp16=2250, tensor_fp8=4500, tensor_int8=4500, tensor_fp4=9000),
            _URL_B200, "HGX B200 per-GPU figures (1000 W)"),
    GpuSpec("A100 PCIe 80GB", r"a100.*(80gb.*pcie|pcie.*80gb)", "sm80", 108, 1410,
            1935 * GB_PER_S, _A100, _URL_A100),
    GpuSpec("A100 PCIe 40GB", r"a100.*pcie", "sm80", 108, 1410, 1555 * GB_PER_S, _A100, _URL_A100),
    GpuSpec("A100 SXM4 80GB", r"a100.*80gb", "sm80", 108, 1410, 2039 * GB_PER_S, _A100, _URL_A100),
    GpuSpec("A100 SXM4 40GB", r"a100", "sm80", 108, 1410, 1555 * GB_PER_S, _A100, _URL_A100),
    GpuSpec("A10G", r"\ba10g\b", "sm86", 80, 1710, 600 * GB_PER_S, {}, _URL_A10G,
            "NVIDIA publishes no A10G datasheet: peaks are GA102 datacenter rates x SMs x clock"),
    GpuSpec("A10", r"\ba10\b", "sm86", 72, 1695, 600 * GB_PER_S,
            _tf(simt_fp32=31.2, tensor_tf32=62.5, tensor_bf16=125, tensor_fp16=125,
                tensor_int8=250), _URL_A10),
    GpuSpec("L40S", r"\bl40s\b", "sm89", 142, 2520, 864 * GB_PER_S,
            _tf(simt_fp32=91.6, tensor_tf32=183, tensor_bf16=362.05, tensor_fp16=362.05,
                tensor_fp8=733, tensor_int8=733), _URL_L40S),
    GpuSpec("L4", r"\bl4\b", "sm89", 58, 2040, 300 * GB_PER_S,
            _tf(simt_fp32=30.3, tensor_tf32=60, tensor_bf16=121, tensor_fp16=121,
                tensor_fp8=242.5, tensor_int8=242.5), _URL_L4),
    GpuSpec("V100 PCIe", r"v100.*pcie", "sm70", 80, 1380, 900 * GB_PER_S,
            _tf(simt_fp64=7, simt_fp32=14, tensor_fp16=112), _URL_V100),
    GpuSpec("V100 SXM2", r"v100", "sm70", 80, 1530, 900 * GB_PER_S,
            _tf(simt_fp64=7.8, simt_fp32=15.7, tensor_fp16=125), _URL_V100),
    GpuSpec("GeForce RTX 5090", r"rtx 5090", "sm120-geforce", 170, 2407, 1792 * GB_PER_S,
            _tf(simt_fp32=104.8, tensor_tf32=104.8, tensor_bf16=209.5, tensor_fp16=209.5,
                tensor_fp8=419, tensor_int8=838, tensor_fp4=1676), _URL_RTX_BLACKWELL,
            "tensor figures with FP32 accumulate"),
    GpuSpec("GeForce RTX 4090", r"rtx 4090", "sm89-geforce", 128, 2520, 1008 * GB_PER_S,
            _tf(simt_fp64=1.29, simt_fp32=82.6, tensor_tf32=82.6, tensor_bf16=165.2,
                tensor_fp16=165.2, tensor_fp8=330.3, tensor_int8=660.6), _URL_ADA,
            "tensor figures with FP32 accumulate"),
    GpuSpec("GeForce RTX 3090", r"rtx 3090(?! ti)", "sm86-geforce", 82, 1695, 936 * GB_PER_S,
            _tf(simt_fp64=0.556, simt_fp32=35.6, tensor_tf32=35.6, tensor_bf16=71,
                tensor_fp16=71, tensor_int8=284), _URL_GA102, "tensor figures with FP32 accumulate"),
)


# PCIe: transfer rate per lane (GT/s) and line-code efficiency, per generation (PCI-SIG specs;
# Gen6 uses FLIT mode, 242 of 256 bytes carry data). A link moves this much per direction;
# DMA copies reach about 80-90% of it (packet headers), so a measured roof replaces it.
PCIE_GEN: dict[int, tuple[float, float]] = {1: (2.5, 8 / 10), 2: (5.0, 8 / 10), 3: (8.0, 128 / 130),
                                            4: (16.0, 128 / 130), 5: (32.0, 128 / 130), 6: (64.0, 242 / 256)}
PCIE_ASSUMED = (4, 16)  # when neither NVML nor the spec table can say


def pcie_bytes_per_s(gen: int, width: int) -> float | None:
    """Per-direction bandwidth of a PCIe link: GT/s x lanes x line-code efficiency / 8 bits."""
    if gen not in PCIE_GEN or width <= 0:
        return None
    rate_gt, efficiency = PCIE_GEN[gen]
    return rate_gt * 1e9 * width * efficiency / 8


def normalise_name(device_name: str) -> str:
    """Lower case, single spaces, vendor words dropped: "NVIDIA H100 80GB HBM3" -> "h100 80gb hbm3"."""
    name = re.sub(r"[\s_]+", " ", device_name.strip().lower())
    return re.sub(r"^(nvidia |tesla )+", "", name)


def match_spec(device_name: str) -> GpuSpec | None:
    """The spec entry for a device name as CUDA or NVML reports it, or None when unknown."""
    name = normalise_name(device_name)
    for spec in SPECS:
        if re.search(spec.pattern, name):
            return spec
    return None


def rates_for(compute_capability: tuple[int, int] | None) -> str | None:
    """Rate family for a compute capability, for GPUs the table does not name."""
    if compute_capability is None:
        return None
    return RATES_BY_CC.get(tuple(compute_capability))  # type: ignore[arg-type]
