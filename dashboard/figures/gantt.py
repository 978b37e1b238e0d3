"""Dispatch Gantt: one bar per dispatch from its mark to the next, one row per phase."""

from __future__ import annotations


import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.figures.theme import DEFAULT_THEME, Theme
from dashboard.figures.common import empty_figure, escape_text, fmt_ns, legend_rows, s_from_ns


def build_dispatch_gantt(dispatches: pd.DataFrame, phases: pd.Series, *, x_range_ns: tuple[int, int] | None = None,
                         title: str = "Dispatches", prefix: str = "CG_DISPATCH", uirevision: str = "",
                         in_view: dict[str, int] | None = None, theme: Theme = DEFAULT_THEME) -> go.Figure:
    """Build the dispatch Gantt.

    Args:
        dispatches: DISPATCHES frame (analysis.phases.build_dispatches).
        phases: phase name per dispatch, aligned with ``dispatches``.
        x_range_ns: initial x window (ns); shared with the GPU timeline so both line up.
        prefix: the dispatch prefix, named in the empty-state message.
        in_view: for a zoomed view, the number of dispatches of each phase that overlap the window;
            the legend then reads "decode (12 in view of 126)" (else "decode (126)", the whole trace).

    Returns:
        Figure with one horizontal bar trace per phase present (legend entries named after the
        phases), x in seconds on the session timeline.
    """
    if dispatches.empty:
        return empty_figure(
            f"No dispatch marks found with prefix “{escape_text(prefix)}”<br>"
            "(a dispatch starts at each NVTX mark or range whose name starts with the prefix).",
            title=title, theme=theme, height=150)  # a message, not a chart: no tall empty box
    traces = []  # one figure built from them, without plotly's validation of values built here (a zoom redraws it)
    phase_names = [p for p in ("prefill", "decode", "mixed", "unsplit", "unknown") if (phases == p).any()]
    for phase in phase_names:
        sel = dispatches[(phases == phase).to_numpy()]
        tokens = sel["tokens"].astype(object).where(sel["tokens"].notna(), "?")
        padded = sel["padded"].astype(object).where(sel["padded"].notna(), "?")
        counts = sel["dispatches"] if "dispatches" in sel else pd.Series(1, index=sel.index)
        hover = [
            (f"<b>{phase}</b> #{i}" if n == 1 else f"<b>{phase}</b>: {n} dispatches from #{i}")
            + f"<br>tokens {t} · padded {p} · mode {escape_text(str(m) or '?')}"
            f"<br>start {s / 1e9:.6f} s · duration {fmt_ns(d)}{' (estimated: last dispatch)' if est else ''}"
            for i, n, t, p, m, s, d, est in zip(sel["index"], counts, tokens, padded, sel["mode"], sel["start_ns"],
                                                 sel["duration_ns"], sel["end_estimated"])
        ]
        traces.append(go.Bar(
            _validate=False,
            name=f"{phase} ({int(counts.sum()):,})" if in_view is None
            else f"{phase} ({in_view.get(phase, 0):,} in view of {int(counts.sum()):,})",
            legendgroup=phase,
            orientation="h",
            base=s_from_ns(sel["start_ns"]),
            x=sel["duration_ns"].to_numpy(np.float64) / 1e9,
            y=[phase] * len(sel),
            marker=dict(color=theme.phase_colors.get(phase, "#888"), line=dict(width=0.5, color="#ffffff")),
            hovertext=hover,
            hoverinfo="text",
            customdata=sel["index"].to_numpy(),
        ))
    rows = legend_rows([t.name for t in traces], font_px=11, width_px=1300)
    top = 34 + 22 * rows
    xaxis = theme.time_xaxis(x_range_ns)
    layout = theme.time_axis_layout(
        title=theme.left_title(title),
        barmode="overlay",
        height=top + 40 + 45 * len(phase_names),
        margin=dict(l=theme.time_axis_left_margin, r=20, t=top, b=40),
        uirevision=uirevision,
        showlegend=True,
        xaxis=xaxis,
        yaxis=dict(categoryorder="array", categoryarray=list(reversed(phase_names)), automargin=False),
    )
    fig = go.Figure(data=traces, layout=layout, _validate=False)  # one step, as the timeline (a zoom redraws it)
    return fig
