"""NVTX range table; names grouped by normalised name automatically when they carry ``op_id``."""

from dash import dcc, html

from dashboard.app import ids
from dashboard.app.layout import NVTX_COLUMNS, state_grid
from dashboard.app.views.base import STATS_WINDOW, View
from dashboard.render import effective_group, nvtx_rows, scope_text, windowed


def render(trace, state):
    """The nvtx view's outputs for ``trace``, from the fields of ``state`` listed in ``VIEW``."""
    w = state.stats_window()
    grouped = effective_group(trace, state.group)
    return {"rows": nvtx_rows(windowed(trace, w), grouped=grouped), "scope": scope_text(trace, w),
            "group": ["group"] if grouped else []}


VIEW = View(
    name="nvtx", fields=("group", STATS_WINDOW), slot="tabs", tab="NVTX ranges",
    outputs={"rows": (ids.NVTX_TABLE, "rowData"), "scope": (ids.scope("nvtx"), "children"),
             "group": (ids.NVTX_GROUP, "value")},
    render=render, empty=lambda message: {"rows": [], "scope": ""},
    layout=lambda state: html.Div(children=[
        dcc.Checklist(id=ids.NVTX_GROUP, value=["group"] if state.group else [], className="radio", options=[{
            "label": " group unique-per-call names (strip seq / op_id / sizes, e.g. PyTorch emit_nvtx; on by "
                     "default when names carry op_id)", "value": "group"}]),
        html.Div(id=ids.scope("nvtx"), className="scope"),
        state_grid("nvtx", ids.NVTX_TABLE, NVTX_COLUMNS, state)]),
)
