"""A trace that takes long to load: the page says which stage runs (and its rows) until the views arrive."""

import re
import shutil
import sys
import threading
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

import dashboard.app as dashboard_app
from dashboard.app import create_app
from dashboard.app.store import TraceStore
from dashboard.data.trace import load_trace
from dashboard.errors import TraceFormatError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from waits import present  # noqa: E402

from paths import SAMPLES  # noqa: E402

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/shots27")
DAMAGED = "slow.sqlite: the SQLite file is damaged or truncated (database disk image is malformed)"


def slow_app(tmp_path, monkeypatch, loader):
    """An app over one copy of the 4,010-kernel sample whose page is sent before its trace is read (as a big
    trace's is), loaded by ``loader``."""
    monkeypatch.setattr(dashboard_app, "QUICK_LOAD_BYTES", 0)
    d = tmp_path / "traces"
    d.mkdir()
    shutil.copy(SAMPLES / "nsys2026.2_2gpu_nccl_before.sqlite", d / "slow.sqlite")
    return create_app(store=TraceStore(trace_dirs=[d], loader=loader))


def polls(page: Page) -> list:
    """The poll requests the page sends (the load status line's callback)."""
    sent = []
    page.on("request", lambda r: sent.append(r) if "load-poll.n_intervals" in (r.post_data or "") else None)
    return sent


def test_a_slow_load_shows_its_stage_then_the_views_and_stops_polling(
    page: Page, serve, tmp_path, monkeypatch, console_errors
):
    at_kernels, release = threading.Event(), threading.Event()

    def loader(path, *, dispatch_prefix, cache, progress):
        progress("names")
        progress("kernels and CUDA API calls", rows=(("kernels", 4010),))
        at_kernels.set()
        assert release.wait(60)
        progress("summary")
        return load_trace(path, dispatch_prefix=dispatch_prefix, cache=cache)

    page.set_viewport_size({"width": 1600, "height": 1000})
    sent = polls(page)
    page.goto(serve(slow_app(tmp_path, monkeypatch, loader)))
    status = present(page.locator("#load-status"))
    expect(status).to_have_text(
        re.compile(r"^Loading slow\.sqlite: reading kernels and CUDA API calls \(4,010 kernels\) · \d+\.\d s$")
    )
    assert at_kernels.is_set()
    expect(page.locator("#alerts .alert-error")).to_have_count(0)
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "mid_load.png"))
    release.set()
    expect(status).to_be_hidden()
    expect(page.locator("#overview")).to_contain_text("4,010", timeout=60000)
    page.locator("#timeline .js-plotly-plot .main-svg").first.wait_for(state="visible", timeout=60000)
    page.screenshot(path=str(SHOTS / "after_load.png"))
    assert len(sent) >= 1
    count = len(sent)
    page.wait_for_timeout(1500)  # three poll periods: the poll is off once the trace is in memory
    assert len(sent) == count
    assert console_errors == []


def test_a_load_that_fails_shows_the_error_and_the_status_line_goes(
    page: Page, serve, tmp_path, monkeypatch, console_errors
):
    at_names, release = threading.Event(), threading.Event()

    def loader(path, *, dispatch_prefix, cache, progress):
        progress("names")
        at_names.set()
        assert release.wait(60)
        raise TraceFormatError(DAMAGED)

    page.goto(serve(slow_app(tmp_path, monkeypatch, loader)))
    status = present(page.locator("#load-status"))
    expect(status).to_have_text(re.compile(r"^Loading slow\.sqlite: reading names · \d+\.\d s$"))
    release.set()
    expect(present(page.locator("#alerts .alert-error"))).to_have_text(DAMAGED, timeout=30000)
    expect(status).to_be_hidden()
    assert console_errors == []


def test_a_slow_load_shows_the_kernel_preview_until_the_views_replace_it(
    page: Page, serve, tmp_path, monkeypatch, console_errors
):
    """Issue 27: the overview and a coarse timeline from the kernel rows' times while the rest loads."""
    from dashboard.analysis.preview import load_preview

    at_preview, release = threading.Event(), threading.Event()

    def loader(path, *, dispatch_prefix, cache, progress, preview):
        progress("kernels and CUDA API calls", rows=(("kernels", 4010),))
        k = load_trace(path).bundle.kernels
        preview(load_preview(k["start_ns"], k["end_ns"], k["device_id"]))
        at_preview.set()
        assert release.wait(60)
        return load_trace(path, dispatch_prefix=dispatch_prefix, cache=cache)

    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(serve(slow_app(tmp_path, monkeypatch, loader)))
    status = present(page.locator("#load-status"))
    cards = page.locator("#overview .card")
    expect(cards.first).to_contain_text("Kernel span", timeout=30000)
    expect(page.locator("#overview")).to_contain_text("Any GPU busy285.206 ms")
    expect(page.locator("#overview")).to_contain_text("Busy per GPU2 GPUs")
    expect(page.locator("#timeline .gtitle")).to_have_text("GPU timeline: preview while the trace loads")
    expect(page.locator("#timeline")).to_contain_text("GPU 1")
    expect(status).to_contain_text("Loading slow.sqlite: reading kernels and CUDA API calls (4,010 kernels)")
    # the preview is the loading trace's own: not dimmed as what another trace left on the page is
    seen = "e => { let o = 1; for (let x = e; x; x = x.parentElement) o *= +getComputedStyle(x).opacity; return o; }"
    page.wait_for_timeout(300)  # the dimming's transition
    assert page.locator("#overview").evaluate(seen) == 1
    assert page.locator("#timeline").evaluate(seen) == 1
    assert page.locator("#gantt").evaluate(seen) == 0.45
    expect(page.locator("#lane-controls")).to_be_hidden()  # which lanes the trace has is not known yet
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "preview.png"))
    release.set()
    expect(status).to_be_hidden(timeout=60000)
    expect(page.locator("#overview")).to_contain_text("Any GPU busy285.206 ms", timeout=60000)
    expect(page.locator("#overview")).not_to_contain_text("Kernel span")  # the preview's cards are gone
    expect(page.locator("#timeline .gtitle")).not_to_contain_text("preview", timeout=60000)
    expect(page.locator("#lane-controls")).to_be_visible()
    assert [t.strip() for t in page.locator("#timeline-lanes label").all_inner_texts()] == [
        "NVTX ranges",  # no NVTX marks in this trace: no box for them
        "GPU busy / idle",
        "kernels by stream (when zoomed in)",
        "memcpy/memset",
    ]
    page.screenshot(path=str(SHOTS / "preview_replaced.png"))
    assert console_errors == []
