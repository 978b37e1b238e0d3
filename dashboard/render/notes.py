"""Notes as the page, the report and the CLI write them (the flags on figures: ``figures.notes``)."""

from __future__ import annotations

import html

from dashboard import units
from dashboard.data.trace import LoadedTrace
from dashboard.render.base import activity_extent, dispatches_for
from dashboard.state import ViewState


def note_range_text(t0_ns: int, t1_ns: int) -> str:
    """A note's time as the page writes times: ``1.234567 s`` for a point, a window as captions write it
    (``1.000000–1.020000 s``, or integer ns under 10 µs) for a range."""
    if t0_ns == t1_ns:
        return units.instant(t0_ns)
    return units.window((t0_ns, t1_ns))


def trace_extent(trace: LoadedTrace | None, state: ViewState) -> tuple[int, int] | None:
    """The whole trace's activity (``render.base.activity_extent``), where "Add note" pins a note when there
    is no clicked point, mark or window; None without a trace or activity."""
    if trace is None or trace.bundle is None:
        return None
    return activity_extent(trace, dispatches_for(trace, state.prefix))


def notes_html(notes) -> str:
    """The report's "Notes" section (an empty string without notes): each note's time and text, as text."""
    if not notes:
        return ""
    items = "".join(
        f"<li><span class='t'>{html.escape(note_range_text(a, b))}</span> {html.escape(text)}</li>"
        for a, b, text in notes
    )
    return f"<h2>Notes</h2><ul class='notes'>{items}</ul>"


def notes_text(notes) -> list[str]:
    """One line per note for a terminal (``tracedash export/report``): ``note 1: 1.234567 s  text``."""
    return [f"note {i}: {note_range_text(a, b)}  {text}" for i, (a, b, text) in enumerate(notes, 1)]
