"""GPU busy/idle lanes per device with NVTX range lanes and mark ticks above, on one time axis."""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.figures.common import empty_figure, escape_text, fmt_ns, s_from_ns
from dashboard.figures.theme import DEFAULT_THEME, PALETTE, Theme
from dashboard.model import DeviceLane, device_label

MARKS_LANE = "NVTX marks"


def gpu_lane_label(device_id: int, gpus: dict[int, str],
                   rank_devices: dict[int, tuple[int, int]] | None = None) -> str:
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
        label = label[: limit // 2 - 1] + "…" + label[-(limit // 2):]
    return escape_text(label)


def _hex_rgb(color: str) -> np.ndarray:
    c = color.lstrip("#")
    return np.array([int(c[i:i + 2], 16) for i in (0, 2, 4)], dtype=float)


def fraction_colors(fraction: np.ndarray, low: str, high: str) -> list[str]:
    """Colour per bin, linearly from ``low`` (0 % busy) to ``high`` (100 % busy), as rgb() strings."""
    f = np.clip(np.asarray(fraction, dtype=float), 0, 1)[:, None]
    rgb = np.rint(_hex_rgb(low) * (1 - f) + _hex_rgb(high) * f).astype(int)
    return [f"rgb({r},{g},{b})" for r, g, b in rgb]


def _name_color(name: str) -> str:
    return PALETTE[zlib.crc32(name.encode("utf-8", "replace")) % len(PALETTE)]


def stream_lane_label(device_id: int, stream, gpus: dict[int, str] | None = None,
                      rank_devices: dict[int, tuple[int, int]] | None = None) -> str:
    """Lane label of one stream: ``stream`` is a stream id, or the stream's name from
    ``analysis.gpu_time.stream_names`` (streams keyed by device, process, context and stream id)."""
    return f"{device_label(device_id, gpus, rank_devices)} · {stream if isinstance(stream, str) else f'stream {stream}'}"


def memops_lane_label(device_id: int, gpus: dict[int, str] | None = None,
                      rank_devices: dict[int, tuple[int, int]] | None = None) -> str:
    """Lane label of a device's memcpy/memset operations."""
    return f"{device_label(device_id, gpus, rank_devices)} · memcpy/memset"


def build_gpu_timeline(lanes: list[DeviceLane], nvtx: pd.DataFrame, marks: pd.DataFrame, *,
                       gpus: dict[int, str], x_range_ns: tuple[int, int] | None, busy_label: str,
                       notes: list[str], uirevision: str = "", title: str = "GPU timeline",
                       kernels: pd.DataFrame | None = None, memops: pd.DataFrame | None = None,
                       theme: Theme = DEFAULT_THEME,
                       rank_devices: dict[int, tuple[int, int]] | None = None) -> go.Figure:
    """Build the GPU timeline with the NVTX overlay.

    Args:
        lanes: device lanes (analysis.timeline.device_lanes), already within the mark budget.
        nvtx: NVTX ranges to draw, with a ``lane`` column (analysis.timeline.nvtx_lane_keys).
        marks: NVTX_MARKS rows to draw as ticks.
        gpus: device id -> GPU name, for lane labels.
        rank_devices: a merged multi-rank bundle's lane id -> (rank, device) table (lanes are then
            labelled "rank r · GPU d"); None for a single trace.
        busy_label: what counts as busy ("kernels" or "kernels+memops"), shown in the legend.
        notes: lines shown under the title (e.g. how many short ranges were left out).
        kernels: individual kernels to draw in per-(device, stream) lanes (zoomed in), with
            device_id, stream_id, start_ns, end_ns, short_name, category, rule, launch.
        memops: memcpy/memset rows to draw in a per-device lane (device_id, start_ns, end_ns,
            kind, bytes).

    Returns:
        Figure with one categorical y axis (NVTX lanes on top, marks, then one lane per GPU) and
        x in seconds on the session timeline. Bar traces: "NVTX ranges", "GPU busy (...)",
        "GPU idle"; or "GPU busy fraction" when lanes are binned; scatter "NVTX marks".
    """
    kernels = kernels if kernels is not None else pd.DataFrame()
    memops = memops if memops is not None else pd.DataFrame()
    if not lanes and nvtx.empty and marks.empty and kernels.empty and memops.empty:
        return empty_figure("This trace has no kernels, memory operations or NVTX ranges to draw.",
                            title=title, theme=theme)
    fig = go.Figure()
    nvtx_lanes = list(dict.fromkeys(nvtx["lane"])) if not nvtx.empty else []
    gpu_labels = [gpu_lane_label(ln.device_id, gpus, rank_devices) for ln in lanes]
    device_ids = sorted({ln.device_id for ln in lanes} | set(kernels.get("device_id", pd.Series([], dtype=int)))
                        | set(memops.get("device_id", pd.Series([], dtype=int))))
    gpu_block = []
    for dev in device_ids:
        gpu_block += [lbl for ln, lbl in zip(lanes, gpu_labels) if ln.device_id == dev]
        if not kernels.empty:
            on_dev = kernels[kernels["device_id"] == dev]
            if "stream_lane" in on_dev:  # named per (process, context, stream): ordered by that key
                order = [c for c in ("pid", "context_id", "stream_id") if c in on_dev]
                streams = on_dev.sort_values(order, kind="stable")["stream_lane"].drop_duplicates().tolist()
            else:
                streams = sorted(on_dev["stream_id"].unique().tolist())
            gpu_block += [stream_lane_label(dev, st, gpus, rank_devices) for st in streams]
        if not memops.empty and (memops["device_id"] == dev).any():
            gpu_block.append(memops_lane_label(dev, gpus, rank_devices))
    categories = nvtx_lanes + ([MARKS_LANE] if not marks.empty else []) + gpu_block

    if not nvtx.empty:
        names = nvtx["name"].astype(str).to_numpy()
        dur = (nvtx["end_ns"] - nvtx["start_ns"]).to_numpy()
        flags = np.where(nvtx["unclosed"].to_numpy(), " · unclosed (ended at last NVTX timestamp)", "")
        flags = np.char.add(flags.astype(str), np.where(nvtx["cross_thread"].to_numpy(), " · ended on another thread", ""))
        hover = [f"<b>{escape_text(n[:200])}</b><br>{fmt_ns(d)} · start {s / 1e9:.6f} s{f}"
                 for n, d, s, f in zip(names, dur, nvtx["start_ns"].to_numpy(), flags)]
        fig.add_trace(go.Bar(
            name="NVTX ranges", orientation="h", base=s_from_ns(nvtx["start_ns"]), x=dur / 1e9,
            y=nvtx["lane"].to_numpy(), hovertext=hover, hoverinfo="text", width=0.8,
            marker=dict(color=[_name_color(n) for n in names], line=dict(width=0)),
        ))
    if not marks.empty:
        fig.add_trace(go.Scatter(
            name="NVTX marks", mode="markers", x=s_from_ns(marks["ts_ns"]), y=[MARKS_LANE] * len(marks),
            marker=dict(symbol="line-ns-open", size=14, color=theme.mark, line=dict(width=1.5)),
            hovertext=[f"{escape_text(str(n)[:200])}<br>{t / 1e9:.6f} s" for n, t in zip(marks["name"], marks["ts_ns"])],
            hoverinfo="text",
        ))
    interval_lanes = [(ln, lbl) for ln, lbl in zip(lanes, gpu_labels) if ln.mode == "intervals"]
    bin_lanes = [(ln, lbl) for ln, lbl in zip(lanes, gpu_labels) if ln.mode == "bins"]
    if interval_lanes:
        starts = np.concatenate([ln.starts for ln, _ in interval_lanes])
        ends = np.concatenate([ln.ends for ln, _ in interval_lanes])
        ys = np.concatenate([[lbl] * len(ln.starts) for ln, lbl in interval_lanes]).astype(object)
        fig.add_trace(go.Bar(
            name=f"GPU busy ({busy_label})", orientation="h", base=s_from_ns(starts), x=(ends - starts) / 1e9, y=ys,
            width=0.8, marker=dict(color=theme.busy, line=dict(width=0)),
            hovertext=[f"busy {fmt_ns(e - s)}<br>{s / 1e9:.6f} – {e / 1e9:.6f} s" for s, e in zip(starts, ends)],
            hoverinfo="text",
        ))
        gs = np.concatenate([ln.gap_starts for ln, _ in interval_lanes])
        ge = np.concatenate([ln.gap_ends for ln, _ in interval_lanes])
        gy = np.concatenate([[lbl] * len(ln.gap_starts) for ln, lbl in interval_lanes]).astype(object)
        if len(gs):
            fig.add_trace(go.Bar(
                name="GPU idle", orientation="h", base=s_from_ns(gs), x=(ge - gs) / 1e9, y=gy, width=0.5,
                marker=dict(color=theme.idle, line=dict(width=0)),
                hovertext=[f"idle {fmt_ns(e - s)}<br>{s / 1e9:.6f} – {e / 1e9:.6f} s" for s, e in zip(gs, ge)],
                hoverinfo="text",
            ))
    if bin_lanes:
        base, width, frac, ys = [], [], [], []
        for ln, lbl in bin_lanes:
            base.append(ln.edges[:-1])
            width.append(np.diff(ln.edges))
            frac.append(ln.fraction)
            ys.extend([lbl] * len(ln.fraction))
        base_a, width_a, frac_a = np.concatenate(base), np.concatenate(width), np.concatenate(frac)
        fig.add_trace(go.Bar(
            name="GPU busy fraction per bin (pale = idle, dark = busy)", orientation="h", base=s_from_ns(base_a), x=width_a / 1e9, y=ys,
            width=0.8, marker=dict(color=fraction_colors(frac_a, theme.idle, theme.busy), line=dict(width=0)),
            hovertext=[f"busy {f:.1%} of {fmt_ns(w)}<br>from {b / 1e9:.6f} s" for b, w, f in zip(base_a, width_a, frac_a)],
            hoverinfo="text",
        ))
    if not kernels.empty:
        cats = kernels["category"].astype(str).to_numpy()
        palette = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(sorted(set(cats)))}
        dur = (kernels["end_ns"] - kernels["start_ns"]).to_numpy()
        lane_of = kernels["stream_lane"] if "stream_lane" in kernels else kernels["stream_id"]
        fig.add_trace(go.Bar(
            name="kernels (colour = category)", orientation="h", base=s_from_ns(kernels["start_ns"]), x=dur / 1e9,
            y=[stream_lane_label(d, st, gpus, rank_devices) for d, st in zip(kernels["device_id"], lane_of)], width=0.8,
            marker=dict(color=[palette[c] for c in cats], line=dict(width=0)), hoverinfo="text",
            hovertext=[f"<b>{escape_text(str(n)[:120])}</b><br>{fmt_ns(d)} · "
                       f"{st if isinstance(st, str) else f'stream {st}'} · {escape_text(str(la))}"
                       f"<br>{escape_text(c)}{' — ' + escape_text(str(r)) if r else ''}"
                       for n, d, st, la, c, r in zip(kernels["short_name"], dur, lane_of,
                                                     kernels["launch"], cats, kernels["rule"])],
        ))
    if not memops.empty:
        dur = (memops["end_ns"] - memops["start_ns"]).to_numpy()
        fig.add_trace(go.Bar(
            name="memcpy/memset", orientation="h", base=s_from_ns(memops["start_ns"]), x=dur / 1e9,
            y=[memops_lane_label(d, gpus, rank_devices) for d in memops["device_id"]], width=0.8,
            marker=dict(color=theme.memops, line=dict(width=0)), hoverinfo="text",
            hovertext=[f"{escape_text(str(k))} · {int(b):,} bytes<br>{fmt_ns(d)}"
                       for k, b, d in zip(memops["kind"], memops["bytes"], dur)],
        ))
    subtitle = "".join(f"<br><sup>{escape_text(n)}</sup>" for n in notes)
    fig.update_layout(**theme.time_axis_layout(
        title=dict(text=title + subtitle, x=1, xanchor="right", y=1, yanchor="top", yref="container",
                   pad=dict(t=10), automargin=True,
                   font=dict(size=13)),
        barmode="overlay",
        height=max(260, 110 + 26 * len(categories)),
        uirevision=uirevision,
        bargap=0.15,
    ))
    fig.update_layout(margin=dict(t=70 + 20 * len(notes)))
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(categories)), title=None,
                     tickfont=dict(size=10), automargin=False, tickmode="array", tickvals=categories,
                     ticktext=[_short_label(c) for c in categories])
    fig.update_xaxes(ticksuffix=" s", showgrid=True, gridcolor=theme.grid)
    if x_range_ns is not None:
        fig.update_xaxes(range=[x_range_ns[0] / 1e9, x_range_ns[1] / 1e9])
    return fig


def build_nvtx_union_bars(nvtx_table: pd.DataFrame, *, top: int = 30, title: str = "NVTX ranges vs GPU busy",
                          theme: Theme = DEFAULT_THEME) -> go.Figure:
    """For a summary input (no intervals): per range name, union time split into GPU overlap and rest.

    Args:
        nvtx_table: NVTX_TABLE frame (analysis.tables.nvtx_table).
        top: how many names to show, by union time.

    Returns:
        Horizontal stacked bar figure with traces "GPU busy during range" and "GPU idle during range".
    """
    if nvtx_table.empty:
        return empty_figure("This summary has no NVTX ranges.", title=title, theme=theme)
    t = nvtx_table.sort_values("union_ns", ascending=False, kind="stable").head(top)
    t = t.iloc[::-1]
    labels = [escape_text(str(n)[:80]) for n in t["name"]]
    over = t["gpu_overlap_ns"].to_numpy() / 1e9
    rest = (t["union_ns"] - t["gpu_overlap_ns"]).to_numpy() / 1e9
    fig = go.Figure([
        go.Bar(name="GPU busy during range", y=labels, x=over, orientation="h", marker_color=theme.overlap,
               hovertemplate="%{y}<br>GPU busy %{x:.6f} s<extra></extra>"),
        go.Bar(name="GPU idle during range", y=labels, x=rest, orientation="h", marker_color=theme.non_overlap,
               hovertemplate="%{y}<br>GPU idle %{x:.6f} s<extra></extra>"),
    ])
    fig.update_layout(**theme.base_layout(
        title=dict(text=title + "<br><sup>A summary holds per-range totals, not intervals, so there is no "
                   "interval timeline: open the nsys SQLite export for one.</sup>", x=0.01, font=dict(size=14)),
        barmode="stack", height=max(260, 110 + 24 * len(t)),
        legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"),
    ))
    fig.update_xaxes(title="union time of the range (s)", gridcolor=theme.grid)
    fig.update_yaxes(automargin=True, tickfont=dict(size=10))
    return fig
