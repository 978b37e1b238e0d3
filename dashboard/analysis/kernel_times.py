"""Which kernel rows count, and their times as every view uses them: valid and usable rows, same-stream overrun
clipping (``overrun_kernel_count``), durations and the busy union, each computed once per kernel frame.

The summary (``analysis.summary``), its time slices, the tables, the Gantt and the timeline all take kernel times
from here, so that a clipped or invalid row reads the same in each.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np
import pandas as pd

from dashboard.analysis.intervals import union_intervals

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
