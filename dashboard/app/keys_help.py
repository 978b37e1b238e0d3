"""The keyboard navigation of the timeline and the step Gantt: its amounts, the "Keys" button and the overlay
listing the keys (``?``). The keys themselves are handled in assets/tracedash.js, which reads the amounts
from the overlay's data attributes, so what the overlay (and the README) says is what the keys do."""

from __future__ import annotations

from dash import html

KEYS_HELP = "keys-help"  # the overlay (hidden until ``?`` or the button)
KEYS_BUTTON = "keys-button"
ZOOM_FACTOR = 2  # W divides the window's width by it, S multiplies it
PAN_SHARE = 0.25  # A / D move the window by this share of its width
MIN_WIDTH_NS = 100  # W stops at a window this narrow

KEYS = (
    ("W", f"zoom in: the window's width ÷ {ZOOM_FACTOR}, around the pointer's time (or the centre)"),
    ("S", f"zoom out: the width × {ZOOM_FACTOR}, kept inside the trace; at its full extent, the whole trace"),
    ("A / D", f"pan left / right by {PAN_SHARE:.0%} of the window's width (stops at the trace's ends)"),
    ("F", "fit the marked item: its row click's window (the item with its own width on each side, ≥ 1 µs)"),
    ("Esc", "clear the mark (while this list is open: close it)"),
    ("?", "show or hide this list"),
)


def keys_markdown() -> str:
    """The keys as a Markdown table (docs/reference.md)."""
    return "\n".join(["| key | does |", "|---|---|", *(f"| `{k}` | {what} |" for k, what in KEYS)])


def keys_button() -> html.Button:
    """The "Keys ?" button over the timeline: it shows the overlay, as ``?`` does."""
    return html.Button(
        "Keys ?",
        id=KEYS_BUTTON,
        className="button small-button",
        title="Keyboard navigation of the timeline and the step Gantt (press ?)",
    )


def keys_overlay() -> html.Div:
    """The overlay listing the keys (hidden; assets/tracedash.js toggles it)."""
    return html.Div(
        id=KEYS_HELP,
        className="keys-help",
        hidden=True,
        role="dialog",
        **{
            "aria-label": "Keyboard navigation",
            "data-zoom": str(ZOOM_FACTOR),
            "data-pan": str(PAN_SHARE),
            "data-min-ns": str(MIN_WIDTH_NS),
        },
        children=[
            html.Div("Keys: timeline and step Gantt (the one under the pointer)", className="keys-title"),
            html.Table([html.Tr([html.Td(html.Kbd(k)), html.Td(what)]) for k, what in KEYS]),
            html.Div("Not while typing in a box; not with Ctrl, Alt or ⌘ held.", className="keys-foot"),
        ],
    )
