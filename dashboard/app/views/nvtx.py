"""NVTX range table; names grouped by normalised name automatically when they carry ``op_id``."""

from dash import dcc, html

from dashboard.app import ids
from dashboard.app.components import NVTX_COLUMNS, state_grid
from dashboard.app.views.base import STATS_WINDOW, View
from dashboard.render import effective_group, nvtx_rows, scope_text, windowed
from dashboard.state import control_values


def render(trace, state):
    """The nvtx view's outputs for ``trace``, from the fields of ``state`` listed in ``VIEW``."""
    w = state.stats_window()
    grouped = effective_group(trace, state.group)
    auto = (
        ""
        if state.group is not None
        else (" · names grouped automatically (they carry op_id)" if grouped else " · names as recorded")
    )
    return {"rows": nvtx_rows(windowed(trace, w), grouped=grouped), "scope": scope_text(trace, w) + auto}


VIEW = View(
    name="nvtx",
    fields=("group", STATS_WINDOW),
    slot="tabs",
    tab="NVTX ranges",
    outputs={
        "rows": (ids.NVTX_TABLE, "rowData"),
        "scope": (ids.scope("nvtx"), "children"),
    },
    render=render,
    empty=lambda message: {"rows": [], "scope": ""},
    layout=lambda state: html.Div(
        children=[
            html.Label(
                className="inline-control",
                children=[
                    "Group unique-per-call names (strip seq / op_id / sizes, e.g. PyTorch emit_nvtx) ",
                    dcc.RadioItems(
                        id=ids.NVTX_GROUP,
                        value=control_values(state)["group"],
                        inline=True,
                        className="radio",
                        options=[
                            {"label": " automatic (when names carry op_id)", "value": "auto"},
                            {"label": " grouped", "value": "on"},
                            {"label": " as recorded", "value": "off"},
                        ],
                    ),
                ],
            ),
            html.Div(id=ids.scope("nvtx"), className="scope"),
            state_grid("nvtx", ids.NVTX_TABLE, NVTX_COLUMNS, state),
        ]
    ),
)
