"""The profile's sections are typed (rooflinectl/profile_sections.py): every key the pipeline
writes into the summary, its nested sections and the run metadata is declared there, the types
and the documentation (schema.SUMMARY_KEYS) name the same keys, and the file-format markers are
written only in schema.py."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
import torch

import rooflinectl
from rooflinectl.ceilings.model import Ceilings, Roof
from rooflinectl.outputs.summary_shapes import METADATA_SHAPES, SUMMARY_SHAPES
from rooflinectl.profile_sections import (
    Clocks,
    Communication,
    Counters,
    Distributed,
    RunMetadata,
    Summary,
    finished_metadata,
)
from rooflinectl.schema import SUMMARY_KEYS, TOOL_NAME

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
NESTED = {"clocks": Clocks, "communication": Communication, "counters": Counters, "distributed": Distributed}
SCRIPT = """
import torch
import torch.nn as nn
model = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.LayerNorm(64))
x = torch.randn(32, 64)
for _ in range(8):
    model(x).sum().backward()
"""


def declared(section: type) -> set[str]:
    return set(section.__optional_keys__) | set(section.__required_keys__)


def undeclared(summary: dict[str, Any], metadata: dict[str, Any] | None = None) -> list[str]:
    """Keys written that the TypedDicts do not declare, as 'summary.key' / 'summary.clocks.key'."""
    found = [f"summary.{k}" for k in summary if k not in declared(Summary)]
    for name, section in NESTED.items():
        if isinstance(summary.get(name), dict):
            found += [f"summary.{name}.{k}" for k in summary[name] if k not in declared(section)]
    found += [f"metadata.{k}" for k in metadata or {} if k not in declared(RunMetadata)]
    return found


@pytest.fixture(scope="module")
def cpu_profiles(tmp_path_factory) -> list[Any]:
    """A script (sampled: --profile-steps' keys) and a function (its calls timed apart), on the CPU."""
    script = tmp_path_factory.mktemp("sections") / "train.py"
    script.write_text(SCRIPT)
    return [rooflinectl.profile(str(script), device="cpu").data,
            rooflinectl.profile(torch.mm, torch.randn(64, 64), torch.randn(64, 64), warmup=1, iters=2,
                                device="cpu").data]


def test_every_key_the_pipeline_writes_is_declared(cpu_profiles) -> None:
    for data in cpu_profiles:
        assert len(data.summary) > 30 and "window_s" in data.summary  # a real summary, not an empty one
        assert not undeclared(data.summary, data.metadata), "declare in rooflinectl/profile_sections.py"
    assert "profile_steps_rule" in cpu_profiles[0].summary and "unprofiled_steps" in cpu_profiles[1].summary


def test_an_undeclared_key_is_found() -> None:
    """The check above can fail: a key the types lack, at the top or nested, is named."""
    summary = {"window_s": 1.0, "new_figure_s": 2.0, "clocks": {"status": "sampled", "new_clock": 1}}
    assert undeclared(summary, {"torch": "2.13", "new_meta": 1}) == [
        "summary.new_figure_s", "summary.clocks.new_clock", "metadata.new_meta"]


@pytest.mark.parametrize("path", sorted(DATA.glob("*.profile.json")) + sorted((DATA / "advice").glob("*.profile.json")),
                         ids=lambda p: p.name)
def test_recorded_profiles_hold_only_declared_keys(path: Path) -> None:
    """The H200 profiles (GPU keys: clocks sampled by NVML, device_index) are declared too."""
    from rooflinectl.outputs.profile_file import load_profile

    data = load_profile(path)
    assert not undeclared(data.summary, data.metadata)


def test_every_key_the_readers_look_up_is_declared() -> None:
    """`summary["x"]`, `summary.get("x")`, `metadata[...]`, `metadata.get(...)` in the package name
    declared keys (capture/ is left out: its `summary` is a Triton launch's, not the profile's)."""
    lookup = re.compile(r"""\b(summary|metadata)(?:\.get\(|\[)\s*["']([A-Za-z_]+)["']""")
    sections = {"summary": declared(Summary), "metadata": declared(RunMetadata)}
    read = [(p, i, m) for p in (ROOT / "rooflinectl").rglob("*.py") if "capture" not in p.parts
            for i, line in enumerate(p.read_text().splitlines(), 1) for m in lookup.finditer(line)]
    assert len(read) > 100  # the readers are there: the pattern finds them
    unknown = [f"{p.relative_to(ROOT)}:{i} {m.group(1)}[{m.group(2)!r}]" for p, i, m in read
               if m.group(2) not in sections[m.group(1)]]
    assert not unknown, unknown


def test_the_types_and_the_documentation_name_the_same_keys() -> None:
    assert declared(Summary) == set(SUMMARY_KEYS)


def test_the_shapes_checked_on_load_are_declared() -> None:
    assert set(SUMMARY_SHAPES) <= declared(Summary)
    assert set(METADATA_SHAPES) <= declared(RunMetadata)
    for name, section in NESTED.items():
        assert set(SUMMARY_SHAPES[name]) <= declared(section), name


def test_finished_metadata_stamps_the_run() -> None:
    ceilings = Ceilings("Some GPU", "cuda", {"dram": Roof(4e12, "measured")},
                        {"tensor.bf16": Roof(1e15, "spec"), "simt.fp32": Roof(6e13, "spec-clock-scaled")})
    environment = {"device_kind": "cuda", "torch": "2.11", "device_name": "NVIDIA H200"}
    meta = finished_metadata(environment, ceilings, command=["rooflinectl", "profile", "x.py"], completed=False,
                             exit_code=3, iterations_mode="auto")
    assert meta["tool"] == TOOL_NAME and meta["tool_version"] == rooflinectl.__version__
    assert meta["ceilings_source"] == ["measured", "spec", "spec-clock-scaled"]
    assert meta["device_name"] == "NVIDIA H200"  # the run's own name is kept
    assert (meta["completed"], meta["exit_code"], meta["iterations_mode"]) == (False, 3, "auto")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", meta["created"])
    assert environment == {"device_kind": "cuda", "torch": "2.11", "device_name": "NVIDIA H200"}  # not changed
    assert finished_metadata({}, ceilings, command=[], completed=True, exit_code=0)["device_name"] == "Some GPU"


def test_file_format_markers_are_written_only_in_schema() -> None:
    """A string that is exactly a file's "format" marker ('rooflinectl-profile', '-capture',
    '-ceilings-cache', '-pytest-baseline', '-pytest-report') appears only in schema.py."""
    markers = {f"rooflinectl-{k}" for k in ("profile", "capture", "ceilings-cache", "pytest-baseline", "pytest-report")}
    sources = {p: p.read_text() for p in (ROOT / "rooflinectl").rglob("*.py") if p.name != "schema.py"}
    found = [f"{p.relative_to(ROOT)}:{node.lineno}" for p, text in sources.items() if "rooflinectl-" in text
             for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Constant) and node.value in markers]
    assert not found, found
