"""Playwright on Debian's Chromium (never `playwright install`), and a Dash server per test."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from werkzeug.serving import make_server

# Debian's headless shell (Chromium's old headless mode, without the browser's own UI layers) when it is there:
# the same Blink and V8 draw the pages for less CPU than `chromium --headless` (docs/benchmarks.md, `make test`).
CHROMIUM = (
    os.environ.get("CHROMIUM_PATH")
    or shutil.which("chromium-headless-shell")
    or shutil.which("chromium")
    or "/usr/bin/chromium"
)
# Chromium keeps only the last --disable-features switch: ours would replace Playwright's own list (its
# chromiumSwitches: MediaRouter, OptimizationHints, PaintHolding, HttpsUpgrades… switched off for automation),
# so it carries that list too. The test_dashboard.py browser tests took 88 CPU-s against 92 with ours alone
# (two runs each, alternated).
PLAYWRIGHT_DISABLED_FEATURES = (
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable",
    "LensOverlay",
    "MediaRouter",
    "PaintHolding",
    "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "TcpPortRandomizationWin",
    "OptimizationHints",
    "NetworkTimeServiceQuerying",
    "AimEnabled",
    "PreconnectToSearch",
)
# One renderer per page, no spare one started beside it: the tests open only this server's pages (one origin),
# and Chromium then spends ~7 % less CPU per test (measured on the view-state tests).
DISABLED_FEATURES = (
    "IsolateOrigins",
    "site-per-process",
    "SpareRendererForSitePerProcess",
    *PLAYWRIGHT_DISABLED_FEATURES,
)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-quic",
    "--no-first-run",
    # No TurboFan: a test page lives seconds, and optimising its hot functions costs more CPU than
    # it saves (the browser tests took 9 % less CPU in all, back to back: 221 against 242 CPU-s).
    "--js-flags=--no-opt",
    "--disable-site-isolation-trials",
    "--disable-features=" + ",".join(DISABLED_FEATURES),
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
# page.wait_for_function polls at every animation frame unless told otherwise, which keeps Chromium producing
# frames while a test waits: every 50 ms instead (the keys and view-state tests took 59.1-59.6 against
# 61.3-62.9 CPU-s, alternated).
_wait_for_function = Page.wait_for_function


def _polled_wait_for_function(self, expression, *, arg=None, polling=None, timeout=None):
    return _wait_for_function(self, expression, arg=arg, polling=50 if polling is None else polling, timeout=timeout)


Page.wait_for_function = _polled_wait_for_function
# `make test` keeps both cores busy for its whole run: a lazily loaded component (dcc.Dropdown's chunk) can take
# longer than Playwright's 5 s default to appear, so assertions without their own timeout wait up to 20 s.
EXPECT_TIMEOUT_MS = 20_000
expect.set_options(timeout=EXPECT_TIMEOUT_MS)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS, "headless": True}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1500, "height": 1000}}


@pytest.fixture
def serve():
    """serve(app) -> 'http://127.0.0.1:<free port>'; shut down after the test."""
    servers = []

    def start(app):
        srv = make_server("127.0.0.1", 0, app.server, threaded=True)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        servers.append((srv, t))
        return f"http://127.0.0.1:{srv.server_port}"

    yield start
    for srv, t in servers:
        srv.shutdown()
        srv.server_close()
        t.join(timeout=5)


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def console_errors(page):
    """Console errors and uncaught page errors seen during the test."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors
