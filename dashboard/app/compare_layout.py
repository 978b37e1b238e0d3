"""Layout of the compare page (``/compare/?a=<trace id>&b=<trace id>``): pure builders, no data."""

from __future__ import annotations

from dash import dcc, html

from dashboard.app.components import GRAPH_CONFIG, grid
from dashboard.app.load_banner import load_banner
from dashboard.render.compare import DeltaCard

# Component ids of the compare page (a page of the same app: prefixed so they cannot clash with the main page's).
URL = "cmp-url"  # dcc.Store: the query the page was opened with
SEARCH = "cmp-search"  # {"search", "replace"}: written to the address bar client-side
PICK_A = "cmp-a"
PICK_B = "cmp-b"
SWAP = "cmp-swap"
ALERTS = "cmp-alerts"
CARDS = "cmp-cards"
GATE_NOTE = "cmp-gate-note"
PHASE_TABLE = "cmp-phase-table"
TYPE_TABLE = "cmp-type-table"
_NONE = "No {} in either run"
_NO_DISPATCHES = "No dispatches in either run: no NVTX mark or range starts with the dispatch prefix"
STEP_FIGURE = "cmp-step-figure"
KERNEL_FIGURE = "cmp-kernel-figure"
CATEGORY_FIGURE = "cmp-category-figure"
KERNEL_GRID = "cmp-kernel-grid"
CATEGORY_GRID = "cmp-category-grid"
NVTX_GRID = "cmp-nvtx-grid"
API_GRID = "cmp-api-grid"
FINDINGS_GRID = "cmp-findings-grid"
OPEN_A = "cmp-open-a"
OPEN_B = "cmp-open-b"
PHASE_SECTION = "cmp-phase-section"
LOAD_STATUS = "cmp-load-status"  # which run is loading, and where its load stands
LOAD_POLL = "cmp-load-poll"
PENDING = "cmp-pending"  # the pair the page waits for while a run loads
KICK = "cmp-kick"  # set by the load poll when the wait is over: the page's callback shows the pair
CONTENT = "cmp-content"  # everything the comparison fills in
ALL = [
    PHASE_SECTION,
    URL,
    SEARCH,
    PICK_A,
    PICK_B,
    SWAP,
    ALERTS,
    CARDS,
    GATE_NOTE,
    PHASE_TABLE,
    TYPE_TABLE,
    STEP_FIGURE,
    KERNEL_FIGURE,
    CATEGORY_FIGURE,
    KERNEL_GRID,
    CATEGORY_GRID,
    NVTX_GRID,
    API_GRID,
    FINDINGS_GRID,
    OPEN_A,
    OPEN_B,
]

_DMS = {"function": "params.value == null ? '—' : d3.format('+,.3f')(params.value / 1e6)"}
_MSN = {"function": "params.value == null ? '—' : d3.format(',.3f')(params.value / 1e6)"}
_US = {"function": "params.value == null ? '—' : d3.format(',.2f')(params.value / 1e3)"}
_INT = {"function": "params.value == null ? '—' : d3.format(',')(params.value)"}
_DINT = {"function": "params.value == null ? '—' : d3.format('+,')(params.value)"}
# Changes of 100 % and more in whole percent with thousands separators: "+7,157 %" fits its column where
# "+7156.76 %" was cut.
_DPCT = {
    "function": "params.value == null ? (params.data.only_in == 'b' ? 'new' : params.data.only_in == 'a' ? "
    "'gone' : '—') : d3.format(Math.abs(params.value) >= 100 ? '+,.0f' : '+.2f')(params.value) + ' %'"
}
_NUM = "agNumberColumnFilter"
# Red when the candidate spends more time, green when less (the numbers stay the same).
_TONE = {"delta-worse": "params.value > 0", "delta-better": "params.value < 0"}


# Findings that appear, disappear or change cost from A to B (findings_report.diff_findings), by |Δ cost|.
FINDINGS_COLUMNS = [
    {"headerName": "Rule", "field": "rule", "pinned": "left", "minWidth": 170, "filter": "agTextColumnFilter"},
    {"headerName": "Change", "field": "change", "minWidth": 160, "filter": "agTextColumnFilter"},
    {"headerName": "Cost A (ms)", "field": "a_cost_ns", "valueFormatter": _MSN, "filter": _NUM},
    {"headerName": "Cost B (ms)", "field": "b_cost_ns", "valueFormatter": _MSN, "filter": _NUM},
    {"headerName": "Δ cost (ms)", "field": "delta_ns", "valueFormatter": _DMS, "filter": _NUM, "cellClassRules": _TONE},
    {"headerName": "Severity A", "field": "a_severity", "minWidth": 100},
    {"headerName": "Severity B", "field": "b_severity", "minWidth": 100},
    {"headerName": "In B", "field": "b_summary", "tooltipField": "b_summary", "flex": 4, "minWidth": 320},
]


def _delta_columns(name_header: str, *, category: bool = False) -> list[dict]:
    """Columns of a NAME_DELTA grid, sorted by |Δ total| (hidden abs_delta_ns column) by default."""
    cols = [
        {
            "headerName": name_header,
            "field": "name",
            "tooltipField": "name",
            "flex": 3,
            "minWidth": 240,
            "filter": "agTextColumnFilter",
            "pinned": "left",
        }
    ]
    if category:
        cols.append({"headerName": "Category", "field": "category", "filter": "agTextColumnFilter", "minWidth": 130})
    cols += [
        {"headerName": "Count A", "field": "a_count", "valueFormatter": _INT, "filter": _NUM},
        {"headerName": "Count B", "field": "b_count", "valueFormatter": _INT, "filter": _NUM},
        {"headerName": "Total A (ms)", "field": "a_total_ns", "valueFormatter": _MSN, "filter": _NUM},
        {"headerName": "Total B (ms)", "field": "b_total_ns", "valueFormatter": _MSN, "filter": _NUM},
        {
            "headerName": "Δ total (ms)",
            "field": "delta_total_ns",
            "valueFormatter": _DMS,
            "filter": _NUM,
            "cellClassRules": _TONE,
            "headerTooltip": "B − A; the table is sorted by its absolute value",
        },
        {
            "headerName": "Δ total %",
            "field": "delta_total_pct",
            "valueFormatter": _DPCT,
            "filter": _NUM,
            "cellClassRules": _TONE,
        },
        {"headerName": "Mean A (µs)", "field": "a_mean_ns", "valueFormatter": _US, "filter": _NUM},
        {"headerName": "Mean B (µs)", "field": "b_mean_ns", "valueFormatter": _US, "filter": _NUM},
        {
            "headerName": "Δ mean %",
            "field": "delta_mean_pct",
            "valueFormatter": _DPCT,
            "filter": _NUM,
            "cellClassRules": _TONE,
            "headerTooltip": "per-call change: blank when one side has no calls",
        },
        {"headerName": "|Δ total|", "field": "abs_delta_ns", "hide": True, "sort": "desc"},
    ]
    return cols


KERNEL_COLUMNS = _delta_columns("Kernel (short name)", category=True)
CATEGORY_COLUMNS = _delta_columns("Kernel category")
NVTX_COLUMNS = _delta_columns("NVTX range (normalised name)")
API_COLUMNS = _delta_columns("CUDA API call (summed across threads)")
PHASE_COLUMNS = [
    {"headerName": "Phase", "field": "phase", "minWidth": 90},
    {"headerName": "Steps A", "field": "a_dispatches", "valueFormatter": _INT},
    {"headerName": "Steps B", "field": "b_dispatches", "valueFormatter": _INT},
    {"headerName": "Mean A (ms)", "field": "a_mean_ns", "valueFormatter": _MSN},
    {"headerName": "Mean B (ms)", "field": "b_mean_ns", "valueFormatter": _MSN},
    {"headerName": "p90 A (ms)", "field": "a_p90_ns", "valueFormatter": _MSN},
    {"headerName": "p90 B (ms)", "field": "b_p90_ns", "valueFormatter": _MSN},
    {
        "headerName": "Δ mean %",
        "field": "delta_mean_pct",
        "valueFormatter": _DPCT,
        "cellClassRules": _TONE,
        "headerTooltip": "raw change of the mean step: depends on each run's token mix",
    },
    {
        "headerName": "Paired types",
        "field": "paired_types",
        "valueFormatter": _INT,
        "headerTooltip": "dispatch types (phase, token count) present in both runs",
    },
    {
        "headerName": "Δ matched %",
        "field": "matched_delta_pct",
        "valueFormatter": _DPCT,
        "cellClassRules": _TONE,
        "headerTooltip": "B's step time at A's token mix, over paired types: the like-for-like change",
    },
]
TYPE_COLUMNS = [
    {"headerName": "Phase", "field": "phase", "minWidth": 90},
    {"headerName": "Tokens", "field": "tokens", "valueFormatter": _INT},
    {"headerName": "Steps A", "field": "a_count", "valueFormatter": _INT},
    {"headerName": "Steps B", "field": "b_count", "valueFormatter": _INT},
    {"headerName": "Mean A (ms)", "field": "a_mean_ns", "valueFormatter": _MSN},
    {"headerName": "Mean B (ms)", "field": "b_mean_ns", "valueFormatter": _MSN},
    {"headerName": "Δ mean (ms)", "field": "delta_mean_ns", "valueFormatter": _DMS, "cellClassRules": _TONE},
    {"headerName": "Δ mean %", "field": "delta_mean_pct", "valueFormatter": _DPCT, "cellClassRules": _TONE},
]


def delta_cards(items: list[DeltaCard]) -> list:
    """Overview delta cards: label, A → B, and the change coloured by whether B is worse."""
    return [
        html.Div(
            className=f"card delta-card tone-{c.tone}",
            title=c.hint,
            children=[
                html.Div(c.label, className="card-label"),
                html.Div(
                    className="card-value delta-values",
                    children=[
                        html.Span(c.a, className="delta-a", title="A (baseline)"),
                        html.Span(" → ", className="arrow"),
                        html.Span(c.b, className="delta-b", title="B (candidate)"),
                    ],
                ),
                html.Div(c.change, className="delta-change"),
            ],
        )
        for c in items
    ]


def _graph(graph_id: str, filename: str) -> dcc.Graph:
    return dcc.Graph(
        id=graph_id,
        config={**GRAPH_CONFIG, "toImageButtonOptions": {**GRAPH_CONFIG["toImageButtonOptions"], "filename": filename}},
    )


def build_compare_layout(
    trace_ids: list[str], labels: dict[str, str], home_href: str, search: str = "", load_line: str | None = None
) -> html.Div:
    """The compare page opened with ``search`` (``?a=<id>&b=<id>``, plus view-state keys such as
    ``prefix``): two pickers (A baseline, B candidate), the load status line (shown with ``load_line``:
    a run is not in memory yet), delta cards, per-phase tables, step-time figure, delta bars and per-name
    delta grids."""
    options = [{"label": labels.get(t, t), "value": t} for t in trace_ids]
    return html.Div(
        className="app compare",
        children=[
            dcc.Store(id=URL, data=search),
            dcc.Store(id=SEARCH),
            dcc.Store(id=PENDING),
            dcc.Store(id=KICK),
            html.Header(
                className="topbar",
                children=[
                    html.Div(
                        className="brand",
                        children=[
                            html.A("tracedash", href=home_href, className="logo"),
                            html.Span("compare two runs", className="tagline"),
                        ],
                    ),
                    html.Div(
                        className="controls",
                        children=[
                            html.Label(
                                [
                                    "A · baseline",
                                    dcc.Dropdown(id=PICK_A, options=options, clearable=False, className="picker"),
                                ]
                            ),
                            html.Button("⇄ swap", id=SWAP, className="button", title="Swap baseline and candidate"),
                            html.Label(
                                [
                                    "B · candidate",
                                    dcc.Dropdown(id=PICK_B, options=options, clearable=False, className="picker"),
                                ]
                            ),
                            html.A(
                                "open A",
                                id=OPEN_A,
                                href=home_href,
                                className="button small-button",
                                title="Open the baseline in the single-trace view",
                            ),
                            html.A(
                                "open B",
                                id=OPEN_B,
                                href=home_href,
                                className="button small-button",
                                title="Open the candidate in the single-trace view",
                            ),
                        ],
                    ),
                ],
            ),
            html.Div(id=ALERTS, className="alerts"),
            *load_banner(load_line, LOAD_STATUS, LOAD_POLL, preview_id=None),
            _comparison(hidden=load_line is not None),
            html.Footer(
                "Deltas are B − A (candidate minus baseline); red = more time in B, green = less. Kernel and "
                "category totals sum all devices and streams; API totals are summed across threads; NVTX "
                "names are grouped with per-call fields (seq, op_id, sizes) stripped.",
                className="footer",
            ),
        ],
    )


def _comparison(hidden: bool) -> html.Div:
    """Everything the comparison fills in; hidden while a run loads (its empty grids would say "no dispatches in
    either run", which is not known yet)."""
    return html.Div(
        id=CONTENT,
        hidden=hidden,
        children=[
            dcc.Loading(
                type="dot",
                delay_show=300,
                children=[
                    html.Section(id=CARDS, className="cards"),
                    html.P(id=GATE_NOTE, className="small gate-note"),
                ],
            ),
            html.Section(
                id=PHASE_SECTION,
                className="row",
                children=[
                    html.Div(
                        className="half panel",
                        children=dcc.Loading(
                            type="dot", delay_show=300, children=_graph(STEP_FIGURE, "tracedash-compare-steps")
                        ),
                    ),
                    html.Div(
                        className="half panel",
                        children=[
                            html.H3("Per phase"),
                            grid(PHASE_TABLE, PHASE_COLUMNS, height=None, filters=False, no_rows=_NO_DISPATCHES),
                            html.H3("Dispatch types (phase, token count)"),
                            grid(TYPE_TABLE, TYPE_COLUMNS, height="220px", filters=False, no_rows=_NO_DISPATCHES),
                            html.P(
                                "Dispatches are paired by type: A's decode steps with 3 tokens against B's decode "
                                "steps "
                                "with 3 tokens; one prefill/decode split serves both runs. Δ matched = B's step time "
                                "at "
                                "A's mix of types, the like-for-like change.",
                                className="small",
                            ),
                        ],
                    ),
                ],
            ),
            html.Section(
                className="row",
                children=[
                    html.Div(
                        className="half panel",
                        children=dcc.Loading(
                            type="dot", delay_show=300, children=_graph(CATEGORY_FIGURE, "tracedash-compare-categories")
                        ),
                    ),
                    html.Div(
                        className="half panel",
                        children=dcc.Loading(
                            type="dot", delay_show=300, children=_graph(KERNEL_FIGURE, "tracedash-compare-kernels")
                        ),
                    ),
                ],
            ),
            html.Section(
                className="panel",
                children=dcc.Tabs(
                    value="kernels",
                    children=[
                        dcc.Tab(
                            label="Kernels",
                            value="kernels",
                            children=grid(KERNEL_GRID, KERNEL_COLUMNS, no_rows=_NONE.format("kernels")),
                        ),
                        dcc.Tab(
                            label="Kernel categories",
                            value="categories",
                            children=grid(
                                CATEGORY_GRID, CATEGORY_COLUMNS, height="320px", no_rows=_NONE.format("kernels")
                            ),
                        ),
                        dcc.Tab(
                            label="NVTX ranges",
                            value="nvtx",
                            children=grid(NVTX_GRID, NVTX_COLUMNS, no_rows=_NONE.format("NVTX ranges")),
                        ),
                        dcc.Tab(
                            label="CUDA API calls",
                            value="api",
                            children=grid(API_GRID, API_COLUMNS, no_rows=_NONE.format("CUDA API calls")),
                        ),
                        dcc.Tab(
                            label="Findings",
                            value="findings",
                            children=grid(
                                FINDINGS_GRID, FINDINGS_COLUMNS, height="320px", no_rows="No finding in either run"
                            ),
                        ),
                    ],
                ),
            ),
        ],
    )
