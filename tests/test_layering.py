"""The data flow is one-way: a module imports only from its own stage or one before it.

Order (README, "Development"): core < ceilings < capture < costs < attribution < analysis <
verify < pipeline < kernel_suite (the reference kernels' run as a profile: pipeline's sibling) < outputs <
cli/api/pytest_plugin (the plugin is a consumer of the API, as the CLI is). Core modules (the contract and the model every stage shares) may be imported by all;
ceilings is a library of hardware facts that imports only core. Imports are read with ast, so an
import inside a function counts as much as one at the top.
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
STAGES = ("core", "ceilings", "capture", "costs", "attribution", "analysis", "verify", "pipeline", "kernel_suite", "outputs",
          "top")


def stage_of(module: str) -> str:
    """The stage of a module name under rooflinectl (the package itself and its CLI are "top")."""
    if module in CORE:
        return "core"
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("cli", "api", "profiling", "pytest_plugin", "__main__", "__init__"):
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
    assert violations(PACKAGE / "capture" / "probe.py", "from . import trace\nfrom ..costs import tensors\n") == [
        "rooflinectl/capture/probe.py:2 (capture) imports rooflinectl.costs.tensors (costs)"]


def test_version_matches_pyproject() -> None:
    text = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    (declared,) = re.findall(r'(?m)^version = "([^"]+)"$', text)  # [project] version (tomllib needs 3.11)
    assert __version__ == declared
    assert rooflinectl.__version__ == __version__
