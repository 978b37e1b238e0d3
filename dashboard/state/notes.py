"""Notes: short texts pinned to a time or an interval, carried in the link (``note=T0_NS-T1_NS:TEXT`` or
``note=T_NS:TEXT``, repeatable). Stdlib only: the parser, the formatter, the link's bounds and the pure
transitions the sync callback calls (``apply_add_note``, ``apply_remove_note``, ``apply_note_zoom``).

Bounds keep every link far below a server's request-line limit (gunicorn: 4,094 bytes): each text is 1 to
200 printable characters on one line, at most 20 notes, and at most 2,000 characters for the whole encoded
notes part of the query. A link past a bound keeps the notes that fit (in canonical order) and says which
were left out and why; the page refuses a note past a bound with a notice, so it never writes such a link.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable
from urllib.parse import quote_plus

from dashboard.state.schema import _INT, context_start

MAX_NOTES = 20
MAX_NOTE_TEXT = 200
MAX_NOTES_CHARS = 2000  # the encoded ``note=…&note=…`` part of the query
POINT_PAD_NS = 1000  # a point note zooms to ±1 µs around it
MIN_PAD_NS = 1000  # a range note zooms to its width of context on each side, at least 1 µs
_TIME_LIMIT = 2**62
_BAD_SPAN = "not T0_NS-T1_NS:TEXT or T_NS:TEXT with integer ns times, 0 ≤ T0 ≤ T1 < 2^62"

Note = tuple[int, int, str]


def canonical_notes(notes) -> tuple[Note, ...]:
    """Notes as the state keeps them: ``(t0_ns, t1_ns, text)`` tuples, sorted, each once (equal views, equal
    links)."""
    return tuple(sorted({(int(a), int(b), str(t)) for a, b, t in notes}))


def format_note(note: Note) -> str:
    """The link value of a note (before percent-encoding): ``T0-T1:TEXT``, or ``T:TEXT`` for a point."""
    a, b, text = note
    return f"{a}:{text}" if a == b else f"{a}-{b}:{text}"


def _text_problem(text: str) -> str | None:
    if not text:
        return "a note needs some text"
    if len(text) > MAX_NOTE_TEXT:
        return f"a note's text is 1 to {MAX_NOTE_TEXT} characters (this one has {len(text):,})"
    if not text.isprintable():
        return "a note's text is printable text on one line (no line breaks or control characters)"
    return None


def parse_note(raw: str) -> Note:
    """One ``note`` value of a link as ``(t0_ns, t1_ns, text)``; surrounding spaces of the text dropped.

    Raises:
        ValueError: with the reason, which the link's warning quotes.
    """
    span, sep, text = str(raw).partition(":")
    a, dash, b = span.partition("-")
    b = b if dash else a
    if not (sep and _INT.fullmatch(a) and _INT.fullmatch(b)) or a.startswith("-") or b.startswith("-"):
        raise ValueError(_BAD_SPAN)
    lo, hi = int(a), int(b)
    if not 0 <= lo <= hi < _TIME_LIMIT:
        raise ValueError(_BAD_SPAN)
    text = text.strip()
    if (why := _text_problem(text)) is not None:
        raise ValueError(why)
    return lo, hi, text


def note_query_chars(note: Note) -> int:
    """Characters ``note=…`` of this note takes in a link (percent-encoded as ``to_query`` writes it)."""
    return len("note=") + len(quote_plus(format_note(note), safe=",:"))


def notes_query_chars(notes) -> int:
    """Characters of the whole encoded notes part of a link (``note=…&note=…``)."""
    notes = list(notes)
    return sum(note_query_chars(n) for n in notes) + max(len(notes) - 1, 0)


def _shown(raw: str) -> str:
    return raw if len(raw) <= 40 else raw[:37] + "..."


def _bounded(notes: tuple[Note, ...]) -> tuple[tuple[Note, ...], str | None]:
    """The longest run of ``notes`` (canonical order) within the count and size bounds, and the warning
    about the rest (None when all fit)."""
    chars = -1
    for i, n in enumerate(notes):
        if i == MAX_NOTES:
            why = f"at most {MAX_NOTES} notes in a link"
        elif chars + 1 + note_query_chars(n) > MAX_NOTES_CHARS:
            why = f"a link holds at most {MAX_NOTES_CHARS:,} characters of notes"
        else:
            chars += 1 + note_query_chars(n)
            continue
        left = len(notes) - i
        what = "1 note" if left == 1 else f"{left} notes"
        return notes[:i], f"Ignored {what} of the link from note={_shown(format_note(n))!r} on: {why}."
    return notes, None


def notes_from_link(raws) -> tuple[tuple[Note, ...], list[str]]:
    """The notes of a link's ``note`` values (a str or a list, in the link's order) and the warnings for
    those left out: each bad value (which and why, the first 5 named), then the bounds."""
    raws = [raws] if isinstance(raws, str) else [str(r) for r in raws]
    good: list[Note] = []
    bad: list[str] = []
    for raw in raws:
        try:
            good.append(parse_note(raw))
        except ValueError as exc:
            bad.append(f"Ignored note={_shown(raw)!r} in the link: {exc}.")
    warnings = bad[:5]
    if len(bad) > 5:
        warnings.append(f"Ignored {len(bad) - 5} more notes of the link that cannot be read.")
    notes, over = _bounded(canonical_notes(good))
    return notes, warnings + ([over] if over else [])


# ----- transitions (pure; app/sync.py calls them) ---------------------------------------------------------------
def clean_note_text(text: Any) -> str:
    """Text typed for a note on one line: line breaks, tabs and runs of spaces become one space, other
    control characters are dropped, and the ends are trimmed."""
    words = " ".join(str(text or "").split())
    return "".join(c for c in words if c.isprintable())


def point_from_click(click: Any) -> int | None:
    """The time (ns) of a Plotly click on the time axis (``clickData``: its first point's x in seconds), or
    None for anything else."""
    try:
        x = float(click["points"][0]["x"])
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    ns = round(x * 1e9) if x == x and abs(x) < 1e9 else -1
    return ns if 0 <= ns < _TIME_LIMIT else None


def note_anchor(
    state, clicked_ns: int | None = None, extent: Callable[[], tuple[int, int] | None] | None = None
) -> tuple[int, int] | None:
    """Where "Add note" pins a note, in this order: a point of the time axis clicked since the last note
    (``clicked_ns``), else the marked row's interval, else the zoom window, else the whole trace (``extent()``,
    asked only then); None when there is none of these. Times before 0 (a window's context) start at 0."""
    if clicked_ns is not None:
        span = (clicked_ns, clicked_ns)
    elif state.mark is not None:
        span = (state.mark[1], state.mark[2])
    elif state.window() is not None:
        span = state.window()
    else:
        span = extent() if extent is not None else None
    if span is None:
        return None
    a, b = max(int(span[0]), 0), max(int(span[1]), 0)
    return (a, b) if a <= b < _TIME_LIMIT else None


def apply_add_note(state, text: Any, anchor: tuple[int, int] | None) -> tuple[Any, str | None]:
    """The state with a note of ``text`` over ``anchor`` (``(t0_ns, t1_ns)``, see ``note_anchor``), and a
    notice (None when it was added). Empty text, a text too long, a note already there or a note past the
    link's bounds gives the notice and leaves the state as it is."""
    text = clean_note_text(text)
    if not text:
        return state, "Type the note's text in the box first: an empty note is not added."
    if len(text) > MAX_NOTE_TEXT:
        return state, f"A note is at most {MAX_NOTE_TEXT} characters (this one has {len(text):,}): not added."
    if anchor is None:
        return state, "No trace to pin a note to: open a trace first."
    note = (int(anchor[0]), int(anchor[1]), text)
    if note in state.notes:
        return state, "That note is already there."
    if len(state.notes) >= MAX_NOTES:
        return state, f"At most {MAX_NOTES} notes travel in a link: remove one (×) before adding another."
    if notes_query_chars((*state.notes, note)) > MAX_NOTES_CHARS:
        return state, (
            f"The notes would take more than {MAX_NOTES_CHARS:,} characters of the link: "
            "shorten this note or remove one (×)."
        )
    return replace(state, notes=(*state.notes, note)), None


def apply_remove_note(state, index: Any):
    """The state without its note number ``index`` (in ``state.notes`` order); unchanged for a bad index."""
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(state.notes):
        return state
    return replace(state, notes=state.notes[:index] + state.notes[index + 1 :])


def apply_note_zoom(state, index: Any):
    """The state zoomed to note number ``index``: a range note with its width of context on each side (at
    least 1 µs, as a row click), a point note ±1 µs around it, not before 0. Unchanged for a bad index."""
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(state.notes):
        return state
    a, b, _ = state.notes[index]
    pad = POINT_PAD_NS if a == b else max(b - a, MIN_PAD_NS)
    return replace(state, t0_ns=context_start(a, pad), t1_ns=b + pad)
