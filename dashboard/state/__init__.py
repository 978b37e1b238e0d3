"""The view state: one frozen dataclass, one table of its fields, and everything derived from that table.

Stdlib only. ``FIELDS`` is the single source of truth: each ``Field`` gives the URL key(s), the
default, the parser (the one validation, with its bounds), the formatter, and the control it drives
(component id and property, with the conversions between control values and state values). The URL
codec (``to_query`` / ``from_query``), the page's controls (``control_values`` / ``from_control``),
``tracedash export`` / ``report`` and the compare page all derive from it; ``query_key_table`` writes
the README's list of link keys from it.

``to_query`` omits defaults and sorts keys, so equal states give byte-identical URLs; ``from_query``
never raises: a bad value falls back to its key's default and is reported as a warning the page shows.

State transitions on UI events are pure functions (``apply_control``, ``apply_relayout``,
``apply_row_click``, ``apply_grid``, the F / Escape keys' ``apply_fit_mark`` / ``apply_clear_mark``; notes:
``apply_add_note``, ``apply_remove_note``, ``apply_note_zoom`` in ``state.notes``): a control change keeps the
zoom window, except a change of trace, which clears the window, the marked row and the hidden GPUs in one step
(view and link together).
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any
from urllib.parse import parse_qsl, urlencode

from dashboard.state.field_table import (  # noqa: F401 (the state API)
    BY_NAME,
    CONTROL_DEFAULT_TEXT,
    CONTROL_FIELDS,
    CONTROL_TEXT,
    FIELDS,
    Field,
    canonical_filter,
)
from dashboard.state.notes import (  # noqa: F401 (the state API)
    MAX_NOTE_TEXT,
    MAX_NOTES,
    MAX_NOTES_CHARS,
    apply_add_note,
    apply_note_zoom,
    apply_remove_note,
    note_anchor,
    point_from_click,
)
from dashboard.state.schema import (  # noqa: F401 (the state API)
    _INT,
    BUSY,
    DEFAULT,
    DEFAULT_SORTS,
    FILTER_ATTR,
    LANES,
    MARK_KINDS,
    OTHER_VERSION,
    SORT_ATTR,
    SORT_COLUMNS,
    STATE_VERSION,
    STATS,
    TABLE_COLUMNS,
    TABS,
    ViewState,
    context_start,
)

REPEATABLE_KEYS = frozenset(f.key for f in FIELDS if f.repeat is not None)


def query_key_table() -> str:
    """The README's table of link keys (Markdown), from ``FIELDS``."""
    rows = [
        "| key | default | meaning |",
        "|---|---|---|",
        "| `t0_ns`, `t1_ns` | whole trace | the zoom window in ns (both; t0 < t1) |",
    ]
    for f in FIELDS:
        d = f.default
        shown = "—" if d in (None, "", ()) else f.fmt(d)
        rows.append(f"| `{f.key}` | {shown} | {f.doc} |")
    rows.append(f"| `v` | {STATE_VERSION} | state schema version (always written) |")
    return "\n".join(rows)


# ----- URL codec --------------------------------------------------------------------------------------------
def to_query(state: ViewState) -> str:
    """Canonical query string (no leading ``?``): sorted keys, defaults omitted, ``v`` always.

    Example:
        >>> to_query(ViewState(trace="a.sqlite@0123abcd", tab="gaps"))
        'tab=gaps&trace=a.sqlite%400123abcd&v=1'
    """
    items: dict[str, str | list[str]] = {"v": str(STATE_VERSION)}
    if state.window() is not None:
        items["t0_ns"], items["t1_ns"] = str(state.t0_ns), str(state.t1_ns)
    for f in FIELDS:
        value = getattr(state, f.name)
        if value != f.default and value is not None:
            items[f.key] = [f.fmt(v) for v in value] if f.repeat else f.fmt(value)
    # a repeatable key (note) once per value, in the state's canonical order, at its key's place
    pairs = [(k, x) for k, v in sorted(items.items()) for x in (v if isinstance(v, list) else [v])]
    return urlencode(pairs, safe=",:")


def from_query(search: str | None) -> ViewState:
    """Parse a query string (with or without ``?``). Never raises.

    Unknown keys are ignored; a bad value keeps that key's default and adds a warning (in
    ``ViewState.warnings``, which does not take part in equality).
    """
    params: dict[str, str | list[str]] = {}
    repeated: list[str] = []
    try:
        for key, value in parse_qsl((search or "").lstrip("?"), keep_blank_values=True):
            if key in REPEATABLE_KEYS:  # every value of a repeatable key, in the link's order
                params.setdefault(key, []).append(value)  # type: ignore[union-attr]
                continue
            if key in params and key not in repeated:
                repeated.append(key)
            params.setdefault(key, value)
    except (ValueError, TypeError):
        return replace(DEFAULT, warnings=("The link's query could not be read; showing the defaults.",))
    state = from_params(params)
    if repeated:
        note = f"The link repeats {', '.join(sorted(repeated))[:80]}: the first value of each is used."
        state = replace(state, warnings=(*state.warnings, note))
    return state


def unknown_keys_note(search: str | None) -> str:
    """The notice for a link's keys that are not view settings (a typo, another tool's parameter), or "" when
    it has none: they are ignored, and the page and ``tracedash export --url`` say so alike."""
    unknown = query_keys(search)[1]
    if not unknown:
        return ""
    names = ", ".join(k if k else "a value without a name" for k in unknown)  # "?==" has an empty key
    return f"Ignored {names[:80]} in the link: not a view setting of this tracedash version."


def query_keys(search: str | None) -> tuple[list[str], list[str]]:
    """``(known, unknown)`` keys of a link's query string, each in order of first appearance.

    Known keys are those of ``FIELDS`` plus ``t0_ns``, ``t1_ns`` and ``v``; ``tracedash export/report``
    warn of unknown ones and refuse a ``--url`` that has keys but none of ours (not a dashboard link).
    An unreadable query gives ``([], [])``.
    """
    ours = {f.key for f in FIELDS} | {"t0_ns", "t1_ns", "v"}
    known: list[str] = []
    unknown: list[str] = []
    try:
        pairs = parse_qsl((search or "").lstrip("?"), keep_blank_values=True)
    except (ValueError, TypeError):
        return [], []
    for key, _ in pairs:
        bucket = known if key in ours else unknown
        if key not in bucket:
            bucket.append(key)
    return known, unknown


def _bad(key: str, raw: str, why: str = "not a valid value") -> str:
    shown = raw if len(raw) <= 40 else raw[:37] + "..."
    return f"Ignored {key}={shown!r} in the link: {why}; using the default."


def from_params(params: dict) -> ViewState:
    """Parse a mapping of query keys to values (str, or a list from a repeated key). Never raises."""
    warnings: list[str] = []
    values: dict = {}

    def get(key: str) -> str | None:
        raw = params.get(key)
        if isinstance(raw, (list, tuple)):
            raw = raw[0] if raw else None
        return None if raw is None else str(raw)

    t0, t1 = get("t0_ns"), get("t1_ns")
    if t0 is not None or t1 is not None:
        try:
            if not (_INT.fullmatch(t0 or "") and _INT.fullmatch(t1 or "")):
                raise ValueError
            a, b = int(t0), int(t1)  # type: ignore[arg-type]
            if not (a < b and abs(a) < 2**62 and abs(b) < 2**62):
                raise ValueError
            values["t0_ns"], values["t1_ns"] = a, b
        except (TypeError, ValueError):
            if t0 is None or t1 is None:  # one edge of the window without the other
                missing, given = ("t0_ns", "t1_ns") if t0 is None else ("t1_ns", "t0_ns")
                warnings.append(_bad(given, t1 if t0 is None else t0, f"the window needs {missing} too"))
            elif _INT.fullmatch(t0) and _INT.fullmatch(t1) and int(t0) < int(t1):  # integers, past the limit
                warnings.append(_bad("t0_ns/t1_ns", f"{t0},{t1}", "a window edge beyond ±2**62 ns (146 years)"))
            else:
                warnings.append(_bad("t0_ns/t1_ns", f"{t0},{t1}", "not a window in integer ns with t0 < t1"))
    for f in FIELDS:
        if f.repeat is not None:
            if (given := params.get(f.key)) is not None:
                values[f.name], more = f.repeat(list(given) if isinstance(given, (list, tuple)) else [str(given)])
                warnings.extend(more)
            continue
        raw = get(f.key)
        if raw is None:
            continue
        try:
            values[f.name] = f.parse(raw)
        except (ValueError, TypeError, OverflowError, RecursionError):
            warnings.append(_bad(f.key, raw, f.invalid))
    if (raw := get("v")) is not None and raw != str(STATE_VERSION):
        warnings.append(f"{OTHER_VERSION} (v={raw[:10]}); some settings may differ.")
    known = {f.name for f in fields(ViewState)}
    return replace(DEFAULT, **{k: v for k, v in values.items() if k in known}, warnings=tuple(warnings))


# ----- controls and transitions (pure; the app's sync callback calls these) ------------------------------------
def control_values(state: ViewState) -> dict[str, Any]:
    """``{field name: control value}`` for every field that has a control."""
    return {f.name: f.to_control(getattr(state, f.name)) for f in CONTROL_FIELDS}


def apply_control(state: ViewState, name: str, raw: Any) -> tuple[ViewState, str | None]:
    """The state after the control of field ``name`` changed to ``raw``, and a notice (or None).

    An invalid value keeps the previous value and returns a notice. A new trace clears the window,
    the marked row, the hidden GPUs and the notes (they belong to the old trace); every other control keeps
    the zoom window, so the view and the link never disagree.
    """
    f = BY_NAME[name]
    try:
        value = f.from_control_value(raw)
    except (ValueError, TypeError, OverflowError) as exc:
        if name == "prefix":
            return state, f"An empty or unprintable dispatch prefix is not allowed: keeping {state.prefix}."
        if name == "steps":
            return state, f"“Steps from” takes auto, a preset or a rule: {exc}; keeping {state.steps}."
        label, takes = CONTROL_TEXT.get(name, (f.key, "a valid value"))
        current = getattr(state, name)
        keeping = f.fmt(current) if current is not None else CONTROL_DEFAULT_TEXT.get(name, "the default")
        given = "" if raw in (None, "") else f", not {str(raw)[:40]}"  # None: the browser found the number invalid
        return state, f"“{label}” takes {takes}{given}: keeping {keeping}."
    if value == getattr(state, name):
        return state, None
    if name == "trace":
        return replace(state, trace=value, t0_ns=None, t1_ns=None, mark=None, hide_devices=(), hit=None, notes=()), None
    if name == "search":  # a new search starts before its first occurrence
        return replace(state, search=value, hit=None), None
    return replace(state, **{name: value}), None


def window_from_relayout(relayout: Any) -> tuple[int, int] | None | bool:
    """The x window (ns) a Plotly relayout event asks for: ``(t0, t1)``, None for "whole trace"
    (``xaxis.autorange``), or False when the event does not move x (autosize, a bad range)."""
    if not isinstance(relayout, dict):
        return False
    if relayout.get("xaxis.autorange"):
        return None
    lo = relayout.get("xaxis.range[0]")
    hi = relayout.get("xaxis.range[1]")
    if lo is None and isinstance(relayout.get("xaxis.range"), list) and len(relayout["xaxis.range"]) == 2:
        lo, hi = relayout["xaxis.range"]
    try:
        lo_ns, hi_ns = round(float(lo) * 1e9), round(float(hi) * 1e9)
    except (TypeError, ValueError, OverflowError):
        return False
    if not (hi_ns > lo_ns) or abs(lo_ns) >= 2**62 or abs(hi_ns) >= 2**62:
        return False
    return lo_ns, hi_ns


def apply_relayout(state: ViewState, relayout: Any) -> ViewState:
    """The state after a zoom, pan or reset of the timeline (or the Gantt on the same axis)."""
    w = window_from_relayout(relayout)
    if w is False:
        return state
    if w is None:
        return replace(state, t0_ns=None, t1_ns=None)
    return replace(state, t0_ns=w[0], t1_ns=w[1])


def apply_row_click(state: ViewState, row: Any) -> ViewState:
    """The state after a click on a table row or a Gantt bar ``{"kind", "start_ns", "end_ns"}``: the timeline is
    zoomed to the row's interval with its width of context on each side (at least 1 µs), and the
    row's target is marked. Kind ``"window"`` (a Gantt bar standing for a run of steps) zooms to the interval
    itself and marks nothing (the mark the view had stays)."""
    if not isinstance(row, dict) or row.get("kind") not in (*MARK_KINDS, "window"):
        return state
    try:
        s, e = int(row["start_ns"]), int(row["end_ns"])
    except (KeyError, TypeError, ValueError, OverflowError):
        return state
    if not (0 <= s < e < 2**61):
        return state
    if row["kind"] == "window":
        return replace(state, t0_ns=s, t1_ns=e)
    return _zoom_to(state, (row["kind"], s, e))


def _zoom_to(state: ViewState, mark: tuple[str, int, int], **also) -> ViewState:
    """``state`` zoomed to ``mark``'s interval (``mark_window``), marked."""
    t0, t1 = mark_window(mark[1], mark[2])
    return replace(state, t0_ns=t0, t1_ns=t1, mark=mark, **also)


def apply_go_to(state: ViewState, hit: int, mark: tuple[str, int, int]) -> ViewState:
    """The state after Next / Previous went to search occurrence ``hit`` (1-based) at ``mark``
    (``(kind, start_ns, end_ns)``): zoomed to it and marked, as a row click does."""
    if mark[0] not in MARK_KINDS or not (0 <= mark[1] < mark[2] < 2**61) or hit < 1:
        return state
    return _zoom_to(state, mark, hit=hit)


def mark_window(start_ns: int, end_ns: int) -> tuple[int, int]:
    """The window a row click (and the F key) shows for a marked interval: the interval with its own
    width of context on each side, at least 1 µs; never before 0 (the trace's start) for an interval after it."""
    pad = max(end_ns - start_ns, 1000)
    return context_start(start_ns, pad), end_ns + pad


def apply_fit_mark(state: ViewState) -> ViewState:
    """The state after the F key: the window fits the marked item as its row click did; no mark, no change."""
    if not state.mark:
        return state
    t0, t1 = mark_window(state.mark[1], state.mark[2])
    return replace(state, t0_ns=t0, t1_ns=t1)


def apply_clear_mark(state: ViewState) -> ViewState:
    """The state after the Escape key: no marked item; the window stays."""
    return replace(state, mark=None)


def sort_from_column_state(column_state: Any) -> str | None:
    """``col`` / ``-col`` of the first sorted column in an AG Grid column state, or None (unsorted)."""
    if not isinstance(column_state, list):
        return None
    ranked = [c for c in column_state if isinstance(c, dict) and c.get("sort") in ("asc", "desc")]
    if not ranked:
        return None
    c = min(ranked, key=lambda c: c.get("sortIndex") or 0)
    return ("-" if c["sort"] == "desc" else "") + str(c.get("colId", ""))


def column_state_for(table: str, sort: str) -> list[dict]:
    """AG Grid column state that sorts ``table`` by ``sort`` (``-col`` = descending)."""
    col = sort.lstrip("-")
    direction = "desc" if sort.startswith("-") else "asc"
    return [
        {"colId": c, "sort": direction if c == col else None, "sortIndex": 0 if c == col else None}
        for c in TABLE_COLUMNS[table]
    ]


def apply_grid(state: ViewState, table: str, column_state: Any = None, filter_model: Any = "keep") -> ViewState:
    """The state after a table's sort (``column_state``) or column filters (``filter_model``) changed.

    An unsorted table (the grids' header clicks never unsort; another client could) goes back to the table's
    default sort; a filter model the link cannot hold (unknown column, unsupported filter) leaves the state as it is.
    """
    out = state
    if column_state is not None:
        sort = sort_from_column_state(column_state)
        if sort is None or sort.lstrip("-") in TABLE_COLUMNS[table]:
            out = replace(out, **{SORT_ATTR[table]: sort or DEFAULT_SORTS[table]})
    if filter_model != "keep":
        try:
            out = replace(out, **{FILTER_ATTR[table]: canonical_filter(filter_model, table)})
        except (ValueError, TypeError, RecursionError):
            pass
    return out


def changed_fields(old: ViewState, new: ViewState) -> set[str]:
    """Names of the fields that differ (``window`` stands for t0_ns and t1_ns together)."""
    out = {f.name for f in FIELDS if getattr(old, f.name) != getattr(new, f.name)}
    if old.window() != new.window():
        out.add("window")
    return out


def to_dict(state: ViewState) -> dict:
    """A JSON-safe dict of the state (for a dcc.Store); ``from_dict`` reads it back."""
    return {"q": to_query(state)}


def from_dict(data: Any) -> ViewState:
    """The state stored by ``to_dict`` (the defaults for anything else)."""
    return from_query(data.get("q") if isinstance(data, dict) else None)
