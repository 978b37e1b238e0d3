"""Small helpers shared by figure builders (unit conversion, empty states)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.theme import DEFAULT_THEME, Theme


def escape_text(value) -> str:
    """``value`` as text inside Plotly's HTML-like strings (titles, hovers, tick labels, annotations).

    ``<``, ``>`` and ``&`` become entities, so a name such as ``<script>`` shows literally and no tag
    can form. Quotes stay as they are: Plotly does not decode ``&quot;`` and would show it verbatim.
    """
    import html

    return html.escape(str(value), quote=False)


def s_from_ns(values) -> np.ndarray:
    """int ns -> float64 seconds (the figure layer is the only place times become floats)."""
    return np.asarray(values, dtype=np.int64).astype(np.float64) / 1e9


def fmt_ns(ns: float) -> str:
    """Human duration: '812 ns', '4.21 µs', '3.507 ms', '1.234 s'."""
    ns = float(ns)
    if abs(ns) < 1e3:
        return f"{ns:.0f} ns"
    if abs(ns) < 1e6:
        return f"{ns / 1e3:.2f} µs"
    if abs(ns) < 1e9:
        return f"{ns / 1e6:.3f} ms"
    return f"{ns / 1e9:.3f} s"


def empty_figure(message: str, *, title: str = "", theme: Theme = DEFAULT_THEME, height: int = 240) -> go.Figure:
    """A figure with no data and a centred explanation (never a blank box)."""
    fig = go.Figure()
    fig.update_layout(**theme.base_layout(
        title=dict(text=title, x=0.01, font=dict(size=14)), height=height,
        xaxis=dict(visible=False), yaxis=dict(visible=False),
        annotations=[dict(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                          font=dict(size=13, color="#52606d"), align="center")],
    ))
    return fig


def add_caption(fig: go.Figure, caption: str) -> go.Figure:
    """Write ``caption`` as a small line under the plot, so an exported image explains itself."""
    margin_b = (fig.layout.margin.b or 40) if fig.layout.margin else 40
    fig.add_annotation(text=escape_text(caption), xref="paper", yref="paper", x=0, y=0, xanchor="left",
                       yanchor="top", yshift=-(margin_b + 2), showarrow=False, font=dict(size=10, color="#7b8794"),
                       align="left")
    fig.update_layout(margin=dict(b=margin_b + 20))
    return fig
