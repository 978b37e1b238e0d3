"""The timeline figure's parts: lane names and sizes, colours, bar traces, hovers, highlight and launch-link types."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard import units
from dashboard.figures.common import escape_text, s_from_ns
from dashboard.model import device_label

MARKS_LANE = "NVTX marks"


BINS_NAME = "GPU busy fraction per bin (darker = busier)"


API_LANE_PREFIX = "CUDA API · "


# Layout of the timeline (on screen; the export layout scales it up, see common.report_layout).
LANE_PX = 26  # pitch of one lane: bars (0.8 of it) hold one line of TEXT_PX text


MIN_HEIGHT_PX = 470  # at least 45 % of a 1000 px viewport


TEXT_PX = 11  # text inside bars and lane labels


TITLE_BAND_PX = 34  # title row at the top (the mode bar shares this row, on the right)


LEGEND_ROW_PX = 22


AXIS_PX = 30  # x tick labels under the plot


STATUS_LINE_PX = 15


LANE_LABEL_GAP_PX = 8  # between a lane's name and its bars (a bar's own name starts at its left edge)


PLOT_WIDTH_PX = 1300  # plot width the labels are fitted to (full-width graph at 1600 px, minus margins)


MIN_BAR_PX = 1.5  # CUDA API calls and memcpy/memset are drawn at least this wide


HIGHLIGHT_COLOR = "#e8590c"


def gpu_lane_label(device_id: int, gpus: dict[int, str], rank_devices: dict[int, tuple[int, int]] | None = None) -> str:
    """Lane label of a device: "GPU 0 · NVIDIA H100 ..." (the id alone when no name is known); a lane
    of merged ranks is "rank r · GPU d" (``rank_devices``; the GPU's name is on the GPUs card)."""
    if rank_devices:
        return device_label(device_id, gpus, rank_devices)
    name = gpus.get(device_id, "")
    return f"GPU {device_id}" + (f" · {name}" if name else "")


def _short_label(label: str, limit: int = 36) -> str:
    """Lane labels must fit the shared left margin: keep the end (thread, depth), elide the middle.

    Elided first, escaped after (Plotly tick labels are HTML): a cut never splits an ``&lt;`` entity.
    """
    if len(label) > limit:
        label = label[: limit // 2 - 1] + "…" + label[-(limit // 2) :]
    return escape_text(label)


def _hex_rgb(color: str) -> np.ndarray:
    c = color.lstrip("#")
    return np.array([int(c[i : i + 2], 16) for i in (0, 2, 4)], dtype=float)


def fraction_colors(fraction: np.ndarray, low: str, high: str) -> list[str]:
    """Colour per bin, linearly from ``low`` (the smallest busy fraction above 0) to ``high``
    (100 % busy), as rgb() strings. A bin with any busy time is never paler than ``low``; bins
    with none are not coloured here (they are drawn as idle, see ``build_gpu_timeline``)."""
    f = np.clip(np.asarray(fraction, dtype=float), 0, 1)[:, None]
    rgb = np.rint(_hex_rgb(low) * (1 - f) + _hex_rgb(high) * f).astype(int)
    return [f"rgb({r},{g},{b})" for r, g, b in rgb]


def merge_equal_bins(edges: np.ndarray, fraction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Join runs of adjacent bins with the same busy fraction into one bin (one bar instead of
    many, and no anti-aliasing seams between them). The fraction of a joined bin is exact: every
    bin of the run had it.

    Returns:
        ``(edges, fraction)`` of the joined bins (``len(edges) == len(fraction) + 1``).
    """
    fraction = np.asarray(fraction, dtype=float)
    if fraction.size == 0:
        return np.asarray(edges), fraction
    keep = np.r_[True, fraction[1:] != fraction[:-1]]  # first bin of each run
    starts = np.flatnonzero(keep)
    return np.r_[np.asarray(edges)[starts], np.asarray(edges)[-1]], fraction[starts]


def stream_lane_label(
    device_id: int, stream, gpus: dict[int, str] | None = None, rank_devices: dict[int, tuple[int, int]] | None = None
) -> str:
    """Lane label of one stream: ``stream`` is a stream id, or the stream's name from
    ``analysis.gpu_time.stream_names`` (streams keyed by device, process, context and stream id)."""
    return (
        f"{device_label(device_id, gpus, rank_devices)} · {stream if isinstance(stream, str) else f'stream {stream}'}"
    )


def memops_lane_label(
    device_id: int, gpus: dict[int, str] | None = None, rank_devices: dict[int, tuple[int, int]] | None = None
) -> str:
    """Lane label of a device's memcpy/memset operations."""
    return f"{device_label(device_id, gpus, rank_devices)} · memcpy/memset"


@dataclass(frozen=True)
class Highlight:
    """A target to mark on the timeline (a clicked table row: a kernel, a dispatch, an idle gap).

    Attributes:
        start_ns, end_ns: the target's time range (ns, session timeline); equal for an instant.
        label: short text shown at the top of the mark ("" for none).
        lane: the y lane to outline as well (a lane label of this figure), or None for all lanes.
        kind: "kernel", "dispatch", "gap" or "range"; for "kernel" the render layer also finds
            its launch call (``LaunchLink``).
    """

    start_ns: int
    end_ns: int
    label: str = ""
    lane: str | None = None
    kind: str = "range"


@dataclass(frozen=True)
class SearchLane:
    """The search's occurrences in view, drawn in a lane of their own at the top of the timeline.

    Attributes:
        label: the lane's label ("search: gemm").
        start_ns, end_ns: one bar each (an occurrence, or a bin of the window holding some).
        hover: one hover text each (already escaped).
    """

    label: str
    start_ns: np.ndarray
    end_ns: np.ndarray
    hover: list[str]


SEARCH_COLOR = "#e8590c"  # the search's marks: orange, apart from every category and phase colour


@dataclass(frozen=True)
class LaunchLink:
    """A kernel and the CUDA API call that launched it (same process and correlation id)."""

    correlation_id: int
    api_name: str
    api_start_ns: int
    api_end_ns: int
    api_lane: str  # "CUDA API · <thread>"
    kernel_name: str
    kernel_start_ns: int
    kernel_end_ns: int
    kernel_lane: str  # the kernel's stream lane, or its GPU lane when kernels are not drawn one by one


def api_lane_label(thread: str) -> str:
    """Lane label of the CUDA API calls of one thread (``thread`` from analysis.timeline.thread_labeler)."""
    return API_LANE_PREFIX + thread


def timeline_height(
    n_lanes: int, top_px: int, bottom_px: int, lane_px: int = LANE_PX, min_px: int = MIN_HEIGHT_PX
) -> int:
    """Figure height (px) that gives every lane ``lane_px`` between the margins, at least ``min_px``."""
    return max(min_px, top_px + bottom_px + lane_px * max(n_lanes, 1))


def clip_to_window(start_ns, end_ns, window: tuple[int, int] | None) -> tuple[np.ndarray, np.ndarray]:
    """Bar extents cut to the drawn window (a bar's text sits at its visible start, never off-axis);
    unchanged without a window. Hover texts keep the true times."""
    start_ns = np.asarray(start_ns, dtype=np.int64)
    end_ns = np.asarray(end_ns, dtype=np.int64)
    if window is None:
        return start_ns, end_ns
    return np.clip(start_ns, window[0], window[1]), np.clip(end_ns, window[0], window[1])


def _objects(values) -> np.ndarray:
    """Strings (or colours) of a trace as one numpy object array: plotly's conversion to the JSON it
    sends takes such an array whole instead of visiting each element."""
    out = np.empty(len(values), dtype=object)
    out[:] = list(values) if not isinstance(values, np.ndarray) else values
    return out


def _texts(column: pd.Series) -> np.ndarray:
    """A column's values as ``str`` (an object array), without pandas' conversion of the whole column
    to its string dtype (slow for the few hundred rows a zoom draws). A categorical column with fewer
    categories than rows converts each category once."""
    if isinstance(column.dtype, pd.CategoricalDtype) and len(column.cat.categories) <= len(column):
        cats = _objects([v if isinstance(v, str) else str(v) for v in column.cat.categories.tolist()] + ["nan"])
        return cats[column.cat.codes.to_numpy()]  # code -1 (missing) picks "nan", as astype(str) writes it
    return _objects([v if isinstance(v, str) else str(v) for v in column.tolist()])


def _hbar(
    name: str,
    start_ns,
    end_ns,
    y,
    *,
    color,
    hover,
    width=0.8,
    text=None,
    window=None,
    min_ns=0,
    label_names=None,
    line=None,
    **extra,
) -> dict:
    """One horizontal bar trace (a plain dict, see ``gpu_timeline_spec``); bars cut to ``window``; with
    ``min_ns`` each is drawn at least that long (about ``MIN_BAR_PX``: short events stay visible; the
    hover gives the true times). ``line``: the bars' outline (default none)."""
    start_ns, end_ns = clip_to_window(start_ns, end_ns, window)
    if min_ns:
        end_ns = np.maximum(end_ns, start_ns + int(min_ns))
    if not isinstance(color, str):
        color = _objects(color)
    if line is not None and not isinstance(line.get("color", ""), str):
        line = {**line, "color": _objects(line["color"])}
    bar = dict(
        type="bar",
        name=name,
        orientation="h",
        base=s_from_ns(start_ns),
        x=(end_ns - start_ns) / 1e9,
        y=_objects(y),
        width=width,
        marker=dict(color=color, line=line or dict(width=0)),
        hovertext=_objects(hover),
        hoverinfo="text",
        **extra,
    )
    if text is not None:
        bar.update(
            text=_objects(text),
            textposition="inside",
            insidetextanchor="start",
            textangle=0,
            textfont=dict(size=TEXT_PX),
            constraintext="inside",
            cliponaxis=True,
        )
    if label_names is not None:  # lets common.report_layout fit the labels again at its own font size
        bar["meta"] = {"label_names": _objects([escape_text(n) for n in label_names])}  # escaped, as every text
    return bar


def _legend_swatch(name: str, color: str, group: str) -> dict:
    """The legend entry of a many-coloured bar trace (shown with ``showlegend=False`` and ``legendgroup``
    ``group``): a bar trace with no bars in ``color``. The trace's own swatch would take its first bar's
    colour, whatever that happens to be."""
    return dict(
        type="bar",
        name=name,
        x=[None],
        y=[None],
        orientation="h",
        marker=dict(color=color),
        legendgroup=group,
        hoverinfo="skip",
    )


def _thread_hover(thread: str, pid: int, tid: int) -> str:
    """Hover line naming a thread with its ids once: "thread python3 · pid 144 · tid 245"."""
    ids = f"pid {pid} · tid {tid}"
    if thread.endswith(ids):  # an unnamed thread: its label is its ids
        return "thread " + escape_text(thread[:160])
    name = thread.removesuffix(f" · tid {tid}").removesuffix(f" · pid {pid}")
    return f"thread {escape_text(name[:120])} · {ids}"


def _cpu_block(nvtx: pd.DataFrame, api: pd.DataFrame) -> list[str]:
    """NVTX lanes and CUDA API lanes grouped by thread (threads in ``global_tid`` order): each
    thread's NVTX lanes, then its API lane."""
    first: dict[str, int] = {}
    lanes_of: dict[str, list[str]] = {}
    if not nvtx.empty:
        triples = dict.fromkeys(zip(nvtx["thread"].tolist(), nvtx["lane"].tolist(), nvtx["global_tid"].tolist()))
        for thread, lane, gtid in triples:  # each distinct (thread, lane, tid) once, in row order
            first[thread] = min(first.get(thread, int(gtid)), int(gtid))
            lanes = lanes_of.setdefault(thread, [])
            if lane not in lanes:
                lanes.append(lane)
    if not api.empty:
        for thread, gtid in dict.fromkeys(zip(api["thread"].tolist(), api["global_tid"].tolist())):
            first[thread] = min(first.get(thread, int(gtid)), int(gtid))
            lanes_of.setdefault(thread, [])
        for thread in dict.fromkeys(api["thread"].tolist()):
            lanes_of[thread].append(api_lane_label(thread))
    return [lane for t in sorted(lanes_of, key=lambda t: (first[t], t)) for lane in lanes_of[t]]


def _or(full: np.ndarray, cut: np.ndarray) -> np.ndarray:
    """``full`` when it is aligned with ``cut`` (a lane that computed whole extents), else ``cut``."""
    return full if len(full) == len(cut) else cut


def _cut_hover(what: str, s: int, e: int, full_s: int, full_e: int) -> str:
    """Hover of a busy or idle bar; one cut by the window's edges also gives its whole extent."""
    if (int(full_s), int(full_e)) == (int(s), int(e)):
        return f"{what} {units.duration(e - s)}<br>{s / 1e9:.6f} – {e / 1e9:.6f} s"
    return (
        f"{what} {units.duration(e - s)} in view, of {units.duration(full_e - full_s)}"
        f"<br>{full_s / 1e9:.6f} – {full_e / 1e9:.6f} s"
    )
