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
``apply_row_click``, ``apply_grid``): a control change keeps the zoom window, except a change of trace,
which clears the window, the marked row and the hidden GPUs in one step (view and link together).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable
from urllib.parse import parse_qsl, urlencode

STATE_VERSION = 1
TABS = ("kernels", "api", "dispatches", "gaps", "nvtx")
LANES = ("nvtx", "marks", "gpu", "streams", "memops")
BUSY = ("kernel-rows", "kernels", "kernels+memops")  # analysis.gpu_time.BUSY_SOURCES
STATS = ("trace", "window")
MARK_KINDS = ("kernel", "dispatch", "gap")
# Sortable columns of every table (AG Grid column ids), and each table's default sort.
TABLE_COLUMNS = {
    "kernels": ("name", "category", "count", "total_ns", "mean_ns", "kernel_pct"),
    "api": ("name", "family", "raw_name", "count", "total_ns", "mean_ns"),
    "nvtx": ("name", "count", "sum_ns", "union_ns", "gpu_overlap_ns", "overlap_pct"),
    "dispatches": (
        "index",
        "phase",
        "tokens",
        "mode",
        "padded",
        "start_ns",
        "duration_ns",
        "kernels",
        "gpu_busy_ns",
        "launch_lead_ns",
        "ns_per_token",
        "context_requests",
        "context_tokens",
        "generation_requests",
        "generation_tokens",
        "batch_size",
        "pid",
        "name",
    ),
    "gaps": ("device_id", "start_ns", "duration_ns", "cause", "api_call", "nvtx_range", "memop_cover"),
}
DEFAULT_SORTS = {
    "kernels": "-total_ns",
    "api": "-total_ns",
    "nvtx": "-sum_ns",
    "dispatches": "start_ns",
    "gaps": "-duration_ns",
}
SORT_COLUMNS = TABLE_COLUMNS["kernels"]
# Per-table state attributes: sort (``col`` / ``-col``) and AG Grid column-filter model (canonical JSON).
SORT_ATTR = {
    "kernels": "sort",
    "api": "api_sort",
    "nvtx": "nvtx_sort",
    "dispatches": "dispatch_sort",
    "gaps": "gap_sort",
}
FILTER_ATTR = {t: f"{t}_filter" for t in TABLE_COLUMNS}
_TRACE_ID = re.compile(r"[^/\\\x00-\x1f]{1,255}@[0-9a-f]{8}(?:[0-9a-f]{24})?")  # 32 hex now; 8 in old links
_INT = re.compile(r"-?[0-9]{1,19}")
_MAX_TEXT = 200
_MAX_FILTER = 600
_FILTER_OPS = {
    "contains",
    "notContains",
    "equals",
    "notEqual",
    "startsWith",
    "endsWith",
    "lessThan",
    "lessThanOrEqual",
    "greaterThan",
    "greaterThanOrEqual",
    "inRange",
    "blank",
    "notBlank",
}


@dataclass(frozen=True)
class ViewState:
    """Everything a shared link reproduces. Defaults are what a fresh page shows (see ``FIELDS``)."""

    trace: str = ""
    tab: str = "kernels"
    t0_ns: int | None = None
    t1_ns: int | None = None
    lanes: tuple[str, ...] = LANES
    threshold: float | None = None
    prefix: str = "CG_DISPATCH"
    steps: str = "auto"  # the step source: auto, a preset (seed, vllm, sglang, trtllm, torch) or a user rule
    step_pid: int | None = None  # the annotating process whose step statistics are shown (None: the first)
    busy: str = "kernels"
    sort: str = "-total_ns"
    kernel: str = ""
    kernel_names: str = "short"
    api_by: str = "name"  # CUDA API table rows: per call ("name") or per family
    hide_devices: tuple[int, ...] = ()
    group: bool | None = None  # None: automatic (grouped when NVTX names carry op_id, as PyTorch's do)
    gap_us: float = 10.0
    stats: str = "trace"
    mark: tuple[str, int, int] | None = None  # (kind, start_ns, end_ns) of the clicked row marked in the timeline
    api_sort: str = DEFAULT_SORTS["api"]
    nvtx_sort: str = DEFAULT_SORTS["nvtx"]
    dispatch_sort: str = DEFAULT_SORTS["dispatches"]
    gap_sort: str = DEFAULT_SORTS["gaps"]
    kernels_filter: str = ""
    api_filter: str = ""
    nvtx_filter: str = ""
    dispatches_filter: str = ""
    gaps_filter: str = ""
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self):  # lanes and devices are sets: keep them in one canonical order
        object.__setattr__(self, "lanes", tuple(v for v in LANES if v in set(self.lanes)))
        object.__setattr__(self, "hide_devices", tuple(sorted(set(int(d) for d in self.hide_devices))))

    def window(self) -> tuple[int, int] | None:
        """``(t0_ns, t1_ns)`` when both are set, else None."""
        return (self.t0_ns, self.t1_ns) if self.t0_ns is not None and self.t1_ns is not None else None

    def stats_window(self) -> tuple[int, int] | None:
        """The window statistics are computed on: the zoom window with ``stats=window``, else None
        (whole trace)."""
        return self.window() if self.stats == "window" else None


DEFAULT = ViewState()


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
        "trace id: file name + short content hash (never a path)",
        _parse_trace,
        control=("trace-picker", "value"),
        from_control=lambda r: _parse_trace(str(r or "")),
        invalid="not a trace id (expected NAME@HASH)",
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
)
BY_NAME = {f.name: f for f in FIELDS}
# What a typed control's notice calls it and what it takes (the labels on the page), never a Python value.
CONTROL_TEXT = {
    "threshold": ("Prefill when tokens ≥", "a token count from 0 to 10^15 (empty: the automatic split)"),
    "gap_us": ("Gaps of at least (µs)", "a number of µs from 0 to 10^15"),
}
CONTROL_DEFAULT_TEXT = {"threshold": "the automatic split"}
CONTROL_FIELDS = tuple(f for f in FIELDS if f.control is not None)


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
    items: dict[str, str] = {"v": str(STATE_VERSION)}
    if state.window() is not None:
        items["t0_ns"], items["t1_ns"] = str(state.t0_ns), str(state.t1_ns)
    for f in FIELDS:
        value = getattr(state, f.name)
        if value != f.default and value is not None:
            items[f.key] = f.fmt(value)
    return urlencode(sorted(items.items()), safe=",:")


def from_query(search: str | None) -> ViewState:
    """Parse a query string (with or without ``?``). Never raises.

    Unknown keys are ignored; a bad value keeps that key's default and adds a warning (in
    ``ViewState.warnings``, which does not take part in equality).
    """
    params: dict[str, str] = {}
    repeated: list[str] = []
    try:
        for key, value in parse_qsl((search or "").lstrip("?"), keep_blank_values=True):
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
    return f"Ignored {', '.join(unknown)[:80]} in the link: not a view setting of this tracedash version."


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
            else:
                warnings.append(_bad("t0_ns/t1_ns", f"{t0},{t1}", "not a window in integer ns with t0 < t1"))
    for f in FIELDS:
        raw = get(f.key)
        if raw is None:
            continue
        try:
            values[f.name] = f.parse(raw)
        except (ValueError, TypeError, OverflowError, RecursionError):
            warnings.append(_bad(f.key, raw, f.invalid))
    if (raw := get("v")) is not None and raw != str(STATE_VERSION):
        warnings.append(f"The link was made by another version of tracedash (v={raw[:10]}); some settings may differ.")
    known = {f.name for f in fields(ViewState)}
    return replace(DEFAULT, **{k: v for k, v in values.items() if k in known}, warnings=tuple(warnings))


# ----- controls and transitions (pure; the app's sync callback calls these) ------------------------------------
def control_values(state: ViewState) -> dict[str, Any]:
    """``{field name: control value}`` for every field that has a control."""
    return {f.name: f.to_control(getattr(state, f.name)) for f in CONTROL_FIELDS}


def apply_control(state: ViewState, name: str, raw: Any) -> tuple[ViewState, str | None]:
    """The state after the control of field ``name`` changed to ``raw``, and a notice (or None).

    An invalid value keeps the previous value and returns a notice. A new trace clears the window,
    the marked row and the hidden GPUs (they belong to the old trace); every other control keeps
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
        return replace(state, trace=value, t0_ns=None, t1_ns=None, mark=None, hide_devices=()), None
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
    """The state after a click on a table row ``{"kind", "start_ns", "end_ns"}``: the timeline is
    zoomed to the row's interval with its width of context on each side (at least 1 µs), and the
    row's target is marked."""
    if not isinstance(row, dict) or row.get("kind") not in MARK_KINDS:
        return state
    try:
        s, e = int(row["start_ns"]), int(row["end_ns"])
    except (KeyError, TypeError, ValueError, OverflowError):
        return state
    if not (0 <= s < e < 2**61):
        return state
    pad = max(e - s, 1000)
    return replace(state, t0_ns=s - pad, t1_ns=e + pad, mark=(row["kind"], s, e))


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

    An unsorted table (a third header click) goes back to the table's default sort; a filter model
    the link cannot hold (unknown column, unsupported filter) leaves the state as it is.
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
