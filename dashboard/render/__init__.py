"""Headless view assembly: (LoadedTrace, state) -> analysis -> figures and table records.

Used by the Dash views (dashboard/app/views), ``tracedash export`` / ``report``, scripts and tests;
imports no Dash. Per-trace derived analyses (busy unions, dispatches, phase split and attribution,
window clips) are computed once per trace and the fields they depend on, and kept with the trace
(``memo``): they die when the trace leaves the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard import units
from dashboard.analysis import phases as ph
from dashboard.analysis.attribution import (
    UNATTRIBUTED,
    dispatch_metrics,
    phase_category_time,
    phase_gpu_time,
)
from dashboard.analysis.ranks import RANKS_FORMAT, RANKS_NOTICE
from dashboard.analysis.timeline import any_device_union
from dashboard.analysis.window import clip_dispatches, overlapping
from dashboard.data.analysis import analysis_of, memo
from dashboard.data.trace import LoadedTrace
from dashboard.figures.common import WIDE_CAPTION_WRAP_CHARS, add_caption, escape_text
from dashboard.figures.gantt import build_dispatch_gantt
from dashboard.figures.notes import add_note_flags
from dashboard.figures.phases import build_phase_analysis
from dashboard.figures.theme import DEFAULT_THEME, Theme
from dashboard.model import device_label

# The render API: every view's assembly, from the modules of this package.
from dashboard.render.base import (  # noqa: F401
    ALL_LANES,
    API_BUDGET,
    DISPATCH_ROW_LIMIT,
    GANTT_BUDGET,
    GAP_CAUSE_LIMIT,
    GPU_BUDGET,
    KERNEL_BUDGET,
    MARK_TICK_BUDGET,
    MEMOP_BUDGET,
    NOT_TRACED,
    NVTX_BUDGET,
    UNDEFINED,
    Card,
    PhaseView,
    _records,
    activity_extent,
    dispatches_for,
    figure_filename,
    launches_of,
    near_window,
    not_traced,
    records,
    scope_text,
    time_extent,
    view_caption,
    windowed,
    work_for,
)
from dashboard.render.cards import GPU_METRICS, gpu_cards, gpu_columns_key, gpu_rows, overview_cards, rank_cards  # noqa: F401
from dashboard.render.tables import (  # noqa: F401
    UNMEASURED_OVERLAP,
    api_rows,
    device_ids,
    effective_group,
    idle_view,
    kernel_rows,
    nvtx_rows,
)
from dashboard.render.timeline import (  # noqa: F401
    _launch_calls,
    kernel_launch,
    mark_target,
    timeline_figure,
    timeline_spec,
    timeline_view,
    timeline_view_spec,
    window_from_relayout,
    zoomed_timeline,
)
from dashboard.state import ViewState


@dataclass
class DashboardView:
    """Everything one trace view shows, ready for the app (figures and plain-record tables)."""

    cards: list[Card]
    gantt: go.Figure
    timeline: go.Figure
    phase_rows: list[dict]
    gpu_rows: list[dict]
    phase_figure: go.Figure
    dispatch_rows: list[dict]
    filenames: dict[str, str]
    gpu_columns: list[tuple[str, str]]
    kernel_rows: list[dict]
    api_rows: list[dict]
    auto_threshold: float | None
    notices: list[str] = field(default_factory=list)
    api_family_rows: list[dict] = field(default_factory=list)  # the API table grouped by family
    devices: list[int] = field(default_factory=list)
    device_labels: dict[int, str] = field(default_factory=dict)  # "GPU 0", or "rank 1 · GPU 0" when merged


def phase_view(trace: LoadedTrace, state: ViewState) -> PhaseView:
    """Dispatches, their phases and per-phase statistics for the chosen prefix and threshold.

    The automatic threshold is always that of the whole trace (a window never changes a dispatch's
    phase). With ``state.stats_window()`` the dispatch steps and the attributed kernels are those
    of the window, clipped at its edges (``analysis.window``). Memoised per (prefix, threshold,
    stats window, busy source: GPU busy within the dispatches follows it).
    """
    key = ("phase_view", state.prefix, state.threshold, state.stats_window(), state.busy)
    return memo(trace, key, lambda: _phase_view(trace, state))


def _phase_view(trace: LoadedTrace, state: ViewState) -> PhaseView:
    d = dispatches_for(trace, state.prefix)
    auto = ph.default_threshold(d["tokens"]) if not d.empty else None
    threshold = state.threshold if state.threshold is not None else auto
    phases = ph.assign_phases(d, threshold)
    w = state.stats_window() if trace.bundle is not None else None
    whole = None
    if w is not None:
        keep = overlapping(d, *w)
        inside = d[keep]
        whole = ((inside["start_ns"] >= w[0]) & (inside["end_ns"] <= w[1])).to_numpy()  # steps the window does not cut
        d = clip_dispatches(d, *w).reset_index(drop=True)
        phases = phases[keep].reset_index(drop=True)
    stats = ph.phase_stats(d, phases, whole)
    b = windowed(trace, w).bundle
    if b is None or b.kernels.empty or d.empty:
        return PhaseView(d, phases, stats, auto, threshold, whole=whole)
    attribution, metrics, categories = attributed(trace, state.prefix, w, d)
    busy = any_device_union(analysis_of(trace).window(w).busy_unions(state.busy))
    stats = stats.merge(phase_gpu_time(d, phases, metrics, busy), on="phase", how="left")
    stats["unattributed_kernels"] = int((attribution == UNATTRIBUTED).sum())
    category_time = phase_category_time(
        b.kernels, attribution, pd.Series(phases.to_numpy(), index=d["index"]), categories
    )
    return PhaseView(d, phases, stats, auto, threshold, metrics, category_time, whole)


def attributed(trace: LoadedTrace, prefix: str, window: tuple[int, int] | None, dispatches: pd.DataFrame):
    """``(attribution, dispatch metrics, kernel categories)`` of the (window's) kernels for the
    dispatches of ``prefix`` (``dispatches``: those steps, cut to the window): they do not depend on
    the phase threshold, so a threshold change only re-splits the phases."""
    ta = analysis_of(trace).window(window)
    attribution = ta.attribution(prefix, dispatches)
    metrics = ta.memo.get(
        ("dispatch_metrics", prefix), lambda: dispatch_metrics(dispatches, ta.bundle.kernels, attribution)
    )
    return attribution, metrics, ta.categories()


def kernel_categories(trace: LoadedTrace, window: tuple[int, int] | None = None) -> pd.Series:
    """Category of every kernel row of the (window's) trace (``categorize_kernels``)."""
    return analysis_of(trace).window(window).categories()


PHASE_METRICS = (  # (label, stats column, format)
    ("Dispatches", "dispatches", lambda v: f"{int(v):,}"),
    ("Tokens", "tokens", lambda v: f"{int(v):,}"),
    ("Total time", "total_ns", units.duration),
    ("Mean step", "mean_ns", units.duration),
    ("p50 step", "p50_ns", units.duration),
    ("p90 step", "p90_ns", units.duration),
    ("p99 step", "p99_ns", units.duration),
    ("Tokens / s", "tokens_per_s", lambda v: f"{v:,.0f}"),
)


ALWAYS_SHOWN_PHASES = ("prefill", "decode")  # columns of the Per phase table even without such a step


def phase_table_rows(stats: pd.DataFrame) -> list[dict]:
    """Per-phase statistics transposed for display: one row per metric, one column per phase.

    Returns:
        ``[{"metric": "Dispatches", "prefill": "42", "decode": "96"}, ...]`` with values as
        display strings (durations in the most readable unit); empty when there are no phases. A phase of
        ``ALWAYS_SHOWN_PHASES`` without steps has "0" dispatches and tokens and "—" elsewhere.
    """
    if stats.empty:
        return []
    rows = stats.to_dict("records")
    metrics = list(PHASE_METRICS)
    if "gpu_attributed_ns" in stats.columns:  # ns: attributed work can run after the phase's own windows
        metrics.append(("GPU time attributed (by correlation)", "gpu_attributed_ns", units.duration))
        metrics.append(("… per dispatch", "gpu_attributed_per_dispatch_ns", units.duration))
        metrics.append(("GPU busy within its dispatches", "gpu_busy_in_window_pct", units.pct))
    # A phase the table always shows (prefill, decode) with no step here, e.g. a window of decode steps only: its
    # counts are a true 0 and every other figure is undefined ("—"), never a blank cell.
    absent = [p for p in ALWAYS_SHOWN_PHASES if p not in set(stats["phase"])]
    # every value that can be missing here is a ratio over zero (tokens/s, busy %): "n/a", never a made-up 0
    return [
        {
            "metric": label,
            **{r["phase"]: units.NA if units.is_na(r.get(col)) else fmt(r[col]) for r in rows},
            **{p: "0" if col in ("dispatches", "tokens") else UNDEFINED for p in absent},
        }
        for label, col, fmt in metrics
    ]


CUT_NOTE = (
    "cut by the window's edges: its step here is the part inside the window; kernels, GPU busy and "
    "launch lead are not measured on a part (Stats for: whole trace shows them)"
)


def dispatch_table_rows(pv: PhaseView) -> list[dict]:
    """One record per dispatch for the dispatch table (numbers raw, ns; NA as None).

    Columns: index, phase, tokens, mode, padded, start_ns, duration_ns, end_estimated, and with
    attributed kernels: kernels, gpu_busy_ns, launch_lead_ns, ns_per_token. A dispatch cut by the
    stats window's edges (``pv.whole``) keeps its step inside the window as ``duration_ns`` but has no
    kernels, GPU busy, launch lead or time per token (None: its launch calls or kernels outside the
    window are not counted, so a part would read as the whole, e.g. "0 kernels" for a step whose
    launches precede the window); its ``note`` (``CUT_NOTE``) says why.
    """
    d = pv.dispatches
    if d.empty:
        return []
    out = pd.DataFrame(
        {
            "index": d["index"],
            "phase": pv.phases.to_numpy(),
            "tokens": d["tokens"],
            "mode": d["mode"],
            "padded": d["padded"],
            "start_ns": d["start_ns"],
            "end_ns": d["end_ns"],
            "duration_ns": d["duration_ns"],
            "end_estimated": d["end_estimated"],
            "row_id": d["index"].astype(str),
        }
    )
    if pv.metrics is not None:
        m = pv.metrics
        out["kernels"] = m["kernels"].to_numpy()
        out["gpu_busy_ns"] = m["gpu_busy_ns"].to_numpy()
        out["launch_lead_ns"] = m["launch_lead_ns"].to_numpy()
    tokens = d["tokens"].astype("Float64")
    out["ns_per_token"] = (d["duration_ns"] / tokens.where(tokens > 0)).astype("Float64")
    if pv.whole is not None and not pv.whole.all():
        cut = ~pv.whole
        for col in ("kernels", "gpu_busy_ns", "launch_lead_ns", "ns_per_token"):
            if col in out:
                out[col] = out[col].astype("Float64" if col == "ns_per_token" else "Int64").mask(cut)
        out["note"] = pd.Series([CUT_NOTE if c else None for c in cut], index=out.index, dtype=object)
    if len(out) > DISPATCH_ROW_LIMIT:  # the browser grid gets the longest steps, the ones worth reading
        out = out.iloc[np.sort(np.argsort(-out["duration_ns"].to_numpy(), kind="stable")[:DISPATCH_ROW_LIMIT])]
    return _records(out)


def gantt_view(trace: LoadedTrace, state: ViewState, theme: Theme = DEFAULT_THEME) -> tuple[go.Figure, str]:
    """The dispatch Gantt on the timeline's x axis (at ``state.window()``), captioned from that
    window; and its download file name. Steps from a framework's annotations: the step Gantt
    (``render.steps.step_gantt``)."""
    from dashboard.render import steps as rs

    if (sv := rs.step_view(trace, replace(state, stats="trace"))) is not None:
        x_range = state.window() or time_extent(trace, sv.all_steps)
        gantt = rs.step_gantt(trace, state, sv, x_range, theme)
        if state.mark and state.mark[0] == "dispatch":
            mark_target(gantt, state.mark)
        add_note_flags(gantt, state.notes, x_range)
        return (
            add_caption(gantt, view_caption(trace, state, state.window()), wrap=WIDE_CAPTION_WRAP_CHARS),
            figure_filename(trace, "gantt", state.window()),
        )
    pv = phase_view(trace, replace(state, stats="trace"))
    x_range = state.window() or time_extent(trace, pv.dispatches)
    title = f"Dispatches · {escape_text(trace.name)}"  # Plotly titles are HTML: a file name is text
    if pv.threshold is not None:
        how = "automatic" if state.threshold is None else "set by you"
        title += f" · prefill when tokens ≥ {pv.threshold:.1f} ({how})"
    gd, gp = pv.dispatches, pv.phases
    totals = gp.value_counts().to_dict()  # the legend counts the whole trace's dispatches, whatever is drawn
    in_view = None
    if state.window() is not None:  # the legend counts what the window shows, next to the whole trace's count
        lo, hi = state.window()
        overlaps = ((gd["start_ns"] < hi) & (gd["start_ns"] + gd["duration_ns"] > lo)).to_numpy()
        in_view = gp[overlaps].value_counts().to_dict()
        near = near_window(gd["start_ns"], gd["start_ns"] + gd["duration_ns"], (lo, hi))
        if near.any() and not near.all():  # a zoom redraws the Gantt: only what it can show, and a pan's worth
            gd, gp = gd[near], gp[near]
    if len(gd) > GANTT_BUDGET:  # too many bars to draw: one bar per run of same-phase dispatches
        gd, gp = ph.phase_runs(gd, gp)
        title += f" · {len(pv.dispatches):,} dispatches drawn as {len(gd):,} same-phase runs"
    if len(gd) > GANTT_BUDGET:
        keep = np.sort(np.argsort(-gd["duration_ns"].to_numpy(), kind="stable")[:GANTT_BUDGET])
        gd, gp = gd.iloc[keep], gp.iloc[keep]
        title += f" (the {GANTT_BUDGET:,} longest; zoom the timeline for the rest)"
    gantt = build_dispatch_gantt(
        gd,
        gp.reset_index(drop=True).set_axis(gd.index),
        x_range_ns=x_range,
        title=title,
        prefix=state.prefix,
        uirevision=f"{trace.name}|timeline",
        in_view=in_view,
        totals=totals,
        theme=theme,
    )
    if state.mark and state.mark[0] == "dispatch":
        mark_target(gantt, state.mark)
    add_note_flags(gantt, state.notes, x_range)
    return (
        add_caption(gantt, view_caption(trace, state, state.window(), pv), wrap=WIDE_CAPTION_WRAP_CHARS),
        figure_filename(trace, "gantt", state.window()),
    )


def phase_figure_view(trace: LoadedTrace, state: ViewState, theme: Theme = DEFAULT_THEME) -> tuple[go.Figure, str]:
    """Step times and kernel time by category per phase, on ``state.stats_window()`` (None: the
    whole trace), captioned with that window and the number of dispatches it holds; and its file name.
    Steps from a framework's annotations: those of the process shown (``render.steps``)."""
    from dashboard.render import steps as rs

    w = state.stats_window() if trace.bundle is not None else None
    if (sv := rs.step_view(trace, state)) is not None:
        holds = units.count(len(sv.steps), "step") + (f" of pid {sv.pid}" if len(sv.processes) > 1 else "")
        return (
            rs.step_phase_figure(trace, state, sv, view_caption(trace, state, w, holds=holds), theme),
            figure_filename(trace, "phases", w),
        )
    pv = phase_view(trace, state)
    steps, step_phases = pv.whole_steps()  # a step cut by the window's edges is not a step time
    n, cut = len(pv.dispatches), len(pv.dispatches) - len(steps)
    empty_text = (
        f"No whole dispatch step in this window: its {units.count(n, 'dispatch', 'dispatches')} "
        f"{'is' if n == 1 else 'are'} cut by its edges, so no step time can be measured."
        if n
        else "No dispatches: nothing to split into phases."
    )
    fig = build_phase_analysis(steps, step_phases, pv.category_time, theme=theme, empty_text=empty_text)
    holds = (
        units.count(n, "dispatch", "dispatches") + (f" ({cut} cut by its edges: not in the step times)" if cut else "")
        if n
        else ""
    )
    return (
        add_caption(fig, view_caption(trace, state, w, pv, holds=holds), wrap=WIDE_CAPTION_WRAP_CHARS),
        figure_filename(trace, "phases", w),
    )


def view_notices(trace: LoadedTrace) -> list[str]:
    """Page-level notices for a trace (merged ranks; a trace without kernels)."""
    notices = [RANKS_NOTICE] if trace.meta.format == RANKS_FORMAT else []
    if trace.bundle is not None and trace.summary.kernel_count == 0:
        notices.append(no_kernels_notice(trace.bundle))
    return notices


def no_kernels_notice(bundle) -> str:
    """The notice for a trace without CUDA kernels, naming what it does hold (NVTX, CUDA API calls,
    memcpy/memset, another accelerator's events it does not analyse) or saying it holds no events at all."""
    b = bundle
    held = [
        what
        for what, n in (
            ("NVTX ranges", len(b.nvtx_ranges)),
            ("NVTX marks", len(b.nvtx_marks)),
            ("CUDA API calls", len(b.api_calls)),
            ("memcpy/memset", len(b.memops)),
        )
        if n
    ]
    dropped = sum(a.read for a in b.meta.accounts if a.kind == "kernels")
    if dropped:  # kernel rows were read, none could be used
        return (
            f"This trace's {units.count(dropped, 'kernel row')} could not be used (see Input rows): GPU busy, "
            "idle and kernel tables are empty."
        )
    # Another accelerator's work (MTIA, XPU, ...) is in the trace, only not analysed: never "only NVTX ranges".
    other = " and ".join(units.count_of(n, what) for what, n in b.meta.unanalysed_device or ())
    if other:
        has = "; ".join([*([", ".join(held)] if held else []), f"{other}, not analysed"])
    else:
        has = f"only {', '.join(held)}" if held else "no events at all"
    return f"This trace has no CUDA kernels ({has}): GPU busy, idle and kernel tables are empty."


def build_view(trace: LoadedTrace, state: ViewState, theme: Theme = DEFAULT_THEME) -> DashboardView:
    """Every part of the dashboard for one trace and set of state (``tracedash export`` /
    ``report``; the page builds the same parts view by view, see dashboard/app/views)."""
    pv = phase_view(trace, state)
    stats_trace = windowed(trace, state.stats_window())
    gantt, gantt_name = gantt_view(trace, state, theme)
    timeline, timeline_name = timeline_view(trace, state, theme)
    phases, phases_name = phase_figure_view(trace, state, theme)
    gpu_table = gpu_rows(stats_trace, state)
    from dashboard.render import steps as rs

    sv = rs.step_view(trace, state)
    devices = device_ids(trace)
    return DashboardView(
        cards=overview_cards(stats_trace, state),
        gantt=gantt,
        timeline=timeline,
        phase_rows=phase_table_rows(pv.stats) if sv is None else rs.step_phase_rows(sv),
        gpu_rows=gpu_table[0],
        phase_figure=phases,
        filenames={"gantt": gantt_name, "timeline": timeline_name, "phases": phases_name},
        devices=devices,
        device_labels={d: device_label(d, trace.meta.gpus, trace.meta.rank_devices) for d in devices},
        dispatch_rows=dispatch_table_rows(pv) if sv is None else rs.step_table_rows(sv),
        gpu_columns=gpu_table[1],
        kernel_rows=kernel_rows(stats_trace, state.kernel_names, state.busy),
        api_rows=api_rows(stats_trace),
        api_family_rows=api_rows(stats_trace, "family"),
        auto_threshold=pv.auto_threshold,
        notices=view_notices(trace),
    )
