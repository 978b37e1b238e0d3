"""What every render module shares: mark budgets, the window a statistic covers, cards, extents, captions."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard import units
from dashboard.analysis.gpu_time import (
    busy_source_label,
)
from dashboard.analysis.kernel_times import MAX_KERNEL_DURATION_NS
from dashboard.analysis.timeline import (
    BUSY_KERNELS,
    DEFAULT_MARK_BUDGET,
)
from dashboard.data.analysis import analysis_of
from dashboard.data.trace import LoadedTrace
from dashboard.state import ViewState

# Share of the mark budget per layer of the timeline.
NVTX_BUDGET = 1500
MARK_TICK_BUDGET = 400
KERNEL_BUDGET = 1500  # individual kernels (per-stream lanes) are drawn when the window holds at most this many
MEMOP_BUDGET = 400
API_BUDGET = 400  # CUDA API calls, drawn with the kernels (zoomed in)
GPU_BUDGET = DEFAULT_MARK_BUDGET - NVTX_BUDGET - MARK_TICK_BUDGET - KERNEL_BUDGET - MEMOP_BUDGET - API_BUDGET
ALL_LANES = ("nvtx", "marks", "gpu", "streams", "memops")
GANTT_BUDGET = 1200  # dispatch bars in one Gantt figure: beyond it, one bar per run of same-phase dispatches
DISPATCH_ROW_LIMIT = 20_000  # rows of the dispatch table sent to the browser (the longest steps)
GAP_CAUSE_LIMIT = 500


def windowed(trace: LoadedTrace, window: tuple[int, int] | None) -> LoadedTrace:
    """The trace clipped to ``window`` (``TraceAnalysis.windowed``), or ``trace`` itself for None or a
    summary input (no intervals to clip)."""
    return analysis_of(trace).windowed(window)


def scope_text(trace: LoadedTrace, window: tuple[int, int] | None) -> str:
    """What a statistics panel covers, in one line: "whole trace", or the window it is clipped to."""
    if window is None:
        return "Stats for: whole trace"
    if trace.bundle is None:
        return "Stats for: whole trace (a summary JSON has no intervals to clip to the window)"
    return f"Stats for: window {units.window(window)} (intervals clipped at its edges)"


@dataclass(frozen=True)
class Card:
    label: str
    value: str
    hint: str = ""


def dispatches_for(trace: LoadedTrace, prefix: str) -> pd.DataFrame:
    """Dispatch steps of the whole trace for ``prefix`` (``TraceAnalysis.dispatches``: the last step
    ends at the last kernel end, or is estimated without kernels)."""
    return analysis_of(trace).dispatches(prefix)


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
    (see ``kernel_times.timed_kernels``) and NVTX ranges longer than ``MAX_KERNEL_DURATION_NS`` (24 h).
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


def work_for(trace: LoadedTrace, busy_source: str, window: tuple[int, int] | None = None) -> pd.DataFrame:
    """GPU work of the (window's) trace counted as busy for a busy source (``gpu_time.BUSY_SOURCES``; see
    ``work_for_source``), from the trace's derived data."""
    return analysis_of(trace).window(window).work(busy_source)


UNDEFINED = "—"  # an undefined value (a ratio over zero, no data): never NaN, never a made-up 0


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


def view_caption(
    trace: LoadedTrace, state: ViewState, x_range: tuple[int, int] | None, pv: PhaseView | None = None, holds: str = ""
) -> str:
    """One line that makes a pasted image explain itself: trace, GPUs, window, phase split.

    ``x_range`` is the figure's x range when it is windowed, None for "whole trace"; ``holds``
    says what the figure holds when that is not obvious (e.g. "144 dispatches").
    """
    parts = [trace.name]
    # the GPU models; a trace that names none (a Kineto device without "name": "GPU 2") adds nothing here
    names = sorted({n for n in (trace.meta.gpus or {}).values() if not re.fullmatch(r"GPU \d+", str(n))})
    if names:
        parts.append(", ".join(names[:2]) + (f" (+{len(names) - 2})" if len(names) > 2 else ""))
    parts.append("whole trace" if x_range is None else f"window {units.window(x_range)}")
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


NOT_TRACED = "CUDA was not traced (NVTX only): no kernel, CUDA API or memcpy/memset rows"


def not_traced(trace: LoadedTrace) -> str:
    """Why a trace without CUDA tracing has no GPU figures: ``NOT_TRACED``, or for the work of an
    accelerator tracedash does not analyse (``meta.unanalysed_device``) that work, counted and named."""
    if other := trace.meta.unanalysed_device:
        return (
            f"not measured: {', '.join(units.count_of(n, what) for what, n in other)}, not analysed (tracedash "
            "measures CUDA and HIP GPU work); no kernel, CUDA API or memcpy/memset rows"
        )
    return NOT_TRACED


def launches_of(trace: LoadedTrace, window: tuple[int, int] | None) -> pd.DataFrame:
    """The kernel -> launch join of the (window's) kernels and CUDA API calls (``TraceAnalysis.launches``):
    dispatch attribution and the idle gaps' launching threads both read it."""
    return analysis_of(trace).window(window).launches()


def near_window(start_ns, end_ns, window: tuple[int, int]) -> np.ndarray:
    """Which of the intervals ``[start_ns, end_ns)`` a Gantt zoomed to ``window`` draws: those overlapping the
    window widened by its width on each side. The server redraws the Gantt at every zoom and pan; drawing every
    step each time cost the browser ~0.4 s per zoom at 2,745 steps (docs/benchmarks.md, zoom round trip), and
    the margin keeps bars under a pan of up to a window's width until that redraw arrives."""
    lo, hi = window
    pad = hi - lo
    start, end = np.asarray(start_ns, dtype=np.int64), np.asarray(end_ns, dtype=np.int64)
    return (start < hi + pad) & (end > lo - pad)
