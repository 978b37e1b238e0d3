"""Colours and layout defaults shared by every figure builder (passed explicitly, never global)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import plotly.io as pio

# Every figure is drawn on "plotly_white". Set as the default once: a figure then takes the template
# as it is built, where naming it in each layout re-validated and copied it (40 ms a figure).
pio.templates.default = "plotly_white"

PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac", "#eeca3b")

# NVTX range colours: no red, pink or brown (no hue within 25° of the rose GPU idle, see Theme.idle) and no
# dark green (GPU busy).
NVTX_PALETTE = (
    "#4c78a8",
    "#f58518",
    "#72b7b2",
    "#a0a33b",
    "#eeca3b",
    "#7f6bb0",
    "#86bcf0",
    "#c7a04b",
    "#8c9aa8",
    "#3f8f8f",
)

# One colour per kernel category, the same in every figure (timeline, phase breakdown): deep tones, each at least
# 60 (RGB distance) from every NVTX range colour and from memcpy/memset, so a kernel bar never passes for either;
# plotly writes their bar labels in white.
CATEGORY_COLORS = {
    "GEMM": "#1f4e79",
    "attention": "#b35900",
    "MoE": "#4b3a8c",
    "normalisation": "#006d77",
    "communication": "#5c6b1f",
    "memory": "#7d1f5c",
    "elementwise/activation": "#8a6d00",
    "other": "#4a5560",
}
KERNEL_PALETTE = tuple(CATEGORY_COLORS.values())


def _hashed(name: str, palette: tuple[str, ...]) -> str:
    """A colour of ``palette`` chosen by a hash of ``name``: the same in every view, window and session."""
    return palette[zlib.crc32(str(name).encode("utf-8", "replace")) % len(palette)]


def nvtx_color(name: str) -> str:
    """The colour of an NVTX range name: a hash of the name into ``NVTX_PALETTE``, so one name
    keeps one colour in every view, window and session (never the GPU idle or busy hue)."""
    return _hashed(name, NVTX_PALETTE)


def category_color(category: str) -> str:
    """The colour of a kernel category (``CATEGORY_COLORS``; a category outside it is hashed into
    ``KERNEL_PALETTE``, never an NVTX colour), the same in every figure."""
    return CATEGORY_COLORS.get(category) or _hashed(category, KERNEL_PALETTE)


@dataclass(frozen=True)
class Theme:
    """Figure styling. ``phase_colors`` maps phase name -> colour."""

    font_family: str = "Inter, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif"
    font_size: int = 12
    paper: str = "#ffffff"
    grid: str = "#e6e8eb"
    text: str = "#1f2933"
    busy: str = "#2f6f4f"
    memops: str = "#8e6c8a"
    idle: str = "#f2b8b5"  # rose-red: a hue no NVTX range uses (NVTX_PALETTE)
    busy_min: str = "#8fbfa4"  # the palest a GPU bin with any busy time is drawn (a visible green)
    nvtx: str = "#6b8fb8"
    api: str = "#b8c4d2"  # CUDA API call bars (light slate: dark text inside stays readable)
    mark: str = "#444444"
    overlap: str = "#2f6f4f"
    non_overlap: str = "#c9d3df"
    phase_colors: dict[str, str] = field(
        default_factory=lambda: {
            "prefill": "#d9480f",
            "decode": "#1c7ed6",
            "mixed": "#9c36b5",
            "unsplit": "#868e96",
            "unknown": "#adb5bd",
            "idle": "#ced4da",
            "draft": "#2b8a3e",
            "verify": "#e67700",
            "capture": "#495057",
            "step": "#0b7285",
        }
    )

    # Left margin shared by every figure on the session time axis, so stacked figures line up.
    time_axis_left_margin: int = 210

    def time_axis_layout(self, **extra) -> dict:
        """Layout for a figure whose x axis is the session timeline (x axes of such figures sync)."""
        layout = self.base_layout(
            margin=dict(l=self.time_axis_left_margin, r=20, t=56, b=30),
            legend=dict(
                orientation="h",
                x=0,
                y=1.0,
                xanchor="left",
                yanchor="bottom",
                font=dict(size=11),
                bgcolor="rgba(255,255,255,0)",
            ),
            meta={"time_axis": True},
        )
        layout.update(extra)
        return layout

    def time_xaxis(self, x_range_ns: tuple[int, int] | None = None) -> dict:
        """The x axis of a session-time figure, in seconds with SI prefixes glued to the unit ("2.02s",
        "20ms" rather than "0.02s" (``minexponent=1``), "0.4µs": with plotly's default exponent format and a
        " s" suffix a window near 0 read "0.4µ s"); ``x_range_ns`` (ns) sets its range."""
        xaxis = dict(ticksuffix="s", exponentformat="SI", minexponent=1, showgrid=True, gridcolor=self.grid)
        if x_range_ns is not None:
            xaxis["range"] = [x_range_ns[0] / 1e9, x_range_ns[1] / 1e9]
        return xaxis

    def left_title(self, text: str) -> dict:
        """A figure title on the left, at the top (the mode bar, top right, never covers it)."""
        return dict(
            text=text,
            x=0,
            xref="paper",
            xanchor="left",
            y=1,
            yref="container",
            yanchor="top",
            pad=dict(t=8),
            font=dict(size=14),
        )

    def base_layout(self, **extra) -> dict:
        layout = dict(
            font=dict(family=self.font_family, size=self.font_size, color=self.text),
            paper_bgcolor=self.paper,
            plot_bgcolor=self.paper,
            margin=dict(l=10, r=10, t=40, b=40),
            hoverlabel=dict(font=dict(size=12)),  # nested: a layout built without validation keeps keys as written
        )
        layout.update(extra)
        return layout


DEFAULT_THEME = Theme()
