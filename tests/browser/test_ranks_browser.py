"""The merged multi-rank view in headless Chromium: rank lanes and the clock notice."""

import re

import pytest
from playwright.sync_api import Page, expect
from waits import figure_js, present

from dashboard.analysis.ranks import RANKS_NOTICE
from dashboard.app import create_app
from dashboard.app.ranks import ranks_store

pytestmark = pytest.mark.browser

PAIR = ["nsys2026.2_2gpu_nccl_before.sqlite", "nsys2026.2_2gpu_nccl_after.sqlite"]


def test_ranks_view_lanes_notice_and_screenshot(page: Page, serve, artifacts, console_errors):
    from paths import nsys_trace

    store = ranks_store([nsys_trace(n) for n in PAIR])
    url = serve(create_app(store=store))
    page.goto(url)
    expect(present(page.locator("#alerts"))).to_contain_text(RANKS_NOTICE, timeout=30000)
    expect(page.locator("#trace-picker")).to_contain_text(f"2 ranks: {PAIR[0]} + {PAIR[1]}")
    expect(page.locator("#overview")).to_contain_text("7,597")  # 4,010 + 3,587 kernels
    page.wait_for_function(figure_js("timeline", "gd._fullLayout.yaxis._categories.length > 0"), timeout=30000)
    lanes = page.evaluate("() => document.querySelector('#timeline .js-plotly-plot')._fullLayout.yaxis._categories")
    # categories run bottom-up: rank 0 GPU 0 is the top GPU lane
    assert [lane for lane in lanes if re.fullmatch(r"rank \d · GPU \d", lane)] == [
        "rank 1 · GPU 1",
        "rank 1 · GPU 0",
        "rank 0 · GPU 1",
        "rank 0 · GPU 0",
    ]
    page.locator("#timeline").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "ranks_view.png"), full_page=True)
    assert console_errors == []
