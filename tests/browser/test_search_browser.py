"""The timeline search in the browser: the hand-counted occurrences of a small export, Next / Previous
(buttons, Enter, Shift+Enter) in time order, and a link that brings back the current one."""

import sys
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from waits import figure_js, present, until

from dashboard.app import create_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from search_fixture import ELEMENTWISE, write_search_fixture  # noqa: E402

pytestmark = pytest.mark.browser


def mark_in_link(page: Page, kind: str, s: int, e: int) -> None:
    page.wait_for_function(until(f"window.location.search.includes('mark={kind}:{s}-{e}')"), timeout=30000)


def test_search_counts_walks_in_time_order_and_the_link_brings_it_back(
    page: Page, browser, serve, tmp_path, artifacts, console_errors
):
    write_search_fixture(tmp_path / "search.sqlite")
    base = serve(create_app(trace_dirs=[tmp_path]))
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(base)
    box = present(page.locator("#timeline-search"))
    box.fill("elementwise")
    box.press("Enter")  # the search, and its first occurrence
    mark_in_link(page, *ELEMENTWISE[0])
    status = page.locator("#search-status")
    expect(status).to_have_text(
        "elementwise: 7 in the trace, 2 in view (5 kernels, 2 NVTX annotations)"
        " · at #1: elementwise phase at 0.000005 s"
    )
    page.wait_for_function(figure_js("timeline", "gd.data.some(t => t.name === 'search matches')"), timeout=30000)
    for i in range(1, 7):  # Next walks them in time order
        page.click("#search-next")
        mark_in_link(page, *ELEMENTWISE[i])
        page.wait_for_function(until(f"window.location.search.includes('hit={i + 1}')"), timeout=30000)
    page.click("#search-next")  # past the last: the first again
    mark_in_link(page, *ELEMENTWISE[0])
    box.press("Shift+Enter")  # back: the last
    mark_in_link(page, *ELEMENTWISE[6])
    page.click("#search-prev")
    mark_in_link(page, *ELEMENTWISE[5])
    expect(status).to_contain_text("· at #6: elementwise phase at 0.000085 s")
    drawn = page.evaluate(figure_js("timeline", "gd.data.find(t => t.name === 'search matches').y.length"))
    assert drawn == 2  # in the window [75,000, 105,000): the range [85,000, 95,000) and the kernel at 90,000
    page.screenshot(path=str(artifacts / "search_timeline.png"), full_page=False)

    link = page.url
    fresh = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
    fresh.goto(link)
    expect(present(fresh.locator("#search-status"))).to_contain_text("· at #6: elementwise phase at 0.000085 s")
    assert fresh.locator("#timeline-search").input_value() == "elementwise"
    fresh.wait_for_function(
        figure_js("timeline", "gd.data.find(t => t.name === 'search matches').y.length === 2"), timeout=30000
    )
    fresh.click("#search-next")
    fresh.wait_for_function(until("window.location.search.includes('mark=kernel:90000-92000')"), timeout=30000)

    box.fill("/(/")  # a bad regular expression: said under the box, nothing moves
    box.press("Enter")
    expect(status).to_have_text("Search: /(/ is not a regular expression RE2 reads: missing ): (.")
    assert console_errors == []
