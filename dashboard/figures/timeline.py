"""The GPU timeline figure: per thread its NVTX and CUDA API lanes, NVTX marks, then per GPU its busy/idle,
stream and memcpy/memset lanes, on one time axis. Its layers are built in timeline_cpu and timeline_gpu, its
lanes and layout in timeline_layout."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard.figures.common import empty_figure
from dashboard.figures.lanes import PLOT_WIDTH_PX, Highlight, LaunchLink, SearchLane, gpu_lane_label
from dashboard.figures.theme import DEFAULT_THEME, Theme
from dashboard.figures.timeline_cpu import api_traces, mark_traces, nvtx_traces, search_traces
from dashboard.figures.timeline_gpu import busy_traces, kernel_traces, launch_traces, memop_traces
from dashboard.figures.timeline_layout import (
    draw_window,
    highlight_marks,
    lane_order,
    note_annotations,
    timeline_layout,
)
from dashboard.model import DeviceLane


def gpu_timeline_spec(
    lanes: list[DeviceLane],
    nvtx: pd.DataFrame,
    marks: pd.DataFrame,
    *,
    gpus: dict[int, str],
    x_range_ns: tuple[int, int] | None,
    busy_label: str,
    notes: list[str],
    uirevision: str = "",
    title: str = "GPU timeline",
    kernels: pd.DataFrame | None = None,
    memops: pd.DataFrame | None = None,
    api: pd.DataFrame | None = None,
    highlight: Highlight | None = None,
    launch: LaunchLink | None = None,
    search: SearchLane | None = None,
    plot_width_px: int = PLOT_WIDTH_PX,
    theme: Theme = DEFAULT_THEME,
    rank_devices: dict[int, tuple[int, int]] | None = None,
    window_note: str | None = None,
    nvtx_partial: bool = False,
) -> dict:
    """The GPU timeline as a plain figure dict (``{"data": [trace dicts], "layout": {...}}``, strings
    and colours as numpy object arrays): what the page sends for a zoom, built without Plotly's
    figure objects (their validation and copies were most of a zoom's time). ``build_gpu_timeline``
    is the same as a ``go.Figure``. The timeline: per thread its NVTX lanes and CUDA API lane, NVTX
    marks, then per GPU its busy/idle lane, its stream lanes (kernels, when zoomed in) and its
    memcpy/memset lane.

    Args:
        lanes: device lanes (analysis.timeline.lanes_for_window), already within the mark budget.
        nvtx: NVTX ranges to draw, with ``lane`` and ``thread`` columns (analysis.timeline.nvtx_lane_keys).
        marks: NVTX_MARKS rows to draw as ticks.
        gpus: device id -> GPU name, for lane labels.
        rank_devices: a merged multi-rank bundle's lane id -> (rank, device) table (lanes are then
            labelled "rank r · GPU d"); None for a single trace.
        busy_label: what counts as busy ("kernels" or "kernels + memcpy/memset"), shown in the legend.
        notes: level-of-detail lines (what is left out at this zoom and how to see it), shown in a
            small status line under the plot (annotation named "status"; export layouts drop it). When
            nothing is drawn, the first note is the plot's message instead (annotation named "empty").
        kernels: individual kernels to draw in per-(device, stream) lanes (zoomed in), with
            device_id, stream_id, start_ns, end_ns, short_name, category, rule, launch,
            correlation_id and optionally ``api_name``, ``api_start_ns``, ``api_thread`` (the launch call:
            each bar's ``customdata`` then holds where its flow arrow starts, ``launch_flows``) and
            ``in_marked_step`` (bool: outlined in one more trace, ``MARKED_STEP_KERNELS``).
        memops: memcpy/memset rows to draw in a per-device lane (device_id, start_ns, end_ns,
            kind, bytes).
        api: CUDA API calls to draw, one lane per calling thread: start_ns, end_ns, name (display
            name), thread (lane label from analysis.timeline.thread_labeler), global_tid, pid, tid,
            correlation_id.
        highlight: a target to mark (see ``Highlight``): an outlined band over its time range (shape
            named "highlight"), its lane outlined too when given.
        launch: a kernel's launch call: the call is outlined in its API lane and joined to the
            kernel by an arrow (trace "launch → kernel"), drawn even when the lanes are not.
        search: the search's occurrences in view (see ``SearchLane``), in the top lane (trace
            "search matches").
        plot_width_px: plot width the bar labels are fitted to.
        window_note: why the window shows nothing although the trace has activity elsewhere (drawn as the
            figure's message, on the time axis, when there is no lane to draw).
        nvtx_partial: ``nvtx`` holds only the longest ranges of the window (the others are hidden at this scale):
            a bar of merged ranges says its counts leave the hidden ones out.

    Returns:
        A figure with one categorical y axis (CPU lanes on top, GPU lanes below) and x in seconds on
        the session timeline. Bar traces: "NVTX ranges", "CUDA API calls", "GPU busy (...)",
        "GPU busy fraction per bin (darker = busier)", "GPU idle", "kernels: <category>" (one per
        category), "memcpy/memset"; scatter "NVTX marks". ``layout.meta`` holds ``time_axis`` and
        ``lanes`` (the lane count).
    """
    kernels = kernels if kernels is not None else pd.DataFrame()
    memops = memops if memops is not None else pd.DataFrame()
    api = api if api is not None else pd.DataFrame()
    if not lanes and nvtx.empty and marks.empty and kernels.empty and memops.empty and api.empty:
        if window_note is None:
            return empty_figure(
                "This trace has no kernels, memory operations or NVTX ranges to draw.", title=title, theme=theme
            ).to_dict()
        # a trace without GPU lanes (NVTX only) zoomed where it recorded nothing: the window's own figure, on
        # the time axis (the keys, a double-click and the other figure keep working with it)
        fig = empty_figure(window_note, title=title, theme=theme).to_dict()
        fig["layout"]["xaxis"] = {**theme.time_xaxis(x_range_ns), "visible": True}
        fig["layout"]["meta"] = {"time_axis": True, "lanes": 0}
        return fig
    gpu_labels = [gpu_lane_label(ln.device_id, gpus, rank_devices) for ln in lanes]
    categories = lane_order(
        lanes,
        gpu_labels,
        nvtx,
        marks,
        kernels,
        memops,
        api,
        gpus=gpus,
        rank_devices=rank_devices,
        launch=launch,
        search=search,
    )
    window, ns_per_px = draw_window(x_range_ns, plot_width_px)
    lod = dict(window=window, ns_per_px=ns_per_px)
    on_gpus = dict(gpus=gpus, rank_devices=rank_devices)
    # the figure is built once from these: add_trace re-validated every trace
    traces = [
        *nvtx_traces(nvtx, **lod, theme=theme, partial=nvtx_partial),
        *api_traces(api, **lod, theme=theme),
        *search_traces(search, **lod),
        *mark_traces(marks, theme=theme),
        *busy_traces(lanes, gpu_labels, busy_label=busy_label, theme=theme),
        *kernel_traces(kernels, categories, **on_gpus, **lod),
        *memop_traces(memops, **on_gpus, **lod, theme=theme),
        *launch_traces(launch, theme=theme),
    ]
    shapes, annotations = highlight_marks(highlight, categories)
    notes_shown, status = note_annotations(notes, traces, plot_width_px)
    layout = timeline_layout(
        traces,
        categories,
        status=status,
        shapes=shapes,
        annotations=annotations + notes_shown,
        x_range_ns=x_range_ns,
        title=title,
        uirevision=uirevision,
        plot_width_px=plot_width_px,
        theme=theme,
    )
    return {"data": traces, "layout": layout}


def build_gpu_timeline(*args, **kwargs) -> go.Figure:
    """``gpu_timeline_spec`` (same arguments) as a Plotly figure (exports, reports, tests)."""
    return go.Figure(gpu_timeline_spec(*args, **kwargs), _validate=False)
