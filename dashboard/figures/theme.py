"""Colours and layout defaults shared by every figure builder (passed explicitly, never global)."""

from __future__ import annotations

from dataclasses import dataclass, field

PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac", "#eeca3b")


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
    idle: str = "#f2b8b5"
    nvtx: str = "#6b8fb8"
    mark: str = "#444444"
    overlap: str = "#2f6f4f"
    non_overlap: str = "#c9d3df"
    phase_colors: dict[str, str] = field(default_factory=lambda: {
        "prefill": "#d9480f", "decode": "#1c7ed6", "mixed": "#9c36b5", "unsplit": "#868e96", "unknown": "#adb5bd"})

    def color_for(self, key: str, keys: list[str]) -> str:
        """Stable colour for ``key`` among the sorted ``keys``."""
        ordered = sorted(set(keys))
        return PALETTE[ordered.index(key) % len(PALETTE)] if key in ordered else PALETTE[0]

    # Left margin shared by every figure on the session time axis, so stacked figures line up.
    time_axis_left_margin: int = 210

    def time_axis_layout(self, **extra) -> dict:
        """Layout for a figure whose x axis is the session timeline (x axes of such figures sync)."""
        layout = self.base_layout(
            margin=dict(l=self.time_axis_left_margin, r=20, t=56, b=30),
            legend=dict(orientation="h", x=0, y=1.0, xanchor="left", yanchor="bottom", font=dict(size=11),
                        bgcolor="rgba(255,255,255,0)"),
            meta={"time_axis": True},
        )
        layout.update(extra)
        return layout

    def base_layout(self, **extra) -> dict:
        layout = dict(
            template="plotly_white",
            font=dict(family=self.font_family, size=self.font_size, color=self.text),
            paper_bgcolor=self.paper,
            plot_bgcolor=self.paper,
            margin=dict(l=10, r=10, t=40, b=40),
            hoverlabel=dict(font_size=12),
        )
        layout.update(extra)
        return layout


DEFAULT_THEME = Theme()
