"""Headless view assembly: (LoadedTrace, state) -> analysis -> figures and table records.

Used by the Dash views (dashboard/app/views), ``tracedash export`` / ``report``, scripts and tests;
imports no Dash. Per-trace derived analyses (busy unions, dispatches, phase split and attribution,
window clips) are computed once per trace and the fields they depend on, and kept with the trace
(``memo``): they die when the trace leaves the store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.analysis import phases as ph
from dashboard.analysis.attribution import (
    UNATTRIBUTED,
    dispatch_metrics,
    phase_category_time,
    phase_gpu_time,
)
from dashboard.analysis.categories import categorize_kernels
from dashboard.analysis.gpu_time import (
    ALL_GPUS,
    BUSY_KERNEL_ROWS,
    busy_parts,
    busy_source_label,
    cuda_traced,
    gpu_time,
    has_gpu_work,
    stream_names,
    trace_gpu_overview,
    work_for_source,
)
from dashboard.analysis.launches import LaunchIndex, match_launches
from dashboard.analysis.idle import NO_HOST_ACTIVITY, gap_causes, idle_by_cause, idle_gaps
from dashboard.analysis.ratio import NA, fmt_pct, is_na
from dashboard.analysis.ranks import (RANKS_FORMAT, RANKS_NOTICE, gpu_time_per_rank, per_rank_gpu_time,
                                     rank_nvtx_stats)
from dashboard.analysis.summary import invalid_kernel_count
from dashboard.analysis.summary import MAX_KERNEL_DURATION_NS, kernel_durations, overlong_kernel_count, timed_kernels
from dashboard.analysis.summary import kernel_busy_union, nvtx_stats, overrun_kernel_count
from dashboard.analysis.tables import (
    api_table,
    clean_api_name,
    group_nvtx_stats,
    kernel_table,
    normalize_nvtx_name,
    nvtx_table,
)
from dashboard.analysis.timeline import (
    BUSY_ALL,
    BUSY_KERNELS,
    DEFAULT_MARK_BUDGET,
    in_window,
    lanes_for_window,
    nvtx_lane_keys,
    select_ranges,
    thread_labeler,
)
from dashboard.analysis.window import clip_dispatches, overlapping
from dashboard.figures.common import WIDE_CAPTION_WRAP_CHARS, add_caption, add_caption_spec, escape_text, fmt_ns
from dashboard.figures.gantt import build_dispatch_gantt
from dashboard.figures.idle import build_idle_causes
from dashboard.figures.phases import build_phase_analysis
from dashboard.figures.theme import DEFAULT_THEME, Theme
from dashboard.figures.timeline import (
    PLOT_WIDTH_PX,
    Highlight,
    LaunchLink,
    api_lane_label,
    gpu_timeline_spec,
    build_nvtx_union_bars,
    gpu_lane_label,
    stream_lane_label,
)
from dashboard.loaders.nsys_traits import predates_supported, predates_text
from dashboard.model import account_brief, device_label
from dashboard.state import ViewState
from dashboard.state import window_from_relayout as state_window_from_relayout
from dashboard.text import count_noun
from dashboard.data.analysis import analysis_of, memo
from dashboard.data.trace import LoadedTrace

# Share of the mark budget per layer of the timeline.
NVTX_BUDGET = 1500
MARK_TICK_BUDGET = 400
KERNEL_BUDGET = 1500  # individual kernels (per-stream lanes) are drawn when the window holds at most this many
MEMOP_BUDGET = 400
API_BUDGET = 400  # CUDA API calls, drawn with the kernels (zoomed in)
GPU_BUDGET = DEFAULT_MARK_BUDGET - NVTX_BUDGET - MARK_TICK_BUDGET - KERNEL_BUDGET - MEMOP_BUDGET - API_BUDGET
ALL_LANES = ("nvtx", "marks", "gpu", "streams", "memops")
GANTT_BUDGET = 3000  # dispatch bars in one Gantt figure
DISPATCH_ROW_LIMIT = 20_000  # rows of the dispatch table sent to the browser (the longest steps)
GAP_CAUSE_LIMIT = 500


def windowed(trace: LoadedTrace, window: tuple[int, int] | None) -> LoadedTrace:
    """The trace clipped to ``window`` (``TraceAnalysis.windowed``), or ``trace`` itself for None or a
    summary input (no intervals to clip)."""
    return analysis_of(trace).windowed(window)


def fmt_window(window: tuple[int, int]) -> str:
    """A window as a caption writes it: seconds to the µs (``1.000000–1.020000 s``), or integer ns
    when it is shorter than 10 µs (``80–520 ns``), so its edges always read exactly."""
    a, b = window
    if b - a < 10_000:
        return f"{a:,}–{b:,} ns"
    return f"{a / 1e9:.6f}–{b / 1e9:.6f} s"


def scope_text(trace: LoadedTrace, window: tuple[int, int] | None) -> str:
    """What a statistics panel covers, in one line: "whole trace", or the window it is clipped to."""
    if window is None:
        return "Stats for: whole trace"
    if trace.bundle is None:
        return "Stats for: whole trace (a summary JSON has no intervals to clip to the window)"
    return f"Stats for: window {fmt_window(window)} (intervals clipped at its edges)"


@dataclass(frozen=True)
class Card:
    label: str
    value: str
    hint: str = ""


@dataclass(frozen=True)
class PhaseView:
    """Dispatches with phases; ``metrics`` (attributed GPU work per dispatch) and ``category_time``
    only when the trace has kernels and CUDA API calls to attribute by correlation."""

    dispatches: pd.DataFrame
    phases: pd.Series
    stats: pd.DataFrame
    auto_threshold: float | None
    threshold: float | None
    metrics: pd.DataFrame | None = None
    category_time: pd.DataFrame | None = None
    whole: np.ndarray | None = None  # with a stats window: which dispatches it does not cut (None: all whole)

    def whole_steps(self) -> tuple[pd.DataFrame, pd.Series]:
        """The dispatches whose step time is whole (not cut by the stats window) and their phases."""
        if self.whole is None:
            return self.dispatches, self.phases
        return self.dispatches[self.whole], self.phases[self.whole]


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


def dispatches_for(trace: LoadedTrace, prefix: str) -> pd.DataFrame:
    """Dispatch steps of the whole trace for ``prefix`` (``TraceAnalysis.dispatches``: the last step
    ends at the last kernel end, or is estimated without kernels)."""
    return analysis_of(trace).dispatches(prefix)


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
    stats = stats.merge(phase_gpu_time(d, phases, metrics, work_for(b, state.busy)),
                        on="phase", how="left")
    stats["unattributed_kernels"] = int((attribution == UNATTRIBUTED).sum())
    category_time = phase_category_time(b.kernels, attribution, pd.Series(phases.to_numpy(), index=d["index"]),
                                        categories)
    return PhaseView(d, phases, stats, auto, threshold, metrics, category_time, whole)


def launches_of(trace: LoadedTrace, window: tuple[int, int] | None) -> pd.DataFrame:
    """The kernel -> launch join of the (window's) kernels and CUDA API calls (``TraceAnalysis.launches``):
    dispatch attribution and the idle gaps' launching threads both read it."""
    return analysis_of(trace).window(window).launches()


def attributed(trace: LoadedTrace, prefix: str, window: tuple[int, int] | None, dispatches: pd.DataFrame):
    """``(attribution, dispatch metrics, kernel categories)`` of the (window's) kernels for the
    dispatches of ``prefix`` (``dispatches``: those steps, cut to the window): they do not depend on
    the phase threshold, so a threshold change only re-splits the phases."""
    ta = analysis_of(trace).window(window)
    attribution = ta.attribution(prefix, dispatches)
    metrics = ta.memo.get(("dispatch_metrics", prefix), lambda: dispatch_metrics(dispatches, ta.bundle.kernels,
                                                                                  attribution))
    return attribution, metrics, ta.categories()


def kernel_categories(trace: LoadedTrace, window: tuple[int, int] | None = None) -> pd.Series:
    """Category of every kernel row of the (window's) trace (``categorize_kernels``)."""
    return analysis_of(trace).window(window).categories()


def time_extent(trace: LoadedTrace, dispatches: pd.DataFrame) -> tuple[int, int] | None:
    """The x window that shows everything: ``activity_extent`` padded by 1 % on each side."""
    extent = activity_extent(trace, dispatches)
    if extent is None:
        return None
    a, b = extent
    pad = max((b - a) // 100, 1)
    return a - pad, b + pad


def activity_extent(trace: LoadedTrace, dispatches: pd.DataFrame) -> tuple[int, int] | None:
    """``(first start, last end)`` ns of GPU activity, dispatches and non-negative NVTX ranges; None
    when there is none.

    Left out, so that one corrupt row cannot stretch the axis over centuries: invalid kernels
    (see ``summary.timed_kernels``) and NVTX ranges longer than ``MAX_KERNEL_DURATION_NS`` (24 h).
    """
    lo, hi = [], []
    if trace.summary.gpu_start_ns is not None:
        lo.append(trace.summary.gpu_start_ns)
        hi.append(trace.summary.gpu_end_ns)
    if not dispatches.empty:
        lo.append(int(dispatches["start_ns"].min()))
        hi.append(int(dispatches["end_ns"].max()))
    if trace.bundle is not None:
        r = trace.bundle.nvtx_ranges
        r = r[(r["start_ns"] >= 0) & (r["end_ns"] - r["start_ns"] <= MAX_KERNEL_DURATION_NS)]
        if not r.empty:
            lo.append(int(r["start_ns"].min()))
            hi.append(int(r["end_ns"].max()))
    if not lo:
        return None
    return min(lo), max(hi)


def work_for(bundle, busy_source: str) -> pd.DataFrame:
    """GPU work counted as busy for a busy source (``gpu_time.BUSY_SOURCES``; see ``work_for_source``)."""
    return work_for_source(bundle, busy_source)


GPU_METRICS = (
    ("Kernels", lambda r: f"{r.kernels:,}"),
    ("Kernel time (sum)", lambda r: fmt_ns(r.kernel_sum_ns)),
    ("Busy (union)", lambda r: fmt_ns(r.busy_ns)),
    ("Window", lambda r: fmt_ns(r.window_ns)),
    ("Idle in window", lambda r: fmt_ns(r.idle_ns)),
    ("Utilisation", lambda r: fmt_pct(r.utilisation_pct, 2)),
    ("Streams", lambda r: f"{r.streams:,}"),
)


def gpu_columns_key(device_id: int) -> str:
    """Column key of a device in the per-GPU table ("all" for the all-GPU union)."""
    return "all" if device_id == ALL_GPUS else f"gpu{device_id}"


def gpu_rows(trace: LoadedTrace, state: ViewState) -> tuple[list[dict], list[tuple[str, str]]]:
    """Per-GPU busy/idle table, transposed: one row per metric, one column per device + all GPUs.

    Returns:
        ``(rows, columns)``: rows like ``{"metric": "Busy (union)", "gpu0": "1.2 s", "all": ...}``
        and ``[(key, header), ...]`` in display order. Both empty without event data.
    """
    b = trace.bundle
    if b is None:
        return [], []
    if b.meta.format == RANKS_FORMAT:  # each device within its own rank's window; no union across clocks
        t = gpu_time_per_rank(b, work_for(b, state.busy))
    else:
        t = gpu_time(work_for(b, state.busy), b.kernels)
    records = list(t.itertuples(index=False))
    if not records:  # no kernel or memory operation (an NVTX-only trace, a window without GPU work)
        return [], []
    columns = [(gpu_columns_key(r.device_id), "any GPU" if r.device_id == ALL_GPUS
                else device_label(r.device_id, b.meta.gpus, b.meta.rank_devices)) for r in records]
    rows = [{"metric": label, **{gpu_columns_key(r.device_id): fmt(r) for r in records}} for label, fmt in GPU_METRICS]
    return rows, columns


def rank_cards(per_rank: pd.DataFrame) -> list[Card]:
    """The ranks view's first cards: span, busy and utilisation per rank (``per_rank_gpu_time``),
    since one span across ranks would mix clocks; the slowest rank (longest span) leads."""
    if per_rank.empty:
        return [Card("GPU activity span", "no kernels", "no rank has kernels")]
    slow = per_rank.sort_values(["span_ns", "rank"], ascending=[False, True], kind="stable").iloc[0]

    def each(fmt) -> str:
        return " · ".join(f"r{int(r.rank)} {fmt(r)}" for r in per_rank.itertuples(index=False))

    return [
        Card("GPU activity span (slowest rank)", fmt_ns(int(slow["span_ns"])),
             f"rank {int(slow['rank'])}; per rank, each on its own clock: " + each(lambda r: fmt_ns(r.span_ns))),
        Card("GPU busy (union, per rank)", fmt_ns(int(per_rank["busy_ns"].max())),
             "busiest rank shown; " + each(lambda r: fmt_ns(r.busy_ns))),
        Card("Utilisation (lowest rank)", fmt_pct(per_rank["utilisation_pct"].min(), 2),
             "busy / span of each rank: " + each(lambda r: fmt_pct(r.utilisation_pct, 2))),
    ]


NOT_TRACED = "CUDA was not traced (NVTX only): no kernel, CUDA API or memcpy/memset rows"


def not_traced(trace: LoadedTrace) -> str:
    """Why a trace without CUDA tracing has no GPU figures: ``NOT_TRACED``, or for the work of an
    accelerator tracedash does not analyse (``meta.unanalysed_device``) that work, counted and named."""
    if other := trace.meta.unanalysed_device:
        return (f"not measured: {', '.join(f'{n:,} {what}' for what, n in other)}, not analysed (tracedash measures "
                "CUDA and HIP GPU work); no kernel, CUDA API or memcpy/memset rows")
    return NOT_TRACED


def _no_gpu_cards(why: str) -> list[Card]:
    return [Card("GPU activity span", NA, why), Card("GPU busy (union)", NA, why),
            Card("GPU idle in span", NA, why), Card("Utilisation", NA, why)]


def gpu_cards(trace: LoadedTrace, busy_source: str = BUSY_KERNELS, windowed: bool = False) -> list[Card]:
    """The overview's GPU time cards for one busy source (``gpu_time.trace_gpu_overview``, the same
    numbers as the Per GPU table and the compare page): span, busy, idle, utilisation; with several
    GPUs the utilisation is the mean per GPU with the lowest GPU named, and the all-GPU union is
    "any GPU busy". Without event data, the summary's (kernel rows only) figures.

    When nothing the busy source counts was recorded (a CPU-only trace; ``windowed``: nothing in the
    window), every card reads n/a with the reason: an unmeasured GPU is not a GPU busy for 0 ns."""
    s = trace.summary
    b = trace.bundle
    if trace.meta.gpu_activity_missing:  # e.g. CUPTI range-profiler mode: GPU time unknown, never 0
        return _no_gpu_cards(trace.meta.gpu_activity_missing)
    if b is None and s.kernel_count == 0:
        return _no_gpu_cards("no kernels in this summary")
    if b is None:
        return [
            Card("GPU activity span", fmt_ns(s.gpu_activity_span_ns), "first kernel start to last kernel end, all GPUs"),
            Card("GPU busy (union)", fmt_ns(s.gpu_busy_union_ns), "union of kernel intervals, all devices and streams"),
            Card("GPU idle in span", fmt_ns(s.gpu_idle_within_span_ns), "span minus busy union"),
            Card("Utilisation", fmt_pct(s.utilisation_pct, 2), "busy union / span (never a sum of kernel times)"),
        ]
    ov = trace_gpu_overview(b, busy_source)
    what = busy_source_label(busy_source, not b.graph_launches.empty)
    if ov.span_ns == 0 and ov.any_busy_ns == 0:
        where = "the visible window" if windowed else "this trace"
        if not windowed and not cuda_traced(trace):
            return _no_gpu_cards(not_traced(trace))
        if not has_gpu_work(b):
            return _no_gpu_cards(f"no GPU work in {where}: no kernel, CUDA-graph or memcpy/memset rows")
        return _no_gpu_cards(f"no GPU work in {where} for the busy source ({what})")
    if ov.gpus <= 1:
        cards = [
            Card("GPU activity span", fmt_ns(ov.span_ns), f"first start to last end of GPU work ({what})"),
            Card("GPU busy (union)", fmt_ns(ov.any_busy_ns), f"union of GPU work intervals ({what}), all streams"),
            Card("GPU idle in span", fmt_ns(ov.any_idle_ns), "span minus busy union"),
            Card("Utilisation", fmt_pct(ov.any_utilisation_pct, 2), "busy union / span (never a sum of kernel times)"),
        ]
    else:
        per = ov.per_gpu[ov.per_gpu["device_id"] != ALL_GPUS]
        each = " · ".join(f"{device_label(int(r.device_id), b.meta.gpus, b.meta.rank_devices)} "
                          f"{fmt_pct(r.utilisation_pct, 2)}"
                          for r in per.itertuples(index=False))
        low = "n/a" if ov.lowest_device is None else device_label(ov.lowest_device, b.meta.gpus, b.meta.rank_devices)
        cards = [
            Card("GPU activity span", fmt_ns(ov.span_ns), f"first start to last end of GPU work ({what}), any GPU"),
            Card("Any GPU busy", fmt_ns(ov.any_busy_ns), f"union of GPU work ({what}) over all {ov.gpus} GPUs"),
            Card("No GPU busy in span", fmt_ns(ov.any_idle_ns), "span minus any-GPU busy"),
            Card("Utilisation (mean per GPU)", fmt_pct(ov.mean_utilisation_pct, 2),
                 f"each GPU's busy union over its own window, averaged: {each}; any GPU busy / span: "
                 f"{fmt_pct(ov.any_utilisation_pct, 2)}"),
            Card("Lowest GPU utilisation", fmt_pct(ov.lowest_utilisation_pct, 2), low),
        ]
    if busy_source != BUSY_KERNEL_ROWS and ov.any_busy_ns != s.gpu_busy_union_ns:
        cards.append(Card("GPU busy, kernel rows only", fmt_ns(s.gpu_busy_union_ns),
                          "the summary contract's gpu_busy_union_s (what `summarize` writes): kernel rows only, "
                          "all GPUs; no graph-level CUDA graphs or memcpy/memset"))
    return cards


def overview_cards(trace: LoadedTrace, state: ViewState | None = None) -> list[Card]:
    """Headline numbers: span, busy union, idle, utilisation (for ``state.busy``), counts,
    top API, metadata, and every kind of input row not used as recorded."""
    state = state or ViewState()
    s = trace.summary
    cards = gpu_cards(trace, state.busy, windowed=state.stats_window() is not None) + [
        Card("Kernels", f"{s.kernel_count:,}",
             "kernel rows in the trace" if state.stats_window() is None or trace.bundle is None
             else "kernel rows overlapping the visible window (clipped at its edges)"),
        Card("CUDA-graph kernels", f"{s.graph_node_kernel_count:,}", "kernels with a graphNodeId"),
    ]
    if trace.meta.format == RANKS_FORMAT and trace.bundle is not None:
        cards = rank_cards(per_rank_gpu_time(trace.bundle, work_for(trace.bundle, state.busy))) + cards[-2:]
    elif trace.meta.gpu_activity_missing:  # kernels launched, none recorded (range-profiler mode): unknown, not 0
        cards[:-2] = [Card(c.label, "n/a", trace.meta.gpu_activity_missing) for c in cards[:-2]]
    traced = state.stats_window() is not None or cuda_traced(trace)  # a window's trace holds only the window
    if not traced:  # no kernel count was taken: unknown, not 0
        cards[-2:] = [Card(c.label, NA, not_traced(trace)) for c in cards[-2:]]
    b = trace.bundle
    if b is not None and not b.graph_launches.empty:
        counted = busy_parts(state.busy)[1]
        cards.append(Card("CUDA graph launches", f"{len(b.graph_launches):,}",
                          ("counted as opaque GPU work" if counted else "not counted as busy (kernel rows only)")
                          + "; graph-level trace: kernels inside graphs are not itemised; re-profile with "
                          "--cuda-graph-trace=node for per-kernel detail"))
    if b is not None and not b.memops.empty and not busy_parts(state.busy)[0]:
        if trace.meta.format == RANKS_FORMAT:  # per rank: a union across clocks means nothing
            per_rank = per_rank_gpu_time(b, work_for(b, BUSY_ALL))
            cards.append(Card("Busy incl. memcpy/memset (per rank)", fmt_ns(int(per_rank["busy_ns"].max())),
                              "busiest rank shown; " + " · ".join(f"r{int(r.rank)} {fmt_ns(r.busy_ns)}"
                                                                  for r in per_rank.itertuples(index=False))))
        else:
            ov = trace_gpu_overview(b, BUSY_ALL)
            cards.append(Card("Busy incl. memcpy/memset", fmt_ns(ov.any_busy_ns),
                              f"{count_noun(len(b.memops), 'memory operation')} (any GPU); choose that busy source to use it "
                              "in every panel"))
    if not s.api.empty:
        top = s.api.iloc[0]
        cards.append(Card("Top CUDA API call", clean_api_name(str(top["name"])),
                          f"{fmt_ns(top['total_ns'])} in {count_noun(int(top['count']), 'call')} (summed across threads)"))
    meta = trace.meta
    if meta.format in ("nsys-sqlite", RANKS_FORMAT):
        old = not meta.nsys_version and meta.format != RANKS_FORMAT and predates_supported(meta.tables)
        cards.append(Card("nsys export", meta.nsys_version or "unknown version",
                          f"schema {meta.schema_version}" if meta.schema_version else predates_text() if old else ""))
        devices = sorted(set(b.kernels["device_id"].unique().tolist())) if b is not None else []
        if not devices:
            gpu_text = "no kernels"
        elif any(d in meta.gpus for d in devices):
            gpu_text = ", ".join(f"{d}: {meta.gpus.get(d, 'name not recorded')}" for d in devices)
        else:
            gpu_text = "device ids " + ", ".join(map(str, devices)) + " (GPU names not recorded in this export)"
        cards.append(Card("GPUs with kernels", str(len(devices)), gpu_text) if traced
                     else Card("GPUs with kernels", NA, not_traced(trace)))
    elif meta.format == "kineto-json":
        devices = sorted(set(b.kernels["device_id"].unique().tolist())) if b is not None else []
        cards.append(Card("Input", "PyTorch profiler (Kineto)",
                          "GPUs with kernels: " + (", ".join(f"{d}: {meta.gpus.get(d) or 'name not recorded'}"
                                                            for d in devices) or "none")
                          + "; user_annotation ranges shown as NVTX, gpu_user_annotation and cuda_sync not shown"))
    else:
        cards.append(Card("Input", "summary JSON", "per-range totals only: no intervals"))
    if meta.warnings:
        cards.append(Card("Input warnings", f"{len(meta.warnings):,}", "; ".join(meta.warnings)))
    if b is not None and (clipped := overrun_kernel_count(b.kernels)):
        cards.append(Card("Kernels clipped (same-stream overrun)", f"{clipped:,}",
                          "ran past the end of a later kernel on the same stream (a timestamp artifact): "
                          "clipped to the next kernel's start for busy, span and durations"))
    if meta.accounts:
        per_pid = meta.launches_by_pid
        launches = ("; launch calls / GPU executions per process: " + ", ".join(
            f"pid {p} {n:,}/{e:,}" for p, n, e in per_pid[:8]) + (", ..." if len(per_pid) > 8 else "")) if per_pid else ""
        cards.append(Card("Input rows", f"{sum(a.read for a in meta.accounts):,}",
                          "read per kind: " + account_brief(meta.accounts) + launches))
    if b is not None and (bad := invalid_kernel_count(b.kernels)):
        long_ = overlong_kernel_count(b.kernels)
        why = "end < start, missing (NULL) or impossible timestamps"
        if long_:
            why += f"; {long_:,} longer than {MAX_KERNEL_DURATION_NS // 3_600_000_000_000} h"
        cards.append(Card("Invalid kernel rows", f"{bad:,}",
                          why + ": left out of span, busy, kernel times and the time axis"))
    if b is not None and (long_nvtx := int((b.nvtx_ranges["end_ns"] - b.nvtx_ranges["start_ns"]
                                            > MAX_KERNEL_DURATION_NS).sum())):
        cards.append(Card("NVTX ranges over 24 h", f"{long_nvtx:,}",
                          "kept in the NVTX table, left out of the time axis's extent"))
    if meta.invalid_time_rows:
        total = sum(meta.invalid_time_rows.values())
        cards.append(Card("Rows with unusable times", f"{total:,}", "dropped (NULL time, end < start or beyond "
                          "2^62 ns): " + ", ".join(f"{k} {v:,}" for k, v in meta.invalid_time_rows.items())))
    if meta.dropped_zero_ts_kernels:
        cards.append(Card("Kernels without timestamps", f"{meta.dropped_zero_ts_kernels:,}",
                          "start = end = 0: left out of span and busy"))
    return cards


def _launch_calls(kernels: pd.DataFrame, api_calls: pd.DataFrame, index: LaunchIndex | None = None) -> pd.DataFrame:
    """The launch call of each kernel (``launches.match_launches``). ``index``: the trace's
    ``launch_index`` (a zoom looks up a few kernels).

    Returns:
        Frame aligned with ``kernels`` (same index): ``api_name`` (display name, None when no call
        matches), ``api_start_ns``, ``api_end_ns``, ``api_global_tid``, ``api_pid``, ``api_tid``
        (int64; float64 with NaN where some kernel has no call).
    """
    kpos, apos = match_launches(kernels, api_calls, index)
    found = np.zeros(len(kernels), dtype=bool)
    found[kpos] = True
    names = np.full(len(kernels), None, dtype=object)
    names[kpos] = [clean_api_name(str(n)) for n in api_calls["name"].iloc[apos].tolist()]
    columns = {"api_name": pd.Series(names, index=kernels.index, dtype=object)}  # not Arrow strings: read per row
    for col, src in (("api_start_ns", "start_ns"), ("api_end_ns", "end_ns"), ("api_global_tid", "global_tid"),
                     ("api_pid", "pid"), ("api_tid", "tid")):
        values = api_calls[src].to_numpy(np.int64)[apos]
        if found.all():
            columns[col] = values
        else:
            columns[col] = np.full(len(kernels), np.nan)
            columns[col][kpos] = values
    return pd.DataFrame(columns, index=kernels.index)


def kernel_launch(trace: LoadedTrace, highlight: Highlight, gpus: dict[int, str],
                  kernel_lanes: bool) -> LaunchLink | None:
    """The launch link of the kernel a ``Highlight`` of kind "kernel" points at: the kernel whose
    start and end equal the highlight's (the first such row), and its launch call (same process
    and correlation id). None when no kernel or no call matches.

    ``kernel_lanes``: whether kernels are drawn one by one (the link ends in the kernel's stream
    lane) or not (it ends in its GPU lane).
    """
    b = trace.bundle
    if b is None or highlight.kind != "kernel":
        return None
    k = b.kernels
    hit = k[(k["start_ns"] == highlight.start_ns) & (k["end_ns"] == highlight.end_ns)]
    if hit.empty:
        return None
    row = hit.iloc[0]
    call = _launch_calls(hit.iloc[:1], b.api_calls, analysis_of(trace).launch_index()).iloc[0]
    if call["api_name"] is None:
        return None
    labeler = thread_labeler(b.meta.thread_names, ranks=b.meta.rank_pids if b.meta.format == RANKS_FORMAT else None)
    thread = labeler(int(call["api_global_tid"]), int(call["api_pid"]), int(call["api_tid"]))
    dev = int(row["device_id"])
    rank_devices = b.meta.rank_devices or None
    lane = stream_lane_label(dev, int(row["stream_id"]), gpus, rank_devices) if kernel_lanes \
        else gpu_lane_label(dev, gpus, rank_devices)
    return LaunchLink(correlation_id=int(row["correlation_id"]), api_name=str(call["api_name"]),
                      api_start_ns=int(call["api_start_ns"]), api_end_ns=int(call["api_end_ns"]),
                      api_lane=api_lane_label(thread), kernel_name=str(row["short_name"]),
                      kernel_start_ns=int(row["start_ns"]), kernel_end_ns=int(row["end_ns"]), kernel_lane=lane)


def timeline_figure(trace: LoadedTrace, state: ViewState, x_range: tuple[int, int] | None,
                    theme: Theme = DEFAULT_THEME, highlight: Highlight | None = None) -> go.Figure:
    """``timeline_spec`` as a Plotly figure."""
    return go.Figure(timeline_spec(trace, state, x_range, theme, highlight), _validate=False)


def timeline_spec(trace: LoadedTrace, state: ViewState, x_range: tuple[int, int] | None,
                  theme: Theme = DEFAULT_THEME, highlight: Highlight | None = None) -> dict:
    """GPU busy/idle per device with the NVTX overlay, within the mark budget (see analysis.timeline),
    as a plain figure dict (figures.timeline.gpu_timeline_spec).

    Zoomed in (at most ``KERNEL_BUDGET`` kernels in the window) kernels are drawn by stream with
    their launch call in the hover, and CUDA API calls (at most ``API_BUDGET``) in one lane per
    calling thread. ``highlight`` marks a target (see figures.timeline.Highlight); for a kernel
    its launch call is drawn and linked to it.
    """
    uirev = f"{trace.name}|timeline"
    if trace.bundle is None:
        return build_nvtx_union_bars(nvtx_table(trace.summary), theme=theme,
                                     gpu_measured=cuda_traced(trace)).to_dict()
    b = trace.bundle
    show = set(state.lanes)
    lo, hi = x_range if x_range is not None else (0, 0)
    unions = analysis_of(trace).busy_unions(state.busy)
    hidden_devices = set(state.hide_devices)
    unions = {d: u for d, u in unions.items() if d not in hidden_devices}
    min_visible = (hi - lo) // PLOT_WIDTH_PX if x_range is not None else 0
    lanes = lanes_for_window(unions, lo_ns=lo, hi_ns=hi, budget=GPU_BUDGET, min_visible_ns=min_visible) \
        if x_range is not None and "gpu" in show else []
    ranges = b.nvtx_ranges[b.nvtx_ranges["start_ns"] >= 0] if "nvtx" in show else b.nvtx_ranges.iloc[0:0]
    selected, hidden = select_ranges(ranges, lo_ns=lo, hi_ns=hi, budget=NVTX_BUDGET)
    marks = b.nvtx_marks if "marks" in show else b.nvtx_marks.iloc[0:0]
    ts = marks["ts_ns"].to_numpy()
    marks = marks.iloc[np.flatnonzero((ts >= lo) & (ts < hi))]
    ranks = b.meta.rank_pids if b.meta.format == RANKS_FORMAT else None
    labeler = thread_labeler(b.meta.thread_names, ranks=ranks)
    notes = []
    kernels = memops = api = None
    if "streams" in show and x_range is not None:
        k = analysis_of(trace).timed_kernels()  # invalid rows are never drawn
        vis = k.iloc[in_window(k, lo, hi, hidden_devices)]
        if 0 < len(vis) <= KERNEL_BUDGET:
            calls = _launch_calls(vis, b.api_calls, analysis_of(trace).launch_index())
            calls["api_thread"] = pd.Series(  # object dtype: pandas' Arrow strings cost a conversion each way
                [labeler(int(g), int(p), int(t)) if n is not None else None
                 for n, g, p, t in zip(calls["api_name"].tolist(), calls["api_global_tid"].fillna(-1).tolist(),
                                       calls["api_pid"].fillna(-1).tolist(), calls["api_tid"].fillna(-1).tolist())],
                index=calls.index, dtype=object)
            # (device, process, context, stream): one lane each, named alike at every zoom
            lanes_of = stream_names(vis, sharing=analysis_of(trace).stream_sharing())
            kernels = pd.concat([vis, categorize_kernels(vis), calls, lanes_of.rename("stream_lane")], axis=1)
        elif len(vis):
            notes.append(f"{len(vis):,} kernels in view: zoom in to {KERNEL_BUDGET:,} or fewer to see each one "
                         "by stream with its CUDA API calls")
        a = b.api_calls
        rows = in_window(a, lo, hi)
        if 0 < len(rows) <= API_BUDGET and kernels is not None:
            col = {c: a[c].to_numpy()[rows] for c in ("start_ns", "end_ns", "global_tid", "pid", "tid", "correlation_id")}
            api = pd.DataFrame({**col,
                                "name": pd.Series([clean_api_name(str(n)) for n in a["name"].iloc[rows].tolist()],
                                                  dtype=object),
                                "thread": pd.Series([labeler(int(g), int(p), int(t)) for g, p, t in
                                                     zip(col["global_tid"].tolist(), col["pid"].tolist(),
                                                         col["tid"].tolist())], dtype=object)})
        elif len(rows) > API_BUDGET and kernels is not None:
            notes.append(f"{len(rows):,} CUDA API calls in view: zoom in to {API_BUDGET:,} or fewer to see them")
    if "memops" in show and x_range is not None and not b.memops.empty:
        m = b.memops
        vis = m.iloc[in_window(m, lo, hi, hidden_devices)]
        if len(vis) <= MEMOP_BUDGET:
            memops = vis
        else:
            notes.append(f"{len(vis):,} memcpy/memset in view: zoom in to see them")
    if hidden:
        notes.append(f"{hidden:,} shorter NVTX ranges hidden at this scale (showing the {NVTX_BUDGET:,} longest)")
    if len(marks) > MARK_TICK_BUDGET:
        notes.append(f"{len(marks) - MARK_TICK_BUDGET:,} of {len(marks):,} marks hidden")
        marks = marks.iloc[np.linspace(0, len(marks) - 1, MARK_TICK_BUDGET).astype(int)]
    if hidden_devices:
        notes.append("hidden GPUs: " + ", ".join(str(d) for d in sorted(hidden_devices)))
    if any(ln.mode == "bins" for ln in lanes):
        notes.append("GPU lanes binned into busy fractions (intervals too many or too short to draw one by one)")
    if any(ln.mode == "intervals" and len(ln.starts) > 1 and not len(ln.gap_starts) for ln in lanes):
        # disjoint busy intervals always have gaps between them: these were left out to keep within budget
        notes.append("GPU idle shown as the space between busy bars (too many gaps to draw at this scale)")
    busy_label = busy_source_label(state.busy, not b.graph_launches.empty)
    if not b.graph_launches.empty and busy_parts(state.busy)[1]:
        notes.append(f"{len(b.graph_launches):,} CUDA graph launches shown as opaque busy intervals (graph-level "
                     "trace): re-profile with --cuda-graph-trace=node for per-kernel detail")
    drawn = [f for f in (kernels, api, memops) if f is not None and not f.empty]
    busy_or_idle = any(len(ln.starts) or len(ln.gap_starts) or (ln.mode == "bins" and ln.fraction.any()) for ln in lanes)
    if x_range is not None and not busy_or_idle and selected.empty and marks.empty and not drawn \
            and (extent := activity_extent(trace, dispatches_for(trace, state.prefix))) is not None:
        notes.insert(0, f"Nothing recorded in this window: the trace's activity runs from {extent[0] / 1e9:.6f} "
                        f"to {extent[1] / 1e9:.6f} s")
    lane_keys = nvtx_lane_keys(selected, ranks=ranks, thread_names=b.meta.thread_names)
    if ranks:  # hovers give each rank's own pid (the label says which rank)
        lane_keys["pid"] = [ranks.get(int(p), (0, int(p)))[1] for p in lane_keys["pid"]]
        if api is not None:
            api["pid"] = [ranks.get(int(p), (0, int(p)))[1] for p in api["pid"]]
    launch = kernel_launch(trace, highlight, b.meta.gpus, kernels is not None) if highlight is not None else None
    title = "GPU timeline" if cuda_traced(trace) else "Timeline (NVTX only: CUDA was not traced)" \
        if not b.meta.unanalysed_device else "Timeline (NVTX only: the work of " + " and ".join(
            dict.fromkeys(what.split()[0] for what, _n in b.meta.unanalysed_device)) + " is not analysed)"
    return gpu_timeline_spec(lanes, lane_keys, marks, gpus=b.meta.gpus, x_range_ns=x_range, title=title,
                              busy_label=busy_label, notes=notes, uirevision=uirev, kernels=kernels,
                              memops=memops, api=api, highlight=highlight, launch=launch, theme=theme,
                              rank_devices=b.meta.rank_devices or None)


PHASE_METRICS = (  # (label, stats column, format)
    ("Dispatches", "dispatches", lambda v: f"{int(v):,}"),
    ("Tokens", "tokens", lambda v: f"{int(v):,}"),
    ("Total time", "total_ns", fmt_ns),
    ("Mean step", "mean_ns", fmt_ns),
    ("p50 step", "p50_ns", fmt_ns),
    ("p90 step", "p90_ns", fmt_ns),
    ("p99 step", "p99_ns", fmt_ns),
    ("Tokens / s", "tokens_per_s", lambda v: f"{v:,.0f}"),
)
UNDEFINED = "—"  # an undefined value (a ratio over zero, no data): never NaN, never a made-up 0
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
        metrics.append(("GPU time attributed (by correlation)", "gpu_attributed_ns", fmt_ns))
        metrics.append(("… per dispatch", "gpu_attributed_per_dispatch_ns", fmt_ns))
        metrics.append(("GPU busy within its dispatches", "gpu_busy_in_window_pct", fmt_pct))
    # A phase the table always shows (prefill, decode) with no step here, e.g. a window of decode steps only: its
    # counts are a true 0 and every other figure is undefined ("—"), never a blank cell.
    absent = [p for p in ALWAYS_SHOWN_PHASES if p not in set(stats["phase"])]
    # every value that can be missing here is a ratio over zero (tokens/s, busy %): "n/a", never a made-up 0
    return [{"metric": label, **{r["phase"]: NA if is_na(r.get(col)) else fmt(r[col]) for r in rows},
             **{p: "0" if col in ("dispatches", "tokens") else UNDEFINED for p in absent}}
            for label, col, fmt in metrics]


def device_ids(trace: LoadedTrace) -> list[int]:
    """GPUs with any work in the trace (kernels, memory operations, graph launches), sorted."""
    b = trace.bundle
    if b is None:
        return []
    ids_ = set(b.kernels["device_id"].unique().tolist()) | set(b.memops["device_id"].unique().tolist())
    ids_ |= set(b.graph_launches["device_id"].unique().tolist())
    return sorted(int(d) for d in ids_)


def kernel_rows(trace: LoadedTrace, by: str = "short", busy_source: str = BUSY_KERNELS) -> list[dict]:
    """Kernel table rows; with events, each row also holds its longest instance (start_ns,
    end_ns) so a click can zoom the timeline to it, and a row_id. When the busy source counts
    graph-level CUDA graphs, each graph is an opaque row ("CUDA graph 7", see ``tables.graph_rows``)."""
    kernels = trace.bundle.kernels if trace.bundle is not None else None
    graphs = trace.bundle.graph_launches if trace.bundle is not None and busy_parts(busy_source)[1] else None
    table = kernel_table(kernels, trace.summary, by=by, graph_launches=graphs)
    table["row_id"] = [str(i) for i in range(len(table))]
    if kernels is not None and not kernels.empty:
        kernels = timed_kernels(kernels)  # never zoom to an invalid row (end < start, centuries)
        dur = kernel_durations(kernels).to_numpy()
        key = kernels["name"] if by == "full" else kernels["short_name"]
        codes, names = pd.factorize(key, sort=False)  # by code, not by string: no per-row str copies
        longest = pd.DataFrame({"code": codes, "dur": dur,
                                "s": kernels["start_ns"].to_numpy(), "e": kernels["end_ns"].to_numpy()})
        longest = longest[longest["code"] >= 0]
        longest = longest.sort_values("dur", ascending=False, kind="stable").drop_duplicates("code")
        where = longest.set_index(pd.Index(np.asarray(names, dtype=object)[longest["code"].to_numpy()]).astype(str))
        if graphs is not None and not graphs.empty:
            g = graphs.assign(dur=graphs["end_ns"] - graphs["start_ns"]).sort_values("dur", ascending=False,
                                                                                   kind="stable")
            g = g.drop_duplicates("graph_id")
            where = pd.concat([where[["s", "e"]], pd.DataFrame(
                {"s": g["start_ns"].to_numpy(), "e": g["end_ns"].to_numpy()},
                index=pd.Index([f"CUDA graph {int(i)}" for i in g["graph_id"]]))])
        table["start_ns"] = table["name"].map(where["s"]).astype("Int64")
        table["end_ns"] = table["name"].map(where["e"]).astype("Int64")
    return _records(table)


def api_rows(trace: LoadedTrace, by: str = "name") -> list[dict]:
    """CUDA API table rows per cleaned call name (``by="name"``) or per family (``by="family"``):
    see ``tables.api_table``."""
    return _records(api_table(trace.summary, by=by))


CUT_NOTE = ("cut by the window's edges: its step here is the part inside the window; kernels, GPU busy and "
            "launch lead are not measured on a part (Stats for: whole trace shows them)")


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
    out = pd.DataFrame({"index": d["index"], "phase": pv.phases.to_numpy(), "tokens": d["tokens"], "mode": d["mode"],
                        "padded": d["padded"], "start_ns": d["start_ns"], "end_ns": d["end_ns"],
                        "duration_ns": d["duration_ns"], "end_estimated": d["end_estimated"],
                        "row_id": d["index"].astype(str)})
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


def idle_view(trace: LoadedTrace, state: ViewState, min_gap_ns: int,
              theme: Theme = DEFAULT_THEME, grouped: bool = False) -> tuple[list[dict], go.Figure, str]:
    """Largest GPU idle gaps with host causes (table rows, at most ``GAP_CAUSE_LIMIT``), total idle
    time by cause (figure), and a line saying how many gaps there are and, when over the limit, that
    the rows are the largest ones ("" without intervals or kernels).

    ``grouped`` names NVTX ranges by their normalised name (as the NVTX table does when grouped), so
    PyTorch's per-call names (``aten::mul, op_id = 317126``) add up to one cause."""
    b = trace.bundle
    if b is None or b.kernels.empty:
        why = "This summary has no intervals: idle gaps need an nsys SQLite export." if b is None else \
            "This trace has no kernels, so the GPU has no idle gaps to explain."
        return [], build_idle_causes(idle_by_cause(pd.DataFrame()), note=why, theme=theme), ""
    gaps_all = idle_gaps(work_for(b, state.busy), min_gap_ns=min_gap_ns)
    memops = None if busy_parts(state.busy)[0] else b.memops  # counted as busy: no gap to cover
    causes = gap_causes(gaps_all, b.kernels, b.api_calls, b.nvtx_ranges, limit=GAP_CAUSE_LIMIT, memops=memops,
                        launches=launches_of(trace, None))
    if grouped and not causes.empty:
        ranges = [normalize_nvtx_name(r) if isinstance(r, str) and r else r for r in causes["nvtx_range"]]
        apis = causes["api_call"].tolist()
        causes = causes.assign(nvtx_range=ranges, cause=[
            f"{a} in {r}" if a and r else (a or r or NO_HOST_ACTIVITY) for a, r in zip(apis, ranges)])
    note = f"{len(gaps_all):,} gap{'' if len(gaps_all) == 1 else 's'} ≥ {fmt_ns(min_gap_ns)}"
    if len(gaps_all) > GAP_CAUSE_LIMIT:
        note += f"; causes of the {GAP_CAUSE_LIMIT:,} largest"
    listed = (f"{len(gaps_all):,} gaps ≥ {fmt_ns(min_gap_ns)}: the table and chart hold the {GAP_CAUSE_LIMIT:,} "
              "largest" if len(gaps_all) > GAP_CAUSE_LIMIT else note)
    rows = _records(causes.assign(row_id=[str(i) for i in range(len(causes))],
                                  memop_cover=[f"{k} covers {fmt_ns(n)}" if k else ""
                                               for k, n in zip(causes["memop"], causes["memop_ns"])]))
    return rows, build_idle_causes(idle_by_cause(causes), note=note, theme=theme), listed


def nvtx_rows(trace: LoadedTrace, grouped: bool) -> list[dict]:
    """NVTX table rows; ``grouped`` merges unique-per-call names (``aten::mul, op_id = 317126``).

    With events the grouped union and GPU overlap are recomputed exactly from the intervals; for
    a summary input they are sums of the per-name values (an upper bound).
    """
    if not grouped:
        return _unmeasured_overlap(trace, _records(nvtx_table(trace.summary)))
    if trace.bundle is not None and trace.meta.format == RANKS_FORMAT:  # per rank, against its own GPU work
        stats = rank_nvtx_stats(trace.bundle, normalize_nvtx_name)
    elif trace.bundle is not None:
        r = trace.bundle.nvtx_ranges
        renamed = r.assign(name=[normalize_nvtx_name(n) for n in r["name"].astype(str)])
        stats = nvtx_stats(renamed, kernel_busy_union(trace.bundle.kernels))
    else:
        stats = group_nvtx_stats(trace.summary.nvtx)
    return _unmeasured_overlap(trace, _records(nvtx_table(trace.summary, stats)))


def _unmeasured_overlap(trace: LoadedTrace, rows: list[dict]) -> list[dict]:
    """A range's GPU overlap in a trace without CUDA tracing (``cuda_traced``) was never measured: None
    ("—", with ``UNMEASURED_OVERLAP`` in the row's ``overlap_note`` for the hover), not 0 ns and 0.00 %."""
    if not cuda_traced(trace):
        for r in rows:
            r["gpu_overlap_ns"] = r["overlap_pct"] = None
            r["overlap_note"] = (f"—: not measured, {not_traced(trace)[len('not measured: '):]}"
                                 if trace.meta.unanalysed_device else UNMEASURED_OVERLAP)
    return rows


UNMEASURED_OVERLAP = "—: not measured, CUDA was not traced (NVTX only)"


def window_from_relayout(relayout: dict | None, extent: tuple[int, int] | None) -> tuple[int, int] | None:
    """The x window (ns) a Plotly relayout event asks for; None when the event does not move x.

    ``xaxis.autorange`` (double-click) returns the full ``extent``. Ranges are in seconds on the
    session timeline; a reversed or empty range, or one that is not numeric, is ignored (the
    parsing is ``state.window_from_relayout``, the one the page's state uses).
    """
    w = state_window_from_relayout(relayout)
    if w is False:
        return None
    return extent if w is None else w


def zoomed_timeline(trace: LoadedTrace, state: ViewState, relayout: dict | None,
                    theme: Theme = DEFAULT_THEME) -> go.Figure | None:
    """The timeline re-drawn for the window a zoom/pan selected (None: nothing to redraw).

    Redrawing at the new window keeps the mark budget while adding detail: bins become busy
    intervals and hidden short NVTX ranges reappear as the window narrows.
    """
    if trace.bundle is None:
        return None
    w = state_window_from_relayout(relayout)
    if w is False:
        return None
    return timeline_view(trace, replace(state, t0_ns=w[0], t1_ns=w[1]) if w is not None else replace(state, t0_ns=None, t1_ns=None), theme)[0]


def records(frame: pd.DataFrame) -> list[dict]:
    """Grid records of a frame: missing values (pd.NA, NaN, NaT) become None, which every grid
    column shows as "—" with the reason in its tooltip (never a literal NaN)."""
    out = frame.copy()
    for col in out.columns:
        dt = str(out[col].dtype)
        if dt in ("Int64", "Float64", "category", "object") or dt.startswith("float"):
            if out[col].isna().any() or dt in ("Int64", "Float64", "category"):
                out[col] = out[col].astype(object).where(out[col].notna(), None)
    return out.to_dict("records")


_records = records


def view_caption(trace: LoadedTrace, state: ViewState, x_range: tuple[int, int] | None,
                 pv: PhaseView | None = None, holds: str = "") -> str:
    """One line that makes a pasted image explain itself: trace, GPUs, window, phase split.

    ``x_range`` is the figure's x range when it is windowed, None for "whole trace"; ``holds``
    says what the figure holds when that is not obvious (e.g. "144 dispatches").
    """
    parts = [trace.name]
    if trace.meta.gpus:
        names = sorted(set(trace.meta.gpus.values()))
        parts.append(", ".join(names[:2]) + (f" (+{len(names) - 2})" if len(names) > 2 else ""))
    parts.append("whole trace" if x_range is None else f"window {fmt_window(x_range)}")
    if holds:
        parts.append(holds)
    if pv is not None and pv.threshold is not None:
        parts.append(f"prefill ≥ {pv.threshold:.1f} tokens ({'auto' if state.threshold is None else 'set'})")
    if state.busy != BUSY_KERNELS:
        has_graphs = trace.bundle is not None and not trace.bundle.graph_launches.empty
        parts.append(f"busy = {busy_source_label(state.busy, has_graphs)}")
    return "tracedash · " + " · ".join(parts)


def figure_filename(trace: LoadedTrace, view: str, x_range: tuple[int, int] | None) -> str:
    """Download file name (no extension): trace, view and window (``whole`` when not windowed),
    safe for any file system."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", trace.path.stem)[:80]
    window = f"_{x_range[0]}-{x_range[1]}ns" if x_range else "_whole"
    return f"tracedash_{stem}_{view}{window}"


def mark_target(fig: go.Figure, mark: tuple[str, int, int] | None) -> go.Figure:
    """Outline the marked row's interval (a clicked kernel, dispatch or gap) across the figure."""
    if not mark:
        return fig
    kind, s, e = mark
    fig.add_vrect(x0=s / 1e9, x1=e / 1e9, line=dict(color="#111827", width=2), fillcolor="rgba(250, 204, 21, 0.18)",
                  layer="above", name=f"selected {kind}")
    return fig


def timeline_view(trace: LoadedTrace, state: ViewState,
                  theme: Theme = DEFAULT_THEME) -> tuple[go.Figure, str]:
    """``timeline_view_spec`` with the figure as a Plotly figure (exports, reports)."""
    spec, filename = timeline_view_spec(trace, state, theme)
    return go.Figure(spec, _validate=False), filename


def timeline_view_spec(trace: LoadedTrace, state: ViewState, theme: Theme = DEFAULT_THEME) -> tuple[dict, str]:
    """The GPU timeline at ``state.window()`` (None: the whole trace), captioned from that window,
    with the marked row outlined, as a plain figure dict (see ``timeline_spec``); and its download
    file name."""
    x_range = state.window() or time_extent(trace, dispatches_for(trace, state.prefix))
    # the marked row: outlined, and for a kernel its launch call linked to it (figures.timeline.Highlight)
    highlight = Highlight(state.mark[1], state.mark[2], label=f"selected {state.mark[0]}",
                          kind=state.mark[0]) if state.mark else None
    # it draws no phases: its caption names no threshold
    spec = timeline_spec(trace, state, x_range, theme, highlight=highlight)
    return add_caption_spec(spec, view_caption(trace, state, state.window()), wrap=WIDE_CAPTION_WRAP_CHARS), \
        figure_filename(trace, "timeline", state.window())


def gantt_view(trace: LoadedTrace, state: ViewState, theme: Theme = DEFAULT_THEME) -> tuple[go.Figure, str]:
    """The dispatch Gantt on the timeline's x axis (at ``state.window()``), captioned from that
    window; and its download file name."""
    pv = phase_view(trace, replace(state, stats="trace"))
    x_range = state.window() or time_extent(trace, pv.dispatches)
    title = f"Dispatches · {escape_text(trace.name)}"  # Plotly titles are HTML: a file name is text
    if pv.threshold is not None:
        how = "automatic" if state.threshold is None else "set by you"
        title += f" · prefill when tokens ≥ {pv.threshold:.1f} ({how})"
    gd, gp = pv.dispatches, pv.phases
    in_view = None
    if state.window() is not None:  # the legend counts what the window shows, next to the whole trace's count
        lo, hi = state.window()
        overlaps = ((gd["start_ns"] < hi) & (gd["start_ns"] + gd["duration_ns"] > lo)).to_numpy()
        in_view = gp[overlaps].value_counts().to_dict()
    if len(gd) > GANTT_BUDGET:  # too many bars to draw: one bar per run of same-phase dispatches
        gd, gp = ph.phase_runs(gd, gp)
        title += f" · {len(pv.dispatches):,} dispatches drawn as {len(gd):,} same-phase runs"
    if len(gd) > GANTT_BUDGET:
        keep = np.sort(np.argsort(-gd["duration_ns"].to_numpy(), kind="stable")[:GANTT_BUDGET])
        gd, gp = gd.iloc[keep], gp.iloc[keep]
        title += f" (the {GANTT_BUDGET:,} longest; zoom the timeline for the rest)"
    gantt = build_dispatch_gantt(gd, gp.reset_index(drop=True).set_axis(gd.index), x_range_ns=x_range, title=title,
                                 prefix=state.prefix, uirevision=f"{trace.name}|timeline",
                                 in_view=in_view, theme=theme)
    if state.mark and state.mark[0] == "dispatch":
        mark_target(gantt, state.mark)
    return (add_caption(gantt, view_caption(trace, state, state.window(), pv), wrap=WIDE_CAPTION_WRAP_CHARS),
            figure_filename(trace, "gantt", state.window()))


def phase_figure_view(trace: LoadedTrace, state: ViewState,
                      theme: Theme = DEFAULT_THEME) -> tuple[go.Figure, str]:
    """Step times and kernel time by category per phase, on ``state.stats_window()`` (None: the
    whole trace), captioned with that window and the number of dispatches it holds; and its file name."""
    pv = phase_view(trace, state)
    w = state.stats_window() if trace.bundle is not None else None
    steps, step_phases = pv.whole_steps()  # a step cut by the window's edges is not a step time
    n, cut = len(pv.dispatches), len(pv.dispatches) - len(steps)
    empty_text = (f"No whole dispatch step in this window: its {count_noun(n, 'dispatch', 'dispatches')} "
                  f"{'is' if n == 1 else 'are'} cut by its edges, so no step time can be measured." if n
                  else "No dispatches: nothing to split into phases.")
    fig = build_phase_analysis(steps, step_phases, pv.category_time, theme=theme, empty_text=empty_text)
    holds = (count_noun(n, "dispatch", "dispatches") + (f" ({cut} cut by its edges: not in the step times)" if cut else "")
             if n else "")
    return (add_caption(fig, view_caption(trace, state, w, pv, holds=holds), wrap=WIDE_CAPTION_WRAP_CHARS),
            figure_filename(trace, "phases", w))


def view_notices(trace: LoadedTrace) -> list[str]:
    """Page-level notices for a trace (merged ranks; a trace without kernels)."""
    notices = [RANKS_NOTICE] if trace.meta.format == RANKS_FORMAT else []
    if trace.bundle is not None and trace.summary.kernel_count == 0:
        notices.append(no_kernels_notice(trace.bundle))
    return notices


def effective_group(trace: LoadedTrace, group: bool | None) -> bool:
    """Whether the NVTX table groups by normalised name: ``group`` when set, else automatically when
    the trace's NVTX names carry ``op_id`` (PyTorch's emit_nvtx / Kineto names are unique per call)."""
    if group is not None:
        return bool(group)
    return memo(trace, ("nvtx_has_op_id",), lambda: bool(
        trace.summary.nvtx["name"].astype(str).str.contains("op_id", regex=False).any()) if len(trace.summary.nvtx)
        else False)


def no_kernels_notice(bundle) -> str:
    """The notice for a trace without CUDA kernels, naming what it does hold (NVTX, CUDA API calls,
    memcpy/memset) or saying it holds no events at all."""
    b = bundle
    held = [what for what, n in (("NVTX ranges", len(b.nvtx_ranges)), ("NVTX marks", len(b.nvtx_marks)),
                                 ("CUDA API calls", len(b.api_calls)), ("memcpy/memset", len(b.memops))) if n]
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
    devices = device_ids(trace)
    return DashboardView(
        cards=overview_cards(stats_trace, state),
        gantt=gantt,
        timeline=timeline,
        phase_rows=phase_table_rows(pv.stats),
        gpu_rows=gpu_table[0],
        phase_figure=phases,
        filenames={"gantt": gantt_name, "timeline": timeline_name, "phases": phases_name},
        devices=devices,
        device_labels={d: device_label(d, trace.meta.gpus, trace.meta.rank_devices) for d in devices},
        dispatch_rows=dispatch_table_rows(pv),
        gpu_columns=gpu_table[1],
        kernel_rows=kernel_rows(stats_trace, state.kernel_names, state.busy),
        api_rows=api_rows(stats_trace),
        api_family_rows=api_rows(stats_trace, "family"),
        auto_threshold=pv.auto_threshold,
        notices=view_notices(trace),
    )
