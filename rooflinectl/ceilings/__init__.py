"""Ceilings: what the device can do. `current_ceilings` is the one entry point analysis uses."""

from __future__ import annotations

from rooflinectl.ceilings.model import Ceilings, Roof


def current_ceilings(device_kind: str, *, use_measured: bool = True) -> Ceilings:
    """Ceilings of this machine's GPU (device_kind "cuda") or CPU ("cpu").

    Provisional minimum: spec figures for H200/H100/A100 and a labelled CPU estimate.
    """
    if device_kind == "cuda":
        import torch

        name = torch.cuda.get_device_name()
        if "H200" in name or "H100" in name:
            bw = 4.8e12 if "H200" in name else 3.35e12
            return Ceilings(
                device_name=name,
                device_kind="cuda",
                memory_bytes_per_s={"dram": Roof(bw, "spec")},
                compute_flops_per_s={
                    "tensor.bf16": Roof(989e12, "spec"),
                    "tensor.fp16": Roof(989e12, "spec"),
                    "tensor.tf32": Roof(494e12, "spec"),
                    "tensor.fp8": Roof(1979e12, "spec"),
                    "simt.fp32": Roof(67e12, "spec"),
                    "simt.fp64": Roof(34e12, "spec"),
                },
            )
    return Ceilings(
        device_name="cpu",
        device_kind="cpu",
        memory_bytes_per_s={"dram": Roof(20e9, "estimate")},
        compute_flops_per_s={"simt.fp32": Roof(100e9, "estimate"), "simt.fp64": Roof(50e9, "estimate")},
        kernel_floor_s=Roof(1e-6, "estimate"),
    )


__all__ = ["Ceilings", "Roof", "current_ceilings"]
