"""Headless assembly of a two-run comparison: Comparison -> cards, grid records, figures, text.

Used by the compare page, ``tracedash diff`` and tests; imports no Dash.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from dashboard import units
from dashboard.analysis.compare import Comparison
from dashboard.figures.compare import build_delta_bars, build_step_time_overlay
from dashboard.figures.theme import DEFAULT_THEME, Theme

OVERVIEW_LABELS = {
    "gpu_activity_span_ns": "GPU activity span",
    "gpu_busy_union_ns": "GPU busy (union)",
    "gpu_idle_within_span_ns": "GPU idle in span",
    "kernel_count": "Kernels",
    "graph_node_kernel_count": "CUDA-graph kernels",
}


@dataclass(frozen=True)
class DeltaCard:
    """One overview card: label, A and B values, the change, and whether it is worse for B.

    ``tone`` is "worse", "better" or "same" (more time / idle = worse; more utilisation = better;
    counts are neutral: "same").
    """

    label: str
    a: str
    b: str
    change: str
    tone: str
    hint: str = ""


def _pct_text(p: float) -> str:
    """A signed change in percent: two decimals, or whole percent with separators from 100 % on (as the page's
    tables: "+6,867 %", where decimals add nothing)."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "n/a"
    return f"{p:+,.0f} %" if abs(p) >= 100 else f"{p:+.2f} %"


def untraced_sides(c: Comparison) -> tuple[str, ...]:
    """The sides ("a", "b") that did not trace CUDA: their kernel, category and CUDA API figures are unknown."""
    return tuple(side for side, traced in zip(("a", "b"), c.cuda_traced) if not traced)


def untraced_note(c: Comparison) -> str:
    """One line when a run did not trace CUDA (NVTX only): its kernel and CUDA API totals are missing, so
    the per-name deltas against it only say that; "" when both runs traced CUDA."""
    sides = [x for x, traced in zip(("A (baseline)", "B (candidate)"), c.cuda_traced) if not traced]
    if not sides:
        return ""
    return (
        f"{' and '.join(sides)} did not trace CUDA (NVTX only): kernel, category and CUDA API totals are "
        "missing there, not zero; their −100 % / 'gone' / 'new' rows below only say that."
    )


def gate_values(g) -> tuple[str, str]:
    """The gate's A and B times as text: n/a for a side at 0 ns when the gate could not be measured
    (nothing comparable in both runs), since that 0 was never measured."""
    unmeasured = g.delta_pct is None or (isinstance(g.delta_pct, float) and math.isnan(g.delta_pct))
    return tuple(units.NA if unmeasured and v == 0 else units.duration(v) for v in (g.a_ns, g.b_ns))


def delta_cards(c: Comparison) -> list[DeltaCard]:
    """Gate, overview and utilisation deltas as cards (times formatted, counts with separators)."""
    g = c.gate
    cards = [
        DeltaCard(
            "Regression gate",
            *gate_values(g),
            _pct_text(g.delta_pct),
            "worse" if g.delta_pct > 0 else "better" if g.delta_pct < 0 else "same",
            f"{g.metric}: {g.explanation}",
        )
    ]
    for r in c.overview.itertuples(index=False):
        is_time = r.metric.endswith("_ns")
        fmt = units.duration if is_time else (lambda v: f"{int(v):,}")
        if r.a is pd.NA or r.b is pd.NA:  # a run without GPU work (or CUDA tracing): unmeasured, not 0
            side = " and ".join(x for x, v in (("A", r.a), ("B", r.b)) if v is pd.NA)
            why = (
                "recorded no GPU work (no kernel, CUDA-graph or memcpy/memset rows)"
                if is_time
                else "did not trace CUDA (NVTX only)"
            )
            cards.append(
                DeltaCard(
                    OVERVIEW_LABELS.get(r.metric, r.metric),
                    units.NA if r.a is pd.NA else fmt(r.a),
                    units.NA if r.b is pd.NA else fmt(r.b),
                    units.NA,
                    "same",
                    f"{r.metric}; {side} {why}",
                )
            )
            continue
        tone = "same" if not is_time or r.delta == 0 else ("worse" if r.delta > 0 else "better")
        change = f"{'+' if r.delta > 0 else '-' if r.delta < 0 else '±'}{fmt(abs(r.delta))} ({_pct_text(r.delta_pct)})"
        cards.append(DeltaCard(OVERVIEW_LABELS.get(r.metric, r.metric), fmt(r.a), fmt(r.b), change, tone, r.metric))
    for label, (ua, ub), hint in (
        ("Utilisation (mean per GPU)", c.utilisation_pct, "each GPU's busy union over its own window, averaged"),
        ("Any GPU busy / span", c.any_gpu_utilisation_pct, "union over all GPUs / span"),
    ):
        d = None if ua is None or ub is None else ub - ua
        tone = "same" if d is None else "better" if d > 0.005 else "worse" if d < -0.005 else "same"
        cards.append(
            DeltaCard(label, units.pct(ua, 2), units.pct(ub, 2), units.pct(d, 2, signed=True, unit=" pp"), tone, hint)
        )
    return cards


def _row(rec: dict) -> dict:
    """A grid record: NaN -> None (blank cell), numpy scalars -> Python."""
    out = {}
    for k, v in rec.items():
        if v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            out[k] = None
        elif hasattr(v, "item"):
            out[k] = v.item()
        else:
            out[k] = v
    return out


def delta_rows(frame: pd.DataFrame, missing: tuple[str, ...] = ()) -> list[dict]:
    """Grid records of a delta frame (NAME_DELTA, PHASE_DELTA, DISPATCH_TYPE_DELTA), its order kept,
    with ``abs_delta_ns`` (|delta_total_ns|, when present) for sorting by size of change; a side's
    ``*_mean_ns`` is None where that side's count is 0. ``missing``: sides ("a", "b") whose figures were not
    recorded (a run that did not trace CUDA): their count, total and mean are None ("—"), never 0."""
    recs = [_row(r) for r in frame.to_dict("records")]
    for r in recs:
        if "delta_total_ns" in r:
            r["abs_delta_ns"] = abs(r["delta_total_ns"])
        for side in ("a", "b"):  # no call on a side: its mean is undefined ("—"), not a 0.00 µs kernel
            if r.get(f"{side}_count") == 0 and f"{side}_mean_ns" in r:
                r[f"{side}_mean_ns"] = None
        for side in missing:
            for field in ("count", "total_ns", "mean_ns"):
                if f"{side}_{field}" in r:
                    r[f"{side}_{field}"] = None
    return recs


@dataclass
class CompareView:
    """Everything the compare page shows."""

    cards: list[DeltaCard]
    step_figure: go.Figure
    kernel_figure: go.Figure
    category_figure: go.Figure
    phase_rows: list[dict]
    type_rows: list[dict]
    kernel_rows: list[dict]
    category_rows: list[dict]
    nvtx_rows: list[dict]
    api_rows: list[dict]


def compare_view(
    c: Comparison, *, a_label: str = "A", b_label: str = "B", top: int = 15, theme: Theme = DEFAULT_THEME
) -> CompareView:
    """Cards, figures and grid records of a Comparison (labels name the runs in figures)."""
    untraced = untraced_sides(c)
    return CompareView(
        cards=delta_cards(c),
        step_figure=build_step_time_overlay(
            c.a_dispatches, c.b_dispatches, a_label=a_label, b_label=b_label, theme=theme
        ),
        kernel_figure=build_delta_bars(
            c.kernels, what="kernel", top=top, a_label=a_label, b_label=b_label, theme=theme
        ),
        category_figure=build_delta_bars(
            c.categories, what="kernel category", top=top, a_label=a_label, b_label=b_label, theme=theme
        ),
        phase_rows=delta_rows(c.phases),
        type_rows=delta_rows(c.dispatch_types),
        kernel_rows=delta_rows(c.kernels, untraced),
        category_rows=delta_rows(c.categories, untraced),
        nvtx_rows=delta_rows(c.nvtx),
        api_rows=delta_rows(c.api, untraced),
    )


def _table(headers: list[str], rows: list[list[str]], left: int = 1) -> list[str]:
    """Fixed-width text table: the first ``left`` columns left-aligned, the rest right-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def _name(n: str, width: int = 60) -> str:
    return n if len(n) <= width else n[: width - 1] + "…"


def _delta_ns(v: float) -> str:
    return (
        "n/a"
        if v is None or (isinstance(v, float) and math.isnan(v))
        else (("+" if v > 0 else "-" if v < 0 else "±") + units.duration(abs(v)))
    )


def _name_section(title: str, frame: pd.DataFrame, top: int, missing: tuple[str, ...] = ()) -> list[str]:
    """A per-name table; ``missing``: sides ("a", "b") not recorded (no CUDA traced), their counts and totals n/a."""
    rows = []
    for r in frame.head(top).itertuples(index=False):
        pct = "new" if r.only_in == "b" else "gone" if r.only_in == "a" else _pct_text(r.delta_total_pct)
        a_na, b_na = "a" in missing, "b" in missing
        rows.append(
            [
                _name(str(r.name)),
                "n/a" if a_na else f"{r.a_count:,}",
                "n/a" if b_na else f"{r.b_count:,}",
                "n/a" if a_na else units.duration(r.a_total_ns),
                "n/a" if b_na else units.duration(r.b_total_ns),
                _delta_ns(r.delta_total_ns),
                pct,
                _delta_ns(r.delta_mean_ns),
                _pct_text(r.delta_mean_pct),
            ]
        )
    more = len(frame) - min(top, len(frame))
    return [
        f"{title} (by |change of total|{f', top {top} of {len(frame)}' if more else ''})",
        *_table(["name", "count A", "count B", "total A", "total B", "Δ total", "Δ %", "Δ mean", "Δ mean %"], rows),
        "",
    ]


def comparison_text(c: Comparison, top: int = 10) -> str:
    """A readable plain-text report of a Comparison (``tracedash diff`` without ``--json``)."""
    out = [f"A (baseline):  {c.a_file}", f"B (candidate): {c.b_file}", ""]
    if note := untraced_note(c):
        out += [note, ""]
    g = c.gate
    out += [
        f"Regression gate [{g.metric}]: {' -> '.join(gate_values(g))} ({_pct_text(g.delta_pct)}; positive = B slower)",
        f"  {g.explanation}",
        "",
    ]
    out += [
        "Overview",
        *_table(["metric", "A", "B", "change"], [[cd.label, cd.a, cd.b, cd.change] for cd in delta_cards(c)[1:]]),
        "",
    ]
    if len(c.phases):
        thr = "none (one token count)" if c.threshold is None else f"prefill when tokens >= {c.threshold:.1f}"
        rows = [
            [
                r.phase,
                f"{r.a_dispatches:,}",
                f"{r.b_dispatches:,}",
                _fmt_opt(r.a_mean_ns),
                _fmt_opt(r.b_mean_ns),
                _pct_text(r.delta_mean_pct),
                f"{r.paired_types}",
                _pct_text(r.matched_delta_pct),
            ]
            for r in c.phases.itertuples(index=False)
        ]
        out += [
            f"Per phase ({thr}; matched = B at A's token mix)",
            *_table(["phase", "steps A", "steps B", "mean A", "mean B", "Δ mean", "paired types", "Δ matched"], rows),
            "",
        ]
        rows = [
            [
                r.phase,
                "?" if r.tokens is pd.NA else f"{r.tokens}",
                f"{r.a_count:,}",
                f"{r.b_count:,}",
                _fmt_opt(r.a_mean_ns),
                _fmt_opt(r.b_mean_ns),
                _pct_text(r.delta_mean_pct),
            ]
            for r in c.dispatch_types.head(top * 2).itertuples(index=False)
        ]
        out += [
            "Dispatch types (phase, tokens)",
            *_table(["phase", "tokens", "steps A", "steps B", "mean A", "mean B", "Δ mean"], rows, left=2),
            "",
        ]
    else:
        out += ["Per phase: no dispatch marks in either run.", ""]
    untraced = untraced_sides(c)
    out += _name_section("Kernel categories", c.categories, top, untraced)
    out += _name_section("Kernels", c.kernels, top, untraced)
    out += _name_section("NVTX ranges (normalised names)", c.nvtx, top)
    out += _name_section("CUDA API calls (summed across threads)", c.api, top, untraced)
    return "\n".join(out).rstrip() + "\n"


def _fmt_opt(v: float) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else units.duration(v)
