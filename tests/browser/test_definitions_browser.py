"""What a user sees of issue 12's definitions, in headless Chromium: the busy source switch changes the
overview, graph-level graphs are kernel-table rows, the API tab groups by family, n/a instead of 0 %."""

import pytest
from playwright.sync_api import Page, expect
from waits import grid_js, present

from dashboard.app import create_app

from paths import DATA

pytestmark = pytest.mark.browser
CASES = DATA / "cases"


def test_busy_source_graph_rows_and_api_families(page: Page, serve, console_errors):
    url = serve(create_app([CASES / "c15.sqlite", CASES / "c27.sqlite"]))
    page.goto(url)
    overview = page.locator("#overview")
    expect(present(overview, 60000)).to_contain_text("GPU busy, kernel rows only", timeout=60000)  # c15: graphs counted
    expect(overview).to_contain_text("100.00 %")
    page.wait_for_function(
        grid_js("kernel-table", "api.getDisplayedRowAtIndex(0).data.name === 'CUDA graph 7'"), timeout=60000
    )
    page.locator("#busy-source").get_by_text("kernel rows only").click()
    expect(present(overview)).to_contain_text("20.00 %", timeout=30000)
    expect(overview).not_to_contain_text("GPU busy, kernel rows only")
    page.wait_for_function(grid_js("kernel-table", "n === 1"), timeout=60000)

    page.click("#trace-picker")
    page.get_by_text("c27.sqlite", exact=True).click()
    page.locator("#table-tabs").get_by_text("CUDA API calls", exact=True).click()
    page.locator("#api-group").get_by_text("per family", exact=False).click()
    grid = "dash_ag_grid.getApi('api-table')"
    page.wait_for_function(grid_js("api-table", "n === 3"), timeout=60000)
    fams = page.evaluate(
        f"() => {{ const o = {{}}; {grid}.forEachNode(n => o[n.data.name] = n.data.count); return o; }}"
    )
    assert fams == {"sync": 1, "launch": 5, "memcpy": 1}
    assert console_errors == []
