"""Building blocks every view uses: table columns, cell formatters, grids, figure configs, cards and alerts.

Views import this module, never the page builder (``app.layout``), so the page can import the views.
"""

from __future__ import annotations

import json

import dash_ag_grid as dag
from dash import html

from dashboard.app import ids
from dashboard.render import Card
from dashboard.render.columns import API_CALLS, DISPATCHES, GAPS, KERNELS, NVTX_RANGES, Column

LANE_LABELS = (
    ("nvtx", "NVTX ranges"),
    ("marks", "NVTX marks"),
    ("gpu", "GPU busy / idle"),
    ("streams", "kernels by stream (when zoomed in)"),
    ("memops", "memcpy/memset"),
)

# No button or link may send a figure off the machine ("Edit in Chart Studio", "Share", "Export to plot.ly").
# Only keys the bundled plotly.js knows (``Plotly.PlotSchema.get().config``, a browser test checks): Plotly drops
# others from the graph's context, so at every Plotly.react dcc.Graph's config differed from the context and the
# figure was drawn anew instead of updated (a zoom's redraw of a 2M-kernel timeline: ~0.25 s more). plotly.js 3
# no longer has showEditInChartStudio, showLink or sendData: nothing of theirs can upload.
GRAPH_CONFIG = {
    "displaylogo": False,
    "scrollZoom": False,
    "toImageButtonOptions": {"format": "png", "scale": 2},
    # "Reset axes" goes back to the range the figure was drawn with, which after a zoom is the zoom itself
    # (the server redraws the window): it did nothing. Autoscale and a double-click show the whole trace.
    "modeBarButtonsToRemove": ["lasso2d", "select2d", "sendDataToCloud", "resetScale2d"],
    "showSendToCloud": False,  # nothing may send data off the machine: no cloud button, no cloud address
    "plotlyServerURL": "",
    # plotly's "Double-click to zoom back out" toast sat over the page header (top right) after every zoom;
    # the mode bar's autoscale button and a double-click still go back to the whole trace
    "showTips": False,
    # a double-click shows the whole trace (an autorange, which the page turns into "no window"), never the range
    # the figure was first drawn with: a zoom's figure is drawn into the same plot (Plotly.react), so that first
    # range is the page's opening window
    "doubleClick": "autosize",
}

# dash-ag-grid evaluates these strings in a sandbox whose scope holds params, d3 and agGrid only: a global such as
# `Number` is undefined there, the formatter throws and AG Grid silently shows the raw value (ns under a "ms" header).
# `v !== v` is the NaN test that needs no global.
_MISSING = "params.value == null || params.value !== params.value"


def _fmt(expr: str) -> dict:
    """A value formatter that shows "—" for a missing value (never NaN, never a fake 0)."""
    return {"function": f"{_MISSING} ? '—' : {expr}"}


_MS = _fmt("d3.format(',.3f')(params.value / 1e6)")
_US = _fmt("d3.format(',.2f')(params.value / 1e3)")
_S = _fmt("d3.format(',.4f')(params.value)")
_INT = _fmt("d3.format(',')(params.value)")
# A ratio without a value (zero denominator) arrives as null: "n/a", never "0.00 %" (analysis.ratio).
_PCT = {"function": f"{_MISSING} ? 'n/a' : d3.format('.2f')(params.value) + ' %'"}


def _why(reason: str) -> dict:
    """Tooltip for a column whose "—" cells need a reason: the row's own ``note`` when it has one
    (e.g. a dispatch cut by the window's edges), else ``reason``."""
    return {"function": f"params.value == null ? ((params.data && params.data.note) || {reason!r}) : undefined"}


_NUM_FILTER = "agNumberColumnFilter"

_DASH = _fmt("params.value")
_GRID_FORMAT = {"count": _INT, "pct": _PCT, "instant": {"function": "d3.format(',.6f')(params.value / 1e9)"}}
_GRID_UNIT_FORMAT = {"ms": _MS, "µs": _US}


def grid_columns(columns: tuple[Column, ...], **extra: dict) -> list[dict]:
    """AG Grid column definitions of a declared table (``render.columns``): the kind gives the value formatter
    and filter. ``extra``: per field, grid settings a declaration has no word for (JavaScript tooltips, a
    formatter that reads another field), over the derived ones."""
    defs = []
    for c in columns:
        d = {"headerName": c.grid_header, "field": c.field}
        if c.kind == "text":
            d["filter"] = "agTextColumnFilter"
            if c.missing is not None:
                d["valueFormatter"] = _DASH
        else:
            if c.kind != "number":
                d["valueFormatter"] = _GRID_UNIT_FORMAT[c.unit] if c.kind == "duration" else _GRID_FORMAT[c.kind]
            d["filter"] = _NUM_FILTER
        for key, value in (
            ("tooltipField", c.tooltip_field),
            ("flex", c.flex),
            ("minWidth", c.min_width),
            ("maxWidth", c.max_width),
            ("sort", c.sort),
            ("headerTooltip", c.header_tooltip),
        ):
            if value is not None:
                d[key] = value
        if c.missing is not None:
            d["tooltipValueGetter"] = _why(c.missing)
        defs.append({**d, **extra.get(c.field, {})})
    return defs


KERNEL_COLUMNS = grid_columns(KERNELS)
API_COLUMNS = grid_columns(API_CALLS)
NVTX_COLUMNS = grid_columns(
    NVTX_RANGES,
    gpu_overlap_ns={"tooltipValueGetter": {"function": "params.data && params.data.overlap_note || undefined"}},
    # never measured (CUDA not traced): "—" as the overlap beside it; measured but nothing to divide by: "n/a"
    overlap_pct={
        "valueFormatter": {"function": f"params.data && params.data.overlap_note ? '—' : {_PCT['function']}"},
        "tooltipValueGetter": {
            "function": "params.data && params.data.overlap_note || "
            "(params.value == null ? 'n/a: the range has no union time to divide by' "
            ": undefined)"
        },
    },
)
PHASE_COLUMNS = [
    {"headerName": "", "field": "metric", "minWidth": 110, "sortable": False},
    {"headerName": "prefill", "field": "prefill", "sortable": False, "type": "rightAligned"},
    {"headerName": "decode", "field": "decode", "sortable": False, "type": "rightAligned"},
    {"headerName": "mixed", "field": "mixed", "sortable": False, "type": "rightAligned", "hide": True},
    {"headerName": "unsplit", "field": "unsplit", "sortable": False, "type": "rightAligned", "hide": True},
    {"headerName": "unknown", "field": "unknown", "sortable": False, "type": "rightAligned", "hide": True},
]


DISPATCH_COLUMNS = grid_columns(
    DISPATCHES,
    duration_ns={
        "valueFormatter": {"function": f"({_MS['function']}) + (params.data && params.data.note ? ' (cut)' : '')"},
        "tooltipValueGetter": {"function": "(params.data && params.data.note) || undefined"},
    },
)
GAP_COLUMNS = grid_columns(GAPS)


def gpu_columns(columns: list[tuple[str, str]]) -> list[dict]:
    """Column definitions of the transposed per-GPU table: a metric column, then one per device."""
    return [{"headerName": "", "field": "metric", "minWidth": 130, "sortable": False}] + [
        {"headerName": header, "field": key, "sortable": False, "type": "rightAligned"} for key, header in columns
    ]


def metric_table(columns: list[dict], rows: list[dict]) -> list:
    """The children of a small transposed table (one row per metric, one column per device or phase)
    as a plain HTML table: ``columns`` as ``gpu_columns`` / ``phase_columns`` give them (``hide``
    honoured), ``rows`` their display strings. Cells are text, never HTML. A table of a few fixed
    rows needs no sorting or filtering: an AG Grid here cost each page load ~0.1 s of browser time."""
    shown = [c for c in columns if not c.get("hide")]
    numeric = {c["field"] for c in shown if c.get("type") == "rightAligned"}
    head = html.Thead(
        html.Tr([html.Th(c["headerName"], className="num" if c["field"] in numeric else None) for c in shown])
    )
    body = html.Tbody(
        [
            html.Tr(
                [html.Td(str(r.get(c["field"], "")), className="num" if c["field"] in numeric else None) for c in shown]
            )
            for r in rows
        ]
    )
    return [head, body]


def graph_config(filename: str) -> dict:
    """Mode-bar config whose camera button saves PNG at 2x under ``filename``; nothing in it can
    send data off the machine (no cloud button, no server address to send to)."""
    return {**GRAPH_CONFIG, "toImageButtonOptions": {**GRAPH_CONFIG["toImageButtonOptions"], "filename": filename}}


def phase_columns(rows: list[dict]) -> list[dict]:
    """PHASE_COLUMNS with a column for every phase present in ``rows`` (prefill/decode always)."""
    present = {k for r in rows for k in r}
    return [{**c, "hide": c["field"] not in present} if c.get("hide") is not None else c for c in PHASE_COLUMNS]


def kernel_grid_options(text: str) -> dict:
    """Grid options of the kernel table with its quick filter set to ``text``."""
    return {**GRID_OPTIONS, "quickFilterText": text or ""}


def columns_sorted(columns: list[dict], sort: str) -> list[dict]:
    """``columns`` with the one sort ``sort`` (``col`` / ``-col``) set and every other sort removed."""
    col = sort.lstrip("-")
    out = []
    for c in columns:
        c = {k: v for k, v in c.items() if k not in ("sort", "sortIndex")}
        if c.get("field") == col:
            c["sort"] = "desc" if sort.startswith("-") else "asc"
        out.append(c)
    return out


def state_grid(table: str, grid_id: str, columns: list[dict], state, quick_filter: str = "", **extra) -> dag.AgGrid:
    """The grid of ``table`` with the sort and column filters the state holds (from the link), so
    opening a link shows the table as it was shared without a second round of callbacks."""
    from dashboard.state import FILTER_ATTR, SORT_ATTR

    filters = getattr(state, FILTER_ATTR[table])
    g = grid(
        grid_id,
        columns_sorted(columns, getattr(state, SORT_ATTR[table])),
        no_rows=NO_ROWS[table],
        no_match=NO_MATCH[table],
        **extra,
    )
    if filters:
        g.filterModel = json.loads(filters)
    if quick_filter:
        g.dashGridOptions = {**g.dashGridOptions, "quickFilterText": quick_filter}
    return g


PICKER_MAX_HEIGHT_PX = 400  # the trace list's height (Dash's 200 px showed 2.5 of the 5 bundled samples)
GRID_OPTIONS = {"tooltipShowDelay": 300, "animateRows": False, "enableCellTextSelection": True}
_WHERE = "in this trace, or none in the window the statistics are for"
# What an empty table says in place of AG Grid's "No Rows To Show" (no row sent: why there can be none), and
# when its filters hide every row sent (AG Grid's "No Matching Rows").
NO_ROWS = {
    "kernels": f"No kernels {_WHERE}",
    "api": f"No CUDA API calls {_WHERE}",
    "nvtx": f"No NVTX ranges {_WHERE}",
    "dispatches": (
        "No steps: no annotation of the chosen step source (“Steps from”) in this trace, or none is in "
        "the window the statistics are for"
    ),
    "gaps": (
        "No idle gaps at or above the threshold in this trace or in the window the statistics are for (a trace "
        "without GPU work, or a summary JSON, has none to find)"
    ),
}
NO_MATCH = {
    "kernels": "No kernel passes the filters (the “Filter kernels” box and the column filters)",
    "api": "No CUDA API call passes the column filters",
    "nvtx": "No NVTX range passes the column filters",
    "dispatches": "No step passes the column filters",
    "gaps": "No idle gap passes the column filters",
}


def grid(
    grid_id: str,
    columns: list[dict],
    height: str | None = "420px",
    filters: bool = True,
    no_rows: str = "No rows",
    no_match: str = "No row passes the column filters",
    **extra,
) -> dag.AgGrid:
    """A sortable (and, with ``filters``, filterable) AG Grid; cells render as text, never as HTML.
    ``no_rows``: what it says when it was sent no row; ``no_match``: when its filters hide every row (plain
    text)."""
    return dag.AgGrid(
        **extra,
        id=grid_id,
        columnDefs=columns,
        rowData=[],
        defaultColDef={
            "sortable": True,
            # a header click never leaves a table unsorted: the link holds a sort, and an unsorted grid would
            # reopen in the table's default order (asc, desc, asc, …; a default-sorted column's click gives asc)
            "sortingOrder": ["asc", "desc"],
            "filter": filters,
            "resizable": True,
            "floatingFilter": filters,
            "minWidth": 100 if filters else 70,
            "flex": 1,
            "wrapHeaderText": True,
            "autoHeaderHeight": True,
        },
        dashGridOptions={
            **GRID_OPTIONS,
            "localeText": {"noRowsToShow": no_rows, "noMatchingRows": no_match},
            **({} if height else {"domLayout": "autoHeight"}),
        },
        style={"height": height, "width": "100%"} if height else {"width": "100%"},
        className="ag-theme-alpine" + ("" if filters else " compact"),
        # AG Grid keeps the focused cell by row index: when new rows arrive (a click zoomed the window the
        # statistics are for), the outline would sit on another row than the one clicked
        eventListeners={"rowDataUpdated": ["params.api.clearFocusedCell()"]},
    )


def report_image_links(graph_id: str) -> html.Span:
    """ "PNG" and "PDF" links of ``graph_id`` in the report layout (drawn on the server; their hrefs are
    set by the figure's view from its state: ``app.export_route``)."""
    title = (
        "Download this figure for a report: {} in the report layout (no on-screen hints, text of at least "
        "14 px), with the caption and file name of the view shown"
    )
    return html.Span(
        className="report-links",
        children=[
            html.A(
                fmt.upper(),
                id=f"{graph_id}-report-{fmt}",
                className="button small-button",
                href="",
                download="",
                title=title.format(fmt.upper()),
            )
            for fmt in ("png", "pdf")
        ],
    )


def svg_button(graph_id: str) -> html.Button:
    """A small button that downloads ``graph_id`` as SVG (the mode bar's camera gives PNG at 2x)."""
    return html.Button(
        "SVG",
        id={"type": ids.SVG_BUTTON, "graph": graph_id},
        className="button small-button",
        title="Download this figure as SVG",
    )


def figure_buttons(graph_id: str, **div_args) -> html.Div:
    """One right-aligned row over a figure: its SVG button and its report-layout PNG and PDF links."""
    return html.Div(
        className="figure-buttons", children=[svg_button(graph_id), report_image_links(graph_id)], **div_args
    )


def card_span(hint: str) -> int:
    """Grid columns a card spans: 1, or 2-3 for a long hint (the input rows read per kind run to ~500
    characters), so that its 5 lines hold the whole hint at 1600 px instead of cutting it off."""
    return 1 if len(hint) <= CARD_HINT_CHARS else 2 if len(hint) <= 2 * CARD_HINT_CHARS else 3


CARD_HINT_CHARS = 160  # what 5 lines of a one-column card's hint hold (11 px text, ~190 px wide)


def cards(items: list[Card]) -> list:
    """Overview cards: label, value, and the definition as a tooltip and small print."""
    return [
        html.Div(
            className=f"card span-{card_span(c.hint)}",
            title=c.hint,
            children=[
                html.Div(c.label, className="card-label"),
                html.Div(c.value, className="card-value" + (" long" if len(c.value) > 14 else "")),
                html.Div(c.hint, className="card-hint"),
            ],
        )
        for c in items
    ]


def alert(message: str, kind: str = "error") -> html.Div:
    """A visible, dismissible-looking alert box (text only, never HTML)."""
    return html.Div(role="alert", className=f"alert alert-{kind}", children=message)
