"""Bad inputs in a real browser (issue #6): damaged files give an alert naming the file; names with
HTML/JS render as literal text in the grid, hovers, tick labels, the SVG export and the report,
and nothing in them ever runs."""

import hashlib
import json
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from playwright.sync_api import Page, expect

from dashboard.app import create_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from waits import figure_js, grid_js, present  # noqa: E402

from bad_inputs import IMG_NAME, SCRIPT_NAME, write_case  # noqa: E402

pytestmark = pytest.mark.browser

HOSTILE = (SCRIPT_NAME, IMG_NAME)


def digest(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def nothing_ran(page: Page, dialogs: list) -> None:
    assert dialogs == []
    assert page.evaluate("() => window.__pwned === undefined")
    assert page.evaluate("() => document.querySelectorAll('img[src=\"x\"], img[onerror]').length") == 0
    # an injected <script> element would hold exactly the name's code (figure JSON inside Plotly's own
    # scripts mentions the name as data, which is fine)
    assert page.evaluate("() => [...document.scripts].filter(s => s.text.trim() === 'window.__pwned=1').length") == 0


def test_damaged_sqlite_files_show_an_alert_naming_the_file(page: Page, serve, tmp_path, console_errors):
    truncated = write_case("truncated_half", tmp_path)
    corrupt = write_case("corrupt_pages", tmp_path)
    before = {p: digest(p) for p in (truncated, corrupt)}
    app = create_app([corrupt, truncated])
    page.goto(serve(app))
    expect(present(page.locator("#alerts .alert"))).to_have_text(
        "corrupt.sqlite: the SQLite file is damaged or truncated (database disk image is malformed)", timeout=30000
    )
    page.click("#trace-picker")
    page.get_by_text("truncated.sqlite", exact=True).click()
    expect(present(page.locator("#alerts .alert"))).to_have_text(
        "truncated.sqlite: the SQLite file is damaged or truncated (database disk image is malformed)", timeout=30000
    )
    assert {p: digest(p) for p in (truncated, corrupt)} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corrupt.sqlite", "truncated.sqlite"]
    assert console_errors == []


def test_html_and_script_names_render_as_text_everywhere(page: Page, serve, tmp_path, tmp_path_factory, console_errors):
    path = write_case("html_and_script_names", tmp_path)
    before = digest(path)
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    app = create_app([path])
    tid = app.server.config["TRACE_STORE"].ids()[0]
    page.goto(serve(app) + f"/?trace={tid}&t0_ns=900&t1_ns=3100&v=1")

    # grid: the raw names, shown as text
    page.wait_for_function(grid_js("kernel-table", "n === 2"), timeout=30000)
    page.locator("#kernel-table").scroll_into_view_if_needed()
    page.locator("#kernel-table .ag-row").first.wait_for(state="visible", timeout=30000)
    name_cells = page.locator("#kernel-table .ag-center-cols-container .ag-cell[col-id='name']")
    expect(present(name_cells.first)).to_contain_text("<", timeout=30000)
    cells = name_cells.all_text_contents()
    assert sorted(c.strip() for c in cells) == sorted(HOSTILE)

    # timeline: per-stream kernels are drawn at this window; tick labels and hovers show literal text
    page.wait_for_function(
        figure_js("timeline", "gd._fullData.some(t => t.name.startsWith('kernels: '))"), timeout=30000
    )
    ticks = page.evaluate(figure_js("timeline", "[...gd.querySelectorAll('.ytick text')].map(t => t.textContent)"))
    assert "GPU 0 · <script>w…__pwned=1</script>" in ticks  # the GPU's name, elided, as text

    def hover(graph_id: str, find_trace: str, point: int) -> str:
        """Hover one point through Plotly and return the hover label's text (Plotly throttles hovers: pause)."""
        page.wait_for_timeout(120)
        return page.evaluate(
            figure_js(
                graph_id,
                f"""(() => {{
            const i = gd._fullData.findIndex({find_trace});
            Plotly.Fx.hover(gd, [{{curveNumber: i, pointNumber: {point}}}]);
            return [...gd.querySelectorAll('.hoverlayer .hovertext')].map(h => h.textContent).join(' | '); }})()""",
            )
        )

    kernels = "t => t.name.startsWith('kernels: ')"  # one trace per kernel category: both are 'other'
    hovered = [hover("timeline", kernels, p) for p in range(2)]
    assert any(SCRIPT_NAME in h for h in hovered) and any(IMG_NAME in h for h in hovered), hovered
    nvtx_hover = hover("timeline", "t => (t.hovertext || []).some(h => String(h).includes('onerror'))", 0)
    assert IMG_NAME in nvtx_hover, nvtx_hover

    # the Gantt's dispatch hover carries the NVTX mark's mode=<img ...>
    gantt_hover = hover("gantt", "t => true", 0)
    assert "mode " + IMG_NAME in gantt_hover, gantt_hover
    nothing_ran(page, dialogs)

    # SVG export of the timeline: names are XML text, never elements
    with page.expect_download() as dl:
        page.locator("button[id*='timeline']", has_text="SVG").click()
    svg = open(dl.value.path(), encoding="utf-8").read()
    assert "<script" not in svg and "<img" not in svg
    root = ElementTree.fromstring(svg)
    assert {el.tag.rsplit("}", 1)[-1] for el in root.iter()}.isdisjoint({"script", "img", "foreignObject"})
    assert SCRIPT_NAME in "".join(root.itertext())  # the name is the text of a <text> element

    # the downloaded report: escaped in its tables, and opening it runs nothing
    with page.expect_download() as dl:
        page.click("#report-button")
    report = tmp_path_factory.mktemp("report") / "report.html"  # not next to the trace
    dl.value.save_as(report)
    text = report.read_text(encoding="utf-8")
    assert "<script>window.__pwned" not in text and "<img src=x" not in text
    page.goto(report.as_uri())
    page.locator(".js-plotly-plot").first.wait_for(state="visible", timeout=30000)
    expect(page.locator("table", has_text="% of kernel time")).to_contain_text(SCRIPT_NAME)  # the top-kernels table
    nothing_ran(page, dialogs)

    assert digest(path) == before and sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    assert [e for e in console_errors if "__pwned" in e or "x:1" in e] == []
    json.dumps(console_errors)
