"""Use a page in headless chromium the way a person does: load it, click where an element is drawn, pick from a list,
read what the page shows then, take a screenshot. Talks the DevTools protocol over chromium's pipe
(``--remote-debugging-pipe``: file descriptors 3 and 4, NUL-terminated JSON), so no websocket library is needed.

Skips (naming what to install) when chromium is not on PATH, like :mod:`headless_chromium`.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import subprocess
import tempfile
import time
from pathlib import Path

from headless_chromium import chromium


class Browser:
    """One headless chromium with one page; a context manager that always stops the browser."""

    def __init__(self, *, width: int = 1400, height: int = 1000, timeout: float = 60):
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="chromium-pipe-")
        commands_read, self._commands = os.pipe()
        self._events, events_write = os.pipe()

        def onto_three_and_four():  # in the child: the pipe ends where --remote-debugging-pipe looks for them
            high = [fcntl.fcntl(commands_read, fcntl.F_DUPFD, 10), fcntl.fcntl(events_write, fcntl.F_DUPFD, 10)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self.process = subprocess.Popen(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--disable-extensions", "--remote-debugging-pipe", f"--user-data-dir={self._profile.name}",
             f"--window-size={width},{height}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=onto_three_and_four, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(commands_read)
        os.close(events_write)
        self._buffer, self._next_id, self._session = b"", 0, None
        self.size = (width, height)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_):
        self.close()

    def close(self) -> None:
        try:
            self._send("Browser.close", {}, session=False, wait=False)
        except OSError:
            pass
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._commands, self._events):
            try:
                os.close(fd)
            except OSError:
                pass
        self._profile.cleanup()

    # ------------------------------------------------------------------ protocol
    def _send(self, method: str, params: dict, *, session: bool = True, wait: bool = True) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session and self._session:
            message["sessionId"] = self._session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        if not wait:
            return {}
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" not in self._buffer:
                left = deadline - time.monotonic()
                ready, _, _ = select.select([self._events], [], [], max(left, 0))
                assert ready, f"chromium did not answer {method} within {self.timeout} s"
                chunk = os.read(self._events, 1 << 16)
                assert chunk, f"chromium closed its pipe while answering {method}"
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self._next_id:
                assert "error" not in answer, f"{method}: {answer['error']}"
                return answer.get("result", {})

    def open(self, url: str) -> None:
        target = self._send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self._session = self._send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                   session=False)["sessionId"]
        self._send("Emulation.setDeviceMetricsOverride",
                   {"width": self.size[0], "height": self.size[1], "deviceScaleFactor": 1, "mobile": False})
        self._send("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete'")

    def evaluate(self, expression: str):
        result = self._send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        assert "exceptionDetails" not in result, f"{expression}: {result['exceptionDetails']}"
        return result["result"].get("value")

    def wait_for(self, condition: str, *, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not self.evaluate(f"!!({condition})"):
            assert time.monotonic() < deadline, f"the page never came to: {condition}"
            time.sleep(0.1)

    # ------------------------------------------------------------------ as a person
    def click(self, selector: str) -> None:
        """A left click in the middle of the element, where it is drawn (scrolled into view first)."""
        where = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2, r.width, r.height]; })()")
        assert where and where[2] > 0 and where[3] > 0, f"nothing drawn for {selector}"
        x, y = where[0], where[1]
        self._send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for kind in ("mousePressed", "mouseReleased"):
            self._send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def choose(self, selector: str, value: str) -> None:
        """Pick an option of a list as the list would (headless chromium draws no pop-up to click in)."""
        done = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return false;"
            f" e.focus(); e.value = {json.dumps(value)}; e.dispatchEvent(new Event('change', {{bubbles: true}}));"
            f" return e.value === {json.dumps(value)}; }})()")
        assert done, f"{selector} has no option {value!r}"

    def text(self, selector: str) -> str:
        return self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                             " return e ? e.innerText : null; })()")

    def screenshot(self, path: Path) -> Path:
        data = self._send("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))
        return path
