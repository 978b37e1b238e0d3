"""Browser upload (issue #6): "Open file…" and drag-and-drop send the file to /upload, the page opens it."""

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from waits import present

from dashboard.app import create_app

pytestmark = pytest.mark.browser

DATA = Path(__file__).resolve().parents[1] / "data"
SEED = Path(__file__).resolve().parents[2] / "sample_traces" / "000_746bee52f7bbcc80_seed_summary.json"
GRAPH_TRACE = DATA / "nsys" / "nsys2025.5_rtx3060_cuda_graph_launch.sqlite"


@pytest.fixture
def app_dir(tmp_path):
    d = tmp_path / "served"
    d.mkdir()
    (d / "seed.json").write_bytes(SEED.read_bytes())
    return d


def test_dropped_bad_files_get_an_alert_then_open_file_uploads_and_opens_the_trace(
    page: Page, serve, app_dir, console_errors
):
    """One page: dropped empty and wrong files get a specific alert (dismissed with a click) and open nothing;
    then "Open file…" uploads a real export and the page opens it."""
    page.goto(serve(create_app(trace_dirs=[app_dir])))
    expect(present(page.locator("#overview"))).to_contain_text("17.458 s", timeout=30000)
    assert console_errors == []
    drop = """([name, text]) => {
        const dt = new DataTransfer();
        dt.items.add(new File([text], name));
        document.body.dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
    }"""
    page.evaluate(drop, ["empty.sqlite", ""])
    expect(page.locator("#upload-alert [role=alert]")).to_have_text("empty.sqlite: the file is empty (0 bytes)")
    page.evaluate(drop, ["notes.sqlite", "just some text"])
    expect(present(page.locator("#upload-alert [role=alert]"))).to_contain_text(
        "notes.sqlite: not a SQLite database (no 'SQLite format 3' header)", timeout=30000
    )
    page.locator("#upload-alert [role=alert]").click()  # dismiss
    expect(page.locator("#upload-alert [role=alert]")).to_have_count(0)
    assert "trace=" not in page.url or "notes" not in page.url
    refused = len(console_errors)  # the browser logs each refused upload's 4xx answer
    assert all("status of 4" in e for e in console_errors), console_errors

    with page.expect_file_chooser() as chooser:
        page.click("#upload-button")
    chooser.value.set_files(str(GRAPH_TRACE))
    page.wait_for_url("**/?trace=nsys2025.5_rtx3060_cuda_graph_launch.sqlite*", timeout=30000)
    picker = present(page.locator("#trace-picker"))
    expect(picker).to_contain_text("nsys2025.5_rtx3060_cuda_graph_launch.sqlite (uploaded)", timeout=30000)
    expect(present(page.locator("#overview"))).to_contain_text("GPU", timeout=30000)
    expect(page.locator("#alerts [role=alert]")).to_have_count(0)
    assert console_errors[refused:] == []


def test_compare_link_naming_an_upload_opens_it(page: Page, serve, app_dir):
    import requests

    app = create_app(trace_dirs=[app_dir])
    base = serve(app)
    up = requests.post(
        base + "/upload",
        data=GRAPH_TRACE.read_bytes(),
        timeout=60,
        headers={"X-Requested-With": "tracedash", "X-Trace-Name": "mine.sqlite"},
    )
    tid = up.json()["trace"]
    seed_id = app.server.config["TRACE_STORE"].listed_ids()[0]
    page.goto(f"{base}/compare/?a={seed_id}&b={tid}")
    expect(present(page.locator("#cmp-b"))).to_contain_text("mine.sqlite (uploaded)", timeout=30000)
    expect(page.locator("#cmp-a")).to_contain_text("seed.json")
    assert "b=mine.sqlite" in page.url
