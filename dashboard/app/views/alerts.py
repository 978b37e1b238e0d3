"""Alerts: a trace that cannot be read, and page-level notices (merged ranks, no kernels)."""

from dash import html

from dashboard.app import ids
from dashboard.app.components import alert
from dashboard.app.views.base import FIRST, View
from dashboard.render import view_notices

VIEW = View(
    name="alerts",
    priority=FIRST,
    fields=(),
    slot="alerts",
    outputs={"alerts": (ids.ALERTS, "children")},
    render=lambda trace, state: {"alerts": [alert(n, "info") for n in view_notices(trace)]},
    empty=lambda message: {"alerts": alert(message)},
    layout=lambda state: html.Div(id=ids.ALERTS, className="alerts"),
)
