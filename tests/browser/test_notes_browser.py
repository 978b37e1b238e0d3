"""Issue 28, 3 (notes): a note added in the page is a flag on the timeline and the Gantt, a row of the Notes
panel, in the link, in an exported SVG and in the report, and comes back from the link in a fresh browser
context; a ``<script>`` note is shown as text everywhere (no script element, no dialog)."""

import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect

from dashboard.app import create_app
from dashboard.app.trace_files import trace_id

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from waits import figure_js, present, settled  # noqa: E402

from factories import write_nsys_sqlite  # noqa: E402

pytestmark = pytest.mark.browser
SCRIPT = "<script>alert(1)</script>"
NOTE_LABELS = "gd.layout.annotations.filter(a => (a.name || '').startsWith('note')).map(a => a.text)"


@pytest.fixture
def notes_trace(tmp_path):
    return write_nsys_sqlite(
        tmp_path / "notes.sqlite",
        kernels=[
            {"start": 1_000_000 + 100_000 * i, "end": 1_050_000 + 100_000 * i, "correlationId": i + 1} for i in range(8)
        ],
        nvtx=[
            {"start": 1_000_000 + 100_000 * i, "end": None, "eventType": 34, "text": f"CG_DISPATCH {i}"}
            for i in range(8)
        ],
    )


def labels(page: Page, graph: str) -> list:
    return page.evaluate(figure_js(graph, NOTE_LABELS)) or []


def test_a_note_added_in_the_page_travels_in_the_link(page: Page, browser, serve, notes_trace, console_errors):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    base = serve(create_app([notes_trace]))
    page.goto(f"{base}/?trace={trace_id(notes_trace)}&t0_ns=1200000&t1_ns=1300000")
    page.wait_for_function(figure_js("timeline", "gd._fullData.length > 0"), timeout=30000)
    expect(present(page.locator(".note-empty"))).to_contain_text("No notes yet.")

    page.fill("#note-text", "prefill stall")
    page.click("#note-add")  # no click on the timeline, no mark: pinned to the zoom window
    page.wait_for_function("() => location.search.includes('note=')")
    assert parse_qs(urlsplit(page.url).query)["note"] == ["1200000-1300000:prefill stall"]
    expect(page.locator("#note-text")).to_have_value("")
    page.wait_for_function(figure_js("timeline", f"{NOTE_LABELS}.length === 1"))
    page.wait_for_function(figure_js("gantt", f"{NOTE_LABELS}.length === 1"))
    assert labels(page, "timeline") == ["prefill stall"] == labels(page, "gantt")

    page.fill("#note-text", SCRIPT)
    page.press("#note-text", "Enter")
    page.wait_for_function("() => (location.search.match(/note=/g) || []).length === 2")
    page.wait_for_function(figure_js("timeline", f"{NOTE_LABELS}.length === 2"))
    rows = page.locator(".notes-list li")
    expect(rows).to_have_text(["0.001200–0.001300 s" + SCRIPT + "×", "0.001200–0.001300 s" + "prefill stall" + "×"])
    assert labels(page, "timeline") == ["&lt;script&gt;alert(1)&lt;/script&gt;", "prefill stall"]
    # the flag's label is text on the page: no element from the note, no dialog
    flag = page.locator("#timeline .annotation-text", has_text="alert(1)")
    expect(flag).to_have_text(SCRIPT)
    assert page.evaluate("() => document.querySelectorAll('#timeline script, .notes-list script').length") == 0

    with page.expect_download() as dl:  # the page's SVG of the timeline: the flags' text in the file
        page.locator("button.small-button[id*='timeline']", has_text="SVG").click()
    svg = Path(dl.value.path()).read_text(encoding="utf-8")
    assert "prefill stall" in svg and "alert(1)" in svg and "<script" not in svg
    with page.expect_download() as dl:
        page.click("#report-button")
    report = Path(dl.value.path()).read_text(encoding="utf-8")
    assert "<h2>Notes</h2>" in report and "&lt;script&gt;alert(1)&lt;/script&gt;</li>" in report
    assert SCRIPT not in report

    link = page.url
    fresh = browser.new_context(viewport={"width": 1500, "height": 1000})
    other = fresh.new_page()
    other.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    other.goto(link)
    expect(other.locator(".notes-list li")).to_have_count(2, timeout=30000)
    expect(other.locator(".notes-list li .note-body")).to_have_text([SCRIPT, "prefill stall"])
    other.wait_for_function(figure_js("timeline", f"{NOTE_LABELS}.length === 2"), timeout=30000)
    assert labels(other, "gantt") == ["&lt;script&gt;alert(1)&lt;/script&gt;", "prefill stall"]
    fresh.close()

    page.locator(".note-remove").first.click()  # × of the <script> note
    page.wait_for_function("() => (location.search.match(/note=/g) || []).length === 1")
    expect(page.locator(".notes-list li .note-body")).to_have_text(["prefill stall"])
    page.wait_for_function(figure_js("timeline", f"{NOTE_LABELS}.length === 1"))
    page.locator(".note-time").first.click()  # zoom to it: its width of context on each side
    page.wait_for_function("() => location.search.includes('t0_ns=1100000&t1_ns=1400000')")
    assert dialogs == [] and console_errors == []


def plot_area(page: Page) -> dict:
    """The timeline's plot area in client px and its x range in s."""
    return page.evaluate(
        figure_js(
            "timeline",
            "(() => { const r = gd.getBoundingClientRect(), s = gd._fullLayout._size, a = gd._fullLayout.xaxis.range;"
            " return {left: r.left + s.l, top: r.top + s.t, w: s.w, h: s.h, a: a[0], b: a[1]}; })()",
        )
    )


def test_a_click_where_no_bar_is_pins_the_note_to_that_time(page: Page, serve, notes_trace, console_errors):
    # the window runs past the last kernel (it ends at 1.75 ms): at 80 % of its width no bar is drawn
    page.set_viewport_size({"width": 1600, "height": 1000})
    base = serve(create_app([notes_trace]))
    page.goto(f"{base}/?trace={trace_id(notes_trace)}&t0_ns=1700000&t1_ns=2000000")
    settled(page, "timeline", "gd._fullData.length > 0")
    page.locator("#timeline").scroll_into_view_if_needed()
    geo = plot_area(page)
    px, py = round(geo["left"] + 0.8 * geo["w"]), round(geo["top"] + geo["h"] / 2)
    page.mouse.click(px, py)
    page.fill("#note-text", "nothing runs here")
    page.click("#note-add")
    page.wait_for_function("() => location.search.includes('note=')")
    t_s = geo["a"] + (geo["b"] - geo["a"]) * (px - geo["left"]) / geo["w"]  # the page's own arithmetic
    assert parse_qs(urlsplit(page.url).query)["note"] == [f"{round(t_s * 1e9)}:nothing runs here"]
    assert 1_930_000 < round(t_s * 1e9) < 1_950_000
    # a drag over the plot zooms and pins nothing: the next note goes to the new window (drawn with the note's
    # flag first: a drag on a figure being replaced is lost)
    settled(page, "timeline", f"{NOTE_LABELS}.includes('nothing runs here')")
    page.locator("#timeline").scroll_into_view_if_needed()  # the new note's row moved it down
    geo = plot_area(page)
    px, py = round(geo["left"] + 0.8 * geo["w"]), round(geo["top"] + geo["h"] / 2)
    page.mouse.move(px - 200, py)
    page.mouse.down()
    page.mouse.move(px - 100, py, steps=5)
    page.mouse.up()
    page.wait_for_function("() => !location.search.includes('t0_ns=1700000')")
    page.fill("#note-text", "window")
    page.click("#note-add")
    page.wait_for_function("() => (location.search.match(/note=/g) || []).length === 2")
    q = parse_qs(urlsplit(page.url).query)
    assert f"{q['t0_ns'][0]}-{q['t1_ns'][0]}:window" in q["note"]
    # a double click resets the zoom and pins nothing either: the next note goes to the whole trace's activity
    settled(page, "timeline", f"{NOTE_LABELS}.includes('window')")
    page.locator("#timeline").scroll_into_view_if_needed()  # the new note's row may have moved it again
    geo = plot_area(page)
    page.mouse.dblclick(round(geo["left"] + 0.8 * geo["w"]), round(geo["top"] + geo["h"] / 2))
    page.wait_for_function("() => !location.search.includes('t0_ns=')")
    page.fill("#note-text", "all")
    page.click("#note-add")
    page.wait_for_function("() => (location.search.match(/note=/g) || []).length === 3")
    assert "1000000-1750000:all" in parse_qs(urlsplit(page.url).query)["note"]
    assert console_errors == []
