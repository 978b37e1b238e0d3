"""Memoised derived results of one TraceBundle: the per-bundle half of the derived-data layer.

Every consumer (views, findings, export, compare, the CLI) asks this object instead of computing
its own copy: one kernel -> launch join (``analysis.launches``), one busy union per busy source, one
set of dispatches per prefix and one attribution of kernels to them. Bundles are immutable values,
so a result never goes stale; it lives as long as this object, which lives with its trace
(``dashboard.data.derived.analysis_of``). Pure: no I/O, no figures.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import pandas as pd

from dashboard.analysis import phases as ph
from dashboard.analysis.attribution import UNATTRIBUTED, attribute_kernels, dispatch_busy_ns
from dashboard.analysis.categories import categorize_kernels
from dashboard.analysis.gpu_time import GpuOverview, gpu_time, overview_of, stream_sharing, work_for_source
from dashboard.analysis.kernel_times import kernel_durations, kernel_end_ns, timed_kernels
from dashboard.analysis.launches import kernel_launches, launch_index
from dashboard.analysis.nsys_rules import gpu_ops
from dashboard.analysis.search import Occurrences, find, parse_query
from dashboard.analysis.summary import dispatch_marks
from dashboard.analysis.timeline import WindowIndex, device_unions
from dashboard.model import DISPATCH_MARKS, TraceBundle, conform, empty_frame

MEMO_ENTRIES = 48  # results kept per bundle (least recently used dropped first)
SEARCH_ENTRIES = 8  # searches kept per bundle


class Memo:
    """A thread-safe LRU of computed values: threads asking for one key at once wait for one
    computation; a computation may ask for other keys (re-entrant per key)."""

    def __init__(self, entries: int = MEMO_ENTRIES):
        self.entries = entries
        self._values: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._computing: dict = {}

    def get(self, key, compute):
        """``compute()`` for ``key``, computed once and kept (LRU)."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
            gate = self._computing.setdefault(key, threading.Lock())
        with gate:
            with self._lock:
                if key in self._values:
                    self._values.move_to_end(key)
                    return self._values[key]
            try:
                value = compute()
                with self._lock:
                    self._values[key] = value
                    while len(self._values) > self.entries:
                        self._values.popitem(last=False)
            finally:
                with self._lock:
                    self._computing.pop(key, None)
        return value

    def __len__(self) -> int:
        return len(self._values)


class BundleAnalysis:
    """Derived results of ``bundle`` (None for a summary input: only what a summary has)."""

    def __init__(
        self, bundle: TraceBundle | None, gpu_end_ns: int | None = None, *, summary_timeline: pd.DataFrame | None = None
    ):
        self.bundle = bundle
        self.gpu_end_ns = gpu_end_ns  # closes the last dispatch (phases.build_dispatches)
        self.summary_timeline = summary_timeline  # a summary input's dispatch marks (no bundle)
        self.memo = Memo()
        self.searches = Memo(SEARCH_ENTRIES)  # apart: typed searches never push out the other results

    # ----- kernels --------------------------------------------------------------------------------------------
    def kernel_end(self) -> np.ndarray:
        """``kernel_times.kernel_end_ns``: kernel ends with same-stream overruns clipped, as every figure uses."""
        return self.memo.get(("kernel_end",), lambda: kernel_end_ns(self.bundle.kernels))

    def kernel_durations(self) -> np.ndarray:
        """``kernel_times.kernel_durations`` as int64 numpy (0 for invalid rows). Not kept: only findings rules read it
        (their results are kept), it takes ~0.1 s for 10M kernels from the kept clipped ends, and kept it held
        80 MB of a served trace's memory."""
        return kernel_durations(self.bundle.kernels).to_numpy(np.int64)

    def timed_kernels(self) -> pd.DataFrame:
        """``kernel_times.timed_kernels``: the rows that count for span and busy, ends clipped."""
        return self.memo.get(("timed_kernels",), lambda: timed_kernels(self.bundle.kernels))

    def search(self, text: str) -> Occurrences:
        """The occurrences of a search (``search.find``; raises ``search.SearchError`` for a bad query)."""
        query = parse_query(text)
        return self.searches.get(query.text, lambda: find(self.bundle, self.timed_kernels(), query))

    def stream_sharing(self):
        """``gpu_time.stream_sharing`` of the timed kernels (how stream lanes are named)."""
        return self.memo.get(("stream_sharing",), lambda: stream_sharing(self.timed_kernels()))

    def gpu_ops(self) -> pd.DataFrame:
        """``nsys_rules.gpu_ops``: the GPU operations as the nsys-analyze rules see them."""
        return self.memo.get(("gpu_ops",), lambda: gpu_ops(self.bundle))

    def categories(self) -> pd.Series:
        """Category of every kernel row (``categorize_kernels``)."""
        return self.memo.get(("categories",), lambda: categorize_kernels(self.bundle.kernels)["category"])

    # ----- busy -----------------------------------------------------------------------------------------------
    def work(self, busy_source: str) -> pd.DataFrame:
        """GPU work counted as busy for a busy source (``gpu_time.work_for_source``): views of the frames'
        columns, so kept (the overview, timeline, Gantt and idle gaps each asked for their own)."""
        return self.memo.get(
            ("work", busy_source), lambda: work_for_source(self.bundle, busy_source, self.timed_kernels())
        )

    def gpu_time(self, busy_source: str) -> pd.DataFrame:
        """``gpu_time.gpu_time`` of the work a busy source counts: the Per GPU table and the overview's cards."""
        return self.memo.get(
            ("gpu_time", busy_source),
            lambda: gpu_time(self.work(busy_source), self.bundle.kernels, self.busy_unions(busy_source)),
        )

    def gpu_overview(self, busy_source: str) -> GpuOverview:
        """``gpu_time.trace_gpu_overview`` of the bundle, from the memoised per-GPU table."""
        return overview_of(self.gpu_time(busy_source), busy_source)

    def busy_unions(self, busy_source: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Per-device busy unions for a busy source, reused by every zoom of the timeline."""
        return self.memo.get(("busy_unions", busy_source), lambda: device_unions(self.work(busy_source)))

    # ----- launches -------------------------------------------------------------------------------------------
    def launches(self) -> pd.DataFrame:
        """``launches.kernel_launches`` of the kernels and CUDA API calls. The index of the calls it is made with
        is not kept (10M calls: 114 MiB): a zoom looks its drawn kernels up in this join (``launches_at``)."""
        return self.memo.get(
            ("launches",),
            lambda: kernel_launches(self.bundle.kernels, self.bundle.api_calls, launch_index(self.bundle.api_calls)),
        )

    # ----- zoom windows ---------------------------------------------------------------------------------------
    def drawn_ranges(self) -> pd.DataFrame:
        """The NVTX ranges the timeline draws (``start_ns >= 0``): the frame itself when that is every one."""

        def compute():
            r = self.bundle.nvtx_ranges
            started = r["start_ns"].to_numpy() >= 0
            return r if started.all() else r[started]

        return self.memo.get(("drawn_ranges",), compute)

    def _zoomed_frames(self) -> dict:
        return {
            "kernels": self.timed_kernels,
            "api_calls": lambda: self.bundle.api_calls,
            "memops": lambda: self.bundle.memops,
            "nvtx_ranges": self.drawn_ranges,
        }

    def window_index(self, frame: str) -> WindowIndex:
        """``WindowIndex`` of the timed kernels ("kernels"), the CUDA API calls ("api_calls"), the memory
        operations ("memops") or the drawn NVTX ranges ("nvtx_ranges"): each zoom of the timeline finds the rows
        it draws there instead of comparing every row."""

        def compute():
            f = self._zoomed_frames()[frame]()
            return WindowIndex(f["start_ns"].to_numpy(), f["end_ns"].to_numpy())

        return self.memo.get(("window_index", frame), compute)

    def prepare_zooms(self) -> None:
        """Compute once, ahead of the first zoom, what every zoom of the timeline reads: the window indexes and
        how streams are shared (their lanes' names), so that the first zoom does not build them."""
        if self.bundle is None:
            return
        for frame in self._zoomed_frames():
            self.window_index(frame)
        if len(self.bundle.kernels):
            self.stream_sharing()

    # ----- dispatches -----------------------------------------------------------------------------------------
    def dispatch_marks(self, prefix: str) -> pd.DataFrame:
        """``summary.dispatch_marks`` for ``prefix`` (a summary input: its dispatch timeline)."""

        def compute():
            if self.bundle is not None:
                return dispatch_marks(self.bundle, prefix)
            tl = self.summary_timeline
            sel = tl[tl["name"].astype(str).str.startswith(prefix)] if prefix else tl
            return conform(sel.reset_index(drop=True), DISPATCH_MARKS) if len(sel) else empty_frame(DISPATCH_MARKS)

        return self.memo.get(("dispatch_marks", prefix), compute)

    def dispatches(self, prefix: str) -> pd.DataFrame:
        """Dispatch steps for ``prefix`` (``phases.build_dispatches``, the last closed at ``gpu_end_ns``)."""
        return self.memo.get(
            ("dispatches", prefix), lambda: ph.build_dispatches(self.dispatch_marks(prefix), end_ns=self.gpu_end_ns)
        )

    def attribution(self, prefix: str, dispatches: pd.DataFrame | None = None) -> np.ndarray:
        """Dispatch index per kernel (UNATTRIBUTED when unknown) for the dispatches of ``prefix``
        (``attribution.attribute_kernels`` on ``launches``). ``dispatches``: the trace's steps of ``prefix``
        cut to this analysis's window (a stats window), kept apart from the steps this bundle's own marks
        make (a window's marks miss the step that began before it, and number the steps from 0)."""
        own = self.dispatches(prefix)
        if dispatches is not None and (dispatches is own or dispatches.equals(own)):
            dispatches = None  # the whole trace's own steps, asked for by a view: one attribution, not two
        d = own if dispatches is None else dispatches
        return self.memo.get(
            ("attribution", prefix, dispatches is None),
            lambda: attribute_kernels(self.bundle.kernels, self.bundle.api_calls, d, self.launches()),
        )

    def dispatch_busy(self, prefix: str, count: int) -> np.ndarray:
        """GPU busy per dispatch of ``prefix`` (union of its own attributed kernels), int64 ns."""
        return self.memo.get(
            ("dispatch_busy", prefix),
            lambda: dispatch_busy_ns(
                self.bundle.kernels["start_ns"].to_numpy(np.int64), self.kernel_end(), self.attribution(prefix), count
            ),
        )


__all__ = ["BundleAnalysis", "Memo", "MEMO_ENTRIES", "UNATTRIBUTED"]
