"""Pure layout builders: values in, Dash components out (no data loading here)."""

from __future__ import annotations

import dash_ag_grid as dag
from dash import dcc, html

from dashboard.analysis.timeline import BUSY_ALL, BUSY_KERNELS
from dashboard.app import ids
from dashboard.render import ALL_LANES, Card

LANE_LABELS = (("nvtx", "NVTX ranges"), ("marks", "NVTX marks"), ("gpu", "GPU busy / idle"),
               ("streams", "kernels by stream (when zoomed in)"), ("memops", "memcpy/memset"))

GRAPH_CONFIG = {
    "displaylogo": False,
    "scrollZoom": False,
    "toImageButtonOptions": {"format": "png", "scale": 2},
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}

_MS = {"function": "d3.format(',.3f')(params.value / 1e6)"}
_US = {"function": "d3.format(',.2f')(params.value / 1e3)"}
_S = {"function": "d3.format(',.4f')(params.value)"}
_INT = {"function": "d3.format(',')(params.value)"}
_PCT = {"function": "d3.format('.2f')(params.value) + ' %'"}
_NUM_FILTER = "agNumberColumnFilter"

KERNEL_COLUMNS = [
    {"headerName": "Kernel (short name)", "field": "name", "tooltipField": "full_name", "flex": 3, "minWidth": 220,
     "filter": "agTextColumnFilter"},
    {"headerName": "Category", "field": "category", "tooltipField": "rule", "filter": "agTextColumnFilter",
     "minWidth": 130},
    {"headerName": "Count", "field": "count", "valueFormatter": _INT, "filter": _NUM_FILTER},
    {"headerName": "Total (ms)", "field": "total_ns", "valueFormatter": _MS, "filter": _NUM_FILTER, "sort": "desc"},
    {"headerName": "Mean (µs)", "field": "mean_ns", "valueFormatter": _US, "filter": _NUM_FILTER},
    {"headerName": "% of GPU busy", "field": "busy_pct", "valueFormatter": _PCT, "filter": _NUM_FILTER,
     "headerTooltip": "kernel time / busy union; concurrent kernels can add past 100 %"},
]
API_COLUMNS = [
    {"headerName": "CUDA API call", "field": "name", "flex": 2, "minWidth": 200, "filter": "agTextColumnFilter"},
    {"headerName": "Raw name", "field": "raw_name", "flex": 2, "minWidth": 200, "filter": "agTextColumnFilter"},
    {"headerName": "Count", "field": "count", "valueFormatter": _INT, "filter": _NUM_FILTER},
    {"headerName": "Total (ms, summed across threads)", "field": "total_ns", "valueFormatter": _MS,
     "filter": _NUM_FILTER, "sort": "desc", "minWidth": 150},
    {"headerName": "Mean (µs)", "field": "mean_ns", "valueFormatter": _US, "filter": _NUM_FILTER},
]
NVTX_COLUMNS = [
    {"headerName": "NVTX range", "field": "name", "tooltipField": "name", "flex": 3, "minWidth": 220,
     "filter": "agTextColumnFilter"},
    {"headerName": "Count", "field": "count", "valueFormatter": _INT, "filter": _NUM_FILTER},
    {"headerName": "Sum (ms)", "field": "sum_ns", "valueFormatter": _MS, "filter": _NUM_FILTER, "sort": "desc"},
    {"headerName": "Union (ms)", "field": "union_ns", "valueFormatter": _MS, "filter": _NUM_FILTER},
    {"headerName": "GPU overlap (ms)", "field": "gpu_overlap_ns", "valueFormatter": _MS, "filter": _NUM_FILTER},
    {"headerName": "Overlap %", "field": "overlap_pct", "valueFormatter": _PCT, "filter": _NUM_FILTER},
]
PHASE_COLUMNS = [
    {"headerName": "", "field": "metric", "minWidth": 110, "sortable": False},
    {"headerName": "prefill", "field": "prefill", "sortable": False, "type": "rightAligned"},
    {"headerName": "decode", "field": "decode", "sortable": False, "type": "rightAligned"},
    {"headerName": "mixed", "field": "mixed", "sortable": False, "type": "rightAligned", "hide": True},
    {"headerName": "unsplit", "field": "unsplit", "sortable": False, "type": "rightAligned", "hide": True},
    {"headerName": "unknown", "field": "unknown", "sortable": False, "type": "rightAligned", "hide": True},
]


DISPATCH_COLUMNS = [
    {"headerName": "#", "field": "index", "valueFormatter": _INT, "filter": _NUM_FILTER, "maxWidth": 90},
    {"headerName": "Phase", "field": "phase", "filter": "agTextColumnFilter"},
    {"headerName": "Tokens", "field": "tokens", "valueFormatter": _INT, "filter": _NUM_FILTER},
    {"headerName": "Mode", "field": "mode", "filter": "agTextColumnFilter"},
    {"headerName": "Padded", "field": "padded", "valueFormatter": _INT, "filter": _NUM_FILTER},
    {"headerName": "Start (s)", "field": "start_ns", "valueFormatter": {"function": "d3.format(',.6f')(params.value / 1e9)"},
     "filter": _NUM_FILTER, "sort": "asc"},
    {"headerName": "Step (ms)", "field": "duration_ns", "valueFormatter": _MS, "filter": _NUM_FILTER,
     "headerTooltip": "mark to next mark (the last: to the end of GPU activity, or estimated)"},
    {"headerName": "Kernels", "field": "kernels", "valueFormatter": _INT, "filter": _NUM_FILTER,
     "headerTooltip": "kernels launched by API calls inside this dispatch (correlation id + process)"},
    {"headerName": "GPU busy (ms)", "field": "gpu_busy_ns", "valueFormatter": _MS, "filter": _NUM_FILTER},
    {"headerName": "Launch lead (µs)", "field": "launch_lead_ns", "valueFormatter": _US, "filter": _NUM_FILTER,
     "headerTooltip": "first attributed kernel start minus the dispatch mark"},
    {"headerName": "Time / token (µs)", "field": "ns_per_token", "valueFormatter": _US, "filter": _NUM_FILTER},
]


GAP_COLUMNS = [
    {"headerName": "GPU", "field": "device_id", "maxWidth": 90, "filter": _NUM_FILTER},
    {"headerName": "Start (s)", "field": "start_ns", "valueFormatter": {"function": "d3.format(',.6f')(params.value / 1e9)"},
     "filter": _NUM_FILTER},
    {"headerName": "Idle (µs)", "field": "duration_ns", "valueFormatter": _US, "filter": _NUM_FILTER, "sort": "desc"},
    {"headerName": "Host cause", "field": "cause", "flex": 2, "minWidth": 220, "filter": "agTextColumnFilter",
     "tooltipField": "cause"},
    {"headerName": "CUDA API call", "field": "api_call", "filter": "agTextColumnFilter"},
    {"headerName": "Innermost NVTX range", "field": "nvtx_range", "flex": 2, "filter": "agTextColumnFilter",
     "tooltipField": "nvtx_range"},
]


def gpu_columns(columns: list[tuple[str, str]]) -> list[dict]:
    """Column definitions of the transposed per-GPU table: a metric column, then one per device."""
    return [{"headerName": "", "field": "metric", "minWidth": 130, "sortable": False}] + [
        {"headerName": header, "field": key, "sortable": False, "type": "rightAligned"} for key, header in columns]


def graph_config(filename: str) -> dict:
    """Mode-bar config whose camera button saves PNG at 2x under ``filename``."""
    return {**GRAPH_CONFIG, "toImageButtonOptions": {**GRAPH_CONFIG["toImageButtonOptions"], "filename": filename}}


def phase_columns(rows: list[dict]) -> list[dict]:
    """PHASE_COLUMNS with a column for every phase present in ``rows`` (prefill/decode always)."""
    present = {k for r in rows for k in r}
    return [{**c, "hide": c["field"] not in present} if c.get("hide") is not None else c for c in PHASE_COLUMNS]


def kernel_grid_options(text: str) -> dict:
    """Grid options of the kernel table with its quick filter set to ``text``."""
    return {**GRID_OPTIONS, "quickFilterText": text or ""}


GRID_OPTIONS = {"tooltipShowDelay": 300, "animateRows": False, "enableCellTextSelection": True}


def grid(grid_id: str, columns: list[dict], height: str | None = "420px", filters: bool = True,
         **extra) -> dag.AgGrid:
    """A sortable (and, with ``filters``, filterable) AG Grid; cells render as text, never as HTML."""
    return dag.AgGrid(
        **extra,
        id=grid_id,
        columnDefs=columns,
        rowData=[],
        defaultColDef={"sortable": True, "filter": filters, "resizable": True, "floatingFilter": filters,
                       "minWidth": 100 if filters else 70, "flex": 1, "wrapHeaderText": True,
                       "autoHeaderHeight": True},
        dashGridOptions={**GRID_OPTIONS, **({} if height else {"domLayout": "autoHeight"})},
        style={"height": height, "width": "100%"} if height else {"width": "100%"},
        className="ag-theme-alpine" + ("" if filters else " compact"),
    )


def svg_button(graph_id: str) -> html.Button:
    """A small button that downloads ``graph_id`` as SVG (the mode bar's camera gives PNG at 2x)."""
    return html.Button("SVG", id={"type": ids.SVG_BUTTON, "graph": graph_id}, className="button small-button",
                       title="Download this figure as SVG")


def cards(items: list[Card]) -> list:
    """Overview cards: label, value, and the definition as a tooltip and small print."""
    return [
        html.Div(className="card", title=c.hint, children=[
            html.Div(c.label, className="card-label"),
            html.Div(c.value, className="card-value" + (" long" if len(c.value) > 14 else "")),
            html.Div(c.hint, className="card-hint"),
        ])
        for c in items
    ]


def alert(message: str, kind: str = "error") -> html.Div:
    """A visible, dismissible-looking alert box (text only, never HTML)."""
    return html.Div(role="alert", className=f"alert alert-{kind}", children=message)


def upload_control(max_upload_bytes: int) -> html.Div:
    """The "Open file…" button and its status line; assets/tracedash.js posts the file to ``/upload``
    (a drop anywhere on the page does the same)."""
    return html.Div(className="upload", children=[
        html.Button("Open file…", id=ids.UPLOAD_BUTTON, className="button",
                    title=f"Upload a .sqlite, .json or .json.gz trace (up to {max_upload_bytes / 1024**3:g} GiB), "
                          "or drop it anywhere on the page", **{"data-max-bytes": str(max_upload_bytes)}),
        html.Span(id=ids.UPLOAD_STATUS, className="hint", **{"aria-live": "polite"}),
    ])


def build_layout(trace_ids: list[str], selected: str | None, dispatch_prefix: str,
                 labels: dict[str, str] | None = None, uploads: bool = False,
                 max_upload_bytes: int = 2 * 1024**3) -> html.Div:
    """The whole page: header controls, alerts, overview, Gantt + phases, timeline, tables.

    ``uploads`` adds the "Open file…" control (see ``upload_control``)."""
    labels = labels or {}
    options = [{"label": labels.get(t, t), "value": t} for t in trace_ids]
    return html.Div(className="app", children=[
        dcc.Location(id=ids.URL, refresh=False),
        dcc.Store(id=ids.WINDOW),
        dcc.Store(id=ids.URL_APPLIED, data=False),
        dcc.Store(id=ids.CURRENT_WINDOW),
        html.Header(className="topbar", children=[
            html.Div(className="brand", children=[html.Span("tracedash", className="logo"),
                                                  html.Span("GPU trace dashboard", className="tagline")]),
            html.Div(className="controls", children=[
                html.Label(["Trace", dcc.Dropdown(id=ids.TRACE_PICKER, options=options, value=selected,
                                                  clearable=False, className="picker")]),
                *([upload_control(max_upload_bytes)] if uploads else []),
                html.Label(["Dispatch marker prefix",
                            dcc.Input(id=ids.DISPATCH_PREFIX, type="text", value=dispatch_prefix, debounce=True,
                                      spellCheck=False, className="text-input")]),
                html.Label(["Prefill when tokens ≥",
                            dcc.Input(id=ids.THRESHOLD, type="number", debounce=True, placeholder="auto",
                                      className="num-input"),
                            html.Span(id=ids.THRESHOLD_HINT, className="hint")]),
                html.Button("Copy link", id=ids.COPY_LINK, className="button", title="Copy a link to this view"),
                html.Button("Download report", id=ids.REPORT_BUTTON, className="button",
                            title="One offline HTML file of this view: figures, tables and settings"),
                dcc.Download(id=ids.REPORT_DOWNLOAD),
                html.A("Compare…", id=ids.COMPARE_LINK, href="compare/", className="button",
                       title="Compare this trace (as baseline A) with another run"),
                html.Label(["GPU busy counts", dcc.RadioItems(
                    id=ids.BUSY_SOURCE, value=BUSY_KERNELS, inline=True, className="radio",
                    options=[{"label": " kernels", "value": BUSY_KERNELS},
                             {"label": " kernels + memcpy/memset", "value": BUSY_ALL}])]),
            ]),
        ]),
        html.Div(id=ids.ALERTS, className="alerts"),
        html.Div(id=ids.UPLOAD_ALERT, className="alerts"),
        html.Div(id=ids.STATE_NOTICE, className="alerts", title="Click to dismiss", n_clicks=0),
        dcc.Loading(type="dot", delay_show=300, children=html.Section(id=ids.OVERVIEW, className="cards")),
        html.Section(className="row", children=[
            # The Gantt and the timeline share one column, so their time axes line up exactly.
            html.Div(className="grow", children=[
                html.Div(className="panel", children=[svg_button(ids.GANTT), dcc.Loading(
                    type="dot", delay_show=300, children=dcc.Graph(
                    id=ids.GANTT, config={**GRAPH_CONFIG, "toImageButtonOptions": {
                        **GRAPH_CONFIG["toImageButtonOptions"], "filename": "tracedash-gantt"}}))]),
                html.Div(className="panel", children=[svg_button(ids.TIMELINE), dcc.Checklist(
                    id=ids.LANES, value=list(ALL_LANES), inline=True, className="radio lanes",
                    options=[{"label": f" {label}", "value": v} for v, label in LANE_LABELS]),
                    html.Div(className="lanes", children=["Hide GPUs: ", dcc.Checklist(
                        id=ids.HIDE_DEVICES, value=[], options=[], inline=True, className="radio")]),
                    dcc.Loading(
                    type="dot", delay_show=300, children=dcc.Graph(
                    id=ids.TIMELINE, config={**GRAPH_CONFIG, "toImageButtonOptions": {
                        **GRAPH_CONFIG["toImageButtonOptions"], "filename": "tracedash-timeline"}}))]),
            ]),
            html.Div(className="side", children=html.Div(className="panel", children=[
                html.H3("Per phase"),
                grid(ids.PHASE_TABLE, PHASE_COLUMNS, height=None, filters=False),
                html.P("A step lasts from its dispatch mark to the next one (the last: to the end of GPU "
                       "activity, or estimated when unknown). Tokens/s = tokens ÷ total phase time.",
                       className="small"),
                html.H3("Per GPU"),
                grid(ids.GPU_TABLE, gpu_columns([]), height=None, filters=False),
                html.P("Busy follows “GPU busy counts”; CUDA graph launches traced at graph level count as busy. "
                       "Idle is measured over the whole GPU window, so a device that starts late shows it.",
                       className="small"),
            ])),
        ]),
        html.Section(className="panel", children=[svg_button(ids.PHASE_FIGURE), dcc.Loading(
            type="dot", delay_show=300, children=dcc.Graph(
            id=ids.PHASE_FIGURE, config={**GRAPH_CONFIG, "toImageButtonOptions": {
                **GRAPH_CONFIG["toImageButtonOptions"], "filename": "tracedash-phases"}}))]),
        html.Section(className="panel", children=dcc.Tabs(id=ids.TABLE_TABS, value="kernels", children=[
            dcc.Tab(label="Kernels", value="kernels", children=[
                html.Label(className="inline-control", children=[
                    "Filter kernels ", dcc.Input(id=ids.KERNEL_FILTER, type="text", debounce=0.6, value="",
                                                 placeholder="name, category…", className="text-input"),
                    " Group by ", dcc.RadioItems(id=ids.KERNEL_NAMES, value="short", inline=True, className="radio",
                                                 options=[{"label": " short name", "value": "short"},
                                                          {"label": " demangled name (each template instance)",
                                                           "value": "full"}])]),
                grid(ids.KERNEL_TABLE, KERNEL_COLUMNS, getRowId="params.data.row_id"),
            ]),
            dcc.Tab(label="CUDA API calls", value="api", children=grid(ids.API_TABLE, API_COLUMNS)),
            dcc.Tab(label="Dispatches", value="dispatches", children=grid(ids.DISPATCH_TABLE, DISPATCH_COLUMNS,
                                                                         getRowId="params.data.row_id")),
            dcc.Tab(label="Idle gaps", value="gaps", children=[
                html.Label(className="inline-control", children=[
                    "Gaps of at least (µs) ",
                    dcc.Input(id=ids.GAP_THRESHOLD, type="number", value=10, debounce=True, className="num-input"),
                    html.Span(" · click a row (here, in Dispatches or in Kernels) to zoom the timeline to it; "
                              "the address bar then links to that view", className="hint"),
                ]),
                html.Div(className="row", children=[
                    html.Div(className="grow", children=grid(ids.GAP_TABLE, GAP_COLUMNS, height="380px",
                                                                  getRowId="params.data.row_id")),
                    html.Div(className="side", children=dcc.Graph(id=ids.GAP_FIGURE, config=GRAPH_CONFIG)),
                ]),
            ]),
            dcc.Tab(label="NVTX ranges", value="nvtx", children=[
                dcc.Checklist(id=ids.NVTX_GROUP, value=[], className="radio", options=[{
                    "label": " group unique-per-call names (strip seq / op_id / sizes, e.g. PyTorch emit_nvtx)",
                    "value": "group"}]),
                grid(ids.NVTX_TABLE, NVTX_COLUMNS),
            ]),
        ])),
        html.Div(id=ids.SYNC_SINK, style={"display": "none"}),
        html.Footer("Times are on the nsys session timeline (0 = capture start). GPU busy is an interval "
                    "union, not a sum of kernel times; CUDA API and NVTX totals overlap GPU work and each other.",
                    className="footer"),
    ])
