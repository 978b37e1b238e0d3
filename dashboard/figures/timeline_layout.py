"""The timeline's frame: which lanes it has and in what order, the highlight marks, the note lines and the layout."""

from __future__ import annotations

import textwrap

import pandas as pd

from dashboard.figures.common import PROSE_EM, default_template, escape_text, legend_rows
from dashboard.figures.lanes import (
    AXIS_PX,
    HIGHLIGHT_COLOR,
    LANE_LABEL_GAP_PX,
    LEGEND_ROW_PX,
    MARKS_LANE,
    STATUS_LINE_PX,
    TEXT_PX,
    TITLE_BAND_PX,
    Highlight,
    LaunchLink,
    SearchLane,
    _cpu_block,
    _short_label,
    memops_lane_label,
    stream_lane_label,
    timeline_height,
)
from dashboard.figures.theme import Theme
from dashboard.model import DeviceLane


def lane_order(
    lanes: list[DeviceLane],
    gpu_labels: list[str],
    nvtx: pd.DataFrame,
    marks: pd.DataFrame,
    kernels: pd.DataFrame,
    memops: pd.DataFrame,
    api: pd.DataFrame,
    *,
    gpus: dict[int, str],
    rank_devices: dict[int, tuple[int, int]] | None,
    launch: LaunchLink | None,
    search: SearchLane | None,
) -> list[str]:
    """The y lanes top-down: the search lane, per thread its NVTX and CUDA API lanes, the marks lane, then
    per GPU its busy/idle lane, its stream lanes and its memcpy/memset lane (``gpu_labels``: the lane
    label of each of ``lanes``). The lanes of a linked launch pair are there even when nothing else is."""
    device_ids = sorted(
        {ln.device_id for ln in lanes}
        | set(kernels.get("device_id", pd.Series([], dtype=int)))
        | set(memops.get("device_id", pd.Series([], dtype=int)))
    )
    gpu_block = []
    if not kernels.empty:  # stream lanes per device; named per (process, context, stream): ordered by that key
        key_cols = ["device_id"] + (
            [c for c in ("pid", "context_id", "stream_id") if c in kernels]
            if "stream_lane" in kernels
            else ["stream_id"]
        )
        lane_col = "stream_lane" if "stream_lane" in kernels else "stream_id"
        streams_of: dict[int, list] = {}
        for row in sorted(
            dict.fromkeys(zip(*(kernels[c].tolist() for c in key_cols), kernels[lane_col].tolist())),
            key=lambda r: r[:-1],
        ):
            lanes_on = streams_of.setdefault(row[0], [])
            if row[-1] not in lanes_on:
                lanes_on.append(row[-1])
    memop_devices = set(memops["device_id"].tolist()) if not memops.empty else set()
    for dev in device_ids:
        gpu_block += [lbl for ln, lbl in zip(lanes, gpu_labels) if ln.device_id == dev]
        if not kernels.empty:
            gpu_block += [stream_lane_label(dev, st, gpus, rank_devices) for st in streams_of.get(dev, [])]
        if dev in memop_devices:
            gpu_block.append(memops_lane_label(dev, gpus, rank_devices))
    cpu_block = _cpu_block(nvtx, api)
    if launch is not None:  # the linked pair is drawn even when its lanes are not
        if launch.api_lane not in cpu_block:
            cpu_block.append(launch.api_lane)
        if launch.kernel_lane not in gpu_block:
            gpu_block.append(launch.kernel_lane)
    categories = cpu_block + ([MARKS_LANE] if not marks.empty else []) + gpu_block
    if search is not None:
        categories.insert(0, search.label)
    return categories


def draw_window(x_range_ns: tuple[int, int] | None, plot_width_px: int) -> tuple[tuple[int, int] | None, float]:
    """``(window, ns per pixel)`` the bars are cut and fitted to; ``(None, 0.0)`` without a non-empty range."""
    if x_range_ns is not None and x_range_ns[1] > x_range_ns[0]:
        window = (int(x_range_ns[0]), int(x_range_ns[1]))
        return window, (window[1] - window[0]) / plot_width_px
    return None, 0.0


def highlight_marks(highlight: Highlight | None, categories: list[str]) -> tuple[list[dict], list[dict]]:
    """``(shapes, annotations)`` marking ``highlight``: a band over its time range (shape "highlight"), its
    lane outlined when it names a drawn one ("highlight lane"), and its label at the top; none for None."""
    shapes, annotations = [], []
    if highlight is None:
        return shapes, annotations
    x0, x1 = highlight.start_ns / 1e9, highlight.end_ns / 1e9
    shapes.append(
        dict(
            type="rect",
            name="highlight",
            xref="x",
            yref="paper",
            x0=x0,
            x1=x1,
            y0=0,
            y1=1,
            fillcolor="rgba(250,176,5,0.18)",
            line=dict(color=HIGHLIGHT_COLOR, width=1.5),
            layer="above",
        )
    )
    if highlight.lane is not None and highlight.lane in categories:
        pos = len(categories) - 1 - categories.index(highlight.lane)  # the y axis lists lanes bottom-up
        shapes.append(
            dict(
                type="rect",
                name="highlight lane",
                xref="x",
                yref="y",
                x0=x0,
                x1=x1,
                y0=pos - 0.45,
                y1=pos + 0.45,
                line=dict(color=HIGHLIGHT_COLOR, width=3),
                fillcolor="rgba(0,0,0,0)",
                layer="above",
            )
        )
    if highlight.label:
        annotations.append(
            dict(
                name="highlight",
                text=escape_text(highlight.label[:80]),
                x=(x0 + x1) / 2,
                xref="x",
                y=1,
                yref="paper",
                yanchor="top",
                showarrow=False,
                bgcolor="rgba(255,255,255,0.85)",
                bordercolor=HIGHLIGHT_COLOR,
                font=dict(size=TEXT_PX, color="#1f2933"),
            )
        )
    return shapes, annotations


def note_annotations(notes: list[str], traces: list[dict], plot_width_px: int) -> tuple[list[dict], list[str]]:
    """``(annotations, status lines)`` of the level-of-detail notes: wrapped into a status line under the
    plot (annotation "status"); when nothing is drawn the first note is the plot's message instead
    (annotation "empty")."""
    annotations = []
    if notes and not any(t.get("x") is not None and len(t["x"]) for t in traces):
        # nothing drawn: the first note says why, in the middle of the plot (not in the status line)
        annotations.append(
            dict(
                name="empty",
                text=escape_text(notes[0]),
                xref="paper",
                x=0.5,
                yref="paper",
                y=0.5,
                showarrow=False,
                font=dict(size=TEXT_PX + 2, color="#52606d"),
            )
        )
        notes = notes[1:]
    status = (
        textwrap.wrap(" · ".join(notes), width=int(plot_width_px / (PROSE_EM * TEXT_PX)), break_long_words=False)
        if notes
        else []
    )
    if status:
        annotations.append(
            dict(
                name="status",
                text="<br>".join(escape_text(n) for n in status),
                xref="paper",
                x=0,
                xanchor="left",
                yref="paper",
                y=0,
                yanchor="top",
                yshift=-AXIS_PX,
                showarrow=False,
                align="left",
                font=dict(size=TEXT_PX, color="#52606d"),
            )
        )
    return annotations, status


def timeline_layout(
    traces: list[dict],
    categories: list[str],
    *,
    status: list[str],
    shapes: list[dict],
    annotations: list[dict],
    x_range_ns: tuple[int, int] | None,
    title: str,
    uirevision: str,
    plot_width_px: int,
    theme: Theme,
) -> dict:
    """The layout: one categorical y axis of ``categories`` (top-down), x in seconds, the height that
    gives each lane its pitch between the legend rows on top and the axis and ``status`` lines below."""
    names_in_legend = [t["name"] for t in traces if t.get("showlegend") is not False]
    rows = legend_rows(names_in_legend, font_px=TEXT_PX, width_px=plot_width_px)
    top = TITLE_BAND_PX + LEGEND_ROW_PX * rows
    bottom = AXIS_PX + (STATUS_LINE_PX * len(status) + 4 if status else 0)
    xaxis = theme.time_xaxis(x_range_ns)
    return theme.time_axis_layout(
        title=theme.left_title(title),
        barmode="overlay",
        height=timeline_height(len(categories), top, bottom),
        uirevision=uirevision,
        bargap=0.15,
        margin=dict(l=theme.time_axis_left_margin, r=20, t=top, b=bottom),
        shapes=shapes,
        annotations=annotations,
        uniformtext=dict(minsize=TEXT_PX - 1, mode="hide"),
        meta={"time_axis": True, "lanes": len(categories)},
        xaxis=xaxis,
        yaxis=dict(
            categoryorder="array",
            categoryarray=list(reversed(categories)),
            tickfont=dict(size=TEXT_PX),
            automargin=False,
            tickmode="array",
            tickvals=categories,
            ticklabelstandoff=LANE_LABEL_GAP_PX,
            ticktext=[_short_label(c) for c in categories],
            range=[-0.5, len(categories) - 0.5],
        ),
        template=default_template(),
    )
