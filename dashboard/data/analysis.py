"""``TraceAnalysis``: every memoised result derived from one loaded trace, in one place.

A trace (``LoadedTrace``) is an immutable value; its analysis lives as long as it does and is found by
``analysis_of(trace)``. Results of the bundle (busy unions, launches, dispatches, attribution: see
``analysis.derived.BundleAnalysis``) are computed once; a window of the trace is a trace of its own
(``windowed``), kept in this trace's memo, with its own analysis.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from dashboard.analysis.derived import SEARCH_ENTRIES, BundleAnalysis, Memo
from dashboard.analysis.summary import summarize
from dashboard.analysis.window import clip_bundle
from dashboard.data.gate import PriorityGate
from dashboard.data.trace import LoadedTrace


class TraceAnalysis(BundleAnalysis):
    """The derived results of one trace (a ``LoadedTrace``; held weakly: the trace owns its analysis)."""

    def __init__(self, trace):
        self._trace = weakref.ref(trace)
        self.memo = Memo()
        self.searches = Memo(SEARCH_ENTRIES)

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
            return LoadedTrace(
                trace.path, trace.meta, summarize(b, dispatch_prefix=trace.dispatch_prefix), b, trace.dispatch_prefix
            )

        return self.memo.get(("window", tuple(window)), clip)

    def window(self, window: tuple[int, int] | None) -> "TraceAnalysis":
        """The analysis of ``windowed(window)`` (this one for None)."""
        return analysis_of(self.windowed(window))

    def steps(self, spec):
        """``(StepSource, STEPS)`` of the trace for a parsed step source (``analysis.steps.build_steps``:
        every process; a summary input's dispatch timeline read as marks). Kept per spec."""
        from dashboard.analysis import steps as st

        def compute():
            b = self.bundle
            if b is not None:
                return st.bundle_steps(b, spec, end_ns=self.gpu_end_ns)
            return st.build_steps(None, st.timeline_marks(self.summary_timeline), spec, end_ns=self.gpu_end_ns)

        return self.memo.get(("steps", spec), compute)

    def step_attribution(self, spec) -> "np.ndarray":
        """Step index (``STEPS.index``) of every kernel row for ``spec``'s steps, UNATTRIBUTED when
        none (``analysis.steps.attribute_to_steps``: the launching call's start, same process)."""
        from dashboard.analysis import steps as st

        return self.memo.get(
            ("step_attribution", spec),
            lambda: st.attribute_to_steps(self.steps(spec)[1], self.launches(), len(self.bundle.kernels)),
        )

    def step_gpu(self, spec):
        """Kernels and GPU time per step (``analysis.steps.step_kernels``, STEP_GPU aligned with
        ``steps(spec)``), or None without kernels to attribute (a summary input)."""
        from dashboard.analysis import steps as st

        if self.bundle is None:
            return None
        return self.memo.get(
            ("step_gpu", spec),
            lambda: st.step_kernels(self.steps(spec)[1], self.bundle.kernels, self.bundle.api_calls, self.launches()),
        )

    def step_dispatches(self, spec):
        """A framework's steps as the serving findings' dispatches (``analysis.findings.StepDispatches``:
        the first annotating process's serving steps), or None when ``spec`` resolves to the seed's marks
        or to no annotations (the dispatch marks then, as before)."""
        from dashboard.analysis import steps as st
        from dashboard.analysis.findings import StepDispatches

        if spec is None:
            return None
        source, steps = self.steps(spec)
        if not source.framework:
            return None

        def compute():
            pids = st.step_processes(steps)
            mine = steps[steps["pid"] == pids[0]] if pids else steps
            has_kernels = self.bundle is not None and len(self.bundle.kernels)
            attr = self.step_attribution(spec) if has_kernels else np.zeros(0, np.int64)
            d, phases, a = st.serving_dispatches(mine, attr)
            return StepDispatches(d, phases, a if has_kernels else None)

        return self.memo.get(("step_dispatches", spec), compute)

    def findings(self, threshold: float | None, prefix: str, spec=None, *, rules=None, params=None):
        """The findings rules (``analysis.findings.evaluate``; ``rules``/``params``: as there), ranked. Every rule at
        its defaults is computed once and shared by the panel, the compare page and ``report`` (callers must not
        change it). ``spec``: the step source (``step_presets.StepSpec``); a framework's steps are then the serving
        rules' dispatches."""
        from dashboard.analysis.findings import evaluate

        trace = self.trace
        steps = self.step_dispatches(spec) if spec is not None else None
        searched = self.steps_searched(spec)

        def compute():
            return evaluate(
                trace.summary,
                trace.bundle,
                rules=rules,
                params=params,
                dispatch_prefix=prefix,
                threshold=threshold,
                derived=self,
                steps=steps,
                steps_searched=searched,
            )

        if rules is not None or params is not None:  # a chosen set: not shared
            return compute()
        key = ("findings", threshold, prefix, searched) if steps is None else ("findings", spec)
        return self.memo.get(key, compute)

    def steps_searched(self, spec) -> bool:
        """Whether ``spec`` is auto and found no framework's annotations (``findings``' "not evaluated" says so)."""
        return spec is not None and self.steps(spec)[0].preset is None


_LOCK = threading.Lock()
_ANALYSES: dict[int, tuple[weakref.ref, TraceAnalysis]] = {}
_GATES: dict[tuple[int, str], tuple[weakref.ref, PriorityGate]] = {}


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


def trace_gate(trace) -> PriorityGate:
    """The gate under which ``trace``'s page views render one at a time (``app.views.base.render_view``):
    a large trace's first page renders each view through its own request, all at once, and their
    working memory would add up; waiting views get in by their priority (what the page shows first).
    Zooms do not take it, and the memo does not either (a zoom never waits for a page's analyses)."""
    return _gate(trace, "page")


def zoom_gate(trace) -> PriorityGate:
    """The gate under which ``trace``'s views at a zoom window render one at a time, by priority: a zoom
    re-renders the timeline and the Gantt at once, and rendering both together (one core under the GIL)
    held the timeline's answer until the Gantt's was done too."""
    return _gate(trace, "zoom")


def _gate(trace, kind: str) -> PriorityGate:
    key = (id(trace), kind)
    with _LOCK:
        hit = _GATES.get(key)
        if hit is not None and hit[0]() is trace:
            return hit[1]
        _prune(_GATES)
        gate = PriorityGate()
        _GATES[key] = (weakref.ref(trace), gate)
        return gate


__all__ = ["TraceAnalysis", "analysis_of", "memo", "trace_gate", "zoom_gate"]
