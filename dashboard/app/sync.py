"""The one state callback: every UI event -> a new ViewState -> the slices of the views that read
what changed, and the address bar. Thin: the transitions are the pure functions of dashboard.state.

Events: a control (any ``state.CONTROL_FIELDS`` control), a zoom/pan/reset of the timeline or the
Gantt (``ids.X_RANGE``; both are redrawn at the new window, see assets/tracedash.js), a click on a table row
(``ids.ROW_CLICK``), a table's sort or column filters (``ids.GRID_EVENTS``), the notes' "Add note",
zoom and × buttons (``state.notes``), the F / Escape keys (``ids.KEY_EVENT``: fit / clear the mark; W/S/A/D
zoom and pan as a drag does). Those stores are
filled client-side with only what changes the view: an autosize, or the state a grid reports when
it is first drawn (the link's own sort and filters), never reaches the server.
The page is built from the link (``layout.build_layout``), so on load nothing here runs; the
address bar is written client-side from ``ids.SEARCH`` (pushState on a change, replaceState for the
canonical form of the link that was opened) by a listener on Dash's store, not a callback.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from dash import ALL, ClientsideFunction, Dash, Input, Output, State, ctx, no_update

from dashboard.app import ids
from dashboard.app.components import alert
from dashboard.app.views import VIEWS, view_slice
from dashboard.app.views.base import slice_data
from dashboard.errors import TraceError
from dashboard.render.notes import trace_extent
from dashboard.render.search import go_to as search_go_to
from dashboard.state import (
    CONTROL_FIELDS,
    TABLE_COLUMNS,
    ViewState,
    apply_add_note,
    apply_clear_mark,
    apply_control,
    apply_fit_mark,
    apply_grid,
    apply_note_zoom,
    apply_relayout,
    apply_remove_note,
    apply_row_click,
    from_dict,
    note_anchor,
    point_from_click,
    to_dict,
    to_query,
)

log = logging.getLogger(__name__)

GRIDS = {
    "kernels": ids.KERNEL_TABLE,
    "api": ids.API_TABLE,
    "nvtx": ids.NVTX_TABLE,
    "dispatches": ids.DISPATCH_TABLE,
    "gaps": ids.GAP_TABLE,
}
_CONTROL_OF = {f.control[0]: f.name for f in CONTROL_FIELDS}
KEY_ACTIONS = {"fit": apply_fit_mark, "clear": apply_clear_mark}  # ids.KEY_EVENT {"key", "n"} (assets/tracedash.js)
assert set(GRIDS) == set(TABLE_COLUMNS)


def next_state(
    state: ViewState, triggered: list[tuple[str, str]], values: dict, seen: dict | None = None, go_to=None
) -> tuple[ViewState, list[str], dict]:
    """The state after the page's current inputs, and notices for invalid values that were just
    entered, and what was seen of the event inputs (to store with the state).

    Dash drops the result of a call that a newer call of the same callback overtakes, so the state
    is rebuilt from every input's *current* value, not only from the one that fired: every
    control's value (a change of trace first: it clears the window, the mark and the hidden
    GPUs), every table's sort and filters (``values["grids"]``: ``{"sorts": {table: column
    state}, "filters": {table: filter model}}`` for the tables the user changed since the page was
    built), then the timeline's x range (``values["relayout"]``) and the last row click when they
    differ from the ones already applied (``seen``), then the search's last Next / Previous
    (``values["step"]``: ``{"n", "dir"}``), applied by ``go_to(state, direction) -> (state,
    notice)`` (``render.search.go_to`` on the state's trace), then the notes' events (``values["note"]``,
    see ``_note_events``), and last the F / Escape key (``values["key"]``: ``{"key": "fit" | "clear", "n":
    count}``) when it is a new press. ``triggered`` (``(component id, property)`` pairs) only decides which
    invalid values get a notice.
    """
    seen = dict(seen or {})
    notices: list[str] = []
    fired = {cid for cid, _ in triggered}
    controls = values.get("controls") or {}
    order = sorted(CONTROL_FIELDS, key=lambda f: f.name != "trace")
    for f in order:
        if f.name not in controls:
            continue
        raw = controls[f.name]
        if f.name == "hide_devices" and (ids.TRACE_PICKER in fired and f.control[0] not in fired):
            continue  # the boxes of the old trace: the new trace starts with every GPU shown
        new, notice = apply_control(state, f.name, raw)
        if notice and f.control[0] in fired:
            notices.append(notice)
        state = new
    grids = values.get("grids") or {}
    for table in GRIDS:
        if table in (grids.get("sorts") or {}):
            state = apply_grid(state, table, column_state=grids["sorts"][table])
        if table in (grids.get("filters") or {}):
            state = apply_grid(state, table, filter_model=grids["filters"][table])
    relayout = values.get("relayout")
    if relayout is not None and relayout != seen.get("relayout"):
        state = apply_relayout(state, relayout)
        seen["relayout"] = relayout
    row = values.get("row")
    if row is not None and row != seen.get("row"):
        state = apply_row_click(state, row)
        seen["row"] = row
    step = values.get("step")
    if isinstance(step, dict) and step != seen.get("step") and step.get("dir") in (1, -1) and go_to is not None:
        state, notice = go_to(state, step["dir"])
        if notice:
            notices.append(notice)
        seen["step"] = step
    state = _note_events(state, values.get("note") or {}, seen, notices)
    key = values.get("key")
    if isinstance(key, dict) and key != seen.get("key"):
        state = KEY_ACTIONS.get(key.get("key"), lambda s: s)(state)
        seen["key"] = key
    return state, notices, seen


def _note_events(state: ViewState, note: dict, seen: dict, notices: list[str]) -> ViewState:
    """Apply the notes' events (``values["note"]``): "Add note" (its clicks and Enters, ``adds``, once each:
    ``seen``), then a zoom to or the removal of a note (``zoom`` / ``remove``: the index whose button fired).
    ``extent(state)`` gives the whole trace's extent, asked only when a note has nothing else to pin to."""
    adds = note.get("adds") or 0
    if adds and adds != seen.get("note_adds"):
        seen["note_adds"] = adds
        clicked = point_from_click(note.get("click"))
        if clicked is not None and clicked == seen.get("note_click"):
            clicked = None  # the click a note was already pinned to: not a new point
        extent = note.get("extent")
        anchor = note_anchor(state, clicked, (lambda: extent(state)) if extent else None)
        state, notice = apply_add_note(state, note.get("text"), anchor)
        if notice:
            notices.append(notice)
        elif clicked is not None:
            seen["note_click"] = clicked
    if note.get("zoom") is not None:
        state = apply_note_zoom(state, note["zoom"])
    if note.get("remove") is not None:
        state = apply_remove_note(state, note["remove"])
    return state


def _trace_extent(store, state: ViewState) -> tuple[int, int] | None:
    """The whole trace's extent for a note with nothing else to pin to (None: no trace, or it cannot be read:
    the page already says why)."""
    try:
        return trace_extent(store.get(state.trace), state) if state.trace else None
    except TraceError:
        return None


def _same_control(f, raw: Any, value: Any) -> bool:
    try:
        return f.from_control_value(raw) == value
    except (ValueError, TypeError, OverflowError):
        return False


def register_sync(app: Dash, store) -> None:
    """Register the state callback and the client-side helpers (row clicks, grid events, search steps; the x range
    and the address bar are written by assets/tracedash.js from the figures' events and Dash's store)."""
    echoed = [f for f in CONTROL_FIELDS if f.name not in ("trace", "group")]

    def go_to(state: ViewState, direction: int):
        """Next / Previous of the search on the state's trace (``render.search.go_to``)."""
        try:
            trace = store.get(state.trace) if state.trace else None
        except TraceError as exc:
            return state, str(exc)
        return search_go_to(trace, state, direction)

    @app.callback(
        output={
            "state": Output(ids.STATE, "data"),
            "search": Output(ids.SEARCH, "data"),
            "notice": Output(ids.STATE_NOTICE, "children", allow_duplicate=True),
            "slices": {v.name: Output(ids.slice_id(v.name), "data") for v in VIEWS},
            "controls": {f.name: Output(*f.control, allow_duplicate=True) for f in echoed},
            "note_text": Output(ids.NOTE_TEXT, "value"),
        },
        inputs={
            "controls": {f.name: Input(*f.control) for f in CONTROL_FIELDS},
            "relayout": Input(ids.X_RANGE, "data"),
            "row": Input(ids.ROW_CLICK, "data"),
            "grids": Input(ids.GRID_EVENTS, "data"),
            "step": Input(ids.SEARCH_STEP, "data"),
            "notes": {
                "add": Input(ids.NOTE_ADD, "n_clicks"),
                "enter": Input(ids.NOTE_TEXT, "n_submit"),
                "zoom": Input({"type": ids.NOTE_ZOOM, "index": ALL}, "n_clicks"),
                "remove": Input({"type": ids.NOTE_REMOVE, "index": ALL}, "n_clicks"),
                "text": State(ids.NOTE_TEXT, "value"),
                "click": State(ids.TIMELINE, "clickData"),
            },
            "key": Input(ids.KEY_EVENT, "data"),
            "current": State(ids.STATE, "data"),
        },
        prevent_initial_call=True,
    )
    def sync(controls, relayout, row, grids, step, notes, key, current):
        old = from_dict(current)
        triggered = []
        note = {"adds": (notes["add"] or 0) + (notes["enter"] or 0), "text": notes["text"], "click": notes["click"]}
        note["extent"] = lambda state: _trace_extent(store, state)
        for t in ctx.triggered:
            cid, _, prop = t["prop_id"].rpartition(".")
            triggered.append((cid, prop))
            if cid.startswith("{") and t.get("value"):  # a note's button: {"type": NOTE_ZOOM, "index": i}
                button = json.loads(cid)
                note[{ids.NOTE_ZOOM: "zoom", ids.NOTE_REMOVE: "remove"}[button["type"]]] = button["index"]

        values = {
            "controls": controls,
            "relayout": relayout,
            "row": row,
            "grids": grids,
            "step": step,
            "note": note,
            "key": key,
        }
        seen = current.get("seen") if isinstance(current, dict) else None
        old_adds = (seen or {}).get("note_adds")
        new, notices, seen = next_state(old, triggered, values, seen, go_to)
        nothing = {v.name: no_update for v in VIEWS}
        # a control value the state took replaces the notice about the last one it did not (never a stale notice)
        accepted = new != old and any(c in _CONTROL_OF for c, _ in triggered)
        out = {
            "state": no_update,
            "search": no_update,
            "slices": nothing,
            "notice": [alert(n, "info") for n in notices] if notices else [] if accepted else no_update,
            "controls": {f.name: no_update for f in echoed},
            # a note just added empties its box; one refused keeps the text to fix
            "note_text": "" if new.notes != old.notes and seen.get("note_adds") != old_adds else no_update,
        }
        for f in echoed:  # a control whose value the state did not take shows the state's value again
            value = getattr(new, f.name)
            if not _same_control(f, controls.get(f.name), value):
                out["controls"][f.name] = f.to_control(value)
        if new == old:
            if seen != (current.get("seen") if isinstance(current, dict) else None):
                out["state"] = {**to_dict(new), "seen": seen}
            return out
        out["state"] = {**to_dict(new), "seen": seen}
        out["search"] = {"search": "?" + to_query(new), "replace": False}
        out["slices"] = {
            v.name: slice_data(v, new) if view_slice(v, new) != view_slice(v, old) else no_update for v in VIEWS
        }
        return out

    @app.callback(
        Output(ids.STATE_NOTICE, "children", allow_duplicate=True),
        Input(ids.STATE_NOTICE, "n_clicks"),
        prevent_initial_call=True,
    )
    def dismiss_notice(_):
        return []

    # "Steps from": the preset list and the box show one value (the box is the state's control).
    app.clientside_callback(
        ClientsideFunction(namespace="tracedash", function_name="stepsSource"),
        Output(ids.STEPS_SOURCE, "value", allow_duplicate=True),
        Output(ids.STEPS_PRESET, "value"),
        Input(ids.STEPS_PRESET, "value"),
        Input(ids.STEPS_SOURCE, "value"),
        prevent_initial_call=True,
    )
    # Only what changes the view reaches the server: a zoom/pan/reset of the timeline or the Gantt (not an
    # autosize; assets/tracedash.js writes ids.X_RANGE from the figures' relayout events), a sort or filter the
    # user made (not the state a grid reports when it is first drawn).
    app.clientside_callback(
        ClientsideFunction(namespace="tracedash", function_name="gridEvents"),
        Output(ids.GRID_EVENTS, "data"),
        *[Input(g, "columnState") for g in GRIDS.values()],
        *[Input(g, "filterModel") for g in GRIDS.values()],
        State(ids.GRID_EVENTS, "data"),
        prevent_initial_call=True,
    )
    app.clientside_callback(
        ClientsideFunction(namespace="tracedash", function_name="renderKick"),
        Output(ids.RENDER_KICK, "data"),
        Input(ids.PRERENDERED, "data"),
        State(ids.LOAD_POLL, "disabled"),  # a page waiting on its trace's load is kicked by the poll (load_banner)
    )
    # A click on a gap, a dispatch or a kernel row, or on a Gantt bar: its interval goes to the state (zoom + mark;
    # a bar of a same-phase run: zoom only).
    app.clientside_callback(
        ClientsideFunction(namespace="tracedash", function_name="rowClick"),
        Output(ids.ROW_CLICK, "data"),
        Input(ids.GAP_TABLE, "cellClicked"),
        Input(ids.DISPATCH_TABLE, "cellClicked"),
        Input(ids.KERNEL_TABLE, "cellClicked"),
        Input(ids.GANTT, "clickData"),
        State(ids.GAP_TABLE, "rowData"),
        State(ids.DISPATCH_TABLE, "rowData"),
        State(ids.KERNEL_TABLE, "rowData"),
        prevent_initial_call=True,
    )
    # Previous / Next (buttons; Enter in the search box, and Shift+Enter through tracedash.js) -> ids.SEARCH_STEP.
    app.clientside_callback(
        ClientsideFunction(namespace="tracedash", function_name="searchStep"),
        Output(ids.SEARCH_STEP, "data"),
        Input(ids.SEARCH_PREV, "n_clicks"),
        Input(ids.SEARCH_NEXT, "n_clicks"),
        Input(ids.TIMELINE_SEARCH, "n_submit"),
        prevent_initial_call=True,
    )
    app.clientside_callback(
        ClientsideFunction(namespace="tracedash", function_name="copyLink"),
        Output(ids.COPY_LINK, "children"),
        Input(ids.COPY_LINK, "n_clicks"),
        prevent_initial_call=True,
    )
