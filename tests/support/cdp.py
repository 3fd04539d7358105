"""tests/support/cdp.py - a headless Chromium driven over the DevTools
protocol (https://chromedevtools.github.io/devtools-protocol/), for the web
view's test: start Debian's chromium with a debugging port, open one page,
evaluate JavaScript in it, take screenshots, and collect what the page
reports as errors (console errors, uncaught exceptions, failed loads).

Uses websocket-client (Debian's python3-websocket) from /usr/bin/python3.
Every wait is bounded; the browser is stopped by its PID.
"""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

import websocket  # python3-websocket

import ports


def chromium_path():
    for name in ("chromium", "chromium-browser", "chromium-headless-shell"):
        p = shutil.which(name)
        if p:
            return p
    return None


def _free_port():
    return ports.free_port()


class Browser:
    """One headless Chromium with one page (a tab)."""

    def __init__(self, timeout=30.0):
        exe = chromium_path()
        if exe is None:
            raise RuntimeError("no chromium on PATH")
        self.dir = tempfile.mkdtemp(prefix="brim-chromium-")
        self.port = _free_port()
        self.log = open(os.path.join(self.dir, "chromium.log"), "w")
        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking",
             "--user-data-dir=" + os.path.join(self.dir, "profile"),
             "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=%d" % self.port,
             "--window-size=1100,900", "about:blank"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.errors = []
        self._id = 0
        deadline = time.monotonic() + timeout
        ws_url = None
        while ws_url is None:
            if self.proc.poll() is not None:
                raise RuntimeError("chromium exited %r: %s" % (
                    self.proc.returncode, self._log_tail()))
            try:
                with urllib.request.urlopen(
                        "http://127.0.0.1:%d/json/list" % self.port,
                        timeout=2) as r:
                    pages = [t for t in json.load(r) if t.get("type") == "page"]
                if pages:
                    ws_url = pages[0]["webSocketDebuggerUrl"]
            except OSError:
                pass
            if ws_url is None:
                if time.monotonic() > deadline:
                    raise RuntimeError("chromium's debugging port never "
                                       "answered: " + self._log_tail())
                time.sleep(0.2)
        self.ws = websocket.create_connection(ws_url, timeout=timeout)
        for method in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(method)

    def _log_tail(self):
        self.log.flush()
        with open(os.path.join(self.dir, "chromium.log")) as f:
            return f.read()[-2000:]

    def _event(self, msg):
        m, p = msg.get("method"), msg.get("params", {})
        if m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.errors.append("exception: %s %s" % (
                d.get("text"), d.get("exception", {}).get("description")))
        elif m == "Runtime.consoleAPICalled" and p.get("type") == "error":
            self.errors.append("console.error: %s" % [
                a.get("value", a.get("description")) for a in p.get("args", [])])
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            self.errors.append("log: %s %s" % (e.get("text"), e.get("url", "")))

    def call(self, method, timeout=30.0, **params):
        """Send METHOD with PARAMS; return its result (events seen on the
        way are recorded)."""
        self._id += 1
        mid = self._id
        self.ws.send(json.dumps({"id": mid, "method": method,
                                 "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            self.ws.settimeout(max(0.1, deadline - time.monotonic()))
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError("%s: %r" % (method, msg["error"]))
                return msg.get("result", {})
            self._event(msg)
            if time.monotonic() > deadline:
                raise TimeoutError(method)

    def navigate(self, url):
        self.call("Page.navigate", url=url)

    def eval(self, expr):
        """The value of the JavaScript expression EXPR in the page."""
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError("eval %r: %r" % (expr, r["exceptionDetails"]))
        return r.get("result", {}).get("value")

    def wait_for(self, expr, timeout=20.0, what=None):
        """Poll EXPR until it is truthy (at most TIMEOUT s); its value."""
        deadline = time.monotonic() + timeout
        while True:
            v = self.eval(expr)
            if v:
                return v
            if time.monotonic() > deadline:
                raise AssertionError("the page never showed %s (%s)" % (
                    what or expr, expr))
            time.sleep(0.1)

    def pump(self, seconds):
        """Take in the page's events for SECONDS (errors are recorded)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.ws.settimeout(max(0.05, end - time.monotonic()))
            try:
                self._event(json.loads(self.ws.recv()))
            except websocket.WebSocketTimeoutException:
                pass

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
