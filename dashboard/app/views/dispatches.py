"""Dispatch table: one row per dispatch step (whole trace or visible window); a click marks it."""

from dash import html

from dashboard.app import ids
from dashboard.app.components import DISPATCH_COLUMNS, state_grid
from dashboard.app.views.base import STATS_WINDOW, View
from dashboard.render import dispatch_table_rows, phase_view, scope_text


def render(trace, state):
    """The dispatches view's outputs for ``trace``, from the fields of ``state`` listed in ``VIEW``."""
    return {"rows": dispatch_table_rows(phase_view(trace, state)), "scope": scope_text(trace, state.stats_window())}


VIEW = View(
    name="dispatches", fields=("prefix", "threshold", STATS_WINDOW), slot="tabs", tab="Dispatches",
    outputs={"rows": (ids.DISPATCH_TABLE, "rowData"), "scope": (ids.scope("dispatches"), "children")},
    render=render, empty=lambda message: {"rows": [], "scope": ""},
    layout=lambda state: html.Div(children=[
        html.Div(id=ids.scope("dispatches"), className="scope"),
        state_grid("dispatches", ids.DISPATCH_TABLE, DISPATCH_COLUMNS, state, getRowId="params.data.row_id")]),
)
