"""Timeline lanes under a mark budget: GPU busy/idle per device and NVTX ranges per thread.

Browsers draw about 5,000 SVG bars in 2 s and 100,000 in 27 s, so every lane here is reduced
on the server: busy intervals are merged into their union (touching intervals merge) and, when a
view would still exceed its budget, binned into busy fractions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.analysis.gpu_time import (  # noqa: F401 (re-exported)
    BUSY_ALL,
    BUSY_KERNEL_ROWS,
    BUSY_KERNELS,
    any_device_union,
    device_unions,
)
from dashboard.analysis.intervals import PART_ROWS, gaps, union_fraction_bins
from dashboard.model import DeviceLane

DEFAULT_MARK_BUDGET = 5000


def _window(us: np.ndarray, ue: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The part of a disjoint sorted union inside ``[lo, hi)`` (binary search, no full scan)."""
    i0, i1 = _window_bounds(us, ue, lo, hi)
    s = us[i0:i1].copy()
    e = ue[i0:i1].copy()
    if s.size:
        s[0] = max(s[0], lo)
        e[-1] = min(e[-1], hi)
    return s, e


def _window_bounds(us: np.ndarray, ue: np.ndarray, lo: int, hi: int) -> tuple[int, int]:
    """``(i0, i1)``: the intervals of a disjoint sorted union that ``_window`` keeps are ``i0`` to ``i1 - 1``."""
    return int(np.searchsorted(ue, lo, side="right")), int(np.searchsorted(us, hi, side="left"))


def _busy_in(us: np.ndarray, ue: np.ndarray, i0: int, i1: int, lo: int, hi: int, part: int = PART_ROWS) -> int:
    """Busy time of the union inside ``[lo, hi)`` (``_window``'s intervals ``i0`` to ``i1 - 1``, the first and
    last clipped to the window), summed a part at a time: no copy of the window's intervals."""
    if i1 <= i0:
        return 0
    total = sum(int((ue[a : min(a + part, i1)] - us[a : min(a + part, i1)]).sum()) for a in range(i0, i1, part))
    return total - (max(int(us[i0]), lo) - int(us[i0])) - (int(ue[i1 - 1]) - min(int(ue[i1 - 1]), hi))


def _busy_extents(us_all: np.ndarray, ue_all: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The whole busy interval of the union around each (window-cut) interval starting at ``starts``."""
    k = np.searchsorted(ue_all, starts, side="right")
    return us_all[k], ue_all[k]


def _gap_extents(
    us_all: np.ndarray, ue_all: np.ndarray, gap_ends: np.ndarray, first: int, last: int
) -> tuple[np.ndarray, np.ndarray]:
    """The whole idle gap around each (window-cut) gap ending at ``gap_ends``, inside the GPU activity span
    ``[first, last]``: from the busy interval before it (or ``first``) to the one after it (or ``last``).
    Reads only the intervals next to the gaps (the union of 10M kernels holds millions)."""
    k = np.searchsorted(us_all, gap_ends, side="left")  # the first busy interval after each gap
    n = len(us_all)
    if not n:
        return np.full(len(k), first, np.int64), np.full(len(k), last, np.int64)
    lo = np.where(k > 0, ue_all[np.maximum(k - 1, 0)], first).astype(np.int64)  # the end of the one before, or first
    hi = np.where(k < n, us_all[np.minimum(k, n - 1)], last).astype(np.int64)  # its start, or ``last``
    return np.maximum(lo, first), np.minimum(hi, last)


def lanes_for_window(
    unions: dict[int, tuple[np.ndarray, np.ndarray]],
    *,
    lo_ns: int,
    hi_ns: int,
    budget: int = DEFAULT_MARK_BUDGET,
    n_bins: int = 400,
    min_visible_ns: int = 0,
) -> list[DeviceLane]:
    """Cut the per-device unions to a window, within a mark budget.

    Args:
        unions: from ``device_unions``.
        lo_ns, hi_ns: the visible window.
        budget: the most bars all lanes together may send. Busy and idle bars when both fit;
            busy bars alone when only they fit; otherwise each lane is binned into ``n_bins``
            busy fractions, less the bins wholly outside the GPU activity span (first to last busy
            instant of any device): padding there is not idle.
        min_visible_ns: the shortest interval a drawn bar shows (about one screen pixel). A lane
            whose busy intervals are mostly shorter is binned even within the budget: sub-pixel
            bars would make a busy lane look idle; a bin shows its exact busy fraction.

    Returns:
        One DeviceLane per device, sorted by device id.
    """
    # Bins lying wholly before the first or after the last GPU activity (of any device) are left out: the
    # window's padding outside the GPU activity span is not idle time (the overview's idle is span - busy).
    firsts = [int(s_[0]) for s_, _ in unions.values() if len(s_)]
    lasts = [int(e_[-1]) for _, e_ in unions.values() if len(e_)]
    first, last = (min(firsts), max(lasts)) if firsts else (hi_ns, lo_ns)

    def bins(us_all, ue_all):
        edges, frac = union_fraction_bins(us_all, ue_all, lo_ns, hi_ns, n_bins)
        inside = np.flatnonzero((edges[1:] > first) & (edges[:-1] < last))
        if not len(inside):
            return edges[:1], frac[:0]
        return edges[inside[0] : inside[-1] + 2], frac[inside[0] : inside[-1] + 1]

    # idle is drawn where the window meets the GPU activity span: a gap that runs past an edge of the
    # window is drawn up to that edge, and a window inside one gap is idle throughout
    idle_lo, idle_hi = max(lo_ns, first), min(hi_ns, last)
    bounds = {dev: _window_bounds(us_all, ue_all, lo_ns, hi_ns) for dev, (us_all, ue_all) in unions.items()}
    if hi_ns > lo_ns and sum(i1 - i0 for i0, i1 in bounds.values()) > budget:
        # more busy intervals than the budget: every lane is binned, and no interval of the window is copied
        # (the whole span of 10M kernels holds millions of them)
        empty = np.empty(0, np.int64)
        return [
            DeviceLane(
                dev,
                "bins",
                _busy_in(us_all, ue_all, *bounds[dev], lo_ns, hi_ns),
                empty,
                empty,
                empty,
                empty,
                *bins(us_all, ue_all),
            )
            for dev, (us_all, ue_all) in sorted(unions.items())
        ]
    per_device = []
    for dev, (us_all, ue_all) in sorted(unions.items()):
        us, ue = _window(us_all, ue_all, lo_ns, hi_ns)
        if idle_hi > idle_lo:
            gs, ge = gaps(us, ue, within=(idle_lo, idle_hi), is_union=True)
        else:
            gs, ge = np.empty(0, np.int64), np.empty(0, np.int64)
        per_device.append((dev, us_all, ue_all, us, ue, gs, ge))
    n_busy = sum(len(x[3]) for x in per_device)
    n_gaps = sum(len(x[5]) for x in per_device)
    empty = np.empty(0, np.int64)
    lanes = []
    for dev, us_all, ue_all, us, ue, gs, ge in per_device:
        busy = int((ue - us).sum())
        sub_pixel = min_visible_ns > 0 and hi_ns > lo_ns and 2 * int(((ue - us) < min_visible_ns).sum()) > len(us)
        if sub_pixel:
            edges, frac = bins(us_all, ue_all)
            lanes.append(DeviceLane(dev, "bins", busy, empty, empty, empty, empty, edges, frac))
        elif n_busy + n_gaps <= budget or hi_ns <= lo_ns:
            lanes.append(
                DeviceLane(
                    dev,
                    "intervals",
                    busy,
                    us,
                    ue,
                    gs,
                    ge,
                    empty,
                    np.empty(0),
                    *_busy_extents(us_all, ue_all, us),
                    *_gap_extents(us_all, ue_all, ge, first, last),
                )
            )
        elif n_busy <= budget:  # idle stays visible as empty space between busy bars
            lanes.append(
                DeviceLane(
                    dev, "intervals", busy, us, ue, empty, empty, empty, np.empty(0), *_busy_extents(us_all, ue_all, us)
                )
            )
        else:
            edges, frac = bins(us_all, ue_all)
            lanes.append(DeviceLane(dev, "bins", busy, empty, empty, empty, empty, edges, frac))
    return lanes


def thread_labeler(thread_names: dict[int, str] | None = None, ranks: dict[int, tuple[int, int]] | None = None):
    """A function ``(global_tid, pid, tid) -> lane label`` naming a thread by its name.

    The label is the thread's name (``meta.thread_names``) when no other thread has that name;
    ``"name · pid P"`` when several processes have a thread of that name; ``"name · tid T"`` when
    one process has several; ``"pid P · tid T"`` for an unnamed thread. Uniqueness is decided over
    every named thread of the trace, so a label never changes with the window. In merged ranks
    (``ranks``: the ``meta.rank_pids`` table of a bundle from ``analysis.ranks.merge_ranks``, its
    process id -> (rank, pid)) labels are prefixed ``"rank r · "`` and show the rank's own pid.
    """
    names = thread_names or {}
    by_name: dict[str, set[int]] = {}
    by_name_pid: dict[tuple[str, int], int] = {}
    for gtid, name in names.items():
        pid = (int(gtid) >> 24) & 0xFFFFFF
        by_name.setdefault(name, set()).add(pid)
        by_name_pid[(name, pid)] = by_name_pid.get((name, pid), 0) + 1

    def label(global_tid: int, pid: int, tid: int) -> str:
        name = names.get(int(global_tid))
        rank, local_pid = "", pid
        if ranks and pid in ranks:
            r, local_pid = ranks[pid]
            rank = f"rank {r} · "
        if not name:
            return rank + f"pid {local_pid} · tid {tid}"
        key_pid = (int(global_tid) >> 24) & 0xFFFFFF
        if len(by_name[name]) == 1 and by_name_pid[(name, key_pid)] == 1:
            return rank + name
        if by_name_pid[(name, key_pid)] == 1:
            return rank + f"{name} · pid {local_pid}"
        return rank + f"{name} · tid {tid}"

    return label


def nvtx_lane_keys(
    ranges: pd.DataFrame, ranks: dict[int, tuple[int, int]] | None = None, thread_names: dict[int, str] | None = None
) -> pd.DataFrame:
    """Assign every NVTX range a lane: its thread plus nesting depth.

    Push/pop ranges nest: depth is the number of enclosing push/pop ranges still open on the
    same thread. Start/end ranges may overlap arbitrarily, so they are packed greedily into
    their own per-thread lanes (the first lane whose last range has ended).

    Returns:
        Copy of ``ranges`` with added columns ``depth`` (int64), ``thread`` (object dtype of str: the thread's
        label from ``thread_labeler(thread_names, ranks)``, e.g. ``"python3"`` or
        ``"pid 4100 · tid 4101"``) and ``lane`` (object of str: ``thread + " · L1"`` or ``thread + " · start/end 0"``;
        with ``ranks`` (``meta.rank_pids`` of a bundle from ``analysis.ranks.merge_ranks``) prefixed
        ``"rank 1 · "``),
        sorted by (lane, start_ns).
    """
    if ranges.empty:
        out = ranges.copy()
        out["depth"] = pd.Series([], dtype="int64")
        out["thread"] = pd.Series([], dtype="object")
        out["lane"] = pd.Series([], dtype="object")
        return out
    labeler = thread_labeler(thread_names, ranks)
    tids_all = ranges["global_tid"].to_numpy(np.int64)
    starts_all = ranges["start_ns"].to_numpy(np.int64)
    ends_all = ranges["end_ns"].to_numpy(np.int64)
    # by thread, then start, then longest first (an enclosing range before the ranges it holds); stable
    order = np.lexsort((-ends_all, starts_all, tids_all))
    tids, starts, ends = tids_all[order], starts_all[order], ends_all[order]
    push_pop = (ranges["kind"] == "push/pop").to_numpy(dtype=bool)[order]
    pids = ranges["pid"].to_numpy()[order]
    tid_low = ranges["tid"].to_numpy()[order]
    n = len(order)
    depth = np.zeros(n, dtype=np.int64)
    lane = np.empty(n, dtype=object)
    thread = np.empty(n, dtype=object)
    stack: list[int] = []
    packed: list[int] = []
    current = None
    for i in range(n):
        if tids[i] != current:
            current, stack, packed = tids[i], [], []
            prefix = labeler(int(tids[i]), int(pids[i]), int(tid_low[i]))
        thread[i] = prefix
        if push_pop[i]:
            while stack and stack[-1] <= starts[i]:
                stack.pop()
            depth[i] = len(stack)
            stack.append(ends[i])
            lane[i] = f"{prefix} · L{depth[i]}"
        else:
            slot = next((j for j, end in enumerate(packed) if end <= starts[i]), len(packed))
            if slot == len(packed):
                packed.append(ends[i])
            else:
                packed[slot] = ends[i]
            depth[i] = slot
            lane[i] = f"{prefix} · start/end {slot}"
    _, lane_code = np.unique(lane.astype(str), return_inverse=True)
    final = np.lexsort((starts, lane_code))  # by lane name, then start; stable
    out = ranges.iloc[order[final]].reset_index(drop=True)
    # object columns: pandas would store the labels as Arrow strings, converted back per row when drawn
    return out.assign(
        depth=depth[final],
        thread=pd.Series(thread[final], index=out.index, dtype=object),
        lane=pd.Series(lane[final], index=out.index, dtype=object),
    )


WINDOW_BLOCK_ROWS = 1024
SCAN_SHARE = 32  # a window whose blocks hold more than 1/SCAN_SHARE of the rows compares every row instead


def _compared(starts: np.ndarray, ends: np.ndarray, lo_ns: int, hi_ns: int) -> np.ndarray:
    """Positions of the rows with ``end > lo_ns`` and ``start < hi_ns``, every row compared."""
    return np.flatnonzero((ends > lo_ns) & (starts < hi_ns))


class WindowIndex:
    """The rows of an event frame drawn in a window (``in_window``'s rows: ``end > lo`` and ``start < hi``) found
    without reading every row (a zoom of millions of kernels and CUDA API calls compared every row of both).

    In start order (the frame's own when its starts are sorted, else a permutation, int32 while it fits) the rows
    are cut into blocks of ``block`` rows, each with its first start and its latest end. The rows that start
    before ``hi`` end at a position found by binary search; of their blocks only those whose latest end is past
    ``lo`` are read (all rows are compared when those are a large share of them). A row that spans much of the
    trace keeps its one block in every window."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray, block: int = WINDOW_BLOCK_ROWS):
        self.starts, self.ends, self.block = starts, ends, block
        n = len(starts)
        self.order = None
        if n > 1 and not bool((starts[1:] >= starts[:-1]).all()):
            self.order = np.argsort(starts, kind="stable").astype(np.int32 if n < 2**31 else np.int64)
        ordered_s = starts if self.order is None else starts[self.order]
        ordered_e = ends if self.order is None else ends[self.order]
        heads = np.arange(0, n, block)
        self.block_start = ordered_s[heads]
        self.block_end = np.maximum.reduceat(ordered_e, heads) if n else ordered_e[:0]

    def _in_order(self, pos: np.ndarray) -> np.ndarray:
        return pos if self.order is None else self.order[pos]

    def _candidates(self, lo_ns: int, hi_ns: int) -> np.ndarray | None:
        """Positions (in start order) of the rows that may be in the window, all of which start before ``hi_ns``;
        None when every row is to be compared (a wide window)."""
        b = int(np.searchsorted(self.block_start, hi_ns, side="left"))  # blocks 0 .. b-1 start before hi
        if b == 0:
            return np.empty(0, np.intp)
        last = np.arange((b - 1) * self.block, min(b * self.block, len(self.starts)))
        end = int(last[0] + np.searchsorted(self.starts[self._in_order(last)], hi_ns, side="left"))
        blocks = np.flatnonzero(self.block_end[:b] > lo_ns)
        if not len(blocks):
            return np.empty(0, np.intp)
        if len(blocks) * self.block * SCAN_SHARE > len(self.starts):  # a wide window: comparing every row is quicker
            return None
        pos = (blocks[:, None] * self.block + np.arange(self.block)).ravel()
        return self._in_order(pos[pos < end])

    def rows(self, lo_ns: int, hi_ns: int) -> np.ndarray:
        """Positions (ascending) of the rows with ``end > lo_ns`` and ``start < hi_ns``."""
        rows = self._candidates(lo_ns, hi_ns)
        if rows is None:
            return _compared(self.starts, self.ends, lo_ns, hi_ns)
        rows = rows[self.ends[rows] > lo_ns].astype(np.intp)
        return rows if self.order is None else np.sort(rows)

    def count(self, lo_ns: int, hi_ns: int) -> int:
        """``len(rows(lo_ns, hi_ns))`` without building the positions: at a wide window, all that is drawn of
        millions of rows is how many there are."""
        rows = self._candidates(lo_ns, hi_ns)
        if rows is None:
            return int(np.count_nonzero((self.ends > lo_ns) & (self.starts < hi_ns)))
        return int(np.count_nonzero(self.ends[rows] > lo_ns))


def in_window(
    events: pd.DataFrame, lo_ns: int, hi_ns: int, hidden_devices=(), index: WindowIndex | None = None
) -> np.ndarray:
    """Positions (ascending) of the rows of ``events`` (``start_ns``, ``end_ns``, and ``device_id``
    when ``hidden_devices`` is given) drawn in the window ``[lo_ns, hi_ns)``: ``end > lo`` and
    ``start < hi``, leaving out hidden devices. Computed on the columns' arrays, so the caller cuts the
    frame once (``iloc``). (Statistics clip with ``analysis.window.overlapping``, which also keeps
    zero-length rows at the window's start.) ``index``: the frame's ``WindowIndex``, which finds the same rows
    without reading every one."""
    if index is not None:
        rows = index.rows(lo_ns, hi_ns)
    else:
        rows = _compared(events["start_ns"].to_numpy(), events["end_ns"].to_numpy(), lo_ns, hi_ns)
    if hidden_devices:
        rows = rows[~np.isin(events["device_id"].to_numpy()[rows], list(hidden_devices))]
    return rows


def count_in_window(
    events: pd.DataFrame, lo_ns: int, hi_ns: int, hidden_devices=(), index: WindowIndex | None = None
) -> int:
    """``len(in_window(...))``, without the rows' positions when no device is hidden."""
    if hidden_devices:
        return len(in_window(events, lo_ns, hi_ns, hidden_devices, index))
    if index is not None:
        return index.count(lo_ns, hi_ns)
    return int(np.count_nonzero((events["end_ns"].to_numpy() > lo_ns) & (events["start_ns"].to_numpy() < hi_ns)))


def select_ranges(
    ranges: pd.DataFrame, *, lo_ns: int, hi_ns: int, budget: int, index: WindowIndex | None = None
) -> tuple[pd.DataFrame, int]:
    """Ranges overlapping ``[lo_ns, hi_ns)``, at most ``budget`` of them, longest first (``index``: the frame's
    ``WindowIndex``, see ``in_window``).

    Returns:
        ``(selected, hidden)``: the kept rows (original order) and how many were left out.
    """
    rows = in_window(ranges, lo_ns, hi_ns, index=index)  # positions first: one take of the kept rows
    if len(rows) <= budget:
        return ranges.iloc[rows], 0
    dur = ranges["end_ns"].to_numpy()[rows] - ranges["start_ns"].to_numpy()[rows]
    keep = np.sort(rows[np.argsort(-dur, kind="stable")[:budget]])
    return ranges.iloc[keep], len(rows) - budget


def pixel_runs(lanes, starts: np.ndarray, ends: np.ndarray, px_ns: float) -> np.ndarray:
    """The bar each NVTX range is drawn in at ``px_ns`` nanoseconds per pixel: a range narrower than a pixel joins
    the range before it in its lane when that one is narrower than a pixel too and ended less than a pixel before
    it starts; every other range is a bar of its own. Sub-pixel ranges drawn one by one cost the browser as much as
    wide ones (1,500 of them ~135 ms), and a pixel shows one of them at most: a dense stretch is one bar, which a
    zoom splits again. A range a pixel wide or more is never merged.

    Args:
        lanes: each range's lane (any hashable labels); starts, ends: its times (ns).
        px_ns: one pixel's width in ns (0: nothing is merged).

    Returns:
        int64 bar number per range, in the input's order: 0, 1, … in (lane, start) order; ranges sharing a number
        are drawn as one bar.
    """
    n = len(starts)
    if n == 0:
        return np.empty(0, np.int64)
    codes = pd.factorize(np.asarray(lanes, dtype=object))[0]
    s, e = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
    order = np.lexsort((s, codes))
    s, e, c = s[order], e[order], codes[order]
    narrow = (e - s) < px_ns
    joins = np.zeros(n, dtype=bool)
    joins[1:] = (c[1:] == c[:-1]) & narrow[1:] & narrow[:-1] & ((s[1:] - e[:-1]) < px_ns)
    out = np.empty(n, np.int64)
    out[order] = np.cumsum(~joins) - 1
    return out
