"""Overview cards: headline numbers of the whole trace or of the visible window (``stats``)."""

from dash import dcc, html

from dashboard.app import ids
from dashboard.app.layout import cards
from dashboard.app.views.base import STATS_WINDOW, View
from dashboard.render import overview_cards, scope_text, windowed


def render(trace, state):
    """The overview view's outputs for ``trace``, from the fields of ``state`` listed in ``VIEW``."""
    w = state.stats_window()
    return {"cards": cards(overview_cards(windowed(trace, w))), "scope": scope_text(trace, w)}


VIEW = View(
    name="overview", fields=(STATS_WINDOW,), slot="cards",
    outputs={"cards": (ids.OVERVIEW, "children"), "scope": (ids.scope("overview"), "children")},
    render=render,
    empty=lambda message: {"cards": [], "scope": ""},
    layout=lambda state: html.Div(children=[
        html.Div(id=ids.scope("overview"), className="scope"),
        dcc.Loading(type="dot", delay_show=300, children=html.Section(id=ids.OVERVIEW, className="cards"))]),
)
