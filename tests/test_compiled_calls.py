"""capture/run/compiled_calls.py: calls of a compiled graph class seen before they run, whether its
module was imported before the watch began or after, and everything put back by the undo."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rooflinectl.capture.run.compiled_calls import graph_name, watch_calls

GRAPH_SOURCE = '''
class CompiledFxGraph:
    def __init__(self, key):
        self._fx_graph_cache_key = key

    def __call__(self, inputs):
        return [x * 2 for x in inputs]
'''


@pytest.fixture
def fake_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A module like torch._inductor.output_code, importable but not imported yet."""
    name = f"fake_output_code_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(GRAPH_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_a_module_imported_later_is_watched_from_its_import(fake_module: str) -> None:
    seen: list[str] = []
    finders = len(sys.meta_path)
    undo = watch_calls(lambda g: seen.append(g._fx_graph_cache_key), module_name=fake_module)
    assert len(sys.meta_path) == finders + 1  # waiting for the import, nothing imported by us
    assert fake_module not in sys.modules
    module = __import__(fake_module)
    graph = module.CompiledFxGraph("abc")
    assert graph([1, 2]) == [2, 4]  # what the graph computes is unchanged
    assert graph([3]) == [6]
    assert seen == ["abc", "abc"]
    undo()
    assert len(sys.meta_path) == finders
    graph([1])
    assert seen == ["abc", "abc"]  # the original method is back
    assert "__wrapped__" not in vars(module.CompiledFxGraph.__call__)


def test_a_module_already_imported_is_watched_at_once_and_a_failing_count_is_dropped(fake_module: str) -> None:
    module = __import__(fake_module)
    original = module.CompiledFxGraph.__call__

    def failing(_graph: object) -> None:
        raise RuntimeError("a bug of ours")

    undo = watch_calls(failing, module_name=fake_module)
    assert module.CompiledFxGraph.__call__ is not original
    assert module.CompiledFxGraph("k")([5]) == [10]  # the program never sees our failure
    undo()
    undo()  # twice is harmless
    assert module.CompiledFxGraph.__call__ is original


def test_a_module_without_the_class_is_left_alone(fake_module: str) -> None:
    module = __import__(fake_module)
    undo = watch_calls(lambda g: None, module_name=fake_module, class_name="NoSuchGraph")
    assert not hasattr(module, "NoSuchGraph")
    undo()


def test_graph_name_is_the_class_and_the_start_of_its_key(fake_module: str) -> None:
    module = __import__(fake_module)
    assert graph_name(module.CompiledFxGraph("f2kz3qgmq7vn5abcdef")) == "CompiledFxGraph f2kz3qgmq7vn"
