"""Search: the occurrences of a name in a trace (kernels, NVTX ranges and marks, CUDA API calls), in time order.

A query is a case-insensitive substring, or a regular expression between slashes (``/gemm|gemv/``, RE2
syntax, case-sensitive as written: ``(?i)`` ignores case). RE2 matches in time linear in the name, so
a pattern typed into a shared server cannot hang it. Names are matched once per distinct name (the
frames hold them as categoricals), so a search costs one pass over the codes of each frame.

Steps are found through their annotations: a vLLM ``execute_context_…`` step is an NVTX range, a
seed step a ``CG_DISPATCH`` mark.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import re2

from dashboard.analysis.tables import clean_api_name
from dashboard.model import TraceBundle

MAX_QUERY_CHARS = 200

# Occurrence kinds, in the order ties in time are listed; each is a mark kind of the view state.
KINDS = ("kernel", "nvtx", "api")
KIND_WORDS = {"kernel": ("kernel", "kernels"), "nvtx": ("NVTX annotation", "NVTX annotations"),
              "api": ("CUDA API call", "CUDA API calls")}  # fmt: skip


class SearchError(ValueError):
    """A query that is not a search: empty, too long, or a regular expression RE2 cannot compile."""


@dataclass(frozen=True)
class Query:
    """A parsed search: ``text`` as typed (stripped), ``pattern`` (RE2) and whether it was a regex."""

    text: str
    regex: bool
    pattern: object

    def matches(self, name: str) -> bool:
        return self.pattern.search(name) is not None


def _options(case_sensitive: bool):
    opts = re2.Options()
    opts.log_errors = False  # a bad pattern is the user's message, not a line in the server log
    opts.case_sensitive = case_sensitive
    return opts


def parse_query(text: str) -> Query:
    """The query for a search box's text: ``/re/`` is a regular expression, anything else a
    case-insensitive substring.

    Raises:
        SearchError: empty text, more than ``MAX_QUERY_CHARS`` characters, unprintable text, or a
            regular expression RE2 cannot compile (its reason in the message).
    """
    text = (text or "").strip()
    if not text:
        raise SearchError("the search is empty")
    if len(text) > MAX_QUERY_CHARS or not text.isprintable():
        raise SearchError(f"a search is printable text of at most {MAX_QUERY_CHARS} characters")
    regex = len(text) >= 2 and text.startswith("/") and text.endswith("/")
    source = text[1:-1] if regex else text
    try:
        if regex:
            pattern = re2.compile(source, _options(True))
        else:
            opts = _options(False)
            opts.literal = True
            pattern = re2.compile(source, opts)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise SearchError(f"/{source}/ is not a regular expression RE2 reads: {reason}") from None
    return Query(text, regex, pattern)


@dataclass(frozen=True)
class Occurrences:
    """Every occurrence of a query, sorted by (start_ns, kind, row): int64 ``start_ns`` / ``end_ns``
    (an NVTX mark: ``end_ns == start_ns``), ``kind`` (int8 index into ``KINDS``), ``row`` (position in
    that kind's frame: timed kernels, NVTX ranges then marks, CUDA API calls) and ``names`` (the
    distinct matching names per kind)."""

    query: Query
    start_ns: np.ndarray
    end_ns: np.ndarray
    kind: np.ndarray
    row: np.ndarray
    names: dict[str, tuple[str, ...]]

    def __len__(self) -> int:
        return len(self.start_ns)

    def counts(self) -> dict[str, int]:
        """Occurrences per kind (every kind, 0 included)."""
        n = np.bincount(self.kind, minlength=len(KINDS)) if len(self.kind) else np.zeros(len(KINDS), int)
        return {k: int(n[i]) for i, k in enumerate(KINDS)}

    def in_window(self, window: tuple[int, int] | None) -> np.ndarray:
        """Positions of the occurrences that overlap ``[t0, t1)`` (a mark: lies in it); all when None."""
        if window is None:
            return np.arange(len(self))
        t0, t1 = window
        stop = int(np.searchsorted(self.start_ns, t1, side="left"))
        s, e = self.start_ns[:stop], self.end_ns[:stop]
        return np.flatnonzero((e > t0) | ((e == s) & (s >= t0)))

    def interval(self, position: int) -> tuple[str, int, int]:
        """``(kind, start_ns, end_ns)`` of one occurrence, as a mark of the view state (a mark of
        NVTX, which has no length, gets 1 ns)."""
        s, e = int(self.start_ns[position]), int(self.end_ns[position])
        return KINDS[int(self.kind[position])], s, max(e, s + 1)


def _matching(names: pd.Series, query: Query, also=None) -> tuple[np.ndarray, tuple[str, ...]]:
    """Which rows of a categorical ``names`` column match (a bool mask), and the matching names.
    ``also``: another spelling of each name that may match instead (a CUDA API call's display name)."""
    if isinstance(names.dtype, pd.CategoricalDtype):
        cats = names.cat.categories.astype(str).tolist()
        codes = names.cat.codes.to_numpy()
    else:  # a frame built without categoricals (tests, old caches): factorize once
        codes, uniques = pd.factorize(names.astype(str))
        cats = [str(u) for u in uniques]
    hit = np.array([query.matches(n) or (also is not None and query.matches(also(n))) for n in cats] + [False])
    # one lookup per row (code -1, a missing name, reads the last entry: no match)
    return hit[codes], tuple(n for n, h in zip(cats, hit) if h)


def find(bundle: TraceBundle, kernels: pd.DataFrame, query: Query) -> Occurrences:
    """The occurrences of ``query`` in a trace: ``kernels`` are its timed kernel rows (those the
    timeline draws) matched by short or demangled name; NVTX ranges on the timeline (start >= 0)
    and marks by name (with its domain); CUDA API calls by raw or display name."""
    parts = []  # (kind, rows, start, end)
    names: dict[str, tuple[str, ...]] = {}
    short, n_short = _matching(kernels["short_name"], query)
    full, n_full = _matching(kernels["name"], query) if "name" in kernels else (short, ())
    krows = np.flatnonzero(short | full)
    parts.append((0, krows, kernels["start_ns"].to_numpy()[krows], kernels["end_ns"].to_numpy()[krows]))
    names["kernel"] = tuple(dict.fromkeys(n_short + n_full))
    r = bundle.nvtx_ranges
    ranges, n_ranges = _matching(r["name"], query)
    rrows = np.flatnonzero(ranges & (r["start_ns"].to_numpy() >= 0))
    m = bundle.nvtx_marks
    marks, n_marks = _matching(m["name"], query)
    mrows = np.flatnonzero(marks)
    ts = m["ts_ns"].to_numpy()[mrows]
    parts.append((1, rrows, r["start_ns"].to_numpy()[rrows], r["end_ns"].to_numpy()[rrows]))
    parts.append((1, len(r) + mrows, ts, ts))
    names["nvtx"] = tuple(dict.fromkeys(n_ranges + n_marks))
    a = bundle.api_calls
    calls, names["api"] = _matching(a["name"], query, also=clean_api_name)
    arows = np.flatnonzero(calls)
    parts.append((2, arows, a["start_ns"].to_numpy()[arows], a["end_ns"].to_numpy()[arows]))
    start = np.concatenate([p[2] for p in parts]).astype(np.int64, copy=False)
    end = np.concatenate([p[3] for p in parts]).astype(np.int64, copy=False)
    kind = np.concatenate([np.full(len(p[1]), p[0], dtype=np.int8) for p in parts])
    row = np.concatenate([np.asarray(p[1], dtype=np.int64) for p in parts])
    order = np.argsort(start, kind="stable")  # ties keep the kind order, then the row order
    return Occurrences(query, start[order], end[order], kind[order], row[order], names)


def step_to(occ: Occurrences, current: int | None, direction: int, window: tuple[int, int] | None) -> int | None:
    """The 1-based occurrence that Next (``direction`` 1) or Previous (-1) goes to from ``current``
    (1-based, or None: none visited yet), wrapping at the ends; None when there is none.

    Without a current one, Next goes to the first occurrence that starts in or after the window (the
    first of all past the last), Previous to the last that starts before the window's end."""
    n = len(occ)
    if n == 0:
        return None
    if current is not None and 1 <= current <= n:
        return (current - 1 + direction) % n + 1
    if window is None:
        return 1 if direction > 0 else n
    if direction > 0:
        i = int(np.searchsorted(occ.start_ns, window[0], side="left"))
        return i + 1 if i < n else 1
    i = int(np.searchsorted(occ.start_ns, window[1], side="left"))
    return i if i > 0 else n


def count_text(occ: Occurrences, window: tuple[int, int] | None) -> str:
    """``"elementwise_kernel: 15,498 in the trace, 212 in view"``, with what they are: ``(15,000
    kernels, 498 CUDA API calls)``."""
    total = len(occ)
    if total == 0:
        return f"{occ.query.text}: no kernel, NVTX annotation or CUDA API call matches"
    shown = f"{occ.query.text}: {total:,} in the trace, {len(occ.in_window(window)):,} in view"
    parts = [f"{n:,} {KIND_WORDS[k][n != 1]}" for k, n in occ.counts().items() if n]
    return f"{shown} ({', '.join(parts)})"
