"""The Findings panel above the overview: ranked findings, sortable evidence, and links that open the
view they name (tab, window, marked row), in headless Chromium."""

from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect
from waits import figure_js, grid_js, present, until

from dashboard.app import create_app

pytestmark = pytest.mark.browser


def test_findings_panel_links_open_their_view(page: Page, serve, tmp_path, artifacts, console_errors):
    from test_findings import build_fixture

    build_fixture(tmp_path / "serving.sqlite")
    page.goto(serve(create_app(trace_dirs=[tmp_path])) + "/?note=15000%3Alook%20here&note=1000-2000%3Aa%2Bb")
    panel = page.locator("#findings-panel")
    expect(present(panel)).to_contain_text("padding-waste", timeout=30000)
    # above the overview cards, ranked by cost (the fixture's numbers, tests/test_findings.py)
    assert (
        page.evaluate(
            "() => document.querySelector('#findings-panel').compareDocumentPosition("
            "document.querySelector('#overview')) & Node.DOCUMENT_POSITION_FOLLOWING"
        )
        > 0
    )
    rules = panel.locator("details.finding summary b").all_inner_texts()
    assert rules == [
        "gpu-low-util",
        "padding-waste",
        "host-bound-steps",
        "sync-in-loop",
        "cuda-sync-api",
        "exposed-comm",
        "decode-no-graphs",
        "launch-bound",
        "cuda-sync-memcpy",
        "pageable-in-loop",
        "cuda-async-memcpy",
    ]
    expect(panel).to_contain_text("Nothing found by: gpu-starv, cuda-sync-memset")
    # each quiet rule's name shows its own sentence on hover
    assert panel.locator(".quiet-rule", has_text="gpu-starv").get_attribute("title").startswith("No GPU idle gaps over")
    # evidence rows: open one finding, its grid is sortable
    panel.locator("details.finding", has_text="padding-waste").locator("summary .sentence").click()
    grid = "dash_ag_grid.getApi('findings-panel-rows-1')"
    page.wait_for_function(grid_js("findings-panel-rows-1", "n === 2"), timeout=30000)
    assert page.evaluate(f"() => {grid}.getDisplayedRowAtIndex(0).data.phase") == "decode"
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts / "findings_panel.png"), full_page=False)
    page.locator("#findings-panel-rows-1 .ag-header-cell[col-id='waste_ns'] .ag-header-cell-label").click()
    page.wait_for_function(until(f"{grid}.getDisplayedRowAtIndex(0).data.phase === 'prefill'"), timeout=30000)

    # the host-bound finding's link opens the Dispatches tab on the worst step, zoomed and marked
    page.locator("#findings-panel-link-host-bound-steps").click()
    page.wait_for_function("() => window.location.search.includes('mark=dispatch')", timeout=30000)
    assert "tab=dispatches" in page.url and "t0_ns=10000" in page.url and "t1_ns=22000" in page.url
    # the page's notes go with it (the finding's own link has none)
    assert parse_qs(urlsplit(page.url).query)["note"] == ["1000-2000:a+b", "15000:look here"]
    expect(page.locator(".notes-list li .note-body")).to_have_text(["a+b", "look here"])
    expect(present(page.locator("#table-tabs .tab--selected"))).to_have_text("Dispatches", timeout=30000)
    page.wait_for_function(
        figure_js(
            "timeline",
            "Math.abs(gd.layout.xaxis.range[0] - 1e-5) < 1e-12 && Math.abs(gd.layout.xaxis.range[1] - 2.2e-5) < 1e-12",
        ),
        timeout=30000,
    )
    assert console_errors == []


def test_samples_findings_panel_screenshots(page: Page, serve, artifacts, console_errors):
    """The panel of three samples on one page, switched with the trace picker (a switch costs Chromium about
    half of a page load): the first finding of each, and a screenshot of each panel."""
    from pathlib import Path

    samples = Path(__file__).resolve().parents[2] / "sample_traces"
    cost = {  # the sync rules cost the GPU idle their calls can have caused, not their blocked host time
        "000_746bee52f7bbcc80_seed_summary.json": "decode-no-graphs · 2.76 s",
        "generated_seed_shaped_108k.sqlite": "decode-no-graphs · 417 ms",
        "nsys2026.2_2gpu_nccl_before.sqlite": "exposed-comm · 25.4 ms",
    }
    names = list(cost)
    page.goto(serve(create_app([samples / n for n in names])))
    panel = page.locator("#findings-panel")
    for i, name in enumerate(names):
        if i:
            page.click("#trace-picker")
            page.get_by_text(name, exact=True).click()
            expect(present(page.locator("#overview"), 60000)).to_contain_text(
                {1: "108,000", 2: "4,010"}[i], timeout=60000
            )
        first = panel.locator("details.finding summary").first  # this trace's first finding, not the last one's
        expect(present(first, 60000)).to_contain_text(cost[name], timeout=60000)
        # waits too: under load the panel was seen re-rendered between the line above and this read ('' once)
        expect(first.locator("b")).to_have_text(cost[name].split(" · ")[0])
        if name.endswith(".json"):  # a summary: rules that need intervals say so
            expect(panel).to_contain_text(
                "Not evaluated (needs event rows: a summary JSON holds totals only): host-bound-steps, launch-bound"
            )
            expect(panel).to_contain_text("Nothing found by: padding-waste")
        else:
            expect(panel).not_to_contain_text("needs event rows")
        page.evaluate("window.scrollTo(0, 0)")
        panel.screenshot(path=str(artifacts / f"findings_{Path(name).stem}.png"))
    assert console_errors == []
