"""The field table: one Field per link key, with its parser (a bad value raises ValueError) and formatter."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable

from dashboard.state.notes import MAX_NOTE_TEXT, MAX_NOTES, MAX_NOTES_CHARS, format_note, notes_from_link, parse_note
from dashboard.state.schema import (
    _FILTER_OPS,
    _INT,
    _MAX_FILTER,
    _MAX_TEXT,
    _TRACE_ID,
    BUSY,
    DEFAULT,
    FILTER_ATTR,
    LANES,
    MARK_KINDS,
    SORT_ATTR,
    STATS,
    TABLE_COLUMNS,
    TABS,
)


# ----- parsers and formatters (a parser raises ValueError on a bad value) -------------------------------------
def _num(value: float) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


def _parse_number(raw: str) -> float:
    number = float(raw)
    if not math.isfinite(number) or number < 0 or number >= 1e15:
        raise ValueError(raw)
    return number


def _choice(options: tuple[str, ...]) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if raw not in options:
            raise ValueError(raw)
        return raw

    return parse


def _parse_trace(raw: str) -> str:
    if not _TRACE_ID.fullmatch(raw):
        raise ValueError(raw)
    return raw


def _parse_prefix(raw: str) -> str:
    if not (raw.strip() and len(raw) <= _MAX_TEXT and raw.isprintable()):
        raise ValueError(raw)
    return raw


def _parse_steps(raw: str) -> str:
    """A step source (``analysis.step_presets.parse_step_source``: auto, a preset name, or a user rule),
    canonical: a preset name in lower case, a rule as written. The one validation of a ``--steps`` value;
    its StepSourceError (a ValueError) says what is wrong."""
    from dashboard.analysis.step_presets import RULE, parse_step_source  # the presets' own table

    text = raw.strip()
    if len(text) > _MAX_TEXT or not text.isprintable():
        raise ValueError(f"{text[:40]!r}: a step source is printable text of at most {_MAX_TEXT} characters")
    spec = parse_step_source(text)
    return spec.rule if spec.preset == RULE else spec.preset


def _parse_pid(raw: str) -> int:
    if not _INT.fullmatch(raw) or not 0 <= int(raw) < 2**62:
        raise ValueError(raw)
    return int(raw)


def _parse_text(raw: str) -> str:
    if len(raw) > _MAX_TEXT:
        raise ValueError(raw)
    return raw


def _parse_search(raw: str) -> str:
    text = raw.strip()
    if len(text) > _MAX_TEXT or not text.isprintable():
        raise ValueError(raw)
    return text


def _parse_hit(raw: str) -> int:
    if not _INT.fullmatch(raw) or not 1 <= int(raw) < 2**62:
        raise ValueError(raw)
    return int(raw)


def _parse_lanes(raw: str) -> tuple[str, ...]:
    chosen = [v for v in raw.split(",") if v]
    if not all(v in LANES for v in chosen):
        raise ValueError(raw)
    return tuple(v for v in LANES if v in chosen)


def _parse_devices(raw: str) -> tuple[int, ...]:
    devs = tuple(int(x) for x in raw.split(",") if x != "")
    if any(d < 0 or d > 1_000_000 for d in devs):
        raise ValueError(raw)
    return devs


def _parse_bool(raw: str) -> bool:
    if raw not in ("0", "1", "true", "false"):
        raise ValueError(raw)
    return raw in ("1", "true")


def _parse_sort(table: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if raw.lstrip("-") not in TABLE_COLUMNS[table] or raw.count("-") > 1 or (raw.startswith("--")):
            raise ValueError(raw)
        return raw

    return parse


def _parse_mark(raw: str) -> tuple[str, int, int]:
    kind, _, span = raw.partition(":")
    a, _, b = span.partition("-")  # start may be negative: "gap:-5-7" is not produced (times are >= 0)
    if kind not in MARK_KINDS or not (_INT.fullmatch(a) and _INT.fullmatch(b)):
        raise ValueError(raw)
    lo, hi = int(a), int(b)
    if not (0 <= lo < hi < 2**62):
        raise ValueError(raw)
    return kind, lo, hi


def canonical_filter(model: Any, table: str) -> str:
    """An AG Grid filter model as canonical JSON (sorted keys, no spaces), or "" for no filter.

    Only text and number column filters on the table's own columns are kept (type among AG Grid's
    simple operators, values text up to 200 characters or finite numbers; two conditions joined
    by AND/OR allowed).

    Raises:
        ValueError: anything else (the caller falls back to "no filter" with a notice).
    """
    if model in (None, "", {}):
        return ""
    if isinstance(model, str):
        if len(model) > _MAX_FILTER:
            raise ValueError("filter too long")
        model = json.loads(model)
    if not isinstance(model, dict):
        raise ValueError("filter is not an object")

    def condition(c: Any) -> dict:
        if not isinstance(c, dict) or c.get("filterType") not in ("text", "number") or c.get("type") not in _FILTER_OPS:
            raise ValueError("bad condition")
        out = {"filterType": c["filterType"], "type": c["type"]}
        for k in ("filter", "filterTo"):
            v = c.get(k)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                raise ValueError("bad filter value")
            if isinstance(v, str) and len(v) > _MAX_TEXT:
                raise ValueError("filter text too long")
            if isinstance(v, float) and not math.isfinite(v):
                raise ValueError("filter number not finite")
            out[k] = v
        return out

    clean = {}
    for col, c in model.items():
        if col not in TABLE_COLUMNS[table]:
            raise ValueError(f"unknown column {col!r}")
        if isinstance(c, dict) and "conditions" in c:
            conds = c.get("conditions")
            if c.get("operator") not in ("AND", "OR") or not isinstance(conds, list) or not 1 <= len(conds) <= 2:
                raise ValueError("bad combined filter")
            clean[col] = {
                "filterType": condition(conds[0])["filterType"],
                "operator": c["operator"],
                "conditions": [condition(x) for x in conds],
            }
        else:
            clean[col] = condition(c)
    text = json.dumps(clean, sort_keys=True, separators=(",", ":"), ensure_ascii=False) if clean else ""
    if len(text) > _MAX_FILTER:
        raise ValueError("filter too long")
    return text


# ----- the field table --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Field:
    """One field of the view state.

    ``parse`` reads the URL text (raises ValueError on a bad value); ``fmt`` writes it back.
    ``control`` is ``(component id, property)`` of the control that shows and sets the field (None:
    set by the figures or grids, see ``app/sync.py``); ``to_control`` / ``from_control`` convert
    between the state value and the control's value (``from_control`` raises ValueError on a bad
    value, which then keeps the previous state value with a notice).
    """

    name: str
    key: str
    doc: str
    parse: Callable[[str], Any]
    fmt: Callable[[Any], str] = str
    control: tuple[str, str] | None = None
    to_control: Callable[[Any], Any] = lambda v: v
    from_control: Callable[[Any], Any] | None = None
    invalid: str = "not a valid value"  # what the link's warning says of a bad value
    # A repeatable key (``note``): reads every value the link gives, in order, into the state value and its
    # warnings; the state value is a tuple whose items ``parse`` reads and ``fmt`` writes one link value each.
    repeat: Callable[[list[str]], tuple[Any, list[str]]] | None = None

    @property
    def default(self):
        return getattr(DEFAULT, self.name)

    def from_control_value(self, raw: Any) -> Any:
        """The state value for a control's raw value (see class docstring)."""
        if self.from_control is not None:
            return self.from_control(raw)
        if raw is None:
            raise ValueError("empty")
        return self.parse(str(raw))


def _threshold_from_control(raw):
    if raw in (None, ""):
        return None
    return _parse_number(str(raw))


def _gap_from_control(raw):
    if raw in (None, ""):
        raise ValueError("empty")
    return _parse_number(str(raw))


def _prefix_from_control(raw):
    return _parse_prefix((raw or "").strip())


def _devices_from_control(raw):
    return tuple(int(d) for d in (raw or ()) if isinstance(d, int) or str(d).isdigit())


# Control ids are the app's (dashboard/app/ids.py); kept here as strings so this module stays stdlib-only.
FIELDS: tuple[Field, ...] = (
    Field(
        "trace",
        "trace",
        "trace id, never a path: file name + 32 hex digits (a served file: its content hash; an upload: its "
        "random token)",
        _parse_trace,
        control=("trace-picker", "value"),
        from_control=lambda r: _parse_trace(str(r or "")),
        invalid="not a trace id (expected NAME@HASH, a file name and 32 hexadecimal digits or their first 8)",
    ),
    Field("tab", "tab", "the open table: " + ", ".join(TABS), _choice(TABS), control=("table-tabs", "value")),
    Field(
        "lanes",
        "lanes",
        "timeline lanes shown (comma list of " + ", ".join(LANES) + ")",
        _parse_lanes,
        fmt=lambda v: ",".join(v),
        control=("timeline-lanes", "value"),
        to_control=list,
        from_control=lambda r: _parse_lanes(",".join(r or [])),
    ),
    Field(
        "threshold",
        "threshold",
        "prefill when tokens >= threshold (absent: automatic split)",
        _parse_number,
        fmt=_num,
        control=("phase-threshold", "value"),
        from_control=_threshold_from_control,
    ),
    Field(
        "prefix",
        "prefix",
        "dispatch marker prefix (NVTX mark/range name)",
        _parse_prefix,
        control=("dispatch-prefix", "value"),
        from_control=_prefix_from_control,
    ),
    Field(
        "steps",
        "steps",
        "where steps come from: auto (the preset whose annotations the trace holds), seed "
        "(CG_DISPATCH marks; prefix and threshold are its parameters), vllm, sglang, trtllm, torch "
        "(ProfilerStep#N), or a regular expression with named groups",
        _parse_steps,
        control=("steps-source", "value"),
        from_control=lambda r: _parse_steps(str(r or "").strip() or "auto"),
        invalid="not a preset (auto, seed, vllm, sglang, trtllm, torch) or a usable rule",
    ),
    Field(
        "step_pid",
        "step_pid",
        "the annotating process whose step statistics are shown (absent: the first with steps)",
        _parse_pid,
        control=("step-pid", "value"),
        from_control=lambda r: None if r in (None, "") else _parse_pid(str(r)),
    ),
    Field(
        "busy", "busy", "what counts as GPU busy: " + ", ".join(BUSY), _choice(BUSY), control=("busy-source", "value")
    ),
    Field(
        "stats",
        "stats",
        "statistics for the whole trace or the visible window: " + ", ".join(STATS),
        _choice(STATS),
        control=("stats-for", "value"),
    ),
    Field(
        "kernel",
        "kernel",
        "kernel table quick filter (case-insensitive substring)",
        _parse_text,
        control=("kernel-filter", "value"),
        from_control=lambda r: _parse_text(r or ""),
    ),
    Field(
        "kernel_names",
        "kernel_names",
        "kernel table grouped by short or full (demangled) name",
        _choice(("short", "full")),
        control=("kernel-names", "value"),
    ),
    Field(
        "api_by",
        "api_by",
        "CUDA API table rows: name (one per call, suffixes folded) or family (launch, sync, "
        "memcpy, memset, graph, other)",
        _choice(("name", "family")),
        control=("api-group", "value"),
    ),
    Field(
        "hide_devices",
        "hide_devices",
        "GPUs left out of the timeline (comma list of device ids)",
        _parse_devices,
        fmt=lambda v: ",".join(map(str, v)),
        control=("hide-devices", "value"),
        to_control=list,
        from_control=_devices_from_control,
    ),
    Field(
        "group",
        "group",
        "NVTX names grouped by normalised name: 1 or 0 (absent: automatic, grouped when names carry op_id)",
        _parse_bool,
        fmt=lambda v: "1" if v else "0",
        control=("nvtx-group", "value"),
        to_control=lambda v: {None: "auto", True: "on", False: "off"}[v],
        from_control=lambda r: {"auto": None, "on": True, "off": False}[r],
    ),
    Field(
        "gap_us",
        "gap_us",
        "idle-gap threshold in µs",
        _parse_number,
        fmt=_num,
        control=("gap-threshold", "value"),
        from_control=_gap_from_control,
    ),
    *(
        Field(
            SORT_ATTR[t],
            "sort" if t == "kernels" else SORT_ATTR[t],
            f"{t} table sort: column or -column (descending)",
            _parse_sort(t),
        )
        for t in TABLE_COLUMNS
    ),
    *(
        Field(
            FILTER_ATTR[t],
            FILTER_ATTR[t],
            f"{t} table column filters (AG Grid filter model, JSON)",
            lambda raw, t=t: canonical_filter(raw, t),
        )
        for t in TABLE_COLUMNS
    ),
    Field(
        "mark",
        "mark",
        "the table row marked in the timeline: kind:start_ns-end_ns (kind: " + ", ".join(MARK_KINDS) + ")",
        _parse_mark,
        fmt=lambda v: f"{v[0]}:{v[1]}-{v[2]}",
    ),
    Field(
        "search",
        "search",
        "the timeline search: a case-insensitive substring of kernel, NVTX or CUDA API names, or /a regular "
        "expression/ (RE2)",
        _parse_search,
        control=("timeline-search", "value"),
        from_control=lambda r: _parse_search(str(r or "")),
        invalid=f"not printable text of at most {_MAX_TEXT} characters",
    ),
    Field(
        "hit",
        "hit",
        "the search occurrence gone to last (1-based, in time order; Next/Previous step from it)",
        _parse_hit,
    ),
    Field(
        "notes",
        "note",
        "a note pinned to an interval or a point: T0_NS-T1_NS:TEXT or T_NS:TEXT (repeatable; TEXT UTF-8, "
        f"percent-encoded, 1 to {MAX_NOTE_TEXT} characters; at most {MAX_NOTES} notes and "
        f"{MAX_NOTES_CHARS:,} characters of notes in a link)",
        parse_note,
        fmt=format_note,
        repeat=notes_from_link,
    ),
)


BY_NAME = {f.name: f for f in FIELDS}


# What a typed control's notice calls it and what it takes (the labels on the page), never a Python value.
CONTROL_TEXT = {
    "threshold": ("Prefill when tokens ≥", "a token count from 0 to 10^15 (empty: the automatic split)"),
    "gap_us": ("Gaps of at least (µs)", "a number of µs from 0 to 10^15"),
}


CONTROL_DEFAULT_TEXT = {"threshold": "the automatic split"}


CONTROL_FIELDS = tuple(f for f in FIELDS if f.control is not None)
