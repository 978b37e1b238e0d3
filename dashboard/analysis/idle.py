"""GPU idle gaps and what the host was doing during each one.

A gap is a hole in a device's busy union. Its host cause is read from the threads that launch
work on that device: the CUDA API call that covers most (at least half) of the gap (e.g. a long
``cudaStreamSynchronize``) and the innermost NVTX range active on those threads at the gap's
middle (e.g. ``PLE_wait_for_GPU`` or ``PLE_CPU_gather``)::

    GPU    [kernels.....]        gap         [kernels...]
    host   ..launch..  [cudaStreamSynchronize     ]
    NVTX   [PLE_lookup_tokens=3 [PLE_wait_for_GPU  ]  ]
    cause: "cudaStreamSynchronize in PLE_wait_for_GPU"
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.analysis.gpu_time import any_device_union, device_unions
from dashboard.analysis.intervals import PART_ROWS, gaps, union_intervals, union_overlap_length
from dashboard.analysis.launches import kernel_launches
from dashboard.analysis.tables import clean_api_name

DEFAULT_MIN_GAP_NS = 10_000
NO_HOST_ACTIVITY = "no host activity recorded"
API_COVER_SHARE = 0.5  # a CUDA API call is a gap's cause only when it covers at least this share of the gap

IDLE_GAPS: dict[str, str] = {
    "device_id": "int64",
    "start_ns": "int64",
    "end_ns": "int64",
    "duration_ns": "int64",
    "api_call": "object",  # cleaned name of the API call covering at least half of the gap ("" if none)
    "nvtx_range": "object",  # innermost NVTX range at the gap's middle ("" if none)
    "cause": "object",  # "api in range", "api", "range" or NO_HOST_ACTIVITY
    "memop": "object",  # kind of the memcpy/memset overlapping the gap most ("" if none; see memop_cover)
    "memop_ns": "int64",  # union of memcpy/memset inside the gap, ns (0 if none)
}


def idle_gaps(work: pd.DataFrame, *, min_gap_ns: int = DEFAULT_MIN_GAP_NS) -> pd.DataFrame:
    """Gaps in each device's busy union at least ``min_gap_ns`` long.

    Args:
        work: frame (device_id, start_ns, end_ns), e.g. from ``gpu_time.gpu_work``.

    Returns:
        Frame (device_id, start_ns, end_ns, duration_ns) sorted by duration descending, then
        device and start.

    Raises:
        ValueError: if ``min_gap_ns`` < 0.
    """
    return idle_gaps_of(device_unions(work), min_gap_ns=min_gap_ns)


def no_gpu_busy(unions: dict[int, tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The gaps in the union of every device's busy union (``gpu_time.device_unions``, as a trace keeps them): when
    no GPU was busy, between the first start and the last end.

    Read-only views of that union, not new arrays: the gap after busy stretch k runs from its end to the start of
    stretch k + 1, and a union's stretches never touch. A big trace's millions of gaps then cost no memory kept
    with the trace (docs/benchmarks.md, served memory)."""
    us, ue = any_device_union(unions)
    if us.size > 1 and not (us[1:] > ue[:-1]).all():  # not a union as union_intervals makes them: merged again
        return gaps(us, ue)
    gs, ge = ue[:-1], us[1:]
    gs.flags.writeable = ge.flags.writeable = False  # the views' own flags: the union stays as it was
    return gs, ge


def idle_while_blocked(starts: np.ndarray, ends: np.ndarray, idle: tuple[np.ndarray, np.ndarray]) -> int:
    """The GPU idle (``idle``: sorted disjoint gaps, e.g. ``no_gpu_busy``) that host calls ``[starts, ends)`` can
    have cost: while they block, and, for a call that waited on GPU work (the GPU drained while it blocked: its
    gap began no earlier than the call), after it returns until the GPU gets work again (the drained queue stays empty
    until the host launches more). A call that starts on an idle GPU waited on nothing: at most its own time; the
    idle after it is the host's next work, not the wait's. A call that returns while the GPU is busy costs no GPU
    time after it. The union over the calls, so overlapping calls count once."""
    gs, ge = idle
    starts, ends = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
    if gs.size == 0 or starts.size == 0:
        return 0
    j = np.clip(np.searchsorted(gs, ends, side="right") - 1, 0, None)
    # busy up to the call's start at least; a call that took no time waited on nothing
    drained = (gs[j] <= ends) & (ends < ge[j]) & (gs[j] >= starts) & (ends > starts)
    return union_overlap_length(gs, ge, starts, np.where(drained, ge[j], ends))


def idle_gaps_of(
    unions: dict[int, tuple[np.ndarray, np.ndarray]], *, min_gap_ns: int, is_gaps: bool = False
) -> pd.DataFrame:
    """``idle_gaps`` from each device's busy union (``gpu_time.device_unions``, as a trace keeps them); ``is_gaps``:
    the intervals given are the devices' gaps already (``largest_idle_gaps``)."""
    if min_gap_ns < 0:
        raise ValueError(f"min_gap_ns must be >= 0, got {min_gap_ns}")
    parts = []
    for dev in sorted(unions):
        gs, ge = unions[dev] if is_gaps else gaps(*unions[dev], is_union=True)
        keep = (ge - gs) >= max(min_gap_ns, 1)
        parts.append(pd.DataFrame({"device_id": int(dev), "start_ns": gs[keep], "end_ns": ge[keep]}))
    out = (
        pd.concat(parts, ignore_index=True) if parts else pd.DataFrame({"device_id": [], "start_ns": [], "end_ns": []})
    )
    out = out.astype({"device_id": "int64", "start_ns": "int64", "end_ns": "int64"})
    out["duration_ns"] = out["end_ns"] - out["start_ns"]
    return out.sort_values(
        ["duration_ns", "device_id", "start_ns"], ascending=[False, True, True], kind="stable"
    ).reset_index(drop=True)


def largest_idle_gaps(
    unions: dict[int, tuple[np.ndarray, np.ndarray]], *, min_gap_ns: int, n: int
) -> tuple[pd.DataFrame, int]:
    """``(idle_gaps_of(unions, min_gap_ns=min_gap_ns).head(n), how many gaps idle_gaps_of has)`` without making and
    sorting a frame of every gap: the gap table shows the largest of what can be millions. Per device
    only the gaps at least as long as its n-th longest are kept (a gap of the overall first n has fewer than n
    longer gaps on its own device), then sorted as ``idle_gaps_of`` sorts."""
    if min_gap_ns < 0:
        raise ValueError(f"min_gap_ns must be >= 0, got {min_gap_ns}")
    parts, total = {}, 0
    for dev in sorted(unions):
        gs, ge = gaps(*unions[dev], is_union=True)
        dur = ge - gs
        keep = np.flatnonzero(dur >= max(min_gap_ns, 1))
        total += keep.size
        if keep.size > n > 0:
            kth = np.partition(dur[keep], keep.size - n)[keep.size - n]  # the device's n-th longest
            keep = keep[dur[keep] >= kth]
        elif n <= 0:
            keep = keep[:0]
        parts[dev] = (gs[keep], ge[keep])
    return idle_gaps_of(parts, min_gap_ns=min_gap_ns, is_gaps=True).head(n).reset_index(drop=True), total


def _launching_threads(
    kernels: pd.DataFrame, api_calls: pd.DataFrame, launches: pd.DataFrame | None = None
) -> dict[int, np.ndarray]:
    """device id -> global thread ids that launched kernels on it (via correlation id + process;
    ``launches``: ``kernel_launches(kernels, api_calls)`` when the caller has it)."""
    j = kernel_launches(kernels, api_calls) if launches is None else launches
    if j.empty:
        return {}
    kidx, aidx = j["kernel_index"].to_numpy(), j["api_index"].to_numpy()
    devices, threads = kernels["device_id"].to_numpy(), api_calls["global_tid"].to_numpy()
    # the distinct (device, thread) pairs of a part of the launches at a time: a handful of pairs, never two
    # columns of every launch (10M launches: 150 MB and a hash of them)
    parts = [
        pd.DataFrame(
            {"dev": devices[kidx[a : a + PART_ROWS]], "tid": threads[aidx[a : a + PART_ROWS]]}
        ).drop_duplicates()
        for a in range(0, len(j), PART_ROWS)
    ]
    frame = pd.concat(parts, ignore_index=True).drop_duplicates() if len(parts) > 1 else parts[0]
    return {int(d): g["tid"].to_numpy() for d, g in frame.groupby("dev")}


def memop_cover(gap_frame: pd.DataFrame, memops: pd.DataFrame | None) -> tuple[list[str], np.ndarray]:
    """Per gap, the memory operations on the gap's device that overlap it: ``(kinds, covered_ns)``
    with the memcpy/memset kind overlapping most ("" if none) and the length of their union inside
    the gap. A gap measured without memcpy/memset in the busy source may still have the copy
    engine busy: the idle table says so."""
    out = [""] * len(gap_frame)
    covered = np.zeros(len(gap_frame), dtype=np.int64)
    if memops is None or memops.empty or gap_frame.empty:
        return out, covered
    per_dev = {int(d): g for d, g in memops.groupby("device_id")}
    for i, (dev, gs, ge) in enumerate(zip(gap_frame["device_id"], gap_frame["start_ns"], gap_frame["end_ns"])):
        m = per_dev.get(int(dev))
        if m is None:
            continue
        s_, e_ = m["start_ns"].to_numpy(), m["end_ns"].to_numpy()
        hit = np.flatnonzero((s_ < ge) & (e_ > gs))
        if not len(hit):
            continue
        cs, ce = np.maximum(s_[hit], gs), np.minimum(e_[hit], ge)
        us, ue = union_intervals(cs, ce)
        out[i] = str(m["kind"].to_numpy()[hit[int(np.argmax(ce - cs))]])
        covered[i] = int((ue - us).sum())
    return out, covered


def _rows_on_threads(frame: pd.DataFrame, tids: np.ndarray, windows: tuple[np.ndarray, np.ndarray] | None):
    """Positions of the rows of ``frame`` on threads ``tids`` (and overlapping one of ``windows``, when given: a
    row ``[s, e)`` overlaps ``[ws, we)`` when ``ws < e`` and ``s < we``), in row order; int32 while they fit.
    Worked through a part of the rows at a time: 10M rows never make a column of 10M positions."""
    tid, start, end = frame["global_tid"].to_numpy(), frame["start_ns"].to_numpy(), frame["end_ns"].to_numpy()
    dtype = np.int32 if len(frame) < np.iinfo(np.int32).max else np.int64
    parts = []
    for a in range(0, len(frame), PART_ROWS):
        m = np.isin(tid[a : a + PART_ROWS], tids)
        if windows is not None:
            ws, we = windows
            if not len(ws):
                break
            s, e = start[a : a + PART_ROWS], end[a : a + PART_ROWS]
            i = np.minimum(np.searchsorted(we, s, side="right"), len(we) - 1)  # the first window ending after s
            m &= (we[i] > s) & (ws[i] < e)
        parts.append((np.flatnonzero(m) + a).astype(dtype))
    return np.concatenate(parts) if parts else np.empty(0, dtype)


class _ByStart:
    """The named rows of ``frame`` on threads ``tids``, sorted by start (stable), with the running maximum of
    their ends: the rows overlapping a time span lie in one slice, found by two binary searches instead of a
    scan of every row per gap. (A long row that starts early, such as an outer NVTX range, widens every later
    slice back towards all the rows: the worst case is the scan's.)"""

    def __init__(self, frame: pd.DataFrame, tids: np.ndarray, windows: tuple[np.ndarray, np.ndarray] | None = None):
        """``windows``: disjoint sorted ``(starts, ends)`` every later question falls in (the gaps asked about):
        only the rows overlapping one are kept (of 10M CUDA API calls, those near the 500 largest gaps)."""
        keep = _rows_on_threads(frame, tids, windows)
        names = frame["name"]
        if not isinstance(names.dtype, pd.CategoricalDtype):
            names = names.astype("category")
        codes = names.cat.codes.to_numpy()[keep]
        keep = keep[codes >= 0]  # rows without a name explain nothing
        start = frame["start_ns"].to_numpy()[keep]
        if len(start) > 1 and not (start[1:] >= start[:-1]).all():  # file order is usually start order already
            order = np.argsort(start, kind="stable")
            keep, start = keep[order], start[order]
        self.row = keep  # position in ``frame``: ties go to the earlier row, as a scan in order would
        self.start = start
        self.end = frame["end_ns"].to_numpy()[self.row]
        self.codes = names.cat.codes.to_numpy()[self.row]
        self.categories = names.cat.categories
        self.end_max = np.maximum.accumulate(self.end) if len(self.end) else self.end

    def _slice(self, lo_end_after: int, hi: int) -> np.ndarray | None:
        lo = int(np.searchsorted(self.end_max, lo_end_after, side="right"))  # before lo every row ends by then
        hit = lo + np.flatnonzero(self.end[lo:hi] > lo_end_after)
        return hit if len(hit) else None

    def overlapping(self, t0: int, t1: int) -> np.ndarray | None:
        """Indices (into the sorted rows) of the rows with start < t1 and end > t0; None when there are none."""
        return self._slice(t0, int(np.searchsorted(self.start, t1, side="left")))

    def containing(self, t: int) -> np.ndarray | None:
        """Indices of the rows with start <= t < end; None when there are none."""
        return self._slice(t, int(np.searchsorted(self.start, t, side="right")))

    def first(self, hit: np.ndarray, best: np.ndarray) -> int:
        """Of the rows ``hit[best]``, the one earliest in the frame."""
        cand = hit[best]
        return int(cand[np.argmin(self.row[cand])])

    def name(self, i: int) -> str:
        return str(self.categories[self.codes[i]])


def gap_causes(
    gap_frame: pd.DataFrame,
    kernels: pd.DataFrame,
    api_calls: pd.DataFrame,
    nvtx_ranges: pd.DataFrame,
    *,
    limit: int = 500,
    memops: pd.DataFrame | None = None,
    launches: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Annotate the first ``limit`` gaps (largest first) with what the launching threads were doing.

    Returns:
        IDLE_GAPS frame for those gaps, same order. ``api_call``: the call on a launching thread
        that overlaps the gap most, when it covers at least half of it (API_COVER_SHARE; else "": a
        ``cudaStreamSynchronize`` ending 18 µs into a 2.5 ms gap does not explain the gap);
        ``nvtx_range``: the shortest (innermost) NVTX range on a launching thread that contains the
        gap's middle; ``memop``: see ``memop_cover`` (pass
        ``memops`` when the busy source does not count them). ``launches``:
        ``launches.kernel_launches(kernels, api_calls)``, when the caller has it (computed otherwise).
    """
    g = gap_frame.head(limit).copy()
    threads = _launching_threads(kernels, api_calls, launches)
    windows = union_intervals(g["start_ns"].to_numpy(), g["end_ns"].to_numpy())  # what is asked about

    per_device: dict[int, tuple] = {}
    api_names, range_names = [], []
    for dev, gs, ge in zip(g["device_id"], g["start_ns"], g["end_ns"]):
        dev = int(dev)
        tids = threads.get(dev, np.empty(0, np.int64))
        if dev not in per_device:
            per_device[dev] = (
                _ByStart(api_calls, tids, windows) if len(tids) and not api_calls.empty else None,
                _ByStart(nvtx_ranges, tids, windows) if len(tids) and not nvtx_ranges.empty else None,
            )
        a, r = per_device[dev]
        best_api = ""
        if a is not None and (hit := a.overlapping(gs, ge)) is not None:
            overlap = np.minimum(a.end[hit], ge) - np.maximum(a.start[hit], gs)
            most = overlap.max()
            if most >= API_COVER_SHARE * (ge - gs):
                best_api = clean_api_name(a.name(a.first(hit, overlap == most)))
        best_range = ""
        mid = (gs + ge) // 2
        if r is not None and (hit := r.containing(mid)) is not None:
            length = r.end[hit] - r.start[hit]
            best_range = r.name(r.first(hit, length == length.min()))
        api_names.append(best_api)
        range_names.append(best_range)
    g["api_call"] = api_names
    g["nvtx_range"] = range_names
    g["cause"] = [
        f"{a_} in {r_}" if a_ and r_ else (a_ or r_ or NO_HOST_ACTIVITY) for a_, r_ in zip(api_names, range_names)
    ]
    g["memop"], g["memop_ns"] = memop_cover(g, memops)
    return g[list(IDLE_GAPS)].astype(IDLE_GAPS).reset_index(drop=True)


def idle_by_cause(causes: pd.DataFrame) -> pd.DataFrame:
    """Total idle time per cause label (frame: cause, gaps, idle_ns; largest first)."""
    if causes.empty:
        return pd.DataFrame(
            {"cause": [], "gaps": pd.Series([], dtype="int64"), "idle_ns": pd.Series([], dtype="int64")}
        )
    g = causes.groupby("cause", sort=False)["duration_ns"]
    out = pd.DataFrame({"gaps": g.size(), "idle_ns": g.sum()}).reset_index()
    return out.sort_values(["idle_ns", "cause"], ascending=[False, True], kind="stable").reset_index(drop=True)
