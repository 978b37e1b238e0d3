"""Same-stream overrun clipping (``kernel_times.kernel_end_ns``): the vectorised pass equals the definition
row by row."""

import numpy as np
import pandas as pd
import pytest

from dashboard.analysis.kernel_times import STREAM_KEY, _compute_overruns


def _by_definition(k: pd.DataFrame) -> tuple[np.ndarray, int]:
    """Per stream, kernels ordered by (start, end, row); a kernel ending after the end of a later one is
    clipped to the next one's start. Graph kernels, 0/0 and invalid rows take no part."""
    ends = k["end_ns"].to_numpy(np.int64).copy()
    clipped = 0
    usable = ~((k.start_ns == 0) & (k.end_ns == 0)) & (k.start_ns >= 0) & (k.end_ns >= k.start_ns)
    part = k[usable & k["graph_node_id"].isna()]
    for _, g in part.groupby(list(STREAM_KEY)):
        rows = sorted(g.index, key=lambda r: (k.start_ns[r], k.end_ns[r], r))
        for i, r in enumerate(rows[:-1]):
            if k.end_ns[r] > min(k.end_ns[x] for x in rows[i + 1 :]):
                ends[r] = k.start_ns[rows[i + 1]]
                clipped += 1
    return ends, clipped


@pytest.mark.parametrize("seed", range(40))
def test_clipping_matches_the_definition(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 120))
    s = rng.integers(0, 12, n) * 10  # many ties in start and in end
    k = pd.DataFrame(
        {
            "start_ns": s,
            "end_ns": s + rng.integers(-3, 40, n),
            "device_id": rng.integers(0, 2, n),
            "pid": rng.integers(5, 7, n),
            "context_id": np.ones(n, np.int64),
            "stream_id": rng.integers(0, 1 + seed % 5, n),
            "graph_node_id": pd.array(np.where(rng.random(n) < 0.15, 3, -1), dtype="Int64"),
        }
    )
    k.loc[k["graph_node_id"] < 0, "graph_node_id"] = pd.NA
    expected, count = _by_definition(k)
    ends, n_clipped = _compute_overruns(k)
    assert n_clipped == count
    assert np.array_equal(k["end_ns"].to_numpy() if ends is None else ends, expected)


def test_many_streams_take_the_grouped_path():
    n = 20_000  # > 4096 streams
    k = pd.DataFrame(
        {
            "start_ns": np.tile([0, 10], n // 2),
            "end_ns": np.tile([50, 20], n // 2),
            "device_id": 0,
            "pid": 1,
            "context_id": 1,
            "stream_id": np.repeat(np.arange(n // 2), 2),
            "graph_node_id": pd.array([None] * n, dtype="Int64"),
        }
    )
    ends, clipped = _compute_overruns(k)
    assert clipped == n // 2 and ends[:4].tolist() == [10, 20, 10, 20]


@pytest.mark.parametrize("part_rows", [1 << 21, 1, 2, 3])  # parts of the rows, ties across parts included
def test_the_longest_instance_of_each_name_is_the_first_of_the_longest_usable_rows_with_its_clipped_end(
    monkeypatch, part_rows
):
    from dashboard.analysis import tables
    from dashboard.analysis.tables import longest_instances

    monkeypatch.setattr(tables._longest_by_codes, "__defaults__", (part_rows,))

    k = pd.DataFrame(
        {
            "start_ns": [0, 10, 100, 200, 300, 50, 400],
            "end_ns": [500, 20, 150, 250, 100, 60, 450],  # row 0 overruns rows 1 and 5; row 4 ends before it starts
            "device_id": 0,
            "pid": 1,
            "context_id": 1,
            "stream_id": 7,
            "graph_node_id": pd.array([None] * 7, dtype="Int64"),
            "short_name": pd.Categorical(["a", "b", "b", "b", "b", "c", "c"]),
            "name": pd.Categorical(["A", "B1", "B2", "B1", "B2", "C", "C"]),
        }
    )
    short = longest_instances(k)
    assert short.to_dict("index") == {  # a: its end clipped to the next start (10); b: 150 and 250 tie, 150 first
        "a": {"s": 0, "e": 10, "dur": 10},
        "b": {"s": 100, "e": 150, "dur": 50},
        "c": {"s": 400, "e": 450, "dur": 50},
    }
    assert longest_instances(k, "full").loc["B2"].tolist() == [100, 150, 50]  # row 4 is invalid: never picked


def test_per_name_counts_and_totals_are_exact_int64_and_rows_without_a_name_are_left_out():
    from dashboard.analysis.summary import _count_and_total

    names = pd.Series(pd.Categorical(["b", None, "a", "b", "b"], categories=["a", "b", "zz"]))
    durations = pd.Series([2**53 + 1, 7, 5, 2**53 + 1, 3], dtype=np.int64)  # beyond float64's exact integers
    out = _count_and_total(names, durations)
    assert out.to_dict("records") == [
        {"name": "a", "count": 1, "total_ns": 5},
        {"name": "b", "count": 3, "total_ns": 2**54 + 5},  # "zz" has no row: no line
    ]
    assert out["count"].dtype == np.int64 and out["total_ns"].dtype == np.int64
