"""CUDA API call table (totals summed across threads), whole trace or visible window."""

from dash import html

from dashboard.analysis.tables import api_table
from dashboard.app import ids
from dashboard.app.layout import API_COLUMNS, state_grid
from dashboard.app.views.base import STATS_WINDOW, View
from dashboard.render import records, scope_text, windowed


def render(trace, state):
    """The api view's outputs for ``trace``, from the fields of ``state`` listed in ``VIEW``."""
    w = state.stats_window()
    return {"rows": records(api_table(windowed(trace, w).summary)), "scope": scope_text(trace, w)}


VIEW = View(
    name="api", fields=(STATS_WINDOW,), slot="tabs", tab="CUDA API calls",
    outputs={"rows": (ids.API_TABLE, "rowData"), "scope": (ids.scope("api"), "children")},
    render=render, empty=lambda message: {"rows": [], "scope": ""},
    layout=lambda state: html.Div(children=[html.Div(id=ids.scope("api"), className="scope"),
                                            state_grid("api", ids.API_TABLE, API_COLUMNS, state)]),
)
