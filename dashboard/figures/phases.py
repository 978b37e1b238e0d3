"""Phase analysis figures: kernel-category breakdown per phase and step-time distributions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures.common import empty_figure, escape_text
from dashboard.figures.theme import DEFAULT_THEME, Theme, category_color

# Phases in the order every phase figure draws them: the seed's split, then the step sources' own phases.
PHASE_ORDER = ("prefill", "decode", "mixed", "unsplit", "unknown", "idle", "draft", "verify", "step", "capture")
CATEGORY_ORDER = (
    "GEMM",
    "attention",
    "MoE",
    "normalisation",
    "communication",
    "memory",
    "elementwise/activation",
    "other",
)


def decade_ticks(values_ms) -> tuple[list[float], list[str], list[float]]:
    """Log-axis ticks for step times (ms): one labelled tick at every decade from the one at or
    below the smallest value to the one at or above the largest (at least two decades), and a
    range in log10 units padded by 0.05 decade so no series touches the plot's edge.

    Returns:
        ``(tickvals, ticktext, range)``, e.g. ``([1, 10, 100], ["1", "10", "100"], [-0.05, 2.05])``.
    """
    v = np.asarray(values_ms, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size == 0:
        lo, hi = 0, 1
    else:
        lo, hi = int(np.floor(np.log10(v.min()))), int(np.ceil(np.log10(v.max())))
        hi = max(hi, lo + 1)
    vals = [10.0**k for k in range(lo, hi + 1)]
    text = [f"{x:g}" if 1e-3 <= x < 1e6 else f"1e{k}" for k, x in zip(range(lo, hi + 1), vals)]
    return vals, text, [lo - 0.05, hi + 0.05]


def build_phase_analysis(
    dispatches: pd.DataFrame,
    phases: pd.Series,
    category_time: pd.DataFrame | None,
    *,
    title: str = "Where step time goes",
    theme: Theme = DEFAULT_THEME,
    empty_text: str = "No dispatches: nothing to split into phases.",
) -> go.Figure:
    """Two panels: the step-time distribution per phase (box plot, ms, log axis with a tick at every
    decade) on the left, and kernel time per category, phases side by side (stacked, % of the
    phase's attributed kernel time) on the right, with the category legend next to it.

    Args:
        dispatches: DISPATCHES frame; phases: phase per dispatch (aligned).
        category_time: frame (phase, category, kernel_sum_ns, kernels) or None without kernels.

        empty_text: the figure's one line when ``dispatches`` is empty.

    Returns:
        Figure with one box trace per phase and one bar trace per category (legend = categories,
        coloured by ``theme.category_color``).
    """
    if dispatches.empty:
        return empty_figure(empty_text, title=title, theme=theme, height=200)
    has_categories = category_time is not None and not category_time.empty
    fig = make_subplots(
        rows=1,
        cols=2 if has_categories else 1,
        column_widths=[0.4, 0.6] if has_categories else None,
        subplot_titles=["Step time per phase"]
        + (["Kernel time by category (attributed by correlation)"] if has_categories else []),
        horizontal_spacing=0.1,
    )
    present = [p for p in PHASE_ORDER if (phases == p).any()]
    all_ms = []
    for phase in present:
        dur_ms = dispatches.loc[(phases == phase).to_numpy(), "duration_ns"].to_numpy() / 1e6
        all_ms.append(dur_ms)
        fig.add_trace(
            go.Box(
                name=phase,
                y=dur_ms,
                marker_color=theme.phase_colors.get(phase, "#888"),
                boxpoints="outliers",
                showlegend=False,
                hovertemplate=f"{phase}: %{{y:.3f}} ms<extra></extra>",
            ),
            row=1,
            col=1,
        )
    vals, text, rng = decade_ticks(np.concatenate(all_ms) if all_ms else [])
    fig.update_yaxes(
        title_text="step time (ms, log)",
        type="log",
        tickmode="array",
        tickvals=vals,
        ticktext=text,
        range=rng,
        row=1,
        col=1,
    )
    if has_categories:
        totals = category_time.groupby("phase")["kernel_sum_ns"].sum()
        cats = [c for c in CATEGORY_ORDER if c in set(category_time["category"])]
        cats += sorted(set(category_time["category"]) - set(cats))
        cphases = [p for p in present if p in totals.index]
        for cat in cats:
            sel = category_time[category_time["category"] == cat].set_index("phase")
            # a phase without kernel time has no shares (no bar, never a drawn 0 %)
            share = [100.0 * sel["kernel_sum_ns"].get(p, 0) / totals[p] if totals[p] else None for p in cphases]
            secs = [sel["kernel_sum_ns"].get(p, 0) / 1e9 for p in cphases]
            fig.add_trace(
                go.Bar(
                    name=cat,
                    x=cphases,
                    y=share,
                    marker_color=category_color(cat),
                    legendgroup=cat,
                    customdata=np.array(secs),
                    hovertemplate=f"{escape_text(cat)}<br>%{{x}}: %{{y:.1f}} %% of kernel time"
                    "<br>%{customdata:.4f} s<extra></extra>",
                ),
                row=1,
                col=2,
            )
        fig.update_yaxes(title_text="% of the phase's kernel time", range=[0, 100], row=1, col=2)
    fig.update_layout(
        **theme.base_layout(
            barmode="stack",
            height=360,
            title=dict(text=title, x=0.01, font=dict(size=14)),
            # The category legend belongs to the stacked bars, the right-hand panel: it sits beside it.
            # Listed top to bottom in the order the categories stack (the first trace is the bottom segment).
            legend=dict(
                orientation="v",
                x=1.02,
                xanchor="left",
                y=1,
                yanchor="top",
                font=dict(size=11),
                traceorder="reversed",
                title=dict(text="kernel category"),
            ),
            showlegend=has_categories,
            margin=dict(l=70, r=10, t=70, b=40),
        )
    )
    return fig
