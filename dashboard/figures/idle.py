"""Idle time by host cause (horizontal bars)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard import units
from dashboard.figures.common import empty_figure, escape_text
from dashboard.figures.theme import DEFAULT_THEME, Theme


def build_idle_causes(
    by_cause: pd.DataFrame,
    *,
    note: str = "",
    top: int = 12,
    title: str = "GPU idle by host cause",
    theme: Theme = DEFAULT_THEME,
) -> go.Figure:
    """Bars of total idle time per cause (frame from analysis.idle.idle_by_cause), largest on top."""
    if by_cause.empty:
        return empty_figure(
            escape_text(note or "No idle gaps above the threshold."), title=title, theme=theme, height=220
        )
    t = by_cause.head(top).iloc[::-1]
    fig = go.Figure(
        go.Bar(
            x=t["idle_ns"] / 1e6,
            y=[escape_text(str(c)[:70]) for c in t["cause"]],
            orientation="h",
            marker_color=theme.idle,
            marker_line=dict(color="#c0605a", width=1),
            customdata=[[g, units.duration(n)] for g, n in zip(t["gaps"], t["idle_ns"])],
            hovertemplate="%{y}<br>%{customdata[1]} in %{customdata[0]} gaps<extra></extra>",
        )
    )
    fig.update_layout(
        **theme.base_layout(
            title=dict(
                text=title + (f"<br><sup>{escape_text(note)}</sup>" if note else ""), x=0.01, font=dict(size=14)
            ),
            height=max(220, 90 + 26 * len(t)),
            margin=dict(l=10, r=10, t=60, b=40),
        )
    )
    fig.update_xaxes(title="idle time (ms)", gridcolor=theme.grid)
    fig.update_yaxes(automargin=True, tickfont=dict(size=11), ticklabelstandoff=6)  # a label does not touch its bar
    return fig
