"""NVTX ranges against GPU busy for a summary input (per-range totals, no intervals to draw a timeline of)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard.figures.common import empty_figure, escape_text
from dashboard.figures.lanes import LANE_LABEL_GAP_PX
from dashboard.figures.theme import DEFAULT_THEME, NVTX_PALETTE, Theme


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
