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


CAPTION_WRAP_CHARS = 110


def add_caption(fig: go.Figure, caption: str, wrap: int = CAPTION_WRAP_CHARS) -> go.Figure:
    """Write ``caption`` as small lines under the plot (wrapped at ``wrap`` characters), so an exported
    image explains itself."""
    import textwrap

    margin_b = (fig.layout.margin.b or 40) if fig.layout.margin else 40
    # Long captions wrap (a plot narrowed by long tick labels would clip one long line at its right edge).
    lines = textwrap.wrap(caption, width=wrap, break_long_words=False, break_on_hyphens=False) or [""]
    fig.add_annotation(text="<br>".join(escape_text(line) for line in lines), xref="paper", yref="paper", x=0, y=0,
                       xanchor="left", yanchor="top", yshift=-(margin_b + 2), showarrow=False,
                       font=dict(size=10, color="#7b8794"), align="left")
    fig.update_layout(margin=dict(b=margin_b + 8 + 13 * len(lines)))
    return fig
