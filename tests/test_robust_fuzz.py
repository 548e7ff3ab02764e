"""Issue 36, fuzz: mutated real profiles and traces (numbers, types, nesting, unicode, sizes) fed to
every reader and writer. Whatever the mutation: no traceback (a documented exit code), no
workflow command of the file's at a line start, no raw escape code or bidi override in what is
printed, and no file replaced but the one asked for. Seeded and bounded (about 30 s here)."""

from __future__ import annotations

import copy
import gzip
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rooflinectl.cli.main import main

DATA = Path(__file__).parent / "data"
PROFILES = [DATA / "h200_attention_naive.profile.json", DATA / "h200_mlp.profile.json"]
TRACE = DATA / "h200_real" / "moe_grouped.trace.json.gz"
SEED = 36
DOCUMENTED_EXITS = {0, 1, 2, 3, 5, 6}
OUR_COMMAND = re.compile(r"^::(notice|warning|error) title=rooflinectl[^:]*::")
HOSTILE_TEXT = ["\x1b[2J\x1b]0;x\x07", "a\n::error::fuzz\n::add-mask::s", "\n::stop-commands::tok", "\ud800",
                "\ufffe\uffff", "\u202eevil", "@octocat", "=cmd|' /C calc'!A0", "[bold]x[/]", "$\\frac{$",
                "é中ядро", "x" * 5000, "", "<script>", "%0A::error::x"]
HOSTILE_NUMBERS: list[Any] = [-1, 0, 1e300, -1e300, 1e-300, 2**63, -(2**63) - 1, 0.5, True, None, "1", "nan", [], {}]


def _mutate(value: Any, rng: random.Random) -> Any:
    """One mutation of a JSON value: a hostile string or number, another type, deeper nesting."""
    roll = rng.random()
    if roll < 0.4:
        return rng.choice(HOSTILE_TEXT) + (value if isinstance(value, str) and rng.random() < 0.5 else "")
    if roll < 0.75:
        return rng.choice(HOSTILE_NUMBERS)
    if roll < 0.9:
        return [value] if rng.random() < 0.5 else {"x": value}
    return None


def _walk(node: Any, rng: random.Random, rate: float) -> Any:
    """A copy of node with about `rate` of its leaves (and some keys) mutated."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if rng.random() < rate / 4:
                continue  # a key dropped
            if rng.random() < rate / 4:
                key = rng.choice(HOSTILE_TEXT[:8]) + key
            out[key] = _walk(value, rng, rate)
        return out
    if isinstance(node, list):
        return [_walk(item, rng, rate) for item in node]
    return _mutate(node, rng) if rng.random() < rate else node


def _mutant_profile(raw: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Mostly valid: the frame kept (format, version), its sections mutated at a low rate, sometimes
    one column of the kernel table mutated in every row (so the loader's checks are passed or met)."""
    doc = copy.deepcopy(raw)
    section = rng.choice(["metadata", "summary", "ceilings", "kernels", "rows"])
    if section == "rows":
        column = rng.randrange(len(doc["kernels"]["columns"]))
        value = _mutate(None, rng) if rng.random() < 0.5 else rng.choice(HOSTILE_TEXT)
        for row in doc["kernels"]["rows"]:
            row[column] = value if not isinstance(row[column], str) or rng.random() < 0.5 else \
                rng.choice(HOSTILE_TEXT) + row[column]
    else:
        doc[section] = _walk(doc[section], rng, rate=0.08)
    return doc


def _check(result: Any, folder: Path, kept: dict[str, bytes]) -> None:
    assert result.exit_code in DOCUMENTED_EXITS, result.output[-2000:]
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    text = result.output
    assert "Traceback" not in text
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text, text[:500]
    for line in text.splitlines():
        if line.startswith("::"):
            assert OUR_COMMAND.match(line), line[:200]
    for name, before in kept.items():
        assert (folder / name).read_bytes() == before, f"{name} was replaced"


COMMANDS = [["show"], ["show", "--format", "csv", "--top", "0"], ["show", "--format", "json"], ["show", "--wide"],
            ["advise"], ["advise", "--format", "github"], ["advise", "--format", "markdown"],
            ["advise", "--format", "junit", "--min-efficiency", "0.5"], ["advise", "--format", "json"],
            ["plot", "--terminal"], ["validate"]]


@pytest.mark.slow
@pytest.mark.parametrize("source", PROFILES, ids=lambda p: p.stem)
def test_mutated_profiles_through_every_reader_and_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         source: Path) -> None:
    monkeypatch.chdir(tmp_path)
    rng = random.Random(f"{SEED}-{source.stem}")
    raw = json.loads(source.read_text())
    user = tmp_path / "notes.md"
    user.write_text("# the user's own file\n")
    for n in range(10):
        path = tmp_path / f"m{n}.json"
        path.write_text(json.dumps(_mutant_profile(raw, rng)))
        kept = {path.name: path.read_bytes(), user.name: user.read_bytes()}
        for command in COMMANDS:
            _check(CliRunner().invoke(main, [command[0], str(path), *command[1:]]), tmp_path, kept)
        _check(CliRunner().invoke(main, ["diff", str(source), str(path), "--fail-on-regression", "5"]), tmp_path, kept)
        # a report asked onto the user's file or the input: refused, neither replaced
        for output in (user.name, path.name):
            _check(CliRunner().invoke(main, ["advise", str(path), "--format", "markdown", "-o", output]),
                   tmp_path, kept)


def test_mutated_traces_through_analyse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rng = random.Random(f"{SEED}-trace")
    trace = json.loads(gzip.decompress(TRACE.read_bytes()))
    complete = [i for i, e in enumerate(trace["traceEvents"]) if e.get("ph") == "X"]
    for n in range(5):
        doc = copy.deepcopy(trace)
        for i in rng.sample(complete, 3):  # a few events, a few fields each
            event = doc["traceEvents"][i]
            for key in rng.sample(sorted(event), 2):
                event[key] = _walk(event[key], rng, rate=1.0) if isinstance(event[key], dict) else _mutate(event[key], rng)
        if rng.random() < 0.3:
            doc["deviceProperties"] = _walk(doc.get("deviceProperties"), rng, rate=0.5)
        data = json.dumps(doc).encode()
        path = tmp_path / f"t{n}.json"
        path.write_bytes(data if n % 2 else gzip.compress(data)[: rng.randrange(100, 1 << 20)])
        kept = {path.name: path.read_bytes()}
        _check(CliRunner().invoke(main, ["analyse", str(path), "-o", str(tmp_path / f"out{n}.json")]), tmp_path, kept)
