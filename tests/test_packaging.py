"""The install is what the tree holds: every package folder listed in pyproject.toml (setuptools
cannot find `rooflinectl_kernels`, so the list is explicit and a new sub-package must be added to
it, or a wheel ships without it), the reference kernels mapped from kernels/, and no symlink."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parent.parent


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _package_folders() -> set[str]:
    return {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "rooflinectl").rglob("__init__.py")}


def test_every_package_folder_is_listed() -> None:
    listed = set(_setuptools()["packages"])
    missing = _package_folders() - listed
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"
    assert listed - _package_folders() == {"rooflinectl_kernels"}


def test_the_reference_kernels_install_from_kernels_folder() -> None:
    assert _setuptools()["package-dir"] == {"rooflinectl_kernels": "kernels"}
    assert (ROOT / "kernels" / "__init__.py").is_file()


def test_no_symlink_in_the_tree() -> None:
    links = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
             if p.is_symlink() and not {".git", ".venv", "node_modules"} & set(p.relative_to(ROOT).parts)]
    assert not links, f"symlinks in the tree: {links}"



@pytest.mark.slow
def test_a_wheel_holds_the_reference_kernels(tmp_path: Path) -> None:
    """What a regular (not editable) install gets: both packages, kernels/ under its import name."""
    import subprocess
    import sys
    import zipfile

    pytest.importorskip("setuptools")  # --no-build-isolation builds with the installed one
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(ROOT),
                            "-w", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    names = set(zipfile.ZipFile(next(tmp_path.glob("rooflinectl-*.whl"))).namelist())
    kernels = {f"rooflinectl_kernels/{p.name}" for p in (ROOT / "kernels").glob("*.py")}
    assert kernels <= names, sorted(kernels - names)
    assert "rooflinectl/costs/sources.py" in names and "rooflinectl/outputs/report_assets/report.js" in names
    assert not any(n.startswith("kernels/") for n in names)
