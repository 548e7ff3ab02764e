"""What torch.compile's Inductor can tell about the kernels it generates, asked for without
changing what they compute.

- `inductor_annotations()`: while active, Inductor is asked to annotate its kernels for the
  profiler: `benchmark_kernel` (env TORCHINDUCTOR_BENCHMARK_KERNEL) puts each Triton kernel's
  estimated bytes and FLOPs (`kernel_num_gb`, `kernel_flop`) in the args of the op named after
  the kernel; `cpp.enable_kernel_profile` (env TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE) gives
  each generated C++ (CPU) kernel a profiler event of its own. Both change Inductor's cache key
  (a program compiled before gets compiled once more) and neither changes the kernels' math.
  With benchmark_kernel, Inductor prints one "Compiled module path: ..." line to stderr per
  compiled graph. We set the environment (read when Inductor's config is first imported) and,
  if the config is already imported, the config itself; both are restored on exit.
- `compiled_cpp_kernels()`: for C++ kernels Inductor estimates nothing, so we read the wrapper
  code it generated (the modules its PyCodeCache loaded, already on disk): for each kernel, the
  buffers of its first call with shape, dtype and role (`in`, `out`, `in_out` from the C++
  parameter names), and the profiler name of its event. Costs are computed later (costs/inductor.py).
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_SETTINGS = (  # (environment variable, config attribute path)
    ("TORCHINDUCTOR_BENCHMARK_KERNEL", ("benchmark_kernel",)),
    ("TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE", ("cpp", "enable_kernel_profile")),
)


def _config_owner(path: tuple[str, ...]) -> tuple[Any, str] | None:
    config = sys.modules.get("torch._inductor.config")
    if config is None:
        return None
    owner = config
    for part in path[:-1]:
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    return (owner, path[-1]) if hasattr(owner, path[-1]) else None


@contextmanager
def inductor_annotations() -> Iterator[None]:
    """Ask Inductor to annotate the kernels it compiles while the block runs (see the module doc)."""
    saved_env = {name: os.environ.get(name) for name, _ in _SETTINGS}
    saved_config: list[tuple[Any, str, Any]] = []
    for name, path in _SETTINGS:
        os.environ[name] = "1"
        found = _config_owner(path)
        if found is not None:
            owner, attribute = found
            saved_config.append((owner, attribute, getattr(owner, attribute)))
            setattr(owner, attribute, True)
    imported_before = "torch._inductor.config" in sys.modules
    try:
        yield
    finally:
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        for owner, attribute, value in saved_config:
            setattr(owner, attribute, value)
        if not imported_before:  # imported during the run with our environment: put back the defaults
            for name, path in _SETTINGS:
                found = _config_owner(path)
                if found is not None and saved_env[name] is None:
                    setattr(found[0], found[1], False)


_KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.cpp_pybinding\((\[[^\]]*\]), r'''$")
_SIGNATURE = re.compile(r'extern "C"[^(]*\(([^)]*)\)', re.S)
_RECORD = re.compile(r'RAIIAtenRecordFunctionHandle\s+\w+\("([^"]+)"')
# Lines of the wrapper that give a buffer's shape (group 1: name, group 2: shape), or an alias.
_SHAPED = (re.compile(r"^\s+(\w+) = empty_strided_\w+\((\([^)]*\)), "),
           re.compile(r"^\s+(\w+) = reinterpret_tensor\(\w+, (\([^)]*\)), "),
           re.compile(r"^\s+(\w+) = rand_strided\((\([^)]*\)), "),
           re.compile(r"^\s+assert_size_stride\((\w+), (\([^)]*\)), "))
_ALIAS = re.compile(r"^\s+(\w+) = (\w+); del \w+\s+# reuse")
# C++ element types of Inductor's kernel parameters -> torch dtype names.
_CPP_DTYPES = {"float": "float32", "double": "float64", "bfloat16": "bfloat16", "at::BFloat16": "bfloat16",
               "c10::BFloat16": "bfloat16", "half": "float16", "at::Half": "float16", "c10::Half": "float16",
               "int64_t": "int64", "int32_t": "int32", "int16_t": "int16", "int8_t": "int8", "uint8_t": "uint8",
               "bool": "bool"}
_CALL = re.compile(r"^\s+(\w+)\(([^()]*)\)$")


def _shape(text: str) -> list[int] | None:
    try:
        value = ast.literal_eval(text)  # literals only: symbolic sizes (s0) give None
    except (ValueError, SyntaxError):
        return None
    return [int(n) for n in value] if isinstance(value, tuple) and all(isinstance(n, int) for n in value) else None


def _roles(cpp_source: str, arg_count: int) -> list[str] | None:
    """`in`, `out` or `in_out` per parameter, from Inductor's parameter names (in_ptr0, out_ptr1,
    in_out_ptr0); `scalar` for the others (sizes, seeds)."""
    match = _SIGNATURE.search(cpp_source)
    if match is None:
        return None
    names = [p.strip().split()[-1].lstrip("*&") for p in match.group(1).split(",") if p.strip()]
    if len(names) != arg_count:
        return None
    return ["in_out" if n.startswith("in_out_ptr") else "in" if n.startswith("in_ptr")
            else "out" if n.startswith("out_ptr") else "scalar" for n in names]


def parse_wrapper(source: str) -> dict[str, dict[str, Any]]:
    """Profiler event name -> {"kernel", "buffers": [{"shape", "dtype", "role"}]} for each C++
    kernel of one generated wrapper module (its first call). A kernel whose call we cannot read
    (symbolic sizes, an expression as argument) gets buffers None: its cost stays unknown."""
    lines = source.splitlines()
    kernels: dict[str, dict[str, Any]] = {}
    i = 0
    while i < len(lines):
        match = _KERNEL_DEF.match(lines[i])
        if match is None:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("'''")), len(lines))
        cpp = "\n".join(lines[i + 1:end])
        arg_types = ast.literal_eval(match.group(2))
        record = _RECORD.search(cpp)
        dtypes = [_CPP_DTYPES.get(t.replace("const ", "").rstrip("*").strip(), "") for t in arg_types]
        kernels[match.group(1)] = {"event": record.group(1) if record else match.group(1),
                                   "roles": _roles(cpp, len(arg_types)), "dtypes": dtypes}
        i = end + 1
    shapes: dict[str, list[int] | None] = {}
    for line in lines:  # call() (allocations, reuse, extern outputs) and get_args() (inputs)
        if m := _ALIAS.match(line):
            shapes[m.group(1)] = shapes.get(m.group(2))
            continue
        for pattern in _SHAPED:
            if m := pattern.match(line):
                shapes[m.group(1)] = _shape(m.group(2))
                break
    for line in lines:
        m = _CALL.match(line)
        if m is None or m.group(1) not in kernels or "buffers" in kernels[m.group(1)]:
            continue
        entry = kernels[m.group(1)]
        names = [a.strip() for a in m.group(2).split(",") if a.strip()]
        roles = entry["roles"]
        known = roles is not None and len(roles) == len(names)
        described = []
        for name, role, dtype in zip(names, roles or [], entry["dtypes"]):
            if role == "scalar":
                continue
            shape = shapes.get(name)
            known = known and shape is not None and bool(dtype)
            described.append({"shape": shape, "dtype": dtype, "role": role})
        entry["buffers"] = described if known else None
    return {entry["event"]: {"kernel": name, "buffers": entry.get("buffers")} for name, entry in kernels.items()}


def compiled_cpp_kernels() -> dict[str, dict[str, Any]]:
    """The C++ kernels of every wrapper module Inductor has loaded in this process (none if
    Inductor was never imported: we never import it ourselves)."""
    codecache = sys.modules.get("torch._inductor.codecache")
    cache = getattr(codecache, "PyCodeCache", None)
    if cache is None:
        return {}
    modules = list(getattr(cache, "modules", [])) + list(getattr(cache, "modules_no_attr", {}).values())
    found: dict[str, dict[str, Any]] = {}
    for module in modules:
        path = getattr(module, "__file__", None)
        if not path or not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as handle:
                source = handle.read()
        except OSError:
            continue
        if "cpp_pybinding" in source:
            found.update(parse_wrapper(source))
    return found
