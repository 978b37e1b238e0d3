"""Steps table (the dispatch table): one row per step (whole trace or visible window); a click marks it."""

from dash import html

from dashboard.app import ids
from dashboard.app.components import DISPATCH_COLUMNS, state_grid
from dashboard.app.views.base import STATS_WINDOW, View
from dashboard.render import dispatch_table_rows, phase_view, scope_text
from dashboard.render.steps import step_scope_text, step_table_rows, step_view


def render(trace, state):
    """The Steps table's outputs for ``trace``, from the fields of ``state`` listed in ``VIEW``: a
    framework's steps (``render.steps``), else the seed's dispatches."""
    if (sv := step_view(trace, state)) is not None:
        return {"rows": step_table_rows(sv), "scope": step_scope_text(sv)}
    return {"rows": dispatch_table_rows(phase_view(trace, state)), "scope": scope_text(trace, state.stats_window())}


VIEW = View(
    name="dispatches",
    fields=("prefix", "threshold", "steps", "step_pid", STATS_WINDOW),
    slot="tabs",
    tab="Dispatches",  # "Steps" for a framework's steps (the step_source view sets it)
    outputs={"rows": (ids.DISPATCH_TABLE, "rowData"), "scope": (ids.scope("dispatches"), "children")},
    render=render,
    empty=lambda message: {"rows": [], "scope": ""},
    layout=lambda state: html.Div(
        children=[
            html.Div(id=ids.scope("dispatches"), className="scope"),
            state_grid("dispatches", ids.DISPATCH_TABLE, DISPATCH_COLUMNS, state, getRowId="params.data.row_id"),
        ]
    ),
)
