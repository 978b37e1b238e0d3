"""Build the seed-format summary of a trace (definitions: shared/reference/summary_contract.md)."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard.analysis.intervals import covered_before, union_intervals
from dashboard.analysis.summary_warnings import (
    FrameCounts,
    gpu_work_lines,
    kernel_row_lines,
    not_captured_line,
    untimed_line,
)
from dashboard.model import (
    API_STATS,
    DISPATCH_MARKS,
    KERNEL_STATS,
    NVTX_STATS,
    SUMMARY_NOTE,
    Summary,
    TraceBundle,
    conform,
    empty_frame,
    input_warnings,
    ns_to_s,
)

DEFAULT_DISPATCH_PREFIX = "CG_DISPATCH"
TOP_KERNELS = 20


MAX_TIMESTAMP_NS = 2**62  # beyond this a timestamp is corrupt, not a trace (about 146 years)
# A kernel longer than this is corrupt data, not GPU work (a "kernel of centuries"): no nsys capture
# lasts a day. It is left out like an invalid row, so spans, busy time and the timeline's axes stay usable.
MAX_KERNEL_DURATION_NS = 86_400 * 10**9  # 24 hours


def _invalid(s: pd.Series, e: pd.Series, dur=None) -> pd.Series:
    """Invalid kernel rows: negative start (also a NULL time, which the loader maps to -1), end <
    start, end beyond 2**62 ns, or a duration over MAX_KERNEL_DURATION_NS (Series or arrays alike; ``dur``:
    ``e - s`` when the caller has it)."""
    dur = e - s if dur is None else dur
    return (s < 0) | (e < s) | (e >= MAX_TIMESTAMP_NS) | (dur > MAX_KERNEL_DURATION_NS)


# Columns that identify a stream: the same stream id in two processes (two CUDA contexts) on one GPU
# is two streams. Every per-stream computation (overrun clipping, stream counts, lanes) keys by these.
STREAM_KEY = ("device_id", "pid", "context_id", "stream_id")


class _PerFrame:
    """A value computed once per kernel frame (frames are values: never mutated) and reused by every panel,
    dropped when its frame is: keyed by the frame's id, checked through a weak reference."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[weakref.ref, object]] = {}
        self._lock = threading.Lock()

    def get(self, frame: pd.DataFrame, compute):
        key = id(frame)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None and hit[0]() is frame:
                return hit[1]
        value = compute(frame)
        try:
            ref = weakref.ref(frame)
        except TypeError:  # not weak-referenceable: do not cache
            return value
        with self._lock:
            for k in [k for k, v in self._items.items() if v[0]() is None]:
                del self._items[k]
            self._items[key] = (ref, value)
        return value


_OVERRUNS = _PerFrame()
_USABLE = _PerFrame()


def usable_times(s, e):
    """Which kernel rows count for span and busy time, from their start and end ns (Series or arrays alike): not
    both 0 (no timestamps recorded) and not invalid (see ``invalid_kernel_count``)."""
    return ~((s == 0) & (e == 0)) & ~_invalid(s, e)


def _usable(kernels: pd.DataFrame) -> pd.Series:
    return pd.Series(usable_kernel_mask(kernels), index=kernels.index, copy=False)


def _usable_mask(kernels: pd.DataFrame) -> np.ndarray:
    mask = usable_times(kernels["start_ns"].to_numpy(np.int64), kernels["end_ns"].to_numpy(np.int64))
    mask.flags.writeable = False  # shared by every caller
    return mask


def usable_kernel_mask(kernels: pd.DataFrame) -> np.ndarray:
    """Kernel rows that count for span and busy time (``timed_kernels``' rows), as a boolean array (read-only:
    computed once per frame)."""
    return _USABLE.get(kernels, _usable_mask)


def kernels_read_not_usable(bundle: TraceBundle) -> str:
    """``UNTIMED_KERNELS`` when kernel rows were read but none counts for span and busy (every one without a
    usable timestamp, kept as an invalid row or left out by the loader), else "": the GPU ran work whose
    time is unknown, never "nothing ran"."""
    return untimed_line(bundle.meta, frame_counts(bundle))


def frame_counts(bundle: TraceBundle) -> FrameCounts:
    """The ``FrameCounts`` of a bundle."""
    k = bundle.kernels
    return FrameCounts(
        len(k),
        int(_usable(k).sum()) if len(k) else 0,
        len(bundle.api_calls) if bundle.api_totals is None else int(bundle.api_totals["count"].sum()),
        len(bundle.nvtx_ranges),
        len(bundle.nvtx_marks),
        len(bundle.memops),
        len(bundle.graph_launches),
    )


def _stream_groups(keys: list[np.ndarray], n: int) -> np.ndarray:
    """One small integer per distinct stream (tuple of ``keys``, ``n`` rows), in no particular order."""
    g = np.zeros(n, dtype=np.int64)
    radix = 1
    for k in keys:
        lo, hi = int(k.min()), int(k.max())
        if lo == hi:  # one device, process or context: nothing to tell apart
            continue
        if hi - lo < 1 << 16:  # ids in a small range (devices, streams): offsets, no hashing of every row
            codes, size = k - lo, hi - lo + 1
        else:
            codes, uniq = pd.factorize(k)
            size = len(uniq)
        radix *= max(size, 1)
        if radix >= 2**62:  # absurdly many distinct ids: let pandas group the tuples
            return (
                pd.DataFrame({i: k for i, k in enumerate(keys)})
                .groupby(list(range(len(keys))), sort=False)
                .ngroup()
                .to_numpy()
            )
        g *= size  # in place: on 10M kernels each temporary would be 80 MB
        g += codes
        del codes
    return pd.factorize(g)[0]  # dense, in order of first appearance: the same numbering whatever the codes


def stream_group_ids(kernels: pd.DataFrame, pick: np.ndarray) -> np.ndarray:
    """One integer per distinct stream (``STREAM_KEY``) for the kernel rows ``pick`` (a boolean mask): 0, 1, ...
    (dense), in no particular order."""
    n = int(np.count_nonzero(pick))
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    return _stream_groups([kernels[c].to_numpy()[pick] for c in STREAM_KEY if c in kernels], n)


def _stream_order(g: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Rows ordered by stream, then start, then end, ties in row order (``np.lexsort`` of the same keys).

    Three stable sorts: kernels come nearly ordered by start and end (timsort is linear there), and the
    stream groups are few (radix sort of small integers)."""
    order = np.argsort(e, kind="stable")
    step = np.argsort(s[order], kind="stable")
    order = order[step]
    del step  # 10M kernels: each index array is 80 MB
    small = g.astype(np.int16) if g.max(initial=0) < 2**15 else g
    return order[np.argsort(small[order], kind="stable")]


def _suffix_min(values: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Per row, the smallest value of that row and the later rows of its group (groups are contiguous and
    start at the rows ``first``)."""
    if first.size > 4096:  # many tiny groups: one grouped pass beats a loop of small ones
        group = np.repeat(np.arange(first.size), np.diff(np.r_[first, values.size]))
        return pd.Series(values[::-1]).groupby(group[::-1]).cummin().to_numpy()[::-1].copy()  # writable
    out = np.empty_like(values)
    for lo, hi in zip(first.tolist(), np.r_[first[1:], values.size].tolist()):
        np.minimum.accumulate(values[lo:hi][::-1], out=out[lo:hi][::-1])  # straight into out: no temporary
    return out


def clipping_rows(kernels: pd.DataFrame) -> np.ndarray:
    """The kernel rows that take part in overrun clipping (``overrun_kernel_count``), as a boolean array: usable,
    outside CUDA graphs, and on a known stream. A NULL stream id reads as -1: kernels of unknown streams cannot
    be put in one stream's order (a capture with NULL stream ids on some rows had kernels of two streams
    clipped against each other: 26,950 kernels clipped instead of 1,200)."""
    ok = _usable(kernels).to_numpy()
    if "graph_node_id" in kernels:
        ok = ok & kernels["graph_node_id"].isna().to_numpy()
    if "stream_id" in kernels:
        ok = ok & (kernels["stream_id"].to_numpy() >= 0)
    return ok


def _compute_overruns(kernels: pd.DataFrame) -> tuple[np.ndarray | None, int]:
    ok = clipping_rows(kernels)
    n = int(np.count_nonzero(ok))
    if n < 2:
        return None, 0
    # Every array below is one column of the usable rows: a 10M-kernel trace holds a few at a time, not a dozen.
    rows = None if n == len(kernels) else np.flatnonzero(ok)  # None: every row takes part (no copy)
    pick = slice(None) if rows is None else rows
    s = kernels["start_ns"].to_numpy(np.int64)[pick]
    e = kernels["end_ns"].to_numpy(np.int64)[pick]
    g = _stream_groups([kernels[c].to_numpy()[pick] for c in STREAM_KEY if c in kernels], n)
    g = g.astype(np.int32) if g.max(initial=0) < 2**31 else g
    order = _stream_order(g, s, e)  # by stream, then start, then end
    g = g[order]
    same = g[1:] == g[:-1]  # row i and i + 1 are on the same stream
    first = np.r_[0, np.flatnonzero(~same) + 1]
    del g
    e = e[order]
    # Smallest end among the kernels that start after row i on its stream (stream order: they ran after it).
    later_min = _suffix_min(e, first)
    later_min[:-1] = later_min[1:]
    later_min[:-1][~same] = np.iinfo(np.int64).max
    later_min[-1] = np.iinfo(np.int64).max
    over = np.flatnonzero(e > later_min)  # ends after a later kernel ended: a timestamp artifact
    del later_min, e
    if over.size == 0:
        return None, 0
    ends = kernels["end_ns"].to_numpy(np.int64).copy()
    clipped = order[over] if rows is None else rows[order[over]]
    ends[clipped] = s[order[over + 1]]  # clipped to the next kernel's start on the same stream
    return ends, int(over.size)


def _overruns(kernels: pd.DataFrame) -> tuple[np.ndarray | None, int]:
    """``(end_ns per row after clipping or None when nothing is clipped, rows clipped)``, computed once
    per frame and reused by every panel."""
    return _OVERRUNS.get(kernels, _compute_overruns)


def kernel_end_ns(kernels: pd.DataFrame) -> np.ndarray:
    """End of each kernel row in ns as every figure uses it: the recorded end, except for a kernel
    that runs past the end of a later kernel on its own stream (see ``overrun_kernel_count``), whose
    end is clipped to the start of the next kernel on that stream. int64 array aligned with rows."""
    ends, _ = _overruns(kernels)
    return kernels["end_ns"].to_numpy(np.int64) if ends is None else ends


def overrun_kernel_count(kernels: pd.DataFrame) -> int:
    """Kernel rows clipped as same-stream overruns.

    Definition: outside CUDA graphs (``graph_node_id`` NULL), on one known stream (``STREAM_KEY``: device,
    process, context, stream; a NULL stream id is unknown), kernels ordered by start run one after the
    other. A kernel whose end is after the *end* of a later kernel on the same stream would contain work
    that stream order says came after it: a timestamp artifact (as TraceLens and Hyperloom treat ROCm traces). Its end
    is clipped to the next kernel's start for busy time, spans and durations. A kernel that only
    overlaps the *start* of the next one is real (programmatic dependent launch, Hopper and later)
    and stays as recorded. Rows without timestamps and invalid rows take no part.
    """
    return _overruns(kernels)[1]


def timed_kernels(kernels: pd.DataFrame) -> pd.DataFrame:
    """Kernel rows that count for span and busy time, with overrun ends clipped (``kernel_end_ns``).

    Left out: ``start = 0 AND end = 0`` (timestamp not collected, the CUPTI convention) and
    invalid rows (``end < start``, NULL, negative or absurdly large timestamps, durations over
    ``MAX_KERNEL_DURATION_NS``). Both kinds still count in ``kernel_count``;
    ``invalid_kernel_count`` reports the second.
    """
    ok = _usable(kernels)
    ends, _ = _overruns(kernels)
    # Not ``assign``: it copies the ends (80 MB for 10M kernels, once per caller); the frame shares them and
    # every other column with ``kernels``.
    out = (
        kernels
        if ends is None
        else pd.DataFrame({c: ends if c == "end_ns" else kernels[c] for c in kernels}, copy=False)
    )
    return out if ok.all() else out[ok.to_numpy()]


def invalid_kernel_count(kernels: pd.DataFrame) -> int:
    """Kernel rows with ``end < start``, NULL or negative timestamps, timestamps beyond 2**62 ns,
    or durations over ``MAX_KERNEL_DURATION_NS`` (24 h)."""
    return int(_invalid(kernels["start_ns"], kernels["end_ns"]).sum())


def overlong_kernel_count(kernels: pd.DataFrame) -> int:
    """Kernel rows that are otherwise valid but last longer than ``MAX_KERNEL_DURATION_NS`` (24 h);
    a subset of ``invalid_kernel_count``."""
    s = kernels["start_ns"]
    e = kernels["end_ns"]
    return int(((s >= 0) & (e >= s) & (e < MAX_TIMESTAMP_NS) & (e - s > MAX_KERNEL_DURATION_NS)).sum())


def kernel_durations_at(kernels: pd.DataFrame, rows) -> np.ndarray:
    """``kernel_durations`` of the rows at positions ``rows`` only (int64 array): a caller working through 10M
    kernels a part at a time never holds every row's duration."""
    s = kernels["start_ns"].to_numpy(np.int64)[rows]
    e = kernels["end_ns"].to_numpy(np.int64)[rows]
    dur = e - s
    invalid = _invalid(s, e, dur)
    ends, _ = _overruns(kernels)
    if ends is not None:
        np.subtract(ends[rows], s, out=dur)
    dur[invalid] = 0
    return dur


def kernel_durations(kernels: pd.DataFrame) -> pd.Series:
    """``end - start`` per kernel in ns (end clipped for same-stream overruns, see ``kernel_end_ns``),
    0 for invalid rows (so a bad row never adds negative time). int64 Series aligned with ``kernels``."""
    s = kernels["start_ns"].to_numpy(np.int64)
    e = kernels["end_ns"].to_numpy(np.int64)
    dur = e - s  # as recorded, for the validity test; then (in place: 10M kernels, one 80 MB array) as used
    invalid = _invalid(s, e, dur)
    ends, _ = _overruns(kernels)
    if ends is not None:
        np.subtract(ends, s, out=dur)
    dur[invalid] = 0
    return pd.Series(dur, index=kernels.index, copy=False)


def kernel_busy_union(kernels: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Union of kernel intervals over all devices and streams (rows with 0/0 timestamps dropped).

    Returns:
        ``(starts_ns, ends_ns)`` int64, disjoint, sorted (see ``intervals.union_intervals``).
    """
    k = timed_kernels(kernels)
    return union_intervals(k["start_ns"].to_numpy(), k["end_ns"].to_numpy())


def _count_and_total(names: pd.Series, durations: pd.Series) -> pd.DataFrame:
    """Per distinct name (categorical or str): row count and int64 sum of durations."""
    if isinstance(names.dtype, pd.CategoricalDtype):  # per integer code: no string copies, no hashing
        codes = names.cat.codes.to_numpy()
        size = len(names.cat.categories)
        count = np.zeros(size + 1, dtype=np.int64)  # slot 0: rows without a name (code -1), left out as groupby does
        total = np.zeros(size + 1, dtype=np.int64)
        slot = codes.astype(np.intp) + 1
        np.add.at(count, slot, 1)
        np.add.at(total, slot, durations.to_numpy(np.int64))
        present = np.flatnonzero(count[1:])  # in code order, as the names' first appearance need not be
        out = pd.DataFrame({"count": count[1:][present], "total_ns": total[1:][present]})
        out.index = names.cat.categories.take(present).astype(str)
    else:
        g = pd.Series(durations.to_numpy(np.int64)).groupby(names.astype(str).to_numpy(), sort=False)
        out = pd.DataFrame({"count": g.size(), "total_ns": g.sum()})
    return out.rename_axis("name").reset_index()


def api_stats(api_calls: pd.DataFrame) -> pd.DataFrame:
    """Per raw API name: count and total duration (summed across threads, not wall time).

    Args:
        api_calls: API_CALLS, or ``API_TOTALS`` (a summary's read: counts and totals per thread and name).

    Returns:
        API_STATS frame (name, count, total_ns), sorted by total_ns descending, then name.
    """
    if api_calls.empty:
        return empty_frame(API_STATS)
    if "count" in api_calls:
        g = api_calls.groupby("name", observed=True, sort=False)
        out = pd.DataFrame({"count": g["count"].sum(), "total_ns": g["total_ns"].sum()})
        out.index = out.index.astype(str)
        out = out.rename_axis("name").reset_index()
    else:
        out = _count_and_total(api_calls["name"], api_calls["end_ns"] - api_calls["start_ns"])
    out = out.sort_values(["total_ns", "name"], ascending=[False, True], kind="stable")
    return conform(out.reset_index(drop=True), API_STATS)


def nvtx_stats(nvtx_ranges: pd.DataFrame, busy: tuple[np.ndarray, np.ndarray]) -> pd.DataFrame:
    """Per NVTX range name: count, sum of durations, union length and overlap with GPU busy.

    Args:
        nvtx_ranges: NVTX_RANGES frame (already closed/filtered by the loader).
        busy: the kernel busy union ``(starts_ns, ends_ns)``, disjoint and sorted.

    Returns:
        NVTX_STATS frame (name, count, sum_ns, union_ns, gpu_overlap_ns) sorted by sum_ns
        descending, then name. ``gpu_overlap_ns`` is the wall-clock intersection of the name's
        union with ``busy`` (not attribution of launched work), as summary_contract.md defines.
    """
    if nvtx_ranges.empty:
        return empty_frame(NVTX_STATS)
    codes, names = pd.factorize(nvtx_ranges["name"].astype(str), sort=False)
    s = nvtx_ranges["start_ns"].to_numpy(np.int64)
    e = nvtx_ranges["end_ns"].to_numpy(np.int64)
    order = np.lexsort((s, codes))
    c, s, e = codes[order], s[order], e[order]
    us, ue, uc = name_unions(c, s, e)
    overlap = covered_before(busy[0], busy[1], ue) - covered_before(busy[0], busy[1], us)
    n = len(names)

    def per_name(codes_: np.ndarray, values: np.ndarray) -> np.ndarray:  # exact int64 sums
        return pd.Series(values, dtype=np.int64).groupby(codes_).sum().reindex(range(n), fill_value=0).to_numpy()

    out = pd.DataFrame(
        {
            "name": np.asarray(names, dtype=object),
            "count": np.bincount(c, minlength=n),
            "sum_ns": per_name(c, e - s),
            "union_ns": per_name(uc, ue - us),
            "gpu_overlap_ns": per_name(uc, overlap),
        }
    )
    out = out.sort_values(["sum_ns", "name"], ascending=[False, True], kind="stable")
    return conform(out.reset_index(drop=True), NVTX_STATS)


def name_unions(c: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-name union of intervals, vectorised: ``(starts, ends, codes)`` of the merged intervals of each name.

    ``c, s, e``: name codes, starts and ends sorted by code, then start (``np.lexsort((s, c))``).
    """
    # Running max of ends within each name; a new merged interval starts where the name changes or the
    # start is past every earlier end of that name.
    run_max = pd.Series(e).groupby(c).cummax().to_numpy()
    new = np.ones(len(s), dtype=bool)
    new[1:] = (c[1:] != c[:-1]) | (s[1:] > run_max[:-1])
    last = np.flatnonzero(np.r_[new[1:], True])
    return s[new], run_max[last], c[new]


def kernel_stats_by_short_name(kernels: pd.DataFrame, top: int | None = TOP_KERNELS) -> pd.DataFrame:
    """Kernels grouped by short name: count and total duration.

    Returns:
        KERNEL_STATS frame sorted by total_ns descending (ties: name ascending), at most ``top``
        rows (all when ``top`` is None).
    """
    if kernels.empty:
        return empty_frame(KERNEL_STATS)
    out = _count_and_total(kernels["short_name"], kernel_durations(kernels))
    out = out.sort_values(["total_ns", "name"], ascending=[False, True], kind="stable")
    if top is not None:
        out = out.head(top)
    return conform(out.reset_index(drop=True), KERNEL_STATS)


def dispatch_marks(bundle: TraceBundle, prefix: str = DEFAULT_DISPATCH_PREFIX) -> pd.DataFrame:
    """NVTX marks and range starts whose message starts with ``prefix`` (all of them for "").

    Returns:
        DISPATCH_MARKS frame (start_ns, name) sorted by start_ns, then name.
    """
    return dispatch_rows(bundle.nvtx_marks, bundle.nvtx_ranges, prefix)


def dispatch_rows(nvtx_marks: pd.DataFrame, nvtx_ranges: pd.DataFrame, prefix: str) -> pd.DataFrame:
    """``dispatch_marks`` of the given NVTX marks and ranges (a trace's, or one time slice's)."""
    parts = []
    for frame, t, col in ((nvtx_marks, "ts_ns", "name"), (nvtx_ranges, "start_ns", "message")):
        if frame.empty:
            continue
        names = (
            frame[col]
            if isinstance(frame[col].dtype, pd.CategoricalDtype)
            else frame[col].astype(str).astype("category")
        )
        # the prefix is tested once per distinct name, not per row
        ok = [i for i, c in enumerate(names.cat.categories) if str(c).startswith(prefix)]
        sel = np.isin(names.cat.codes.to_numpy(), ok) if prefix else np.ones(len(names), dtype=bool)
        if sel.any():
            parts.append(
                pd.DataFrame(
                    {
                        "start_ns": frame[t].to_numpy(np.int64)[sel],
                        "name": np.asarray(names.astype(str).to_numpy()[sel], dtype=object),
                    }
                )
            )
    if not parts:
        return empty_frame(DISPATCH_MARKS)
    df = pd.concat(parts, ignore_index=True).sort_values(["start_ns", "name"], kind="stable").reset_index(drop=True)
    return conform(df, DISPATCH_MARKS)


def kernel_row_warnings(kernels: pd.DataFrame) -> list[str]:
    """One sentence per kind of kernel row that is not used as recorded (empty when all are):
    same-stream overruns clipped (``overrun_kernel_count``) and invalid rows left out
    (``invalid_kernel_count``). The same sentences go into ``summarize``'s notes and the overview."""
    return kernel_row_lines(overrun_kernel_count(kernels), invalid_kernel_count(kernels))


def gpu_activitynot_captured_line(bundle: TraceBundle) -> str:
    """The capture-gap sentence, "" unless launch calls were recorded but no GPU execution
    (``TraceMeta.gpu_activity_missing``, set by the loaders): GPU work was launched and not recorded, so the
    span, busy union and idle are unknown (``summary_to_dict`` writes null), never "nothing ran on a GPU"."""
    return not_captured_line(bundle.meta, frame_counts(bundle))


def gpu_work_warnings(bundle: TraceBundle) -> list[str]:
    """The sentence that keeps a summary's zeros from reading as measurements: a trace with no kernel rows
    has span, busy union and idle 0 by definition (summary_contract.md), not because a GPU sat idle; when
    kernels were launched but not recorded (``gpu_activity_not_captured``) they are unknown instead.
    Empty when there are kernel rows."""
    return gpu_work_lines(bundle.meta, frame_counts(bundle))


@dataclass(frozen=True)
class KernelSummary:
    """What a summary reads from the kernels, NVTX ranges and marks alone (``kernel_summary``): it can be computed
    while the CUDA API calls are still being read. ``frames``: the frames it came from, checked by identity."""

    frames: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]
    dispatch_prefix: str
    fields: dict
    row_warnings: list[str]


def kernel_summary(
    kernels: pd.DataFrame, nvtx_ranges: pd.DataFrame, nvtx_marks: pd.DataFrame, dispatch_prefix: str
) -> KernelSummary:
    """The ``Summary`` fields of ``summarize`` that the kernels, NVTX ranges and marks give."""
    # The timed kernels' times as arrays, once (``timed_kernels`` would copy the frame for each use).
    ok = _usable(kernels).to_numpy()
    starts = kernels["start_ns"].to_numpy(np.int64)
    ends = kernel_end_ns(kernels)
    if not ok.all():  # else the columns themselves (10M kernels: no 160 MB of copies)
        starts, ends = starts[ok], ends[ok]
    busy = union_intervals(starts, ends)
    gpu_start, gpu_end = (int(starts.min()), int(ends.max())) if starts.size else (None, None)
    marks = dispatch_rows(nvtx_marks, nvtx_ranges, dispatch_prefix)
    counts = marks["name"].value_counts(sort=False)
    fields = dict(
        gpu_activity_span_ns=gpu_end - gpu_start if starts.size else 0,
        gpu_busy_union_ns=int((busy[1] - busy[0]).sum()),
        kernel_count=len(kernels),
        graph_node_kernel_count=int(kernels["graph_node_id"].notna().sum()),
        nvtx=nvtx_stats(nvtx_ranges, busy),
        dispatch={str(n): int(c) for n, c in counts.items()},
        dispatch_timeline=marks,
        top_kernels=kernel_stats_by_short_name(kernels),
        gpu_start_ns=gpu_start,
        gpu_end_ns=gpu_end,
    )
    return KernelSummary((kernels, nvtx_ranges, nvtx_marks), dispatch_prefix, fields, kernel_row_warnings(kernels))


def summarize(
    bundle: TraceBundle, *, dispatch_prefix: str = DEFAULT_DISPATCH_PREFIX, kernel_part: KernelSummary | None = None
) -> Summary:
    """Compute the seed-format summary of an nsys trace, exactly as summary_contract.md defines it.

    Args:
        bundle: the loaded trace.
        dispatch_prefix: name prefix of dispatch marks/ranges (default ``CG_DISPATCH``).
        kernel_part: ``kernel_summary`` of this bundle's frames and prefix, computed before (used only when it is).

    Returns:
        Summary with integer-ns times; ``gpu_start_ns``/``gpu_end_ns`` set when there are kernels.
    """
    frames = (bundle.kernels, bundle.nvtx_ranges, bundle.nvtx_marks)
    if not (
        kernel_part is not None
        and kernel_part.dispatch_prefix == dispatch_prefix
        and all(a is b for a, b in zip(kernel_part.frames, frames))
    ):
        kernel_part = kernel_summary(*frames, dispatch_prefix)
    return Summary(
        file=bundle.meta.source,
        api=api_stats(bundle.api_calls if bundle.api_totals is None else bundle.api_totals),
        notes=SUMMARY_NOTE,
        warnings=(*input_warnings(bundle.meta), *kernel_part.row_warnings, *gpu_work_warnings(bundle)),
        gpu_activity_missing=(
            kernels_read_not_usable(bundle) or ("" if len(bundle.kernels) else bundle.meta.gpu_activity_missing)
        ),
        **kernel_part.fields,
    )


def summary_to_dict(summary: Summary) -> dict:
    """Serialise a Summary to the seed JSON structure (times in float seconds, key order as seed). Span, busy
    and idle are null (n/a, as ``report`` shows them) when GPU work was launched but not captured
    (``Summary.gpu_activity_missing``): unknown, not the contract's 0 of a trace that launched nothing."""
    unknown = bool(summary.gpu_activity_missing)
    return {
        "file": summary.file,
        "gpu_activity_span_s": None if unknown else ns_to_s(summary.gpu_activity_span_ns),
        "gpu_busy_union_s": None if unknown else ns_to_s(summary.gpu_busy_union_ns),
        "gpu_idle_within_span_s": None if unknown else ns_to_s(summary.gpu_idle_within_span_ns),
        "kernel_count": int(summary.kernel_count),
        "graph_node_kernel_count": int(summary.graph_node_kernel_count),
        "api": {r.name: [int(r.count), ns_to_s(r.total_ns)] for r in summary.api.itertuples(index=False)},
        "nvtx": {
            r.name: {
                "count": int(r.count),
                "sum_s": ns_to_s(r.sum_ns),
                "union_s": ns_to_s(r.union_ns),
                "gpu_overlap_s": ns_to_s(r.gpu_overlap_ns),
            }
            for r in summary.nvtx.itertuples(index=False)
        },
        "dispatch": dict(summary.dispatch),
        "dispatch_timeline": [
            {"start_ns": int(r.start_ns), "name": r.name} for r in summary.dispatch_timeline.itertuples(index=False)
        ],
        "top_kernels": [
            [r.name, [int(r.count), ns_to_s(r.total_ns)]] for r in summary.top_kernels.itertuples(index=False)
        ],
        "notes": summary.notes,
        "warnings": list(summary.warnings),
    }
