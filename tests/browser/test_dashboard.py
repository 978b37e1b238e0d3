"""What a user sees and clicks, in headless Chromium."""

import time
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect
from waits import figure_js, grid_js, present, until, zoom

from dashboard.app import create_app
from dashboard.app.components import NO_MATCH, NO_ROWS
from dashboard.app.trace_files import trace_id

pytestmark = pytest.mark.browser


def samples_dir():
    from pathlib import Path

    return Path(__file__).resolve().parents[2] / "sample_traces"


def choose_trace(page: Page, name: str):
    page.click("#trace-picker")
    page.get_by_text(name, exact=True).click()


def open_trace(page: Page, serve, name: str):
    """Open the samples' page of trace ``name`` from its link (the picker is tested where a test picks)."""
    from urllib.parse import quote

    app = create_app(trace_dirs=[samples_dir()])
    base = serve(app)
    tid = next(t for t in app.server.config["TRACE_STORE"].listed_ids() if t.startswith(name + "@"))
    page.goto(f"{base}/?trace={quote(tid)}")
    return base


def test_seed_gantt_phases_sorting_threshold_and_the_sort_link(page: Page, serve, browser, artifacts, console_errors):
    """One page of the seed summary (each page load costs ~4 CPU-s): the Gantt, cards and kernel table; a sort
    that travels in the link to a new browser; a threshold that moves dispatches between phases."""
    external = []
    page.on(
        "request",
        lambda r: None if r.url.startswith(("http://127.0.0.1", "data:", "blob:")) else external.append(r.url),
    )
    url = serve(create_app(trace_dirs=[samples_dir()]))
    t0 = time.monotonic()
    page.goto(url)
    page.locator("#gantt .legendtext").first.wait_for(state="visible", timeout=30000)
    page.wait_for_function(grid_js("kernel-table", "n === 20"), timeout=30000)
    load_s = time.monotonic() - t0
    page.locator("#kernel-table").scroll_into_view_if_needed()  # AG Grid draws rows once on screen
    page.locator("#kernel-table .ag-row").first.wait_for(state="visible", timeout=30000)

    names = page.evaluate(figure_js("gantt", "gd._fullData.map(t => t.name)"))
    assert names == ["prefill (42)", "decode (96)"]
    legend = page.locator("#gantt .legendtext").all_text_contents()
    assert legend == ["prefill (42)", "decode (96)"]
    expect(page.locator("#overview")).to_contain_text("17.458 s")
    expect(page.locator("#overview")).to_contain_text("97.38 %")
    expect(page.locator("#threshold-hint")).to_have_text("auto: 47.2")

    api = "dash_ag_grid.getApi('kernel-table')"
    first = lambda field: page.evaluate(f"() => {api}.getDisplayedRowAtIndex(0).data.{field}")  # noqa: E731
    assert first("name") == "device_kernel"  # sorted by total time, descending
    page.locator("#kernel-table .ag-header-cell[col-id='count'] .ag-header-cell-label").click()
    page.wait_for_function(until(f"{api}.getDisplayedRowAtIndex(0).data.count === 184"))
    assert first("name") == "sm120_fp8_fp4_gemm_1d1d_impl"  # ascending by count: 184 calls first
    page.wait_for_function("() => window.location.search.includes('sort=count')", timeout=30000)
    ascending_url = page.url
    page.locator("#kernel-table .ag-header-cell[col-id='count'] .ag-header-cell-label").click()
    page.wait_for_function(until(f"{api}.getDisplayedRowAtIndex(0).data.count === 15921"))
    # What the cells show, not only the row data: formatted by the column's unit (a formatter that throws in
    # dash-ag-grid's sandbox leaves the raw ns value under a "ms" header).
    row0 = page.locator("#kernel-table .ag-center-cols-container .ag-row[row-index='0']")
    expect(row0.locator(".ag-cell[col-id='count']")).to_have_text("15,921")
    expect(row0.locator(".ag-cell[col-id='total_ns']")).to_have_text("1,656.972")  # 1656972125 ns in ms
    expect(row0.locator(".ag-cell[col-id='mean_ns']")).to_have_text("104.07")  # µs
    expect(row0.locator(".ag-cell[col-id='kernel_pct']")).to_have_text("n/a")  # a summary has top kernels only
    # a third click sorts ascending again, never unsorted: the link holds a sort, so the screen always has one
    page.locator("#kernel-table .ag-header-cell[col-id='count'] .ag-header-cell-label").click()
    page.wait_for_function(until(f"{api}.getDisplayedRowAtIndex(0).data.count === 184"))
    page.wait_for_function("() => new URLSearchParams(location.search).get('sort') === 'count'", timeout=30000)

    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(artifacts / "seed_dashboard.png"), full_page=True)
    (artifacts / "page_load_seconds.txt").write_text(f"seed {load_s:.2f}\n")

    # the ascending sort's link opens sorted in a new browser; there the dropdowns' code never arrives (a big
    # trace's load can hold it for seconds): their slots keep the header's controls where they are
    header = "() => [...document.querySelectorAll('.controls > label')].map(l => [l.offsetWidth, l.offsetHeight])"
    drawn_header = page.evaluate(header)
    other = browser.new_context(viewport={"width": 1500, "height": 1000})
    p2 = other.new_page()
    p2.route("**/async-dropdown.js*", lambda route: route.abort())
    p2.goto(ascending_url)
    p2.locator("#gantt .legendtext").first.wait_for(state="visible", timeout=30000)
    p2.locator("#kernel-table").scroll_into_view_if_needed()
    p2.wait_for_function(grid_js("kernel-table", "n === 20"), timeout=30000)
    p2.wait_for_function(until(f"{api}.getDisplayedRowAtIndex(0).data.count === 184"), timeout=30000)
    counts = p2.evaluate(
        f"() => {{ const out = []; {api}.forEachNodeAfterFilterAndSort(n => out.push(n.data.count)); return out; }}"
    )
    assert counts == sorted(counts)
    assert p2.locator("#trace-picker").count() == 0 and p2.evaluate(header) == drawn_header
    other.close()

    # The seed summary's "timeline" is a bar chart of NVTX totals (x: union time, not session time): a
    # relayout of it is no zoom window (the fresh-clone QA found a drag written into the link as t0/t1).
    page.wait_for_function(figure_js("timeline", "gd._fullLayout.xaxis.fixedrange === true"), timeout=30000)
    page.evaluate(figure_js("timeline", "Plotly.relayout(gd, {'xaxis.range': [1, 2]}) && true"))
    page.fill("#phase-threshold", "1000")
    page.press("#phase-threshold", "Enter")
    expect(present(page.locator("#gantt .legendtext").first)).to_have_text("prefill (40)", timeout=30000)
    assert page.locator("#gantt .legendtext").all_text_contents() == ["prefill (40)", "decode (98)"]
    page.wait_for_function("() => location.search.includes('threshold=1000')", timeout=30000)
    assert "t0_ns" not in page.url and "t1_ns" not in page.url
    assert console_errors == []
    assert external == []


def test_nvtx_sample_timeline_zoom_follows_gantt_and_a_copied_link_reproduces_the_view(
    page: Page, serve, browser, artifacts, console_errors
):
    open_trace(page, serve, "nsys2022.4_cpu_llm_server_nvtx.sqlite")
    expect(present(page.locator("#gantt .legendtext").first)).to_have_text("prefill (3)", timeout=30000)
    page.locator("#timeline .legendtext").first.wait_for(state="visible")
    # both figures drawn before the Gantt is zoomed: the timeline follows (the server redraws it at the window)
    page.wait_for_function(figure_js("timeline", "gd._fullLayout.xaxis.range.length === 2"), timeout=30000)
    lanes = page.evaluate(figure_js("timeline", "gd.layout.yaxis.categoryarray"))
    assert "NVTX marks" in lanes and any("L1" in lane for lane in lanes)
    # a CPU-only trace: its kernel table (the open tab) says why it is empty
    expect(present(page.locator("#kernel-table .ag-overlay-no-rows-center"))).to_have_text(NO_ROWS["kernels"])
    # its NVTX ranges' GPU overlap was never measured: "—" in both overlap cells, never 0 or n/a
    page.locator("#table-tabs").get_by_text("NVTX ranges", exact=True).click()
    row = page.locator("#nvtx-table .ag-center-cols-container .ag-row[row-index='0']")
    expect(present(row.locator(".ag-cell[col-id='overlap_pct']"))).to_have_text("—")
    assert row.locator(".ag-cell[col-id='gpu_overlap_ns']").inner_text() == "—"
    zoom(page, "gantt", 0.03, 0.05)
    page.wait_for_function(figure_js("timeline", "Math.abs(gd.layout.xaxis.range[0] - 0.03) < 1e-9"), timeout=30000)
    assert page.evaluate(figure_js("timeline", "gd.layout.xaxis.range")) == [0.03, 0.05]
    # the zoom's round (state, link, both views redrawn at the window) is over before the next zoom: a
    # figure arriving late would otherwise replace the range a programmatic relayout set
    page.wait_for_function(
        "() => location.search.includes('t0_ns=30000000') && "
        "!document.querySelector('[data-dash-is-loading=\"true\"]')",
        timeout=30000,
    )
    zoom(page, "timeline", 0.04, 0.06)
    page.wait_for_function(figure_js("gantt", "Math.abs(gd.layout.xaxis.range[0] - 0.04) < 1e-9"), timeout=30000)
    page.screenshot(path=str(artifacts / "nvtx_sample_zoomed.png"), full_page=True)
    page.wait_for_function(
        "() => location.search.includes('t0_ns=40000000') && "
        "!document.querySelector('[data-dash-is-loading=\"true\"]')",
        timeout=30000,
    )

    # a copied link reproduces the view in a new browser (on the same page: one page load fewer)
    page.fill("#phase-threshold", "2")
    page.press("#phase-threshold", "Enter")
    expect(present(page.locator("#gantt .legendtext").first)).to_contain_text("of 23)", timeout=30000)
    page.locator("#timeline-lanes").get_by_text("NVTX marks").click()
    page.locator("#table-tabs").get_by_text("Idle gaps", exact=True).click()
    zoom(page, "timeline", 0.03, 0.05)
    page.wait_for_function("() => window.location.search.includes('t0_ns=30000000')", timeout=30000)
    url = page.url
    assert "threshold=2" in url and "lanes=nvtx,gpu,streams,memops" in url and "tab=gaps" in url
    assert "trace=nsys2022.4_cpu_llm_server_nvtx.sqlite%40" in url and "/" not in url.split("?")[1]
    page.click("#copy-link")
    expect(page.locator("#copy-link")).to_have_text("Link copied")
    assert page.evaluate("window.tracedashLastCopiedLink") == url
    # a browser that refuses both ways of copying gets told so (the Clipboard API answers later), not a console error
    page.evaluate(
        "() => { navigator.clipboard.writeText = () => Promise.reject(new DOMException('denied', 'NotAllowedError'));"
        " document.execCommand = () => false; }"
    )
    page.click("#copy-link")
    expect(page.locator("#copy-link")).to_have_text("Copy failed")
    expect(page.locator("#copy-link")).to_have_text("Copy link")  # a few seconds later: the link may change

    other = browser.new_context(viewport={"width": 1500, "height": 1000})
    p2 = other.new_page()
    errors2 = []
    p2.on("console", lambda m: errors2.append(m.text) if m.type == "error" else None)
    p2.goto(url)
    # the link's window 0.03-0.05 s shows 8 of the 23 prefill dispatches (the legend says both)
    expect(present(p2.locator("#gantt .legendtext").first)).to_have_text("prefill (8 in view of 23)", timeout=30000)
    assert p2.input_value("#phase-threshold") == "2"
    p2.wait_for_function(figure_js("timeline", "Math.abs(gd.layout.xaxis.range[0] - 0.03) < 1e-9"), timeout=30000)
    p2.wait_for_function(figure_js("gantt", "Math.abs(gd.layout.xaxis.range[1] - 0.05) < 1e-9"), timeout=30000)
    names = p2.evaluate(figure_js("timeline", "gd._fullData.map(t => t.name)"))
    assert not any(n.startswith("NVTX marks") for n in names) and any(n.startswith("NVTX ranges") for n in names)
    assert p2.locator("#table-tabs .tab--selected").inner_text() == "Idle gaps"
    assert p2.url == url  # opening a link does not rewrite it
    other.close()
    assert console_errors == [] and errors2 == []


def test_two_gpu_trace_shows_device_lanes_and_hidden_gpus_and_kernel_filter_travel_in_the_link(
    page: Page, serve, browser, artifacts, console_errors
):
    open_trace(page, serve, "nsys2026.2_2gpu_nccl_before.sqlite")
    expect(present(page.locator("#overview"))).to_contain_text("4,010", timeout=30000)
    expect(page.locator("#gantt")).to_contain_text("No dispatch marks found")
    page.wait_for_function(
        figure_js("timeline", "gd.layout.yaxis.categoryarray && gd.layout.yaxis.categoryarray.includes('GPU 1')"),
        timeout=30000,
    )
    lanes = page.evaluate(figure_js("timeline", "gd.layout.yaxis.categoryarray"))
    assert lanes[:2] == ["GPU 1", "GPU 0"]  # bottom-up order of a categorical axis
    # no card hint is cut off at 1600 px: the 179-character input rows hint spans two columns
    cut = page.evaluate(
        "() => [...document.querySelectorAll('#overview .card-hint')]"
        ".filter(h => h.scrollHeight > h.clientHeight + 1).map(h => h.innerText)"
    )
    assert cut == []
    assert page.locator("#overview .card.span-2").count() == 1
    # a panel that does not apply says so in one line (no empty figure box)
    expect(page.locator("#phase-figure-note")).to_contain_text("Where step time goes: no dispatches in this trace")
    expect(page.locator("#phase-figure-box")).to_be_hidden()
    expect(page.locator("#kernel-table .ag-row")).to_have_count(11, timeout=30000)  # the open tab's rows, drawn
    page.locator("#kernel-table").scroll_into_view_if_needed()  # AG Grid paints its rows once they are on screen
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts / "two_gpu.png"), full_page=True)

    # hidden GPUs and the kernel filter travel in the link (on the same page: one page load fewer)
    page.locator("#hide-devices").get_by_text("GPU 1").click()
    page.wait_for_function("() => window.location.search.includes('hide_devices=1')", timeout=30000)
    page.wait_for_function(figure_js("timeline", "!gd.layout.yaxis.categoryarray.includes('GPU 1')"), timeout=30000)
    page.fill("#kernel-filter", "flash")
    page.press("#kernel-filter", "Enter")
    page.wait_for_function("() => window.location.search.includes('kernel=flash')", timeout=30000)
    url = page.url
    other = browser.new_context(viewport={"width": 1500, "height": 1000})
    p2 = other.new_page()
    p2.goto(url)
    expect(present(p2.locator("#overview"))).to_contain_text("4,010", timeout=30000)
    p2.wait_for_function(
        figure_js(
            "timeline",
            "gd.layout.yaxis.categoryarray.includes('GPU 0') && !gd.layout.yaxis.categoryarray.includes('GPU 1')",
        ),
        timeout=30000,
    )
    assert p2.input_value("#kernel-filter") == "flash"
    p2.locator("#kernel-table").scroll_into_view_if_needed()
    p2.wait_for_function(grid_js("kernel-table", "n === 1"), timeout=30000)
    other.close()
    # a filter that hides every row says so (not why the trace could have none)
    page.fill("#kernel-filter", "no-such-kernel")
    page.press("#kernel-filter", "Enter")
    page.locator("#kernel-table").scroll_into_view_if_needed()
    expect(present(page.locator("#kernel-table .ag-overlay-no-matching-rows-center"))).to_have_text(NO_MATCH["kernels"])
    assert console_errors == []


def test_bad_trace_shows_alert_and_server_keeps_serving(page: Page, serve, tmp_path, console_errors):
    bad = tmp_path / "not_a_trace.sqlite"
    bad.write_text("hello")
    base = serve(create_app([bad, samples_dir() / "000_746bee52f7bbcc80_seed_summary.json"]))
    page.goto(base)  # no trace in the link: the first file that reads as a trace, never the broken one
    expect(present(page.locator("#gantt .legendtext").first)).to_have_text("prefill (42)", timeout=30000)
    expect(page.locator("#trace-picker")).to_contain_text("000_746bee52f7bbcc80_seed_summary.json")
    page.goto(f"{base}/?trace={quote(trace_id(bad))}")  # a link to it: its error
    expect(present(page.locator("#alerts .alert"))).to_contain_text(
        "not_a_trace.sqlite: not a SQLite database (no 'SQLite format 3' header)", timeout=30000
    )
    choose_trace(page, "000_746bee52f7bbcc80_seed_summary.json")
    expect(present(page.locator("#gantt .legendtext").first)).to_have_text("prefill (42)", timeout=30000)
    expect(page.locator("#alerts .alert")).to_have_count(0)
    assert console_errors == []


def test_108k_zoom_fetches_detail_and_row_clicks_zoom_to_their_gap_and_dispatch(
    page: Page, serve, artifacts, console_errors
):
    """One page of the 108k sample (a page load costs ~5 CPU-s here): a zoom fetches kernel detail and the
    Gantt follows; a clicked idle-gap row zooms the timeline to that gap; a clicked dispatch row writes a
    window around that dispatch into the link."""
    open_trace(page, serve, "generated_seed_shaped_108k.sqlite")
    expect(present(page.locator("#overview"))).to_contain_text("108,000", timeout=30000)
    page.wait_for_function(
        figure_js("timeline", "gd._fullData.some(t => t.name.startsWith('GPU busy fraction'))"), timeout=30000
    )
    # the level-of-detail status line, as drawn: inside the figure, on one line at this width
    status = page.evaluate(
        figure_js(
            "timeline",
            "(() => { const i = gd.layout.annotations.findIndex(a => a.name === "
            "'status'); const el = gd.querySelectorAll('.annotation')[i]; "
            "const r = el.getBoundingClientRect(), f = gd.getBoundingClientRect(); "
            "return {text: gd.layout.annotations[i].text, left: r.left - f.left, "
            "right: r.right - f.left, width: f.width}; })()",
        )
    )
    assert status["text"].startswith("108,000 kernels in view") and "<br>" not in status["text"]
    assert 0 <= status["left"] and status["right"] <= status["width"]
    zoom(page, "timeline", 1.0, 1.02)
    page.wait_for_function(
        figure_js("timeline", "gd._fullData.some(t => t.name === 'GPU busy (kernels)')"), timeout=30000
    )
    page.wait_for_function(figure_js("gantt", "Math.abs(gd.layout.xaxis.range[0] - 1.0) < 1e-9"), timeout=30000)
    marks = page.evaluate(figure_js("timeline", "gd._fullData.reduce((n, t) => n + (t.x ? t.x.length : 0), 0)"))
    assert 0 < marks <= 5000
    assert page.evaluate(figure_js("timeline", "gd.layout.xaxis.range")) == [1.0, 1.02]
    page.screenshot(path=str(artifacts / "generated_zoomed.png"))
    page.wait_for_function(
        "() => location.search.includes('t0_ns=1000000000') && "
        "!document.querySelector('[data-dash-is-loading=\"true\"]')",
        timeout=30000,
    )

    # an idle-gap row (the tables cover the whole trace, whatever the zoom)
    page.locator("#table-tabs").get_by_text("Idle gaps", exact=True).click()
    page.wait_for_function(grid_js("gap-table", "n > 100"), timeout=30000)
    top = page.evaluate("() => dash_ag_grid.getApi('gap-table').getDisplayedRowAtIndex(0).data")
    assert top["duration_ns"] >= 10_000 and top["cause"]
    page.locator("#gap-table").scroll_into_view_if_needed()
    page.locator("#gap-table .ag-center-cols-container .ag-row[row-index='0'] .ag-cell").nth(3).click()
    s, e = top["start_ns"] / 1e9, top["end_ns"] / 1e9
    page.wait_for_function(
        figure_js(
            "timeline",
            f"gd.layout.xaxis.range[0] < {s} && gd.layout.xaxis.range[1] > {e}"
            f" && gd.layout.xaxis.range[1] - gd.layout.xaxis.range[0] < {4 * (e - s) + 1e-5}",
        ),
        timeout=30000,
    )
    page.wait_for_function(figure_js("gantt", f"gd.layout.xaxis.range[0] < {s}"), timeout=30000)
    expect(page.locator("#gap-causes")).to_contain_text("GPU idle by host cause")
    page.screenshot(path=str(artifacts / "idle_gaps.png"), full_page=True)

    # a dispatch row
    page.locator("#table-tabs").get_by_text("Dispatches", exact=True).click()
    page.locator("#dispatch-table").scroll_into_view_if_needed()
    page.wait_for_function(grid_js("dispatch-table", "n === 144"), timeout=30000)
    row = page.evaluate("() => dash_ag_grid.getApi('dispatch-table').getDisplayedRowAtIndex(5).data")
    page.locator("#dispatch-table .ag-center-cols-container .ag-row[row-index='5'] .ag-cell").nth(1).click()
    page.wait_for_function(
        f"() => window.location.search.includes('t0_ns=') && "
        f"Number(new URLSearchParams(window.location.search).get('t0_ns')) < {row['start_ns']} && "
        f"Number(new URLSearchParams(window.location.search).get('t1_ns')) > {row['end_ns']}",
        timeout=30000,
    )
    assert console_errors == []


def test_back_restores_the_previous_view_and_bad_links_explain_themselves(page: Page, serve, console_errors):
    base = serve(create_app(trace_dirs=[samples_dir()]))
    page.goto(base)
    expect(present(page.locator("#gantt .legendtext").first)).to_have_text("prefill (42)", timeout=30000)
    page.fill("#phase-threshold", "-5")  # refused with a notice in the page's words; the next valid value clears it
    page.press("#phase-threshold", "Enter")
    expect(present(page.locator("#state-notice"))).to_contain_text(
        "“Prefill when tokens ≥” takes a token count from 0 to 10^15 (empty: the automatic split), not -5: keeping "
        "the automatic split.",
        timeout=30000,
    )
    page.fill("#phase-threshold", "1000")
    page.press("#phase-threshold", "Enter")
    expect(present(page.locator("#gantt .legendtext").first)).to_have_text("prefill (40)", timeout=30000)
    expect(page.locator("#state-notice .alert")).to_have_count(0)
    page.wait_for_function("() => window.location.search.includes('threshold=1000')")
    page.go_back()
    expect(present(page.locator("#gantt .legendtext").first)).to_have_text("prefill (42)", timeout=30000)
    assert page.input_value("#phase-threshold") == ""
    page.goto(base + "/?tab=nope&threshold=-4&trace=gone.sqlite%4012345678&v=1")
    notice = page.locator("#state-notice")
    expect(present(notice)).to_contain_text("Ignored tab='nope'", timeout=30000)
    expect(notice).to_contain_text("threshold='-4'")
    expect(notice).to_contain_text("'gone.sqlite@12345678', which is not served here")
    expect(present(page.locator("#gantt .legendtext").first)).to_have_text("prefill (42)", timeout=30000)
    notice.click()
    expect(notice.locator(".alert")).to_have_count(0)
    assert console_errors == []


def test_report_opens_offline_and_downloads_from_the_page(page: Page, serve, tmp_path, console_errors):
    from dashboard.cli import main

    report = tmp_path / "r.html"
    assert (
        main(["report", str(samples_dir() / "generated_seed_shaped_108k.sqlite"), "-o", str(report), "--no-cache"]) == 0
    )
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(report.as_uri())
    page.locator(".js-plotly-plot").first.wait_for(state="visible", timeout=30000)
    assert page.locator(".js-plotly-plot").count() == 3
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []
    page.goto(serve(create_app(trace_dirs=[samples_dir()])))
    page.locator("#gantt .legendtext").first.wait_for(state="visible", timeout=30000)
    with page.expect_download() as dl:
        page.click("#report-button")
    download = dl.value
    assert download.suggested_filename == "tracedash_report_000_746bee52f7bbcc80_seed_summary.html"
    assert "tracedash report" in open(download.path(), encoding="utf-8").read()
    with page.expect_download() as dl:  # the mode bar's camera: PNG with a meaningful name
        page.locator("#gantt .modebar-btn[data-title='Download plot as a PNG']").click()
    assert dl.value.suggested_filename.startswith("tracedash_000_746bee52f7bbcc80_seed_summary_gantt_")
    assert dl.value.suggested_filename.endswith("_whole.png")  # not windowed: the whole trace
    with page.expect_download() as dl:
        page.locator("button.small-button[id*='gantt']", has_text="SVG").click()
    assert dl.value.suggested_filename.startswith("tracedash_000_746bee52f7bbcc80_seed_summary_gantt_")
    assert dl.value.suggested_filename.endswith(".svg")
    assert open(dl.value.path(), encoding="utf-8").read().lstrip().startswith("<svg")
    assert console_errors == []
