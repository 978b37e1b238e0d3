"""The compare page (/compare/?a=..&b=..) in headless Chromium."""

import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from dashboard.app import create_app
from dashboard.app.load_banner import POLL_MS
from dashboard.app.trace_files import trace_id

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from waits import figure_js, grid_js, present  # noqa: E402

from compare_fixtures import write_pair  # noqa: E402
from paths import nsys_trace  # noqa: E402

pytestmark = pytest.mark.browser

BEFORE = nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")
AFTER = nsys_trace("nsys2026.2_2gpu_nccl_after.sqlite")


def grid_rows(page: Page, grid_id: str, field: str) -> list:
    return page.evaluate(
        f"() => {{ const api = dash_ag_grid.getApi('{grid_id}'); const out = []; "
        f"api.forEachNodeAfterFilterAndSort(n => out.push(n.data.{field})); return out; }}"
    )


def wait_rows(page: Page, grid_id: str, n: int):
    page.wait_for_function(grid_js(grid_id, f"n === {n}"), timeout=30000)


def test_compare_page_from_a_link_when_its_first_answer_is_slower_than_a_poll(
    page: Page, serve, console_errors, tmp_path, monkeypatch
):
    """The pair's status line polls from the first paint; the page's own callback, slower here than the poll's
    period (a busy server), tells the poll which runs to wait for. A poll that ticked before then stopped for
    good (its next tick was gated on an answer that said nothing): the page stayed on its status line."""
    a, b = write_pair(tmp_path)
    app = create_app([a, b, BEFORE, AFTER])
    store = app.server.config["TRACE_STORE"]
    is_loaded = store.is_loaded

    def slow_is_loaded(trace_id):
        time.sleep(POLL_MS / 1000 * 2.4)
        return is_loaded(trace_id)

    url = serve(app)
    page.goto(f"{url}/compare/?{urlencode({'a': trace_id(a), 'b': trace_id(b)})}")  # the layout asks quickly
    monkeypatch.setattr(store, "is_loaded", slow_is_loaded)
    expect(present(page.locator("#cmp-cards .delta-card").first)).to_contain_text("+16.67 %", timeout=30000)
    assert page.locator("#cmp-load-status").is_hidden()
    assert console_errors == []


def test_compare_page_from_a_link(page: Page, serve, artifacts, console_errors, tmp_path):
    a, b = write_pair(tmp_path)
    url = serve(create_app([a, b, BEFORE, AFTER]))
    page.goto(f"{url}/compare/?{urlencode({'a': trace_id(a), 'b': trace_id(b)})}")
    expect(present(page.locator("#cmp-cards .delta-card").first)).to_contain_text("Regression gate", timeout=30000)
    expect(page.locator("#cmp-cards .delta-card").first).to_contain_text("+16.67 %")
    expect(page.locator("#cmp-cards")).to_contain_text("1.60 µs → 1.70 µs")
    wait_rows(page, "cmp-kernel-grid", 5)
    assert grid_rows(page, "cmp-kernel-grid", "name") == [
        "onlyA_kernel",
        "flash_fwd_kernel",
        "ncclDevKernel_AllReduce",
        "onlyB_kernel",
        "ampere_sgemm_128x64",
    ]
    wait_rows(page, "cmp-type-table", 4)
    assert grid_rows(page, "cmp-type-table", "tokens") == [512, 1, 3, 5]
    assert grid_rows(page, "cmp-phase-table", "matched_b_ns") == [900, 700]
    # sized to its 2 rows and header (AG Grid's auto height kept 150 px for the body: an empty band)
    assert page.locator("#cmp-phase-table").bounding_box()["height"] < 170
    page.wait_for_function(figure_js("cmp-step-figure", "gd._fullData.length === 2"), timeout=30000)
    names = page.evaluate(figure_js("cmp-step-figure", "gd._fullData.map(t => t.name)"))
    assert names == ["A (baseline)", "B (candidate)"]
    page.locator("#cmp-kernel-figure .ytick").first.wait_for(state="visible")
    page.locator("#cmp-kernel-grid").scroll_into_view_if_needed()  # AG Grid draws rows once on screen
    page.locator("#cmp-kernel-grid .ag-row").first.wait_for(state="visible")
    page.screenshot(path=str(artifacts / "compare-fixture.png"), full_page=True)

    # B from the picker: the address bar follows, so the link reopens this comparison
    page.click("#cmp-b")
    page.get_by_text(AFTER.name, exact=True).click()
    page.wait_for_function("() => location.search.includes('nsys2026.2_2gpu_nccl_after')", timeout=30000)
    assert f"a={trace_id(a).replace('@', '%40')}" in page.evaluate("() => location.search")

    page.goto(f"{url}/compare/?{urlencode({'a': trace_id(BEFORE), 'b': trace_id(AFTER)})}")
    wait_rows(page, "cmp-kernel-grid", 11)
    assert grid_rows(page, "cmp-kernel-grid", "name")[:2] == ["flash_fwd_kernel", "ncclDevKernel_SendRecv"]
    expect(page.locator("#cmp-alerts")).to_contain_text("Neither run has dispatch marks (CG_DISPATCH…)")
    expect(page.locator("#cmp-phase-section")).to_be_hidden()
    expect(page.locator("#cmp-cards .delta-card").first).to_contain_text("+2.29 %")
    page.locator("#cmp-kernel-grid").scroll_into_view_if_needed()
    page.locator("#cmp-kernel-grid .ag-row").first.wait_for(state="visible")
    page.screenshot(path=str(artifacts / "compare-nccl.png"), full_page=True)
    assert console_errors == []


def test_compare_link_and_bad_ids(page: Page, serve, console_errors, tmp_path):
    a, b = write_pair(tmp_path)
    url = serve(create_app([a, b]))
    page.goto(url)
    link = page.locator("#compare-link")
    expect(present(link)).to_have_attribute("href", f"compare/?{urlencode({'a': trace_id(a)})}", timeout=30000)
    link.click()
    expect(present(page.locator("#cmp-cards .delta-card").first)).to_contain_text("Regression gate", timeout=30000)
    assert page.evaluate("() => location.search") == "?" + urlencode({"a": trace_id(a), "b": trace_id(b)})
    expect(page.locator("#cmp-cards .delta-card").first).to_contain_text("+16.67 %")
    page.click("#cmp-swap")  # B becomes the baseline (its mix: decode 1/3/5): prefill is now the worst phase
    page.wait_for_function(
        f"() => location.search === '?{urlencode({'a': trace_id(b), 'b': trace_id(a)})}'", timeout=30000
    )
    expect(page.locator("#cmp-cards .delta-card").first).to_contain_text("900 ns → 1.00 µs+11.11 %")

    # the dashboard's phase threshold travels to the compare page and back to each run's dashboard link
    page.goto(f"{url}/?{urlencode({'trace': trace_id(a), 'threshold': 600})}")
    expect(present(link)).to_have_attribute(
        "href", f"compare/?{urlencode({'a': trace_id(a), 'threshold': 600})}", timeout=30000
    )
    link.click()
    expect(present(page.locator("#cmp-gate-note"))).to_contain_text(
        "Phase split for both runs: prefill when tokens >= 600.0 (set in the link).", timeout=30000
    )
    assert "threshold=600" in page.evaluate("() => location.search")
    assert "threshold=600" in page.get_attribute("#cmp-open-a", "href")

    page.goto(f"{url}/compare/?a=nope.sqlite%4012345678&threshold=-1")
    alerts = present(page.locator("#cmp-alerts"))
    expect(alerts).to_contain_text("Baseline: The link asks for trace 'nope.sqlite@12345678'", timeout=30000)
    expect(alerts).to_contain_text("Ignored threshold='-1' in the link: not a valid value; using the default.")
    expect(page.locator("#cmp-cards .delta-card").first).to_contain_text("Regression gate")
    assert console_errors == []
