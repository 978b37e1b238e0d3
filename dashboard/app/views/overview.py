"""Overview cards: headline numbers of the whole trace or of the visible window (``stats``)."""

from dash import dcc, html

from dashboard.analysis.gpu_time import BUSY_SOURCES, cuda_traced
from dashboard.app import ids
from dashboard.app.components import cards
from dashboard.app.views.base import FIRST, STATS_WINDOW, View
from dashboard.render import overview_cards, scope_text, windowed


def busy_options(trace) -> list[dict]:
    """The "GPU busy counts" choices, disabled with the reason where they change nothing: a summary JSON holds
    kernel totals only, and a trace without CUDA tracing has no GPU work to count."""
    why = (
        "a summary JSON holds kernel totals only: no graph or memcpy/memset intervals to count"
        if trace.bundle is None
        else None
        if cuda_traced(trace)
        else "CUDA was not traced: no GPU work to count"
    )
    return [
        {"label": f" {label}", "value": value, "disabled": why is not None, "title": why or ""}
        for value, label in BUSY_SOURCES.items()
    ]


STATS_FOR_OPTIONS = ({"label": " whole trace", "value": "trace"}, {"label": " visible window", "value": "window"})


def stats_options(trace) -> list[dict]:
    """The "Stats for" choices: the visible window disabled, with the reason, for a summary JSON (its figures are
    the whole trace's totals, which no window can cut)."""
    why = "a summary JSON holds whole-trace totals only: no intervals to clip at a window's edges"
    off = {"window"} if trace.bundle is None else set()
    return [{**o, "disabled": o["value"] in off, "title": why if o["value"] in off else ""} for o in STATS_FOR_OPTIONS]


def render(trace, state):
    """Overview cards for the state's busy source, whole trace or visible window."""
    w = state.stats_window()
    return {
        "cards": cards(overview_cards(windowed(trace, w), state)),
        "scope": scope_text(trace, w),
        "busy_options": busy_options(trace),
        "stats_options": stats_options(trace),
    }


VIEW = View(
    name="overview",
    priority=FIRST,
    fields=("busy", STATS_WINDOW),
    slot="cards",  # the busy source applies here too
    outputs={
        "cards": (ids.OVERVIEW, "children"),
        "scope": (ids.scope("overview"), "children"),
        "busy_options": (ids.BUSY_SOURCE, "options"),
        "stats_options": (ids.STATS_FOR, "options"),
    },
    render=render,
    empty=lambda message: {"cards": [], "scope": ""},
    layout=lambda state: html.Div(
        children=[
            html.Div(id=ids.scope("overview"), className="scope"),
            dcc.Loading(type="dot", delay_show=300, children=html.Section(id=ids.OVERVIEW, className="cards")),
        ]
    ),
)
