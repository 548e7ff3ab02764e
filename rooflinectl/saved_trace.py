"""The profile of a saved torch.profiler trace, without running anything: what `rooflinectl
analyse` writes (cli/analyse_cmd.py, which also reads capture files) and what
`rooflinectl.trace_handler` gives inside a user's own torch.profiler schedule (api.py): one path.

The roofs are the spec roofs of the GPU the trace names (its deviceProperties): that GPU need not
be on this machine, so nothing is measured. On CPU they are this machine's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rooflinectl.errors import UsageError

if TYPE_CHECKING:  # torch and pandas load while the reading workers decode a large trace
    from rooflinectl.capture.run.session import Capture
    from rooflinectl.ceilings.model import Ceilings
    from rooflinectl.profile_model import ProfileData


def capture_of_chrome_trace(path: Path, meanwhile: Callable[[], None] | None = None) -> Capture:
    """A Chrome trace file read into a capture; what is wrong with it is one sentence (UsageError).
    meanwhile: see capture.read.trace.read_chrome_trace."""
    from rooflinectl.capture.read.chrome_json import TraceFormatError
    from rooflinectl.capture.read.trace import read_chrome_trace

    try:
        trace = read_chrome_trace(path, meanwhile=meanwhile)
    except TraceFormatError as exc:
        raise UsageError(str(exc)) from None
    except (KeyError, TypeError, AttributeError) as exc:  # JSON, but not laid out as a trace
        raise UsageError(f"{path} is not a Chrome trace or a capture file rooflinectl can read "
                         f"(missing or odd field: {exc}).") from None
    if not trace.ops and not trace.kernels:
        raise UsageError(f"{path} holds no CPU ops and no kernels: nothing to analyse "
                         "(is it torch.profiler's trace, with its traceEvents?).")
    from rooflinectl.capture.run.session import Capture

    # the device's name comes with the roofs (pipeline.build_profile takes the ceilings' name)
    device_kind = "cuda" if trace.kernels else "cpu"
    return Capture(device_kind=device_kind, trace=trace, metadata={"device_kind": device_kind, "source_file": str(path)})


def profile_of_capture(capture: Capture, *, command: list[str], iterations_mode: str = "auto",
                       before_analysis: Callable[[], None] | None = None) -> tuple[ProfileData, str]:
    """The profile of a saved capture and where its roofs come from."""
    from rooflinectl.pipeline import build_profile

    ceilings, roofs_from = trace_ceilings(capture)
    if before_analysis is not None:
        before_analysis()
    data, _ = build_profile(capture, command=command, completed=True, exit_code=None, ceilings=ceilings,
                            iterations_mode=iterations_mode)
    return data, roofs_from


def recorded_gpu(capture: Capture) -> dict[str, Any]:
    """The deviceProperties entry of the GPU most kernels ran on (the first entry if none says);
    a capture file from before device properties were kept gives its device's name alone."""
    trace = capture.trace
    properties = trace.device_properties if trace else []
    if not properties:
        name = capture.metadata.get("device_name")
        return {"name": name} if name else {}
    devices = Counter(k.device for k in (trace.kernels[:10_000] if trace else []))
    busiest = devices.most_common(1)[0][0] if devices else None
    return next((p for p in properties if p.get("id") == busiest), properties[0])


def trace_ceilings(capture: Capture) -> tuple[Ceilings, str]:
    """The roofs, and where they come from. GPU: the spec roofs of the GPU the trace names. CPU:
    this machine's roofs (a trace says nothing of the CPU it ran on), and the line printed says so."""
    from rooflinectl.ceilings import current_ceilings, recorded_gpu_ceilings

    if capture.device_kind != "cuda":
        ceilings = current_ceilings("cpu")
        return ceilings, f"this machine's CPU ({ceilings.device_name}): the trace does not say which CPU it ran on"
    ceilings = recorded_gpu_ceilings(recorded_gpu(capture))
    if ceilings.details.get("spec_entry") is None:  # not in the spec table: nothing of it is known for sure
        return ceilings, (f"estimates: the {ceilings.device_name} the trace names is not in the spec table "
                          "(not measured here; `rooflinectl ceilings` lists the GPUs known)")
    return ceilings, f"the spec roofs of the {ceilings.device_name} the trace names (not measured here)"
