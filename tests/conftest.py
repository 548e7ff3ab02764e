"""Capability markers in one place: `gpu`, `multigpu`, `triton`, `ncu` and `browser` tests skip, with the reason,
where the machine lacks what they need (markers are declared in pyproject.toml).

Triton's interpreter: on a machine without a GPU, Triton kernels run on the CPU through
TRITON_INTERPRET=1, which Triton reads when its language module is first imported (torch's
flop counter imports it, so before any test module). pytest_configure sets it for the session
there; where a GPU is present Triton compiles, and the interpreter tests skip.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys

import pytest

# The roofline fixture for our own tests (tests/test_pytest_plugin*.py), installed or not: the
# entry point carries the module's name, so this loads it once either way.
pytest_plugins = ["rooflinectl.pytest_plugin"]


@functools.cache
def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if _cuda_available() else 0


def _ncu_found() -> bool:
    """The lookup `profile --counters ncu` itself uses (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)."""
    from rooflinectl.capture.ncu.command import find_ncu
    from rooflinectl.errors import EnvironmentProblem

    try:
        find_ncu()
    except EnvironmentProblem:
        return False
    return True


def _chromium_found() -> bool:
    """A headless browser for the report's browser test (tests/cdp_pipe.py looks it up the same way)."""
    from cdp_pipe import find_chromium

    return find_chromium() is not None


def _missing(marker: str) -> str | None:
    """Why tests with this marker cannot run here, or None when they can."""
    if marker == "gpu" and not _cuda_available():
        return "needs a CUDA GPU (torch.cuda.is_available() is False)"
    if marker == "multigpu" and _gpu_count() < 2:
        return f"needs two CUDA GPUs ({_gpu_count()} visible)"
    if marker == "triton" and importlib.util.find_spec("triton") is None:
        return "needs triton (pip install triton)"
    if marker == "ncu" and not _ncu_found():
        return "needs Nsight Compute: no `ncu` on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin"
    if marker == "browser" and not _chromium_found():
        return "needs Chromium (apt-get install chromium): no chromium or google-chrome on PATH"
    return None


@pytest.fixture(autouse=True)
def _private_ceilings_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test reads and writes its own ceilings cache, never the user's (~/.cache/rooflinectl):
    roofs measured elsewhere, on a loaded machine say, must not change what a test sees. A GPU
    run that shares measured roofs on purpose sets ROOFLINECTL_TEST_CACHE_DIR."""
    shared = os.environ.get("ROOFLINECTL_TEST_CACHE_DIR")
    monkeypatch.setenv("ROOFLINECTL_CACHE_DIR", shared or str(tmp_path_factory.mktemp("ceilings-cache")))


_INTERPRET_ENV = "TRITON_INTERPRET"
_previous_interpret: list[str | None] = []


def pytest_configure(config: pytest.Config) -> None:
    """No GPU, triton present and not yet imported: run Triton kernels through its interpreter."""
    if importlib.util.find_spec("triton") is None or "triton.language" in sys.modules or _cuda_available():
        return
    _previous_interpret.append(os.environ.get(_INTERPRET_ENV))
    os.environ[_INTERPRET_ENV] = "1"


def pytest_unconfigure(config: pytest.Config) -> None:
    if _previous_interpret:
        previous = _previous_interpret.pop()
        if previous is None:
            os.environ.pop(_INTERPRET_ENV, None)
        else:
            os.environ[_INTERPRET_ENV] = previous


@pytest.fixture(scope="session")
def interpreted_kernels():
    """The reference kernels, run by Triton's CPU interpreter (skips where Triton compiles)."""
    if _missing("triton"):
        pytest.skip(_missing("triton"))
    from rooflinectl.kernel_suite import load_reference_kernels, triton_interpreting

    if os.environ.get(_INTERPRET_ENV) != "1" or triton_interpreting() is False:
        pytest.skip("Triton compiles for the GPU in this session: the interpreter tests run where there is no GPU")
    return load_reference_kernels(interpret=True)


@pytest.fixture(scope="session")
def gpu_kernels():
    """The reference kernels, compiled for the GPU (skips without CUDA or under the interpreter)."""
    for marker in ("gpu", "triton"):
        if _missing(marker):
            pytest.skip(_missing(marker))
    from rooflinectl.kernel_suite import load_reference_kernels, triton_interpreting

    if os.environ.get(_INTERPRET_ENV) == "1" or triton_interpreting():
        pytest.skip("TRITON_INTERPRET=1: Triton does not compile in this session")
    return load_reference_kernels(interpret=False)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for marker in ("gpu", "multigpu", "triton", "ncu", "browser"):
            if item.get_closest_marker(marker) is not None:
                reason = _missing(marker)
                if reason:
                    item.add_marker(pytest.mark.skip(reason=reason))
