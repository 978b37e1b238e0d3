"""Translate between the URL's ViewState and the page's controls (pure functions, no Dash)."""

from __future__ import annotations

from dataclasses import replace

from dashboard.render import window_from_relayout
from dashboard.state import DEFAULT, SORT_COLUMNS, ViewState, to_query


def state_from_controls(trace, prefix, threshold, busy, lanes, group, gap_us, tab, window, *,
                        sort: str | None = None, kernel: str = "", hide_devices=(),
                        kernel_names: str = "short") -> ViewState:
    """The ViewState the page shows now (invalid control values fall back to defaults)."""
    def number(value):
        try:
            v = float(value)
        except (TypeError, ValueError):
            return None
        return v if v == v and 0 <= v < 1e15 else None

    t = number(threshold)
    g = number(gap_us)
    w = window if isinstance(window, (list, tuple)) and len(window) == 2 else None
    return ViewState(
        trace=trace or "", tab=tab if tab in ("kernels", "api", "dispatches", "gaps", "nvtx") else DEFAULT.tab,
        t0_ns=int(w[0]) if w else None, t1_ns=int(w[1]) if w else None,
        lanes=tuple(lanes) if isinstance(lanes, (list, tuple)) else DEFAULT.lanes,
        threshold=t, prefix=(prefix or "").strip() or DEFAULT.prefix,
        busy=busy if busy in ("kernels", "kernels+memops") else DEFAULT.busy,
        group=bool(group), gap_us=g if g is not None else DEFAULT.gap_us,
        sort=sort if sort and sort.lstrip("-") in SORT_COLUMNS else DEFAULT.sort,
        kernel=(kernel or "")[:200],
        kernel_names=kernel_names if kernel_names in ("short", "full") else "short",
        hide_devices=tuple(int(d) for d in (hide_devices or ()) if isinstance(d, int) or str(d).isdigit()),
    )


def kernel_column_state(sort: str) -> list[dict]:
    """AG Grid column state that sorts the kernel table by ``sort`` (``-col`` = descending)."""
    col = sort.lstrip("-")
    direction = "desc" if sort.startswith("-") else "asc"
    return [{"colId": c, "sort": direction if c == col else None, "sortIndex": 0 if c == col else None}
            for c in SORT_COLUMNS]


def sort_from_column_state(column_state) -> str | None:
    """``col`` / ``-col`` of the sorted column in an AG Grid column state, or None."""
    if not isinstance(column_state, list):
        return None
    for c in column_state:
        if isinstance(c, dict) and c.get("sort") in ("asc", "desc"):
            return ("-" if c["sort"] == "desc" else "") + str(c.get("colId", ""))
    return None


def window_after(relayout, current):
    """The window to record after a timeline relayout: its new x range, None on reset, else unchanged."""
    if isinstance(relayout, dict) and relayout.get("xaxis.autorange"):
        return None
    w = window_from_relayout(relayout, None)
    return list(w) if w else current


def search_for(state: ViewState) -> str:
    """``?query`` for the address bar (canonical)."""
    return "?" + to_query(state)


def controls_for(state: ViewState, served: list[str], explain_missing) -> tuple[dict, list[str]]:
    """Control values for a state read from a link, and notices (bad values, missing trace)."""
    notices = list(state.warnings)
    trace = state.trace
    if trace and trace not in served:
        notices.append(explain_missing(trace))
        trace = ""
    if not trace:
        trace = served[0] if served else None
    return {
        "trace": trace, "prefix": state.prefix, "threshold": state.threshold, "busy": state.busy,
        "lanes": list(state.lanes), "group": ["group"] if state.group else [], "gap_us": state.gap_us,
        "tab": state.tab, "window": list(state.window()) if state.window() else None,
        "kernel": state.kernel, "hide_devices": list(state.hide_devices), "kernel_names": state.kernel_names,
    }, notices


def with_trace(state: ViewState, trace: str) -> ViewState:
    """The state for another trace: the time window belongs to the old one and is dropped."""
    return replace(state, trace=trace, t0_ns=None, t1_ns=None)
