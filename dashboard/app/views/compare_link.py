"""The header's "Compare…" link: this trace as baseline A, with this view's dispatch prefix."""

from urllib.parse import urlencode

from dashboard.app import ids
from dashboard.app.views.base import View
from dashboard.state import DEFAULT, ViewState

COMPARE_PATH = "compare/"


def compare_href(state: ViewState) -> str:
    """Relative link to the compare page for ``state`` (``compare/?a=<trace>&prefix=…&threshold=…&steps=…``;
    the prefix and step source only when not the default, the threshold only when set)."""
    q = {"a": state.trace} if state.trace else {}
    if state.prefix != DEFAULT.prefix:
        q["prefix"] = state.prefix
    if state.threshold is not None:  # the phase split the user set applies to both runs there
        q["threshold"] = f"{state.threshold:g}"
    if state.steps != DEFAULT.steps:  # the step source applies to both runs there
        q["steps"] = state.steps
    return COMPARE_PATH + ("?" + urlencode(q) if q else "")


VIEW = View(
    name="compare_link",
    fields=("trace", "prefix", "threshold", "steps"),
    slot="none",
    needs_trace=False,
    on_load=False,
    outputs={"href": (ids.COMPARE_LINK, "href")},
    render=lambda trace, state: {"href": compare_href(state)},
)
