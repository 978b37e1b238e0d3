"""Playwright on Debian's Chromium (never `playwright install`), and a Dash server per test."""

from __future__ import annotations

import os
import shutil
import socket
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


# Every test page opens in one Chromium profile per worker, on the same few ports, so Chromium's disk cache and
# V8's code cache keep plotly.js, AG Grid and dash-renderer compiled from one test to the next (each test's own
# incognito context compiled them on every page; docs/benchmarks.md, `make test`, has what that saves).
# Isolation: the `context` fixture closes the test's pages and clears the cookies and the site storage of every
# origin served; each server closes its kept-alive connections, so no request of a later test reaches an app of
# an earlier one. Tests that need a browser without that cache use the `browser` fixture's contexts.
_PORTS: list[int] = []  # this worker's ports, by the order of the servers a test starts
_ORIGINS: set[str] = set()
_SITE_STORAGE = "local_storage,session_storage,indexeddb,cache_storage,service_workers,file_systems,websql"


@pytest.fixture(scope="session")
def _profile(playwright, browser_context_args, tmp_path_factory):
    profile = playwright.chromium.launch_persistent_context(
        str(tmp_path_factory.mktemp("chromium-profile")),
        executable_path=CHROMIUM,
        args=CHROMIUM_ARGS,
        headless=True,
        **browser_context_args,
    )
    yield profile
    profile.close()


@pytest.fixture
def context(_profile):
    keep = set(_profile.pages)
    yield _profile
    for page in _profile.pages:
        if page not in keep:
            page.close()
    _profile.clear_cookies()
    if _ORIGINS:
        blank = _profile.new_page()
        cdp = _profile.new_cdp_session(blank)
        for origin in _ORIGINS:
            cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": _SITE_STORAGE})
        cdp.detach()
        blank.close()


def _bind(app, i: int):
    """A server for ``app`` on this worker's i-th port (taken the first time from the system)."""
    if i < len(_PORTS):
        try:
            return make_server("127.0.0.1", _PORTS[i], app.server, threaded=True)
        except OSError:  # someone else holds it now: a new port for this slot
            pass
    srv = make_server("127.0.0.1", 0, app.server, threaded=True)
    _PORTS[i : i + 1] = [srv.server_port]
    return srv


@pytest.fixture
def serve():
    """serve(app) -> 'http://127.0.0.1:<port>'; shut down after the test, its connections closed."""
    servers = []

    def start(app):
        srv = _bind(app, len(servers))
        conns: set[socket.socket] = set()
        accept = srv.process_request

        def process_request(request, client_address):
            conns.add(request)
            accept(request, client_address)

        srv.process_request = process_request
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        servers.append((srv, t, conns))
        url = f"http://127.0.0.1:{srv.server_port}"
        _ORIGINS.add(url)
        return url

    yield start
    for srv, t, conns in servers:
        srv.shutdown()
        srv.server_close()
        for conn in list(conns):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed by its handler
                pass
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
