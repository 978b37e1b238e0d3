"""Page load against the floor, for this tree and a baseline commit, in one run on one machine.

Run: ``.venv/bin/python benchmarks/page_load.py [TRACE ...] [--runs 4] [--baseline 5b1e355] [--big] [--quick]
[--empty-cache | --warm-cache | --zoom [--zoom-runs N]]``
(``--quick``: the tiny NVTX sample, no baseline, the browser tests' headless shell: first one round of ``--zoom``
in four zooms (its fresh server also writes the Parquet cache the rest finds), then one floor load, the table with
one load (its fresh server's first page, in memory too) and no load without start-up warming, then one
``--warm-cache`` load: seconds; `make test` runs it)

What is measured (the way the speed targets state it, as ../shared/tools/page_ready.py does):

- **floor**: a minimal Dash app in this environment (two ``dcc.Graph`` and one AG Grid, one callback);
- per trace and per tree (this working tree, then the ``--baseline`` commit, extracted with ``git archive``),
  ``tracedash serve --port P TRACE`` is started as a process and the page opened in fresh Chromium contexts:
  - ``settled``: from navigation until the end of the last ``_dash-update-component`` response, once at least
    one figure is drawn and no callback has been in flight for 1 s (a page that sends no callback on load, as
    tracedash's since its views arrive drawn in the ``_dash-layout`` response, is settled at the end of that
    response: the last one carrying what the page shows);
  - ``drawn``: from navigation until every Plotly figure on the page has its SVG and every AG Grid has rows or
    its "no rows" overlay (or the page shows an error alert).
  The first load of a fresh server is "fresh server" (the Parquet cache was warmed by an earlier server, so it
  is the "cache warm" case), opened as soon as ``/healthz`` answers, while the server's start-up warming
  (``server.start_warming``: it reads the default trace and renders its page) is still running; for this tree
  the same load with that warming off (``TRACEDASH_NO_WARM=1``) is printed after it. The median of the later
  loads is "in memory".

``--zoom`` measures instead the timeline's zoom round trip in the browser: a fresh server of this tree (start-up
warming on), the page opened and left until every view has answered, then zooms of the timeline from the whole GPU
activity down to 10 µs (as ``benchmarks/timeline.py``), each timed from ``Plotly.relayout`` (what a drag does) until
the timeline's figure is replaced and drawn; printed per zoom with the median, and the server's peak PSS over the
load and the zooms. With ``--baseline COMMIT`` (none by default here) that commit's tree is measured too, the trees
taking turns ``--zoom-runs`` times (this machine's speed drifts: compare runs taken side by side).

``--empty-cache`` measures instead the first page from an empty Parquet cache: per run a fresh server with a new, empty
cache folder, opened as soon as ``/healthz`` answers (its start-up warming on, as ``tracedash serve`` runs), until the
trace's numbers are on it (``READY``: overview cards and a timeline with data), and when the load status line first
showed; the trees take turns, ``--runs`` loads each, the median printed against the floor's settled time.
``--warm-cache`` measures the same with the trace's Parquet cache entry in place (written by a server of that tree
first): a fresh server's first page when the trace was opened before.

Each figure prints as ``floor + extra``; beside them the server's peak memory (PSS summed over its processes,
see ``sample_rss``) over the loads of the fresh server. ``--big`` adds a 2M-kernel trace from
``benchmarks/make_trace.py``.
The full run is not part of ``make test``; ``--quick`` is.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-quic",
    "--no-first-run",
]
DEFAULT_TRACES = ["nsys2022.4_cpu_llm_server_nvtx.sqlite", "generated_seed_shaped_108k.sqlite"]
# Every figure drawn and every grid filled (or showing its no-rows overlay); any error alert also ends the wait.
DRAWN = """() => {
  if (document.querySelector('.alert-error')) return true;
  const figs = [...document.querySelectorAll('.js-plotly-plot')].filter(g => g.offsetParent !== null);
  if (!figs.length || !figs.every(g => g._fullLayout && g.querySelector('.main-svg'))) return false;
  const grids = [...document.querySelectorAll('.ag-root-wrapper')].filter(g => g.offsetParent !== null);
  return grids.every(g => g.querySelector('.ag-row')
    || g.querySelector('.ag-overlay-no-rows-center, .ag-overlay-no-matching-rows-center'));
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def floor_server():
    """The floor: a minimal Dash app with two dcc.Graph and one AG Grid, served on a free port."""
    import logging

    import dash
    import dash_ag_grid as dag
    import plotly.graph_objects as go
    from dash import Input, Output, dcc, html
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = dash.Dash(__name__)
    app.layout = html.Div(
        [
            dcc.Location(id="url"),
            dcc.Graph(id="g1"),
            dcc.Graph(id="g2"),
            dag.AgGrid(id="t", columnDefs=[{"field": "a"}], rowData=[]),
        ]
    )

    @app.callback(Output("g1", "figure"), Output("g2", "figure"), Output("t", "rowData"), Input("url", "search"))
    def fill(_):
        return go.Figure(go.Bar(x=[1, 2], y=[1, 2])), go.Figure(go.Bar(x=[1, 2], y=[1, 2])), [{"a": 1}]

    srv = make_server("127.0.0.1", 0, app.server, threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_port}/"


def track_callbacks(page) -> dict:
    """Dash callback requests of ``page`` as they go: ``inflight`` (how many), ``last`` (when the last one ended,
    perf_counter s) and ``layout`` (when the ``_dash-layout`` response ended)."""
    state = {"inflight": 0, "last": None, "layout": None}

    def req(r):
        if "_dash-update-component" in r.url:
            state["inflight"] += 1

    def done(r):
        if "_dash-update-component" in r.url:
            state["inflight"] -= 1
            state["last"] = time.perf_counter()
        elif "_dash-layout" in r.url:
            state["layout"] = time.perf_counter()

    page.on("request", req)
    page.on("requestfinished", done)
    page.on("requestfailed", done)
    return state


def load_once(browser, url: str) -> tuple[float, float]:
    """(settled_s, drawn_s) of one page load in a fresh context at 1600×1000."""
    ctx = browser.new_context(viewport={"width": 1600, "height": 1000})
    page = ctx.new_page()
    state = track_callbacks(page)  # the handlers write into this dict: add to it, never copy it
    state["drawn"] = None
    t0 = time.perf_counter()
    page.goto(url, timeout=300_000)
    page.wait_for_function("() => !!document.querySelector('.js-plotly-plot .main-svg')", timeout=300_000, polling=25)
    first_figure = time.perf_counter()
    while time.perf_counter() - t0 < 300:
        if state["drawn"] is None and page.evaluate(DRAWN):
            state["drawn"] = time.perf_counter() - t0
        quiet_since = state["last"] if state["last"] is not None else first_figure
        if state["inflight"] == 0 and time.perf_counter() - quiet_since > 1.0 and state["drawn"] is not None:
            break
        page.wait_for_timeout(25)
    ctx.close()
    # A page whose views arrive drawn (in the layout) sends no callback on load: its last data response is the layout.
    settled = max(x for x in (state["last"], state["layout"], t0) if x is not None) - t0
    return settled, state["drawn"] if state["drawn"] is not None else float("nan")


def wait_up(port: int, proc: subprocess.Popen) -> None:
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
            return
        except Exception:
            time.sleep(0.25)
    raise RuntimeError("server did not start")


def serve(tree: Path, trace: Path, env: dict) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dashboard", "serve", "--port", str(port), str(trace)],
        cwd=tree,
        env={**env, "PYTHONPATH": str(tree)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_up(port, proc)
    return proc, port


def measure_trace(
    browser, tree: Path, trace: Path, runs: int, env: dict, no_warming: bool = True, cache_warm: bool = False
) -> dict:
    """Warm the cache with one server (unless ``cache_warm``: an earlier server of this tree wrote it), then a
    fresh server: first load and the median of the later ones (``no_warming``: then, for this tree, a third
    server's first load with its start-up warming off)."""
    if not cache_warm:
        proc, port = serve(tree, trace, env)
        try:
            load_once(browser, f"http://127.0.0.1:{port}/")
        finally:
            proc.terminate()
            proc.wait(30)
    proc, port = serve(tree, trace, env)
    peak, stop = [0], threading.Event()
    sampler = threading.Thread(target=sample_rss, args=(proc.pid, stop, peak), daemon=True)
    sampler.start()
    try:
        loads = [load_once(browser, f"http://127.0.0.1:{port}/") for _ in range(runs)]
    finally:
        stop.set()
        sampler.join()
        proc.terminate()
        proc.wait(30)
    rest = loads[1:] or loads
    cold = None
    if (
        no_warming and tree == ROOT
    ):  # the same first load with the server's start-up warming off: what that warming hides
        proc, port = serve(tree, trace, {**env, "TRACEDASH_NO_WARM": "1"})
        try:
            cold = load_once(browser, f"http://127.0.0.1:{port}/")
        finally:
            proc.terminate()
            proc.wait(30)
    return {
        "fresh": loads[0],
        "settled": statistics.median(x[0] for x in rest),
        "drawn": statistics.median(x[1] for x in rest),
        "loads": loads,
        "rss": peak[0],
        "cold": cold,
    }


# The trace's own numbers are on the page: overview cards and a timeline with data (a placeholder figure or an
# empty grid, which `DRAWN` accepts, is not enough for a page sent before its trace loaded).
READY = """() => {
  if (document.querySelector('.alert-error')) return true;
  const gd = document.querySelector('#timeline .js-plotly-plot');
  return !!document.querySelector('#overview .card-value') && !!gd && !!gd._fullData && gd._fullData.length > 0;
}"""


def first_ready(browser, url: str) -> tuple[float, float | None, float | None]:
    """(ready_s, status_s, complete_s) of one page load at 1600×1000: until ``READY``, until the load status line
    shows text (None: it never did, as on trees without it), and until the last view's answer arrived (the last
    callback response once the status line is gone and none has been in flight for 2 s; None: not within 300 s)."""
    ctx = browser.new_context(viewport={"width": 1600, "height": 1000})
    try:
        return first_ready_on(ctx.new_page(), url)
    finally:
        ctx.close()


def first_ready_on(page, url: str) -> tuple[float, float | None, float | None]:
    """``first_ready`` in ``page`` (left open)."""
    calls = track_callbacks(page)
    t0 = time.perf_counter()
    page.goto(url, timeout=300_000)
    status = ready = complete = None
    while time.perf_counter() - t0 < 300 and complete is None:
        if status is None and page.evaluate(
            "() => { const e = document.getElementById('load-status'); return !!e && !e.hidden && !!e.textContent; }"
        ):
            status = time.perf_counter() - t0
        if ready is None and page.evaluate(READY):
            ready = time.perf_counter() - t0
        if (
            ready is not None
            and calls["inflight"] == 0
            and calls["last"] is not None
            and time.perf_counter() - calls["last"] > 2
            and page.evaluate("() => { const e = document.getElementById('load-status'); return !e || e.hidden; }")
        ):
            complete = calls["last"] - t0
        page.wait_for_timeout(25)
    return (ready if ready is not None else time.perf_counter() - t0), status, complete


def wait_cache_written(port: int) -> None:
    """Until the server at ``port`` has loaded a trace and has no Parquet cache write pending (``/healthz``)."""
    import json

    for _ in range(2400):
        health = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).read())
        store = health.get("store", health)
        if store.get("loads", 0) >= 1 and not store.get("cache_writes_pending", 0):
            return
        time.sleep(0.25)
    raise RuntimeError("the cache entry was not written within 600 s")


def fill_cache(tree: Path, trace: Path, env: dict, cache: Path) -> None:
    """Have a server of ``tree`` load ``trace`` and write its Parquet cache entry into ``cache`` (``/healthz`` counts
    the writes still pending), then stop it."""
    proc, port = serve(tree, trace, {**env, "TRACEDASH_CACHE_DIR": str(cache)})
    try:
        wait_cache_written(port)
    finally:
        proc.terminate()
        proc.wait(60)


def measure_empty_cache(
    browser, trees: list, trace: Path, runs: int, env: dict, work: Path, warm: bool = False, warmed: dict | None = None
) -> dict:
    """``runs`` first loads per tree (the trees taking turns), each of a fresh server whose Parquet cache folder is
    new and empty (``warm``: holds the trace's entry, written by a server of that tree beforehand, or the folder
    ``warmed`` names for the tree's label, already written): {tree label: [(ready_s, status_s, complete_s), ...]}."""
    loads = {label: [] for label, _ in trees}
    warmed = dict(warmed or {})
    if warm:
        for label, tree in trees:
            if label in warmed:
                continue
            warmed[label] = work / f"warm-cache-{len(warmed)}"
            fill_cache(tree, trace, env, warmed[label])
    for i in range(runs):
        for label, tree in trees:
            cache = warmed.get(label) or work / f"empty-cache-{i}"
            proc, port = serve(tree, trace, {**env, "TRACEDASH_CACHE_DIR": str(cache)})
            try:
                loads[label].append(first_ready(browser, f"http://127.0.0.1:{port}/"))
            finally:
                proc.terminate()
                proc.wait(60)
                if not warm:
                    shutil.rmtree(cache, ignore_errors=True)
    return loads


def first_page_table(
    browser, trees, traces, runs: int, env: dict, work: Path, warm: bool, floor: float, warmed: dict | None = None
) -> None:
    """Print ``measure_empty_cache``'s medians per trace and tree against the floor's settled time."""
    print(
        f"{'trace':44s} {'tree':16s} {'ready (median)':>22s} {'every view (median)':>22s}"
        "   each load: ready s (status line shown s; every view s)"
    )
    for trace in traces:
        for label, loads in measure_empty_cache(browser, trees, trace, runs, env, work, warm, warmed).items():
            ready = statistics.median(r for r, _, _ in loads)
            done = [c for _, _, c in loads if c is not None]
            whole = f"{floor:.2f} {extra(statistics.median(done) - floor)} s" if done else "-"
            each = ", ".join(
                f"{r:.2f} ({s:.2f}; {c:.2f})" if s is not None and c is not None else f"{r:.2f}" for r, s, c in loads
            )
            print(
                f"{trace.name[:44]:44s} {label:16s} {floor:>11.2f} {extra(ready - floor)} s {whole:>22s}   {each}",
                flush=True,
            )


ZOOM_WIDTHS = ("span", "span/10", "span/100", "span/1000", 10_000_000, 1_000_000, 100_000, 10_000)
# --quick: the same path from the whole activity down to 10 µs in four zooms (each zoom costs ~1 CPU-s in `make test`)
QUICK_ZOOM_WIDTHS = ("span", "span/100", 1_000_000, 10_000)
# dcc.Graph has bound its handlers and is not redrawing (tests/browser/waits.BOUND)
BOUND = (
    "gd._ev && gd._ev.listeners('plotly_clickannotation').length > 0 && !gd.classList.contains('dash-graph--pending')"
)
TIMELINE = "document.querySelector('#timeline .js-plotly-plot')"


def zoom_round_trips(
    browser, tree: Path, trace: Path, env: dict, rounds: int = 2, widths: tuple = ZOOM_WIDTHS
) -> tuple[list, int, float]:
    """``([(width_ns, ms), ...], peak PSS bytes, seconds until the page had every view)``: the page of a fresh
    server opened at 1600×1000 until every view answered, then each of ``widths`` ``rounds`` times, centred
    on the GPU activity (the timeline's first x range), each timed from the relayout to the new figure drawn."""
    proc, port = serve(tree, trace, env)
    peak, stop = [0], threading.Event()
    sampler = threading.Thread(target=sample_rss, args=(proc.pid, stop, peak), daemon=True)
    sampler.start()
    ctx = browser.new_context(viewport={"width": 1600, "height": 1000})
    try:
        page = ctx.new_page()
        ready, _, complete = first_ready_on(page, f"http://127.0.0.1:{port}/")
        wait_cache_written(port)  # a zoom beside the cache write would time the write too
        lo_s, hi_s = page.evaluate(f"() => {TIMELINE}.layout.xaxis.range.map(Number)")
        span_ns = int((hi_s - lo_s) * 1e9)
        out = []
        for _ in range(rounds):
            for w in widths:
                width_ns = (
                    span_ns // int(w.split("/")[1])
                    if isinstance(w, str) and "/" in w
                    else (span_ns if w == "span" else min(int(w), span_ns))
                )
                start_s = lo_s + (span_ns - width_ns) / 2e9
                page.wait_for_function(f"() => {{ const gd = {TIMELINE}; return !!gd && {BOUND}; }}", timeout=120_000)
                t0 = time.perf_counter()
                page.evaluate(
                    f"() => {{ const gd = {TIMELINE}; window.__before = gd.data; "
                    f"Plotly.relayout(gd, {{'xaxis.range': [{start_s}, {start_s + width_ns / 1e9}]}}); }}"
                )
                page.wait_for_function(
                    f"() => {{ const gd = {TIMELINE}; return gd.data !== window.__before && {BOUND}"
                    " && !!gd.querySelector('.main-svg'); }",
                    timeout=120_000,
                    polling="raf",
                )
                out.append((width_ns, (time.perf_counter() - t0) * 1000))
        return out, peak[0], complete if complete is not None else ready
    finally:
        ctx.close()
        stop.set()
        sampler.join()
        proc.terminate()
        proc.wait(60)


def zoom_table(browser, trees, traces, env: dict, rounds: int = 2, runs: int = 1, widths: tuple = ZOOM_WIDTHS) -> None:
    """Print ``zoom_round_trips`` per trace and tree (the trees taking turns, ``runs`` fresh servers each): each
    zoom's width and round trip, the median."""
    for trace in traces:
        for _ in range(runs):
            for label, tree in trees:
                zooms, rss, loaded = zoom_round_trips(browser, tree, trace, env, rounds, widths)
                each = ", ".join(f"{w / 1e9:g} s: {ms:.0f}" for w, ms in zooms)
                print(
                    f"{trace.name[:44]:44s} {label:16s} zoom round trip p50 "
                    f"{statistics.median(ms for _, ms in zooms):.0f} ms, worst {max(ms for _, ms in zooms):.0f} ms "
                    f"(target p50 <= 250 ms); every view after {loaded:.1f} s; server peak PSS "
                    f"{rss / 1024**2:,.0f} MiB\n    ms per zoom: {each}",
                    flush=True,
                )


def sample_rss(pid: int, stop: threading.Event, peak: list) -> None:
    """Peak memory of the server and all its processes (gunicorn master and workers), every 0.2 s: the sum of
    their PSS (proportional set size: pages a forked worker shares with its master count once, where a sum of
    RSS would count them in each), or of their RSS where PSS cannot be read."""
    import psutil

    def size(p) -> int:
        try:
            return p.memory_full_info().pss
        except (psutil.AccessDenied, AttributeError):
            return p.memory_info().rss

    proc = psutil.Process(pid)
    while not stop.wait(0.2):
        try:
            peak[0] = max(peak[0], size(proc) + sum(size(c) for c in proc.children(True)))
        except psutil.Error:
            pass


def extra(seconds: float) -> str:
    """A figure's distance from the floor: '+ 0.26' or '− 0.07' (faster than the floor)."""
    return f"{'+' if seconds >= 0 else '−'} {abs(seconds):5.2f}"


def baseline_tree(commit: str, where: Path) -> Path:
    tree = where / f"baseline-{commit}"
    tree.mkdir()
    run = subprocess.run(["git", "-C", str(ROOT), "archive", commit], capture_output=True)
    if run.returncode != 0:  # e.g. a shallow clone, which lacks the commit
        raise SystemExit(
            f"page_load.py: cannot extract the baseline {commit} ({run.stderr.decode().strip()}); "
            f"fetch it (git fetch --unshallow) or pass --baseline ''"
        )
    archive = run.stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def quick_browser() -> dict:
    """The launch arguments of tests/browser/conftest.py (Debian's headless shell where it is installed)."""
    sys.path.insert(0, str(ROOT / "tests" / "browser"))
    from conftest import CHROMIUM, CHROMIUM_ARGS

    return {"executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=4, help="loads per fresh server (default 4; the first is 'fresh')")
    parser.add_argument(
        "--baseline", default=None, help="commit to compare with (default 5b1e355, none with --zoom; '' for none)"
    )
    parser.add_argument("--big", action="store_true", help="also a 2M-kernel trace from benchmarks/make_trace.py")
    parser.add_argument(
        "--quick", action="store_true", help="the tiny NVTX sample, one load per path, no baseline (seconds)"
    )
    parser.add_argument(
        "--empty-cache",
        action="store_true",
        help="only the first page of a fresh server with an empty cache (median of --runs)",
    )
    parser.add_argument(
        "--zoom",
        action="store_true",
        help="the timeline's zoom round trip in the browser, per trace and tree, after its first page",
    )
    parser.add_argument("--zoom-runs", type=int, default=1, help="with --zoom: fresh servers per tree (default 1)")
    parser.add_argument(
        "--warm-cache",
        action="store_true",
        help="as --empty-cache, but each fresh server finds the trace's Parquet cache entry",
    )
    args = parser.parse_args()
    if args.baseline is None:
        args.baseline = "" if args.zoom else "5b1e355"
    if args.quick:
        args.runs, args.baseline, args.big = 1, "", False
        args.traces = args.traces or [ROOT / "sample_traces" / DEFAULT_TRACES[0]]
    work = Path(tempfile.mkdtemp(prefix="tracedash-pageload-"))
    env = {**os.environ, "TRACEDASH_CACHE_DIR": str(work / "cache")}
    traces = args.traces or [ROOT / "sample_traces" / n for n in DEFAULT_TRACES]
    if args.big:
        big = work / "generated_2M.sqlite"
        subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "make_trace.py"), str(big), "--kernels", "2000000"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        traces.append(big)
    trees = [("this tree", ROOT)]
    if args.baseline:
        trees.append((f"main {args.baseline}", baseline_tree(args.baseline, work)))
    try:
        with sync_playwright() as p:
            # quick (a check that every path runs, in `make test`): the browser tests' headless shell and switches,
            # which draw the same pages for less CPU; the figures of a quick run are not measurements
            browser = (
                p.chromium.launch(**quick_browser())
                if args.quick
                else p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            )
            if args.quick:  # the --zoom path first: its fresh server writes the cache the table's server finds
                print("--zoom:")
                zoom_table(browser, trees, traces, env, rounds=1, widths=QUICK_ZOOM_WIDTHS)
            srv, url = floor_server()
            floors = [load_once(browser, url) for _ in range(args.runs)]
            srv.shutdown()
            floor_settled = statistics.median(x[0] for x in floors[1:] or floors)
            floor_drawn = statistics.median(x[1] for x in floors[1:] or floors)
            print(f"floor (2 dcc.Graph + 1 AG Grid): settled {floor_settled:.2f} s, drawn {floor_drawn:.2f} s")
            if args.zoom:  # --runs fresh servers per tree (default 1 here), the trees taking turns
                zoom_table(browser, trees, traces, env, runs=args.zoom_runs)
                browser.close()
                return 0
            if args.empty_cache or args.warm_cache:
                first_page_table(browser, trees, traces, args.runs, env, work, args.warm_cache, floor_settled)
                browser.close()
                return 0
            print(
                f"{'trace':44s} {'tree':16s} {'settled (in memory)':>22s} {'drawn (in memory)':>20s} "
                f"{'fresh server, cache warm':>26s} {'server peak PSS':>16s}"
            )
            for trace in traces:
                for label, tree in trees:
                    try:
                        r = measure_trace(
                            browser, tree, trace, args.runs, env, no_warming=not args.quick, cache_warm=args.quick
                        )
                    except Exception as exc:  # a baseline that cannot serve this input
                        print(f"{trace.name[:44]:44s} {label:16s} failed: {exc}")
                        continue
                    print(
                        f"{trace.name[:44]:44s} {label:16s} "
                        f"{floor_settled:>9.2f} {extra(r['settled'] - floor_settled)} s "
                        f"{floor_drawn:>9.2f} {extra(r['drawn'] - floor_drawn)} s "
                        f"{floor_settled:>13.2f} {extra(r['fresh'][0] - floor_settled)} s "
                        f"{r['rss'] / 1024**2:>12,.0f} MiB"
                        + (f"   (fresh, no warming: {extra(r['cold'][0] - floor_settled)} s)" if r["cold"] else ""),
                        flush=True,
                    )
            if args.quick:  # the --warm-cache path too, one fresh server: `make test` keeps both working, one browser
                print("--warm-cache:")  # in the cache the zoom round's server wrote
                first_page_table(
                    browser,
                    trees,
                    traces,
                    1,
                    env,
                    work,
                    True,
                    floor_settled,
                    warmed={"this tree": Path(env["TRACEDASH_CACHE_DIR"])},
                )
            browser.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
