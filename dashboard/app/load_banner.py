"""The page's load status line: where the load of its trace stands, polled only while it runs.

While the trace of a page is not in memory its views' callbacks return at once (``views.base.waiting``)
and start the load in the background: a browser opens only ~6 connections to a server, so views waiting
on the load would hold them all and the poll could not get through. When the load ends the poll asks
every view to render (``ids.RENDER_KICK`` = ``after_load_kick``, a number like the page's own first kick:
views so kicked wait for the load in their own worker process). The poll itself starts the load in its
worker process when none runs there, so the stages it shows are that process's.

Once the loader has read the kernel rows' times (``LoadStatus.preview``) the poll sends their preview once
(``ids.LOAD_PREVIEW``): overview cards and a coarse timeline (``render.preview``), which a clientside callback
puts where the overview and the timeline go until their views render.
"""

from __future__ import annotations

import time

from dash import ClientsideFunction, Dash, Input, Output, State, ctx, dcc, html, no_update

from dashboard.app import ids
from dashboard.app.components import cards
from dashboard.errors import TraceError
from dashboard.figures.common import pending_figure
from dashboard.render.load_status import after_load_kick, next_poll_limit, poll_step
from dashboard.render.preview import preview_cards, preview_figure

# The wait after each poll's answer (one poll is in flight at a time: render.load_status.next_poll_limit). At
# 500 ms a fresh server's first page came ~0.25 s later than with the fixed 500 ms period before (the answer's
# round trip adds to every wait); 250 ms gave that back (docs/benchmarks.md, page load).
POLL_MS = 250
PREVIEW_HEIGHT_PX = 470  # the timeline view's least height (views.timeline.MIN_HEIGHT_PX): the page does not jump


def load_banner(
    line: str | None,
    status_id: str = ids.LOAD_STATUS,
    poll_id: str = ids.LOAD_POLL,
    preview_id: str | None = ids.LOAD_PREVIEW,
) -> list:
    """The status line (hidden without ``line``), its poll (enabled only with one) and the store of the load
    preview it sends; the compare page passes its own ids and no preview."""
    return [
        html.Div(line or "", id=status_id, className="load-status", role="status", hidden=line is None),
        dcc.Interval(id=poll_id, interval=POLL_MS, disabled=line is None, max_intervals=1),
        *([dcc.Store(id=preview_id)] if preview_id else []),
    ]


def preview_payload(trace_id: str, preview) -> dict:
    """What the poll sends of a load preview: the trace it is of, the overview's cards and the timeline figure
    (the cards marked as the loading trace's own: tracedash.css does not dim them, nor the timeline beside them)."""
    shown = cards(preview_cards(preview))
    for card in shown:
        card.className += " preview-card"
    return {
        "trace": trace_id,
        "cards": shown,
        "figure": preview_figure(preview, PREVIEW_HEIGHT_PX),
    }


def cleared_preview() -> dict:
    """What replaces another trace's preview when a trace without one is picked: no cards, the waiting figure."""
    return {"trace": None, "cards": [], "figure": pending_figure(PREVIEW_HEIGHT_PX).to_plotly_json()}


def initial_line(store, trace_id: str, drawn: bool) -> str | None:
    """The line a page is sent with: none for a page drawn on the server (its trace is in memory) or
    without a trace; else the load's status as it stands. (No load starts here: the app's validation
    layout is built this way too; the page's first poll starts it.)"""
    if drawn or not trace_id:
        return None
    return poll_step(store.load_status(trace_id), 0, picked=True)[0]


def register_load_banner(app: Dash, store) -> None:
    """The poll's callback: reads ``store.load_status`` of the picked trace, shows its line, turns the
    poll off once the trace is in memory or its load failed, and then asks every view to render. Picking
    another trace starts it again."""

    @app.callback(
        Output(ids.LOAD_STATUS, "children"),
        Output(ids.LOAD_STATUS, "hidden"),
        Output(ids.LOAD_POLL, "disabled"),
        Output(ids.LOAD_POLL, "n_intervals"),
        Output(ids.LOAD_POLL, "max_intervals"),
        Output(ids.RENDER_KICK, "data", allow_duplicate=True),
        Output(ids.LOAD_PREVIEW, "data"),
        Input(ids.LOAD_POLL, "n_intervals"),
        Input(ids.TRACE_PICKER, "value"),
        State(ids.LOAD_PREVIEW, "data"),
        prevent_initial_call=True,
    )
    def poll(n_intervals, trace_id, shown):
        if not trace_id:
            return "", True, True, no_update, no_update, no_update, no_update
        picked = ctx.triggered_id == ids.TRACE_PICKER
        status = store.load_status(trace_id)
        if status.state == "idle" and _served(store, trace_id):  # this worker process may not be loading it yet
            store.load_in_background(trace_id)
            status = store.load_status(trace_id)
        line, more, kick = poll_step(status, 0 if picked else n_intervals or 0, picked)
        on_page = (shown or {}).get("trace")
        preview = no_update
        if status.state == "loading" and status.preview is not None and (on_page != trace_id or picked):
            preview = preview_payload(trace_id, status.preview)
        elif on_page not in (None, trace_id) and status.state in ("idle", "loading"):
            preview = cleared_preview()  # another trace's preview must not stand for this one (its views wait)
        return (
            line or "",
            line is None,
            not more,
            0 if picked else no_update,
            next_poll_limit(0 if picked else n_intervals),
            after_load_kick(time.time() * 1000) if kick else no_update,
            preview,
        )

    app.clientside_callback(
        ClientsideFunction(namespace="tracedash", function_name="showPreview"),
        Output(ids.OVERVIEW, "children", allow_duplicate=True),
        Output(ids.TIMELINE, "figure", allow_duplicate=True),
        Input(ids.LOAD_PREVIEW, "data"),
        prevent_initial_call=True,
    )


def _served(store, trace_id: str) -> bool:
    try:
        store.path(trace_id)
    except TraceError:
        return False
    return True
