"""Phase analysis figures: kernel-category breakdown per phase and step-time distributions."""

from __future__ import annotations


import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures.common import empty_figure, escape_text
from dashboard.figures.theme import DEFAULT_THEME, PALETTE, Theme

CATEGORY_ORDER = ("GEMM", "attention", "MoE", "normalisation", "communication", "memory",
                  "elementwise/activation", "other")


def build_phase_analysis(dispatches: pd.DataFrame, phases: pd.Series, category_time: pd.DataFrame | None, *,
                         title: str = "Where step time goes", theme: Theme = DEFAULT_THEME) -> go.Figure:
    """Two panels: kernel time per category, prefill vs decode side by side (stacked, % of the
    phase's attributed kernel time), and the step-time distribution per phase (box plot, ms).

    Args:
        dispatches: DISPATCHES frame; phases: phase per dispatch (aligned).
        category_time: frame (phase, category, kernel_sum_ns, kernels) or None without kernels.

    Returns:
        Figure with one bar trace per category (legend = categories) and one box trace per phase.
    """
    if dispatches.empty:
        return empty_figure("No dispatches: nothing to split into phases.", title=title, theme=theme, height=200)
    has_categories = category_time is not None and not category_time.empty
    fig = make_subplots(rows=1, cols=2 if has_categories else 1, column_widths=[0.55, 0.45] if has_categories else None,
                        subplot_titles=(["Kernel time by category (attributed by correlation)"] if has_categories
                                        else []) + ["Step time per phase"], horizontal_spacing=0.12)
    present = [p for p in ("prefill", "decode", "mixed", "unsplit", "unknown") if (phases == p).any()]
    box_col = 2 if has_categories else 1
    if has_categories:
        totals = category_time.groupby("phase")["kernel_sum_ns"].sum()
        cats = [c for c in CATEGORY_ORDER if c in set(category_time["category"])]
        cats += sorted(set(category_time["category"]) - set(cats))
        cphases = [p for p in present if p in totals.index]
        for i, cat in enumerate(cats):
            sel = category_time[category_time["category"] == cat].set_index("phase")
            share = [100.0 * sel["kernel_sum_ns"].get(p, 0) / totals[p] if totals[p] else 0.0 for p in cphases]
            secs = [sel["kernel_sum_ns"].get(p, 0) / 1e9 for p in cphases]
            fig.add_trace(go.Bar(
                name=cat, x=cphases, y=share, marker_color=PALETTE[i % len(PALETTE)], legendgroup=cat,
                customdata=np.array(secs), hovertemplate=f"{escape_text(cat)}<br>%{{x}}: %{{y:.1f}} %% of kernel time"
                                                         "<br>%{customdata:.4f} s<extra></extra>",
            ), row=1, col=1)
        fig.update_yaxes(title_text="% of the phase's kernel time", range=[0, 100], row=1, col=1)
    for phase in present:
        dur_ms = dispatches.loc[(phases == phase).to_numpy(), "duration_ns"].to_numpy() / 1e6
        fig.add_trace(go.Box(
            name=phase, y=dur_ms, marker_color=theme.phase_colors.get(phase, "#888"), boxpoints="outliers",
            showlegend=False, hovertemplate=f"{phase}: %{{y:.3f}} ms<extra></extra>",
        ), row=1, col=box_col)
    fig.update_yaxes(title_text="step time (ms, log)", type="log", dtick=1, row=1, col=box_col)
    fig.update_layout(**theme.base_layout(
        barmode="stack", height=340, title=dict(text=title, x=0.01, font=dict(size=14)),
        legend=dict(orientation="v", x=1.02, y=1, font=dict(size=11)),
        margin=dict(l=60, r=10, t=70, b=40),
    ))
    return fig
