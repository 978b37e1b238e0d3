"""Thin callbacks: translate UI state, call render, return components. No analysis here."""

from __future__ import annotations

import logging
import math
from dataclasses import replace

from pathlib import Path

from dash import MATCH, ClientsideFunction, Dash, Input, Output, State, ctx, no_update
from dash.exceptions import PreventUpdate

from dashboard.analysis.summary import DEFAULT_DISPATCH_PREFIX
from dashboard.analysis.timeline import BUSY_ALL, BUSY_KERNELS
from dashboard.app import ids
from dashboard.app.layout import alert, cards, gpu_columns, graph_config, kernel_grid_options, phase_columns
from dashboard.app.store import TraceStore
from dashboard.errors import TraceError
from dashboard.figures.common import empty_figure
from dashboard.analysis.idle import DEFAULT_MIN_GAP_NS
from dashboard.app.urlsync import (
    controls_for,
    kernel_column_state,
    search_for,
    sort_from_column_state,
    state_from_controls,
    window_after,
)
from dashboard.export import report_html
from dashboard.state import from_query
from dashboard.render import ALL_LANES, ViewOptions, build_view, idle_view, nvtx_rows, zoomed_timeline

log = logging.getLogger(__name__)


def options_from_ui(prefix, threshold, busy_source, lanes=None) -> tuple[ViewOptions, list[str]]:
    """Turn raw control values into ViewOptions; invalid values fall back with a notice."""
    notices = []
    t = None
    if threshold not in (None, ""):
        try:
            t = float(threshold)
            if not math.isfinite(t) or t < 0:
                raise ValueError
        except (TypeError, ValueError):
            notices.append(f"Threshold {threshold!r} is not a non-negative number: using the automatic split.")
            t = None
    if busy_source not in (BUSY_KERNELS, BUSY_ALL):
        busy_source = BUSY_KERNELS
    prefix = (prefix or "").strip()
    if not prefix:
        notices.append(f"An empty dispatch prefix would make every NVTX mark a dispatch: using {DEFAULT_DISPATCH_PREFIX}.")
        prefix = DEFAULT_DISPATCH_PREFIX
    chosen = ALL_LANES if lanes is None else tuple(v for v in ALL_LANES if v in set(lanes or ()))
    return ViewOptions(dispatch_prefix=prefix, threshold=t, busy_source=busy_source, lanes=chosen), notices


def gap_threshold_ns(value) -> int:
    """Gap threshold from the µs input: a non-negative number, else the 10 µs default."""
    try:
        us = float(value)
    except (TypeError, ValueError):
        return DEFAULT_MIN_GAP_NS
    return int(us * 1000) if math.isfinite(us) and 0 <= us < 1e12 else DEFAULT_MIN_GAP_NS


def _failed(message: str):
    fig = empty_figure("No trace to show.", height=200)
    return (alert(message), [], fig, fig, [], phase_columns([]), [], gpu_columns([]), [], [], fig, [], no_update,
            no_update, no_update, "", [])


def register_callbacks(app: Dash, store: TraceStore) -> None:
    """Attach the dashboard's callbacks to ``app``, reading traces from ``store``."""

    def picker_options(trace_id: str | None) -> list[dict]:
        """Served traces, plus the upload this link opens (uploads are listed only for their link)."""
        return [{"label": store.label(t), "value": t} for t in store.listed_ids([trace_id])]

    @app.callback(
        Output(ids.ALERTS, "children"),
        Output(ids.OVERVIEW, "children"),
        Output(ids.GANTT, "figure"),
        Output(ids.TIMELINE, "figure"),
        Output(ids.PHASE_TABLE, "rowData"),
        Output(ids.PHASE_TABLE, "columnDefs"),
        Output(ids.GPU_TABLE, "rowData"),
        Output(ids.GPU_TABLE, "columnDefs"),
        Output(ids.KERNEL_TABLE, "rowData"),
        Output(ids.API_TABLE, "rowData"),
        Output(ids.PHASE_FIGURE, "figure"),
        Output(ids.DISPATCH_TABLE, "rowData"),
        Output(ids.GANTT, "config"),
        Output(ids.TIMELINE, "config"),
        Output(ids.PHASE_FIGURE, "config"),
        Output(ids.THRESHOLD_HINT, "children"),
        Output(ids.HIDE_DEVICES, "options"),
        Input(ids.TRACE_PICKER, "value"),
        Input(ids.DISPATCH_PREFIX, "value"),
        Input(ids.THRESHOLD, "value"),
        Input(ids.BUSY_SOURCE, "value"),
        Input(ids.LANES, "value"),
        Input(ids.WINDOW, "data"),
        Input(ids.HIDE_DEVICES, "value"),
        Input(ids.KERNEL_NAMES, "value"),
    )
    def update_view(trace_id, prefix, threshold, busy_source, lanes, window, hide_devices, kernel_names):
        if not trace_id:
            return _failed("No trace selected. Start the server with a trace file or --trace-dir DIR.")
        options, notices = options_from_ui(prefix, threshold, busy_source, lanes)
        if isinstance(window, (list, tuple)) and len(window) == 2:
            options = replace(options, window=(int(window[0]), int(window[1])))
        options = replace(options, hide_devices=tuple(int(d) for d in (hide_devices or []) if str(d).isdigit()),
                          kernel_names="full" if kernel_names == "full" else "short")
        try:
            view = build_view(store.get(trace_id), options)
        except TraceError as exc:
            return _failed(str(exc))
        except Exception:  # never a traceback in the page; the server keeps serving
            log.exception("showing %s failed", trace_id)
            return _failed(f"{trace_id}: internal error while reading or showing this trace (see the server log).")
        messages = [alert(n, "info") for n in notices + view.notices]
        hint = f"auto: {view.auto_threshold:.1f}" if view.auto_threshold is not None else "auto: no split"
        return (messages, cards(view.cards), view.gantt, view.timeline, view.phase_rows,
                phase_columns(view.phase_rows), view.gpu_rows, gpu_columns(view.gpu_columns), view.kernel_rows,
                view.api_rows, view.phase_figure, view.dispatch_rows, graph_config(view.filenames["gantt"]),
                graph_config(view.filenames["timeline"]), graph_config(view.filenames["phases"]), hint,
                [{"label": f" {view.device_labels.get(d, f'GPU {d}')}", "value": d} for d in view.devices])

    @app.callback(Output(ids.NVTX_TABLE, "rowData"), Input(ids.TRACE_PICKER, "value"), Input(ids.NVTX_GROUP, "value"))
    def update_nvtx_table(trace_id, group):
        try:
            return nvtx_rows(store.get(trace_id), grouped=bool(group)) if trace_id else []
        except Exception:  # the main view reports the problem; this table just stays empty
            return []

    @app.callback(
        Output(ids.TIMELINE, "figure", allow_duplicate=True),
        Input(ids.TIMELINE, "relayoutData"),
        State(ids.TRACE_PICKER, "value"),
        State(ids.DISPATCH_PREFIX, "value"),
        State(ids.THRESHOLD, "value"),
        State(ids.BUSY_SOURCE, "value"),
        State(ids.LANES, "value"),
        State(ids.HIDE_DEVICES, "value"),
        prevent_initial_call=True,
    )
    def zoom_timeline(relayout, trace_id, prefix, threshold, busy_source, lanes, hide_devices):
        if not trace_id:
            raise PreventUpdate
        options, _ = options_from_ui(prefix, threshold, busy_source, lanes)
        options = replace(options, hide_devices=tuple(int(d) for d in (hide_devices or []) if str(d).isdigit()))
        try:
            fig = zoomed_timeline(store.get(trace_id), options, relayout)
        except TraceError:  # bad input: the main view already shows its alert
            raise PreventUpdate from None
        except Exception:  # a bug: logged; a failed zoom keeps the old figure
            log.exception("zooming the timeline of %s failed", trace_id)
            raise PreventUpdate from None
        if fig is None:
            raise PreventUpdate
        return fig

    @app.callback(
        Output(ids.GAP_TABLE, "rowData"),
        Output(ids.GAP_FIGURE, "figure"),
        Input(ids.TRACE_PICKER, "value"),
        Input(ids.GAP_THRESHOLD, "value"),
        Input(ids.BUSY_SOURCE, "value"),
    )
    def update_gaps(trace_id, threshold_us, busy_source):
        if not trace_id:
            return [], empty_figure("No trace selected.", height=200)
        options, _ = options_from_ui(None, None, busy_source)
        try:
            return idle_view(store.get(trace_id), options, gap_threshold_ns(threshold_us))
        except TraceError:  # bad input: the main view already shows its alert
            return [], empty_figure("Idle gaps could not be computed for this trace.", height=200)
        except Exception:  # a bug: logged
            log.exception("idle gaps of %s failed", trace_id)
            return [], empty_figure("Idle gaps could not be computed for this trace.", height=200)

    # A click on a gap, a dispatch or a kernel zooms the timeline to it (the Gantt follows through
    # syncX, and the address bar then links to that single gap / dispatch / kernel).
    for table in (ids.GAP_TABLE, ids.DISPATCH_TABLE, ids.KERNEL_TABLE):
        app.clientside_callback(
            ClientsideFunction(namespace="tracedash", function_name="zoomToRow"),
            Output(table, "id"),
            Input(table, "cellClicked"),
            State(table, "rowData"),
            prevent_initial_call=True,
        )

    @app.callback(
        Output(ids.URL, "search"),
        Output(ids.TRACE_PICKER, "value"),
        Output(ids.DISPATCH_PREFIX, "value"),
        Output(ids.THRESHOLD, "value"),
        Output(ids.BUSY_SOURCE, "value"),
        Output(ids.LANES, "value"),
        Output(ids.NVTX_GROUP, "value"),
        Output(ids.GAP_THRESHOLD, "value"),
        Output(ids.TABLE_TABS, "value"),
        Output(ids.WINDOW, "data"),
        Output(ids.STATE_NOTICE, "children"),
        Output(ids.KERNEL_TABLE, "columnState"),
        Output(ids.KERNEL_FILTER, "value"),
        Output(ids.HIDE_DEVICES, "value"),
        Output(ids.URL_APPLIED, "data"),
        Output(ids.KERNEL_NAMES, "value"),
        Output(ids.CURRENT_WINDOW, "data"),
        Output(ids.TRACE_PICKER, "options"),  # with the value: a dropdown drops a value it has no option for
        Input(ids.URL, "search"),
        Input(ids.TRACE_PICKER, "value"),
        Input(ids.DISPATCH_PREFIX, "value"),
        Input(ids.THRESHOLD, "value"),
        Input(ids.BUSY_SOURCE, "value"),
        Input(ids.LANES, "value"),
        Input(ids.NVTX_GROUP, "value"),
        Input(ids.GAP_THRESHOLD, "value"),
        Input(ids.TABLE_TABS, "value"),
        Input(ids.TIMELINE, "relayoutData"),
        Input(ids.KERNEL_TABLE, "columnState"),
        Input(ids.KERNEL_FILTER, "value"),
        Input(ids.HIDE_DEVICES, "value"),
        Input(ids.KERNEL_NAMES, "value"),
        State(ids.CURRENT_WINDOW, "data"),
        State(ids.URL, "search"),
        State(ids.URL_APPLIED, "data"),
    )
    def sync_url(search, trace, prefix, threshold, busy, lanes, group, gap_us, tab, relayout, column_state,
                 kernel_filter, hide_devices, kernel_names, window, current, applied):
        """Link -> controls on load and Back/Forward; controls (and zoom, table sort) -> address bar.

        ``applied`` records that the link has been applied: if the first response was superseded
        by an early event (a figure's first autosize), the next call applies the link instead of
        overwriting it with default controls.
        """
        trig = ctx.triggered_id
        if trig is None or trig == ids.URL or (not applied and trig in (ids.TIMELINE, ids.KERNEL_TABLE)):
            state = from_query(search)
            values, notices = controls_for(state, store.ids(), store.explain_missing)
            return (no_update, values["trace"], values["prefix"], values["threshold"], values["busy"],
                    values["lanes"], values["group"], values["gap_us"], values["tab"], values["window"],
                    [alert(n, "info") for n in notices], kernel_column_state(state.sort), values["kernel"],
                    values["hide_devices"], True, values["kernel_names"], values["window"],
                    picker_options(values["trace"]))
        if trig == ids.TIMELINE:
            window = window_after(relayout, window)
        elif trig == ids.TRACE_PICKER:
            window = None
        if trig == ids.TRACE_PICKER:
            hide_devices = []
        state = state_from_controls(trace, prefix, threshold, busy, lanes, group, gap_us, tab, window,
                                    sort=sort_from_column_state(column_state), kernel=kernel_filter,
                                    hide_devices=hide_devices, kernel_names=kernel_names)
        new = search_for(state)
        # The view's WINDOW store is only written from links: a zoom must not re-render the page.
        return (new if new != current else no_update, *[no_update] * 8,
                None if trig == ids.TRACE_PICKER else no_update, no_update,
                no_update, no_update, [] if trig == ids.TRACE_PICKER else no_update, True if not applied else no_update,
                no_update, window if trig in (ids.TIMELINE, ids.TRACE_PICKER) else no_update, no_update)

    @app.callback(Output(ids.STATE_NOTICE, "children", allow_duplicate=True), Input(ids.STATE_NOTICE, "n_clicks"),
                  prevent_initial_call=True)
    def dismiss_notice(_):
        return []

    @app.callback(
        Output(ids.REPORT_DOWNLOAD, "data"),
        Input(ids.REPORT_BUTTON, "n_clicks"),
        State(ids.TRACE_PICKER, "value"),
        State(ids.URL, "search"),
        State(ids.URL, "href"),
        prevent_initial_call=True,
    )
    def download_report(_, trace_id, search, href):
        if not trace_id:
            raise PreventUpdate
        try:
            trace = store.get(trace_id)
            text = report_html(trace, replace(from_query(search), trace=trace_id), url=href or "")
        except TraceError:  # the page already shows load errors; nothing to download
            raise PreventUpdate from None
        except Exception:  # a bug: logged
            log.exception("report for %s failed", trace_id)
            raise PreventUpdate from None
        return {"content": text, "filename": f"tracedash_report_{Path(trace.name).stem}.html", "type": "text/html"}

    app.clientside_callback(
        ClientsideFunction(namespace="tracedash", function_name="downloadSvg"),
        Output({"type": ids.SVG_BUTTON, "graph": MATCH}, "title"),
        Input({"type": ids.SVG_BUTTON, "graph": MATCH}, "n_clicks"),
        State({"type": ids.SVG_BUTTON, "graph": MATCH}, "id"),
        prevent_initial_call=True,
    )

    @app.callback(Output(ids.KERNEL_TABLE, "dashGridOptions"), Input(ids.KERNEL_FILTER, "value"))
    def filter_kernels(text):
        return kernel_grid_options(text)

    # Copy link: the address bar always holds the view (assets/tracedash.js).
    app.clientside_callback(
        ClientsideFunction(namespace="tracedash", function_name="copyLink"),
        Output(ids.COPY_LINK, "children"),
        Input(ids.COPY_LINK, "n_clicks"),
        prevent_initial_call=True,
    )

    # Zooming the Gantt zooms the timeline and the other way round (assets/tracedash.js).
    app.clientside_callback(
        ClientsideFunction(namespace="tracedash", function_name="syncX"),
        Output(ids.SYNC_SINK, "children"),
        Input(ids.GANTT, "relayoutData"),
        Input(ids.TIMELINE, "relayoutData"),
        prevent_initial_call=True,
    )
