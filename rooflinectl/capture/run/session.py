"""One profiling session: torch.profiler (CPU + CUDA activities), module scopes, Triton and
Inductor costs (capture/run/inductor.py).

The session knows nothing of rooflines: it yields raw events (capture/read/raw.py) and the facts
about the run that later stages need (device, math modes, library versions).
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import platform
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from rooflinectl.atomic import atomic_file
from rooflinectl.capture.progress import mark, report
from rooflinectl.capture.read.chrome_json import (
    TraceFormatError,
    decode_json,
    encode_json,
    gc_paused,
    open_trace,
)
from rooflinectl.capture.read.identities import add_tensor_accesses, add_tensor_info
from rooflinectl.capture.read.raw import RawTrace
from rooflinectl.capture.read.trace import read_chrome_trace
from rooflinectl.capture.run.distributed import own_device_index, rank_info
from rooflinectl.capture.run.inductor import compiled_cpp_kernels, inductor_annotations
from rooflinectl.capture.run.modules import module_scopes
from rooflinectl.capture.run.nvml_sampler import nvml_sampling
from rooflinectl.capture.run.process import THIS_PROCESS
from rooflinectl.capture.run.quiet import kineto_noise_filtered
from rooflinectl.capture.run.region import CALIBRATION_NAME
from rooflinectl.capture.run.source_lines import source_lines
from rooflinectl.capture.run.step_limit import StepLimit, resolve_steps
from rooflinectl.capture.run.tensor_accesses import tensor_accesses
from rooflinectl.capture.run.tensor_identities import _tensor_info, _tensor_info_at
from rooflinectl.capture.run.triton_hook import triton_launches
from rooflinectl.capture.run.user_profiler import cooperating, deliver_exports
from rooflinectl.capture.run.workers import counting_workers
from rooflinectl.errors import UsageError
from rooflinectl.schema import CAPTURE_FORMAT_NAME


@dataclass
class Capture:
    """What a session produced; `trace` is None until the session has ended."""

    device_kind: str
    trace: RawTrace | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    chrome_trace_path: str | None = None  # torch.profiler's own trace, kept when the session was asked to


def run_metadata(device_kind: str) -> dict[str, Any]:
    """Versions and math modes: the roof a GEMM is held to follows the mode it ran in."""
    meta: dict[str, Any] = {
        "device_kind": device_kind,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "platform": platform.platform(),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "allow_tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "allow_tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
        "cpu_threads": torch.get_num_threads(),
    }
    triton = sys.modules.get("triton")
    meta["triton"] = getattr(triton, "__version__", None)
    if device_kind == "cuda":
        meta["device_name"] = torch.cuda.get_device_name()
        meta["device_index"] = torch.cuda.current_device()
    return meta


def export_trace_file(prof: torch.profiler.profile) -> str:
    """torch.profiler's own Chrome trace of the session, in a temp file (the caller removes it)."""
    fd, path = tempfile.mkstemp(prefix="rooflinectl-trace-", suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
    except BaseException:
        os.unlink(path)
        raise
    return path


def read_trace(prof: torch.profiler.profile, path: str) -> RawTrace:
    """The stopped profiler's events as a RawTrace: its exported trace (at path) streamed back in
    chunks, and the tensor identities that the cost model needs read from its event tree; then
    the profiler's events are freed (let_go_of_events). When worker processes read the trace, the
    identities are read, and the events freed, before the workers' records are joined: the
    process's peak is then the profiler's own (its events), not that plus the trace's records."""
    report(f"reading the trace ({os.path.getsize(path) / 1e6:,.0f} MB)")
    found: list[dict[tuple[str, int], dict[str, Any]]] = []

    accessed: list[dict[tuple[str, int], tuple[list[int], list[int]]]] = []

    def identities_first(times_us: list[int]) -> None:
        report(f"reading tensor identities ({len(times_us):,} ops that may share an input)")
        with gc_paused():
            found.append(_tensor_info_at(prof, times_us))
            accessed.append(tensor_accesses(prof))
        let_go_of_events(prof)

    trace = read_chrome_trace(path, before_join=identities_first)
    if not found:  # read in this process: the identities from the trace's ops
        report(f"reading tensor identities ({len(trace.ops):,} ops)")
        with gc_paused():
            found.append(_tensor_info(prof, trace))
            accessed.append(tensor_accesses(prof))
        let_go_of_events(prof)
    with gc_paused():
        add_tensor_info(trace, found[0])
        add_tensor_accesses(trace, accessed[0])
    return trace


def let_go_of_events(prof: torch.profiler.profile) -> None:
    """Free the stopped profiler's events once its trace is read. torch's profile object sits in a
    reference cycle (its action_map holds its own bound methods), so only a cyclic collection frees
    it, and reading and analysing a long trace keep the collector paused: its events (over 1 GB
    at 200,000 launches on the H200) stayed through attribution, with our tables on top. Then the C
    library is asked to give the freed pages back (glibc's malloc_trim; elsewhere nothing)."""
    inner = getattr(prof, "profiler", None)
    if inner is not None and getattr(inner, "kineto_results", None) is not None:
        report("freeing the profiler's events")  # seconds on a long run (torch's own destructor)
        inner.kineto_results = None
    try:
        trim = ctypes.CDLL(None).malloc_trim  # the process's own C library
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)


def export_trace(prof: torch.profiler.profile) -> dict[str, Any]:
    """The profiler's Chrome trace as a dict (whole in memory: for small runs and tests)."""
    path = export_trace_file(prof)
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    finally:
        os.unlink(path)


CALIBRATION_OPS = 200


def _tiny_op_loop_s(device: str) -> float:
    """Seconds for CALIBRATION_OPS one-element in-place adds: one recorded op and one kernel each."""
    import time

    t = torch.zeros(1, device=device)
    if t.is_cuda:
        torch.cuda.synchronize(t.device)
    start = time.perf_counter()
    for _ in range(CALIBRATION_OPS):
        t.add_(1)
    if t.is_cuda:
        torch.cuda.synchronize(t.device)
    return time.perf_counter() - start


def _probe_device(device_kind: str) -> str:
    """Where the overhead probe runs: this process's own GPU (capture/run/distributed.own_device_index)."""
    return f"cuda:{own_device_index()}" if device_kind == "cuda" else device_kind


def _overhead_per_op_s(profiled_s: float, plain_s: float) -> float:
    """What the profiler adds to each recorded op on the host: the same tiny-op loop timed with
    and without it. Advice uses it to tell idle time the profiler caused from idle time the run
    has without it."""
    return max(profiled_s - plain_s, 0.0) / CALIBRATION_OPS


TEARDOWN_ENV = "TEARDOWN_CUPTI"


def _cupti_torn_down_after_stop() -> Callable[[], None]:
    """Ask kineto to detach CUPTI when the session stops (TEARDOWN_CUPTI=1), unless the user chose;
    returns what puts the environment back.

    Without it, a stopped torch.profiler (torch 2.11, CUDA 13) leaves CUPTI attached and every later
    launch pays for it: on the H200 machine a tiny launch took 8.9-10.7 us after a session against
    7.0 before it, 6.7-7.0 with the teardown; eager ResNet-50 steps after `--profile-steps` took 31.3 ms
    against 19.9 ms with it (scripts/investigations/post_profiler_*.py). torch itself turns teardown off for CUDA
    graphs on CUDA < 12.6 (CUPTI crashed on re-init there), so older CUDA is left alone.

    Only a `--profile-steps` session that is the first of its process asks for it (the CLI's: one
    session per process, the script running on after the stop). In a process that profiled
    before, kineto's teardown can take the new session's kernels (kineto#1554 is a race of that
    kind): in the GPU tests' process, a session with it on after others recorded no kernel."""
    version = tuple(int(p) for p in (torch.version.cuda or "0.0").split(".")[:2] if p.isdigit())
    if os.environ.get(TEARDOWN_ENV) is not None or version < (12, 6):
        return lambda: None
    os.environ[TEARDOWN_ENV] = "1"
    return lambda: os.environ.pop(TEARDOWN_ENV, None)


def _refuse_nested() -> None:
    if torch.autograd.profiler._is_profiler_enabled:
        raise UsageError("A torch.profiler session is already running here; rooflinectl cannot start its own "
                         "inside it (stop that profiler, or profile without it).")


class ProfilingSession:
    """One torch.profiler session over a block of the user's program, in three steps:
    start() installs our hooks (module scopes, the Triton launch hook, Inductor's annotations,
    the step limit) and starts the profiler; stop() ends the recording (once: at the step
    limit's iteration boundary, or at the end), and at the step limit also takes off what costs
    host time in the un-profiled steps (module scopes, the Triton hook, the NVML thread);
    finish() reads the trace into the capture (once: at the end, or first by a hard exit).
    close() then removes every hook. As a context manager: start on entry, finish and close on
    exit (also on error). All its state is its own; the one process-wide fact it reads (whether
    it is the process's first session) is in capture/run/process.py.

    keep_trace_file: leave torch.profiler's own trace in capture.chrome_trace_path (a temp file
    removed at exit, for --save-trace); otherwise it is removed as soon as it has been read.
    runs_on: the program runs on after the block, timed (CUPTI is detached as at a step limit).
    """

    def __init__(self, device_kind: str, profile_steps: int | str | None = None, runs_on: bool = False,
                 keep_trace_file: bool = False) -> None:
        self.device_kind = device_kind
        self.runs_on = runs_on  # the program runs on, timed, after the session (function mode's plain calls)
        self.keep_trace_file = keep_trace_file
        mark("session: run metadata")
        self.capture = Capture(device_kind=device_kind, metadata=run_metadata(device_kind))
        self.ranks = rank_info()
        if self.ranks is not None:  # a rank of a distributed job: its place, in the metadata of its own profile
            self.capture.metadata.update(self.ranks)
        activities = [torch.profiler.ProfilerActivity.CPU]
        if device_kind == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        # One start/stop cycle, and no acc_events: with it, stop() builds the profiler's Python
        # FunctionEvent list, which costs more time and memory than the whole run on a long trace;
        # we read the exported trace instead.
        # profile_memory: the allocations inside each op name its outputs, and inputs get their
        # allocation's address (capture/run/tensor_accesses.py: which kernel wrote what a kernel reads)
        self.prof = torch.profiler.profile(activities=activities, record_shapes=True, profile_memory=True)
        self.triton_sink: list[dict[str, Any]] = []
        self.hooks = ExitStack()  # everything installed, removed by close()
        self.recording = ExitStack()  # the Triton launch hook: removed when a step limit stops the profiler
        self.nvml = ExitStack()  # the NVML sampler: closed after the trace is set, to align the samples
        self.scopes_off: Callable[[], None] = lambda: None
        self.nvml_off: Callable[[], None] = lambda: None
        self.sources_off: Callable[[], None] = lambda: None
        self.started = self.stopped = self.finished = False
        steps, rule = resolve_steps(profile_steps)
        self.limit = StepLimit(steps, device_kind, self.stop_at_limit, rule) if steps is not None else None

    def __enter__(self) -> ProfilingSession:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.finish()
        finally:
            self.close()

    @property
    def running(self) -> bool:
        """Started and not finished yet: what a hard exit would save by finishing it."""
        return self.started and not self.finished

    def start(self) -> Capture:
        """Install the hooks, calibrate, start the profiler; on failure nothing stays installed.
        Refused in one sentence inside a torch.profiler session that is already running."""
        _refuse_nested()
        try:
            self._install()
        except BaseException:
            self.close()
            raise
        self.started = True
        return self.capture

    def _install(self) -> None:
        stack, capture, limit = self.hooks, self.capture, self.limit
        probe = _probe_device(self.device_kind)
        first = THIS_PROCESS.session_started()
        if (limit is not None or self.runs_on) and self.device_kind == "cuda" and first:
            stack.callback(_cupti_torn_down_after_stop())  # the run goes on after the stop: detach CUPTI
        mark("session: hooks")
        self.scopes_off = stack.enter_context(module_scopes(limit.at_top_level_call if limit is not None else None))
        stack.enter_context(self.recording)
        stack.enter_context(inductor_annotations())
        self.recording.enter_context(triton_launches(self.triton_sink))
        if limit is not None:
            limit.install()
            stack.callback(limit.remove)
        mark("session: calibration without the profiler")
        _tiny_op_loop_s(probe)  # warm the loop once (allocator, kernel load)
        plain_s = _tiny_op_loop_s(probe)
        mark("session: profiler start")
        with kineto_noise_filtered(), warnings.catch_warnings():
            # torch >= 2.11 warns that events are not kept across cycles: we run one cycle, on purpose
            warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle")
            self.prof.start()
        stack.callback(self.stop)  # a failure below must not leave the profiler running
        stack.enter_context(cooperating())  # the script's own torch.profiler starts no second session
        stack.enter_context(counting_workers(capture.metadata))  # threads and children are not followed: count them
        mark("session: calibration under the profiler")
        with torch.profiler.record_function(CALIBRATION_NAME):  # excluded from what is counted
            profiled_s = _tiny_op_loop_s(probe)
        capture.metadata["profiler_overhead_per_op_s"] = _overhead_per_op_s(profiled_s, plain_s)
        mark("session: NVML sampler")
        stack.enter_context(self.nvml)
        self.nvml_off = self.nvml.enter_context(nvml_sampling(capture))
        mark("session: source lines")  # last: nothing of ours above runs under the mode
        self.sources_off = stack.enter_context(source_lines(capture.metadata))
        mark("session: the program runs")

    def stop(self, program_runs_on: bool = False) -> None:
        """End the profiler's recording (once): GPU work finished first, so the trace has all of it.
        program_runs_on (the step limit's stop): only timing listeners hear of it. A phase report
        starts the CLI's live status line, whose refresh thread would then run through every
        un-profiled step, drawing "stopping the profiler" over the program's own output."""
        if self.stopped:
            return
        self.stopped = True
        (mark if program_runs_on else report)("stopping the profiler")
        if self.device_kind == "cuda":
            with suppress(RuntimeError):  # a failed script may leave the device in an error state
                torch.cuda.synchronize()
        with kineto_noise_filtered():
            self.prof.stop()

    def stop_at_limit(self) -> None:
        """The step limit's stop: the recording, and what would cost the un-profiled steps."""
        self.stop(program_runs_on=True)
        self.sources_off()  # the source-line mode first: torch calls of the un-profiled steps pay nothing
        self.scopes_off()  # module scopes and the Triton hook cost the un-profiled steps too
        self.recording.close()
        self.nvml_off()  # the sampler's thread takes the GIL a few hundred times a second

    def finish(self) -> None:
        """Read the trace into the capture (once; the temp trace file goes unless kept)."""
        capture, limit = self.capture, self.limit
        if not self.running:
            return
        self.finished = True
        if limit is not None:
            if limit.stopped and self.device_kind == "cuda":
                with suppress(RuntimeError):  # the timed steps' events must have completed
                    torch.cuda.synchronize()
            capture.metadata["profile_steps"] = limit.metadata()
        self.stop()
        report("exporting the trace")
        path = export_trace_file(self.prof)
        kept = False
        try:  # the temp trace (often gigabytes) goes on every path, errors included, unless kept
            trace = read_trace(self.prof, path)
            trace.triton_launches = self.triton_sink
            trace.compiled_kernels = compiled_cpp_kernels()
            capture.trace = trace
            capture.metadata.update(run_metadata(self.device_kind))  # math modes as they were at the end
            if self.ranks is not None and trace.distributed:
                capture.metadata["distributed"] = trace.distributed  # backend, process groups
            capture.metadata["user_profiler_exports"] = deliver_exports(path)
            if self.keep_trace_file:
                capture.chrome_trace_path = path
                atexit.register(lambda: Path(path).unlink(missing_ok=True))
                kept = True
        finally:
            if not kept:
                Path(path).unlink(missing_ok=True)
        self.nvml.close()

    def close(self) -> None:
        """Remove every hook (after finish). The capture never refers to the session: that cycle
        would keep the profiler's events, millions of objects on a long run, until exit."""
        self.hooks.close()


@contextmanager
def profiling(device_kind: str, profile_steps: int | str | None = None, runs_on: bool = False,
              keep_trace_file: bool = False) -> Iterator[Capture]:
    """Profile the block (a ProfilingSession); on exit (also on error) the capture holds what ran.

    profile_steps: stop recording after that many iterations ("auto": step_limit.AUTO_STEPS;
    None or "all": never) and time the later ones without the profiler (capture/run/step_limit.py);
    the trace is still read when the block ends. At the stop, module scopes, the Triton hook and
    the NVML sampling thread go: the un-profiled steps keep only the iteration marker.
    runs_on, keep_trace_file: see ProfilingSession.
    """
    with ProfilingSession(device_kind, profile_steps, runs_on, keep_trace_file) as session:
        yield session.capture


def save_capture(capture: Capture, path: str) -> None:
    """Raw events plus run metadata, gzipped JSON: what tests/data holds (regenerable), and what
    attribution can be re-run on without the GPU."""
    import gzip

    assert capture.trace is not None
    payload = {"format": CAPTURE_FORMAT_NAME, "device_kind": capture.device_kind, "metadata": capture.metadata,
               "trace": capture.trace.to_json()}
    with atomic_file(path, binary=True) as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6) as handle:
        handle.write(encode_json(payload))


def load_capture(path: str) -> Capture:
    """A capture file back (data only: JSON, never code)."""
    with open_trace(path) as handle, gc_paused():
        try:
            payload = decode_json(handle.read())
        except (ValueError, OSError) as exc:  # not JSON, or not gzip
            raise TraceFormatError(f"{path} is not a capture file ({exc}).") from None
    return Capture(device_kind=payload["device_kind"], trace=RawTrace.from_json(payload["trace"]),
                   metadata=payload.get("metadata", {}))
