"""The Python API in a notebook (issue 35): profile() passes the function's own keywords through
(fn_kwargs for a name rooflinectl's options use), and a Profile renders in Jupyter as well-formed
HTML with the summary, the top rows and an inline chart."""

from __future__ import annotations

import base64
import io
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch

import rooflinectl
from rooflinectl.api import _function_kwargs

DATA = Path(__file__).parent / "data"
VOID = {"br", "img", "hr", "meta", "link", "input", "col"}


def test_the_functions_own_keywords_reach_it() -> None:
    seen: list[dict] = []

    def step(x: torch.Tensor, scale: float = 1.0, device: str = "nowhere") -> torch.Tensor:
        seen.append({"scale": scale, "device": device})
        return (x * scale) @ x

    x = torch.randn(16, 16)
    rooflinectl.profile(step, x, scale=2.0, fn_kwargs={"device": "here"}, warmup=1, iters=2, device="cpu",
                        iterations="none")
    assert seen and all(call == {"scale": 2.0, "device": "here"} for call in seen)


def test_an_option_that_is_also_the_functions_parameter_is_said() -> None:
    def step(x: torch.Tensor, iters: int = 1) -> torch.Tensor:
        return x

    with pytest.warns(UserWarning, match=r"iters went to rooflinectl, not to step.*fn_kwargs=\{'iters': \.\.\.\}"):
        _function_kwargs(step, {}, None, ["iters", "device"])
    assert _function_kwargs(step, {"a": 1}, {"iters": 5}, ["iters"]) == {"a": 1, "iters": 5}  # no warning: given
    with pytest.raises(TypeError, match="iters given both bare and in fn_kwargs"):
        _function_kwargs(step, {"iters": 1}, {"iters": 2}, [])


class _Checker(HTMLParser):
    """Well-formed: every opened tag closed in order; collects img sources, table rows and text."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.images: list[str] = []
        self.rows = 0
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "img":
            self.images.append(dict(attrs)["src"])
        if tag == "tr":
            self.rows += 1
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack.pop() == tag, f"</{tag}> closes nothing open"

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_repr_html_is_well_formed_with_summary_rows_and_chart() -> None:
    from matplotlib import image

    profile = rooflinectl.load(str(DATA / "h200_mlp.profile.json"))
    checker = _Checker()
    checker.feed(profile._repr_html_())
    checker.close()
    assert checker.stack == []
    text = " ".join(checker.text)
    assert "device: NVIDIA H200" in text and "kernel time" in text  # the summary
    assert checker.rows == 1 + min(15, len(profile.kernels))  # header and the top rows
    assert profile.kernels.sort_values("time_s", ascending=False)["kernel"].iloc[0] in text
    (src,) = checker.images
    png = base64.b64decode(re.sub(r"^data:image/png;base64,", "", src))
    pixels = image.imread(io.BytesIO(png), format="png")
    assert pixels.shape[0] > 200 and pixels.shape[1] > 300 and pixels.std() > 0.05  # a real picture


def test_a_notebook_renders_the_profile(tmp_path: Path) -> None:
    """Where Jupyter's own tools are installed: a notebook executed by a kernel shows the HTML."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(
        f"import rooflinectl\nrooflinectl.load({str(DATA / 'h200_mlp.profile.json')!r})"))
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    html = notebook.cells[0].outputs[0]["data"]["text/html"]
    assert "data:image/png;base64," in html and "device: NVIDIA H200" in html
