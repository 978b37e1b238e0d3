"""Findings panel, above the overview: what to fix first, ranked by cost, each with its evidence rows
(sortable) and a link that opens the view showing it (tab, window, sort, marked row). Definitions:
docs/findings.md; the analysis is ``analysis.findings`` through ``render.findings``."""

from __future__ import annotations

import dash_ag_grid as dag
from dash import MATCH, ClientsideFunction, Input, Output, State, dcc, html

from dashboard import units
from dashboard.app import ids
from dashboard.app.components import _INT, _PCT, _fmt
from dashboard.app.views.base import LAST, View
from dashboard.render.findings import (
    evidence_header,
    findings_for,
    is_duration_field,
    is_id_field,
    link_for,
    not_evaluated,
    quiet_rules,
    rows_of,
)
from dashboard.render.steps import step_spec

PANEL = "findings-panel"
FINDING = "finding"  # pattern-matching ids {"type": FINDING | EVIDENCE | EVIDENCE_GRID, "index": i}
EVIDENCE = "finding-evidence"  # where the evidence grid is mounted when the finding is first opened
EVIDENCE_GRID = "finding-evidence-grid"  # the evidence grid, as data, until then
MAX_ROWS = 200  # evidence rows shown per finding (the CLI's --json has all)


# A duration in the unit that reads best, with the unit in the cell (evidence columns span ns to seconds).
_DURATION = _fmt(
    "params.value >= 1e9 ? d3.format(',.3f')(params.value / 1e9) + ' s' : params.value >= 1e6 ? "
    "d3.format(',.3f')(params.value / 1e6) + ' ms' : params.value >= 1e3 ? "
    "d3.format(',.2f')(params.value / 1e3) + ' µs' : d3.format(',')(params.value) + ' ns'"
)


def _column(field: str, sample) -> dict:
    """Evidence column: ``*_ns`` shown as a duration with its unit, ``*_pct`` as a percentage, counts
    with thousands separators; the raw value stays the sort key (and the CLI's --json field name)."""
    col = {
        "field": field,
        "headerName": evidence_header(field),
        "headerTooltip": field,
        "sortable": True,
        "resizable": True,
    }
    if sample is None:  # no row has a value (e.g. a per-step figure without steps): "—", never a blank cell
        return {**col, "valueFormatter": _fmt("params.value")}
    if isinstance(sample, bool) or not isinstance(sample, (int, float)):
        return col
    col["type"] = "numericColumn"
    if is_duration_field(field):
        return {**col, "valueFormatter": _DURATION}
    if field.endswith("_pct"):
        return {**col, "valueFormatter": _PCT}
    return {**col, "valueFormatter": _INT} if isinstance(sample, int) and not is_id_field(field) else col


def _grid(i: int, rows: list[dict]) -> dag.AgGrid:
    cols = list(rows[0]) if rows else []
    return dag.AgGrid(
        id=f"{PANEL}-rows-{i}",
        rowData=rows,
        # each column's kind from its first value (a row without one, e.g. a share over 0, is null there)
        columnDefs=[_column(c, next((r[c] for r in rows if r[c] is not None), None)) for c in cols],
        defaultColDef={"sortable": True, "resizable": True, "filter": False},
        dashGridOptions={"enableCellTextSelection": True, "animateRows": False},
        columnSize="autoSize",
        style={"height": f"{min(340, 100 + 44 * max(len(rows), 1))}px", "width": "100%"},
    )


def render(trace, state):
    """The ranked findings of the whole trace for the state's dispatch prefix and phase threshold."""
    found = findings_for(trace, threshold=state.threshold, prefix=state.prefix, steps=step_spec(state))
    items = []
    for i, f in enumerate(x for x in found if x.cost_ns > 0):
        link = link_for(f, state.trace, state.prefix, state.steps)
        rows = rows_of(f.rows.head(MAX_ROWS))
        more = f" (first {MAX_ROWS} of {len(f.rows):,})" if len(f.rows) > MAX_ROWS else ""
        items.append(
            html.Details(
                className=f"finding sev-{f.severity}",
                children=[
                    html.Summary(
                        children=[
                            html.Span(f.severity, className=f"badge sev-{f.severity}"),
                            " ",
                            html.B(f.rule),
                            html.Span(f" · {units.duration_short(f.cost_ns)} · ", className="cost"),
                            html.Span(f.summary, className="sentence"),
                            " ",
                            html.A(
                                "open view →",
                                href=link,
                                className="finding-link",
                                id=f"{PANEL}-link-{f.rule}",
                                title=link,
                            ),
                        ]
                    ),
                    html.Div(f"Evidence: {units.count(len(f.rows), 'row')}{more}", className="hint"),
                    # A grid is costly to build in the browser: it is mounted when the finding is first opened.
                    html.Div(id={"type": EVIDENCE, "index": i}),
                    dcc.Store(id={"type": EVIDENCE_GRID, "index": i}, data=_grid(i, rows).to_plotly_json()),
                ],
                id={"type": FINDING, "index": i},
            )
        )
    estimated = [f.rule for f in found if f.cost_ns > 0 and f.note]
    footer = []
    quiet, said = quiet_rules(found)
    if quiet:  # each name shows its rule's own sentence on hover ("No GPU idle gaps over 500 ms; …")
        names = [part for k, f in enumerate(quiet) for part in ([", "] if k else []) + [_quiet_name(f)]]
        footer.append(html.Div(["Nothing found by: ", *names, said], className="hint"))
    footer.extend(
        html.Div(f"Not evaluated ({note}): " + ", ".join(rules), className="hint")
        for note, rules in not_evaluated(found).items()
    )
    if estimated:
        footer.append(
            html.Div(
                "From the summary's totals (per-step numbers need event rows): " + ", ".join(estimated),
                className="hint",
            )
        )
    if not items:
        items = [html.Div("No finding with a cost in this trace.", className="hint")]
    return {"children": [*items, *footer]}


def _quiet_name(f) -> html.Span:
    return html.Span(f.rule, title=f.summary, className="quiet-rule")


# Findings always rank the whole trace: the scope line is fixed, and a "Stats for" switch re-renders nothing here.
SCOPE = "Stats for: whole trace (findings rank the whole trace, also when the panels below show the visible window)"


VIEW = View(
    name="findings",
    priority=LAST,
    fields=("prefix", "threshold", "steps"),
    slot="cards",
    outputs={"children": (PANEL + "-list", "children")},
    render=render,
    empty=lambda message: {"children": []},
    client=lambda app: app.clientside_callback(
        ClientsideFunction(namespace="tracedash", function_name="mountOnOpen"),
        Output({"type": EVIDENCE, "index": MATCH}, "children"),
        Input({"type": FINDING, "index": MATCH}, "n_clicks"),
        State({"type": EVIDENCE_GRID, "index": MATCH}, "data"),
        State({"type": EVIDENCE, "index": MATCH}, "children"),
        prevent_initial_call=True,
    ),
    layout=lambda state: html.Section(
        id=PANEL,
        className="panel findings",
        children=[
            html.H3("Findings — what to fix first", className="panel-title"),
            html.Div(SCOPE, id=ids.scope("findings"), className="scope"),
            html.Div(
                "Ranked by the time they cost; each opens the view that shows it (docs/findings.md).", className="hint"
            ),
            dcc.Loading(type="dot", delay_show=300, children=html.Div(id=PANEL + "-list")),
        ],
    ),
)
