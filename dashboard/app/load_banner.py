"""The page's load status line: where the load of its trace stands, polled only while it runs."""

from __future__ import annotations

from dash import Dash, Input, Output, ctx, dcc, html, no_update

from dashboard.app import ids
from dashboard.data.trace import LoadStatus
from dashboard.render.load_status import keep_polling, load_status_line

POLL_MS = 500


def load_banner(line: str | None) -> list:
    """The status line (hidden without ``line``) and its poll (enabled only with one)."""
    return [
        html.Div(line or "", id=ids.LOAD_STATUS, className="load-status", role="status", hidden=line is None),
        dcc.Interval(id=ids.LOAD_POLL, interval=POLL_MS, disabled=line is None),
    ]


def initial_line(store, trace_id: str, drawn: bool) -> str | None:
    """The line a page is sent with: none for a page drawn on the server (its trace is in memory) or
    without a trace; else the load's status as it stands (a failed load is retried by the views: idle)."""
    if drawn or not trace_id:
        return None
    status = store.load_status(trace_id)
    if status.state == "failed":
        status = LoadStatus(status.name, "idle")
    return load_status_line(status)


def register_load_banner(app: Dash, store) -> None:
    """The poll's callback: reads ``store.load_status`` for the picked trace, shows its line, and turns
    the poll off once the trace is in memory or its load failed. Picking another trace starts it again."""

    @app.callback(
        Output(ids.LOAD_STATUS, "children"),
        Output(ids.LOAD_STATUS, "hidden"),
        Output(ids.LOAD_POLL, "disabled"),
        Output(ids.LOAD_POLL, "n_intervals"),
        Input(ids.LOAD_POLL, "n_intervals"),
        Input(ids.TRACE_PICKER, "value"),
        prevent_initial_call=True,
    )
    def poll(n_intervals, trace_id):
        if not trace_id:
            return "", True, True, no_update
        picked = ctx.triggered_id == ids.TRACE_PICKER
        status = store.load_status(trace_id)
        line = load_status_line(status)
        more = keep_polling(status, 0 if picked else n_intervals or 0)
        shown = line is not None and more
        return (line if shown else ""), not shown, not more, (0 if picked else no_update)
