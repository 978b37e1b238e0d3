"""Idle gaps: the largest GPU idle gaps with their host causes, and idle time by cause."""

from dash import dcc, html

from dashboard.app import ids
from dashboard.app.components import GAP_COLUMNS, GRAPH_CONFIG, state_grid
from dashboard.app.views.base import STATS_WINDOW, View
from dashboard.figures.common import empty_figure, pending_figure
from dashboard.render import effective_group, idle_view, scope_text, windowed


def render(trace, state):
    """The gaps view's outputs for ``trace``, from the fields of ``state`` listed in ``VIEW``."""
    rows, fig, listed = idle_view(
        windowed(trace, state.stats_window()),
        state,
        int(round(state.gap_us * 1000)),
        grouped=effective_group(trace, state.group),
    )
    scope = scope_text(trace, state.stats_window())
    return {"rows": rows, "figure": fig, "scope": f"{scope} · {listed}" if listed else scope}


def layout(state):
    """The gaps view's layout fragment for the page built from ``state``."""
    return html.Div(
        children=[
            html.Label(
                className="inline-control",
                children=[
                    "Gaps of at least (µs) ",
                    dcc.Input(
                        id=ids.GAP_THRESHOLD, type="number", value=state.gap_us, debounce=True, className="num-input"
                    ),
                    html.Span(
                        " · click a row (here, in Dispatches or in Kernels) to zoom the timeline to it and mark it; "
                        "the address bar then links to that view",
                        className="hint",
                    ),
                ],
            ),
            html.Div(id=ids.scope("gaps"), className="scope"),
            html.Div(
                className="row",
                children=[
                    html.Div(
                        className="grow",
                        children=state_grid(
                            "gaps", ids.GAP_TABLE, GAP_COLUMNS, state, height="380px", getRowId="params.data.row_id"
                        ),
                    ),
                    html.Div(
                        className="side",
                        children=dcc.Graph(id=ids.GAP_FIGURE, figure=pending_figure(380), config=GRAPH_CONFIG),
                    ),
                ],
            ),
        ]
    )


VIEW = View(
    name="gaps",
    fields=("busy", "gap_us", "group", STATS_WINDOW),
    slot="tabs",
    tab="Idle gaps",
    outputs={
        "rows": (ids.GAP_TABLE, "rowData"),
        "figure": (ids.GAP_FIGURE, "figure"),
        "scope": (ids.scope("gaps"), "children"),
    },
    render=render,
    empty=lambda message: {
        "rows": [],
        "figure": empty_figure("Idle gaps could not be computed for this trace.", height=200),
        "scope": "",
    },
    layout=layout,
)
