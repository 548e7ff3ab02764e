"""What we read of torch.profiler's Chrome trace: the event categories, the args we keep, and
the declarative spec that maps each record field to its key in an event.

We read the Chrome-trace JSON that torch.profiler exports (stable across versions, the same
file HTA and TensorBoard read). The spec is data (HTA's habit): a field added here, and to its
record in raw.py, is carried through to attribution; builder.py applies it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

from rooflinectl.capture.read.chrome_json import decode_json
from rooflinectl.capture.read.raw import RawKernel, RawOp
from rooflinectl.capture.read.typed_events import make_decoder, raw_json

KERNEL_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
OP_CATEGORIES = ("cpu_op", "user_annotation")
# nn.Module scopes (capture/run/modules.py) are named with this prefix. They are recorded as
# `user_annotation` by torch.profiler.record_function, and as `cpu_op` by the cheaper
# `_RecordFunctionFast` that capture uses now: the parser makes both `user_annotation`, so that
# old and new traces read the same and a scope is never taken for an op that does work.
MODULE_PREFIX = "rooflinectl.module:"
# The user's source line of a torch call (capture/run/source_lines.py): recorded the same way, read the same way.
SOURCE_PREFIX = "rooflinectl.src:"
SCOPE_PREFIXES = (MODULE_PREFIX, SOURCE_PREFIX)
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
# What Inductor puts in the args of the op named after each kernel it launches (benchmark_kernel on).
INDUCTOR_ARGS = ("kernel_num_gb", "kernel_flop", "kernel_name", "kernel_file", "kernel_backend", "kernel_kwargs")
# Runtime and driver calls that make the host wait for the device (cudaMemcpy without Async is
# synchronous; .item(), .cpu() and print(tensor) show up as cudaStreamSynchronize).
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
              "cudaMemcpy2D", "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize", "cuMemcpyDtoH_v2",
              "cuMemcpyHtoD_v2")
# What torch.distributed puts in the args of `record_param_comms`, the op that launches a collective.
COLLECTIVE_ARGS = ("Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype",
                   "Process Group Name", "Process Group Ranks", "In split size", "Out split size")
KEPT_OP_ARGS = INDUCTOR_ARGS + COLLECTIVE_ARGS
KEPT_OP_ARG_SET = frozenset(KEPT_OP_ARGS)  # most ops have none of them: one set test says so

# The declarative spec: which events become which records, and each record field's source in an
# event ("args.X" is key X of the event's args) with its default when the key is missing. Add a
# field here (and to the record's dataclass) to carry one more raw key through to attribution.
Source = tuple[str, str, Any]  # (field, key in the event, default)

OP_FIELDS: tuple[Source, ...] = (
    ("external_id", "args.External id", -1),
    ("name", "name", ""),
    ("category", "cat", ""),
    ("tid", "tid", 0),
    ("ts_ns", "ts", 0.0),  # microseconds until the trace is finished, then ns from its start
    ("dur_ns", "dur", 0.0),
    # the four input lists are shared by all ops recorded with the same inputs (see _intern)
    ("input_dims", "args.Input Dims", []),
    ("input_types", "args.Input type", []),
    ("input_strides", "args.Input Strides", []),
    ("concrete_inputs", "args.Concrete Inputs", []),
)
KERNEL_FIELDS: tuple[Source, ...] = (
    ("name", "name", ""),
    ("category", "cat", ""),
    ("ts_ns", "ts", 0.0),
    ("dur_ns", "dur", 0.0),
    ("external_id", "args.External id", -1),
    ("correlation", "args.correlation", -1),
    ("device", "args.device", 0),
    ("stream", "args.stream", 0),
    ("grid", "args.grid", None),
    ("block", "args.block", None),
    ("bytes", "args.bytes", None),
    ("shared_memory", "args.shared memory", None),
    ("registers_per_thread", "args.registers per thread", None),
)
GRAPH_LAUNCH_CALLS = ("cudaGraphLaunch", "cuGraphLaunch")

# Records are built positionally from the spec (fast): its fields must lead the dataclass, in order;
# an op's record ends with the fields the spec does not read (the builder fills them itself).
_OP_TAIL = ("input_storages", "list_dtypes", "args", "sequence_nr", "tensor_reads", "tensor_writes")
for _spec, _record, _tail in ((OP_FIELDS, RawOp, _OP_TAIL), (KERNEL_FIELDS, RawKernel, ())):
    if [name for name, _, _ in _spec] + list(_tail) != [f.name for f in fields(_record)]:
        raise TypeError(f"the spec of {_record.__name__} must list its first fields in order")
# Where the builder fixes a spec value in place (positions in the spec, so a new field moves none).
OP_AT = {name: i for i, (name, _, _) in enumerate(OP_FIELDS)}
KERNEL_AT = {name: i for i, (name, _, _) in enumerate(KERNEL_FIELDS)}
INPUT_LISTS = ("input_dims", "input_types", "input_strides", "concrete_inputs")  # shared as one
if [f for f, _, _ in OP_FIELDS[OP_AT["input_dims"]:OP_AT["input_dims"] + 4]] != list(INPUT_LISTS):
    raise TypeError("the spec of RawOp must list the four input lists together (they are shared as one)")


# The keys of an event itself that the builder reads (a typed event keeps these alone).
EVENT_KEYS = ("ph", "cat", "ts", "name", "tid", "dur", "args")
# An op's input lists: a typed event (capture/read/typed_events.py) keeps them as raw JSON text, which
# the builder decodes once per distinct text.
RAW_ARGS = ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")
if any(not key.startswith("args.") and key not in EVENT_KEYS for _, key, _ in OP_FIELDS + KERNEL_FIELDS):
    raise TypeError("every key of an event that the spec reads must be in EVENT_KEYS")
ARG_KEYS = tuple(dict.fromkeys(
    [key.removeprefix("args.") for _, key, _ in OP_FIELDS + KERNEL_FIELDS if key.startswith("args.")]
    + ["External id", "correlation", "Sequence number", *KEPT_OP_ARGS]))


def getter(fields: tuple[Source, ...], raw_inputs: bool = False) -> Callable[[dict[str, Any], dict[str, Any]], list[Any]]:
    """A function (event, args) -> the fields' raw values in order: the spec compiled once, into
    one list display of .get calls (as dataclasses compiles its __init__): a loop over the spec
    per event cost a third of reading a trace. Keys and defaults are passed in, never written
    into the source. raw_inputs: for typed events, whose RAW_ARGS are raw JSON text (and so are
    their defaults here)."""
    names: dict[str, Any] = {}
    items = []
    for i, (_, key, default) in enumerate(fields):
        arg = key.removeprefix("args.")
        names[f"key{i}"] = arg
        names[f"default{i}"] = raw_json(default) if raw_inputs and arg in RAW_ARGS else default
        items.append(f"{'args' if key.startswith('args.') else 'event'}.get(key{i}, default{i})")
    source = f"def get(event, args):\n    return [{', '.join(items)}]\n"
    exec(compile(source, f"<getter of {len(fields)} fields>", "exec"), names)  # noqa: S102 - our own spec
    return names["get"]


# A JSON array of trace events decoded for TraceBuilder.add: TypedEvents when msgspec is installed
# and the events fit (capture/read/typed_events.py), else a list of dicts. ValueError if not JSON.
decode_events: Callable[[bytes], list[Any]] = make_decoder(
    EVENT_KEYS, [k for k in ARG_KEYS if k not in RAW_ARGS], RAW_ARGS, decode_json) or decode_json

