"""Figures of a two-run comparison (A = baseline, B = candidate): step-time distributions
overlaid per phase, and a diverging bar chart of the largest time deltas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard import units
from dashboard.figures.common import add_caption, empty_figure, escape_text
from dashboard.figures.phases import decade_ticks
from dashboard.figures.theme import DEFAULT_THEME, Theme

A_COLOR = "#868e96"  # baseline: neutral grey
B_COLOR = "#1c7ed6"  # candidate: blue
SLOWER = "#e03131"  # more time in the candidate
FASTER = "#2f9e44"  # less time in the candidate
PHASES = ("prefill", "decode", "mixed", "unsplit", "unknown")
_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))


def time_unit(max_abs_ns: float) -> tuple[float, str]:
    """``(ns per unit, unit name)`` that shows ``max_abs_ns`` as a number of at least 1 (s, ms, µs or ns).

    Example:
        >>> time_unit(2.5e6), time_unit(300)
        ((1000000.0, 'ms'), (1.0, 'ns'))
    """
    for scale, name in _UNITS:
        if abs(max_abs_ns) >= scale:
            return scale, name
    return 1.0, "ns"


def build_step_time_overlay(
    a_dispatches: pd.DataFrame,
    b_dispatches: pd.DataFrame,
    *,
    a_label: str = "A",
    b_label: str = "B",
    title: str = "Step time per phase: baseline vs candidate",
    theme: Theme = DEFAULT_THEME,
) -> go.Figure:
    """Step-time distributions of A and B side by side per phase (grouped box plots, ms, log axis).

    Args:
        a_dispatches, b_dispatches: DISPATCHES frames with a ``phase`` column (duration_ns = step time).
        a_label, b_label: names of the runs for the legend.

    Returns:
        Figure with two box traces (A, then B) whose x is the phase, in prefill/decode/... order,
        with a caption; an explanatory empty figure when neither run has dispatches.
    """
    if a_dispatches.empty and b_dispatches.empty:
        return empty_figure(
            "Neither run has dispatch marks: no step times to compare.", title=title, theme=theme, height=200
        )
    present = [p for p in PHASES if (a_dispatches["phase"] == p).any() or (b_dispatches["phase"] == p).any()]
    fig = go.Figure()
    longest = max([int(d["duration_ns"].max()) for d in (a_dispatches, b_dispatches) if len(d)] or [0])
    scale, unit = time_unit(longest)
    for d, label, color in ((a_dispatches, a_label, A_COLOR), (b_dispatches, b_label, B_COLOR)):
        sel = d[d["phase"].isin(present)]
        fig.add_trace(
            go.Box(
                name=label,
                x=sel["phase"].astype(str).to_numpy(),
                y=sel["duration_ns"].to_numpy(np.int64) / scale,
                marker_color=color,
                boxpoints="outliers",
                boxmean=True,
                hovertemplate=f"{escape_text(label)}<br>%{{x}}: %{{y:.4g}} {unit}<extra></extra>",
            )
        )
    ticks = decade_ticks(
        np.concatenate(
            [
                d.loc[d["phase"].isin(present), "duration_ns"].to_numpy(np.int64) / scale
                for d in (a_dispatches, b_dispatches)
            ]
        )
    )
    fig.update_layout(
        **theme.base_layout(
            boxmode="group",
            height=360,
            title=dict(text=title, x=0.01, font=dict(size=14)),
            xaxis=dict(categoryorder="array", categoryarray=present, title_text="phase"),
            # a labelled tick at every decade, every series inside the plot (figures.phases.decade_ticks)
            yaxis=dict(
                title_text=f"step time ({unit}, log)",
                type="log",
                tickmode="array",
                tickvals=ticks[0],
                ticktext=ticks[1],
                range=ticks[2],
            ),
            legend=dict(orientation="h", x=0, y=1.0, xanchor="left", yanchor="bottom"),
            margin=dict(l=60, r=10, t=70, b=50),
        )
    )
    n = ", ".join(
        f"{p}: {int((a_dispatches['phase'] == p).sum())} vs {int((b_dispatches['phase'] == p).sum())}" for p in present
    )
    return add_caption(
        fig, f"Step = dispatch mark to next mark; dashed line = mean. Dispatches {a_label} vs {b_label}: {n}."
    )


def build_delta_bars(
    delta: pd.DataFrame,
    *,
    what: str = "kernel",
    top: int = 15,
    a_label: str = "A",
    b_label: str = "B",
    title: str | None = None,
    theme: Theme = DEFAULT_THEME,
) -> go.Figure:
    """Diverging horizontal bars of the ``top`` largest total-time changes (B - A; axis in s/ms/µs/ns).

    Args:
        delta: a NAME_DELTA frame (name, a/b/delta counts and totals), sorted by |delta_total_ns|.
        what: what a name is ("kernel", "category", ...), for the title and caption.

    Returns:
        Figure with one bar trace; red bars = more time in B (slower), green = less; the largest
        change on top; an annotation right of each bar gives the change, its percentage and the
        per-call (mean) change.
        Hover: A and B totals, counts and means.
    """
    title = title or f"Largest {what} time changes ({b_label} − {a_label})"
    d = delta.head(top)
    d = d[d["delta_total_ns"] != 0]
    if d.empty:
        return empty_figure(f"No {what} time changed.", title=title, theme=theme, height=200)
    d = d.iloc[::-1]  # plotly draws the first category at the bottom
    biggest = float(d["delta_total_ns"].abs().max())
    scale, unit = time_unit(biggest)
    names = [n if len(n) <= 48 else n[:47] + "…" for n in d["name"].astype(str)]
    custom = np.column_stack(
        [
            d["name"].astype(str).map(escape_text),
            [units.duration(v) for v in d["a_total_ns"]],
            [units.duration(v) for v in d["b_total_ns"]],
            d["a_count"].astype(str),
            d["b_count"].astype(str),
            [units.duration(v) for v in d["a_mean_ns"]],
            [units.duration(v) for v in d["b_mean_ns"]],
            [("new" if a == 0 else f"{p:+.1f} %") for a, p in zip(d["a_total_ns"], d["delta_total_pct"])],
        ]
    )
    labels = [
        f"{'+' if v > 0 else '-'}{units.duration(abs(v))}  ({p}{'' if m != m else f'; per call {m:+.1f} %'})"
        for v, p, m in zip(d["delta_total_ns"], custom[:, 7], d["delta_mean_pct"])
    ]
    fig = go.Figure(
        go.Bar(
            x=d["delta_total_ns"].to_numpy(np.int64) / scale,
            y=list(range(len(d))),
            orientation="h",
            marker_color=[SLOWER if v > 0 else FASTER for v in d["delta_total_ns"]],
            customdata=custom,
            hovertemplate="%{customdata[0]}<br>total: %{customdata[1]} → %{customdata[2]} (%{customdata[7]})"
            "<br>count: %{customdata[3]} → %{customdata[4]}<br>mean: %{customdata[5]} → "
            "%{customdata[6]}<extra></extra>",
        )
    )
    # The change, in words, in a column right of the plot (never over the bars or the names).
    for i, text in enumerate(labels):
        fig.add_annotation(
            x=1.01,
            xref="paper",
            xanchor="left",
            y=i,
            yref="y",
            text=escape_text(text),
            showarrow=False,
            font=dict(size=11, color="#3e4c59"),
            align="left",
        )
    fig.update_layout(
        **theme.base_layout(
            height=max(220, 90 + 26 * len(d)),
            title=dict(text=title, x=0.01, font=dict(size=14)),
            xaxis=dict(
                title_text=f"total time change ({unit}, {b_label} − {a_label})",
                zeroline=True,
                zerolinewidth=2,
                zerolinecolor="#52606d",
            ),
            yaxis=dict(
                automargin=True,
                tickmode="array",
                tickvals=list(range(len(d))),
                ticktext=[escape_text(n) for n in names],
                range=[-0.6, len(d) - 0.4],
            ),
            margin=dict(l=10, r=10 + 6 * max(len(t) for t in labels), t=50, b=50),
            showlegend=False,
        )
    )
    return add_caption(
        fig, f"Red: more time in {b_label} (slower); green: less. Summed over all devices and streams.", wrap=48
    )  # the plot is narrow beside long names and value labels
