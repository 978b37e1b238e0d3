"""The dispatch Gantt, on the timeline's x axis (zooming one zooms both, see assets/tracedash.js)."""

from dash import dcc, html

from dashboard.app import ids
from dashboard.app.components import figure_buttons, graph_config
from dashboard.app.export_route import report_hrefs
from dashboard.app.views.base import WINDOW, View
from dashboard.figures.common import empty_figure, pending_figure
from dashboard.render import gantt_view


def render(trace, state):
    """The gantt view's outputs for ``trace``, from the fields of ``state`` listed in ``VIEW``."""
    fig, filename = gantt_view(trace, state)
    return {"figure": fig, "config": graph_config(filename), **report_hrefs("gantt", state)}


VIEW = View(
    name="gantt",
    fields=("prefix", "threshold", "steps", "busy", "mark", WINDOW, "notes"),
    slot="main",
    outputs={
        "figure": (ids.GANTT, "figure"),
        "config": (ids.GANTT, "config"),
        "png": (f"{ids.GANTT}-report-png", "href"),
        "pdf": (f"{ids.GANTT}-report-pdf", "href"),
    },
    render=render,
    empty=lambda message: {"figure": empty_figure("No trace to show.", height=200)},
    layout=lambda state: html.Div(
        className="panel",
        children=[
            figure_buttons(ids.GANTT),
            dcc.Loading(
                type="dot",
                delay_show=300,
                children=dcc.Graph(id=ids.GANTT, figure=pending_figure(200), config=graph_config("tracedash-gantt")),
            ),
        ],
    ),
)
