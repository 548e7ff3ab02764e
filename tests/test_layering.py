"""The data flow is one-way: a module imports only from its own stage or one before it.

Order (docs/development.md): core < ceilings < capture < costs < attribution < analysis <
verify < pipeline < kernel_suite (the reference kernels' run as a profile: pipeline's sibling) < outputs <
top: cli, api, pytest_plugin (a consumer of the API, as the CLI is) and the pipeline the CLI and
the API share (profiling, profiling_counters, saved_trace, html_report). Core modules (the contract
and the model every stage shares) may be imported by all; ceilings is a library of hardware facts
that imports only core. Capture is three jobs, three sub-packages of one stage: capture.run (running
the workload), capture.read (reading traces: it needs no running) and capture.ncu (the counters
tier), beside capture.progress (the status channel both report to). Nothing outside cli imports
cli, and outputs never import capture.run. Imports are read with ast, so an import inside a
function counts as much as one at the top. Also here: no module over 450 lines and no function
over 60 in rooflinectl/, and no symlink in the tree.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import rooflinectl
from rooflinectl._version import __version__

PACKAGE = Path(rooflinectl.__file__).parent
CORE = {"rooflinectl._version", "rooflinectl.schema", "rooflinectl.errors", "rooflinectl.atomic", "rooflinectl.gzip_file",
        "rooflinectl.profile_model", "rooflinectl.profile_sections", "rooflinectl.aggregate", "rooflinectl.units", "rooflinectl.ceilings.model"}
TOP = ("cli", "api", "profiling", "profiling_counters", "saved_trace", "html_report", "pytest_plugin", "__main__",
       "__init__")
STAGES = ("core", "ceilings", "capture", "costs", "attribution", "analysis", "verify", "pipeline", "kernel_suite", "outputs",
          "top")


def stage_of(module: str) -> str:
    """The stage of a module name under rooflinectl (the package itself and its CLI are "top")."""
    if module in CORE:
        return "core"
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in TOP:
        return "top"
    if parts[1] not in STAGES:
        raise AssertionError(f"{module} belongs to no stage: add it to STAGES or CORE in tests/test_layering.py")
    return parts[1]


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, name: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, imported rooflinectl name) for every import statement in a module's source."""
    package = name if is_package else name.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return [(line, target) for line, target in found if target.split(".")[0] == "rooflinectl"]


def resolve(target: str) -> str | None:
    """The module an import names (`from rooflinectl.x import y` may name module x.y or attribute y)."""
    parts = target.split(".")
    while parts:
        candidate = PACKAGE.parent.joinpath(*parts)
        if candidate.with_suffix(".py").is_file() or (candidate / "__init__.py").is_file():
            return ".".join(parts)
        parts.pop()
    return None


def violations(path: Path, source: str) -> list[str]:
    """One line per import of a later stage in the module at path (whose text is source)."""
    name = module_name(path)
    mine = STAGES.index(stage_of(name))
    out = []
    for line, target in imports_of(source, name, path.name == "__init__.py"):
        module = resolve(target)
        if module is None:
            continue
        theirs = STAGES.index(stage_of(module))
        message = f"{path.relative_to(PACKAGE.parent)}:{line} ({STAGES[mine]}) imports {module} ({STAGES[theirs]})"
        if theirs > mine and message not in out:
            out.append(message)
    return out


def test_no_module_imports_from_a_later_stage() -> None:
    found = [v for path in sorted(PACKAGE.rglob("*.py")) for v in violations(path, path.read_text(encoding="utf-8"))]
    assert not found, "imports against the data flow:\n" + "\n".join(found)


def test_the_check_sees_a_late_import() -> None:
    """An analysis module that imports outputs, even inside a function, is caught; an import of
    an earlier stage is not."""
    probe = PACKAGE / "analysis" / "probe.py"
    source = ("from rooflinectl.attribution.group import group_launches\n"
              "def f():\n    from rooflinectl.outputs.table import render_profile\n")
    assert violations(probe, source) == [
        "rooflinectl/analysis/probe.py:3 (analysis) imports rooflinectl.outputs.table (outputs)"]
    assert violations(PACKAGE / "capture" / "probe.py", "from .read import trace\nfrom ..costs import tensors\n") == [
        "rooflinectl/capture/probe.py:2 (capture) imports rooflinectl.costs.tensors (costs)"]


def test_version_matches_pyproject() -> None:
    text = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    (declared,) = re.findall(r'(?m)^version = "([^"]+)"$', text)  # [project] version (tomllib needs 3.11)
    assert __version__ == declared
    assert rooflinectl.__version__ == __version__


def _imports_of_module(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every rooflinectl import of the module at path."""
    name = module_name(path)
    found = imports_of(path.read_text(encoding="utf-8"), name, path.name == "__init__.py")
    return [(line, module) for line, target in found if (module := resolve(target)) is not None]


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


CAPTURE_JOBS = ("rooflinectl.capture.run", "rooflinectl.capture.read", "rooflinectl.capture.ncu")
CAPTURE_SHARED = ("rooflinectl.capture", "rooflinectl.capture.progress")  # the package, and the status channel
# (importer, imported): a package whose modules must never import the other's
FORBIDDEN = [
    ("rooflinectl.capture.read", "rooflinectl.capture.run"),  # reading a trace needs no running
    ("rooflinectl.outputs", "rooflinectl.capture.run"),  # outputs render files and profiles, never run anything
]


def _forbidden(path: Path, imports: list[tuple[int, str]]) -> list[str]:
    name = module_name(path)
    out = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {module} (only cli may import cli)"
           for line, module in imports if _within(module, "rooflinectl.cli") and not _within(name, "rooflinectl.cli")
           and name != "rooflinectl.__main__"]
    out += [f"{path.relative_to(PACKAGE.parent)}:{line} imports {module} ({importer} never imports {imported})"
            for importer, imported in FORBIDDEN if _within(name, importer)
            for line, module in imports if _within(module, imported)]
    return out


def test_capture_is_three_jobs() -> None:
    """Every capture module belongs to one job's sub-package, or is what they share."""
    stray = [module_name(p) for p in sorted((PACKAGE / "capture").rglob("*.py"))
             if not any(_within(module_name(p), job) for job in CAPTURE_JOBS) and module_name(p) not in CAPTURE_SHARED]
    assert stray == [], f"capture modules outside capture.run / capture.read / capture.ncu: {stray}"


def test_no_arrow_back_into_the_cli_or_from_reading_to_running() -> None:
    found = [v for path in sorted(PACKAGE.rglob("*.py")) for v in _forbidden(path, _imports_of_module(path))]
    assert not found, "forbidden imports:\n" + "\n".join(found)


def test_the_forbidden_check_sees_its_cases() -> None:
    lines = [(1, "rooflinectl.cli.common"), (2, "rooflinectl.capture.run.session"), (3, "rooflinectl.capture.read.raw")]
    assert [v.split(" imports ")[1] for v in _forbidden(PACKAGE / "api.py", lines)] == [
        "rooflinectl.cli.common (only cli may import cli)"]
    assert [v.split(":")[1].split()[0] for v in _forbidden(PACKAGE / "capture" / "read" / "probe.py", lines)] == ["1", "2"]
    assert [v.split(":")[1].split()[0] for v in _forbidden(PACKAGE / "outputs" / "probe.py", lines)] == ["1", "2"]
    assert _forbidden(PACKAGE / "cli" / "probe.py", lines) == []
    assert _forbidden(PACKAGE / "__main__.py", lines[:1]) == []


MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 60
# Functions over the limit that other branches of issue 33 are splitting now (the output formats'
# and the advice rules' owners): each must still be over it, so the list only shrinks.
IN_HAND_ELSEWHERE: set[str] = set()


def too_long(root: Path) -> list[str]:
    """'path N lines' for each module over MAX_MODULE_LINES and 'path:function N lines' for each
    function (def or async def, nested ones too) over MAX_FUNCTION_LINES, under root."""
    out = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        shown = path.relative_to(root.parent).as_posix()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            out.append(f"{shown} {len(text.splitlines())} lines")
        out += [f"{shown}:{node.name} {node.end_lineno - node.lineno + 1} lines" for node in ast.walk(ast.parse(text))
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    return out


def test_modules_and_functions_are_short() -> None:
    found = too_long(PACKAGE)
    assert [f for f in found if f.rsplit(" ", 2)[0] not in IN_HAND_ELSEWHERE] == []
    stale = IN_HAND_ELSEWHERE - {f.rsplit(" ", 2)[0] for f in found}
    assert not stale, f"short now: take them off IN_HAND_ELSEWHERE: {sorted(stale)}"


def test_the_length_check_counts_lines(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    root.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    (root / "a.py").write_text(f"def fits():\n{body}\n\nasync def over():\n{body}    x = 0\n", encoding="utf-8")
    (root / "b.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1), encoding="utf-8")
    assert too_long(root) == [f"pkg/a.py:over {MAX_FUNCTION_LINES + 1} lines", f"pkg/b.py {MAX_MODULE_LINES + 1} lines"]


def _symlinks(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_symlink() and ".git" not in p.parts
                  and ".venv" not in p.parts)


def test_no_symlink_in_the_package_or_the_tests() -> None:
    for folder in (PACKAGE, PACKAGE.parent / "tests"):
        assert _symlinks(folder) == []


def test_no_symlink_in_the_tree() -> None:
    assert _symlinks(PACKAGE.parent) == []
