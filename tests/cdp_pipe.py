"""A small Chrome DevTools Protocol client over a pipe: headless Chromium driven with no dependency.

Chromium started with --remote-debugging-pipe reads commands on its fd 3 and writes replies and
events on its fd 4, each a JSON message ended by a NUL byte (the transport Puppeteer's pipe mode
uses). Enough for the report's browser test and scripts/bench_report.py: open a page, evaluate
JavaScript, move the mouse, click, take a screenshot, collect console errors.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """The browser executable on PATH (Debian's `chromium` first), None when there is none."""
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _high_fd(fd: int) -> int:
    """The same pipe end on a descriptor above 9, so that moving the child's to 3 and 4 clobbers none."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


class Browser:
    """One headless browser with one page (the first target), attached in flat session mode."""

    def __init__(self, executable: str, width: int = 1400, height: int = 1000) -> None:
        self._profile = tempfile.mkdtemp(prefix="rooflinectl-cdp-")
        to_browser_r, to_browser_w = (_high_fd(fd) for fd in os.pipe())
        from_browser_r, from_browser_w = (_high_fd(fd) for fd in os.pipe())
        args = [executable, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                f"--user-data-dir={self._profile}", f"--window-size={width},{height}", "about:blank"]

        def child_fds() -> None:  # the browser reads fd 3 and writes fd 4 (kept open: pass_fds)
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.process = subprocess.Popen(args, preexec_fn=child_fds, pass_fds=(3, 4),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._out = os.fdopen(to_browser_w, "wb", buffering=0)
        self._in = os.fdopen(from_browser_r, "rb", buffering=0)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                          "mobile": False}, session=True)

    def _read_message(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no message from the browser")
            chunk = self._in.read(1 << 16)
            if not chunk:
                raise ConnectionError("the browser closed its pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict[str, Any] | None = None, *, session: bool = False,
             timeout_s: float = 30.0) -> dict[str, Any]:
        """Send one command and wait for its reply (events that arrive meanwhile are kept)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        self._out.write(json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read_message(timeout_s)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited when it is a promise)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                           session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, path: Path, ready: str = "document.body && document.body.dataset.ready === '1'",
             timeout_s: float = 30.0) -> float:
        """Open a file and wait until `ready` holds; returns the seconds from navigation to ready."""
        start = time.monotonic()
        self.call("Page.navigate", {"url": path.resolve().as_uri()}, session=True)
        while time.monotonic() - start < timeout_s:
            try:
                if self.evaluate(f"!!({ready})"):
                    return time.monotonic() - start
            except RuntimeError:
                pass
            time.sleep(0.02)
        raise TimeoutError(f"{path} was not ready after {timeout_s} s")

    def mouse(self, kind: str, x: float, y: float) -> None:
        """mouseMoved, mousePressed or mouseReleased at page coordinates (left button)."""
        params = {"type": kind, "x": x, "y": y, "button": "left" if kind != "mouseMoved" else "none",
                  "clickCount": 1 if kind != "mouseMoved" else 0}
        self.call("Input.dispatchMouseEvent", params, session=True)

    def click(self, x: float, y: float) -> None:
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y)
        self.mouse("mouseReleased", x, y)

    def screenshot(self, path: Path, full_page: bool = False, selector: str | None = None) -> None:
        """The viewport, the whole page, or one element (a CSS selector) as a PNG."""
        params: dict[str, Any] = {"format": "png"}
        if selector is not None:
            box = self.evaluate(f"(function () {{ var r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
                                " return [r.left + scrollX, r.top + scrollY, r.width, r.height]; })()")
            params.update(captureBeyondViewport=True, clip={"x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": 1})
        elif full_page:
            size = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params.update(captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1})
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", params, session=True)["data"]))

    def errors(self) -> list[str]:
        """Console errors and uncaught exceptions seen so far."""
        self.call("Runtime.evaluate", {"expression": "1"}, session=True)  # drain what is pending
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(json.dumps(params.get("args", []))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(params["entry"].get("text", "")[:500])
        return out

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError, ConnectionError):
            self.call("Browser.close", timeout_s=5)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._in.close()
        self._out.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
