"""Note flags on a figure of the session time axis (the timeline, the Gantt): a vertical line for a point
note, a shaded band for a range, each with its text as a label at the top of the plot."""

from __future__ import annotations

import plotly.graph_objects as go

from dashboard.figures.common import CHAR_EM, escape_text
from dashboard.figures.lanes import PLOT_WIDTH_PX

NOTE_COLOR = "#6d28d9"  # violet: apart from the mark's amber outline, busy green, idle rose and NVTX hues
NOTE_FILL = "rgba(109,40,217,0.16)"
LABEL_COLOR = "#4c1d95"  # darker than every lane colour under it (NVTX purple #7f6bb0 included); white text
FLAG_CHARS = 40  # a flag shows the first 40 characters of its text (the Notes panel shows all of it)
FLAG_FONT_PX = 11
FLAG_ROW_PX = 24  # one row of labels (at the report layout's 14 px too); labels that would overlap go one row lower
FIT_FONT_PX = 14  # label widths are estimated at the exports' 14 px text: apart on screen, apart in a PNG
FLAG_ROWS = 4


def flag_text(text: str) -> str:
    """A note's text as its flag shows it: at most ``FLAG_CHARS`` characters ("…" when cut), as text
    (escaped for Plotly's HTML-like labels: a ``<b>`` or ``<a href>`` in a note is shown, never applied)."""
    short = text if len(text) <= FLAG_CHARS else text[: FLAG_CHARS - 1] + "…"
    return escape_text(short)


def note_flags(notes, x_range_ns: tuple[int, int] | None = None, first_row: int = 0) -> tuple[list, list]:
    """``(shapes, annotations)`` of the flags of ``notes`` (``(t0_ns, t1_ns, text)``, x in seconds): for note
    ``i`` (from 1) a point gets a line named ``note i``, a range a band under the traces (``note i``) and its
    dotted outline over them (``note i edges``); each note one label (annotation ``note i``).

    A label sits at the note's start, or at the window's left edge for a band that begins before it (one that
    would run past the window's right edge ends at its note instead);
    labels that would overlap (widths estimated at ``CHAR_EM`` per character, against ``x_range_ns`` on
    ``PLOT_WIDTH_PX``) go one row lower, up to ``FLAG_ROWS`` rows, from ``first_row`` down.
    """
    shapes: list[dict] = []
    annotations: list[dict] = []
    lo, hi = x_range_ns if x_range_ns is not None else (None, None)
    ns_per_px = (hi - lo) / PLOT_WIDTH_PX if lo is not None and hi > lo else None
    row_end = [float("-inf")] * FLAG_ROWS  # the right end (ns) of the last label in each row
    for i, (a, b, text) in enumerate(notes):
        name = f"note {i + 1}"
        if a == b:
            shapes.append(
                dict(
                    type="line",
                    name=name,
                    xref="x",
                    yref="paper",
                    x0=a / 1e9,
                    x1=a / 1e9,
                    y0=0,
                    y1=1,
                    line=dict(color=NOTE_COLOR, width=2),
                    layer="above",
                )
            )
        else:  # the band under the lanes (tinting the space between them), its edges over them
            box = dict(type="rect", xref="x", yref="paper", x0=a / 1e9, x1=b / 1e9, y0=0, y1=1)
            shapes.append(dict(box, name=name, fillcolor=NOTE_FILL, line=dict(width=0), layer="below"))
            shapes.append(
                dict(
                    box,
                    name=f"{name} edges",
                    fillcolor="rgba(0,0,0,0)",
                    line=dict(color=NOTE_COLOR, width=1.5, dash="dot"),
                    layer="above",
                )
            )
        at = max(a, lo) if lo is not None and a < lo <= b else a
        label = flag_text(text)
        row = i % FLAG_ROWS
        right = False  # a label near the right edge ends at its note instead of running out of the plot
        if ns_per_px is not None:
            width_ns = (len(text[:FLAG_CHARS]) * CHAR_EM * FIT_FONT_PX + 10) * ns_per_px
            right = at + width_ns > hi and at - width_ns >= lo
            left_ns = at - width_ns if right else at
            row = next(
                (r for r in range(FLAG_ROWS) if row_end[r] < left_ns), min(range(FLAG_ROWS), key=row_end.__getitem__)
            )
            row_end[row] = at if right else at + width_ns
        annotations.append(
            dict(
                name=name,
                text=label,
                hovertext=escape_text(text),
                x=at / 1e9,
                xref="x",
                xanchor="right" if right else "left",
                y=1,
                yref="paper",
                yanchor="top",
                yshift=-FLAG_ROW_PX * (first_row + row) - 2,
                showarrow=False,
                bgcolor=LABEL_COLOR,
                bordercolor="#ffffff",
                borderwidth=1,
                borderpad=2,
                font=dict(size=FLAG_FONT_PX, color="#ffffff"),
                align="left",
            )
        )
    return shapes, annotations


def _on_time_axis(layout) -> bool:
    if isinstance(layout, dict):
        return (layout.get("xaxis") or {}).get("ticksuffix") == "s"
    return layout.xaxis.ticksuffix == "s"


def add_note_flags(fig, notes, x_range_ns: tuple[int, int] | None = None):
    """``fig`` (a figure dict or a ``go.Figure``, changed in place and returned) with the flags of ``notes``.

    Only a figure that draws data on the session time axis (``Theme.time_xaxis``) gets them: an empty state
    or a figure of another axis (a summary's NVTX bars) is returned as it is. Labels start one row lower
    when the figure labels a marked row at the top (``highlight``)."""
    if not notes:
        return fig
    if isinstance(fig, dict):
        layout = fig.setdefault("layout", {})
        if not fig.get("data") or not _on_time_axis(layout):
            return fig
        marked = any(a.get("name") == "highlight" for a in layout.get("annotations") or [])
        shapes, annotations = note_flags(notes, x_range_ns, first_row=int(marked))
        layout["shapes"] = [*(layout.get("shapes") or []), *shapes]
        layout["annotations"] = [*(layout.get("annotations") or []), *annotations]
        return fig
    if not isinstance(fig, go.Figure) or not fig.data or not _on_time_axis(fig.layout):
        return fig
    marked = any(a.name == "highlight" for a in fig.layout.annotations)
    shapes, annotations = note_flags(notes, x_range_ns, first_row=int(marked))
    fig.update_layout(shapes=[*fig.layout.shapes, *shapes], annotations=[*fig.layout.annotations, *annotations])
    return fig
