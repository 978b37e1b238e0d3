"""The GPU timeline: busy/idle lanes, NVTX, kernels by stream and CUDA API calls within the mark budget."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard import units
from dashboard.analysis.categories import categorize_kernels
from dashboard.analysis.gpu_time import (
    busy_parts,
    busy_source_label,
    cuda_traced,
    stream_names,
)
from dashboard.analysis.launches import launches_at, match_launches
from dashboard.analysis.ranks import RANKS_FORMAT
from dashboard.analysis.tables import (
    clean_api_name,
    nvtx_table,
)
from dashboard.analysis.timeline import (
    count_in_window,
    in_window,
    lanes_for_window,
    nvtx_lane_keys,
    pixel_runs,
    select_ranges,
    thread_labeler,
)
from dashboard.data.analysis import analysis_of
from dashboard.data.trace import LoadedTrace
from dashboard.figures.common import WIDE_CAPTION_WRAP_CHARS, add_caption_spec
from dashboard.figures.lanes import (
    PLOT_WIDTH_PX,
    Highlight,
    LaunchLink,
    api_lane_label,
    gpu_lane_label,
    stream_lane_label,
)
from dashboard.figures.notes import add_note_flags
from dashboard.figures.nvtx_bars import build_nvtx_union_bars
from dashboard.figures.theme import DEFAULT_THEME, Theme
from dashboard.figures.timeline import gpu_timeline_spec
from dashboard.render.base import (
    API_BUDGET,
    GPU_BUDGET,
    KERNEL_BUDGET,
    MARK_TICK_BUDGET,
    MEMOP_BUDGET,
    NVTX_BUDGET,
    activity_extent,
    dispatches_for,
    figure_filename,
    time_extent,
    view_caption,
)
from dashboard.render.search import search_lane
from dashboard.render.steps import reads_steps, step_spec
from dashboard.state import ViewState
from dashboard.state import window_from_relayout as state_window_from_relayout


# Share of the mark budget per layer of the timeline.
def _launch_calls(kernels: pd.DataFrame, api_calls: pd.DataFrame, launches: pd.DataFrame | None = None) -> pd.DataFrame:
    """The launch call of each kernel (``launches.match_launches``). ``launches``: the trace's kernel -> launch
    join (``TraceAnalysis.launches``), when ``kernels``' index labels are row positions in the trace's kernel
    frame: a zoom looks up its few drawn kernels there.

    Returns:
        Frame aligned with ``kernels`` (same index): ``api_name`` (display name, None when no call
        matches), ``api_start_ns``, ``api_end_ns``, ``api_global_tid``, ``api_pid``, ``api_tid``
        (int64; float64 with NaN where some kernel has no call).
    """
    kpos, apos = (
        match_launches(kernels, api_calls) if launches is None else launches_at(launches, kernels.index.to_numpy())
    )
    found = np.zeros(len(kernels), dtype=bool)
    found[kpos] = True
    names = np.full(len(kernels), None, dtype=object)
    names[kpos] = [clean_api_name(str(n)) for n in api_calls["name"].iloc[apos].tolist()]
    columns = {"api_name": pd.Series(names, index=kernels.index, dtype=object)}  # not Arrow strings: read per row
    for col, src in (
        ("api_start_ns", "start_ns"),
        ("api_end_ns", "end_ns"),
        ("api_global_tid", "global_tid"),
        ("api_pid", "pid"),
        ("api_tid", "tid"),
    ):
        values = api_calls[src].to_numpy()[apos].astype(np.int64)  # the found rows only: no 10M-row copy
        if found.all():
            columns[col] = values
        else:
            columns[col] = np.full(len(kernels), np.nan)
            columns[col][kpos] = values
    return pd.DataFrame(columns, index=kernels.index)


def _join_by_position(trace: LoadedTrace) -> pd.DataFrame | None:
    """The trace's kept kernel -> launch join when its kernel frame's index labels are row positions (as the
    loaders make them), else None (``_launch_calls`` then joins the few kernels itself)."""
    index = trace.bundle.kernels.index
    positional = isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1
    return analysis_of(trace).launches() if positional else None


def kernel_launch(
    trace: LoadedTrace, highlight: Highlight, gpus: dict[int, str], kernel_lanes: bool
) -> LaunchLink | None:
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
    call = _launch_calls(hit.iloc[:1], b.api_calls, _join_by_position(trace)).iloc[0]
    if call["api_name"] is None:
        return None
    labeler = thread_labeler(b.meta.thread_names, ranks=b.meta.rank_pids if b.meta.format == RANKS_FORMAT else None)
    thread = labeler(int(call["api_global_tid"]), int(call["api_pid"]), int(call["api_tid"]))
    dev = int(row["device_id"])
    rank_devices = b.meta.rank_devices or None
    lane = (
        stream_lane_label(dev, int(row["stream_id"]), gpus, rank_devices)
        if kernel_lanes
        else gpu_lane_label(dev, gpus, rank_devices)
    )
    return LaunchLink(
        correlation_id=int(row["correlation_id"]),
        api_name=str(call["api_name"]),
        api_start_ns=int(call["api_start_ns"]),
        api_end_ns=int(call["api_end_ns"]),
        api_lane=api_lane_label(thread),
        kernel_name=str(row["short_name"]),
        kernel_start_ns=int(row["start_ns"]),
        kernel_end_ns=int(row["end_ns"]),
        kernel_lane=lane,
    )


def marked_step_kernels(trace: LoadedTrace, state: ViewState) -> np.ndarray | None:
    """For a marked step (``state.mark`` of kind "dispatch": a row of the steps table), which kernel rows of
    the bundle its launches issued: the steps' own attribution by correlation (``attribute_to_steps`` for a
    framework's steps, ``attribute_kernels`` for the seed's dispatches). None without such a mark, or when no
    step has the marked interval."""
    if trace.bundle is None or not state.mark or state.mark[0] != "dispatch":
        return None
    _, s, e = state.mark
    ta = analysis_of(trace)
    spec = step_spec(state)
    source, steps = ta.steps(spec)
    if not reads_steps(source):
        steps = dispatches_for(trace, state.prefix)
    hit = steps["index"].to_numpy()[((steps["start_ns"] == s) & (steps["end_ns"] == e)).to_numpy()]
    if not len(hit):
        return None
    attribution = ta.step_attribution(spec) if reads_steps(source) else ta.attribution(state.prefix)
    return np.isin(attribution, hit)


def timeline_figure(
    trace: LoadedTrace,
    state: ViewState,
    x_range: tuple[int, int] | None,
    theme: Theme = DEFAULT_THEME,
    highlight: Highlight | None = None,
) -> go.Figure:
    """``timeline_spec`` as a Plotly figure."""
    return go.Figure(timeline_spec(trace, state, x_range, theme, highlight), _validate=False)


def timeline_spec(
    trace: LoadedTrace,
    state: ViewState,
    x_range: tuple[int, int] | None,
    theme: Theme = DEFAULT_THEME,
    highlight: Highlight | None = None,
) -> dict:
    """GPU busy/idle per device with the NVTX overlay, within the mark budget (see analysis.timeline),
    as a plain figure dict (figures.timeline.gpu_timeline_spec).

    Zoomed in (at most ``KERNEL_BUDGET`` kernels in the window) kernels are drawn by stream with
    their launch call in the hover, and CUDA API calls (at most ``API_BUDGET``) in one lane per
    calling thread. ``highlight`` marks a target (see figures.timeline.Highlight); for a kernel
    its launch call is drawn and linked to it.
    """
    uirev = f"{trace.name}|timeline"
    if trace.bundle is None:
        return build_nvtx_union_bars(nvtx_table(trace.summary), theme=theme, gpu_measured=cuda_traced(trace)).to_dict()
    b = trace.bundle
    show = set(state.lanes)
    lo, hi = x_range if x_range is not None else (0, 0)
    ta = analysis_of(trace)
    unions = ta.busy_unions(state.busy)
    hidden_devices = set(state.hide_devices)
    # a link may name a GPU this trace has not (hide_devices=99): the GPUs it records and those with GPU work
    absent = sorted(hidden_devices - set(unions) - set(trace.meta.gpus or ()))
    unions = {d: u for d, u in unions.items() if d not in hidden_devices}
    min_visible = (hi - lo) // PLOT_WIDTH_PX if x_range is not None else 0
    lanes = (
        lanes_for_window(unions, lo_ns=lo, hi_ns=hi, budget=GPU_BUDGET, min_visible_ns=min_visible)
        if x_range is not None and "gpu" in show
        else []
    )
    if "nvtx" in show:
        ranges, index = ta.drawn_ranges(), ta.window_index("nvtx_ranges")
        selected, hidden = select_ranges(ranges, lo_ns=lo, hi_ns=hi, budget=NVTX_BUDGET, index=index)
    else:
        selected, hidden = b.nvtx_ranges.iloc[0:0], 0
    marks = b.nvtx_marks if "marks" in show else b.nvtx_marks.iloc[0:0]
    ts = marks["ts_ns"].to_numpy()
    marks = marks.iloc[np.flatnonzero((ts >= lo) & (ts < hi))]
    ranks = b.meta.rank_pids if b.meta.format == RANKS_FORMAT else None
    labeler = thread_labeler(b.meta.thread_names, ranks=ranks)
    notes = []
    kernels = memops = api = None
    if "streams" in show and x_range is not None:
        k = ta.timed_kernels()  # invalid rows are never drawn
        index = ta.window_index("kernels")
        # counted first: a wide window of millions of kernels draws only their number
        in_view = count_in_window(k, lo, hi, hidden_devices, index)
        if 0 < in_view <= KERNEL_BUDGET:
            vis = k.iloc[in_window(k, lo, hi, hidden_devices, index)]
            calls = _launch_calls(vis, b.api_calls, _join_by_position(trace))
            calls["api_thread"] = pd.Series(  # object dtype: pandas' Arrow strings cost a conversion each way
                [
                    labeler(int(g), int(p), int(t)) if n is not None else None
                    for n, g, p, t in zip(
                        calls["api_name"].tolist(),
                        calls["api_global_tid"].fillna(-1).tolist(),
                        calls["api_pid"].fillna(-1).tolist(),
                        calls["api_tid"].fillna(-1).tolist(),
                    )
                ],
                index=calls.index,
                dtype=object,
            )
            # (device, process, context, stream): one lane each, named alike at every zoom
            lanes_of = stream_names(vis, sharing=ta.stream_sharing())
            kernels = pd.concat([vis, categorize_kernels(vis), calls, lanes_of.rename("stream_lane")], axis=1)
        elif in_view:
            notes.append(
                f"{in_view:,} kernels in view: zoom in to {KERNEL_BUDGET:,} or fewer to see each one "
                "by stream with its CUDA API calls"
            )
        if (step := marked_step_kernels(trace, state)) is not None:
            shown = "zoom in to see them outlined"
            if kernels is not None:  # the attribution is aligned with the bundle's rows
                kernels["in_marked_step"] = mine = step[b.kernels.index.get_indexer(kernels.index)]
                shown = f"{int(mine.sum()):,} in view, outlined"
            notes.append(f"the marked step launched {units.count(int(step.sum()), 'kernel')} (by correlation): {shown}")
        a = b.api_calls  # drawn with the kernels only
        rows = in_window(a, lo, hi, index=ta.window_index("api_calls")) if kernels is not None else []
        if 0 < len(rows) <= API_BUDGET:
            col = {
                c: a[c].to_numpy()[rows] for c in ("start_ns", "end_ns", "global_tid", "pid", "tid", "correlation_id")
            }
            api = pd.DataFrame(
                {
                    **col,
                    "name": pd.Series([clean_api_name(str(n)) for n in a["name"].iloc[rows].tolist()], dtype=object),
                    "thread": pd.Series(
                        [
                            labeler(int(g), int(p), int(t))
                            for g, p, t in zip(col["global_tid"].tolist(), col["pid"].tolist(), col["tid"].tolist())
                        ],
                        dtype=object,
                    ),
                }
            )
        elif len(rows) > API_BUDGET:
            notes.append(f"{len(rows):,} CUDA API calls in view: zoom in to {API_BUDGET:,} or fewer to see them")
    if "memops" in show and x_range is not None and not b.memops.empty:
        m, index = b.memops, ta.window_index("memops")
        in_view = count_in_window(m, lo, hi, hidden_devices, index)
        if in_view <= MEMOP_BUDGET:
            memops = m.iloc[in_window(m, lo, hi, hidden_devices, index)]
        else:
            notes.append(f"{in_view:,} memcpy/memset in view: zoom in to see them")
    if hidden:
        notes.append(f"{hidden:,} shorter NVTX ranges hidden at this scale (showing the {NVTX_BUDGET:,} longest)")
    if len(marks) > MARK_TICK_BUDGET:
        notes.append(f"{len(marks) - MARK_TICK_BUDGET:,} of {len(marks):,} marks hidden")
        marks = marks.iloc[np.linspace(0, len(marks) - 1, MARK_TICK_BUDGET).astype(int)]
    if hidden_gpus := sorted(hidden_devices.difference(absent)):
        notes.append("hidden GPUs: " + ", ".join(str(d) for d in hidden_gpus))
    if absent:
        notes.append(
            f"the link hides {'GPU' if len(absent) == 1 else 'GPUs'} {', '.join(str(d) for d in absent)}, which "
            "this trace does not have"
        )
    if any(ln.mode == "bins" for ln in lanes):
        notes.append("GPU lanes binned into busy fractions (intervals too many or too short to draw one by one)")
    if any(ln.mode == "intervals" and len(ln.starts) > 1 and not len(ln.gap_starts) for ln in lanes):
        # disjoint busy intervals always have gaps between them: these were left out to keep within budget
        notes.append("GPU idle shown as the space between busy bars (too many gaps to draw at this scale)")
    busy_label = busy_source_label(state.busy, not b.graph_launches.empty)
    if not b.graph_launches.empty and busy_parts(state.busy)[1]:
        notes.append(
            f"{len(b.graph_launches):,} CUDA graph launches shown as opaque busy intervals (graph-level "
            "trace): re-profile with --cuda-graph-trace=node for per-kernel detail"
        )
    drawn = [f for f in (kernels, api, memops) if f is not None and not f.empty]
    window_note = None
    busy_or_idle = any(
        len(ln.starts) or len(ln.gap_starts) or (ln.mode == "bins" and ln.fraction.any()) for ln in lanes
    )
    if (
        x_range is not None
        and not busy_or_idle
        and selected.empty
        and marks.empty
        and not drawn
        and (extent := activity_extent(trace, dispatches_for(trace, state.prefix))) is not None
    ):
        window_note = (
            f"Nothing recorded in this window: the trace's activity runs from {extent[0] / 1e9:.6f} "
            f"to {extent[1] / 1e9:.6f} s"
        )
        notes.insert(0, window_note)
    lane_keys = nvtx_lane_keys(selected, ranks=ranks, thread_names=b.meta.thread_names)
    if x_range is not None:  # at a wide window, neighbours under a pixel wide are one bar (their hover says so)
        lane_keys["bar"] = pixel_runs(
            lane_keys["lane"], lane_keys["start_ns"], lane_keys["end_ns"], (hi - lo) / PLOT_WIDTH_PX
        )
    if ranks:  # hovers give each rank's own pid (the label says which rank)
        lane_keys["pid"] = [ranks.get(int(p), (0, int(p)))[1] for p in lane_keys["pid"]]
        if api is not None:
            api["pid"] = [ranks.get(int(p), (0, int(p)))[1] for p in api["pid"]]
    launch = kernel_launch(trace, highlight, b.meta.gpus, kernels is not None) if highlight is not None else None
    search, search_note = search_lane(trace, state, x_range)
    if search_note:
        notes.append(search_note)
    title = (
        "GPU timeline"
        if cuda_traced(trace)
        else "Timeline (NVTX only: CUDA was not traced)"
        if not b.meta.unanalysed_device
        else "Timeline (NVTX only: the work of "
        + " and ".join(dict.fromkeys(what.split()[0] for what, _n in b.meta.unanalysed_device))
        + " is not analysed)"
    )
    return gpu_timeline_spec(
        lanes,
        lane_keys,
        marks,
        gpus=b.meta.gpus,
        x_range_ns=x_range,
        title=title,
        busy_label=busy_label,
        notes=notes,
        uirevision=uirev,
        kernels=kernels,
        memops=memops,
        api=api,
        highlight=highlight,
        launch=launch,
        search=search,
        theme=theme,
        rank_devices=b.meta.rank_devices or None,
        window_note=window_note,
        nvtx_partial=hidden > 0,
    )


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


def zoomed_timeline(
    trace: LoadedTrace, state: ViewState, relayout: dict | None, theme: Theme = DEFAULT_THEME
) -> go.Figure | None:
    """The timeline re-drawn for the window a zoom/pan selected (None: nothing to redraw).

    Redrawing at the new window keeps the mark budget while adding detail: bins become busy
    intervals and hidden short NVTX ranges reappear as the window narrows.
    """
    if trace.bundle is None:
        return None
    w = state_window_from_relayout(relayout)
    if w is False:
        return None
    return timeline_view(
        trace,
        replace(state, t0_ns=w[0], t1_ns=w[1]) if w is not None else replace(state, t0_ns=None, t1_ns=None),
        theme,
    )[0]


def mark_target(fig: go.Figure, mark: tuple[str, int, int] | None) -> go.Figure:
    """Outline the marked row's interval (a clicked kernel, dispatch or gap) across the figure."""
    if not mark:
        return fig
    kind, s, e = mark
    fig.add_vrect(
        x0=s / 1e9,
        x1=e / 1e9,
        line=dict(color="#111827", width=2),
        fillcolor="rgba(250, 204, 21, 0.18)",
        layer="above",
        name=f"selected {kind}",
    )
    return fig


def timeline_view(trace: LoadedTrace, state: ViewState, theme: Theme = DEFAULT_THEME) -> tuple[go.Figure, str]:
    """``timeline_view_spec`` with the figure as a Plotly figure (exports, reports)."""
    spec, filename = timeline_view_spec(trace, state, theme)
    return go.Figure(spec, _validate=False), filename


def timeline_view_spec(trace: LoadedTrace, state: ViewState, theme: Theme = DEFAULT_THEME) -> tuple[dict, str]:
    """The GPU timeline at ``state.window()`` (None: the whole trace), captioned from that window,
    with the marked row outlined, as a plain figure dict (see ``timeline_spec``); and its download
    file name."""
    x_range = state.window() or time_extent(trace, dispatches_for(trace, state.prefix))
    # the marked row: outlined, and for a kernel its launch call linked to it (figures.timeline.Highlight)
    highlight = (
        Highlight(state.mark[1], state.mark[2], label=f"selected {state.mark[0]}", kind=state.mark[0])
        if state.mark
        else None
    )
    # it draws no phases: its caption names no threshold
    spec = add_note_flags(timeline_spec(trace, state, x_range, theme, highlight=highlight), state.notes, x_range)
    meta = spec["layout"].get("meta")
    full = time_extent(trace, dispatches_for(trace, state.prefix)) if trace.bundle is not None else None
    if isinstance(meta, dict) and meta.get("time_axis") and full is not None:
        meta["x_extent_s"] = [full[0] / 1e9, full[1] / 1e9]  # the whole trace: where the S key stops
    # a summary's "timeline" is its NVTX totals: the whole trace's, whatever window the link holds
    window = state.window() if trace.bundle is not None else None
    return add_caption_spec(spec, view_caption(trace, state, window), wrap=WIDE_CAPTION_WRAP_CHARS), figure_filename(
        trace, "timeline", window
    )
