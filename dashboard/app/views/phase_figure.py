"""Step times and kernel time by category per phase (whole trace or visible window)."""

from dash import dcc, html

from dashboard.app import ids
from dashboard.app.components import figure_buttons, graph_config
from dashboard.app.export_route import report_hrefs
from dashboard.app.views.base import STATS_WINDOW, View
from dashboard.figures.common import empty_figure, pending_figure
from dashboard.render import phase_figure_view, phase_view
from dashboard.render.steps import step_view


def render(trace, state):
    """The phase figure view's outputs for ``trace``, from the fields of ``state`` listed in ``VIEW``.
    Without dispatches the panel is one line saying why (the figure stays behind it for the export links)."""
    fig, filename = phase_figure_view(trace, state)
    if (sv := step_view(trace, state)) is not None:
        none = sv.steps.empty
        note = (
            "Where step time goes: no steps of this process in the window."
            if none and sv.window is not None
            else f"Where step time goes: no {sv.source.label} in this trace (choose another source in “Steps from”)."
            if none
            else ""
        )
        hide = {"display": "none"} if none else {}
        return {
            "figure": fig,
            "config": graph_config(filename),
            **report_hrefs("phases", state),
            "note": note,
            "box_style": hide,
            "links_style": hide,
        }
    pv = phase_view(trace, state)
    if pv.dispatches.empty:
        where = "in this window" if state.stats_window() is not None and trace.bundle is not None else "in this trace"
        note = (
            f"Where step time goes: no dispatches {where} (no NVTX mark or range named {state.prefix}…; set the "
            "dispatch marker prefix to your server's marks)."
        )
        box, links = {"display": "none"}, {"display": "none"}
    else:
        note, box, links = "", {}, {}
    return {
        "figure": fig,
        "config": graph_config(filename),
        **report_hrefs("phases", state),
        "note": note,
        "box_style": box,
        "links_style": links,
    }


VIEW = View(
    name="phase_figure",
    fields=("prefix", "threshold", "steps", "step_pid", "busy", STATS_WINDOW),
    slot="figures",
    outputs={
        "figure": (ids.PHASE_FIGURE, "figure"),
        "config": (ids.PHASE_FIGURE, "config"),
        "png": (f"{ids.PHASE_FIGURE}-report-png", "href"),
        "pdf": (f"{ids.PHASE_FIGURE}-report-pdf", "href"),
        "note": ("phase-figure-note", "children"),
        "box_style": ("phase-figure-box", "style"),
        "links_style": ("phase-figure-links", "style"),
    },
    render=render,
    empty=lambda message: {"figure": empty_figure("No trace to show.", height=200)},
    layout=lambda state: html.Section(
        className="panel",
        children=[
            html.P(id="phase-figure-note", className="small"),
            figure_buttons(ids.PHASE_FIGURE, id="phase-figure-links"),
            html.Div(
                id="phase-figure-box",
                children=dcc.Loading(
                    type="dot",
                    delay_show=300,
                    children=dcc.Graph(
                        id=ids.PHASE_FIGURE, figure=pending_figure(200), config=graph_config("tracedash-phases")
                    ),
                ),
            ),
        ],
    ),
)
