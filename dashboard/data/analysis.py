"""``TraceAnalysis``: every memoised result derived from one loaded trace, in one place.

A trace (``LoadedTrace``) is an immutable value; its analysis lives as long as it does and is found by
``analysis_of(trace)``. Results of the bundle (busy unions, launches, dispatches, attribution: see
``analysis.derived.BundleAnalysis``) are computed once; a window of the trace is a trace of its own
(``windowed``), kept in this trace's memo, with its own analysis.
"""

from __future__ import annotations

import threading
import weakref

from dashboard.analysis.derived import BundleAnalysis, Memo
from dashboard.analysis.summary import summarize
from dashboard.analysis.window import clip_bundle
from dashboard.data.trace import LoadedTrace


class TraceAnalysis(BundleAnalysis):
    """The derived results of one trace (a ``LoadedTrace``; held weakly: the trace owns its analysis)."""

    def __init__(self, trace):
        self._trace = weakref.ref(trace)
        self.memo = Memo()

    @property
    def trace(self):
        """The trace this analysis belongs to."""
        return self._trace()

    @property
    def bundle(self):
        """The trace's event frames (None for a summary input)."""
        return self.trace.bundle

    @property
    def gpu_end_ns(self):
        """End of the trace's GPU activity: closes the last dispatch."""
        return self.trace.summary.gpu_end_ns

    @property
    def summary_timeline(self):
        """A summary input's dispatch marks."""
        return self.trace.summary.dispatch_timeline

    def windowed(self, window: tuple[int, int] | None):
        """The trace clipped to ``window`` (``analysis.window.clip_bundle``, summary recomputed from the
        clipped frames), or the trace itself for None or a summary input (no intervals to clip)."""
        trace = self.trace
        if window is None or trace.bundle is None:
            return trace

        def clip():
            b = clip_bundle(trace.bundle, int(window[0]), int(window[1]))
            return LoadedTrace(trace.path, trace.meta, summarize(b, dispatch_prefix=trace.dispatch_prefix), b,
                               trace.dispatch_prefix)

        return self.memo.get(("window", tuple(window)), clip)

    def window(self, window: tuple[int, int] | None) -> "TraceAnalysis":
        """The analysis of ``windowed(window)`` (this one for None)."""
        return analysis_of(self.windowed(window))

    def findings(self, threshold: float | None, prefix: str):
        """Every findings rule at its defaults (``analysis.findings.evaluate``), ranked; shared by the
        panel, the compare page and ``report`` (callers must not change it)."""
        from dashboard.analysis.findings import evaluate

        trace = self.trace
        return self.memo.get(("findings", threshold, prefix), lambda: evaluate(
            trace.summary, trace.bundle, dispatch_prefix=prefix, threshold=threshold, derived=self))


_LOCK = threading.Lock()
_ANALYSES: dict[int, tuple[weakref.ref, TraceAnalysis]] = {}
_GATES: dict[int, tuple[weakref.ref, threading.RLock]] = {}


def _prune(table: dict) -> None:
    for k in [k for k, (ref, _) in table.items() if ref() is None]:
        del table[k]


def analysis_of(trace) -> TraceAnalysis:
    """The ``TraceAnalysis`` of ``trace`` (created on first use; dies with the trace)."""
    key = id(trace)
    with _LOCK:
        hit = _ANALYSES.get(key)
        if hit is not None and hit[0]() is trace:
            return hit[1]
        _prune(_ANALYSES)
        ta = TraceAnalysis(trace)
        _ANALYSES[key] = (weakref.ref(trace), ta)
        return ta


def memo(trace, key: tuple, compute):
    """``compute()`` for ``trace`` and ``key``, computed once and kept with the trace's analysis
    (thread-safe; least recently used results dropped first)."""
    return analysis_of(trace).memo.get(key, compute)


def trace_gate(trace) -> threading.RLock:
    """The lock under which ``trace``'s page views render one at a time (``app.views.base.render_view``):
    a large trace's first page renders each view through its own request, all at once, and their
    working memory would add up. Zooms do not take it, and the memo does not either (a zoom never
    waits for a page's analyses). Re-entrant."""
    key = id(trace)
    with _LOCK:
        hit = _GATES.get(key)
        if hit is not None and hit[0]() is trace:
            return hit[1]
        _prune(_GATES)
        gate = threading.RLock()
        _GATES[key] = (weakref.ref(trace), gate)
        return gate


__all__ = ["TraceAnalysis", "analysis_of", "memo", "trace_gate"]
