"""Findings of a loaded trace as JSON (``tracedash.findings/1``), text, HTML, links and a diff of two runs.

The analysis is in ``analysis.findings``; this module only formats it. Links are dashboard queries
built with ``state.to_query`` from each finding's view (tab, window, sort).
"""

from __future__ import annotations

import html
import math
from dataclasses import replace

import numpy as np
import pandas as pd

from dashboard import units
from dashboard.analysis.findings import Finding
from dashboard.analysis.findings.nsys import COPIES_COUNTED
from dashboard.data.analysis import analysis_of
from dashboard.data.trace import LoadedTrace
from dashboard.state import SORT_ATTR, ViewState, to_query

SCHEMA = "tracedash.findings/1"
DIFF_SCHEMA = "tracedash.findings-diff/1"
CHANGE_PCT = 10.0  # a finding "changed" when its cost moved by more than this share (and 1 µs)


def findings_for(
    trace: LoadedTrace,
    *,
    rules=None,
    params=None,
    threshold: float | None = None,
    prefix: str | None = None,
    steps=None,
) -> list[Finding]:
    """``analysis.findings.evaluate`` on a loaded trace (its summary and event rows), with the dispatch
    prefix ``prefix`` (default: the one the trace was loaded with), on the trace's derived results. With
    every rule at its defaults the result is computed once per (trace, threshold, prefix) and shared
    (``TraceAnalysis.findings``: the panel, the compare page and ``report`` ask for the same findings);
    callers must not change it. ``steps``: the step source (``step_presets.StepSpec``): a framework's steps
    are then the serving rules' dispatches."""
    prefix = prefix or trace.dispatch_prefix
    return analysis_of(trace).findings(threshold, prefix, steps, rules=rules, params=params)


def link_for(finding: Finding, trace_id: str = "", prefix: str = "CG_DISPATCH", steps: str = "auto") -> str:
    """The dashboard query (``?...``) that opens the view showing ``finding``: its tab, window, the tab's
    sort, kernel filter and marked row, and the step source, through ``state.to_query`` (defaults omitted)."""
    v = finding.view
    state = ViewState(trace=trace_id, tab=v.tab, prefix=prefix or "CG_DISPATCH", kernel=v.kernel, steps=steps or "auto")
    if v.sort and v.tab in SORT_ATTR:
        state = replace(state, **{SORT_ATTR[v.tab]: v.sort})
    if v.t0_ns is not None and v.t1_ns is not None and v.t0_ns < v.t1_ns:
        state = replace(state, t0_ns=int(v.t0_ns), t1_ns=int(v.t1_ns))
        if v.mark is not None:
            state = replace(state, mark=(v.mark[0], int(v.mark[1]), int(v.mark[2])))
    return "?" + to_query(state)


def _cell(value):
    """A JSON value: ints stay ints, floats finite or None, numpy scalars unwrapped, NA -> None."""
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(float(value)) else None
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value if isinstance(value, (int, str)) else str(value)


def rows_of(frame: pd.DataFrame) -> list[dict]:
    """Evidence rows as JSON objects, columns in the frame's order."""
    cols = list(frame.columns)
    return [{c: _cell(v) for c, v in zip(cols, row)} for row in frame.itertuples(index=False, name=None)]


def is_duration_field(field: str) -> bool:
    """An evidence field in ns: ``*_ns`` or ``*_ns_per_*`` (``launch_ns_per_step``)."""
    return field.endswith("_ns") or "_ns_per_" in field


def evidence_header(field: str) -> str:
    """The column title of an evidence field: words, not snake_case; a duration drops its unit (the cells
    carry it), ``*_pct`` reads "%". The field name stays the CLI's ``--json`` key (and the grid's tooltip)."""
    if field.endswith("_ns"):
        field = field[:-3]
    elif "_ns_per_" in field:
        field = field.replace("_ns_per_", "_per_")
    elif field.endswith("_pct"):
        field = field[:-4] + " %"
    return " ".join(_ACRONYMS.get(w, w) for w in field.split("_"))


_ACRONYMS = {"nvtx": "NVTX", "api": "API", "gpu": "GPU", "cpu": "CPU", "cuda": "CUDA"}


def evidence_cell(field: str, value) -> str:
    """One evidence value as the report prints it: ``*_ns`` as a duration with its unit (``units.duration``),
    ``*_pct`` as a percentage, counts with thousands separators, a missing value as "—"."""
    from dashboard import units

    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, float, np.integer, np.floating)):
        if is_duration_field(field):
            return units.duration(value)
        if field.endswith("_pct"):
            return "—" if units.is_na(value) else units.pct(value)
        if isinstance(value, (int, np.integer)):
            return str(int(value)) if is_id_field(field) else f"{int(value):,}"
        return f"{float(value):,.2f}"
    return str(value)


def is_id_field(field: str) -> bool:
    """An identifier (pid, tid, device or context id, ...): printed as is, never with thousands separators."""
    return field in ("pid", "tid", "rank") or field.endswith("_id")


def evidence_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Evidence rows as text: ``evidence_header`` titles, ``evidence_cell`` values (same rows, same order)."""
    return pd.DataFrame(
        {evidence_header(c): [evidence_cell(c, v) for v in frame[c].tolist()] for c in frame.columns}, index=frame.index
    )


def evidence_html(frame: pd.DataFrame) -> str:
    """Evidence rows as an HTML table with ``evidence_header`` titles and ``evidence_cell`` values
    (every text escaped); "" for no rows."""
    if frame.empty:
        return ""
    cols = list(frame.columns)
    # numbers right-aligned under right-aligned titles, text left-aligned under left-aligned ones
    num = {
        c: " class='num'"
        if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
        else ""
        for c in cols
    }
    head = "".join(f"<th{num[c]}>{html.escape(evidence_header(c))}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td{num[c]}>{html.escape(evidence_cell(c, v))}</td>" for c, v in zip(cols, row)) + "</tr>"
        for row in frame.itertuples(index=False, name=None)
    )
    return f"<table class='findings-rows'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def quiet_rules(findings: list[Finding]) -> tuple[list[Finding], str]:
    """The rules that looked and found nothing, and what to say after their names: which of them counted
    memcpy/memset time as GPU work ("" when none), since their "nothing" can stand beside a low kernel-only
    utilisation."""
    quiet = [f for f in findings if f.cost_ns == 0 and f.evaluated]
    copies = [f.rule for f in quiet if COPIES_COUNTED in f.summary]
    return quiet, f" ({', '.join(copies)}: {COPIES_COUNTED})" if copies else ""


def quiet_line(findings: list[Finding]) -> str:
    """ "Nothing found by: …" (``quiet_rules``) as one line of text, "" when no rule was quiet."""
    quiet, said = quiet_rules(findings)
    return "Nothing found by: " + ", ".join(f.rule for f in quiet) + said if quiet else ""


def not_evaluated(findings: list[Finding]) -> dict[str, list[str]]:
    """The rules that could not look, grouped by the reason (their note), in ranking order."""
    out: dict[str, list[str]] = {}
    for f in findings:
        if not f.evaluated:
            out.setdefault(f.note, []).append(f.rule)
    return out


def finding_dict(f: Finding, trace_id: str = "", prefix: str = "CG_DISPATCH") -> dict:
    """One finding in the JSON form: rule, severity, cost_ns, summary, link, params, rows (fixed key order)."""
    out = {
        "rule": f.rule,
        "severity": f.severity,
        "cost_ns": int(f.cost_ns),
        "summary": f.summary,
        "link": link_for(f, trace_id, prefix),
        "params": {k: _cell(v) for k, v in f.params.items()},
        "rows": rows_of(f.rows),
    }
    if f.note:
        out["note"] = f.note
    if not f.evaluated:
        out["evaluated"] = False
    return out


def findings_json(trace: LoadedTrace, findings: list[Finding], trace_id: str = "") -> dict:
    """``{"schema": "tracedash.findings/1", "trace": NAME, "findings": [...]}``, ranked by cost."""
    return {
        "schema": SCHEMA,
        "trace": trace.name,
        "findings": [finding_dict(f, trace_id, trace.dispatch_prefix) for f in findings],
    }


def findings_text(trace: LoadedTrace, findings: list[Finding], trace_id: str = "", max_rows: int = 5) -> str:
    """Plain-text listing: one block per finding (severity, cost, sentence, link, first rows)."""
    out = [f"Findings for {trace.name} (ranked by the time they cost)", ""]
    for i, f in enumerate(findings, 1):
        cost = units.duration_short(f.cost_ns) if f.cost_ns else "no cost" if f.evaluated else "not evaluated"
        out.append(f"{i:2d}. [{f.severity}] {f.rule}: {cost}")
        out.append(f"    {f.summary}")
        if not f.rows.empty:
            out.append(f"    link: {link_for(f, trace_id, trace.dispatch_prefix)}")
            shown = evidence_frame(f.rows.head(max_rows)).to_string(index=False).splitlines()
            out.extend("      " + line for line in shown)
            if len(f.rows) > max_rows:
                out.append(f"      ... {len(f.rows) - max_rows:,} more rows (--json for all)")
        out.append("")
    return "\n".join(out)


def findings_html(trace: LoadedTrace, findings: list[Finding], trace_id: str = "", max_rows: int = 20) -> str:
    """An HTML section (no page wrapper) listing the findings first, for the offline report."""
    items = []
    for f in findings:
        if f.severity == "none":
            continue
        link = link_for(f, trace_id, trace.dispatch_prefix)
        table = evidence_html(f.rows.head(max_rows))
        items.append(
            f"<li><b>[{html.escape(f.severity)}] {html.escape(f.rule)}</b> · "
            f"{html.escape(units.duration_short(f.cost_ns))}"
            f"<br>{html.escape(f.summary)}<br><span class='small'>view: <code>{html.escape(link)}</code>"
            f"</span>{table}</li>"
        )
    tail = f"<p class='small'>{html.escape(quiet)}.</p>" if (quiet := quiet_line(findings)) else ""
    tail += "".join(
        f"<p class='small'>Not evaluated ({html.escape(note)}): {html.escape(', '.join(rules))}.</p>"
        for note, rules in not_evaluated(findings).items()
    )
    body = f"<ol>{''.join(items)}</ol>" if items else "<p>No finding with a cost.</p>"
    return f"<h2>Findings (what to fix first)</h2>{body}{tail}"


def diff_findings(a: list[Finding], b: list[Finding]) -> list[dict]:
    """Findings that appear, disappear or change cost from run A to run B.

    A finding is present when its cost is above 0. ``change``: "appeared" (0 in A), "disappeared"
    (0 in B), "changed" (both present, cost moved by more than CHANGE_PCT % and 1 µs), else "same";
    "not evaluated in A" / "in B" / "not evaluated" when a run lacks the rows the rule reads (e.g. a
    CPU-only run): that run's cost and the delta are then None and its severity "not evaluated", never a 0
    and "none" that read as "gone".

    Returns:
        One dict per rule in either run, ordered by |delta| descending (rules not evaluated in a run
        last) then rule: rule, change, a_cost_ns, b_cost_ns, delta_ns, a_severity, b_severity, b_summary.
    """
    fa, fb = {f.rule: f for f in a}, {f.rule: f for f in b}
    out = []
    for rule in dict.fromkeys([*fa, *fb]):
        ca = fa[rule].cost_ns if rule in fa else 0
        cb = fb[rule].cost_ns if rule in fb else 0
        na = rule in fa and not fa[rule].evaluated
        nb = rule in fb and not fb[rule].evaluated
        if na or nb:
            change = "not evaluated" if na and nb else "not evaluated in A" if na else "not evaluated in B"
        elif ca <= 0 and cb <= 0:
            change = "same"
        elif ca <= 0:
            change = "appeared"
        elif cb <= 0:
            change = "disappeared"
        elif abs(cb - ca) > max(CHANGE_PCT / 100 * ca, 1000):
            change = "changed"
        else:
            change = "same"
        out.append(
            {
                "rule": rule,
                "change": change,
                "a_cost_ns": None if na else int(ca),
                "b_cost_ns": None if nb else int(cb),
                "delta_ns": None if na or nb else int(cb - ca),
                "a_severity": "not evaluated" if na else fa[rule].severity if rule in fa else "none",
                "b_severity": "not evaluated" if nb else fb[rule].severity if rule in fb else "none",
                "b_summary": fb[rule].summary if rule in fb else "",
            }
        )
    return sorted(out, key=lambda d: (d["delta_ns"] is None, -abs(d["delta_ns"] or 0), d["rule"]))


def diff_text(rows: list[dict]) -> str:
    """Text lines for ``diff_findings`` rows that are not "same" (nor "not evaluated" in both runs)."""
    moved = [r for r in rows if r["change"] not in ("same", "not evaluated")]
    if not moved:
        return "Findings: no finding appears, disappears or changes cost.\n"
    lines = ["Findings (A -> B):"]
    for r in moved:
        if r["delta_ns"] is None:
            lines.append(f"  {r['change']:11s} {r['rule']}")
            continue
        sign = "+" if r["delta_ns"] >= 0 else "-"
        lines.append(
            f"  {r['change']:11s} {r['rule']:18s} {units.duration_short(r['a_cost_ns']):>10s} -> "
            f"{units.duration_short(r['b_cost_ns']):>10s} ({sign}{units.duration_short(abs(r['delta_ns']))})"
        )
    return "\n".join(lines) + "\n"
