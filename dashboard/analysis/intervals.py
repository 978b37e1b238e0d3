"""Vectorised arithmetic on half-open ``[start, end)`` integer-ns intervals.

All functions take numpy int64 arrays (or anything ``np.asarray`` turns into them), never mutate
their inputs, and return new arrays. Empty intervals (``end <= start``) contribute nothing.

::

    a:  [0----100)     [200--300)
    b:      [50---150)
    union(a, b) = [0------150) [200--300)   length 250
    gaps        =            [150,200)      length 50
"""

from __future__ import annotations

import numpy as np

# Rows worked through at a time by the part-wise passes over a trace's frames (this module's and the analyses'):
# 10M kernels then hold a few 16 MB columns at a time, never a dozen 80 MB ones.
PART_ROWS = 1 << 21


def _as_int64(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def is_sorted(values: np.ndarray) -> bool:
    """Whether ``values`` never decrease (a loader's columns usually come in start order: no sort, no copy)."""
    return values.size < 2 or bool((values[1:] >= values[:-1]).all())


def union_intervals(starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """Merge intervals into their union: disjoint, sorted, non-touching intervals.

    Args:
        starts, ends: int64 arrays of equal length, ns. Rows with ``end <= start`` are ignored;
            input order does not matter.

    Returns:
        ``(union_starts, union_ends)``: int64 arrays sorted by start. Touching intervals
        (``[0,10)`` and ``[10,20)``) merge into one (``[0,20)``).

    Raises:
        ValueError: if the arrays differ in length.

    Example:
        >>> union_intervals([50, 0, 200], [150, 100, 300])
        (array([  0, 200]), array([150, 300]))
    """
    s = _as_int64(starts)
    e = _as_int64(ends)
    if s.shape != e.shape:
        raise ValueError(f"starts and ends differ in length: {s.shape} vs {e.shape}")
    keep = e > s
    owned = not keep.all()  # e is a copy made here (the caller's arrays are never written)
    if owned:
        s, e = s[keep], e[keep]
    del keep
    if s.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    if not is_sorted(s):
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
        del order  # 10M kernels: each of these arrays is 80 MB
        owned = True
    run_max = np.maximum.accumulate(e, out=e if owned else None)
    # A new group starts where the start is past every end seen so far (touching merges).
    new_group = np.empty(s.size, dtype=bool)
    new_group[0] = True
    new_group[1:] = s[1:] > run_max[:-1]
    group_starts = s[new_group]
    last_in_group = np.flatnonzero(np.r_[new_group[1:], True])
    group_ends = run_max[last_in_group]
    return group_starts, group_ends


def union_length(starts, ends) -> int:
    """Total length in ns of the union of the intervals (see ``union_intervals``)."""
    us, ue = union_intervals(starts, ends)
    return int((ue - us).sum())


def masked_union_length(starts, ends, mask=None, *, part_rows: int = PART_ROWS) -> int:
    """``union_length(starts[mask], ends[mask])`` (every row without ``mask``), worked through a part of the rows
    at a time when ``starts`` is sorted (as the loaders' kernel frames are): 10M kernels never make a copy
    of their columns or a running maximum of every row.

    Each part carries the union's open interval (its start and furthest end) into the next."""
    s, e = _as_int64(starts), _as_int64(ends)
    if s.shape != e.shape:
        raise ValueError(f"starts and ends differ in length: {s.shape} vs {e.shape}")
    if s.size <= part_rows or not is_sorted(s):
        return union_length(s, e) if mask is None else union_length(s[mask], e[mask])
    total, open_s, open_e = 0, None, None
    for a in range(0, s.size, part_rows):
        ps, pe = s[a : a + part_rows], e[a : a + part_rows]
        if mask is not None:
            m = mask[a : a + part_rows]
            ps, pe = ps[m], pe[m]
        keep = pe > ps
        if not keep.all():
            ps, pe = ps[keep], pe[keep]
        if ps.size == 0:
            continue
        run = np.maximum.accumulate(pe)
        if open_e is not None:
            np.maximum(run, open_e, out=run)
        new = np.empty(ps.size, dtype=bool)
        new[0] = open_e is None or ps[0] > open_e
        new[1:] = ps[1:] > run[:-1]
        heads = np.flatnonzero(new)  # rows that start an interval of the union
        if heads.size == 0:  # the whole part extends the open interval
            open_e = int(run[-1])
            continue
        if heads[0] > 0:  # the part's first rows extend the open interval, closed where the next one starts
            total += int(run[heads[0] - 1]) - open_s
        elif open_e is not None:
            total += open_e - open_s
        total += int((run[heads[1:] - 1] - ps[heads[:-1]]).sum())  # intervals begun and ended in this part
        open_s, open_e = int(ps[heads[-1]]), int(run[-1])
    return total + (open_e - open_s if open_e is not None else 0)


def intersect_unions(a_starts, a_ends, b_starts, b_ends) -> tuple[np.ndarray, np.ndarray]:
    """Intersect two interval sets, each first reduced to its union.

    Returns:
        ``(starts, ends)`` int64 arrays, disjoint and sorted: every point in both unions.

    Example:
        >>> intersect_unions([0, 200], [100, 300], [50], [250])
        (array([ 50, 200]), array([100, 250]))
    """
    as_, ae = union_intervals(a_starts, a_ends)
    bs, be = union_intervals(b_starts, b_ends)
    if as_.size == 0 or bs.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    # For each interval of a, the b intervals that can overlap it form a contiguous run.
    lo = np.searchsorted(be, as_, side="right")  # first b ending after a starts
    hi = np.searchsorted(bs, ae, side="left")  # first b starting at/after a ends
    counts = np.maximum(hi - lo, 0)
    if counts.sum() == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    a_idx = np.repeat(np.arange(as_.size), counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    b_idx = np.repeat(lo, counts) + offsets
    s = np.maximum(as_[a_idx], bs[b_idx])
    e = np.minimum(ae[a_idx], be[b_idx])
    keep = e > s
    return s[keep], e[keep]


def intersection_length(a_starts, a_ends, b_starts, b_ends) -> int:
    """Length in ns of ``union(a) ∩ union(b)``."""
    return union_overlap_length(*union_intervals(a_starts, a_ends), b_starts, b_ends)


def union_overlap_length(union_starts, union_ends, starts, ends) -> int:
    """Length in ns of ``union ∩ union(starts, ends)`` for a first set that is a union already (disjoint and sorted:
    ``union_intervals``' or ``gaps``' output), never merged again. Only the union's intervals that the second set
    spans are read, and no pair of intervals is listed: a trace's millions of idle gaps against a few thousand
    host calls make arrays the size of the calls and one running sum of the gaps they span, where listing the
    overlapping pairs (``intersect_unions``) made a dozen arrays the size of the gaps.

    Example:
        >>> union_overlap_length([0, 200], [100, 300], [50, 250], [150, 260])
        60
    """
    bs, be = union_intervals(starts, ends)
    us, ue = _as_int64(union_starts), _as_int64(union_ends)
    if bs.size == 0 or us.size == 0:
        return 0
    # intervals ending by the first start, or starting at or after the last end, add the same to every
    # covered_before below (or nothing): left out
    i0, i1 = int(np.searchsorted(ue, bs[0], side="right")), int(np.searchsorted(us, be[-1], side="left"))
    if i1 <= i0:
        return 0
    covered = covered_before(us[i0:i1], ue[i0:i1], np.concatenate([bs, be]))
    return int((covered[bs.size :] - covered[: bs.size]).sum())


def gaps(
    starts, ends, *, within: tuple[int, int] | None = None, is_union: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Idle gaps between the intervals' union.

    Args:
        starts, ends: int64 arrays, ns.
        within: optional ``(lo, hi)`` window; gaps before the first and after the last interval
            up to the window's edges are included, and everything is clipped to it. Without it,
            only gaps between the first start and the last end are returned.
        is_union: the intervals are a union already (``union_intervals``' output, or a window cut of it): not
            merged again (a timeline zoom cuts millions of busy intervals from a kept union).

    Returns:
        ``(gap_starts, gap_ends)`` int64 arrays sorted by start; every gap has positive length.

    Example:
        >>> gaps([0, 200], [100, 300])
        (array([100]), array([200]))
    """
    us, ue = (_as_int64(starts), _as_int64(ends)) if is_union else union_intervals(starts, ends)
    if within is not None:
        lo, hi = int(within[0]), int(within[1])
        if us.size == 0:
            return (
                (np.array([lo], np.int64), np.array([hi], np.int64))
                if hi > lo
                else (
                    np.empty(0, np.int64),
                    np.empty(0, np.int64),
                )
            )
        # a zoom's union holds millions of intervals: each array made once, clipped in place
        gs = np.empty(us.size + 1, np.int64)
        gs[0], gs[1:] = lo, ue
        ge = np.empty(us.size + 1, np.int64)
        ge[:-1], ge[-1] = us, hi
        np.maximum(gs, lo, out=gs)
        np.minimum(ge, hi, out=ge)
    else:
        gs, ge = ue[:-1], us[1:]
    keep = ge > gs
    if keep.all():
        return gs.copy() if within is None else gs, ge.copy() if within is None else ge
    return gs[keep], ge[keep]


def covered_before(union_starts, union_ends, t) -> np.ndarray:
    """Busy time in ns before each time ``t`` for a union already made by ``union_intervals``.

    Args:
        union_starts, union_ends: disjoint sorted int64 intervals.
        t: int64 array of query times.

    Returns:
        int64 array, same shape as ``t``: ``|union ∩ (-inf, t)|``. So the busy time inside
        ``[a, b)`` is ``covered_before(..., b) - covered_before(..., a)``.

    Example:
        >>> covered_before([0, 200], [100, 300], [50, 150, 250, 400])
        array([ 50, 100, 150, 200])
    """
    us = _as_int64(union_starts)
    ue = _as_int64(union_ends)
    tt = _as_int64(t)
    if us.size == 0:
        return np.zeros(tt.shape, np.int64)
    cum = np.zeros(us.size + 1, np.int64)  # busy time of the first k intervals (one array: unions run to millions)
    np.subtract(ue, us, out=cum[1:])
    np.cumsum(cum[1:], out=cum[1:])
    i = np.searchsorted(us, tt, side="right")  # intervals starting at or before t
    j = np.maximum(i - 1, 0)
    partial = np.clip(np.minimum(tt, ue[j]) - us[j], 0, None)
    return np.where(i > 0, cum[j] + partial, 0).astype(np.int64)


def union_fraction_bins(union_starts, union_ends, lo: int, hi: int, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Fraction of each of ``n_bins`` equal time bins of ``[lo, hi)`` covered by a union already
    made by ``union_intervals`` (no re-sort).

    Returns:
        ``(edges_ns, fraction)``: ``edges_ns`` int64 of length ``n_bins + 1``; ``fraction``
        float64 of length ``n_bins``, each in [0, 1].

    Raises:
        ValueError: if ``hi <= lo`` or ``n_bins < 1``.
    """
    if hi <= lo or n_bins < 1:
        raise ValueError(f"need hi > lo and n_bins >= 1, got lo={lo}, hi={hi}, n_bins={n_bins}")
    edges = np.linspace(lo, hi, n_bins + 1).round().astype(np.int64)
    edges[0], edges[-1] = lo, hi
    # only the intervals that meet [lo, hi) change the differences below: a small window of a union of millions
    # reads a few (binary search), not all of them
    us, ue = _as_int64(union_starts), _as_int64(union_ends)
    i0, i1 = int(np.searchsorted(ue, lo, side="right")), int(np.searchsorted(us, hi, side="left"))
    cov = covered_before(us[i0:i1], ue[i0:i1], edges)
    widths = np.diff(edges)
    frac = np.divide(np.diff(cov), widths, out=np.zeros(n_bins), where=widths > 0)
    return edges, np.clip(frac, 0.0, 1.0)
