"""The compare page (``/compare/?a=<id>&b=<id>``): a page of the main app, with the same TraceStore
and the same view-state codec (``prefix`` in its link is the dispatch prefix both runs are split
with); thin callbacks over ``analysis.compare`` and ``render_compare``."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import replace
from urllib.parse import parse_qs, urlencode

from dash import Dash, Input, Output, State, ctx, html, no_update

from dashboard.analysis.compare import compare_runs
from dashboard.app import compare_layout as cl
from dashboard.app.components import alert
from dashboard.app.store import TraceStore
from dashboard.app.trace_files import ids_of_file_name
from dashboard.errors import TraceError
from dashboard.figures.common import empty_figure
from dashboard.render.compare import compare_view, untraced_note
from dashboard.render.load_status import FRESH_S, after_load_kick, next_poll_limit, pair_status_line
from dashboard.state import DEFAULT, ViewState, from_query, to_query

log = logging.getLogger(__name__)
A_LABEL, B_LABEL = "A (baseline)", "B (candidate)"
COMPARE_PATH = "/compare/"


def parse_pair(search: str | None) -> tuple[str | None, str | None]:
    """``(a, b)`` trace ids from a ``?a=<id>&b=<id>`` query (None where absent; the first value wins)."""
    q = parse_qs((search or "").lstrip("?"), keep_blank_values=False)
    return (q.get("a") or [None])[0], (q.get("b") or [None])[0]


def pair_query(a: str | None, b: str | None) -> str:
    """The query string of a comparison, ``?a=<id>&b=<id>`` (ids percent-encoded)."""
    items = {k: v for k, v in (("a", a), ("b", b)) if v}
    return "?" + urlencode(items) if items else ""


def _kind(name: str) -> str:
    """A trace's input kind from its file name (nsys export, Kineto trace, summary or other JSON)."""
    n = name.lower()
    return next((k for k in (".sqlite", ".nsys-rep", ".json.gz", ".json") if n.endswith(k)), "")


def closest_candidate(ids: list[str], a: str) -> str:
    """The default candidate B for baseline ``a``: the other served trace of the same input kind whose
    file name shares the longest start with A's (``run_before.sqlite`` pairs with ``run_after.sqlite``);
    ties go to the first after A in ``ids`` (wrapping). ``a`` itself when it is the only trace."""
    others = [ids[(ids.index(a) + k) % len(ids)] for k in range(1, len(ids))]
    if not others:
        return a
    name_a = a.rsplit("@", 1)[0]

    def score(t: str) -> tuple[bool, int]:
        name = t.rsplit("@", 1)[0]
        return _kind(name) == _kind(name_a), len(os.path.commonprefix([name, name_a]))

    return max(others, key=score)  # max keeps the first of equal scores: the order after A


def _by_file_name(given: str | None, ids: list[str]) -> tuple[str | None, str | None]:
    """``(id, notice)``: the served trace a bare file name names, when exactly one has it; else as given."""
    if given is None or "@" in given:
        return given, None
    hits = ids_of_file_name(given, ids)
    if len(hits) != 1:
        return given, None
    return hits[0], f"the link names the file {given[:120]!r}: its trace is compared."


def choose_pair(
    ids: list[str], a: str | None, b: str | None, explain, store=None
) -> tuple[str | None, str | None, list[str]]:
    """Served ids for A and B with notices: an id whose file changed since the link was made opens that
    file as it is now (``store.same_name``, as the dashboard's links do); other unknown ids are replaced
    (A: the first trace; B: the closest candidate, ``closest_candidate``), and a missing B defaults to
    the closest candidate, with a notice saying it was picked, never silently."""
    notices = []
    # a bare file name (typed by hand, as the dashboard's links take it) names the one served trace of that name
    a, said_a = _by_file_name(a, ids)
    b, said_b = _by_file_name(b, ids)
    notices += [f"{role}: {said}" for role, said in (("Baseline", said_a), ("Candidate", said_b)) if said]
    renamed = {t: store.same_name(t) for t in (a, b) if t is not None and t not in ids} if store is not None else {}
    if a is not None and a not in ids:
        if renamed.get(a) in ids:
            if changed := store.explain_changed(a, renamed[a]):
                notices.append("Baseline: " + changed)
            a = renamed[a]
        else:
            notices.append("Baseline: " + explain(a))
            a = None
    replaced = b is not None and b not in ids
    if replaced and renamed.get(b) in ids:
        if changed := store.explain_changed(b, renamed[b]):
            notices.append("Candidate: " + changed)
        b, replaced = renamed[b], False
    elif replaced:
        notices.append("Candidate: " + explain(b))
        b = None
    if not ids:
        return None, None, notices
    a = a or ids[0]
    if b is None:
        b = closest_candidate(ids, a)
        if b != a:
            notices.append(
                ("Comparing instead with " if replaced else "No candidate B in the link: comparing with ")
                + f"{b.rsplit('@', 1)[0]}, the served trace closest to A by kind and name. "
                "Pick the candidate above."
            )
    return a, b, notices


def compare_steps(a, b, state: ViewState):
    """``(spec, steps, note)``: the step source of the link and both runs' serving steps for
    ``compare_runs`` when both hold them (a framework's annotations: phases aligned by what they say),
    else None (the dispatch marks, as before) with a note when only one run holds them."""
    from dashboard.data.analysis import analysis_of
    from dashboard.render.steps import step_spec

    spec = step_spec(state)
    sa, sb = (analysis_of(r).step_dispatches(spec) for r in (a, b))
    sa, sb = (x if x is not None and len(x.dispatches) else None for x in (sa, sb))
    if sa is not None and sb is not None:
        return spec, ((sa.dispatches, sa.phases), (sb.dispatches, sb.phases)), ""
    if sa is None and sb is None:
        return spec, None, ""
    has, lacks = ("A", "B") if sb is None else ("B", "A")
    label = analysis_of(a if sa is not None else b).steps(spec)[0].label
    return (
        spec,
        None,
        (
            f"Only {has} has steps from {label}; {lacks} has none, so the phases are compared from the "
            "dispatch marks of both runs."
        ),
    )


def compare_findings(a, b, prefix: str, threshold: float | None = None, steps=None) -> list[dict]:
    """Rows of the compare page's Findings tab: ``findings_report.diff_findings`` of the two runs (both
    with dispatch prefix ``prefix`` and phase threshold ``threshold``, None: each run's automatic split),
    as ``tracedash diff`` lists them."""
    from dashboard.render.findings import diff_findings, findings_for

    return diff_findings(
        findings_for(a, prefix=prefix, threshold=threshold, steps=steps),
        findings_for(b, prefix=prefix, threshold=threshold, steps=steps),
    )


def compare_layout(store: TraceStore, search: str, home: str) -> html.Div:
    """The compare page for the query ``search``; with the load status line when a run of the pair the page
    will show is not in memory (the page then polls the loads: ``register_compare_load_poll``)."""
    trace_ids = store.listed_ids()  # uploads appear only when the link names them (see update)
    a, b = parse_pair(search)
    a, b, _ = choose_pair(store.listed_ids([a, b]), a, b, store.explain_missing, store)
    line = pair_status_line(_pair_statuses(store, a, b), 0)[0]
    return cl.build_compare_layout(trace_ids, {t: store.label(t) for t in trace_ids}, home, search, line)


def _pair_statuses(store: TraceStore, a: str | None, b: str | None) -> list:
    """``(label, load status)`` of each run picked (a run picked as both once, as A)."""
    picked = [(A_LABEL, a)] + ([(B_LABEL, b)] if b != a else [])
    return [(label, store.load_status(t)) for label, t in picked if t]


def register_compare_load_poll(app: Dash, store: TraceStore) -> None:
    """The compare page's load poll: while a run of the pair the page waits for (``cl.PENDING``) loads, its stage,
    rows and seconds (``pair_status_line``); once both are in memory or one failed, off, and the page's callback
    is kicked (``cl.KICK``) to show them, or the error. A run this worker process neither holds nor loads is
    loaded here in the background, as the dashboard's poll does."""

    @app.callback(
        Output(cl.LOAD_STATUS, "children"),
        Output(cl.LOAD_STATUS, "hidden"),
        Output(cl.LOAD_POLL, "disabled"),
        Output(cl.LOAD_POLL, "max_intervals"),
        Output(cl.KICK, "data"),
        Input(cl.LOAD_POLL, "n_intervals"),
        State(cl.PENDING, "data"),
        prevent_initial_call=True,
    )
    def poll(n_intervals, pending):
        if not (isinstance(pending, list) and len(pending) == 2):  # the page's callback has not answered yet
            return no_update, no_update, no_update, next_poll_limit(n_intervals), no_update
        a, b = pending
        for t in (a, b):
            if isinstance(t, str) and store.load_status(t).state == "idle" and t in store.listed_ids([t]):
                store.load_in_background(t)
        line, more = pair_status_line(_pair_statuses(store, a, b), n_intervals or 0)
        kick = no_update if more else after_load_kick(time.time() * 1000)
        return line or "", line is None, not more, next_poll_limit(n_intervals), kick


def _waiting_for(store: TraceStore, a: str, b: str) -> list[str]:
    """The runs of the pair not in memory (each starts loading in the background), in A, B order."""
    missing = [t for t in dict.fromkeys((a, b)) if t and not store.is_loaded(t)]
    for t in missing:
        store.load_in_background(t)
    return missing


def _fresh_failure(store: TraceStore, a: str, b: str) -> str | None:
    """The error of a run whose load failed moments ago (``FRESH_S``): shown as it is, never loaded again at once."""
    for t in (a, b):
        status = store.load_status(t)
        if status.state == "failed" and status.age_s < FRESH_S:
            return status.error
    return None


def register_compare_callbacks(app: Dash, store: TraceStore, dispatch_prefix: str, home: str) -> None:
    """The one callback of the compare page: link <-> pickers (a link reopens the same pair), then the view."""
    outputs = [
        Output(cl.SEARCH, "data"),
        Output(cl.PICK_A, "value"),
        Output(cl.PICK_B, "value"),
        Output(cl.ALERTS, "children"),
        Output(cl.CARDS, "children"),
        Output(cl.GATE_NOTE, "children"),
        Output(cl.PHASE_TABLE, "rowData"),
        Output(cl.TYPE_TABLE, "rowData"),
        Output(cl.STEP_FIGURE, "figure"),
        Output(cl.CATEGORY_FIGURE, "figure"),
        Output(cl.KERNEL_FIGURE, "figure"),
        Output(cl.KERNEL_GRID, "rowData"),
        Output(cl.CATEGORY_GRID, "rowData"),
        Output(cl.NVTX_GRID, "rowData"),
        Output(cl.API_GRID, "rowData"),
        Output(cl.FINDINGS_GRID, "rowData"),
        Output(cl.OPEN_A, "href"),
        Output(cl.OPEN_B, "href"),
        Output(cl.PHASE_SECTION, "style"),
        # options with the values: a dropdown drops a value it has no option for (uploads are
        # listed only when the link names them)
        Output(cl.PICK_A, "options"),
        Output(cl.PICK_B, "options"),
        # the wait for a run not in memory: the pair the load poll watches (register_compare_load_poll), the line
        # and the poll's switch. Never the poll's input (n_intervals): the poll kicks this callback, a cycle.
        Output(cl.PENDING, "data"),
        Output(cl.CONTENT, "hidden"),
        Output(cl.LOAD_STATUS, "children", allow_duplicate=True),
        Output(cl.LOAD_STATUS, "hidden", allow_duplicate=True),
        Output(cl.LOAD_POLL, "disabled", allow_duplicate=True),
    ]
    done = [None, False, "", True, True]  # the pair is shown: no line, no poll

    @app.callback(
        *outputs,
        Input(cl.URL, "data"),
        Input(cl.PICK_A, "value"),
        Input(cl.PICK_B, "value"),
        Input(cl.SWAP, "n_clicks"),
        Input(cl.KICK, "data"),
        prevent_initial_call="initial_duplicate",  # it runs on page load; the poll writes the line too
    )
    def update(search, a, b, _swap, _kick):
        out = _update(search, a, b)
        return out if len(out) == len(outputs) else out + done  # a wait sets its own outputs

    def _update(search, a, b):
        trigger = ctx.triggered_id
        state = from_query(search)
        prefix = state.prefix if "prefix=" in (search or "") else dispatch_prefix
        if trigger in (None, cl.URL):
            a, b = parse_pair(search)
        elif trigger == cl.SWAP:
            a, b = b, a
        named = store.listed_ids([a, b])  # uploads count only when named, never as a default candidate
        a, b, notices = choose_pair(named, a, b, store.explain_missing, store)
        # the dashboard's settings this page applies (prefix, phase threshold), decoded by the same codec; a bad
        # value in the link is named, as on the dashboard (keys this page does not use are left alone)
        threshold = state.threshold
        notices = [
            w for w in state.warnings if w.startswith(("Ignored prefix=", "Ignored threshold=", "Ignored steps="))
        ] + notices
        options = [{"label": store.label(t), "value": t} for t in named]
        extra = {
            k: v
            for k, v in (
                ("prefix", prefix if prefix != DEFAULT.prefix else None),
                ("threshold", None if threshold is None else f"{threshold:g}"),
                ("steps", state.steps if state.steps != DEFAULT.steps else None),
            )
            if v is not None
        }
        query = pair_query(a, b) + (("&" if a or b else "?") + urlencode(extra) if extra else "")
        new_search = {"search": query, "replace": trigger in (None, cl.URL)}  # written only if it differs
        alerts = [alert(n, "info") for n in notices]
        links = [
            f"{home}?{to_query(ViewState(trace=t, prefix=prefix, threshold=threshold, steps=state.steps))}"
            if t
            else home
            for t in (a, b)
        ]
        shown, hidden = {}, {"display": "none"}
        blank = empty_figure("Pick two traces to compare.", height=200)
        empty = [[], "", [], [], blank, blank, blank, [], [], [], [], []]
        if a is None:
            return [
                new_search,
                a,
                b,
                alerts + [alert("No traces are served here.")],
                *empty,
                *links,
                hidden,
                options,
                options,
            ]
        if trigger != cl.KICK:  # a run not in memory yet: the page polls its load instead of holding a connection
            if _waiting_for(store, a, b):
                line = pair_status_line(_pair_statuses(store, a, b), 0)[0]
                wait = [[a, b], True, line or "", line is None, line is None]
                return [new_search, a, b, alerts, *[no_update] * len(empty), *links, no_update, options, options] + wait
        elif failure := _fresh_failure(store, a, b):
            return [new_search, a, b, alerts + [alert(failure)], *empty, *links, hidden, options, options]
        try:
            spec, steps, note = compare_steps(store.get(a), store.get(b), replace(state, prefix=prefix))
            if note:
                alerts.append(alert(note, "info"))
            c = compare_runs(store.get(a), store.get(b), dispatch_prefix=prefix, threshold=threshold, steps=steps)
        except TraceError as exc:
            return [new_search, a, b, alerts + [alert(str(exc))], *empty, *links, hidden, options, options]
        except Exception:  # never a traceback in the page; the server keeps serving
            log.exception("comparing %s with %s failed", a, b)
            return [
                new_search,
                a,
                b,
                alerts + [alert(f"Comparing {a} with {b} failed (internal error; see the server log).")],
                *empty,
                *links,
                hidden,
                options,
                options,
            ]
        if a == b:
            alerts.append(alert("A and B are the same trace: every delta is zero. Pick another candidate.", "info"))
        if note := untraced_note(c):
            alerts.append(alert(note, "info"))
        if c.phases.empty:
            alerts.append(
                alert(
                    f"Neither run has dispatch marks ({prefix}…): no per-phase comparison; "
                    "the gate compares kernel time instead.",
                    "info",
                )
            )
        v = compare_view(c, a_label=A_LABEL, b_label=B_LABEL)
        moved = compare_findings(store.get(a), store.get(b), prefix, threshold, spec if steps is not None else None)
        g = c.gate
        split = (
            []
            if c.phases.empty or c.threshold is None
            else [
                f" Phase split for both runs: prefill when tokens >= {c.threshold:.1f} ("
                + ("set in the link" if threshold is not None else "automatic")
                + ")."
            ]
        )
        note = html.Span(
            [
                html.B(f"Regression gate ({g.metric}): "),
                g.explanation,
                ". Positive = B slower; this is what ",
                html.Code("tracedash diff --fail-if-slower"),
                " checks.",
                *split,
            ]
        )
        return [
            new_search,
            a,
            b,
            alerts,
            cl.delta_cards(v.cards),
            note,
            v.phase_rows,
            v.type_rows,
            v.step_figure,
            v.category_figure,
            v.kernel_figure,
            v.kernel_rows,
            v.category_rows,
            v.nvtx_rows,
            v.api_rows,
            moved,
            *links,
            hidden if c.phases.empty else shown,
            options,
            options,
        ]
