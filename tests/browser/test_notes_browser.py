"""Issue 28, 3 (notes): a note added in the page is a flag on the timeline and the Gantt, a row of the Notes
panel, in the link, in an exported SVG and in the report, and comes back from the link in a fresh browser
context; a ``<script>`` note is shown as text everywhere (no script element, no dialog)."""

import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect

from dashboard.app import create_app
from dashboard.app.store import trace_id

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from waits import figure_js, present  # noqa: E402

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
