"""Exact-value tests of the interval arithmetic (half-open [start, end) integer ns)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.analysis.intervals import (
    covered_before,
    gaps,
    intersect_unions,
    intersection_length,
    masked_union_length,
    union_fraction_bins,
    union_intervals,
    union_length,
    union_overlap_length,
)


def pairs(result):
    return list(zip(result[0].tolist(), result[1].tolist()))


@pytest.mark.parametrize(
    "intervals, expected",
    [
        ([], []),
        ([(5, 5)], []),  # zero-length: nothing
        ([(0, 10)], [(0, 10)]),
        ([(0, 10), (10, 20)], [(0, 20)]),  # touching merge
        ([(0, 100), (10, 20), (30, 40)], [(0, 100)]),  # nested
        ([(200, 300), (0, 100), (50, 150)], [(0, 150), (200, 300)]),  # unsorted
        ([(0, 10), (11, 20)], [(0, 10), (11, 20)]),  # 1 ns gap stays
        ([(10, 5), (0, 3)], [(0, 3)]),  # end < start ignored
        ([(0, 100), (0, 100)], [(0, 100)]),  # duplicates
    ],
)
def test_union_intervals(intervals, expected):
    s = [a for a, _ in intervals]
    e = [b for _, b in intervals]
    assert pairs(union_intervals(s, e)) == expected
    assert union_length(s, e) == sum(b - a for a, b in expected)


def test_union_does_not_mutate_inputs():
    s = np.array([200, 0, 50], dtype=np.int64)
    e = np.array([300, 100, 150], dtype=np.int64)
    union_intervals(s, e)
    assert s.tolist() == [200, 0, 50] and e.tolist() == [300, 100, 150]


def test_union_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="differ in length"):
        union_intervals([0, 1], [2])


def test_overlapping_streams_case():
    # stream 7 [0,100) [200,300), stream 8 [50,150), stream 9 [60,90): sum 330, union 250, span 300, idle 50
    s = [0, 200, 50, 60]
    e = [100, 300, 150, 90]
    assert sum(b - a for a, b in zip(s, e)) == 330
    assert union_length(s, e) == 250
    assert pairs(gaps(s, e)) == [(150, 200)]


def test_multi_device_unions_are_per_device():
    # dev 0 stream 7 [0,80) [90,100); dev 1 stream 7 [0,80); dev 2 stream 7 [10,90)
    per_device = {0: ([0, 90], [80, 100]), 1: ([0], [80]), 2: ([10], [90])}
    assert {d: union_length(*v) for d, v in per_device.items()} == {0: 90, 1: 80, 2: 80}
    assert {d: int(sum(e - s for s, e in zip(*gaps(*v, within=(0, 100))))) for d, v in per_device.items()} == {
        0: 10,
        1: 20,
        2: 20,
    }
    all_s = sum((v[0] for v in per_device.values()), [])
    all_e = sum((v[1] for v in per_device.values()), [])
    assert union_length(all_s, all_e) == 100  # the all-GPU union


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ([], [(0, 10)], []),
        ([(0, 100), (200, 300)], [(50, 250)], [(50, 100), (200, 250)]),
        ([(0, 10)], [(10, 20)], []),  # touching: no overlap
        ([(0, 100)], [(10, 20), (30, 40)], [(10, 20), (30, 40)]),  # nested
        ([(30, 40), (0, 10)], [(5, 35)], [(5, 10), (30, 35)]),  # unsorted
    ],
)
def test_intersect_unions(a, b, expected):
    r = intersect_unions([x for x, _ in a], [y for _, y in a], [x for x, _ in b], [y for _, y in b])
    assert pairs(r) == expected
    assert intersection_length([x for x, _ in a], [y for _, y in a], [x for x, _ in b], [y for _, y in b]) == sum(
        y - x for x, y in expected
    )


def test_union_overlap_length_reads_only_the_union_intervals_the_second_set_spans():
    """The union's intervals before the first call or after the last are left out; the sum is the same."""
    us, ue = np.array([0, 200, 400, 600]), np.array([100, 300, 500, 700])
    # [250,300) [400,420) [450,500) [600,650)
    assert union_overlap_length(us, ue, [250, 450], [420, 650]) == 50 + 20 + 50 + 50
    assert union_overlap_length(us, ue, [100, 300], [200, 400]) == 0  # only in the holes
    assert union_overlap_length(us, ue, [-50], [1_000]) == 400
    assert union_overlap_length(us, ue, [650, 640], [660, 690]) == 50  # overlapping calls count once
    assert union_overlap_length(us, ue, [800], [900]) == 0
    assert union_overlap_length([], [], [0], [10]) == 0
    assert union_overlap_length(us, ue, [], []) == 0


def test_gaps_with_window_and_empty():
    assert pairs(gaps([10, 50], [20, 60], within=(0, 100))) == [(0, 10), (20, 50), (60, 100)]
    assert pairs(gaps([], [], within=(0, 100))) == [(0, 100)]
    assert pairs(gaps([], [])) == []
    assert pairs(gaps([0, 10], [10, 20])) == []  # touching leaves no gap


def test_gaps_of_a_union_already_made_are_the_gaps_of_its_intervals():
    """``is_union``: a union (or a window cut of one) is not merged again; the gaps are the same."""
    rng = np.random.default_rng(3)
    s = rng.integers(0, 10_000, 500)
    e = s + rng.integers(1, 60, 500)
    us, ue = union_intervals(s, e)
    for within in (None, (0, 10_100), (2_000, 3_000), (int(us[3]), int(ue[7]))):
        assert pairs(gaps(us, ue, within=within, is_union=True)) == pairs(gaps(s, e, within=within))
    assert pairs(gaps([], [], within=(0, 100), is_union=True)) == [(0, 100)]


def test_covered_before():
    assert covered_before([0, 200], [100, 300], [-5, 0, 50, 100, 150, 250, 300, 400]).tolist() == [
        0,
        0,
        50,
        100,
        100,
        150,
        200,
        200,
    ]
    assert covered_before([], [], [5]).tolist() == [0]


def test_union_fraction_bins_exact():
    edges, frac = union_fraction_bins(*union_intervals([0, 150], [100, 200]), 0, 200, 4)
    assert edges.tolist() == [0, 50, 100, 150, 200]
    assert frac.tolist() == [1.0, 1.0, 0.0, 1.0]
    edges, frac = union_fraction_bins(*union_intervals([25], [75]), 0, 100, 2)
    assert frac.tolist() == [0.5, 0.5]
    with pytest.raises(ValueError):
        union_fraction_bins([0], [1], 10, 10, 3)


def brute_union_length(s, e):
    covered = set()
    for a, b in zip(s, e):
        covered.update(range(a, b))
    return len(covered)


intervals = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 25)), max_size=25).map(
    lambda xs: ([a for a, _ in xs], [a + d for a, d in xs])
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(intervals, intervals)
def test_properties_against_brute_force(x, y):
    s, e = x
    us, ue = union_intervals(s, e)
    assert union_length(s, e) == brute_union_length(s, e)
    assert (us[1:] > ue[:-1]).all()  # disjoint and non-touching
    assert union_length(us, ue) == union_length(s, e)  # idempotent
    nonempty = [(a, b) for a, b in zip(s, e) if b > a]
    if nonempty:
        lo, hi = min(a for a, _ in nonempty), max(b for _, b in nonempty)
        gs, ge = gaps(s, e)
        assert int((ge - gs).sum()) + union_length(s, e) == hi - lo  # busy + idle = span
    ys, ye = y
    brute = len(
        set().union(*[range(a, b) for a, b in zip(s, e)], set())
        & set().union(*[range(a, b) for a, b in zip(ys, ye)], set())
    )
    assert intersection_length(s, e, ys, ye) == brute
    assert union_overlap_length(us, ue, ys, ye) == brute
    gs, ge = gaps(s, e)  # gaps are a union too (what the blocking rules intersect with host calls)
    assert union_overlap_length(gs, ge, ys, ye) == len(
        set().union(*[range(a, b) for a, b in zip(gs.tolist(), ge.tolist())], set())
        & set().union(*[range(a, b) for a, b in zip(ys, ye)], set())
    )


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("part_rows", [1, 2, 7, 1 << 21])
def test_masked_union_length_in_parts_is_the_union_length_of_the_masked_rows(seed, part_rows):
    """Sorted starts, touching and nested intervals, empty and reversed rows, masks: parts of 1, 2 and 7 rows
    (the open interval carried from part to part) give the one-pass length."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    s = np.sort(rng.integers(0, 200, n)).astype(np.int64)
    e = s + rng.integers(-5, 40, n)
    mask = rng.random(n) < 0.6
    assert masked_union_length(s, e, mask, part_rows=part_rows) == union_length(s[mask], e[mask])
    assert masked_union_length(s, e, part_rows=part_rows) == union_length(s, e)


def test_masked_union_length_exact():
    s = np.array([0, 10, 20, 25, 40, 50], dtype=np.int64)
    e = np.array([10, 15, 30, 28, 45, 49], dtype=np.int64)  # [0,10) and [10,15) touch; [50,49) is empty
    assert masked_union_length(s, e, part_rows=2) == 15 + 10 + 5
    assert masked_union_length(s, e, np.array([1, 0, 1, 1, 0, 1], bool), part_rows=1) == 10 + 10
    assert masked_union_length(s[::-1], e[::-1], part_rows=2) == 30  # unsorted: one pass


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 500), st.integers(1, 40)), max_size=40),
    st.integers(-50, 550),
    st.integers(1, 300),
    st.integers(1, 9),
)
def test_union_fraction_bins_equal_the_fractions_counted_per_ns(intervals, lo, width, n_bins):
    """Each bin's fraction is its busy ns over its width, whatever part of the union the window meets (the bins
    read only the intervals inside the window)."""
    us, ue = union_intervals([a for a, _ in intervals], [a + d for a, d in intervals])
    edges, frac = union_fraction_bins(us, ue, lo, lo + width, n_bins)
    busy = np.zeros(1200, bool)
    for a, b in zip(us.tolist(), ue.tolist()):
        busy[a + 100 : b + 100] = True
    want = [busy[a + 100 : b + 100].sum() / (b - a) if b > a else 0.0 for a, b in zip(edges[:-1], edges[1:])]
    assert frac.tolist() == want


def _scan(starts, ends, lo, hi):
    """``in_window``'s rows by comparing every row: what ``WindowIndex`` must find."""
    return np.flatnonzero((np.asarray(ends) > lo) & (np.asarray(starts) < hi)).tolist()


@pytest.mark.parametrize(
    "rows, lo, hi, expected",
    [
        ([], 0, 10, []),
        ([(0, 10), (10, 20), (20, 30)], 10, 20, [1]),  # half-open: touching rows are outside
        ([(0, 10), (10, 20), (20, 30)], 9, 21, [0, 1, 2]),
        ([(5, 5)], 4, 6, [0]),  # zero-length inside the window
        ([(5, 5)], 5, 6, []),  # ... and at its start: end > lo fails
        ([(30, 40), (0, 100), (10, 12)], 50, 60, [1]),  # unsorted; the long row spans the window
        ([(30, 40), (0, 100), (10, 12)], 11, 35, [0, 1, 2]),
        ([(0, 1)] * 5 + [(2, 3)], 1, 2, []),  # ties
        ([(0, 1)] * 5 + [(2, 3)], 0, 1, [0, 1, 2, 3, 4]),
        ([(7, 9), (1, 3)], 100, 200, []),  # after every row
        ([(7, 9), (1, 3)], -5, 0, []),  # before every row
    ],
)
@pytest.mark.parametrize("block", [1, 2, 1024])
def test_window_index_finds_the_rows_in_the_window(rows, lo, hi, expected, block):
    from dashboard.analysis.timeline import WindowIndex

    s = np.array([a for a, _ in rows], np.int64)
    e = np.array([b for _, b in rows], np.int64)
    idx = WindowIndex(s, e, block=block)
    got = idx.rows(lo, hi)
    assert got.tolist() == expected == _scan(s, e, lo, hi)
    assert got.dtype == np.intp
    assert idx.count(lo, hi) == len(expected)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 300), st.integers(0, 60)), max_size=80),
    st.integers(-10, 400),
    st.integers(0, 200),
    st.sampled_from([1, 3, 8, 1024]),
    st.booleans(),
)
def test_window_index_equals_the_scan(rows, lo, width, block, sort):
    """Any rows (unsorted, ties, zero-length, long), any window, any block size: the scan's rows, in its order."""
    from dashboard.analysis.timeline import WindowIndex

    rows = sorted(rows) if sort else rows
    s = np.array([a for a, _ in rows], np.int64)
    e = s + np.array([d for _, d in rows], np.int64)
    idx = WindowIndex(s, e, block=block)
    assert (idx.order is None) == (len(s) < 2 or bool((np.diff(s) >= 0).all()))  # no permutation kept when sorted
    assert idx.rows(lo, lo + width).tolist() == _scan(s, e, lo, lo + width)
    assert idx.count(lo, lo + width) == len(_scan(s, e, lo, lo + width))


def test_count_in_window_counts_what_in_window_finds_with_or_without_an_index_or_hidden_devices():
    """Kernels on devices 0 and 1; [10, 20) holds rows 1 (device 1), 2 and 3 (zero-length at 15); a wide window
    (every block read) counts by comparing every row, as ``rows`` then does."""
    import pandas as pd

    from dashboard.analysis.timeline import WindowIndex, count_in_window, in_window

    k = pd.DataFrame({"start_ns": [0, 5, 12, 15, 25], "end_ns": [10, 11, 30, 15, 40], "device_id": [0, 1, 0, 0, 1]})
    idx = WindowIndex(k["start_ns"].to_numpy(), k["end_ns"].to_numpy(), block=2)
    for index in (None, idx):
        assert in_window(k, 10, 20, index=index).tolist() == [1, 2, 3]
        assert count_in_window(k, 10, 20, index=index) == 3
        assert count_in_window(k, 10, 20, (1,), index) == 2  # device 1 hidden
        assert count_in_window(k, -100, 100, index=index) == 5
        assert count_in_window(k, 40, 50, index=index) == 0


@pytest.mark.parametrize(
    "gap_ends, expected",
    [
        ([10], ([8], [10])),  # the gap between the first two busy intervals
        ([5], ([0], [5])),  # before the first busy interval: from the activity's first instant
        ([40], ([30], [45])),  # after the last: to the activity's last instant
    ],
)
def test_gap_extents_reach_the_neighbouring_busy_intervals(gap_ends, expected):
    from dashboard.analysis.timeline import _gap_extents

    us, ue = np.array([5, 10, 20], np.int64), np.array([8, 15, 30], np.int64)  # busy [5, 8), [10, 15), [20, 30)
    lo, hi = _gap_extents(us, ue, np.array(gap_ends), 0, 45)
    assert (lo.tolist(), hi.tolist()) == expected
    lo, hi = _gap_extents(np.empty(0, np.int64), np.empty(0, np.int64), np.array([7]), 2, 9)  # no busy time
    assert (lo.tolist(), hi.tolist()) == ([2], [9])
