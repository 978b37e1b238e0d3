"""One view state (issue 11): what is on screen, in the address bar, in captions and file names agree.

A seeded random sequence of zooms, control changes, row clicks and table sorts; after every step each
caption is checked against its figure's x range, and at the end the link opened in a fresh browser
context reproduces the same figure ranges, captions, control values and table states.
"""

import json
import random
import re
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from playwright.sync_api import Page, expect
from plotly.offline import get_plotlyjs_version

from dashboard.app import create_app
from dashboard.app.load_banner import POLL_MS
from dashboard.app.trace_files import trace_id

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from waits import figure_js, grid_js, present, zoom  # noqa: E402

from window_fixture import WINDOW, write_window_fixture  # noqa: E402

pytestmark = pytest.mark.browser
GRAPHS = ("timeline", "gantt", "phase-analysis")
GRIDS = {
    "kernels": "kernel-table",
    "api": "api-table",
    "dispatches": "dispatch-table",
    "gaps": "gap-table",
    "nvtx": "nvtx-table",
}
TAB_LABELS = {
    "kernels": "Kernels",
    "api": "CUDA API calls",
    "dispatches": "Dispatches",
    "gaps": "Idle gaps",
    "nvtx": "NVTX ranges",
}


@pytest.fixture(scope="session")  # the long test runs first, apart from the others (tests/conftest.py)
def small_trace(tmp_path_factory):
    from make_trace import generate

    path = tmp_path_factory.mktemp("vs") / "small_seed_shaped.sqlite"
    generate(path, 12_000, seed=3)
    return path


def track_callbacks(page: Page) -> dict:
    """Count Dash callback requests in flight (for ``wait_idle``)."""
    box = {"n": 0}

    def started(r):
        if "_dash-update-component" in r.url:
            box["n"] += 1

    def ended(r):
        if "_dash-update-component" in r.url:
            box["n"] -= 1

    page.on("request", started)
    page.on("requestfinished", ended)
    page.on("requestfailed", ended)
    return box


def wait_idle(page: Page, box: dict, quiet_ms: int = 500, timeout_ms: int = 30000):
    """Wait until no callback has been in flight for ``quiet_ms``."""
    waited, quiet = 0, 0
    while quiet < quiet_ms:
        page.wait_for_timeout(100)
        waited += 100
        quiet = quiet + 100 if box["n"] <= 0 else 0
        assert waited < timeout_ms, "callbacks still running"


def view_of(page: Page) -> dict:
    """What the page shows: figure x ranges, captions and download names, controls, tables."""
    return page.evaluate(
        """() => {
      const out = {figures: {}, grids: {}, controls: {}};
      for (const id of %s) {
        const gd = document.querySelector('#' + id + ' .js-plotly-plot');
        if (!gd || !gd.layout) { continue; }
        const caption = (gd.layout.annotations || []).map(a => a.text || '').find(t => t.includes('tracedash ·'));
        out.figures[id] = {range: gd.layout.xaxis && gd.layout.xaxis.range ? gd.layout.xaxis.range.map(Number) : null,
                           caption: caption ? caption.replace(/<br>/g, ' ') : null,
                           filename: (gd._context.toImageButtonOptions || {}).filename || null};
      }
      for (const [t, id] of Object.entries(%s)) {
        try {
          const api = dash_ag_grid.getApi(id);
          const sorted = api.getColumnState().filter(c => c.sort).map(c => (c.sort === 'desc' ? '-' : '') + c.colId);
          out.grids[t] = {sort: sorted, filter: api.getFilterModel(), rows: api.getDisplayedRowCount()};
        } catch (e) { out.grids[t] = null; }
      }
      const val = sel => { const el = document.querySelector(sel); return el ? el.value : null; };
      const checked = id => Array.from(document.querySelectorAll('#' + id + ' input:checked')).map(i => i.value);
      out.controls = {threshold: val('#phase-threshold'), prefix: val('#dispatch-prefix'), gap: val('#gap-threshold'),
                      busy: checked('busy-source'), stats: checked('stats-for'), lanes: checked('timeline-lanes'),
                      names: checked('kernel-names'), group: checked('nvtx-group'),
                      tab: (document.querySelector('#table-tabs .tab--selected') || {}).innerText};
      return out;
    }"""
        % (list(GRAPHS), GRIDS)
    )


def params(page: Page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}


def fmt_window(a: int, b: int) -> str:
    return f"{a:,}–{b:,} ns" if b - a < 10_000 else f"{a / 1e9:.6f}–{b / 1e9:.6f} s"


def check_captions(page: Page, view: dict):
    """Every caption and file name against its figure's x range (or "whole trace")."""
    q = params(page)
    window = (int(q["t0_ns"]), int(q["t1_ns"])) if "t0_ns" in q else None
    for gid in ("timeline", "gantt"):
        fig = view["figures"][gid]
        if window is None:
            assert "whole trace" in fig["caption"] and fig["filename"].endswith("_whole"), (gid, fig)
        else:
            lo, hi = fig["range"]
            assert abs(lo * 1e9 - window[0]) < 2 and abs(hi * 1e9 - window[1]) < 2, (gid, fig["range"], window)
            assert f"window {fmt_window(*window)}" in fig["caption"], (gid, fig["caption"])
            assert fig["filename"].endswith(f"_{window[0]}-{window[1]}ns"), (gid, fig["filename"])
    phases = view["figures"]["phase-analysis"]
    if window is not None and q.get("stats") == "window":
        assert f"window {fmt_window(*window)}" in phases["caption"], phases["caption"]
    else:
        assert "whole trace" in phases["caption"] and phases["filename"].endswith("_whole"), phases


def open_tab(page: Page, box: dict, tab: str):
    page.locator("#table-tabs").get_by_text(TAB_LABELS[tab], exact=True).click()
    wait_idle(page, box)


@pytest.mark.long
def test_random_sequence_then_the_link_reproduces_the_view(
    page: Page, serve, browser, small_trace, artifacts, console_errors
):
    page.set_viewport_size({"width": 1600, "height": 1000})
    box = track_callbacks(page)
    base = serve(create_app([small_trace]))
    page.goto(base)
    page.locator("#gantt .legendtext").first.wait_for(state="visible", timeout=30000)
    wait_idle(page, box)
    # The timeline: full width, directly under the cards, at least 45 % of the viewport's height.
    tl = page.locator("#timeline").bounding_box()
    cards = page.locator("#overview").bounding_box()
    gantt = page.locator("#gantt").bounding_box()
    assert tl["height"] >= 450 and tl["width"] >= 0.9 * 1600 - 60 and tl["y"] > cards["y"] and gantt["y"] > tl["y"]
    check_captions(page, view_of(page))
    lo, hi = page.evaluate("() => document.querySelector('#timeline .js-plotly-plot').layout.xaxis.range")
    # six steps of this seed take every kind: a dispatch row, a busy source, a zoom, the window's statistics, a gap
    # row of those statistics and a sort (the earlier seed's nine steps never sorted)
    rng = random.Random(20261329)
    steps = []
    for _step in range(6):
        kind = rng.choice(["zoom", "control", "row", "sort"])
        if kind == "zoom":
            a = lo + (hi - lo) * rng.uniform(0, 0.6)
            b = a + (hi - lo) * rng.uniform(0.05, 0.3)
            zoom(page, "timeline", a, b)
            page.wait_for_function(
                f"() => new URLSearchParams(location.search).get('t0_ns') == '{round(a * 1e9)}'", timeout=30000
            )
        elif kind == "control":
            which = rng.choice(["threshold", "busy", "stats", "names", "gap", "lanes"])
            if which == "threshold":
                page.fill("#phase-threshold", str(rng.choice([2, 100, 700, 1000])))
                page.press("#phase-threshold", "Enter")
            elif which == "busy":
                page.locator("#busy-source input:not(:checked)").first.check()
            elif which == "stats":
                page.locator("#stats-for input:not(:checked)").first.check()
            elif which == "names":
                open_tab(page, box, "kernels")
                page.locator("#kernel-names input:not(:checked)").first.check()
            elif which == "gap":
                open_tab(page, box, "gaps")
                page.fill("#gap-threshold", str(rng.choice([1, 5, 50])))
                page.press("#gap-threshold", "Enter")
            else:
                lanes = page.locator("#timeline-lanes input")  # the lanes this trace has rows for
                lanes.nth(rng.randrange(lanes.count())).click()
            kind += ":" + which
        elif kind == "row":
            tab = rng.choice(["dispatches", "gaps", "kernels"])
            open_tab(page, box, tab)
            grid = GRIDS[tab]
            n = page.evaluate(
                f"() => {{ try {{ return dash_ag_grid.getApi('{grid}').getDisplayedRowCount(); }}"
                " catch (e) { return -1; } }"
            )
            assert n >= 0, steps
            kind += ":" + tab
            if n > 0:  # a window may hold no rows of this table (stats for the visible window)
                before = params(page).get("mark")
                row = page.evaluate(f"() => dash_ag_grid.getApi('{grid}').getDisplayedRowAtIndex(0).data")
                page.locator(f"#{grid}").scroll_into_view_if_needed()
                page.locator(f"#{grid} .ag-center-cols-container .ag-row[row-index='0'] .ag-cell").nth(1).click()
                if row.get("end_ns") is not None and row["end_ns"] > row["start_ns"]:
                    want = {"gaps": "gap", "dispatches": "dispatch", "kernels": "kernel"}[tab]
                    page.wait_for_function(
                        f"() => (new URLSearchParams(location.search).get('mark') || '')"
                        f".startsWith('{want}:{row['start_ns']}-')",
                        timeout=30000,
                    )
                    assert params(page)["mark"] == f"{want}:{row['start_ns']}-{row['end_ns']}", (before, steps)
        else:
            tab = rng.choice(list(GRIDS))
            open_tab(page, box, tab)
            grid = GRIDS[tab]
            cols = page.evaluate(
                f"() => dash_ag_grid.getApi('{grid}').getColumnState().filter(c => !c.hide).map(c => c.colId)"
            )
            col = rng.choice([c for c in cols if c != "metric"])
            page.locator(f"#{grid}").scroll_into_view_if_needed()
            page.locator(f"#{grid} .ag-header-cell[col-id='{col}'] .ag-header-cell-label").click()
            kind += f":{tab}.{col}"
        wait_idle(page, box)
        if kind.startswith("row:") and n > 0:  # new rows (a window's statistics) never leave the outline on another row
            assert page.evaluate(f"""() => {{ const api = dash_ag_grid.getApi('{grid}'); const c = api.getFocusedCell();
                if (!c) return true; const node = api.getDisplayedRowAtIndex(c.rowIndex);
                return !!node && node.data.row_id === {json.dumps(row.get("row_id"))}; }}"""), steps
        steps.append(kind)
        view = view_of(page)
        check_captions(page, view)
    assert [k.split(":")[0] for k in steps] == ["row", "control", "zoom", "control", "row", "sort"], steps
    page.screenshot(path=str(artifacts / "view_state_sequence.png"), full_page=True)
    url, shown = page.url, view_of(page)

    other = browser.new_context(viewport={"width": 1600, "height": 1000})
    p2 = other.new_page()
    box2 = track_callbacks(p2)
    p2.goto(url)
    p2.locator("#gantt .legendtext").first.wait_for(state="visible", timeout=30000)
    wait_idle(p2, box2)
    for tab in GRIDS:  # a grid reports its state once drawn
        open_tab(p2, box2, tab)
    open_tab(
        p2,
        box2,
        shown["controls"]["tab"] and next(t for t, label in TAB_LABELS.items() if label == shown["controls"]["tab"]),
    )
    again = view_of(p2)
    assert p2.url == url, steps  # opening a link never rewrites it
    for gid in GRAPHS:
        assert again["figures"][gid]["caption"] == shown["figures"][gid]["caption"], (steps, gid)
        assert again["figures"][gid]["filename"] == shown["figures"][gid]["filename"], (steps, gid)
    for gid in ("timeline", "gantt"):
        assert again["figures"][gid]["range"] == pytest.approx(shown["figures"][gid]["range"], abs=1e-9), (steps, gid)
    assert again["controls"] == shown["controls"], steps
    for t in GRIDS:
        if shown["grids"][t] is not None:
            assert again["grids"][t]["sort"] == shown["grids"][t]["sort"], (steps, t)
            assert again["grids"][t]["filter"] == shown["grids"][t]["filter"], (steps, t)
    other.close()
    assert console_errors == []


def test_window_statistics_match_the_hand_computed_values(page: Page, serve, tmp_path, console_errors):
    path = write_window_fixture(tmp_path / "window.sqlite")
    base = serve(create_app([path]))
    query = urlencode({"trace": trace_id(path), "t0_ns": WINDOW[0], "t1_ns": WINDOW[1], "stats": "window", "v": 1})
    page.goto(f"{base}/?{query}")
    overview = page.locator("#overview")
    # busy union of [80,100) ∪ [120,400) ∪ [500,520)
    expect(present(overview)).to_contain_text("320 ns", timeout=30000)
    cards = {
        c.locator(".card-label").inner_text().strip().lower(): c.locator(".card-value").inner_text()
        for c in overview.locator(".card").all()
    }
    assert cards["gpu activity span"] == "440 ns" and cards["any gpu busy"] == "320 ns"  # two GPUs
    assert cards["kernels"] == "4"
    expect(page.locator("#overview-scope")).to_have_text("Stats for: window 80–520 ns (intervals clipped at its edges)")
    expect(page.locator("#gpu-scope")).to_contain_text("window 80–520 ns")
    expect(page.locator("#findings-scope")).to_have_text(  # findings never follow the window, and say so
        "Stats for: whole trace (findings rank the whole trace, also when the panels below show the visible window)"
    )
    page.wait_for_function(grid_js("kernel-table", "n === 4"), timeout=30000)
    rows = page.evaluate(
        "() => { const o = {}; dash_ag_grid.getApi('kernel-table').forEachNode(n => "
        "o[n.data.name] = [n.data.count, n.data.total_ns]); return o; }"
    )
    assert rows == {"a": [1, 20], "b": [1, 250], "c": [1, 20], "d": [1, 60]}
    gpu = page.evaluate(
        "() => { const t = document.getElementById('gpu-table');"
        " const head = [...t.querySelectorAll('th')].map(h => h.innerText.trim()); const o = {};"
        " t.querySelectorAll('tbody tr').forEach(r => { const c = [...r.cells].map(x => x.innerText);"
        " o[c[0]] = Object.fromEntries(head.map((h, i) => [h, c[i]])); }); return o; }"
    )
    busy = gpu["Busy (union)"]
    assert [h for h in busy if h] == ["GPU 0", "GPU 1", "any GPU"], busy
    assert (busy["GPU 0"], busy["GPU 1"], busy["any GPU"]) == ("290 ns", "60 ns", "320 ns")
    # the same link with "whole trace": every panel says so, and the numbers are the whole trace's
    page.goto(f"{base}/?{query.replace('stats=window&', '')}")
    expect(present(page.locator("#overview-scope"))).to_have_text("Stats for: whole trace", timeout=30000)
    kernels_card = overview.locator(".card").filter(has=page.locator(".card-label", has_text=re.compile(r"^Kernels$")))
    expect(kernels_card.locator(".card-value")).to_have_text("6")
    assert console_errors == []


def _open_counting(page: Page, url: str, scripts: list[str] | None = None) -> list[str]:
    """Open ``url``; the outputs of every callback request sent until the page is drawn and quiet (and in
    ``scripts`` the path of every script fetched)."""
    sent: list[str] = []
    page.on(
        "request",
        lambda r: (
            sent.append((r.post_data_json or {}).get("output", "")) if "_dash-update-component" in r.url else None
        ),
    )
    if scripts is not None:
        page.on("request", lambda r: scripts.append(urlsplit(r.url).path) if r.resource_type == "script" else None)
    box = track_callbacks(page)
    page.goto(url)
    page.wait_for_function(figure_js("timeline", "gd._fullLayout && gd.querySelector('.main-svg')"), timeout=60000)
    # a page whose trace is still loading polls its status (load_banner.POLL_MS after each answer), which can look
    # quiet between two polls:
    # its views are asked for only once the line is hidden (the load has ended)
    page.wait_for_function("() => (e => e && e.hidden)(document.getElementById('load-status'))", timeout=60000)
    wait_idle(page, box)
    return sent


@pytest.mark.parametrize("how", ["referer", "no-referer", "large", "large-slow-polls"])
def test_a_link_opens_drawn_with_the_fewest_callbacks(page: Page, serve, small_trace, monkeypatch, how, console_errors):
    """The page of a link arrives drawn in the layout response (no view callback on load); without a
    Referer the shell is routed once; a large trace not yet in memory gets its frame at once, its load
    status polled, and its views through one callback each. In every case the page shows the link's
    view. (On the first page, no mode-bar button sends data off the machine: ``assert_no_cloud_buttons``.)

    ``large-slow-polls``: each poll answer takes longer than the poll's period, as on a server busy loading.
    Dash drops a callback's answer when the same callback is asked again before it arrives, so a poll on a
    fixed period never showed an answer and the page stayed on its status line."""
    import dashboard.app as appmod

    if how.startswith("large"):
        monkeypatch.setattr(appmod, "QUICK_LOAD_BYTES", 0)
    app = create_app([small_trace])
    if how == "large-slow-polls":
        store = app.server.config["TRACE_STORE"]
        load_status = store.load_status

        def slow_load_status(trace_id):
            status = load_status(trace_id)
            time.sleep(POLL_MS / 1000 * 2.4)
            return status

        monkeypatch.setattr(store, "load_status", slow_load_status)
    if how == "no-referer":  # as a proxy or a browser setting that strips it would
        inner = app.server.wsgi_app

        def strip_referer(environ, start_response):
            environ.pop("HTTP_REFERER", None)
            return inner(environ, start_response)

        app.server.wsgi_app = strip_referer
    tid = app.server.config["TRACE_STORE"].ids()[0]
    url = serve(app) + f"/?trace={tid}&tab=api&api_sort=-count&t0_ns=1000000000&t1_ns=1100000000"
    scripts: list[str] = []
    sent = _open_counting(page, url, scripts)
    # figures are drawn by the partial plotly.js bundle of the installed plotly's version, never the full one
    assert "/assets/vendor/plotly-cartesian.min.js" in scripts and not [s for s in scripts if "plotly.min.js" in s]
    assert page.evaluate("() => Plotly.version") == get_plotlyjs_version()
    view = view_of(page)
    assert view["controls"]["tab"] == "CUDA API calls"
    assert view["grids"]["api"]["sort"] == ["-count"] and view["grids"]["api"]["rows"] > 0
    lo, hi = view["figures"]["timeline"]["range"]
    assert abs(lo - 1.0) < 1e-9 and abs(hi - 1.1) < 1e-9
    if how == "referer":
        assert sent == []
    elif how == "no-referer":
        assert sent == ["page.children"]
    else:
        from dashboard.app.views import VIEWS

        kicked = [v.name for v in VIEWS if v.on_load]
        polls = [s for s in sent if s.startswith("..load-status.children")]
        views = [s for s in sent if not s.startswith("..load-status.children")]
        assert len(views) == len(kicked) and all(views)  # asked once each, by the load poll as the load ended
        assert len(polls) >= 1
    if how == "referer":  # on the drawn page: no mode-bar button sends data off the machine
        assert_no_cloud_buttons(page)
    assert console_errors == []


def assert_no_cloud_buttons(page: Page):
    """No mode-bar button of the page's figures can upload (cloud, Chart Studio, share, plotly.com), nor
    any graph config that would; no "Reset axes" (after a zoom it reset to the zoom itself: the figure is
    redrawn with the window)."""
    page.locator("#timeline .js-plotly-plot").hover()
    titles = page.evaluate(
        "() => Array.from(document.querySelectorAll('.modebar-btn')).map(b => b.getAttribute('data-title') || '')"
    )
    assert titles and not [t for t in titles if re.search(r"cloud|chart studio|share|edit in|plotly", t, re.I)]
    assert "Autoscale" in titles and "Reset axes" not in titles
    contexts = page.evaluate(
        "() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(gd => "
        "[gd._context.showSendToCloud, gd._context.showEditInChartStudio, gd._context.showLink,"
        " gd._context.plotlyServerURL])"
    )
    assert contexts and not any(v for c in contexts for v in c)  # nothing that could upload is switched on
    # every key of the graphs' config is one the bundled plotly.js knows: it drops the others, and dcc.Graph's
    # config then differed from the graph's at every update, which Plotly.react answers with a whole new plot
    known = set(page.evaluate("() => Object.keys(Plotly.PlotSchema.get().config)"))
    from dashboard.app.components import graph_config

    assert set(graph_config("f")) <= known, set(graph_config("f")) - known
    # a drawn figure's traces keep the arrays Plotly decoded (tracedash.js): dcc.Graph's second Plotly.react after
    # a zoom finds them unchanged instead of decoding new ones, which Plotly takes for new data
    kinds = page.evaluate(
        "() => document.querySelector('#timeline .js-plotly-plot').data.flatMap(t => ['base', 'x']"
        ".filter(k => t[k] && typeof t[k] === 'object' && !Array.isArray(t[k]))"
        ".map(k => ArrayBuffer.isView(t[k]) ? 'typed' : 'encoded'))"
    )
    assert kinds and set(kinds) == {"typed"}, kinds


def test_the_page_trims_strings_as_the_specification_says(page: Page, serve, small_trace, console_errors):
    """tracedash.js puts the specification's String.prototype.trim back over the polyfill's slow one (Plotly trims
    every bar's colour at every draw): it trims what the specification calls white space, and nothing else."""
    page.goto(serve(create_app([small_trace])))
    page.wait_for_function("() => !!window.dash_clientside && !!window.dash_clientside.tracedash")
    cases = {"  a b  ": "a b", "\ufeff\u00a0x\u2029\u3000": "x", "\u180ex\u180e": "\u180ex\u180e", "\x85x": "\x85x"}
    assert page.evaluate("cs => cs.map(c => c.trim())", list(cases)) == list(cases.values())
    assert (
        page.evaluate("() => { try { String.prototype.trim.call(null); } catch (e) { return e.name; } }") == "TypeError"
    )
    assert console_errors == []
