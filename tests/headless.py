"""A headless Debian chromium driven over its DevTools protocol (websocket-client), for tests
that must see a page as a browser renders it: load, evaluate, screenshot, console errors.

scripts/setup-test.sh (`make test`) installs chromium when it is missing; KRAFTCHECK_CHROMIUM
names another binary.  The browser runs with a fresh profile, no network services and no sandbox (it runs as
root in CI containers).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--remote-debugging-port=0")


class BrowserError(RuntimeError):
    pass


def find_chromium() -> str | None:
    env = os.environ.get("KRAFTCHECK_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Chromium:
    """One headless browser with one page.  Use as a context manager."""

    def __init__(self, exe: str, *, width: int = 1280, height: int = 900,
                 timeout: float = 120.0) -> None:
        import websocket  # websocket-client (dev extra)

        self.timeout = timeout
        self.profile = Path(tempfile.mkdtemp(prefix="kraftcheck-chromium-"))
        self.log = open(self.profile / "chromium.log", "wb")
        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
             "about:blank"], stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.is_file() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise BrowserError(f"chromium did not start (exit {self.proc.returncode}); "
                                   f"its log: {self.profile / 'chromium.log'}")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout) as r:
            pages = [t for t in json.load(r) if t.get("type") == "page"]
        if not pages:
            self.close()
            raise BrowserError("chromium has no page target")
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=timeout,
                                              suppress_origin=True)
        self.ids = itertools.count(1)
        self.events: list[dict] = []
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def call(self, method: str, **params) -> dict:
        """Send one DevTools command and wait for its result (events are kept in .events)."""
        msg_id = next(self.ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise BrowserError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)
        raise BrowserError(f"{method}: no answer within {self.timeout}s")

    def wait_event(self, method: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            for i, e in enumerate(self.events):
                if e["method"] == method:
                    return self.events.pop(i)
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.events.append(msg)
        raise BrowserError(f"no {method} within {self.timeout}s")

    def open(self, url: str) -> None:
        """Navigate and wait until the page (and its images) have loaded."""
        r = self.call("Page.navigate", url=url)
        if r.get("errorText"):
            raise BrowserError(f"{url}: {r['errorText']}")
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise BrowserError(f"{expression[:60]}...: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def screenshot(self, path: Path) -> bytes:
        """A PNG of the whole page (beyond the viewport), written to path."""
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png",
                                          captureBeyondViewport=True)["data"])
        Path(path).write_bytes(data)
        return data

    def console_errors(self) -> list[str]:
        """Uncaught exceptions, console.error/assert calls and error log entries so far."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                out.append(p.get("exceptionDetails", {}).get("text", "exception"))
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error",
                                                                                   "assert"):
                out.append(" ".join(str(a.get("value", a.get("description", "")))
                                    for a in p.get("args", [])))
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"{p['entry'].get('text')} ({p['entry'].get('url', '')})")
        return out

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            try:
                ws.send(json.dumps({"id": next(self.ids), "method": "Browser.close"}))
            except Exception:
                pass
            ws.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
