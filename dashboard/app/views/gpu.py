"""Per GPU: busy, idle and utilisation per device and for all GPUs (whole trace or visible window)."""

from dash import html

from dashboard.app import ids
from dashboard.app.components import gpu_columns, metric_table
from dashboard.app.views.base import STATS_WINDOW, View
from dashboard.render import gpu_rows, scope_text, windowed


def render(trace, state):
    """The gpu view's outputs for ``trace``, from the fields of ``state`` listed in ``VIEW``."""
    if trace.bundle is None:
        return {
            "table": [],
            "scope": "",
            "box": {"display": "none"},
            "empty": "Per GPU: a summary JSON holds totals only, no per-device intervals.",
        }
    rows, columns = gpu_rows(windowed(trace, state.stats_window()), state)
    return {
        "table": metric_table(gpu_columns(columns), rows),
        "scope": scope_text(trace, state.stats_window()),
        "box": {} if rows else {"display": "none"},
        "empty": ""
        if rows
        else "Per GPU: no kernels or memory operations in this " + ("window." if state.stats_window() else "trace."),
    }


VIEW = View(
    name="gpu",
    fields=("busy", STATS_WINDOW),
    slot="side",
    outputs={
        "table": (ids.GPU_TABLE, "children"),
        "scope": (ids.scope("gpu"), "children"),
        "box": ("gpu-box", "style"),
        "empty": ("gpu-empty", "children"),
    },
    render=render,
    empty=lambda message: {"table": [], "scope": "", "empty": ""},
    layout=lambda state: html.Div(
        className="panel",
        children=[
            html.P(id="gpu-empty", className="small"),
            html.Div(
                id="gpu-box",
                children=[
                    html.H3("Per GPU"),
                    html.Div(id=ids.scope("gpu"), className="scope"),
                    html.Table(id=ids.GPU_TABLE, className="metric-table"),
                    html.P(
                        "Busy follows “GPU busy counts” (as every panel does). Each GPU is measured over its own "
                        "window "
                        "(its first to its last GPU work); “any GPU” is the union over all GPUs within the span.",
                        className="small",
                    ),
                ],
            ),
        ],
    ),
)
