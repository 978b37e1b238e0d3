"""GPU busy/idle lanes per device with NVTX range lanes and mark ticks above, on one time axis."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.figures.common import (
    PROSE_EM,
    bar_labels,
    default_template,
    empty_figure,
    escape_text,
    fmt_ns,
    legend_rows,
    s_from_ns,
)
from dashboard.figures.lanes import (
    AXIS_PX,
    BINS_NAME,
    HIGHLIGHT_COLOR,
    LANE_LABEL_GAP_PX,
    LEGEND_ROW_PX,
    MARKS_LANE,
    MIN_BAR_PX,
    PLOT_WIDTH_PX,
    SEARCH_COLOR,
    STATUS_LINE_PX,
    TEXT_PX,
    TITLE_BAND_PX,
    Highlight,
    LaunchLink,
    SearchLane,
    _cpu_block,
    _cut_hover,
    _hbar,
    _legend_swatch,
    _objects,
    _or,
    _short_label,
    _texts,
    _thread_hover,
    api_lane_label,
    clip_to_window,
    fraction_colors,
    gpu_lane_label,
    memops_lane_label,
    merge_equal_bins,
    stream_lane_label,
    timeline_height,
)
from dashboard.figures.theme import DEFAULT_THEME, NVTX_PALETTE, Theme, category_color, nvtx_color
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
        return empty_figure(
            "This trace has no kernels, memory operations or NVTX ranges to draw.", title=title, theme=theme
        ).to_dict()
    traces: list = []  # the figure is built once from them: add_trace re-validated every trace
    gpu_labels = [gpu_lane_label(ln.device_id, gpus, rank_devices) for ln in lanes]
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
    if x_range_ns is not None and x_range_ns[1] > x_range_ns[0]:
        window = (int(x_range_ns[0]), int(x_range_ns[1]))
        ns_per_px = (window[1] - window[0]) / plot_width_px
    else:
        window, ns_per_px = None, 0.0

    if not nvtx.empty:
        names = _texts(nvtx["name"])
        starts, ends = nvtx["start_ns"].to_numpy(), nvtx["end_ns"].to_numpy()
        unclosed, cross = nvtx["unclosed"].to_numpy(dtype=bool), nvtx["cross_thread"].to_numpy(dtype=bool)
        # names, threads and colours repeat: each distinct one is formatted once
        bold = {n: f"<b>{escape_text(n[:200])}</b><br>" for n in set(names)}
        threads = {
            key: _thread_hover(*key)
            for key in set(zip(nvtx["thread"].tolist(), nvtx["pid"].tolist(), nvtx["tid"].tolist()))
        }
        hover = [
            f"{bold[n]}{fmt_ns(e - s)} · start {s / 1e9:.6f} s"
            f"{' · unclosed (ended at last NVTX timestamp)' if u else ''}{' · ended on another thread' if c else ''}"
            f"<br>{threads[(th, p, t)]}"
            for n, s, e, u, c, th, p, t in zip(
                names,
                starts.tolist(),
                ends.tolist(),
                unclosed,
                cross,
                nvtx["thread"].tolist(),
                nvtx["pid"].tolist(),
                nvtx["tid"].tolist(),
            )
        ]
        colours = {n: nvtx_color(n) for n in bold}
        traces.append(
            _hbar(
                "NVTX ranges (colour = name)",
                starts,
                ends,
                nvtx["lane"].to_numpy(),
                color=[colours[n] for n in names],
                hover=hover,
                window=window,
                showlegend=False,
                legendgroup="nvtx",
                text=bar_labels(names, *clip_to_window(starts, ends, window), ns_per_px),
                label_names=names,
            )
        )
        traces.append(_legend_swatch("NVTX ranges (colour = name)", theme.nvtx, "nvtx"))
    if not api.empty:
        names = api["name"].astype(str).to_numpy()
        starts, ends = api["start_ns"].to_numpy(), api["end_ns"].to_numpy()
        hover = [
            f"<b>{escape_text(n[:120])}</b><br>{fmt_ns(e - s)} · start {s / 1e9:.6f} s · correlation id {c}"
            f"<br>{_thread_hover(th, p, t)}"
            for n, s, e, c, th, p, t in zip(
                names, starts, ends, api["correlation_id"], api["thread"], api["pid"], api["tid"]
            )
        ]
        traces.append(
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
        )
    if search is not None and len(search.start_ns):
        traces.append(
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
        )
    if not marks.empty:
        traces.append(
            dict(
                type="scatter",
                name="NVTX marks",
                mode="markers",
                x=s_from_ns(marks["ts_ns"]),
                y=_objects([MARKS_LANE] * len(marks)),
                marker=dict(symbol="line-ns-open", size=14, color=theme.mark, line=dict(width=1.5)),
                hovertext=_objects(
                    [f"{escape_text(str(n)[:200])}<br>{t / 1e9:.6f} s" for n, t in zip(marks["name"], marks["ts_ns"])]
                ),
                hoverinfo="text",
            )
        )
    interval_lanes = [(ln, lbl) for ln, lbl in zip(lanes, gpu_labels) if ln.mode == "intervals"]
    bin_lanes = [(ln, lbl) for ln, lbl in zip(lanes, gpu_labels) if ln.mode == "bins"]
    idle_s, idle_e, idle_y, idle_hover = [], [], [], []
    if interval_lanes:
        starts = np.concatenate([ln.starts for ln, _ in interval_lanes])
        ends = np.concatenate([ln.ends for ln, _ in interval_lanes])
        ys = np.concatenate([[lbl] * len(ln.starts) for ln, lbl in interval_lanes]).astype(object)
        full_s = np.concatenate([_or(ln.full_starts, ln.starts) for ln, _ in interval_lanes])
        full_e = np.concatenate([_or(ln.full_ends, ln.ends) for ln, _ in interval_lanes])
        traces.append(
            _hbar(
                f"GPU busy ({busy_label})",
                starts,
                ends,
                ys,
                color=theme.busy,
                hover=[_cut_hover("busy", *x) for x in zip(starts, ends, full_s, full_e)],
            )
        )
        for ln, lbl in interval_lanes:
            idle_s.append(ln.gap_starts)
            idle_e.append(ln.gap_ends)
            idle_y += [lbl] * len(ln.gap_starts)
            idle_hover += [
                _cut_hover("idle", *x)
                for x in zip(
                    ln.gap_starts,
                    ln.gap_ends,
                    _or(ln.gap_full_starts, ln.gap_starts),
                    _or(ln.gap_full_ends, ln.gap_ends),
                )
            ]
    if bin_lanes:
        base, ends, frac, ys = [], [], [], []
        for ln, lbl in bin_lanes:
            edges, fraction = merge_equal_bins(ln.edges, ln.fraction)
            busy = fraction > 0
            base.append(edges[:-1][busy])
            ends.append(edges[1:][busy])
            frac.append(fraction[busy])
            ys.extend([lbl] * int(busy.sum()))
            idle_s.append(edges[:-1][~busy])
            idle_e.append(edges[1:][~busy])
            idle_y += [lbl] * int((~busy).sum())
            idle_hover += [
                f"idle (0 % busy) {fmt_ns(e - s)}<br>from {s / 1e9:.6f} s"
                for s, e in zip(edges[:-1][~busy], edges[1:][~busy])
            ]
        base_a, end_a, frac_a = np.concatenate(base), np.concatenate(ends), np.concatenate(frac)
        colors = fraction_colors(frac_a, theme.busy_min, theme.busy)
        traces.append(
            _hbar(
                BINS_NAME,
                base_a,
                end_a,
                ys,
                color=colors,
                line=dict(color=colors, width=0.6),  # adjacent bins: no anti-aliasing seams
                hover=[
                    f"busy {f:.1%} of {fmt_ns(e - b)}<br>from {b / 1e9:.6f} s" for b, e, f in zip(base_a, end_a, frac_a)
                ],
                showlegend=False,
                legendgroup="bins",
            )
        )
        traces.append(_legend_swatch(BINS_NAME, theme.busy, "bins"))
    if idle_y:
        traces.append(
            _hbar(
                "GPU idle",
                np.concatenate(idle_s),
                np.concatenate(idle_e),
                np.array(idle_y, dtype=object),
                color=theme.idle,
                hover=idle_hover,
                width=0.5,
            )
        )
    if not kernels.empty:
        cats = _texts(kernels["category"])
        names = _texts(kernels["short_name"])
        starts, ends = kernels["start_ns"].to_numpy(), kernels["end_ns"].to_numpy()
        lane_of = (kernels["stream_lane"] if "stream_lane" in kernels else kernels["stream_id"]).tolist()
        lane_names = {
            key: stream_lane_label(*key, gpus, rank_devices) for key in set(zip(kernels["device_id"].tolist(), lane_of))
        }
        ys = _objects([lane_names[key] for key in zip(kernels["device_id"].tolist(), lane_of)])
        texts = np.array(bar_labels(names, *clip_to_window(starts, ends, window), ns_per_px), dtype=object)
        if "api_name" in kernels:  # the launch call, where one was found (columns read once, not per kernel)
            api_names = kernels["api_name"].astype(object).tolist()
            api_threads = kernels["api_thread"].astype(object).tolist()
            api_starts = kernels["api_start_ns"].astype(object).tolist()
        else:
            api_names = api_threads = api_starts = [None] * len(kernels)
        hover = []
        for n, s, e, st, la, c, r, corr, an, at, a0 in zip(
            names,
            starts.tolist(),
            ends.tolist(),
            lane_of,
            kernels["launch"].tolist(),
            cats,
            kernels["rule"].tolist(),
            kernels["correlation_id"].tolist(),
            api_names,
            api_threads,
            api_starts,
        ):
            h = (
                f"<b>{escape_text(n[:120])}</b><br>{fmt_ns(e - s)} · {st if isinstance(st, str) else f'stream {st}'}"
                f" · {escape_text(str(la))}"
                f"<br>{escape_text(c)}{' — ' + escape_text(str(r)) if r else ''}<br>correlation id {corr}"
            )
            if isinstance(an, str):
                a0 = int(a0)
                h += (
                    f" · launched by {escape_text(an[:120])} on {escape_text(str(at)[:120])}"
                    f" at {a0 / 1e9:.9f} s (launch to start {fmt_ns(s - a0)})"
                )
            hover.append(h)
        hover = np.array(hover, dtype=object)
        flows = launch_flows(kernels, categories)
        ordered = sorted(set(cats), key=lambda c: (c == "other", c))
        for cat in ordered:
            sel = cats == cat
            traces.append(
                _hbar(
                    f"kernels: {cat}",
                    starts[sel],
                    ends[sel],
                    ys[sel],
                    color=category_color(cat),
                    hover=hover[sel].tolist(),
                    text=texts[sel].tolist(),
                    window=window,
                    label_names=names[sel],
                    **({"customdata": flows[sel]} if flows is not None else {}),
                )
            )
        if "in_marked_step" in kernels and kernels["in_marked_step"].any():
            sel = kernels["in_marked_step"].to_numpy(dtype=bool)
            outline = _hbar(
                MARKED_STEP_KERNELS,
                starts[sel],
                ends[sel],
                ys[sel],
                color="rgba(0,0,0,0)",
                hover=[],
                window=window,
                line=dict(color=HIGHLIGHT_COLOR, width=2),
            )
            del outline["hovertext"]
            outline["hoverinfo"] = "skip"  # the kernel under the outline keeps its hover (and its flow)
            traces.append(outline)
    if not memops.empty:
        dur = (memops["end_ns"] - memops["start_ns"]).to_numpy()
        traces.append(
            _hbar(
                "memcpy/memset",
                memops["start_ns"],
                memops["end_ns"],
                [memops_lane_label(d, gpus, rank_devices) for d in memops["device_id"].tolist()],
                color=theme.memops,
                window=window,
                min_ns=MIN_BAR_PX * ns_per_px,
                hover=[
                    f"{escape_text(str(k))} · {int(b):,} bytes<br>{fmt_ns(d)}"
                    for k, b, d in zip(memops["kind"].tolist(), memops["bytes"].tolist(), dur.tolist())
                ],
            )
        )
    if launch is not None:
        traces.append(
            _hbar(
                f"launch call (correlation id {launch.correlation_id})",
                [launch.api_start_ns],
                [launch.api_end_ns],
                [launch.api_lane],
                color=theme.api,
                width=0.8,
                hover=[
                    f"<b>{escape_text(launch.api_name[:120])}</b><br>launched {escape_text(launch.kernel_name[:120])}"
                    f"<br>correlation id {launch.correlation_id} · {fmt_ns(launch.api_end_ns - launch.api_start_ns)}"
                ],
                showlegend=False,
                line=dict(color=HIGHLIGHT_COLOR, width=2),
            )
        )
        traces.append(
            dict(
                type="scatter",
                name=f"launch → kernel (correlation id {launch.correlation_id})",
                mode="lines+markers",
                x=s_from_ns([launch.api_start_ns, launch.kernel_start_ns]),
                y=[launch.api_lane, launch.kernel_lane],
                line=dict(color=HIGHLIGHT_COLOR, width=2, dash="dot"),
                marker=dict(symbol=["circle", "arrow"], angleref="previous", size=[7, 12], color=HIGHLIGHT_COLOR),
                hoverinfo="text",
                hovertext=[
                    f"{escape_text(launch.api_name[:120])} at {launch.api_start_ns / 1e9:.6f} s",
                    f"{escape_text(launch.kernel_name[:120])} starts {launch.kernel_start_ns / 1e9:.6f} s"
                    f" ({fmt_ns(launch.kernel_start_ns - launch.api_start_ns)} after the call)",
                ],
            )
        )
    shapes, annotations = [], []
    if highlight is not None:
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
    names_in_legend = [t["name"] for t in traces if t.get("showlegend") is not False]
    rows = legend_rows(names_in_legend, font_px=TEXT_PX, width_px=plot_width_px)
    top = TITLE_BAND_PX + LEGEND_ROW_PX * rows
    bottom = AXIS_PX + (STATUS_LINE_PX * len(status) + 4 if status else 0)
    xaxis = theme.time_xaxis(x_range_ns)
    layout = theme.time_axis_layout(
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
    return {"data": traces, "layout": layout}


def launch_flows(kernels: pd.DataFrame, categories: list[str]) -> np.ndarray | None:
    """Per drawn kernel, where its launch call's flow arrow starts (assets/tracedash.js draws it on hover):
    ``[call start (s), y position of the call's API lane]`` (the lane's place on the categorical y axis,
    bottom lane 0), NaN where no call was found or its lane is not drawn. None without launch columns."""
    if "api_name" not in kernels or "api_thread" not in kernels:
        return None
    pos = {lane: len(categories) - 1 - i for i, lane in enumerate(categories)}
    out = np.full((len(kernels), 2), np.nan)
    for i, (name, thread, a0) in enumerate(
        zip(kernels["api_name"].tolist(), kernels["api_thread"].tolist(), kernels["api_start_ns"].tolist())
    ):
        if isinstance(name, str) and (y := pos.get(api_lane_label(str(thread)))) is not None:
            out[i] = (int(a0) / 1e9, y)
    return out


MARKED_STEP_KERNELS = "kernels of the marked step"


def build_gpu_timeline(*args, **kwargs) -> go.Figure:
    """``gpu_timeline_spec`` (same arguments) as a Plotly figure (exports, reports, tests)."""
    return go.Figure(gpu_timeline_spec(*args, **kwargs), _validate=False)


def build_nvtx_union_bars(
    nvtx_table: pd.DataFrame,
    *,
    top: int = 30,
    title: str = "NVTX ranges vs GPU busy",
    theme: Theme = DEFAULT_THEME,
    gpu_measured: bool = True,
) -> go.Figure:
    """For a summary input (no intervals): per range name, union time split into GPU overlap and rest.

    Args:
        nvtx_table: NVTX_TABLE frame (analysis.tables.nvtx_table).
        top: how many names to show, by union time.
        gpu_measured: False for a summary of a run without CUDA tracing (no kernel, no CUDA API total): one
            series, "union time (GPU not traced)", never a range drawn as wholly "GPU idle".

    Returns:
        Horizontal stacked bar figure with traces "GPU busy during range" and "GPU idle during range" (or
        the one series above).
    """
    if nvtx_table.empty:
        return empty_figure("This summary has no NVTX ranges.", title=title, theme=theme)
    t = nvtx_table.sort_values("union_ns", ascending=False, kind="stable").head(top)
    t = t.iloc[::-1]
    labels = [escape_text(str(n)[:80]) for n in t["name"]]
    over = t["gpu_overlap_ns"].to_numpy() / 1e9
    rest = (t["union_ns"] - t["gpu_overlap_ns"]).to_numpy() / 1e9
    fig = go.Figure(
        [
            go.Bar(
                name="GPU busy during range",
                y=labels,
                x=over,
                orientation="h",
                marker_color=theme.overlap,
                hovertemplate="%{y}<br>GPU busy %{x:.6f} s<extra></extra>",
            ),
            go.Bar(
                name="GPU idle during range",
                y=labels,
                x=rest,
                orientation="h",
                marker_color=theme.non_overlap,
                hovertemplate="%{y}<br>GPU idle %{x:.6f} s<extra></extra>",
            ),
        ]
        if gpu_measured
        else [
            go.Bar(
                name="union time (GPU not traced: no kernel or CUDA API call in this summary)",
                y=labels,
                x=t["union_ns"].to_numpy() / 1e9,
                orientation="h",
                marker_color=NVTX_PALETTE[0],
                hovertemplate="%{y}<br>union %{x:.6f} s<extra></extra>",
            ),
        ]
    )
    fig.update_layout(
        **theme.base_layout(
            title=dict(
                text=title,
                x=0.01,
                xanchor="left",
                y=1,
                yref="container",
                yanchor="top",
                pad=dict(t=8),
                font=dict(size=14),
                subtitle=dict(
                    text="A summary holds per-range totals, not intervals, so there is no interval "
                    "timeline: open the nsys SQLite export for one.",
                    font=dict(size=11),
                ),
            ),
            barmode="stack",
            height=max(280, 130 + 24 * len(t)),
            margin=dict(l=10, r=20, t=84, b=50),
            # Under the title on the left: the mode bar (top right) covers neither.
            legend=dict(orientation="h", y=1.0, x=0, xanchor="left", yanchor="bottom"),
        )
    )
    # Totals, not times: nothing to zoom (a drag would read as a window of the session's time axis).
    fig.update_xaxes(title="union time of the range (s)", gridcolor=theme.grid, fixedrange=True)
    fig.update_yaxes(automargin=True, tickfont=dict(size=10), fixedrange=True, ticklabelstandoff=LANE_LABEL_GAP_PX)
    return fig
