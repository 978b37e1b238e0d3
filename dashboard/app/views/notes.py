"""Notes: "Add note" (a text box and a button) and the Notes panel, one row per note of the link: its time
(click: zoom the timeline to it), its text and a × that removes it. The flags on the timeline and the Gantt
come with those views (``figures.notes``); the events go to the sync callback (``app/sync.py``)."""

from dash import dcc, html

from dashboard.app import ids
from dashboard.app.views.base import View
from dashboard.render.notes import note_range_text
from dashboard.state import MAX_NOTE_TEXT, MAX_NOTES

EMPTY = (
    "No notes yet. A note is pinned to the point you last clicked on the timeline, else to the marked row, "
    "else to the zoom window, else to the whole trace; it travels in the link."
)


def note_rows(state) -> list:
    """The Notes panel's rows for ``state`` (Dash components hold text: a note's text is never markup)."""
    if not state.notes:
        return [html.Li(EMPTY, className="note-empty")]
    return [
        html.Li(
            className="note-row",
            children=[
                html.Button(
                    note_range_text(a, b),
                    id={"type": ids.NOTE_ZOOM, "index": i},
                    className="note-time",
                    title="Zoom the timeline to this note",
                ),
                html.Span(text, className="note-body"),
                html.Button(
                    "×",
                    id={"type": ids.NOTE_REMOVE, "index": i},
                    className="note-remove",
                    title="Remove this note",
                    **{"aria-label": f"Remove note {i + 1}"},
                ),
            ],
        )
        for i, (a, b, text) in enumerate(state.notes)
    ]


def layout(state):
    """The panel: the "Add note" row and the list, built from ``state`` (no callback on load)."""
    return html.Div(
        className="panel notes-panel",
        children=[
            html.Div(
                className="note-add",
                children=[
                    html.H3("Notes"),
                    dcc.Input(
                        id=ids.NOTE_TEXT,
                        type="text",
                        value="",
                        maxLength=MAX_NOTE_TEXT,
                        spellCheck=False,
                        placeholder="A note for whoever opens this link",
                        className="text-input note-input",
                    ),
                    html.Button(
                        "Add note",
                        id=ids.NOTE_ADD,
                        n_clicks=0,
                        className="button",
                        title=f"Pin the text to the point last clicked on the timeline, else the marked row, else the "
                        f"zoom window, else the whole trace (at most {MAX_NOTES} notes; they travel in the link)",
                    ),
                ],
            ),
            html.Ul(id=ids.NOTES_LIST, className="notes-list", children=note_rows(state)),
        ],
    )


VIEW = View(
    name="notes",
    fields=("notes",),
    slot="main",
    needs_trace=False,
    on_load=False,
    outputs={"rows": (ids.NOTES_LIST, "children")},
    render=lambda trace, state: {"rows": note_rows(state)},
    layout=layout,
)
