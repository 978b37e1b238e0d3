"""CUDA API call table (totals summed across threads), whole trace or visible window."""

from dash import dcc, html

from dashboard.analysis.tables import api_table
from dashboard.app import ids
from dashboard.app.components import API_COLUMNS, state_grid
from dashboard.app.views.base import STATS_WINDOW, View
from dashboard.render import records, scope_text, windowed


def render(trace, state):
    """API table rows per call or per family (``state.api_by``), whole trace or visible window."""
    w = state.stats_window()
    by = "family" if state.api_by == "family" else "name"
    return {"rows": records(api_table(windowed(trace, w).summary, by=by)), "scope": scope_text(trace, w)}


VIEW = View(
    name="api",
    fields=("api_by", STATS_WINDOW),
    slot="tabs",
    tab="CUDA API calls",
    outputs={"rows": (ids.API_TABLE, "rowData"), "scope": (ids.scope("api"), "children")},
    render=render,
    empty=lambda message: {"rows": [], "scope": ""},
    layout=lambda state: html.Div(
        children=[
            html.Label(
                className="inline-control",
                children=[
                    "Rows ",
                    dcc.RadioItems(
                        id=ids.API_GROUP,
                        value=state.api_by,
                        inline=True,
                        className="radio",
                        options=[
                            {"label": " per call", "value": "name"},
                            {"label": " per family (launch, sync, memcpy, memset, graph, other)", "value": "family"},
                        ],
                    ),
                ],
            ),
            html.Div(id=ids.scope("api"), className="scope"),
            state_grid("api", ids.API_TABLE, API_COLUMNS, state),
        ]
    ),
)
