"""The timeline's host-side layers as trace dicts: NVTX ranges, CUDA API calls, NVTX marks and search matches."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard import units
from dashboard.figures.common import (
    bar_labels,
    escape_text,
    s_from_ns,
)
from dashboard.figures.lanes import (
    MARKS_LANE,
    MIN_BAR_PX,
    SEARCH_COLOR,
    SearchLane,
    _hbar,
    _legend_swatch,
    _objects,
    _texts,
    _thread_hover,
    api_lane_label,
    clip_to_window,
)
from dashboard.figures.theme import Theme, nvtx_color

NVTX_RANGES = "NVTX ranges (colour = name)"


def nvtx_traces(nvtx: pd.DataFrame, *, window, ns_per_px: float, theme: Theme, partial: bool = False) -> list[dict]:
    """The NVTX ranges in their lanes (coloured by name, labelled where they fit) and their legend swatch.

    With a ``bar`` column (``analysis.timeline.pixel_runs``) the ranges sharing a bar number are drawn as one bar,
    coloured by the name that holds most of its time, its hover counting its ranges by name, never labelled;
    ``partial``: ``nvtx`` is the window's longest ranges only, and that hover says the others are not counted."""
    if nvtx.empty:
        return []
    names = _texts(nvtx["name"])
    starts, ends = nvtx["start_ns"].to_numpy(), nvtx["end_ns"].to_numpy()
    unclosed, cross = nvtx["unclosed"].to_numpy(dtype=bool), nvtx["cross_thread"].to_numpy(dtype=bool)
    # names, threads and colours repeat: each distinct one is formatted once
    bold = {n: f"<b>{escape_text(n[:200])}</b><br>" for n in set(names)}
    keys = list(zip(nvtx["thread"].tolist(), nvtx["pid"].tolist(), nvtx["tid"].tolist()))
    threads = {key: _thread_hover(*key) for key in set(keys)}
    hover = [
        f"{bold[n]}{units.duration(e - s)} · start {units.instant(s)}"
        f"{' · unclosed (ended at last NVTX timestamp)' if u else ''}{' · ended on another thread' if c else ''}"
        f"<br>{threads[key]}"
        for n, s, e, u, c, key in zip(names, starts.tolist(), ends.tolist(), unclosed, cross, keys)
    ]
    colours = {n: nvtx_color(n) for n in bold}
    colour = [colours[n] for n in names]
    lanes = nvtx["lane"].to_numpy()
    label_names = names
    if "bar" in nvtx.columns and nvtx["bar"].nunique() < len(nvtx):
        starts, ends, lanes, colour, hover, label_names = _merged(
            nvtx["bar"].to_numpy(), names, starts, ends, lanes, colour, hover, [threads[k] for k in keys], partial
        )
    return [
        _hbar(
            NVTX_RANGES,
            starts,
            ends,
            lanes,
            color=colour,
            hover=hover,
            window=window,
            showlegend=False,
            legendgroup="nvtx",
            text=bar_labels(label_names, *clip_to_window(starts, ends, window), ns_per_px),
            label_names=label_names,
        ),
        _legend_swatch(NVTX_RANGES, theme.nvtx, "nvtx"),
    ]


# a merged bar of a window whose shorter ranges are hidden: its counts are those of the ranges drawn
PARTIAL = "<br>only the longest ranges are drawn at this scale: shorter ones here are not counted"


def _merged(bars, names, starts, ends, lanes, colour, hover, thread_hover, partial: bool):
    """The ranges' drawing arrays (``nvtx_traces``) per bar: a bar of one range as it was; a bar of several from
    the first start to the last end, in the colour of the name with the most time in it, its hover listing the
    names by time, no label (an empty label name)."""
    order = np.argsort(bars, kind="stable")
    cuts = np.flatnonzero(np.diff(bars[order])) + 1
    out = ([], [], [], [], [], [])
    for members in np.split(order, cuts):
        i = int(members[0])
        if len(members) == 1:
            for col, v in zip(out, (starts[i], ends[i], lanes[i], colour[i], hover[i], names[i])):
                col.append(v)
            continue
        s, e = int(starts[members].min()), int(ends[members].max())
        by_name: dict[str, list[int]] = {}
        for j in members.tolist():
            k_t = by_name.setdefault(names[j], [0, 0])
            k_t[0] += 1
            k_t[1] += int(ends[j] - starts[j])
        ranked = sorted(by_name.items(), key=lambda kv: -kv[1][1])
        listed = "<br>".join(
            f"{escape_text(n[:80])}{f' ×{k:,}' if k > 1 else ''}: {units.duration(t)}" for n, (k, t) in ranked[:3]
        )
        more = f"<br>and {len(ranked) - 3:,} more names" if len(ranked) > 3 else ""
        for col, v in zip(
            out,
            (
                s,
                e,
                lanes[i],
                nvtx_color(ranked[0][0]),
                f"<b>{len(members):,} NVTX ranges</b>, drawn as one bar: each is under a pixel wide at this scale"
                f"{PARTIAL if partial else ''}"
                f"<br>{units.duration(e - s)} from {units.instant(s)}<br>{listed}{more}<br>{thread_hover[i]}",
                "",
            ),
        ):
            col.append(v)
    s_, e_, lanes_, colour_, hover_, names_ = out
    return np.asarray(s_, np.int64), np.asarray(e_, np.int64), np.asarray(lanes_, dtype=object), colour_, hover_, names_


def api_traces(api: pd.DataFrame, *, window, ns_per_px: float, theme: Theme) -> list[dict]:
    """The CUDA API calls, one lane per calling thread, each at least ``MIN_BAR_PX`` wide."""
    if api.empty:
        return []
    names = api["name"].astype(str).to_numpy()
    starts, ends = api["start_ns"].to_numpy(), api["end_ns"].to_numpy()
    hover = [
        f"<b>{escape_text(n[:120])}</b><br>{units.duration(e - s)} · start {units.instant(s)} · correlation id {c}"
        f"<br>{_thread_hover(th, p, t)}"
        for n, s, e, c, th, p, t in zip(
            names, starts, ends, api["correlation_id"], api["thread"], api["pid"], api["tid"]
        )
    ]
    return [
        _hbar(
            "CUDA API calls",
            starts,
            ends,
            [api_lane_label(t) for t in api["thread"]],
            color=theme.api,
            hover=hover,
            window=window,
            min_ns=MIN_BAR_PX * ns_per_px,
            text=bar_labels(names, *clip_to_window(starts, ends, window), ns_per_px),
            label_names=names,
        )
    ]


def search_traces(search: SearchLane | None, *, window, ns_per_px: float) -> list[dict]:
    """The search's occurrences in its lane (none without a search or with nothing found in view)."""
    if search is None or not len(search.start_ns):
        return []
    return [
        _hbar(
            "search matches",
            search.start_ns,
            search.end_ns,
            [search.label] * len(search.start_ns),
            color=SEARCH_COLOR,
            hover=search.hover,
            width=0.5,
            window=window,
            min_ns=MIN_BAR_PX * ns_per_px,
            showlegend=False,
        )
    ]


def mark_traces(marks: pd.DataFrame, *, theme: Theme) -> list[dict]:
    """The NVTX marks as ticks in their lane."""
    if marks.empty:
        return []
    return [
        dict(
            type="scatter",
            name="NVTX marks",
            mode="markers",
            x=s_from_ns(marks["ts_ns"]),
            y=_objects([MARKS_LANE] * len(marks)),
            marker=dict(symbol="line-ns-open", size=14, color=theme.mark, line=dict(width=1.5)),
            hovertext=_objects(
                [f"{escape_text(str(n)[:200])}<br>{units.instant(t)}" for n, t in zip(marks["name"], marks["ts_ns"])]
            ),
            hoverinfo="text",
        )
    ]
