"""Step times and kernel time by category per phase (whole trace or visible window)."""

from dash import dcc, html

from dashboard.app import ids
from dashboard.app.layout import graph_config, svg_button
from dashboard.app.views.base import STATS_WINDOW, View
from dashboard.figures.common import empty_figure
from dashboard.render import options_from_state, phase_figure_view


def render(trace, state):
    """The phase figure view's outputs for ``trace``, from the fields of ``state`` listed in ``VIEW``."""
    fig, filename = phase_figure_view(trace, options_from_state(state))
    return {"figure": fig, "config": graph_config(filename)}


VIEW = View(
    name="phase_figure", fields=("prefix", "threshold", "busy", STATS_WINDOW), slot="figures",
    outputs={"figure": (ids.PHASE_FIGURE, "figure"), "config": (ids.PHASE_FIGURE, "config")},
    render=render,
    empty=lambda message: {"figure": empty_figure("No trace to show.", height=200)},
    layout=lambda state: html.Section(className="panel", children=[
        svg_button(ids.PHASE_FIGURE),
        dcc.Loading(type="dot", delay_show=300, children=dcc.Graph(id=ids.PHASE_FIGURE,
                                                                   config=graph_config("tracedash-phases")))]),
)
