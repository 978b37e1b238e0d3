"""The Dash app (the only package that imports dash): ``create_app`` builds a ready server.

One Dash app with two pages, routed by ``page_layout``: ``/`` (the trace view, built from the
link's ViewState) and ``/compare/`` (two runs). Views live in dashboard/app/views (one module per
view); the state callback in dashboard/app/sync.py.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
from dataclasses import replace
from html import escape
from pathlib import Path
from typing import NamedTuple
from urllib.parse import parse_qs

from dash import MATCH, ClientsideFunction, Dash, Input, Output, State, dcc, html
from dash._utils import to_json
from dash.exceptions import PreventUpdate
from flask import request
from plotly.offline import get_plotlyjs_version

from dashboard.app import ids
from dashboard.app.compare_callbacks import compare_layout, register_compare_callbacks, register_compare_load_poll
from dashboard.app.export_route import register_export_route
from dashboard.app.layout import build_layout
from dashboard.app.load_banner import initial_line, register_load_banner
from dashboard.app.security import SecurityConfig, register_security
from dashboard.app.store import TraceStore
from dashboard.app.sync import register_sync
from dashboard.app.trace_files import discover, file_name_problem, ids_of_file_name
from dashboard.app.upload import DEFAULT_MAX_UPLOAD_BYTES, UploadPolicy, register_routes
from dashboard.app.upload_folders import make_upload_dir
from dashboard.app.views import PageCache, ResponseCache, page_outcomes, prerender, register_views
from dashboard.errors import TraceError
from dashboard.figures.plotly_js import PARTIAL_BUNDLE, assets_folder, partial_bundle
from dashboard.state import DEFAULT, ViewState, from_dict, from_query, to_query, unknown_keys_note

__all__ = ["create_app", "assets_folder", "main_state"]

log = logging.getLogger(__name__)

PLOTLY_BUNDLE_LINK = "tracedash-plotly-js"  # id of the partial bundle's <link rel="preload">; tracedash.js reads it
PAGE_URL = "page-url"
PAGE = "page"
PAGE_PATHS = frozenset({"", "compare"})  # the app's pages, as strip_relative_path gives them (no slashes)


def _trace_by_file_name(state: ViewState, notices: list[str], search: str | None, served: list[str]):
    """A link whose ``trace`` is a bare file name (``?trace=run.sqlite``, typed by hand) opens the one served
    file of that name (never an upload: ``served`` lists none but the link's own), saying so, instead of the
    default trace."""
    raw = parse_qs((search or "").lstrip("?")).get("trace", [""])[0]
    if state.trace or not raw or "@" in raw:
        return state, notices
    hits = ids_of_file_name(raw, served)
    if len(hits) != 1:  # the parser's "not a trace id" is not why: a file name is one, just not of a served trace
        said = f"Ignored trace={raw[:120]!r} in the link: {file_name_problem(raw, hits)}; using the default."
        warnings = tuple(said if w.startswith("Ignored trace=") else w for w in state.warnings)
        return replace(state, warnings=warnings), [said if n.startswith("Ignored trace=") else n for n in notices]
    kept = tuple(w for w in state.warnings if not w.startswith("Ignored trace="))
    # said before the load, which may fail: it names the trace, never that it opened
    note = f"The link names the file {raw[:120]!r}: the address bar now holds the full link of its trace."
    return replace(state, trace=hits[0], warnings=kept), [*(n for n in notices if n not in state.warnings), *kept, note]


def main_state(
    search: str | None, store, dispatch_prefix: str = DEFAULT.prefix, steps: str = DEFAULT.steps
) -> tuple[ViewState, list[str]]:
    """The ViewState a link opens, and its notices: the link's warnings, a trace not served here
    (replaced by the first served trace), the server's dispatch prefix and step source (``serve
    --steps``) when the link sets none."""

    state = from_query(search)
    notices = list(state.warnings)
    if note := unknown_keys_note(search):
        notices.append(note)
    if "prefix=" not in (search or "") and dispatch_prefix != DEFAULT.prefix:
        state = replace(state, prefix=dispatch_prefix)
    if "steps=" not in (search or "") and steps != DEFAULT.steps:
        state = replace(state, steps=steps)
    served = store.listed_ids([state.trace])
    state, notices = _trace_by_file_name(state, notices, search, served)
    if state.trace and state.trace not in served:
        if (renamed := store.same_name(state.trace)) is not None:  # the file changed, or a shortened version
            if changed := store.explain_changed(state.trace, renamed):
                notices.append(changed)
            state = replace(state, trace=renamed)
        else:
            notices.append(store.explain_missing(state.trace))
            state = replace(state, trace="", t0_ns=None, t1_ns=None, mark=None, hide_devices=())
    if not state.trace and served:
        files = [t for t in served if not store.is_upload(t)] or served
        first = next((t for t in files if store.readable(t)), files[0])  # a folder's broken file is not the default
        state = replace(state, trace=first)
    return state, notices


QUICK_LOAD_BYTES = 64 * 1024**2  # a trace file up to this size loads fast enough to draw the page before sending it


def quick_to_draw(store, trace_id: str) -> bool:
    """Whether the page for ``trace_id`` is drawn on the server before it is sent: the trace is in
    memory, or its file is small. A large trace that is not loaded yet gets the page frame at once
    (spinners where the views go) and its views through their callbacks."""
    if not trace_id:
        return True
    if store.is_loaded(trace_id):
        return True
    try:
        return store.path(trace_id).stat().st_size <= QUICK_LOAD_BYTES
    except (TraceError, OSError):
        return True  # the views show why it cannot be read


def _page_location() -> dict | None:
    """``{"pathname", "search", "href", "hash"}`` of the page a ``_dash-layout`` request comes from
    (its same-origin Referer), or None outside a request or without a usable Referer.

    A Referer of the bare root (``/``, no query) is not used: browsers cut a Referer over 4,096
    characters to its origin (Chromium), so a long link would open as the default page; the shell
    is routed from the browser's own location instead (one callback)."""
    from urllib.parse import urlsplit

    from flask import has_request_context

    if not has_request_context() or not request.path.endswith("_dash-layout"):
        return None
    referer = request.headers.get("Referer") or ""
    try:
        parts = urlsplit(referer)
    except ValueError:
        return None
    if not parts.scheme or parts.netloc != request.host or parts.fragment:
        return None
    if parts.path in ("", "/") and not parts.query:  # the root, or a long link cut to its origin
        return None
    search = f"?{parts.query}" if parts.query else ""
    return {"pathname": parts.path or "/", "search": search, "href": referer, "hash": ""}


class PageInputs(NamedTuple):
    """Everything a trace page is built from; equal inputs build equal pages (the page cache's key,
    without ``state``, which ``canonical`` writes in full)."""

    state: ViewState
    canonical: str  # "?" + the state's canonical query
    trace_ids: tuple[str, ...]  # the trace picker's ids
    labels: tuple[tuple[str, str], ...]  # (id, label) per listed trace
    notices: tuple[str, ...]
    drawn: bool  # every view drawn on the server before the page is sent


# The 404 page in the dashboard's look (assets/tracedash.css colours), inline: it must not depend on a path.
NOT_FOUND_CSS = (
    "body{margin:0;background:#f5f7fa;color:#1f2933;font:14px Inter,'Segoe UI',Roboto,Helvetica,Arial,"
    "sans-serif}main{max-width:640px;margin:64px auto;padding:20px 24px;background:#fff;"
    "border:1px solid #dde3ea;border-radius:8px}.logo{font-weight:700;font-size:22px;color:#1c7ed6}"
    "h1{font-size:18px;margin:12px 0 8px}code{background:#eef2f6;padding:1px 4px;border-radius:3px;"
    "overflow-wrap:anywhere}a{color:#1c7ed6}"
)


class _PageApp(Dash):
    """Dash whose ``_dash-layout`` answer is the JSON text ``page_json()`` gives (``create_app`` sets
    it: the page of the link, from the page cache when it was sent before)."""

    page_json = None
    plotly_js_url = None  # a plotly.js bundle to preload and draw with (figures.plotly_js), or None: Dash's own

    def interpolate_index(self, **kwargs):
        if self.plotly_js_url:  # fetched while the page's scripts run and the layout is asked for
            kwargs["metas"] += f'<link rel="preload" as="script" id="{PLOTLY_BUNDLE_LINK}" href="{self.plotly_js_url}">'
        return super().interpolate_index(**kwargs)

    def index(self, *args, **kwargs):
        """The page for ``/`` and ``/compare/``; any other path answers 404 with links to both (a
        dashboard under a wrong path would resolve its relative links, "Compare…" among them, under it)."""
        path = request.path
        if (self.strip_relative_path(path) or "").rstrip("/") in PAGE_PATHS:
            return super().index(*args, **kwargs)
        home = escape(self.get_relative_path("/"))
        body = (
            f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>tracedash: no such page</title>"
            f"<style>{NOT_FOUND_CSS}</style></head><body><main><div class=\"logo\">tracedash</div>"
            f"<h1>No page here</h1><p>There is no page at <code>{escape(path)}</code>.</p>"
            f"<p>Open <a href=\"{home}\">the dashboard</a> or <a href=\"{home}compare/\">compare two runs</a>."
            "</p></main></body></html>"
        )
        return self.backend.make_response(body, mimetype="text/html", status=404)

    def serve_layout(self):
        if self.page_json is None:
            return super().serve_layout()
        return self.backend.make_response(self.page_json(), mimetype="application/json")


def create_app(
    paths: list[str | os.PathLike] = (),
    trace_dirs: list[str | os.PathLike] = (),
    dispatch_prefix: str = "CG_DISPATCH",
    store: TraceStore | None = None,
    cache=None,
    memory_limit: int | None = None,
    uploads: bool | str | os.PathLike = True,
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES,
    upload_policy: UploadPolicy | None = None,
    security: SecurityConfig | None = None,
    steps: str = DEFAULT.steps,
) -> Dash:
    """Build the dashboard for the given trace files and directories.

    Args:
        cache: a ``dashboard.data.cache.TraceCache`` for nsys exports (None: load from SQLite each time).
        memory_limit: bytes of loaded traces to keep (None: ``store.default_memory_limit()``).
        uploads: True: browser uploads go to a new private temp directory, removed at exit; a path:
            use that directory (shared by gunicorn workers); False: uploads off.
        max_upload_bytes: the largest upload accepted (default 2 GiB).
        upload_policy: every bound of uploads (default: ``UploadPolicy(max_upload_bytes)``).
        security: allowed host names, access token, callback body limit (default: loopback only).

    Raises:
        TraceNotFoundError: a given path or directory does not exist.
    """
    if store is None:
        discover(list(paths), list(trace_dirs))  # validates every path; directories are then rescanned live
        files = [p for p in map(Path, paths) if not p.is_dir()]
        dirs = [*trace_dirs, *(p for p in map(Path, paths) if p.is_dir())]
        upload_dir = None
        if uploads is True:
            upload_dir = make_upload_dir()
            atexit.register(shutil.rmtree, upload_dir, True)
        elif uploads:
            upload_dir = Path(uploads)
        store = TraceStore(
            files,
            trace_dirs=dirs,
            memory_limit=memory_limit,
            dispatch_prefix=dispatch_prefix,
            cache=cache,
            upload_dir=upload_dir,
        )
    policy = upload_policy or UploadPolicy(max_upload_bytes=max_upload_bytes)
    assets = assets_folder()
    app = _PageApp(
        __name__,
        title="tracedash",
        assets_folder=assets,
        assets_path_ignore=["vendor"],  # the plotly.js bundle is loaded when the first figure mounts
        suppress_callback_exceptions=False,
        update_title=None,
    )
    home = app.get_relative_path("/")
    if partial_bundle(assets):  # preloaded by the index; dcc.Graph loads it (assets/tracedash.js)
        app.plotly_js_url = f"{app.get_asset_url(PARTIAL_BUNDLE)}?v={get_plotlyjs_version()}"

    responses = ResponseCache()
    pages = PageCache()

    def page_inputs(search: str | None, draw: bool = True) -> PageInputs:
        """Everything the trace page of ``search`` is built from."""
        state, notices = main_state(search, store, dispatch_prefix, steps)
        trace_ids = tuple(store.listed_ids([state.trace]))  # rescans: new exports appear; uploads only by link
        labels = tuple((t, store.label(t)) for t in trace_ids)
        drawn = draw and quick_to_draw(store, state.trace)
        return PageInputs(state, "?" + to_query(state), trace_ids, labels, tuple(notices), drawn)

    def build_page(inputs: PageInputs) -> tuple[html.Div, bool]:
        """The trace page for ``inputs``, and whether every view on it rendered."""
        page = build_layout(
            inputs.state,
            list(inputs.trace_ids),
            labels=dict(inputs.labels),
            uploads=store.upload_dir is not None,
            max_upload_bytes=policy.max_upload_bytes,
            notices=list(inputs.notices),
            search=inputs.canonical,
            prerendered=inputs.drawn,
            load_line=initial_line(store, inputs.state.trace, inputs.drawn),
        )
        complete = prerender(page, store, inputs.state, responses) if inputs.drawn else False
        return page, complete

    def trace_page(search: str | None, draw: bool = True):
        return build_page(page_inputs(search, draw))[0]

    def is_compare(pathname: str | None) -> bool:
        return (app.strip_relative_path(pathname or "/") or "").rstrip("/") == "compare"

    def page_layout(pathname: str | None, search: str | None):
        """The page for a path: ``/compare/`` or the trace view (every other path)."""
        if is_compare(pathname):
            return compare_layout(store, search or "", home)
        return trace_page(search)

    def shell(location: dict | None = None, page=None):
        return html.Div(
            [
                dcc.Location(id=PAGE_URL, refresh=False, **(location or {})),
                html.Div(id=PAGE, children=[] if page is None else page),
            ]
        )

    def serve_layout():
        """The app's layout, for the ``_dash-layout`` request: the page of the link the browser shows
        (read from the request's Referer, which the same-origin Referrer-Policy sends), already drawn,
        so opening a link costs no routing round and no view callbacks. Without a usable Referer the
        shell is empty and ``route`` builds the page from ``dcc.Location`` as it mounts."""
        location = _page_location()
        if location is None:
            return shell()
        return shell(location, page_layout(location["pathname"], location["search"]))

    def page_json() -> str:
        """``serve_layout`` as the JSON text sent; a drawn trace page whose every view rendered is kept
        in ``pages`` by its inputs, so the same link opened again (a shared link, a reload) is sent
        without building or encoding it again."""
        location = _page_location()
        if location is None or is_compare(location["pathname"]):
            return to_json(serve_layout())
        inputs = page_inputs(location["search"])
        key = (tuple(sorted(location.items())), inputs[1:])  # all but the state, which `canonical` spells out
        if (text := pages.get(key)) is not None:
            return text
        page, complete = build_page(inputs)
        text = to_json(shell(location, page))
        if complete:
            pages.put(key, text)
        return text

    def warm() -> None:
        """Render the default page's views (the page of the bare link ``/``) into the response cache,
        loading its trace: the server calls this in the background as it starts, so the first visitor's
        page is served from memory (or waits on this render, never repeats it). Never raises."""
        try:
            state, _ = main_state("", store, dispatch_prefix, steps)
            if not state.trace:
                return
            for _ in page_outcomes(store, state, responses):
                pass
        except Exception:  # the server keeps serving; the page shows the error when opened
            log.exception("warming the default page failed")

    app.page_json = page_json
    app.warm = warm
    app.layout = serve_layout
    app.validation_layout = html.Div([shell(), trace_page("", draw=False), compare_layout(store, "", home)])

    @app.callback(
        Output(PAGE, "children"), Input(PAGE_URL, "pathname"), Input(PAGE_URL, "search"), prevent_initial_call=True
    )
    def route(pathname, search):
        # Runs when the browser's location changes under the page (back/forward, a link to another
        # page of the app) or when the layout was served without the page (no Referer).
        return page_layout(pathname, search)

    register_views(app, store, responses)
    register_sync(app, store)
    register_load_banner(app, store)
    register_compare_callbacks(app, store, dispatch_prefix, home)
    register_compare_load_poll(app, store)
    register_report(app, store)
    app.clientside_callback(
        ClientsideFunction(namespace="tracedash", function_name="downloadSvg"),
        Output({"type": ids.SVG_BUTTON, "graph": MATCH}, "title"),
        Input({"type": ids.SVG_BUTTON, "graph": MATCH}, "n_clicks"),
        State({"type": ids.SVG_BUTTON, "graph": MATCH}, "id"),
        prevent_initial_call=True,
    )
    register_routes(app.server, store, policy.max_upload_bytes, policy)
    register_export_route(app.server, store)
    register_security(app.server, [app], security)
    app.server.config["TRACE_STORE"] = store
    app.server.config["PAGE_LAYOUT"] = page_layout
    app.server.config["PAGE_CACHE"] = pages
    return app


def register_report(app: Dash, store) -> None:
    """ "Download report": one offline HTML file of the view the page shows (its ViewState)."""
    from flask import request

    from dashboard.render.export import report_html

    @app.callback(
        Output(ids.REPORT_DOWNLOAD, "data"),
        Input(ids.REPORT_BUTTON, "n_clicks"),
        State(ids.STATE, "data"),
        prevent_initial_call=True,
    )
    def download_report(_, data):
        state = from_dict(data)
        if not state.trace:
            raise PreventUpdate
        try:
            trace = store.get(state.trace)
            url = request.host_url.rstrip("/") + app.get_relative_path("/") + "?" + to_query(state)
            text = report_html(trace, state, url=url)
        except TraceError:  # the page already shows load errors; nothing to download
            raise PreventUpdate from None
        except Exception:  # a bug: logged
            log.exception("report for %s failed", state.trace)
            raise PreventUpdate from None
        return {"content": text, "filename": f"tracedash_report_{Path(trace.name).stem}.html", "type": "text/html"}
