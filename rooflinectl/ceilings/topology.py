"""What links this machine's GPUs: NVLink links up per GPU, PCIe generation and width, NVLink
peer-to-peer between pairs (NVML), and `nvidia-smi topo -m` as the driver prints it.

Never raises: what could not be read is left out and said in "missing". A link roof estimated
from these facts (no measurement yet) is `link_spec_roof`: active links x the per-link rate of
the NVLink generation, or the PCIe lanes' rate when no NVLink is up.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from typing import Any

from rooflinectl.ceilings.model import Roof
from rooflinectl.ceilings.specs import pcie_bytes_per_s

# Per-link bandwidth in one direction, GB/s (NVIDIA's NVLink generation figures: NVLink 2-4
# 25 GB/s per direction per link, NVLink 5 50 GB/s); nccl-tests' busbw is compared with it.
NVLINK_GBPS_PER_DIRECTION = {1: 20.0, 2: 25.0, 3: 25.0, 4: 25.0, 5: 50.0}
MAX_NVLINKS = 18
TOPO_TIMEOUT_S = 10.0


def _gpu_links(nvml: Any, handle: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    active, versions = 0, set()
    for link in range(getattr(nvml, "NVML_NVLINK_MAX_LINKS", MAX_NVLINKS)):
        try:
            if nvml.nvmlDeviceGetNvLinkState(handle, link) == 1:
                active += 1
                with contextlib.suppress(Exception):  # version not reported: the link still counts
                    versions.add(int(nvml.nvmlDeviceGetNvLinkVersion(handle, link)))
        except Exception:  # noqa: BLE001 - no such link, or NVLink not supported on this GPU
            continue
    out["nvlink_active"] = active
    out["nvlink_version"] = max(versions) if versions else None
    for key, query in (("pcie_gen", nvml.nvmlDeviceGetMaxPcieLinkGeneration),
                       ("pcie_width", nvml.nvmlDeviceGetMaxPcieLinkWidth)):
        try:
            out[key] = int(query(handle))
        except Exception:  # noqa: BLE001
            out[key] = None
    return out


def nvidia_smi_topology() -> str | None:
    """`nvidia-smi topo -m` as printed (the matrix of how each pair of GPUs connects), or None."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        done = subprocess.run([exe, "topo", "-m"], capture_output=True, text=True, timeout=TOPO_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def read_topology(nvml: Any = None, with_smi: bool = True) -> dict[str, Any]:
    """{"gpus": [{index, name, uuid, nvlink_active, nvlink_version, pcie_gen, pcie_width}],
    "p2p_nvlink": [[i, j, ok], ...], "nvidia_smi_topo": text, "missing": [...]} (NVML numbering)."""
    topo: dict[str, Any] = {"gpus": [], "p2p_nvlink": [], "missing": []}
    try:
        if nvml is None:
            import pynvml as nvml
        nvml.nvmlInit()
        count = int(nvml.nvmlDeviceGetCount())
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    except Exception as exc:  # noqa: BLE001 - ImportError, no driver...
        topo["missing"].append(f"NVML unavailable ({type(exc).__name__})")
        handles = []
    for i, handle in enumerate(handles):
        entry: dict[str, Any] = {"index": i}
        for key, query in (("name", nvml.nvmlDeviceGetName), ("uuid", nvml.nvmlDeviceGetUUID)):
            try:
                value = query(handle)
                entry[key] = value.decode() if isinstance(value, bytes) else value
            except Exception:  # noqa: BLE001
                entry[key] = None
        entry.update(_gpu_links(nvml, handle))
        topo["gpus"].append(entry)
    caps = getattr(nvml, "NVML_P2P_CAPS_INDEX_NVLINK", None) if handles else None
    for i in range(len(handles)):
        for j in range(i + 1, len(handles)):
            if caps is None:
                break
            try:
                ok = nvml.nvmlDeviceGetP2PStatus(handles[i], handles[j], caps) == getattr(nvml, "NVML_P2P_STATUS_OK", 0)
            except Exception:  # noqa: BLE001
                continue
            topo["p2p_nvlink"].append([i, j, bool(ok)])
    if handles and with_smi:
        text = nvidia_smi_topology()
        if text:
            topo["nvidia_smi_topo"] = text
        else:
            topo["missing"].append("`nvidia-smi topo -m` gave nothing")
    return topo


def link_spec_roof(topology: dict[str, Any], uuid: str | None = None) -> Roof | None:
    """The link's bandwidth in one direction from the GPU's facts (the one with this uuid, else
    the first): NVLink links up x the generation's per-link rate, else PCIe lanes x rate. None
    with fewer than two GPUs (nothing to link) or nothing known."""
    gpus = topology.get("gpus") or []
    if len(gpus) < 2:
        return None
    gpu = next((g for g in gpus if uuid and g.get("uuid") == uuid), gpus[0])
    links, version = int(gpu.get("nvlink_active") or 0), gpu.get("nvlink_version")
    if links > 0:
        rate = NVLINK_GBPS_PER_DIRECTION.get(int(version or 4), 25.0)
        return Roof(links * rate * 1e9, "spec",
                    f"{links} NVLink{' ' + str(version) if version else ''} links x {rate:.0f} GB/s per direction; "
                    "NCCL's all-reduce bus bandwidth reaches part of it: `rooflinectl ceilings --measure` measures it")
    gen, width = gpu.get("pcie_gen"), gpu.get("pcie_width")
    rate = pcie_bytes_per_s(int(gen), int(width)) if gen and width else None
    if rate:
        return Roof(rate, "spec", f"no NVLink up: PCIe Gen{gen} x{width}, {rate / 1e9:.1f} GB/s per direction")
    return None
