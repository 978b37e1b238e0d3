"""Reproduce a shared view outside the browser: static images (kaleido) and an offline HTML report.

Both take the same link (``?trace=...&t0_ns=...``) the dashboard writes in its address bar, so
any shared view can be rebuilt from the shell and in CI.
"""

from __future__ import annotations

import atexit
import html
import logging
import os
import threading
import time
import warnings
import weakref
from dataclasses import replace
from datetime import datetime, timezone
from urllib.parse import urlsplit

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from dashboard import __version__, units
from dashboard.data.trace import LoadedTrace
from dashboard.errors import TraceError
from dashboard.figures.common import report_layout
from dashboard.figures.plotly_js import partial_bundle
from dashboard.render import DashboardView, build_view
from dashboard.render.columns import API_CALLS, KERNELS, NVTX_RANGES, Column, report_columns, report_format
from dashboard.render.notes import notes_html
from dashboard.state import ViewState, from_query, query_keys, to_query, unknown_keys_note

FIGURES = ("timeline", "gantt", "phases")
# No button of the report's figures may send data off the machine (plotly.js 3 has no "Edit in
# Chart Studio"/link options any more; the send-to-cloud button is switched off explicitly).
REPORT_NO_CLOUD = {"showSendToCloud": False}
FORMATS = ("png", "svg", "pdf")
IMAGE_SIZE = {"timeline": (1600, None), "gantt": (1600, None), "phases": (1600, 420)}

_kaleido_lock = threading.Lock()
_kaleido_started = False


def link_query(url: str) -> str:
    """The query of a dashboard link given as a full URL, a path with its query, or just ``?query``."""
    return urlsplit(url).query if "://" in url or url.startswith("/") else url.lstrip("?")


def without_default(warning: str) -> str:
    """A link's warning without its "; using the default." (the page shows the default view; an image draws none)."""
    return warning.removesuffix("; using the default.")


def values_an_image_cannot_set(state: ViewState, *, besides: tuple[str, ...] = ()) -> list[str]:
    """Why an image of ``state`` would not be the view its link asks for: each value the link could not set (an
    image has no room for a notice, and the default view drawn instead would be a false answer) and a search that
    is no search (``render.search.unusable_search``). ``besides``: warnings the caller answers otherwise (the
    trace's, the note on other tools' keys). A link of another version is drawn: its settings were all read."""
    from dashboard.render.search import unusable_search
    from dashboard.state import OTHER_VERSION

    out = [without_default(w) for w in state.warnings if not w.startswith((*besides, OTHER_VERSION))]
    return [*out, why] if (why := unusable_search(state)) else out


def image_refusal(problems: list[str], advice: str) -> str:
    """The one message refusing an image (``values_an_image_cannot_set``'s ``problems``): each a sentence."""
    said = " ".join(p if p.endswith(".") else f"{p}." for p in problems)
    return f"{said} Nothing was drawn: {advice}."


def state_from_url(url: str | None, *, strict: bool = False) -> ViewState:
    """The ViewState of a dashboard link (a full URL or just ``?query``); warnings are kept.

    With ``strict`` (the CLI's ``--url``), keys that are not the dashboard's add a warning each, and a
    link that has keys but none of the dashboard's is refused.

    Raises:
        TraceError: ``strict`` and the text is not a dashboard link (e.g. ``--url garbage``).
    """
    if not url:
        return ViewState()
    query = link_query(url)
    state = from_query(query)
    if strict:
        known, unknown = query_keys(query)
        if unknown and not known:
            shown = url if len(url) <= 60 else url[:57] + "..."
            raise TraceError(
                f"--url {shown!r} is not a dashboard link: none of its keys ({', '.join(unknown)[:80]}) "
                "is a view setting (copy the link from the browser's address bar, or pass just its "
                "?query; docs/reference.md's \"Link keys\" table lists the keys)"
            )
        if note := unknown_keys_note(query):
            state = replace(state, warnings=(*state.warnings, note))
    return state


def view_for(trace: LoadedTrace, state: ViewState) -> DashboardView:
    """Everything the dashboard shows for ``trace`` under ``state``."""
    return build_view(trace, state)


def figure_for(view: DashboardView, which: str) -> go.Figure:
    """One figure of a view: ``timeline``, ``gantt`` or ``phases``.

    Raises:
        TraceError: unknown figure name.
    """
    figures = {"timeline": view.timeline, "gantt": view.gantt, "phases": view.phase_figure}
    if which not in figures:
        raise TraceError(f"unknown figure {which!r}: choose one of {', '.join(FIGURES)}")
    return figures[which]


def _ensure_kaleido() -> None:
    """Start one headless Chromium for all exports (MathJax off: no network, no stalls)."""
    global _kaleido_started
    with _kaleido_lock:
        if _kaleido_started:
            return
        try:
            import kaleido
        except ImportError as exc:  # pragma: no cover - kaleido is a dependency
            raise TraceError("image export needs kaleido: pip install kaleido") from exc
        warnings.filterwarnings("ignore", message="The kopts argument is ignored if using a server")
        _check_browser()
        _quiet_server_failures()
        # its launcher's log is no user's business: a failed export says why in one line, and a working one printed
        # "Wait expired, Browser is being closed by watchdog." or a traceback of a message it then ignored
        logging.getLogger("choreographer").setLevel(logging.CRITICAL)
        try:
            kaleido.start_sync_server(mathjax=False, silence_warnings=True)
        except Exception as exc:  # noqa: BLE001 - no Chromium on this machine
            raise TraceError(f"image export needs Chromium (apt-get install chromium): {exc}") from exc
        # atexit runs its handlers last registered first: weakref's (which removes the browser's temporary
        # profile folder) is registered now if it was not yet, so that the browser stops before it
        weakref.finalize(_ensure_kaleido, lambda: None)
        atexit.register(stop_image_export)
        _kaleido_started = True


def _check_browser() -> None:
    """Refuse an export when kaleido would find no browser: its server thread would die starting one, and each
    export would then wait forever for an answer (kaleido's sync server does not notice)."""
    try:
        from choreographer.browsers.chromium import Chromium

        path = Chromium.find_browser(skip_local=False)
    except Exception:  # noqa: BLE001 - choreographer's lookup moved: the liveness check of each render remains
        return
    if not path or not (os.path.isfile(path) and os.access(path, os.X_OK)):
        where = f"BROWSER_PATH={path!r} is not a program" if os.environ.get("BROWSER_PATH") else "none on PATH"
        raise TraceError(f"image export needs Chromium or Chrome ({where}; apt-get install chromium)")


def _kaleido_thread():
    """The thread of kaleido's sync server (None when it cannot be found)."""
    try:
        from kaleido._sync_server import GlobalKaleidoServer

        return getattr(GlobalKaleidoServer(), "_thread", None)
    except Exception:  # noqa: BLE001 - kaleido's internals moved: no liveness check
        return None


_server_failures: list[BaseException] = []


def _quiet_server_failures() -> None:
    """Keep what ends kaleido's server thread (its browser failed) out of stderr as a traceback: ``_render``
    says it in one line. Other threads' exceptions go to the hook that was there."""
    previous = threading.excepthook
    if getattr(previous, "tracedash_kaleido", False):
        return

    def hook(args):
        if args.thread is not None and args.thread is _kaleido_thread():
            _server_failures.append(args.exc_value)
        else:
            previous(args)

    hook.tracedash_kaleido = True
    threading.excepthook = hook


def _failure_text() -> str:
    """The first line of why kaleido's server stopped ("" when nothing was caught)."""
    if not _server_failures:
        return ""
    exc = _server_failures[-1]
    first = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
    return f": {type(exc).__name__}: {first.splitlines()[0][:200]}" if first else f": {type(exc).__name__}"


def export_timeout_s() -> float:
    """How long one image may take, browser start included (``TRACEDASH_EXPORT_TIMEOUT_S``, default 90 s)."""
    try:
        value = float(os.environ.get("TRACEDASH_EXPORT_TIMEOUT_S", "") or EXPORT_TIMEOUT_S)
    except ValueError:
        return EXPORT_TIMEOUT_S
    return value if value > 0 else EXPORT_TIMEOUT_S


def _abandon_browser() -> None:
    """Stop a browser that does not answer: its processes are killed, so kaleido's server, waiting on its pipe,
    ends; kaleido is then started afresh by the next export (while its server still waits, it is left)."""
    import psutil

    procs = export_browser()
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=5)
    server = _kaleido_thread()
    if server is not None:
        server.join(5)
    if server is None or not server.is_alive():
        stop_image_export()


def _render(fig: go.Figure, **kwargs) -> bytes:
    """``fig.to_image(**kwargs)`` in a thread of its own, watching kaleido's server: when that dies (its browser
    failed to start or went away) the export fails at once instead of waiting forever on its queue, and a
    browser that does not answer within ``export_timeout_s`` is stopped."""
    server = _kaleido_thread()
    out: dict = {}
    timeout = export_timeout_s()
    deadline = time.monotonic() + timeout

    def work():
        try:
            out["data"] = fig.to_image(**kwargs)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            out["error"] = exc

    worker = threading.Thread(target=work, name="tracedash-image-export", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.2)
        if worker.is_alive() and server is not None and not server.is_alive():
            server.join()  # its excepthook has run
            why = _failure_text()
            stop_image_export()
            raise TraceError(f"image export's browser stopped before the image was rendered{why}")
        if worker.is_alive() and time.monotonic() > deadline:
            _abandon_browser()
            raise TraceError(
                f"image export's browser did not answer within {timeout:g} s, and was stopped "
                "(TRACEDASH_EXPORT_TIMEOUT_S sets how long to wait)"
            )
    if "error" in out:
        raise out["error"]
    return out["data"]


def export_browser() -> list:
    """kaleido's browser: the process's children that its launcher (choreographer) started, and theirs (psutil
    processes; it starts them in the background, so they are found by their command line, not by when)."""
    import psutil

    out = []
    for child in psutil.Process().children():
        try:
            if any("choreographer" in part for part in child.cmdline()):
                out += [child, *child.children(recursive=True)]
        except psutil.Error:
            pass
    return out


def stop_image_export() -> None:
    """Stop the export Chromium (if started) and wait, up to 5 s, for its processes: they write its profile folder
    for a moment after it stops, and its removal at exit failed with a traceback. Only the processes kaleido
    started are waited for, never the process's other children (a test worker's Playwright driver)."""
    global _kaleido_started
    with _kaleido_lock:
        if not _kaleido_started:
            return
        import kaleido
        import psutil

        browser = export_browser()
        kaleido.stop_sync_server(silence_warnings=True)
        _kaleido_started = False
        try:
            psutil.wait_procs(browser, timeout=5)
        except psutil.Error:
            pass


def image_bytes(fig: go.Figure, fmt: str, *, which: str = "timeline", scale: float = 2.0) -> bytes:
    """Render ``fig`` as png, svg or pdf at report size (width 1600 px) in the report layout
    (``figures.common.report_layout``).

    Raises:
        TraceError: unknown format, or no Chromium for kaleido.
    """
    if fmt not in FORMATS:
        raise TraceError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    _ensure_kaleido()
    width, height = IMAGE_SIZE.get(which, (1600, None))
    fig = report_layout(fig, width=width)  # no on-screen hints, >= 14 px text, timeline no wider than 3:1
    height = max(height or 0, int(fig.layout.height or 500))
    for attempt in range(KALEIDO_TRIES):
        try:
            return _render(fig, format=fmt, width=width, height=height, scale=scale if fmt == "png" else 1)
        except Exception as exc:  # noqa: BLE001 - kaleido raises its browser's JavaScript errors as they come
            # kaleido's page had not defined its render function yet (a race of its start-up on a busy
            # machine, seen once in ~20 `make test` runs): asked again, it renders
            if _KALEIDO_NOT_READY not in str(exc) or attempt == KALEIDO_TRIES - 1:
                raise
            time.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover


KALEIDO_TRIES = 3
EXPORT_TIMEOUT_S = 90.0  # one image, browser start included: a 2-core machine under load takes ~10 s
_KALEIDO_NOT_READY = "kaleido_scopes is not defined"


def _cell(value, fmt) -> str:
    """A report cell: "—" for a value that was not measured (None/NaN, as the dashboard's grids), else ``fmt``."""
    return "—" if value is None or value is pd.NA or (isinstance(value, float) and value != value) else fmt(value)


def _table(frame: pd.DataFrame, columns: tuple[Column, ...], limit: int) -> str:
    """A report table of a declared table's report columns (``render.columns``): numeric columns right-aligned
    under right-aligned titles (class ``num``), text left."""
    columns = report_columns(columns)
    num = {
        c.field: " class='num'"
        if c.field in frame
        and pd.api.types.is_numeric_dtype(frame[c.field])
        and not pd.api.types.is_bool_dtype(frame[c.field])
        else ""
        for c in columns
    }
    fmts = [(c.field, report_format(c)) for c in columns]
    rows = []
    for rec in frame.head(limit).to_dict("records"):
        cells = "".join(f"<td{num[key]}>{html.escape(_cell(rec[key], fmt))}</td>" for key, fmt in fmts)
        rows.append(f"<tr>{cells}</tr>")
    head = "".join(f"<th{num[c.field]}>{html.escape(c.title)}</th>" for c in columns)
    more = f"<p class='small'>First {limit:,} of {len(frame):,} rows.</p>" if len(frame) > limit else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"


def report_html(trace: LoadedTrace, state: ViewState, *, url: str = "") -> str:
    """One self-contained HTML file: overview, Gantt, timeline, phases, top tables.

    plotly.js is inlined once (the cartesian partial bundle, ``figures.plotly_js``, when it is the installed
    plotly's release), so the file opens offline and makes no network request.
    """
    view = view_for(trace, state)
    from dashboard.render.steps import reads_steps, step_source

    source = step_source(trace, state)
    steps = reads_steps(source)  # a framework's steps; else the seed's dispatches, as before
    figs = [
        ("Steps" if steps else "Dispatches", view.gantt),
        ("GPU timeline", view.timeline),
        ("Phases", view.phase_figure),
    ]
    from dashboard.render.findings import findings_for, findings_html
    from dashboard.render.steps import step_spec

    findings = findings_html(
        trace, findings_for(trace, threshold=state.threshold, prefix=state.prefix, steps=step_spec(state)), state.trace
    )  # shown first
    parts = []
    first = True
    bundle = partial_bundle()  # plotly.js's cartesian bundle (1.5 MB) when it matches plotly, else the full 4.8 MB
    for name, fig in figs:
        parts.append(f"<h2>{html.escape(name)}</h2>")
        if not fig.data:  # an empty state: its one-line reason, not an empty plot box
            why = " ".join(str(a.text or "") for a in fig.layout.annotations if a.name != "caption")
            parts.append(f"<p class='small'>{why.replace('<br>', ' ')}</p>")  # already escaped for Plotly
            continue
        # The report layout: no on-screen hints (this file cannot redraw on zoom), >= 14 px text.
        if first and bundle is not None:
            parts.append(
                "<script>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>"
                f"<script>{bundle.read_text(encoding='utf-8')}</script>"
            )
        parts.append(
            pio.to_html(
                report_layout(fig, aspect_limit=False),
                full_html=False,
                include_plotlyjs="inline" if first and bundle is None else False,
                config={"displaylogo": False, **REPORT_NO_CLOUD},
                default_width="100%",
            )
        )
        first = False
    cards = "".join(
        f"<div class='card'><div class='l'>{html.escape(c.label)}</div>"
        f"<div class='v{' long' if len(c.value) > 16 else ''}'>"
        f"{html.escape(c.value)}</div><div class='h'>{html.escape(c.hint)}</div></div>"
        for c in view.cards
    )
    # the metric's name on the left, each phase's value right-aligned under its phase
    phase_rows = "".join(
        "<tr>"
        + "".join(f"<td{'' if k == 'metric' else ' class=num'}>{html.escape(str(v))}</td>" for k, v in r.items())
        + "</tr>"
        for r in view.phase_rows
    )
    phase_head = "".join(
        f"<th{'' if k == 'metric' else ' class=num'}>{html.escape(str(k if k != 'metric' else ''))}</th>"
        for k in (view.phase_rows[0].keys() if view.phase_rows else [])
    )
    phase_section = (
        (
            f"<h2>Per phase{f' (pid {sv_pid})' if (sv_pid := _steps_pid(trace, state)) is not None else ''}"
            f"</h2><table><thead><tr>{phase_head}</tr></thead><tbody>{phase_rows}</tbody>"
            "</table>"
        )
        if view.phase_rows
        else ""
    )
    kernels = pd.DataFrame(view.kernel_rows)
    api = pd.DataFrame(view.api_rows)
    from dashboard.render import effective_group, nvtx_rows, windowed

    nvtx = pd.DataFrame(nvtx_rows(windowed(trace, state.stats_window()), grouped=effective_group(trace, state.group)))
    tables = []
    if not kernels.empty:
        tables.append("<h2>Top kernels</h2>" + _table(kernels, KERNELS, 50))
    if not api.empty:
        tables.append("<h2>CUDA API calls (totals summed across threads)</h2>" + _table(api, API_CALLS, 50))
    if not nvtx.empty:
        tables.append("<h2>NVTX ranges</h2>" + _table(nvtx, NVTX_RANGES, 100))
    window = state.window()
    settings = [
        f"trace: {trace.name}",
        *([f"steps from: {source.label}"] if steps else []),
        f"dispatch prefix: {state.prefix}",
        f"phase split: {'automatic' if state.threshold is None else f'prefill when tokens ≥ {state.threshold:g}'}",
        f"GPU busy counts: {state.busy}",
        f"window: {units.window(window, exact=False)}" if window else "window: whole trace",
        "statistics (cards, Per phase, tables): "
        + (
            "the window, intervals clipped at its edges"
            if state.stats_window() and trace.bundle is not None
            else "whole trace"
        ),
    ]
    link = f"<p class='small'>View link: <code>{html.escape(url)}</code></p>" if url else ""
    if state.warnings:  # what the link asked for that this report could not apply
        link += "".join(f"<p class='small'>{html.escape(w)}</p>" for w in state.warnings)
    made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tracedash report · {html.escape(trace.name)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body {{ font-family: Inter, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: #1f2933; margin: 24px auto;
       max-width: 1500px; padding: 0 16px; }}
h1 {{ font-size: 22px; margin-bottom: 4px; }} h2 {{ font-size: 16px; margin: 24px 0 8px; }}
.small {{ color: #52606d; font-size: 12px; }}
.cards {{ display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr)); gap: 8px; }}
.card {{ border: 1px solid #dde3ea; border-radius: 8px; padding: 8px 10px; min-width: 0; overflow: hidden; }}
.card .l {{ font-size: 11px; text-transform: uppercase; color: #52606d; }}
.card .v {{ font-size: 18px; font-weight: 600; overflow-wrap: anywhere; }}
.card .v.long {{ font-size: 14px; }}
.card .h {{ font-size: 11px; color: #52606d; overflow-wrap: anywhere; }}
td, th {{ overflow-wrap: anywhere; }}
table {{ border-collapse: collapse; font-size: 12px; width: 100%; }}
th, td {{ border-bottom: 1px solid #e6e8eb; padding: 4px 8px; text-align: left; }}
td.num, th.num {{ text-align: right; }} th {{ background: #f5f7fa; }}
.small code {{ overflow-wrap: anywhere; }}  /* a view link with notes is long: wrapped, never past the page */
ul.notes {{ font-size: 13px; padding-left: 20px; }}
ul.notes .t {{ color: #6d28d9; font-weight: 600; margin-right: 6px; }}
</style></head><body>
<h1>tracedash report · {html.escape(trace.name)}</h1>
<p class="small">{html.escape(" · ".join(settings))}<br>made {made} by tracedash {__version__}. GPU busy is an interval
union, not a sum of kernel times; CUDA API and NVTX totals overlap GPU work and each other.</p>
{link}
{notes_html(state.notes)}
{findings}
<div class="cards">{cards}</div>
{phase_section}
{''.join(parts)}
{''.join(tables)}
</body></html>
"""


def _steps_pid(trace: LoadedTrace, state: ViewState) -> int | None:
    """The process a steps report's Per phase is of, when several processes annotate steps."""
    from dashboard.render.steps import step_view

    sv = step_view(trace, state)
    return sv.pid if sv is not None and len(sv.processes) > 1 else None


def report_for_url(trace: LoadedTrace, url: str | None, state: ViewState | None = None) -> str:
    """``report_html`` for the state of a link; the trace in the link, if any, is not checked. The report's
    view link is the state it applied (``to_query``), not the text given: a value the link could not set
    is named under it (``ViewState.warnings``), never shown as if applied. ``state``: that state already
    read (with the CLI's ``--steps``)."""
    given = state
    state = state_from_url(url) if state is None else state
    applied = "?" + to_query(state) if url or (given is not None and given.steps != "auto") else ""
    return report_html(trace, replace(state, trace=""), url=applied)
