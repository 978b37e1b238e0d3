"""The timeline search, headless: its status line, its lane of marks, and Next / Previous."""

from __future__ import annotations

import numpy as np

from dashboard import units
from dashboard.analysis.search import KIND_WORDS, KINDS, Occurrences, SearchError, count_text, parse_query, step_to
from dashboard.analysis.tables import clean_api_name
from dashboard.data.analysis import analysis_of
from dashboard.data.trace import LoadedTrace
from dashboard.figures.common import escape_text
from dashboard.figures.lanes import PLOT_WIDTH_PX, SearchLane
from dashboard.state import ViewState, apply_go_to

SEARCH_BUDGET = 1_000  # occurrences in view drawn one by one; more are drawn as the bins that hold them
SEARCH_BIN_PX = 3  # bin width of the binned marks


def occurrences(trace: LoadedTrace, state: ViewState) -> Occurrences | None:
    """The occurrences of ``state.search`` (None: no search, or a trace without a timeline).

    Raises:
        SearchError: the search is not a usable query.
    """
    if not state.search or trace.bundle is None:
        return None
    return analysis_of(trace).search(state.search)


def search_status(trace: LoadedTrace | None, state: ViewState) -> str:
    """The line under the search box: ``"gemm: 43,077 in the trace, 247 in view (43,077 kernels)"``
    and the occurrence gone to, or why there is none."""
    if not state.search or trace is None:
        return ""
    if trace.bundle is None:
        return "Search needs a trace with a timeline (this input is a summary)."
    try:
        occ = occurrences(trace, state)
    except SearchError as exc:
        return f"Search: {exc}."
    text = count_text(occ, state.window())
    if state.hit is not None and len(occ) and state.hit <= len(occ):
        kind, s, e = occ.interval(state.hit - 1)
        text += f" · at #{state.hit:,}: {occurrence_name(trace, occ, state.hit - 1)} at {units.instant(s)}"
    elif state.hit is not None:
        text += f" · #{state.hit:,} of the link is past the last one: Next goes to the first"
    return text


def unusable_search(state: ViewState) -> str:
    """The link's warning for a search that is no search (``analysis.search.parse_query``'s reason); "" for none
    or a usable one. Needs no trace: what ``GET /export`` and ``tracedash export`` refuse before loading it."""
    if not state.search:
        return ""
    try:
        parse_query(state.search)
    except SearchError as exc:
        return f"Ignored search={state.search!r} in the link: {exc}"
    return ""


def search_warnings(trace: LoadedTrace, state: ViewState) -> list[str]:
    """What of a link's search a headless view (``tracedash export`` / ``report``) cannot apply, in the words
    of the link's other ignored keys: a query that is no usable search, an occurrence past the last one."""
    if not state.search:
        return []
    if trace.bundle is None:
        return [f"Ignored search={state.search!r} in the link: this input is a summary, with no timeline to search"]
    if why := unusable_search(state):
        return [why]
    occ = occurrences(trace, state)
    if state.hit is not None and state.hit > len(occ):
        found = units.count(len(occ), "occurrence")
        return [f"Ignored hit={state.hit} in the link: the search finds {found}; nothing is marked as gone to"]
    return []


def occurrence_name(trace: LoadedTrace, occ: Occurrences, position: int) -> str:
    """The name of one occurrence (a kernel's short name, an NVTX name, a CUDA API call's display name)."""
    kind, row = KINDS[int(occ.kind[position])], int(occ.row[position])
    b = trace.bundle
    if kind == "kernel":
        return str(analysis_of(trace).timed_kernels()["short_name"].iloc[row])
    if kind == "nvtx":
        n = len(b.nvtx_ranges)
        return str(b.nvtx_ranges["name"].iloc[row] if row < n else b.nvtx_marks["name"].iloc[row - n])
    return clean_api_name(str(b.api_calls["name"].iloc[row]))


def search_lane(
    trace: LoadedTrace, state: ViewState, x_range: tuple[int, int] | None, plot_width_px: int = PLOT_WIDTH_PX
) -> tuple[SearchLane | None, str | None]:
    """The lane of the search's marks for the timeline at ``x_range``, and a status note (or None).

    Up to ``SEARCH_BUDGET`` occurrences in view are drawn one by one; past that, each bin of
    ``SEARCH_BIN_PX`` pixels that an occurrence overlaps is drawn, with its count, so a match hidden in
    the timeline's level-of-detail bins is still marked."""
    try:
        occ = occurrences(trace, state)
    except SearchError:
        return None, None  # the status line says why
    if occ is None or x_range is None:
        return None, None
    label = f"search: {state.search[:40]}"
    pos = occ.in_window(x_range)
    if len(pos) <= SEARCH_BUDGET:
        s, e = occ.start_ns[pos], occ.end_ns[pos]
        hover = [
            f"<b>{escape_text(occurrence_name(trace, occ, int(p))[:120])}</b><br>"
            f"{KIND_WORDS[KINDS[int(occ.kind[p])]][0]} · #{int(p) + 1:,} of {len(occ):,} · {units.duration(int(b - a))}"
            f" · start {units.instant(int(a))}"
            for p, a, b in zip(pos.tolist(), s.tolist(), e.tolist())
        ]
        return SearchLane(label, s, e, hover), None
    lo, hi = x_range
    bins = max(1, plot_width_px // SEARCH_BIN_PX)
    edges = lo + (np.arange(bins + 1, dtype=np.int64) * (hi - lo)) // bins
    s = np.clip(occ.start_ns[pos], lo, hi - 1)
    e = np.clip(np.maximum(occ.end_ns[pos] - 1, occ.start_ns[pos]), lo, hi - 1)  # the last ns each one covers
    first = np.searchsorted(edges, s, side="right") - 1
    last = np.searchsorted(edges, e, side="right") - 1
    cover = np.zeros(bins + 1, dtype=np.int64)
    np.add.at(cover, first, 1)
    np.add.at(cover, last + 1, -1)
    counts = np.cumsum(cover)[:bins]
    held = np.flatnonzero(counts)
    hover = [
        f"<b>{int(counts[i]):,} matches</b> in {units.window((int(edges[i]), int(edges[i + 1])), exact=False)}"
        for i in held.tolist()
    ]
    note = f"{len(pos):,} search matches in view: each mark is a bin holding some (zoom in to see each one)"
    return SearchLane(label, edges[held], edges[held + 1], hover), note


def go_to(trace: LoadedTrace | None, state: ViewState, direction: int) -> tuple[ViewState, str | None]:
    """The state after Next (``direction`` 1) or Previous (-1): zoomed to the occurrence and marked,
    ``hit`` its number; or the state unchanged and why."""
    if not state.search:
        return state, "Type a kernel, NVTX or CUDA API name in the search box first."
    if trace is None or trace.bundle is None:
        return state, "Search needs a trace with a timeline."
    try:
        occ = occurrences(trace, state)
    except SearchError as exc:
        return state, f"Search: {exc}."
    hit = step_to(occ, state.hit, direction, state.window())
    if hit is None:
        return state, f"Nothing matches {state.search[:60]}: no kernel, NVTX annotation or CUDA API call."
    return apply_go_to(state, hit, occ.interval(hit - 1)), None
