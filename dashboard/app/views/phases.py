"""Per phase: step statistics of prefill and decode dispatches (whole trace or visible window)."""

from dash import dcc, html

from dashboard.app import ids
from dashboard.app.components import metric_table, phase_columns
from dashboard.app.views.base import STATS_WINDOW, View
from dashboard.render import dispatches_for, phase_table_rows, phase_view, scope_text
from dashboard.render.steps import step_phase_rows, step_scope_text, step_view

STEP_PID_BOX = "step-pid-box"
STEPS_NOTE = (
    "A step is one annotated range of the server's own (its [start, end)), of the process shown; graph "
    "captures are drawn in the Gantt but left out here. Requests and tokens: n/a when the annotations do "
    "not give them. Tokens/s = tokens ÷ total phase time; p50/p90/p99: linear percentiles of the step "
    "times. Kernels and GPU time attributed (by correlation): the kernels whose launch call starts inside "
    "the step, in its process, and the union of their intervals. Stats for the visible window: the steps "
    "wholly inside it."
)


def _step_render(trace, state, sv):
    rows = step_phase_rows(sv)
    columns = [{"headerName": "", "field": "metric"}] + [
        {"headerName": p, "field": p, "type": "rightAligned"} for p in sv.stats["phase"]
    ]
    empty = ""
    if not rows:
        empty = (
            "No whole step of this process in the visible window."
            if sv.window is not None and len(sv.all_steps)
            else "No serving steps (graph captures only)."
            if len(sv.all_steps)
            else f"No {sv.source.label if sv.source.rule is None else 'step matching the rule'} in this trace: "
            "choose another source in “Steps from”."
        )
    return {
        "table": metric_table(columns, rows),
        "hint": "seed preset only",
        "scope": step_scope_text(sv),
        "empty": empty,
        "grid_style": {} if rows else {"display": "none"},
    }


def render(trace, state):
    """The phases view's outputs for ``trace``, from the fields of ``state`` listed in ``VIEW``."""
    if (sv := step_view(trace, state)) is not None:
        return _step_render(trace, state, sv)
    pv = phase_view(trace, state)
    rows = phase_table_rows(pv.stats)
    hint = f"auto: {pv.auto_threshold:.1f}" if pv.auto_threshold is not None else "auto: no split"
    empty = ""
    if not rows:  # the window's fault only when the whole trace has dispatches
        outside = state.stats_window() is not None and not dispatches_for(trace, state.prefix).empty
        empty = (
            "No dispatch step overlaps the visible window."
            if outside
            else f"No dispatch marks named {state.prefix}… in this trace: set the dispatch marker prefix to your "
            "server's marks."
        )
    return {
        "table": metric_table(phase_columns(rows), rows),
        "hint": hint,
        "scope": scope_text(trace, state.stats_window()),
        "empty": empty,
        "grid_style": {} if rows else {"display": "none"},
    }


VIEW = View(
    name="phases",
    fields=("prefix", "threshold", "steps", "step_pid", "busy", STATS_WINDOW),
    slot="side",
    outputs={
        "table": (ids.PHASE_TABLE, "children"),
        "hint": (ids.THRESHOLD_HINT, "children"),
        "scope": (ids.scope("phases"), "children"),
        "empty": ("phases-empty", "children"),
        "grid_style": ("phases-grid", "style"),
    },
    render=render,
    empty=lambda message: {"table": [], "hint": "", "scope": "", "empty": ""},
    layout=lambda state: html.Div(
        className="panel",
        children=[
            html.H3("Per phase"),
            html.Div(id=ids.STEPS_FROM, className="scope"),
            html.Label(
                [
                    "Statistics of process",
                    dcc.Dropdown(
                        id=ids.STEP_PID,
                        options=[],
                        value=state.step_pid,
                        clearable=True,
                        placeholder="the first with steps",
                        className="steps-picker",
                    ),
                ],
                id=STEP_PID_BOX,
                className="process-picker",
                style={"display": "none"},
            ),
            html.Div(id=ids.scope("phases"), className="scope"),
            html.P(id="phases-empty", className="small"),
            # the footnote explains the table's figures: hidden with it when there is no step to show
            html.Div(
                id="phases-grid",
                children=[
                    html.Table(id=ids.PHASE_TABLE, className="metric-table"),
                    html.P(STEPS_NOTE, id=ids.STEPS_NOTE, className="small", style={"display": "none"}),
                    html.P(
                        id=ids.DISPATCH_NOTE,
                        className="small",
                        children="A step lasts from its dispatch mark to the next one (the last: to the end of GPU "
                        "activity, or "
                        "estimated when unknown). Tokens/s = tokens ÷ total phase time. Stats for the visible window: "
                        "a "
                        "step cut by its edges counts in dispatches, tokens and total time (its time inside the "
                        "window), not in the step times or tokens/s (n/a when no step of a phase is whole). GPU time "
                        "attributed (by correlation) counts the kernels whose launch call starts inside the step (for "
                        "the "
                        "visible window, inside its part of the step: a step cut by the window's left edge can read 0 "
                        "ns "
                        "while its kernels run); GPU busy within its dispatches is the GPU's busy time inside the "
                        "steps, "
                        "whichever call launched the work.",
                    ),
                ],
            ),
        ],
    ),
)
