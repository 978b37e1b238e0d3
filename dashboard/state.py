"""The view state a link carries: a frozen dataclass and its canonical URL query codec.

Stdlib only. ``to_query`` omits defaults and sorts keys, so equal states give byte-identical
URLs; ``from_query`` never raises: a bad value falls back to its key's default and is reported
as a warning the page shows. Key grammar (all optional; ``v`` is always written):

| key | value | meaning |
|---|---|---|
| ``trace`` | ``name@`` + 32 hex | trace id: file name + content hash or upload token (never a path) |
| ``tab`` | kernels, api, dispatches, gaps, nvtx | the open table |
| ``t0_ns``, ``t1_ns`` | int | the time window (both, t0 < t1) |
| ``lanes`` | comma list of nvtx, marks, gpu, streams, memops | timeline lanes shown |
| ``threshold`` | number >= 0 | prefill when tokens >= threshold (absent: automatic) |
| ``prefix`` | text | dispatch marker prefix |
| ``busy`` | kernels, kernels+memops | what counts as GPU busy |
| ``sort`` | ``col`` or ``-col`` | kernel table sort (``-`` = descending) |
| ``kernel`` | text | kernel table name filter (case-insensitive substring) |
| ``kernel_names`` | full | kernel table grouped by demangled name (default: short name) |
| ``hide_devices`` | comma list of ints | GPUs left out of the timeline (absent: none) |
| ``group`` | 1 | NVTX names grouped by normalised name |
| ``gap_us`` | number >= 0 | idle-gap threshold in µs |
| ``v`` | 1 | state schema version |
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields, replace
from urllib.parse import parse_qsl, urlencode

STATE_VERSION = 1
TABS = ("kernels", "api", "dispatches", "gaps", "nvtx")
LANES = ("nvtx", "marks", "gpu", "streams", "memops")
BUSY = ("kernels", "kernels+memops")
SORT_COLUMNS = ("name", "category", "count", "total_ns", "mean_ns", "busy_pct")
_TRACE_ID = re.compile(r"[^/\\\x00-\x1f]{1,255}@[0-9a-f]{8}(?:[0-9a-f]{24})?")  # 32 hex now; 8 in old links
_INT = re.compile(r"-?[0-9]{1,19}")
_MAX_TEXT = 200


@dataclass(frozen=True)
class ViewState:
    """Everything a shared link reproduces. Defaults are what a fresh page shows."""

    trace: str = ""
    tab: str = "kernels"
    t0_ns: int | None = None
    t1_ns: int | None = None
    lanes: tuple[str, ...] = LANES
    threshold: float | None = None
    prefix: str = "CG_DISPATCH"
    busy: str = "kernels"
    sort: str = "-total_ns"
    kernel: str = ""
    kernel_names: str = "short"
    hide_devices: tuple[int, ...] = ()
    group: bool = False
    gap_us: float = 10.0
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self):  # lanes and devices are sets: keep them in one canonical order
        object.__setattr__(self, "lanes", tuple(v for v in LANES if v in set(self.lanes)))
        object.__setattr__(self, "hide_devices", tuple(sorted(set(int(d) for d in self.hide_devices))))

    def window(self) -> tuple[int, int] | None:
        """``(t0_ns, t1_ns)`` when both are set, else None."""
        return (self.t0_ns, self.t1_ns) if self.t0_ns is not None and self.t1_ns is not None else None


DEFAULT = ViewState()


def _num(text: str) -> str:
    value = float(text)
    return str(int(value)) if value.is_integer() else repr(value)


def to_query(state: ViewState) -> str:
    """Canonical query string (no leading ``?``): sorted keys, defaults omitted, ``v`` always.

    Example:
        >>> to_query(ViewState(trace="a.sqlite@0123abcd", tab="gaps"))
        'tab=gaps&trace=a.sqlite%400123abcd&v=1'
    """
    items: dict[str, str] = {"v": str(STATE_VERSION)}
    if state.trace:
        items["trace"] = state.trace
    if state.tab != DEFAULT.tab:
        items["tab"] = state.tab
    if state.window() is not None:
        items["t0_ns"], items["t1_ns"] = str(state.t0_ns), str(state.t1_ns)
    if tuple(state.lanes) != DEFAULT.lanes:
        items["lanes"] = ",".join(v for v in LANES if v in state.lanes)
    if state.threshold is not None:
        items["threshold"] = _num(str(state.threshold))
    if state.prefix != DEFAULT.prefix:
        items["prefix"] = state.prefix
    if state.busy != DEFAULT.busy:
        items["busy"] = state.busy
    if state.sort != DEFAULT.sort:
        items["sort"] = state.sort
    if state.group:
        items["group"] = "1"
    if state.kernel:
        items["kernel"] = state.kernel
    if state.kernel_names != DEFAULT.kernel_names:
        items["kernel_names"] = state.kernel_names
    if state.hide_devices:
        items["hide_devices"] = ",".join(str(d) for d in state.hide_devices)
    if state.gap_us != DEFAULT.gap_us:
        items["gap_us"] = _num(str(state.gap_us))
    return urlencode(sorted(items.items()), safe=",")


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


def from_params(params: dict) -> ViewState:
    """Parse a mapping of query keys to values (str, or a list from a repeated key). Never raises."""
    warnings: list[str] = []
    values: dict = {}

    def get(key: str) -> str | None:
        raw = params.get(key)
        if isinstance(raw, (list, tuple)):
            raw = raw[0] if raw else None
        return None if raw is None else str(raw)

    def bad(key: str, raw: str) -> None:
        shown = raw if len(raw) <= 40 else raw[:37] + "..."
        warnings.append(f"Ignored {key}={shown!r} in the link: not a valid value; using the default.")

    if (raw := get("trace")) is not None:
        if _TRACE_ID.fullmatch(raw):
            values["trace"] = raw
        else:
            bad("trace", raw)
    if (raw := get("tab")) is not None:
        values["tab"] = raw if raw in TABS else (bad("tab", raw) or DEFAULT.tab)
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
            bad("t0_ns/t1_ns", f"{t0},{t1}")
    if (raw := get("lanes")) is not None:
        chosen = [v for v in raw.split(",") if v]
        if all(v in LANES for v in chosen):
            values["lanes"] = tuple(v for v in LANES if v in chosen)
        else:
            bad("lanes", raw)
    for key, attr in (("threshold", "threshold"), ("gap_us", "gap_us")):
        if (raw := get(key)) is not None:
            try:
                number = float(raw)
                if not math.isfinite(number) or number < 0 or number >= 1e15:
                    raise ValueError
                values[attr] = number
            except ValueError:
                bad(key, raw)
    if (raw := get("prefix")) is not None:
        if raw.strip() and len(raw) <= _MAX_TEXT and raw.isprintable():
            values["prefix"] = raw
        else:
            bad("prefix", raw)
    if (raw := get("busy")) is not None:
        values["busy"] = raw if raw in BUSY else (bad("busy", raw) or DEFAULT.busy)
    if (raw := get("sort")) is not None:
        values["sort"] = raw if raw.lstrip("-") in SORT_COLUMNS else (bad("sort", raw) or DEFAULT.sort)
    if (raw := get("kernel_names")) is not None:
        values["kernel_names"] = raw if raw in ("short", "full") else (bad("kernel_names", raw) or DEFAULT.kernel_names)
    if (raw := get("kernel")) is not None:
        if len(raw) <= _MAX_TEXT:
            values["kernel"] = raw
        else:
            bad("kernel", raw)
    if (raw := get("hide_devices")) is not None:
        try:
            devs = tuple(int(x) for x in raw.split(",") if x != "")
            if any(d < 0 or d > 1_000_000 for d in devs):
                raise ValueError
            values["hide_devices"] = devs
        except ValueError:
            bad("hide_devices", raw)
    if (raw := get("group")) is not None:
        values["group"] = raw in ("1", "true") if raw in ("0", "1", "true", "false") else bool(bad("group", raw))
    if (raw := get("v")) is not None and raw != str(STATE_VERSION):
        warnings.append(f"The link was made by another version of tracedash (v={raw[:10]}); some settings may differ.")
    known = {f.name for f in fields(ViewState)}
    return replace(DEFAULT, **{k: v for k, v in values.items() if k in known}, warnings=tuple(warnings))
