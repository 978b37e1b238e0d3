"""Step times and kernel time by category per phase (whole trace or visible window)."""

from dash import dcc, html

from dashboard.app import ids
from dashboard.app.export_route import report_hrefs
from dashboard.app.layout import graph_config, report_image_links, svg_button
from dashboard.app.views.base import STATS_WINDOW, View
from dashboard.figures.common import empty_figure
from dashboard.render import options_from_state, phase_figure_view


def render(trace, state):
    """The phase figure view's outputs for ``trace``, from the fields of ``state`` listed in ``VIEW``."""
    fig, filename = phase_figure_view(trace, options_from_state(state))
    return {"figure": fig, "config": graph_config(filename), **report_hrefs("phases", state)}


VIEW = View(
    name="phase_figure", fields=("prefix", "threshold", "busy", STATS_WINDOW), slot="figures",
    outputs={"figure": (ids.PHASE_FIGURE, "figure"), "config": (ids.PHASE_FIGURE, "config"), "png": (f"{ids.PHASE_FIGURE}-report-png", "href"),
             "pdf": (f"{ids.PHASE_FIGURE}-report-pdf", "href")},
    render=render,
    empty=lambda message: {"figure": empty_figure("No trace to show.", height=200)},
    layout=lambda state: html.Section(className="panel", children=[
        svg_button(ids.PHASE_FIGURE), report_image_links(ids.PHASE_FIGURE),
        dcc.Loading(type="dot", delay_show=300, children=dcc.Graph(id=ids.PHASE_FIGURE,
                                                                   config=graph_config("tracedash-phases")))]),
)
