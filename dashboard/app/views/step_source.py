"""The step source of the phase views: "Steps from: vLLM annotations (auto)" in the Per phase panel, the
process selector when several processes annotate steps, which footnote explains the table and the
table tab's name ("Steps" for a framework's steps, "Dispatches" for the seed's). Its components live in the
Per phase panel's layout."""

from dashboard.app import ids
from dashboard.app.views.base import View
from dashboard.app.views.phases import STEP_PID_BOX
from dashboard.render.steps import process_options, step_view, steps_from_text

HIDDEN, SHOWN = {"display": "none"}, {}


def render(trace, state):
    """The step source line, the process options and the footnotes' visibility for ``state``."""
    sv = step_view(trace, state)
    options = process_options(sv)
    return {
        "text": steps_from_text(trace, state),
        "options": options,
        "box": SHOWN if options else HIDDEN,
        "steps_note": HIDDEN if sv is None else SHOWN,
        "dispatch_note": SHOWN if sv is None else HIDDEN,
        "tab": "Dispatches" if sv is None else "Steps",
    }


VIEW = View(
    name="step_source",
    fields=("prefix", "steps", "step_pid"),
    slot="none",
    outputs={
        "text": (ids.STEPS_FROM, "children"),
        "options": (ids.STEP_PID, "options"),
        "box": (STEP_PID_BOX, "style"),
        "steps_note": (ids.STEPS_NOTE, "style"),
        "dispatch_note": (ids.DISPATCH_NOTE, "style"),
        "tab": (ids.tab_id("dispatches"), "label"),
    },
    render=render,
    empty=lambda message: {"text": "", "options": [], "box": HIDDEN},
)
