"""The View type and the one callback every view gets (see dashboard/app/views/__init__.py)."""

from __future__ import annotations

import logging
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any, Callable

from cachetools import LRUCache
from dash import Dash, Input, Output, no_update
from plotly.basedatatypes import BaseFigure

from dashboard.app import ids
from dashboard.data.analysis import trace_gate, zoom_gate
from dashboard.data.memory import release_freed_arrow_memory
from dashboard.data.trace import LoadedTrace
from dashboard.errors import TraceError
from dashboard.render.load_status import FRESH_S, kicked_after_load
from dashboard.state import DEFAULT, ViewState, from_dict, to_dict, to_query

log = logging.getLogger(__name__)

# Views rendering at once in one server process. Rendering is CPU-bound Python (one core under the
# GIL): more at once only shares that core, so every response waits for all of them (8 users' zooms
# each took ~7 zooms' time); two keep a render going while the other waits on numpy or a lock. Other
# requests (cached views and pages, assets, uploads, /healthz) never wait for a slot.
RENDER_SLOTS = 2
_RENDER_SLOTS = threading.BoundedSemaphore(RENDER_SLOTS)

# View priorities (``View.priority``): what a page whose views render in turn (a big trace's first page) shows first.
FIRST = 0  # the overview cards, the alerts
TIMELINE = 1
PAGE_ORDER = 5  # the rest, as they come
LAST = 9  # the findings: the costliest, on analyses the others have computed by then

WINDOW = "window"  # pseudo field: the zoom window (t0_ns, t1_ns)
STATS_WINDOW = "stats_window"  # pseudo field: the window statistics are computed on (stats=window), else none


@dataclass(frozen=True)
class View:
    """One view of the page: the state fields it reads, its outputs, its pure render and its layout.

    - ``fields``: names of ``ViewState`` fields (``dashboard.state.FIELDS``) plus the pseudo fields
      ``window`` and ``stats_window``. The view's callback runs only when one of them changes.
    - ``outputs``: ``{name: (component id, property)}``; ``render`` and ``empty`` return a dict
      with some of these names (the others are left as they are).
    - ``render(trace, state)``: pure (reads only the fields listed); ``empty(message)``: what the
      view shows without a trace or when loading it failed (the alerts view shows the message).
    - ``layout(state)``: the view's layout fragment; ``slot``: where the page puts it
      (``cards``, ``main``, ``side``, ``figures``, ``tabs``, ``header``); ``tab``: the tab label in
      the ``tabs`` slot (its value is the view's name, which ``state.TABS`` must list).
    - ``needs_trace``: False for views that only reformat state (no trace is loaded for them).
    - ``on_load``: False when ``layout`` already holds the outputs' values for the state it was
      built from (the callback then runs only on changes).
    - ``client``: registers the view's client-side callbacks (no server round), e.g. mounting a
      finding's evidence grid when it is first opened.
    """

    name: str
    fields: tuple[str, ...]
    outputs: dict[str, tuple[str, str]]
    render: Callable[[LoadedTrace | None, ViewState], dict]
    empty: Callable[[str], dict] = lambda message: {}
    layout: Callable[[ViewState], Any] | None = None
    slot: str = "main"
    tab: str = ""
    needs_trace: bool = True
    memoise: bool = True
    on_load: bool = True  # False: the layout already shows the right value, so the callback skips the page load
    client: Callable[[Dash], None] | None = None  # registers the view's client-side callbacks, if it has any
    priority: int = PAGE_ORDER  # among a page's views waiting to render, the lower go first (``trace_gate``)


def view_slice(view: View, state: ViewState) -> ViewState:
    """The part of ``state`` that ``view`` reads (every other field at its default)."""
    values = {f: getattr(state, f) for f in view.fields if f not in (WINDOW, STATS_WINDOW)}
    if view.needs_trace:
        values["trace"] = state.trace
    w = state.window() if WINDOW in view.fields else state.stats_window() if STATS_WINDOW in view.fields else None
    if STATS_WINDOW in view.fields and w is not None:
        values["stats"] = "window"
    if w is not None:
        values["t0_ns"], values["t1_ns"] = w
    return replace(DEFAULT, **values)


def slice_data(view: View, state: ViewState) -> dict:
    """The JSON data of a view's slice store."""
    return to_dict(view_slice(view, state))


class ResponseCache:
    """Rendered outputs of views, by (view, trace, slice): an identical view is served from memory.

    Two LRUs (``cachetools.LRUCache``): ``entries`` responses of slices without a window (what a page
    load asks for) and ``windowed_entries`` of slices with one (zooms), so exploring by zooming never
    evicts the pages. Traces are identified by their id, which includes a hash of the file's
    content, so a changed file never hits an old entry. Thread-safe.
    """

    def __init__(self, entries: int = 64, windowed_entries: int = 64):
        self._lock = threading.Lock()
        self._items = LRUCache(maxsize=entries)
        self._windowed = LRUCache(maxsize=windowed_entries)

    def _lru(self, key: tuple) -> LRUCache:
        return self._windowed if "t0_ns=" in key[-1] else self._items

    def get(self, key: tuple) -> dict | None:
        with self._lock:
            return self._lru(key).get(key)

    def put(self, key: tuple, value: dict) -> None:
        with self._lock:
            self._lru(key)[key] = value


class PageCache:
    """Encoded pages (the ``_dash-layout`` answer, JSON text) by everything a page is built from,
    least recently used first out once they hold more than ``max_chars`` characters in all (a page
    of the 108k sample is ~430 KB). Only pages whose every view rendered are put here (never one
    that shows a load error). Thread-safe."""

    def __init__(self, max_chars: int = 32 * 1024**2):
        self._lock = threading.Lock()
        self._pages = LRUCache(maxsize=max_chars, getsizeof=len)

    def get(self, key: tuple) -> str | None:
        with self._lock:
            return self._pages.get(key)

    def put(self, key: tuple, text: str) -> None:
        if len(text) > self._pages.maxsize:
            return  # larger than the whole cache: sent, not kept
        with self._lock:
            self._pages[key] = text

    def __len__(self) -> int:
        with self._lock:
            return len(self._pages)


def wire_values(values: dict) -> dict:
    """``values`` with every Plotly figure replaced by the plain dict the browser receives for it
    (``to_plotly_json``: numeric arrays base64-encoded). Done once when a view renders, so a cached
    response or a page that holds it is sent without copying and converting its figures again."""
    return {k: v.to_plotly_json() if isinstance(v, BaseFigure) else v for k, v in values.items()}


def render_view(view: View, store, state: ViewState, cache: ResponseCache | None = None) -> dict:
    """The outputs of ``view`` for ``state`` (its slice), from the cache when identical. Figures
    are plain dicts, as the browser receives them (``wire_values``).

    Never raises: a bad trace gives ``view.empty(message)``, a bug is logged and gives
    ``view.empty`` with an internal-error line.
    """
    return render_outcome(view, store, state, cache)[0]


def render_outcome(view: View, store, state: ViewState, cache: ResponseCache | None = None) -> tuple[dict, bool]:
    """``render_view``'s outputs, and whether the view rendered (False when it shows a load error or
    an internal error instead)."""
    problems = state.warnings
    state = view_slice(view, state)
    key = (view.name, to_query(state))
    if cache is not None and view.memoise and (hit := cache.get(key)) is not None:
        return hit, True
    if view.needs_trace and not state.trace:
        return wire_values(
            view.empty(
                " ".join(problems)
                if problems
                else "No trace selected. Start the server with a trace file or --trace-dir DIR."
            )
        ), True
    try:
        trace = store.get(state.trace) if view.needs_trace else None
        # A page's views render one at a time per trace (a large trace's first page renders each view
        # through its own request, all at once: their working memory would add up); a zoom's views render
        # one at a time too, the timeline first, under their own gate (a zoom never waits for a page's views).
        if trace is None:
            gate = nullcontext()
        else:
            gate = (trace_gate if state.window() is None else zoom_gate)(trace).hold(view.priority)
        with gate:
            if cache is not None and view.memoise and (hit := cache.get(key)) is not None:
                return hit, True  # rendered by another request while this one waited
            with _RENDER_SLOTS:
                try:
                    values = wire_values(view.render(trace, state))
                finally:
                    release_freed_arrow_memory()  # this thread's share of what the view's work freed
    except TraceError as exc:
        return wire_values(view.empty(str(exc))), False
    except Exception:  # never a traceback in the page; the server keeps serving
        log.exception("view %s of %s failed", view.name, state.trace)
        return wire_values(
            view.empty(f"{state.trace}: internal error while reading or showing this trace (see the server log).")
        ), False
    if cache is not None and view.memoise:
        cache.put(key, values)
    return values, True


def waiting(view: View, store, state: ViewState, defer: bool = True) -> dict | None:
    """What a view's callback returns while its trace is not in memory, or None when it renders now.

    A load that failed moments ago (``FRESH_S``) gives ``view.empty`` with its error at once, never a second
    load. Otherwise, with ``defer``, a trace not in memory starts loading in the background
    (``store.load_in_background``) and the view keeps what it shows (``{}``) until the page's load poll asks
    again (``app.load_banner``); without, the view renders (waiting for the load). An id the store does not
    serve renders as usual (it says why at once)."""
    if not view.needs_trace or not state.trace:
        return None
    try:
        store.path(state.trace)
    except TraceError:
        return None
    status = store.load_status(state.trace)
    if status.state == "failed" and status.age_s < FRESH_S:
        return wire_values(view.empty(status.error))
    if status.state == "loaded" or not defer:
        return None
    store.load_in_background(state.trace)
    return {}


def register_view(app: Dash, store, view: View, cache: ResponseCache | None = None) -> None:
    """The view's one callback: its slice store in, its named outputs out.

    It never runs on page load: the page arrives drawn (``views.prerender``), or, when it could not be
    (a large trace not in memory yet), ``ids.RENDER_KICK`` is set client-side once and every view
    renders through its callback. Afterwards it runs when the sync callback changes its slice. While its
    trace is not in memory it returns at once (``waiting``) and runs again when the load poll kicks."""

    inputs = {"data": Input(ids.slice_id(view.name), "data")}
    if view.on_load:  # a page that arrived without its views drawn (a big trace not yet loaded) asks once
        inputs["kick"] = Input(ids.RENDER_KICK, "data")

    @app.callback(
        output={k: Output(cid, prop) for k, (cid, prop) in view.outputs.items()},
        inputs=inputs,
        prevent_initial_call=True,
    )
    def update(data, kick=None):
        state = from_dict(data)
        # Every page's kick store holds a number (0 until kicked); a caller without one (a script) waits as before,
        # and so does a view kicked by the poll as a load ended (another worker process may still be loading it).
        if kick is None:
            values = None
        else:
            values = waiting(view, store, state, defer=not kicked_after_load(kick, time.time() * 1000))
        if values is None:
            values = render_view(view, store, state, cache)
        return {k: values.get(k, no_update) for k in view.outputs}

    update.__name__ = f"update_{view.name}"
    if view.client is not None:
        view.client(app)
