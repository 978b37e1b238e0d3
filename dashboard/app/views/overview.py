"""Overview cards: headline numbers of the whole trace or of the visible window (``stats``)."""

from dash import dcc, html

from dashboard.app import ids
from dashboard.app.layout import cards
from dashboard.app.views.base import STATS_WINDOW, View
from dashboard.render import options_from_state, overview_cards, scope_text, windowed


def render(trace, state):
    """Overview cards for the state's busy source, whole trace or visible window."""
    w = state.stats_window()
    return {"cards": cards(overview_cards(windowed(trace, w), options_from_state(state))), "scope": scope_text(trace, w)}


VIEW = View(
    name="overview", fields=("busy", STATS_WINDOW), slot="cards",  # the busy source applies here too
    outputs={"cards": (ids.OVERVIEW, "children"), "scope": (ids.scope("overview"), "children")},
    render=render,
    empty=lambda message: {"cards": [], "scope": ""},
    layout=lambda state: html.Div(children=[
        html.Div(id=ids.scope("overview"), className="scope"),
        dcc.Loading(type="dot", delay_show=300, children=html.Section(id=ids.OVERVIEW, className="cards"))]),
)
