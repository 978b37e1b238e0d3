"""The timeline's device-side layers as trace dicts: busy/idle lanes, kernels by stream, memcpy/memset and the
launch link of a marked kernel."""

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
    BINS_NAME,
    HIGHLIGHT_COLOR,
    MIN_BAR_PX,
    LaunchLink,
    _cut_hover,
    _hbar,
    _legend_swatch,
    _objects,
    _or,
    _texts,
    api_lane_label,
    clip_to_window,
    fraction_colors,
    memops_lane_label,
    merge_equal_bins,
    stream_lane_label,
)
from dashboard.figures.theme import Theme, category_color
from dashboard.model import DeviceLane

MARKED_STEP_KERNELS = "kernels of the marked step"


def busy_traces(lanes: list[DeviceLane], gpu_labels: list[str], *, busy_label: str, theme: Theme) -> list[dict]:
    """Per GPU lane its busy time: intervals ("GPU busy (...)") or busy fractions per bin (with their legend
    swatch), then one "GPU idle" trace of the gaps and empty bins of every lane."""
    traces = []
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
                f"idle (0 % busy) {units.duration(e - s)}<br>from {units.instant(s)}"
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
                    f"busy {f:.1%} of {units.duration(e - b)}<br>from {units.instant(b)}"
                    for b, e, f in zip(base_a, end_a, frac_a)
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
    return traces


def _kernel_hovers(kernels: pd.DataFrame, names: np.ndarray, cats: np.ndarray, lane_of: list) -> np.ndarray:
    """Per kernel its hover: name, duration, stream, launch, category and rule, correlation id, and the launch
    call where one was found."""
    if "api_name" in kernels:  # the launch call, where one was found (columns read once, not per kernel)
        api_names = kernels["api_name"].astype(object).tolist()
        api_threads = kernels["api_thread"].astype(object).tolist()
        api_starts = kernels["api_start_ns"].astype(object).tolist()
    else:
        api_names = api_threads = api_starts = [None] * len(kernels)
    hover = []
    for n, s, e, st, la, c, r, corr, an, at, a0 in zip(
        names,
        kernels["start_ns"].to_numpy().tolist(),
        kernels["end_ns"].to_numpy().tolist(),
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
            f"<b>{escape_text(n[:120])}</b><br>{units.duration(e - s)} · "
            f"{st if isinstance(st, str) else f'stream {st}'}"
            f" · {escape_text(str(la))}"
            f"<br>{escape_text(c)}{' — ' + escape_text(str(r)) if r else ''}<br>correlation id {corr}"
        )
        if isinstance(an, str):
            a0 = int(a0)
            h += (
                f" · launched by {escape_text(an[:120])} on {escape_text(str(at)[:120])}"
                f" at {a0 / 1e9:.9f} s (launch to start {units.duration(s - a0)})"
            )
        hover.append(h)
    return np.array(hover, dtype=object)


def kernel_traces(
    kernels: pd.DataFrame,
    categories: list[str],
    *,
    gpus: dict[int, str],
    rank_devices: dict[int, tuple[int, int]] | None,
    window,
    ns_per_px: float,
) -> list[dict]:
    """The kernels in their stream lanes, one trace per category ("other" last), each bar carrying its
    launch call's flow start (``launch_flows``), then the outline of the marked step's kernels."""
    if kernels.empty:
        return []
    traces = []
    cats = _texts(kernels["category"])
    names = _texts(kernels["short_name"])
    starts, ends = kernels["start_ns"].to_numpy(), kernels["end_ns"].to_numpy()
    lane_of = (kernels["stream_lane"] if "stream_lane" in kernels else kernels["stream_id"]).tolist()
    lane_names = {
        key: stream_lane_label(*key, gpus, rank_devices) for key in set(zip(kernels["device_id"].tolist(), lane_of))
    }
    ys = _objects([lane_names[key] for key in zip(kernels["device_id"].tolist(), lane_of)])
    texts = np.array(bar_labels(names, *clip_to_window(starts, ends, window), ns_per_px), dtype=object)
    hover = _kernel_hovers(kernels, names, cats, lane_of)
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
    return traces


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


def memop_traces(
    memops: pd.DataFrame,
    *,
    gpus: dict[int, str],
    rank_devices: dict[int, tuple[int, int]] | None,
    window,
    ns_per_px: float,
    theme: Theme,
) -> list[dict]:
    """The memcpy/memset operations in each device's lane, each at least ``MIN_BAR_PX`` wide."""
    if memops.empty:
        return []
    dur = (memops["end_ns"] - memops["start_ns"]).to_numpy()
    return [
        _hbar(
            "memcpy/memset",
            memops["start_ns"],
            memops["end_ns"],
            [memops_lane_label(d, gpus, rank_devices) for d in memops["device_id"].tolist()],
            color=theme.memops,
            window=window,
            min_ns=MIN_BAR_PX * ns_per_px,
            hover=[
                f"{escape_text(str(k))} · {int(b):,} bytes<br>{units.duration(d)}"
                for k, b, d in zip(memops["kind"].tolist(), memops["bytes"].tolist(), dur.tolist())
            ],
        )
    ]


def launch_traces(launch: LaunchLink | None, *, theme: Theme) -> list[dict]:
    """A marked kernel's launch call, outlined in its API lane, and the arrow from it to the kernel."""
    if launch is None:
        return []
    return [
        _hbar(
            f"launch call (correlation id {launch.correlation_id})",
            [launch.api_start_ns],
            [launch.api_end_ns],
            [launch.api_lane],
            color=theme.api,
            width=0.8,
            hover=[
                f"<b>{escape_text(launch.api_name[:120])}</b><br>launched {escape_text(launch.kernel_name[:120])}"
                f"<br>correlation id {launch.correlation_id} · "
                f"{units.duration(launch.api_end_ns - launch.api_start_ns)}"
            ],
            showlegend=False,
            line=dict(color=HIGHLIGHT_COLOR, width=2),
        ),
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
                f"{escape_text(launch.api_name[:120])} at {units.instant(launch.api_start_ns)}",
                f"{escape_text(launch.kernel_name[:120])} starts {units.instant(launch.kernel_start_ns)}"
                f" ({units.duration(launch.kernel_start_ns - launch.api_start_ns)} after the call)",
            ],
        ),
    ]
