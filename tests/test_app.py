"""Render layer, tables and the Dash app through Flask's test client (no browser)."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dashboard.analysis.gpu_time import gpu_work
from dashboard.analysis.tables import api_table, clean_api_name, kernel_table, nvtx_table
from dashboard.analysis.timeline import device_unions, lanes_for_window, nvtx_lane_keys
from dashboard.app import create_app, ids
from dashboard.app.views import BY_NAME, render_view
from dashboard.data.trace import load_trace
from dashboard.errors import TraceError, TraceNotFoundError
from dashboard.render import build_view
from dashboard.state import ViewState

from factories import write_nsys_sqlite
from paths import SAMPLES, SEED, nsys_trace


@pytest.mark.parametrize(
    "name, clean",
    [
        ("cudaLaunchKernel_v7000", "cudaLaunchKernel"),
        ("cudaLaunchKernelExC_v11060", "cudaLaunchKernelExC"),
        ("cuGetProcAddress_v2", "cuGetProcAddress_v2"),
        ("cudaGetDeviceProperties_v2_v12000", "cudaGetDeviceProperties_v2"),
        ("cuLaunchKernelEx", "cuLaunchKernelEx"),
    ],
)
def test_clean_api_name(name, clean):
    assert clean_api_name(name) == clean


def test_tables_from_seed():
    t = load_trace(SEED)
    k = kernel_table(None, t.summary)
    assert k.iloc[0][["name", "count", "total_ns"]].tolist() == ["device_kernel", 4416, 5785133961]
    assert pd.isna(k.iloc[0]["kernel_pct"])  # a summary JSON lists its top 20 kernels only: total unknown
    a = api_table(t.summary)
    assert a.iloc[0][["name", "raw_name", "count"]].tolist() == [
        "cudaStreamSynchronize",
        "cudaStreamSynchronize_v3020",
        92,
    ]
    n = nvtx_table(t.summary).set_index("name")
    assert n.loc["PLE_CPU_gather", "overlap_pct"] == 0.0
    assert n.loc["PLE_wait_for_GPU", "overlap_pct"] == pytest.approx(100 * 6341070402 / 6389229296)


def test_kernel_table_from_events_covers_all_kernels(monkeypatch):
    import dashboard.analysis.tables as tables

    t = load_trace(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"))
    k = kernel_table(t.bundle.kernels, t.summary)
    assert int(k["count"].sum()) == 4010
    assert k.iloc[0]["name"] == "flash_fwd_kernel" and k.iloc[0]["full_name"].startswith(
        "void flash::flash_fwd_kernel<"
    )
    for by in ("short", "full"):  # counted 1,000 rows at a time (as 10M kernels are): the same table
        whole = kernel_table(t.bundle.kernels, t.summary, by=by)
        monkeypatch.setattr(tables._kernel_counts, "__defaults__", (1000,))
        assert kernel_table(t.bundle.kernels, t.summary, by=by).equals(whole)
        monkeypatch.undo()


def test_kernel_table_when_a_short_name_is_not_a_function_of_the_full_name():
    """Short name "a" for full names x and y, and full name x under short names a and b: each short name's
    full name is its commonest one (ties: the first name in order)."""
    kernels = pd.DataFrame(
        {
            "short_name": pd.Categorical(["a", "a", "a", "b", "b"]),
            "name": pd.Categorical(["y", "x", "y", "x", "x"]),
            "start_ns": np.array([0, 10, 20, 30, 40], np.int64),
            "end_ns": np.array([5, 17, 29, 31, 50], np.int64),
        }
    )
    for c in ("device_id", "pid", "context_id", "stream_id"):
        kernels[c] = np.zeros(5, np.int64)
    k = kernel_table(kernels, None)
    assert k[["name", "count", "total_ns", "full_name"]].values.tolist() == [["a", 3, 21, "y"], ["b", 2, 11, "x"]]


def test_copies_are_not_idle(tmp_path):
    path = write_nsys_sqlite(
        tmp_path / "c.sqlite",
        kernels=[{"start": 0, "end": 100}, {"start": 400, "end": 500}],
        memcpy=[{"start": 100, "end": 400}],
        memset=[{"start": 500, "end": 520}],
    )
    b = load_trace(path).bundle
    lanes = lanes_for_window(device_unions(gpu_work(b.kernels, b.memops)), lo_ns=0, hi_ns=520)
    assert (lanes[0].busy_ns, lanes[0].gap_starts.tolist(), lanes[0].gap_ends.tolist()) == (200, [100], [400])
    lanes = lanes_for_window(device_unions(gpu_work(b.kernels, b.memops, include_memops=True)), lo_ns=0, hi_ns=520)
    assert (lanes[0].busy_ns, lanes[0].gap_starts.tolist()) == (520, [])


def test_idle_is_drawn_up_to_the_window_edges_inside_the_activity_span():
    """A gap that runs past an edge of the window is drawn up to that edge, and a window inside one gap
    is idle throughout (it read "Nothing recorded in this window" with nothing drawn); padding outside the
    GPU activity span (first to last busy instant of any device) is never idle."""
    import numpy as np

    unions = {0: (np.array([100, 500]), np.array([200, 600])), 1: (np.array([150]), np.array([700]))}

    def cut(lo, hi):
        return [
            (ln.device_id, ln.starts.tolist(), ln.ends.tolist(), ln.gap_starts.tolist(), ln.gap_ends.tolist())
            for ln in lanes_for_window(unions, lo_ns=lo, hi_ns=hi)
        ]

    assert cut(250, 300) == [(0, [], [], [250], [300]), (1, [250], [300], [], [])]
    assert cut(150, 550) == [(0, [150, 500], [200, 550], [200], [500]), (1, [150], [550], [], [])]
    assert cut(0, 1000) == [(0, [100, 500], [200, 600], [200, 600], [500, 700]), (1, [150], [700], [100], [150])]
    assert cut(800, 900) == [(0, [], [], [], []), (1, [], [], [], [])]
    # the whole extents of what the window's edges cut (the hovers give both)
    full = {
        ln.device_id: (
            ln.full_starts.tolist(),
            ln.full_ends.tolist(),
            ln.gap_full_starts.tolist(),
            ln.gap_full_ends.tolist(),
        )
        for ln in lanes_for_window(unions, lo_ns=120, hi_ns=550)
    }
    assert full == {0: ([100, 500], [200, 600], [200], [500]), 1: ([150], [700], [100], [150])}


def test_a_window_inside_an_idle_gap_shows_idle_not_nothing_recorded():
    trace = load_trace(SAMPLES / "generated_seed_shaped_108k.sqlite")
    fig = build_view(trace, ViewState(t0_ns=2_330_000_000, t1_ns=2_330_010_000)).timeline
    idle = [t for t in fig.data if t.name == "GPU idle"]
    assert len(idle) == 1 and (list(idle[0].base), list(idle[0].x)) == ([2.33], [1e-05])  # the whole window, in s
    # the hover gives the whole gap too (the table's 902.9 µs gap), not only the part in view
    assert list(idle[0].hovertext) == ["idle 10.00 µs in view, of 902.90 µs<br>2.329878 – 2.330781 s"]
    busy = next(
        t
        for t in build_view(trace, ViewState(t0_ns=2_329_800_000, t1_ns=2_330_000_000)).timeline.data
        if t.name.startswith("GPU busy")
    )
    assert list(busy.hovertext)[:2] == [
        "busy 31.14 µs in view, of 44.87 µs<br>2.329786 – 2.329831 s",
        "busy 44.40 µs<br>2.329833 – 2.329878 s",
    ]
    assert not [a for a in fig.layout.annotations if "Nothing recorded" in (a.text or "")]


def test_device_lanes_bin_over_budget(tmp_path):
    starts = list(range(0, 20000, 20))
    path = write_nsys_sqlite(tmp_path / "many.sqlite", kernels=[{"start": s, "end": s + 10} for s in starts])
    b = load_trace(path).bundle
    work = gpu_work(b.kernels, b.memops)
    lanes = lanes_for_window(device_unions(work), lo_ns=0, hi_ns=20000, budget=500, n_bins=100)
    assert lanes[0].mode == "bins" and len(lanes[0].fraction) == 100
    assert lanes[0].fraction.tolist() == [0.5] * 100 and lanes[0].busy_ns == 10000
    assert lanes_for_window(device_unions(work), lo_ns=0, hi_ns=20000, budget=1500)[0].mode == "intervals"


def test_nvtx_lanes_nest_push_pop_and_pack_start_end():
    b = load_trace(nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite")).bundle
    lanes = nvtx_lane_keys(b.nvtx_ranges)
    by_name = lanes.groupby("name")["depth"].agg(set)
    assert by_name["PLE_lookup_tokens=1600"] == {0} and by_name["PLE_CPU_dedup"] == {1}
    assert lanes.loc[lanes["name"] == "engine:PLE_wait_for_GPU", "lane"].str.contains("start/end").all()


@pytest.mark.parametrize(
    "trace", sorted(p for p in SAMPLES.iterdir() if p.suffix in (".sqlite", ".json")), ids=lambda p: p.name
)
def test_build_view_for_each_sample_stays_in_budget(trace):
    view = build_view(load_trace(trace), ViewState())
    marks = sum(len(t.x) for t in view.timeline.data if t.x is not None)
    assert marks <= 5000
    json.loads(view.timeline.to_json())
    assert view.cards[0].label == "GPU activity span"


def test_ids_unique():
    assert len(ids.ALL) == len(set(ids.ALL))


def page_json(app, search: str = "", path: str = "/") -> str:
    """The page the app's router renders for ``path?search`` (as JSON text)."""
    from plotly.utils import PlotlyJSONEncoder

    return json.dumps(app.server.config["PAGE_LAYOUT"](path, search), cls=PlotlyJSONEncoder)


def view_outputs(app, trace_id: str) -> dict:
    """Every view of the page for ``trace_id`` (default state), as the browser receives them:
    ``{component id: {property: JSON value}}``."""
    from plotly.utils import PlotlyJSONEncoder

    from dashboard.app.views import VIEWS

    store = app.server.config["TRACE_STORE"]
    out: dict = {}
    for view in VIEWS:
        values = render_view(view, store, ViewState(trace=trace_id))
        for key, (cid, prop) in view.outputs.items():
            if key in values:
                out.setdefault(cid, {})[prop] = json.loads(json.dumps(values[key], cls=PlotlyJSONEncoder))
    return out


def kick_input(view) -> list[dict]:
    """The second input of a view's callback (``ids.RENDER_KICK``, see ``base.register_view``), unset."""
    return [{"id": ids.RENDER_KICK, "property": "data", "value": None}] if view.on_load else []


def update_payload(trace_id: str, view: str = "alerts") -> dict:
    """The HTTP payload of ``view``'s callback for ``trace_id`` (the browser sends its slice store)."""
    from urllib.parse import urlencode

    from dashboard.app.views import VIEWS

    v = next(x for x in VIEWS if x.name == view)
    query = urlencode({**({"trace": trace_id} if trace_id else {}), "v": "1"})  # validated by the view as by the page
    sid = json.dumps(ids.slice_id(view), sort_keys=True, separators=(",", ":"))
    outputs = [{"id": cid, "property": prop} for cid, prop in v.outputs.values()]
    return {
        "output": ".." + "...".join(f"{o['id']}.{o['property']}" for o in outputs) + "..",
        "outputs": outputs,
        "inputs": [{"id": ids.slice_id(view), "property": "data", "value": {"q": query}}, *kick_input(v)],
        "changedPropIds": [f"{sid}.data"],
        "state": [],
    }


def test_app_serves_layout_offline():
    app = create_app(trace_dirs=[SAMPLES])
    client = app.server.test_client()
    page = client.get("/")
    assert page.status_code == 200 and b"http://" not in page.data and b"https://" not in page.data
    assert client.get("/_dash-layout").status_code == 200
    text = page_json(app)
    for component_id in (ids.GANTT, ids.TIMELINE, ids.KERNEL_TABLE, ids.TRACE_PICKER, ids.STATS_FOR):
        assert f'"{component_id}"' in text
    assert "000_746bee52f7bbcc80_seed_summary.json" in text
    assert '"cmp-a"' in page_json(app, "", "/compare/")


def test_the_page_preloads_the_partial_plotly_bundle_of_the_installed_version(monkeypatch):
    """Figures are drawn by plotly.js's cartesian bundle (1.5 MB, not the full 4.8 MB) when it is the plotly.js
    version the installed plotly builds figures for; with any other version Dash's full bundle is left alone."""
    import os
    import re

    from plotly.offline import get_plotlyjs_version

    import dashboard.figures.plotly_js as plotly_js

    folder = plotly_js.assets_folder()
    bundle = plotly_js.partial_bundle()
    assert bundle == Path(folder) / "vendor" / "plotly-cartesian.min.js"
    with open(bundle, "rb") as f:
        assert f"plotly.js (cartesian - minified) v{get_plotlyjs_version()}".encode() in f.read(200)
    client = create_app(trace_dirs=[SAMPLES]).server.test_client()
    index = client.get("/").get_data(as_text=True)
    link = (
        f'<link rel="preload" as="script" id="tracedash-plotly-js" '
        f'href="/assets/vendor/plotly-cartesian.min.js?v={get_plotlyjs_version()}">'
    )
    assert link in index and "plotly-cartesian" not in "".join(re.findall(r"<script[^>]*>", index))  # lazily run
    served = client.get("/assets/vendor/plotly-cartesian.min.js")
    assert served.status_code == 200 and len(served.data) == os.path.getsize(bundle)
    served.close()
    monkeypatch.setattr(plotly_js, "get_plotlyjs_version", lambda: "4.2.0")  # plotly upgraded, bundle not
    assert plotly_js.partial_bundle() is None
    index = create_app(trace_dirs=[SAMPLES]).server.test_client().get("/").get_data(as_text=True)
    assert "tracedash-plotly-js" not in index and "plotly-cartesian" not in index
    monkeypatch.undo()
    assert plotly_js.partial_bundle(str(SAMPLES)) is None  # no bundle there


def _layout_of(client, referer: str | None) -> dict:
    resp = client.get("/_dash-layout", headers={"Referer": referer} if referer else {})
    assert resp.status_code == 200
    return resp.get_json()


def _find(node, cid):
    """The component dict with id ``cid`` in a layout's JSON (depth first), or None."""
    if isinstance(node, dict):
        if node.get("props", {}).get("id") == cid:
            return node
        node = list(node.get("props", {}).values()) if "props" in node else list(node.values())
    if isinstance(node, list):
        for child in node:
            if (hit := _find(child, cid)) is not None:
                return hit
    return None


def test_every_table_says_why_it_can_be_empty():
    from importlib import import_module

    from dashboard.app.components import NO_MATCH, NO_ROWS

    cl = import_module("dashboard.app.compare_layout")  # the package's `compare_layout` is the page function

    client = create_app(trace_dirs=[SAMPLES]).server.test_client()
    page = _layout_of(client, "http://localhost/?tab=kernels")
    for table, grid_id in (
        ("kernels", ids.KERNEL_TABLE),
        ("api", ids.API_TABLE),
        ("nvtx", ids.NVTX_TABLE),
        ("dispatches", ids.DISPATCH_TABLE),
        ("gaps", ids.GAP_TABLE),
    ):
        opts = _find(page, grid_id)["props"]["dashGridOptions"]
        assert opts["localeText"] == {"noRowsToShow": NO_ROWS[table], "noMatchingRows": NO_MATCH[table]}, table
        assert NO_ROWS[table].startswith("No ") and "filters" in NO_MATCH[table] and "filters" not in NO_ROWS[table]
    compare = _layout_of(client, "http://localhost/compare/")
    texts = {
        g: _find(compare, g)["props"]["dashGridOptions"]["localeText"]["noRowsToShow"]
        for g in (
            cl.PHASE_TABLE,
            cl.TYPE_TABLE,
            cl.KERNEL_GRID,
            cl.CATEGORY_GRID,
            cl.NVTX_GRID,
            cl.API_GRID,
            cl.FINDINGS_GRID,
        )
    }
    assert texts[cl.KERNEL_GRID] == "No kernels in either run"
    assert (
        _find(compare, cl.KERNEL_GRID)["props"]["dashGridOptions"]["localeText"]["noMatchingRows"]
        == "No row passes the column filters"
    )
    assert all(t.startswith("No ") and "either run" in t for t in texts.values()), texts


def test_the_layout_is_the_referring_link_s_page_already_drawn():
    """``_dash-layout`` carries the page of the link the browser shows (its same-origin Referer) with
    every view filled in, so opening a link runs no callback; another origin or no Referer gives the
    empty shell, which ``route`` fills from the browser's location."""
    app = create_app([SEED])
    client = app.server.test_client()
    tid = app.server.config["TRACE_STORE"].ids()[0]
    drawn = _layout_of(client, f"http://localhost/?trace={tid}&tab=api&api_sort=-count")
    location = _find(drawn, "page-url")["props"]
    assert location["search"] == f"?trace={tid}&tab=api&api_sort=-count" and location["pathname"] == "/"
    rows = _find(drawn, ids.API_TABLE)["props"]["rowData"]
    assert [r["name"] for r in rows][:1] == ["cudaStreamSynchronize"]
    assert _find(drawn, ids.PRERENDERED)["props"]["data"] is True
    assert _find(drawn, ids.TABLE_TABS)["props"]["value"] == "api"
    # the bare root too: Chromium cuts a Referer over 4,096 characters to the origin, and a long link
    # opened as the default trace's page, its address bar rewritten, without a notice
    for referer in (None, "http://elsewhere.example/?tab=api", "not a url", "http://localhost/", "http://localhost"):
        shell = _layout_of(client, referer)
        assert _find(shell, "page")["props"]["children"] == [] and _find(shell, ids.API_TABLE) is None
        assert "search" not in _find(shell, "page-url")["props"]
    compare = _layout_of(client, f"http://localhost/compare/?a={tid}")
    assert _find(compare, "cmp-a") is not None


class _Counting:
    """A context manager that counts its entries (stands in for the render slots)."""

    def __init__(self, entries: list):
        self.entries = entries

    def __enter__(self):
        self.entries.append(1)

    def __exit__(self, *exc):
        return False


def test_warming_renders_the_default_page_so_the_first_visit_renders_nothing(monkeypatch):
    """``app.warm`` (started in the background by each server worker, ``server.start_warming``) loads the
    default trace and renders every view of the bare link's page; the first visitor's page is then
    drawn from memory: no view renders again."""
    from dashboard.app.server import start_warming

    app = create_app([SEED])
    thread = start_warming(app)
    thread.join(60)
    assert not thread.is_alive()
    import dashboard.app.views.base as base

    renders = []  # every view render passes through the render slots
    monkeypatch.setattr(base, "_RENDER_SLOTS", _Counting(renders))
    client = app.server.test_client()
    routed = client.post(
        "/_dash-update-component",
        json={
            "output": "page.children",
            "outputs": {"id": "page", "property": "children"},
            "inputs": [
                {"id": "page-url", "property": "pathname", "value": "/"},
                {"id": "page-url", "property": "search", "value": ""},
            ],
            "changedPropIds": ["page-url.pathname"],
        },
    ).get_json()
    page = routed["response"]["page"]["children"]
    assert renders == []
    rows = _find({"props": {"children": page}}, ids.API_TABLE)["props"]["rowData"]
    assert rows and rows[0]["name"] == "cudaStreamSynchronize"
    monkeypatch.setenv("TRACEDASH_NO_WARM", "1")
    assert start_warming(app) is None


def test_a_page_joins_kernels_to_their_launch_calls_once(monkeypatch):
    """Dispatch attribution (Gantt, Per phase, phase figure) and the idle gaps' launching threads read one
    kernel-to-launch join per trace and window (``TraceAnalysis.launches``): a fresh page of the 108k sample
    joined its 108,000 kernels twice."""
    import dashboard.analysis.derived as derived

    joins = []
    real = derived.kernel_launches
    monkeypatch.setattr(derived, "kernel_launches", lambda k, a, i=None: joins.append(len(k)) or real(k, a, i))
    app = create_app([SAMPLES / "generated_seed_shaped_108k.sqlite"])
    client = app.server.test_client()
    tid = app.server.config["TRACE_STORE"].ids()[0]
    drawn = _layout_of(client, f"http://localhost/?trace={tid}&tab=gaps")
    assert len(_find(drawn, ids.GAP_TABLE)["props"]["rowData"]) == 143  # the gaps view rendered, with causes
    assert _find(drawn, ids.GANTT)["props"]["figure"]["data"]  # and the dispatches, attributed
    assert joins == [108_000]


def test_per_phase_footnote_shows_only_with_the_table_it_explains():
    """A trace without dispatches gets the Per phase panel's one line of why, not the footnote about
    step times (it sits in the container the view hides); a trace with dispatches shows both."""
    nccl = nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")
    app = create_app([SEED, nccl], uploads=False)
    client = app.server.test_client()
    shown = {}
    for tid in app.server.config["TRACE_STORE"].ids():
        page = _layout_of(client, f"http://localhost/?trace={tid}")
        box = _find(page, "phases-grid")["props"]
        assert "A step lasts from its dispatch mark" in json.dumps(box["children"])  # the footnote is in the box
        shown[tid.split("@")[0]] = (
            box.get("style") != {"display": "none"},
            _find(page, "phases-empty")["props"].get("children"),
        )
    assert shown["000_746bee52f7bbcc80_seed_summary.json"] == (True, "")
    assert shown[nccl.name] == (
        False,
        "No dispatch marks named CG_DISPATCH… in this trace: set the dispatch marker prefix to your server's marks.",
    )


def test_the_gap_table_says_when_it_holds_only_the_largest_gaps():
    """The 2-GPU sample has 563 idle gaps of at least 10 µs; the table holds the 500 largest and says so
    above it (only the side chart's subtitle said it: sorted by start, the list looked complete)."""
    app = create_app([nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")])
    store = app.server.config["TRACE_STORE"]
    tid = store.ids()[0]
    out = render_view(BY_NAME["gaps"], store, ViewState(trace=tid))
    assert len(out["rows"]) == 500
    assert out["scope"] == "Stats for: whole trace · 563 gaps ≥ 10.00 µs: the table and chart hold the 500 largest"
    few = render_view(BY_NAME["gaps"], store, ViewState(trace=tid, gap_us=2000.0))  # ≥ 2 ms: all of them listed
    assert few["scope"] == f"Stats for: whole trace · {len(few['rows'])} gaps ≥ 2.000 ms" and 0 < len(few["rows"]) < 500


def test_every_grid_drops_its_focused_cell_when_new_rows_arrive():
    """AG Grid keeps the focused cell by row index: after a dispatch row click re-rendered the table for the
    new window, the outline sat on another dispatch (#28 for a click on #27)."""
    client = create_app(trace_dirs=[SAMPLES]).server.test_client()
    page = _layout_of(client, "http://localhost/?tab=kernels")
    for grid_id in (ids.KERNEL_TABLE, ids.API_TABLE, ids.NVTX_TABLE, ids.DISPATCH_TABLE, ids.GAP_TABLE):
        assert _find(page, grid_id)["props"]["eventListeners"] == {"rowDataUpdated": ["params.api.clearFocusedCell()"]}


def test_a_summary_s_kernel_table_says_it_lists_the_top_kernels_only():
    app = create_app([SEED])
    store = app.server.config["TRACE_STORE"]
    out = render_view(BY_NAME["kernels"], store, ViewState(trace=store.ids()[0]))
    assert len(out["rows"]) == 20 and sum(r["count"] for r in out["rows"]) == 63_703
    assert out["scope"] == (
        "Stats for: whole trace · the summary lists its top 20 kernels, 63,703 of its 107,899: "
        "a share of all kernel time is n/a"
    )


def test_a_bad_trace_becomes_an_alert_and_other_views_stay_empty(tmp_path):
    bad = tmp_path / "broken.sqlite"
    bad.write_text("not sqlite")
    app = create_app([bad])
    store = app.server.config["TRACE_STORE"]
    tid = store.ids()[0]
    assert tid.startswith("broken.sqlite@") and len(tid) == len("broken.sqlite@") + 32
    out = render_view(BY_NAME["alerts"], store, ViewState(trace=tid))
    assert "broken.sqlite: not a SQLite database (no 'SQLite format 3' header)" in str(out["alerts"])
    assert render_view(BY_NAME["kernels"], store, ViewState(trace=tid))["rows"] == []
    assert app.server.test_client().get("/").status_code == 200  # still serving


def test_unexpected_error_becomes_an_alert_not_a_500():
    from dataclasses import replace

    def boom(*a, **k):
        raise RuntimeError("bug")

    app = create_app([SEED])
    store = app.server.config["TRACE_STORE"]
    tid = store.ids()[0]
    out = render_view(replace(BY_NAME["alerts"], render=boom), store, ViewState(trace=tid))
    assert "internal error while reading or showing this trace" in str(out["alerts"])
    out = render_view(BY_NAME["alerts"], store, ViewState(trace="no-such-id"))
    assert "trace 'no-such-id' is not served here" in str(out["alerts"])  # one answer for every bad id
    out = render_view(BY_NAME["alerts"], store, ViewState(trace="gone.sqlite@0123abcd"))
    assert "trace 'gone.sqlite@0123abcd' is not served here" in str(out["alerts"])


def test_a_view_callback_over_http_returns_named_outputs():
    app = create_app([SEED])
    tid = app.server.config["TRACE_STORE"].ids()[0]
    from dashboard.app.views import slice_data

    data = slice_data(BY_NAME["api"], ViewState(trace=tid))
    sid = json.dumps(ids.slice_id("api"), sort_keys=True, separators=(",", ":"))
    payload = {
        "output": f"..{ids.API_TABLE}.rowData...{ids.scope('api')}.children..",
        "outputs": [{"id": ids.API_TABLE, "property": "rowData"}, {"id": ids.scope("api"), "property": "children"}],
        "inputs": [
            {"id": ids.slice_id("api"), "property": "data", "value": data},
            {"id": ids.RENDER_KICK, "property": "data", "value": None},
        ],
        "changedPropIds": [f"{sid}.data"],
        "state": [],
    }
    resp = app.server.test_client().post("/_dash-update-component", json=payload)
    assert resp.status_code == 200, resp.get_data(as_text=True)[:500]
    body = resp.get_json()["response"]
    assert body[ids.API_TABLE]["rowData"][0]["name"] == "cudaStreamSynchronize"
    assert body[ids.scope("api")]["children"] == "Stats for: whole trace"


def test_nvtx_grouping_by_normalised_name():
    from dashboard.analysis.tables import normalize_nvtx_name
    from dashboard.render import nvtx_rows

    assert normalize_nvtx_name("aten::mul, seq = 5, op_id = 317126, sizes = [[1, 2], []]") == "aten::mul"
    assert normalize_nvtx_name("PLE_lookup_tokens=1600") == "PLE_lookup_tokens=1600"
    assert normalize_nvtx_name(", op_id = 1") == ", op_id = 1"  # nothing left: keep the name
    t = load_trace(nsys_trace("nsys2026.2_h100_2gpu_torchrun_1s.sqlite"))
    plain, grouped = nvtx_rows(t, grouped=False), nvtx_rows(t, grouped=True)
    assert len(plain) == 16582 and len(grouped) < 200
    assert sum(r["count"] for r in grouped) == sum(r["count"] for r in plain)
    assert sum(r["sum_ns"] for r in grouped) == sum(r["sum_ns"] for r in plain)
    for r in grouped:
        assert r["union_ns"] <= r["sum_ns"] and r["gpu_overlap_ns"] <= r["union_ns"]
    seed = nvtx_rows(load_trace(SEED), grouped=True)
    assert [r["name"] for r in seed][:2] == ["PLE_wait_for_GPU", "PLE_lookup_tokens=1600"]


def test_per_gpu_table_two_devices():
    from dashboard.render import gpu_rows

    rows, columns = gpu_rows(load_trace(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")), ViewState())
    assert columns == [("gpu0", "GPU 0"), ("gpu1", "GPU 1"), ("all", "any GPU")]
    kernels = next(r for r in rows if r["metric"] == "Kernels")
    assert (kernels["gpu0"], kernels["gpu1"], kernels["all"]) == ("1,993", "2,017", "4,010")
    busy = next(r for r in rows if r["metric"] == "Busy (union)")
    assert busy["all"] == "285.206 ms"  # = the summary's busy union (kernels only)
    window = next(r for r in rows if r["metric"] == "Window")  # each GPU over its own window
    assert (window["gpu0"], window["gpu1"], window["all"]) == ("299.849 ms", "298.662 ms", "299.877 ms")
    util = next(r for r in rows if r["metric"] == "Utilisation")
    assert (util["gpu0"], util["gpu1"], util["all"]) == ("90.33 %", "88.50 %", "95.11 %")  # as the cards: 2 decimals
    assert gpu_rows(load_trace(SEED), ViewState()) == ([], [])


def test_the_hide_gpus_control_shows_only_for_several_gpus_and_not_before_the_view_knows():
    """The page's first layout hides "Hide GPUs:" (a big trace's page waits for its load, and an empty label stood
    there meanwhile) unless the link hides a GPU; the timeline view shows it for a trace with several GPUs."""
    from dash import html

    view = BY_NAME["timeline"]

    def box_style(layout):
        stack = [layout]
        while stack:
            c = stack.pop()
            if getattr(c, "id", None) == "hide-devices-box":
                return c.style
            kids = getattr(c, "children", None)
            stack.extend(kids if isinstance(kids, list) else [kids] if isinstance(kids, html.Div) else [])
        raise AssertionError("no hide-devices-box in the layout")

    assert box_style(view.layout(ViewState())) == {"display": "none"}
    assert box_style(view.layout(ViewState(hide_devices=(1,)))) == {}
    two = load_trace(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"))
    assert view.render(two, ViewState())["devices_style"] == {}
    assert view.render(load_trace(SAMPLES / "generated_seed_shaped_108k.sqlite"), ViewState())["devices_style"] == {
        "display": "none"
    }


def test_a_link_hiding_a_gpu_the_trace_does_not_have_is_told_so_under_the_timeline():
    """``hide_devices=99`` on a two-GPU trace was shown as "hidden GPUs: 99" (and nothing said it named no GPU)."""

    def notes(hide):
        fig = build_view(load_trace(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")), ViewState(hide_devices=hide))
        text = " · ".join(a.text for a in fig.timeline.layout.annotations).replace("<br>", " ")
        return [n for n in text.split(" · ") if "GPU 9" in n or "hidden GPUs" in n or "GPUs 9" in n]

    assert notes((99,)) == ["the link hides GPU 99, which this trace does not have"]
    assert notes((1, 99, 98)) == ["hidden GPUs: 1", "the link hides GPUs 98, 99, which this trace does not have"]
    assert notes((1,)) == ["hidden GPUs: 1"]


def test_per_gpu_and_per_phase_tables_are_plain_text_tables():
    """The gpu and phases views write small HTML tables: header from the columns (hidden phases
    left out), one row per metric, values as text (a name with markup stays text)."""
    from dashboard.app.components import gpu_columns, metric_table, phase_columns

    def cells(table) -> list[list[str]]:
        head, body = table
        return [[c.children for c in head.children.children]] + [
            [c.children for c in r.children] for r in body.children
        ]

    rows = [{"metric": "Dispatches", "prefill": "2", "decode": "<b>3</b>"}]
    assert cells(metric_table(phase_columns(rows), rows)) == [
        ["", "prefill", "decode"],
        ["Dispatches", "2", "<b>3</b>"],
    ]
    rows = [{"metric": "Dispatches", "prefill": "2", "decode": "3", "mixed": "1"}]
    assert cells(metric_table(phase_columns(rows), rows))[0] == ["", "prefill", "decode", "mixed"]
    table = metric_table(
        gpu_columns([("gpu0", "GPU 0"), ("all", "any GPU")]), [{"metric": "Busy", "gpu0": "1 s", "all": "1 s"}]
    )
    assert [c.className for c in table[1].children[0].children] == [None, "num", "num"]  # numbers right-aligned

    app = create_app([nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")], uploads=False)
    store = app.server.config["TRACE_STORE"]
    out = render_view(BY_NAME["gpu"], store, ViewState(trace=store.ids()[0]))
    got = cells(out["table"])
    assert got[0] == ["", "GPU 0", "GPU 1", "any GPU"]
    assert next(r for r in got if r[0] == "Busy (union)")[3] == "285.206 ms"


def test_per_gpu_says_why_it_is_empty_instead_of_an_empty_table():
    """Without kernels or memory operations (an NVTX-only export; a window before the first kernel)
    Per GPU is one line of why, not a table of metric names with no GPU columns."""
    from dashboard.render import gpu_rows

    nvtx_only = nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite")
    nccl = nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")
    app = create_app([nvtx_only, nccl], uploads=False)
    store = app.server.config["TRACE_STORE"]
    by_name = {t.split("@")[0]: t for t in store.ids()}
    out = render_view(BY_NAME["gpu"], store, ViewState(trace=by_name[nvtx_only.name]))
    assert (out["box"], out["empty"]) == (
        {"display": "none"},
        "Per GPU: no kernels or memory operations in this trace.",
    )
    assert gpu_rows(store.get(by_name[nvtx_only.name]), ViewState()) == ([], [])
    out = render_view(BY_NAME["gpu"], store, ViewState(trace=by_name[nccl.name], t0_ns=0, t1_ns=1000, stats="window"))
    assert (out["box"], out["empty"]) == (
        {"display": "none"},
        "Per GPU: no kernels or memory operations in this window.",
    )


def test_generated_sample_is_seed_shaped(tmp_path):
    import sys

    sys.path.insert(0, str(SAMPLES.parent / "benchmarks"))
    from make_trace import generate

    p = tmp_path / "g.sqlite"
    counts = generate(p, 20000, seed=1)
    assert counts["kernels"] == 20000
    t = load_trace(p)
    s = t.summary
    assert s.kernel_count == 20000 and 0 < s.gpu_busy_union_ns < s.gpu_activity_span_ns
    assert {n.split(":")[1] for n in s.dispatch} <= {"actual=1600", "actual=742", "actual=1", "actual=3"}
    depths = nvtx_lane_keys(t.bundle.nvtx_ranges).groupby("name")["depth"].max()
    assert depths.max() == 1  # PLE ranges nest one level, like the seed's
    assert t.bundle.kernels.groupby("stream_id").size().index.tolist() == [7, 13]
    assert s.api.iloc[0]["name"] == "cudaStreamSynchronize_v3020"


@pytest.mark.parametrize(
    "relayout, expected",
    [
        (None, None),
        ({"autosize": True}, None),
        ({"xaxis.autorange": True}, (0, 100)),
        ({"xaxis.range[0]": 0.5, "xaxis.range[1]": 0.75}, (500000000, 750000000)),
        ({"xaxis.range": [1e-6, 2e-6]}, (1000, 2000)),
        ({"xaxis.range[0]": 2, "xaxis.range[1]": 1}, None),
        ({"xaxis.range[0]": "x", "xaxis.range[1]": 1}, None),
        ({"xaxis.range[0]": 0, "xaxis.range[1]": 1e300}, None),
    ],
)
def test_window_from_relayout(relayout, expected):
    from dashboard.render import window_from_relayout

    assert window_from_relayout(relayout, (0, 100)) == expected


def test_zoom_adds_detail_within_budget():
    from dashboard.render import zoomed_timeline

    t = load_trace(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"))
    full = build_view(t, ViewState()).timeline
    names = [tr.name for tr in full.data]
    assert "GPU busy fraction per bin (darker = busier)" in names  # too many intervals: binned
    # one legend entry for the bins, in the busiest colour (it took the first bin's colour: pale or dark by chance)
    bins = [tr for tr in full.data if tr.name == "GPU busy fraction per bin (darker = busier)"]
    assert [tr.showlegend for tr in bins] == [False, None] and bins[1].marker.color == "#2f6f4f"
    assert len(set(bins[0].marker.color)) > 1 and bins[0].legendgroup == bins[1].legendgroup == "bins"
    zoomed = zoomed_timeline(t, ViewState(), {"xaxis.range[0]": 60.2, "xaxis.range[1]": 60.206})
    znames = [tr.name for tr in zoomed.data]
    assert "GPU busy (kernels)" in znames and "GPU busy fraction per bin (darker = busier)" not in znames
    assert list(zoomed.layout.xaxis.range) == [60.2, 60.206]
    for fig in (full, zoomed):
        assert sum(len(tr.x) for tr in fig.data if tr.x is not None) <= 5000
    assert zoomed_timeline(t, ViewState(), {"autosize": True}) is None
    assert zoomed_timeline(load_trace(SEED), ViewState(), {"xaxis.autorange": True}) is None


def test_phase_analysis_on_generated_trace():
    from dashboard.analysis.kernel_times import kernel_durations, overrun_kernel_count
    from dashboard.render import phase_view

    t = load_trace(SAMPLES / "generated_seed_shaped_108k.sqlite")
    assert overrun_kernel_count(t.bundle.kernels) == 150  # the generator lets stream 13 overlap its next kernels
    pv = phase_view(t, ViewState())
    assert int(pv.metrics["kernels"].sum()) == 108000  # every kernel launched inside a dispatch
    assert set(pv.stats["phase"]) == {"prefill", "decode"}
    assert (pv.stats["gpu_busy_in_window_pct"] > 80).all() and (pv.stats["gpu_busy_in_window_pct"] <= 100).all()
    cats = pv.category_time.groupby("phase")["kernel_sum_ns"].sum()
    assert int(cats.sum()) == int(kernel_durations(t.bundle.kernels).sum())  # 150 stream-13 overruns clipped
    view = build_view(t, ViewState())
    assert [tr.type for tr in view.phase_figure.data].count("box") == 2
    assert len(view.dispatch_rows) == 144 and view.dispatch_rows[0]["kernels"] == 1800


def test_zoomed_in_timeline_shows_kernels_by_stream_and_memops():
    from dashboard.render import zoomed_timeline

    t = load_trace(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"))
    k = t.bundle.kernels
    first = int(k["start_ns"].min())
    fig = zoomed_timeline(t, ViewState(), {"xaxis.range[0]": first / 1e9, "xaxis.range[1]": (first + 2_000_000) / 1e9})
    names = [tr.name for tr in fig.data]
    kts = [tr for tr in fig.data if tr.name.startswith("kernels: ")]  # one trace per kernel category
    n_vis = int(((k["end_ns"] > first) & (k["start_ns"] < first + 2_000_000)).sum())
    assert sum(len(kt.x) for kt in kts) == n_vis
    assert all(y.startswith("GPU ") and " · stream " in y for kt in kts for y in kt.y)
    assert "grid " in kts[0].hovertext[0] and "block " in kts[0].hovertext[0]
    lanes = list(fig.layout.yaxis.categoryarray)
    assert any(lbl.endswith("memcpy/memset") for lbl in lanes) == ("memcpy/memset" in names)
    only_gpu = zoomed_timeline(
        t, ViewState(lanes=("gpu",)), {"xaxis.range[0]": first / 1e9, "xaxis.range[1]": (first + 2_000_000) / 1e9}
    )
    assert [tr.name for tr in only_gpu.data if tr.name.startswith(("NVTX", "kernels"))] == []


@pytest.mark.parametrize("trace_name", ["nsys2026.2_2gpu_nccl_before.sqlite", "generated_200k"])
def test_timeline_never_exceeds_the_mark_budget_at_any_zoom(trace_name, tmp_path):
    from dashboard.render import phase_view, time_extent, zoomed_timeline

    if trace_name == "generated_200k":
        import sys

        sys.path.insert(0, str(SAMPLES.parent / "benchmarks"))
        from make_trace import generate

        path = tmp_path / "g200k.sqlite"
        generate(path, 200_000)
    else:
        path = nsys_trace(trace_name)
    t = load_trace(path)
    lo, hi = time_extent(t, phase_view(t, ViewState()).dispatches)
    span = hi - lo
    for width in (span, span // 7, span // 50, span // 400, 3_000_000, 200_000, 20_000, 2_000):
        for frac in (0.0, 0.37, 0.9):
            start = lo + int((span - width) * frac)
            fig = zoomed_timeline(
                t, ViewState(), {"xaxis.range[0]": start / 1e9, "xaxis.range[1]": (start + width) / 1e9}
            )
            marks = sum(len(tr.x) for tr in fig.data if tr.x is not None)
            assert marks <= 5000, (width, frac, marks)
            assert len(fig.to_json()) < 1_500_000


def test_kernel_table_by_demangled_name():
    t = load_trace(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"))
    short = kernel_table(t.bundle.kernels, t.summary)
    full = kernel_table(t.bundle.kernels, t.summary, by="full")
    assert len(full) > len(short) and int(full["count"].sum()) == int(short["count"].sum()) == 4010
    assert full.iloc[0]["name"].startswith("void flash::flash_fwd_kernel<")


def test_pytorch_names_are_grouped_by_default_in_the_nvtx_table_and_gap_causes(tmp_path):
    from dashboard.render import effective_group, idle_view

    path = write_nsys_sqlite(
        tmp_path / "torch.sqlite",
        kernels=[{"start": 0, "end": 100}, {"start": 1000, "end": 1100}],
        runtime=[{"start": 150, "end": 950, "name": "cudaStreamSynchronize_v3020"}],
        nvtx=[
            {"start": 120, "end": 980, "eventType": 59, "text": "aten::mul, seq = 1, op_id = 7"},
            {"start": 2000, "end": 2100, "eventType": 59, "text": "aten::mul, seq = 2, op_id = 8"},
        ],
    )
    t = load_trace(path)
    assert effective_group(t, None) is True and effective_group(t, False) is False
    rows, _, _ = idle_view(t, ViewState(), 100, grouped=True)
    assert [(r["cause"], r["nvtx_range"], r["duration_ns"]) for r in rows] == [
        ("cudaStreamSynchronize in aten::mul", "aten::mul", 900)
    ]
    plain, _, _ = idle_view(t, ViewState(), 100)
    assert plain[0]["nvtx_range"] == "aten::mul, seq = 1, op_id = 7"
    assert effective_group(load_trace(SEED), None) is False  # no op_id in its names: not grouped
    assert [r["name"] for r in BY_NAME["nvtx"].render(t, ViewState())["rows"]] == ["aten::mul"]


def test_an_undefined_phase_ratio_is_na_not_zero():
    """A ratio over zero is "n/a" in every output (issue 12, analysis.ratio), never a made-up 0 %."""
    import pandas as pd

    from dashboard.render import phase_table_rows

    stats = pd.DataFrame(
        {
            "phase": ["decode"],
            "dispatches": [1],
            "tokens": [1],
            "total_ns": [0],
            "mean_ns": [0.0],
            "p50_ns": [0.0],
            "p90_ns": [0.0],
            "p99_ns": [0.0],
            "tokens_per_s": [float("nan")],
            "gpu_attributed_ns": [0],
            "gpu_attributed_per_dispatch_ns": [0.0],
            "gpu_busy_in_window_pct": pd.array([None], dtype="Float64"),
        }
    )
    rows = {r["metric"]: r["decode"] for r in phase_table_rows(stats)}
    assert rows["Tokens / s"] == "n/a" and rows["GPU busy within its dispatches"] == "n/a"
    assert rows["Dispatches"] == "1" and rows["GPU time attributed (by correlation)"] == "0 ns"
    # prefill is always a column: with no prefill step (a window of decode steps) its cells are never blank
    prefill = {r["metric"]: r["prefill"] for r in phase_table_rows(stats)}
    assert prefill["Dispatches"] == "0" and prefill["Tokens"] == "0"
    assert {prefill[m] for m in prefill if m not in ("Dispatches", "Tokens")} == {"—"}


def test_a_page_without_a_trace_opens_the_folders_first_readable_file_and_marks_the_others(tmp_path):
    from dashboard.app import main_state

    (tmp_path / "a_bad.json").write_text("{}")  # first by name: JSON that is no trace
    (tmp_path / "b_empty.sqlite").write_bytes(b"")
    good = tmp_path / "c_good.json"
    good.write_bytes((SAMPLES / "000_746bee52f7bbcc80_seed_summary.json").read_bytes())
    store = create_app(trace_dirs=[tmp_path]).server.config["TRACE_STORE"]
    ids = store.listed_ids()
    state, notices = main_state("", store)
    assert state.trace == ids[2] and notices == []
    bad = "(cannot be read)"
    assert [store.label(t) for t in ids] == [f"a_bad.json {bad}", f"b_empty.sqlite {bad}", "c_good.json"]
    good.write_text("{}")  # the file changed: looked at again
    assert not store.readable(ids[2]) and main_state("", store)[0].trace == ids[0]  # none readable: the first


def test_the_picker_marks_a_file_whose_load_failed(tmp_path):
    # QA: only files refused by their first bytes were marked; one that starts like an export but fails to load
    # read as any other in the picker
    bad = tmp_path / "cut.sqlite"
    bad.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)  # the header, then nothing an export holds
    store = create_app(trace_dirs=[tmp_path]).server.config["TRACE_STORE"]
    tid = store.listed_ids()[0]
    assert store.label(tid) == "cut.sqlite"
    with pytest.raises(TraceError):
        store.get(tid)
    assert store.label(tid) == "cut.sqlite (did not load)"


def test_the_page_is_built_from_the_link():
    from dashboard.app import main_state
    from dashboard.app.views.compare_link import compare_href

    app = create_app(trace_dirs=[SAMPLES], dispatch_prefix="MY_DISPATCH")
    store = app.server.config["TRACE_STORE"]
    state, notices = main_state("?trace=gone.sqlite%400123abcd&t0_ns=5&t1_ns=9&threshold=3&v=1", store, "MY_DISPATCH")
    assert state.trace == store.listed_ids()[0] and state.window() is None and state.threshold == 3.0
    assert state.prefix == "MY_DISPATCH" and "which is not served here" in notices[0]
    assert main_state("?prefix=CG_X&v=1", store, "MY_DISPATCH")[0].prefix == "CG_X"
    # QA: keys that are not view settings were dropped without a word in the page (export --url warned)
    assert main_state("?tab=gaps&foo=bar&zzz=1", store)[1] == [
        "Ignored foo, zzz in the link: not a view setting of this tracedash version."
    ]
    assert main_state("?tab=gaps&v=1", store)[1] == []
    # QA: an empty key ("&==") was named as nothing ("Ignored  in the link")
    assert main_state("?tab=gaps&==&zzz=1", store)[1] == [
        "Ignored a value without a name, zzz in the link: not a view setting of this tracedash version."
    ]
    assert compare_href(ViewState(trace="a.sqlite@0123abcd")) == "compare/?a=a.sqlite%400123abcd"
    assert compare_href(ViewState(trace="a.sqlite@0123abcd", prefix="X")) == "compare/?a=a.sqlite%400123abcd&prefix=X"
    assert compare_href(ViewState(trace="a.sqlite@0123abcd", threshold=600.0)) == (
        "compare/?a=a.sqlite%400123abcd&threshold=600"
    )
    text = page_json(app, f"?trace={state.trace.replace('@', '%40')}&threshold=3&tab=gaps&stats=window&v=1")
    assert '"value": "gaps"' in text and '"value": 3.0' in text and '"value": "window"' in text


def test_a_link_naming_a_served_file_by_its_bare_name_opens_it_and_says_so(tmp_path):
    from dashboard.app import main_state

    app = create_app(trace_dirs=[SAMPLES])
    store = app.server.config["TRACE_STORE"]
    nccl = next(t for t in store.listed_ids() if t.startswith("nsys2026.2_2gpu_nccl_before.sqlite@"))
    assert nccl != store.listed_ids()[0]  # not the default trace
    state, notices = main_state("?trace=nsys2026.2_2gpu_nccl_before.sqlite&tab=gaps&foo=1", store)
    assert state.trace == nccl and state.tab == "gaps" and state.warnings == ()
    assert notices == [
        "Ignored foo in the link: not a view setting of this tracedash version.",
        "The link names the file 'nsys2026.2_2gpu_nccl_before.sqlite': the address bar now holds the full link "
        "of its trace.",
    ]
    # a name no served file has, or a partial one, opens the default trace and says why (it said "not a trace id")
    for name in ("missing.sqlite", "nsys2026.2_2gpu_nccl_before"):
        state, notices = main_state(f"?trace={name}", store)
        assert state.trace == store.listed_ids()[0]
        assert notices == [
            f"Ignored trace={name!r} in the link: no trace named {name!r} is served here; using the default."
        ]


def test_zooms_never_evict_the_pages_from_the_response_cache():
    """Windowed slices (zooms) have their own LRU: a page load after many zooms is still served from memory."""
    from dashboard.app.views import ResponseCache

    cache = ResponseCache(entries=2, windowed_entries=3)
    cache.put(("overview", "trace=a@1"), {"v": 1})
    for i in range(10):
        cache.put(("timeline", f"t0_ns={i}&t1_ns={i + 1}&trace=a@1"), {"v": i})
    assert cache.get(("overview", "trace=a@1")) == {"v": 1}
    assert [cache.get(("timeline", f"t0_ns={i}&t1_ns={i + 1}&trace=a@1")) is not None for i in range(10)] == [
        False
    ] * 7 + [True] * 3
    cache.put(("gantt", "trace=a@1"), {"v": 2})
    cache.put(("kernels", "trace=a@1"), {"v": 3})  # the oldest whole-trace entry goes
    assert cache.get(("overview", "trace=a@1")) is None and cache.get(("kernels", "trace=a@1")) == {"v": 3}


def test_the_phase_figure_of_a_trace_without_dispatches_is_one_line():
    """Issue #11, 7: a panel that does not apply says in one line why; the figure stays for the export links."""
    app = create_app([nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"), SAMPLES / "generated_seed_shaped_108k.sqlite"])
    store = app.server.config["TRACE_STORE"]
    nccl, gen = sorted(store.ids(), key=lambda t: not t.startswith("nsys"))
    out = render_view(BY_NAME["phase_figure"], store, ViewState(trace=nccl))
    assert out["note"] == (
        "Where step time goes: no dispatches in this trace (no NVTX mark or range named "
        "CG_DISPATCH…; set the dispatch marker prefix to your server's marks)."
    )
    assert out["box_style"] == {"display": "none"} and out["links_style"] == {"display": "none"}
    assert out["figure"] is not None
    shown = render_view(BY_NAME["phase_figure"], store, ViewState(trace=gen))
    assert shown["note"] == "" and shown["box_style"] == {} and shown["links_style"] == {}


def test_a_missing_trace_id_is_quoted_with_its_control_characters_visible():
    """A link's trace id that is not served is quoted as Python writes it: a NUL byte reads as \\x00 in the
    notice (it showed as an invisible box glyph), an ordinary id reads as before."""
    app = create_app([SEED], uploads=False)
    store = app.server.config["TRACE_STORE"]
    assert store.explain_missing("\x00") == (
        "The link asks for trace '\\x00', which is not served here. Showing another trace."
    )
    assert store.explain_missing("gone.sqlite@12345678") == (
        "The link asks for trace 'gone.sqlite@12345678', which is not served here. Showing another trace."
    )
    with pytest.raises(TraceNotFoundError, match=r"^trace '\\x01' is not served here$"):
        store.get("\x01")


def test_a_page_sent_again_comes_from_the_page_cache_and_follows_the_traces_served(tmp_path):
    """The same link opened again is the same text, kept once; a new trace in the directory, a
    different link and a trace that fails to load are never answered from it."""
    import shutil

    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    shutil.copy(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"), trace_dir / "a.sqlite")
    app = create_app(trace_dirs=[trace_dir], uploads=False)
    client, pages = app.server.test_client(), app.server.config["PAGE_CACHE"]
    tid = app.server.config["TRACE_STORE"].ids()[0]

    def layout(search: str) -> str:
        resp = client.get("/_dash-layout", headers={"Referer": f"http://localhost/{search}"})
        assert resp.status_code == 200
        return resp.get_data(as_text=True)

    first = layout(f"?trace={tid}")
    assert '"figure"' in first and len(pages) == 1
    assert layout(f"?trace={tid}") == first and len(pages) == 1
    assert layout(f"?trace={tid}&tab=gaps") != first and len(pages) == 2
    shutil.copy(SAMPLES / "generated_seed_shaped_108k.sqlite", trace_dir / "b.sqlite")
    again = layout(f"?trace={tid}")
    assert "b.sqlite" in again and "b.sqlite" not in first and len(pages) == 3  # the picker lists the new file
    (trace_dir / "c.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)  # not a readable export
    bad = next(t for t in app.server.config["TRACE_STORE"].ids() if t.startswith("c.sqlite"))
    assert "c.sqlite" in layout(f"?trace={bad}") and len(pages) == 3  # a page showing a load error is not kept


def test_view_outputs_hold_figures_as_the_json_dash_sends():
    """render_view converts each figure once to the plain dict the browser receives (numeric arrays
    base64-encoded): a cached response is sent without converting it again, and it is the same JSON."""
    from plotly.io.json import to_json_plotly

    from dashboard.render import timeline_view

    app = create_app([SAMPLES / "generated_seed_shaped_108k.sqlite"], uploads=False)
    store = app.server.config["TRACE_STORE"]
    state = ViewState(trace=store.ids()[0], t0_ns=2_000_000_000, t1_ns=2_001_000_000)
    out = render_view(BY_NAME["timeline"], store, state)
    assert type(out["figure"]) is dict and set(out["figure"]) == {"data", "layout"}
    kernels = next(t for t in out["figure"]["data"] if t["name"].startswith("kernels: "))
    assert set(kernels["base"]) == {"dtype", "bdata"}  # base64, as plotly's to_plotly_json gives
    fig, _ = timeline_view(store.get(state.trace), state)
    fig.update_layout(height=max(int(fig.layout.height), 470))
    assert json.loads(to_json_plotly(out["figure"])) == json.loads(to_json_plotly(fig))


def test_idle_left_out_of_a_window_is_said_in_the_status_line():
    """108k sample, 2.00-2.05 s (the fresh-clone QA's window): the busy bars fit the budget, the gaps do not;
    idle is then the space between the bars, and the status line says so (the GPU idle trace is absent)."""
    from dashboard.render import timeline_view

    trace = load_trace(SAMPLES / "generated_seed_shaped_108k.sqlite")
    state = ViewState(trace="t@" + "0" * 32, t0_ns=2_000_000_000, t1_ns=2_050_000_000)
    fig, _ = timeline_view(trace, state)
    status = " ".join(a.text for a in fig.layout.annotations if a.name == "status").replace("<br>", " ")
    assert "GPU idle shown as the space between busy bars" in status
    assert "GPU idle" not in [t.name for t in fig.data]
    whole, _ = timeline_view(trace, ViewState(trace="t@" + "0" * 32))
    assert "GPU idle shown as the space" not in " ".join(a.text for a in whole.layout.annotations if a.name == "status")


def test_a_summarys_bar_chart_of_nvtx_totals_cannot_be_zoomed():
    """Its x axis is union time, not session time: a drag must not read as a window of the trace."""
    from dashboard.render import timeline_view

    fig, _ = timeline_view(load_trace(SEED), ViewState(trace="seed@" + "0" * 32))
    assert fig.layout.xaxis.fixedrange is True and fig.layout.yaxis.fixedrange is True
    assert not (fig.layout.meta or {}).get("time_axis")  # the page's zoom sync skips it (assets/tracedash.js)


@pytest.mark.parametrize("pid_base", [100, 1 << 40], ids=["packed-index", "merge-fallback"])
def test_launch_calls_join_on_process_and_correlation_id_taking_the_first_call(pid_base):
    """A kernel's launch call: the first API row with its (pid, correlation id); the same correlation id in
    another process is another call; a kernel without one gets None / NaN. Both joins (the per-trace index, and
    the merge for ids too large to pack) answer the same."""
    from dashboard.analysis.launches import launch_index
    from dashboard.render import _launch_calls

    p0, p1 = pid_base, pid_base + 1
    api = pd.DataFrame(
        {
            "pid": [p0, p1, p0, p0],
            "correlation_id": [7, 7, 9, 7],
            "name": pd.Series(
                ["cudaLaunchKernel_v7000", "cuLaunchKernelEx", "cudaMemcpyAsync_v3020", "cudaLaunchKernel_ptsz"],
                dtype="category",
            ),
            "start_ns": [10, 20, 30, 40],
            "end_ns": [11, 21, 31, 41],
            "global_tid": [1, 2, 3, 4],
            "tid": [5, 6, 7, 8],
        }
    )
    kernels = pd.DataFrame({"pid": [p1, p0, p0, p1], "correlation_id": [7, 7, 8, 9]}, index=[3, 5, 8, 13])
    out = _launch_calls(kernels, api)
    assert (launch_index(api).keys is None) == (pid_base > 1 << 29)
    assert out.index.tolist() == [3, 5, 8, 13]
    assert out["api_name"].tolist() == ["cuLaunchKernelEx", "cudaLaunchKernel", None, None]
    assert out["api_start_ns"].tolist()[:2] == [20, 10] and out["api_start_ns"].isna().tolist() == [
        False,
        False,
        True,
        True,
    ]
    assert out["api_tid"].tolist()[:2] == [6, 5] and out["api_pid"].tolist()[:2] == [p1, p0]
    # a zoom's drawn kernels (index labels: row positions in the trace's frame) looked up in the kept join
    from dashboard.analysis.launches import kernel_launches

    frame = kernels.reset_index(drop=True)
    drawn = frame.iloc[[3, 0, 1]]
    assert _launch_calls(drawn, api, kernel_launches(frame, api)).equals(_launch_calls(drawn, api))
    assert _launch_calls(drawn, api, kernel_launches(frame, api))["api_name"].tolist() == [
        None,
        "cuLaunchKernelEx",
        "cudaLaunchKernel",
    ]


def test_per_phase_says_whether_the_trace_or_the_window_holds_no_dispatch():
    app = create_app(
        [SAMPLES / "generated_seed_shaped_108k.sqlite", nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")], uploads=False
    )
    store = app.server.config["TRACE_STORE"]
    seed_shaped, nccl = sorted(store.ids(), key=lambda t: not t.startswith("generated"))
    far = dict(t0_ns=900_000_000_000, t1_ns=900_000_100_000, stats="window")
    out = render_view(BY_NAME["phases"], store, ViewState(trace=seed_shaped, **far))
    assert out["empty"] == "No dispatch step overlaps the visible window." and out["grid_style"] == {"display": "none"}
    assert render_view(BY_NAME["phases"], store, ViewState(trace=seed_shaped))["empty"] == ""
    for state in (ViewState(trace=nccl), ViewState(trace=nccl, **far)):
        assert render_view(BY_NAME["phases"], store, state)["empty"] == (
            "No dispatch marks named CG_DISPATCH… in this trace: set the dispatch marker prefix to your server's marks."
        )


def test_a_long_card_hint_spans_columns_instead_of_being_cut():
    """5 lines of a one-column card hold ~160 characters: the Kineto sample's input rows hint (~500)
    was cut off mid-word; it now spans three columns (the card's hover still has all of it)."""
    from dashboard.app.components import card_span, cards
    from dashboard.render import overview_cards

    hints = {c.label: c for c in overview_cards(load_trace(SAMPLES / "h100_qwen1.5_0.5b_chat.json.gz"), ViewState())}
    rows = hints["Input rows"]
    assert len(rows.hint) > 320 and card_span(rows.hint) == 3
    assert [card_span("x" * n) for n in (0, 160, 161, 320, 321)] == [1, 1, 2, 2, 3]
    (div,) = cards([rows])
    assert div.className == "card span-3" and div.title == rows.hint


def test_a_window_with_more_busy_intervals_than_the_budget_bins_every_lane_with_its_exact_busy_time():
    """Two devices, 4 busy intervals in the window against a budget of 3: both lanes binned (no interval copied),
    busy clipped to the window: device 0 [5, 10) [20, 30) [40, 42) = 17 ns, device 1 [25, 35) = 10 ns."""
    unions = {
        0: (np.array([0, 20, 40], np.int64), np.array([10, 30, 50], np.int64)),
        1: (np.array([25], np.int64), np.array([35], np.int64)),
    }
    lanes = lanes_for_window(unions, lo_ns=5, hi_ns=42, budget=3, n_bins=4)
    assert [(x.device_id, x.mode, x.busy_ns) for x in lanes] == [(0, "bins", 17), (1, "bins", 10)]
    assert lanes[0].edges.tolist() == [5, 14, 24, 33, 42] and lanes[1].gap_starts.size == 0
    assert lanes[1].fraction.tolist() == pytest.approx([0, 0, 8 / 9, 2 / 9])  # [25, 35) in each bin
    within = lanes_for_window(unions, lo_ns=5, hi_ns=42, budget=100, n_bins=4)  # within the budget: intervals
    assert [(x.mode, x.busy_ns) for x in within] == [("intervals", 17), ("intervals", 10)]
