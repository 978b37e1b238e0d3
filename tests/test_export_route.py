"""The page's report-image links: /export/<figure>.<format>?<the figure's own state>."""

from __future__ import annotations

from test_app import page_json

from dashboard.app import create_app
from dashboard.app.views import BY_NAME, render_view
from dashboard.render.export import view_for
from dashboard.state import ViewState, from_query

from paths import SAMPLES, nsys_trace

NCCL = nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")


def test_each_figure_links_its_report_images_with_its_own_state():
    app = create_app([NCCL])
    store = app.server.config["TRACE_STORE"]
    tid = store.ids()[0]
    state = ViewState(trace=tid, t0_ns=60_200_000_000, t1_ns=60_206_000_000, threshold=5, tab="gaps")
    timeline = render_view(BY_NAME["timeline"], store, state)
    assert timeline["png"].startswith("export/timeline.png?") and timeline["pdf"].startswith("export/timeline.pdf?")
    linked = from_query(timeline["png"].split("?", 1)[1])
    assert (linked.trace, linked.window(), linked.threshold, linked.tab) == (tid, state.window(), None, "kernels")
    gantt = from_query(render_view(BY_NAME["gantt"], store, state)["png"].split("?", 1)[1])
    assert (gantt.window(), gantt.threshold) == (state.window(), 5.0)  # the Gantt draws the phase split
    phases = from_query(render_view(BY_NAME["phase_figure"], store, state)["png"].split("?", 1)[1])
    assert phases.window() is None  # statistics of the whole trace: the phase figure is not windowed
    page = page_json(app, f"?trace={tid.replace('@', '%40')}")
    for graph in ("timeline", "gantt", "phase-analysis"):
        assert f'"{graph}-report-png"' in page and f'"{graph}-report-pdf"' in page


def test_export_route_draws_the_linked_view_in_the_report_layout():
    app = create_app([SAMPLES / "nsys2022.4_cpu_llm_server_nvtx.sqlite"])
    store = app.server.config["TRACE_STORE"]
    tid = store.ids()[0]
    client = app.server.test_client()
    href = render_view(BY_NAME["gantt"], store, ViewState(trace=tid))["png"]
    resp = client.get("/" + href)
    assert resp.status_code == 200 and resp.mimetype == "image/png" and resp.data[:8] == b"\x89PNG\r\n\x1a\n"
    name = view_for(store.get(tid), from_query(href.split("?", 1)[1])).filenames["gantt"]
    assert resp.headers["Content-Disposition"] == f'attachment; filename="{name}.png"'
    assert name.endswith("_gantt_whole")
    assert client.get("/export/nope.png?trace=" + tid.replace("@", "%40")).status_code == 404
    missing = client.get("/export/gantt.png?trace=gone.sqlite%40" + "0" * 32)
    assert missing.status_code == 404 and "is not served here" in missing.get_json()["error"]
    none = client.get("/export/gantt.png")
    assert none.status_code == 400 and none.get_json()["error"] == "the link names no trace (?trace=NAME@HASH)"
    bogus = client.get("/export/timeline.png?trace=bogus%40123")  # QA: was "the link names no trace"
    assert bogus.status_code == 400 and bogus.get_json()["error"] == (  # no default is drawn: none is named
        "Ignored trace='bogus@123' in the link: not a trace id (expected NAME@HASH, a file name and 32 hexadecimal "
        "digits or their first 8)"
    )
    # a version cut to its first 8 hex digits by hand names the served file, as on the page (QA: was 404)
    short = client.get("/export/gantt.png?trace=" + tid[: tid.index("@") + 9].replace("@", "%40"))
    assert short.status_code == 200 and short.data == resp.data
    # a bare file name, as the page takes it: the served file of that name, or why there is none
    bare = client.get("/export/gantt.png?trace=nsys2022.4_cpu_llm_server_nvtx.sqlite")
    assert bare.status_code == 200 and bare.data == resp.data
    bad_window = client.get(f"/export/gantt.png?trace={tid.replace('@', '%40')}&t0_ns=5&t1_ns=1")
    assert bad_window.status_code == 400 and bad_window.get_json()["error"] == (  # it drew the whole trace
        "Ignored t0_ns/t1_ns='5,1' in the link: not a window in integer ns with t0 < t1. Nothing was drawn: correct "
        "the link (copy it from the page's address bar)."
    )
    bad_search = client.get(f"/export/gantt.png?trace={tid.replace('@', '%40')}&search=/(/")  # QA: drew it, 200
    assert bad_search.status_code == 400 and bad_search.get_json()["error"].startswith(
        "Ignored search='/(/' in the link: /(/ is not a regular expression RE2 reads: "
    )
    assert bad_search.get_json()["error"].endswith(
        "Nothing was drawn: correct the link (copy it from the page's address bar)."
    )
    other_version = client.get(f"/export/gantt.png?trace={tid.replace('@', '%40')}&v=99")  # every setting read
    assert other_version.status_code == 200 and other_version.data == resp.data
    bad_note = client.get(f"/export/gantt.png?trace={tid.replace('@', '%40')}&note=abc")
    assert bad_note.status_code == 400 and bad_note.get_json()["error"].endswith(
        " < 2^62. Nothing was drawn: correct the link (copy it from the page's address bar)."
    )
    nameless = client.get("/export/gantt.png?trace=missing.sqlite")
    assert nameless.status_code == 404 and nameless.get_json()["error"] == (
        "no trace named 'missing.sqlite' is served here (?trace=NAME or NAME@HASH)"
    )
