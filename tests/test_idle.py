"""Idle gaps and their host causes on a small fixture and on the generated seed-shaped sample."""

import numpy as np
import pandas as pd
import pytest

from dashboard.analysis.gpu_time import device_unions, gpu_work
from dashboard.analysis.idle import (
    NO_HOST_ACTIVITY,
    gap_causes,
    idle_by_cause,
    idle_gaps,
    idle_gaps_of,
    idle_while_blocked,
    largest_idle_gaps,
    no_gpu_busy,
)
from dashboard.loaders import load_nsys_sqlite

from factories import GLOBAL_TID_1, write_nsys_sqlite
from paths import SAMPLES


def fixture(tmp_path):
    """GPU: k1 [0,100) k2 [300,400) k3 [1000,1100).  Launch thread T (pid 100, tid 101):

    gap [100,300): T in cudaStreamSynchronize [90,310) inside NVTX wait [80,320) inside step [0,2000)
    gap [400,1000): T only inside NVTX gather [350,990) inside step
    another thread runs a long cudaMalloc over everything: not a launching thread, ignored.
    """
    other = GLOBAL_TID_1 + 5
    return load_nsys_sqlite(
        write_nsys_sqlite(
            tmp_path / "g.sqlite",
            kernels=[
                {"start": 0, "end": 100, "correlationId": 1},
                {"start": 300, "end": 400, "correlationId": 2},
                {"start": 1000, "end": 1100, "correlationId": 3},
            ],
            runtime=[
                {"start": -5, "end": -1, "name": "cudaLaunchKernel_v7000", "correlationId": 1},
                {"start": 1, "end": 2, "name": "cudaLaunchKernel_v7000", "correlationId": 2},
                {"start": 3, "end": 4, "name": "cudaLaunchKernel_v7000", "correlationId": 3},
                {"start": 90, "end": 310, "name": "cudaStreamSynchronize_v3020", "correlationId": 10},
                {"start": 0, "end": 5000, "name": "cudaMalloc_v3020", "correlationId": 11, "globalTid": other},
            ],
            nvtx=[
                {"start": 0, "end": 2000, "eventType": 59, "text": "step"},
                {"start": 80, "end": 320, "eventType": 59, "text": "PLE_wait_for_GPU"},
                {"start": 350, "end": 990, "eventType": 59, "text": "PLE_CPU_gather"},
            ],
        )
    )


def test_gaps_and_causes_exact(tmp_path):
    b = fixture(tmp_path)
    g = idle_gaps(gpu_work(b.kernels), min_gap_ns=150)
    assert g[["device_id", "start_ns", "end_ns", "duration_ns"]].values.tolist() == [
        [0, 400, 1000, 600],
        [0, 100, 300, 200],
    ]
    c = gap_causes(g, b.kernels, b.api_calls, b.nvtx_ranges)
    assert c[["api_call", "nvtx_range", "cause"]].values.tolist() == [
        ["", "PLE_CPU_gather", "PLE_CPU_gather"],
        ["cudaStreamSynchronize", "PLE_wait_for_GPU", "cudaStreamSynchronize in PLE_wait_for_GPU"],
    ]
    totals = idle_by_cause(c)
    assert totals.values.tolist() == [["PLE_CPU_gather", 1, 600], ["cudaStreamSynchronize in PLE_wait_for_GPU", 1, 200]]


def test_a_call_covering_under_half_of_a_gap_is_not_its_cause(tmp_path):
    """The fresh-clone QA's case on the 108k sample: a cudaStreamSynchronize ending 18.5 µs into a 2.5 ms gap
    was named the gap's cause; the host was doing untraced CPU work for the rest."""
    b = load_nsys_sqlite(
        write_nsys_sqlite(
            tmp_path / "g.sqlite",
            kernels=[
                {"start": 0, "end": 100, "correlationId": 1},
                {"start": 2600, "end": 2700, "correlationId": 2},
                {"start": 3000, "end": 3100, "correlationId": 3},
            ],
            runtime=[
                {"start": -5, "end": -1, "name": "cudaLaunchKernel_v7000", "correlationId": 1},
                {"start": 1, "end": 2, "name": "cudaLaunchKernel_v7000", "correlationId": 2},
                {"start": 3, "end": 4, "name": "cudaLaunchKernel_v7000", "correlationId": 3},
                {"start": 50, "end": 119, "name": "cudaStreamSynchronize_v3020", "correlationId": 10},  # 19 of 2500
                {"start": 2700, "end": 2850, "name": "cudaStreamSynchronize_v3020", "correlationId": 11},
            ],  # 150/300
            nvtx=[{"start": 1000, "end": 2000, "eventType": 59, "text": "PLE_CPU_gather"}],
        )
    )
    g = idle_gaps(gpu_work(b.kernels), min_gap_ns=1)
    assert g[["start_ns", "end_ns"]].values.tolist() == [[100, 2600], [2700, 3000]]
    c = gap_causes(g, b.kernels, b.api_calls, b.nvtx_ranges)
    assert c[["api_call", "nvtx_range", "cause"]].values.tolist() == [
        ["", "PLE_CPU_gather", "PLE_CPU_gather"],  # the range holds the gap's middle (1350)
        ["cudaStreamSynchronize", "", "cudaStreamSynchronize"],
    ]  # exactly half of the gap is enough


def test_threshold_and_no_host_activity(tmp_path):
    b = fixture(tmp_path)
    assert len(idle_gaps(gpu_work(b.kernels), min_gap_ns=201)) == 1
    assert len(idle_gaps(gpu_work(b.kernels), min_gap_ns=0)) == 2
    with pytest.raises(ValueError):
        idle_gaps(gpu_work(b.kernels), min_gap_ns=-1)
    c = gap_causes(
        idle_gaps(gpu_work(b.kernels), min_gap_ns=1), b.kernels, b.api_calls.iloc[0:0], b.nvtx_ranges.iloc[0:0]
    )
    assert len(c) == 2
    assert set(c["cause"]) == {NO_HOST_ACTIVITY}


def test_generated_sample_gaps_are_waits_and_cpu_work():
    b = load_nsys_sqlite(SAMPLES / "generated_seed_shaped_108k.sqlite")
    c = gap_causes(idle_gaps(gpu_work(b.kernels), min_gap_ns=100_000), b.kernels, b.api_calls, b.nvtx_ranges)
    assert len(c) > 100
    assert set(c["nvtx_range"]) <= {
        "PLE_wait_for_GPU",
        "PLE_CPU_gather",
        "PLE_lookup_tokens=1",
        "PLE_lookup_tokens=3",
        "PLE_lookup_tokens=742",
        "PLE_lookup_tokens=1600",
        "",
    }


def test_launching_threads_found_a_part_of_the_launches_at_a_time_give_the_same_causes(monkeypatch):
    """10M launches are worked through 2M at a time: parts of 1,000 launches give the same causes."""
    import dashboard.analysis.idle as idle

    b = load_nsys_sqlite(SAMPLES / "generated_seed_shaped_108k.sqlite")
    gaps = idle_gaps(gpu_work(b.kernels), min_gap_ns=100_000)
    whole = gap_causes(gaps, b.kernels, b.api_calls, b.nvtx_ranges)
    assert {d: t.tolist() for d, t in idle._launching_threads(b.kernels, b.api_calls).items()} == {0: [281543763300356]}
    monkeypatch.setattr(idle, "PART_ROWS", 1000)
    assert gap_causes(gaps, b.kernels, b.api_calls, b.nvtx_ranges).equals(whole)


def test_cause_labels_stand_off_their_bars():
    """The fresh-clone QA saw "cudaStreamSynchronize" touching its bar in the idle-by-cause figure."""
    import pandas as pd

    from dashboard.figures.idle import build_idle_causes

    fig = build_idle_causes(pd.DataFrame({"cause": ["a", "b"], "gaps": [2, 1], "idle_ns": [5_000_000, 1_000_000]}))
    assert fig.layout.yaxis.ticklabelstandoff == 6 and list(fig.data[0].y) == ["b", "a"]  # largest on top
    assert list(fig.data[0].x) == [1.0, 5.0]


def _scan_causes(gaps, api_calls, nvtx_ranges, threads):
    """The causes by a scan of every row per gap (the definition: first row in frame order wins a tie)."""
    out = []
    for dev, gs, ge in gaps:
        on = lambda f, d=dev: f[f["global_tid"].isin(threads.get(d, [])) & f["name"].notna()]  # noqa: E731
        a, r = on(api_calls), on(nvtx_ranges)
        a = a[(a["start_ns"] < ge) & (a["end_ns"] > gs)]
        api = ""
        if len(a):
            overlap = (a["end_ns"].clip(upper=ge) - a["start_ns"].clip(lower=gs)).to_numpy()
            top = int(overlap.argmax())
            api = str(a["name"].iloc[top]) if overlap[top] >= 0.5 * (ge - gs) else ""
        mid = (gs + ge) // 2
        r = r[(r["start_ns"] <= mid) & (r["end_ns"] > mid)]
        rng = str(r["name"].iloc[int((r["end_ns"] - r["start_ns"]).to_numpy().argmin())]) if len(r) else ""
        out.append([api, rng])
    return out


@pytest.mark.parametrize("in_start_order", [False, True], ids=["shuffled", "in-start-order"])
@pytest.mark.parametrize("seed", range(6))
def test_causes_match_a_scan_of_every_row_ties_and_nesting_included(seed, in_start_order):
    """gap_causes finds the rows overlapping a gap by binary search over rows sorted by start (a scan of every
    row per gap took 1.4 s for 500 gaps over 2M calls): the same answers as the scan, on random calls and nested
    ranges with equal overlaps and lengths, rows on other threads and rows without a name; rows already in start
    order (as an export's usually are) are not sorted again."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)

    def rows(n, span, longest):
        start = rng.integers(0, span, n) // 10 * 10  # coarse: many equal starts, ends and overlaps
        end = start + rng.integers(1, longest, n) // 10 * 10 + 10
        names = pd.Categorical(rng.choice(["a", "b", "c", None], n, p=[0.4, 0.3, 0.2, 0.1]))
        return pd.DataFrame({"global_tid": rng.integers(1, 4, n), "name": names, "start_ns": start, "end_ns": end})

    api_calls = rows(400, 20_000, 600)
    nvtx_ranges = pd.concat([rows(60, 20_000, 4_000), rows(3, 2_000, 30_000)], ignore_index=True)  # long, early
    if in_start_order:
        api_calls = api_calls.sort_values("start_ns", kind="stable", ignore_index=True)
        nvtx_ranges = nvtx_ranges.sort_values("start_ns", kind="stable", ignore_index=True)
    threads = {0: np.array([1, 2]), 1: np.array([3])}
    kernels = pd.DataFrame({"device_id": [0, 0, 1]})
    launches = pd.DataFrame({"kernel_index": [0, 1, 2], "api_index": [0, 1, 2]})
    api_calls.loc[:2, "global_tid"] = [1, 2, 3]  # the launches: threads 1 and 2 on device 0, 3 on device 1
    starts = rng.integers(0, 20_000, 80) // 10 * 10
    gaps = [
        (int(d), int(s), int(s + w)) for d, s, w in zip(rng.integers(0, 2, 80), starts, rng.integers(1, 45, 80) * 20)
    ]
    g = pd.DataFrame(gaps, columns=["device_id", "start_ns", "end_ns"]).assign(
        duration_ns=lambda f: f.end_ns - f.start_ns
    )
    got = gap_causes(g, kernels, api_calls, nvtx_ranges, limit=len(g), launches=launches)
    want = _scan_causes(gaps, api_calls, nvtx_ranges, threads)
    assert got[["api_call", "nvtx_range"]].values.tolist() == want
    assert sum(1 for a, r in want if a) > 10 and sum(1 for a, r in want if r) > 20  # the cases are exercised


# GPU work [0, 100), [300, 400), [900, 1000): gaps [100, 300) and [400, 900)
_IDLE = (np.array([100, 400], np.int64), np.array([300, 900], np.int64))


@pytest.mark.parametrize(
    "starts, ends, cost",
    [
        ([50], [120], 200),  # waited on [0, 100), returned into the gap: the whole gap [100, 300)
        ([100], [120], 200),  # started as the GPU's last work ended: waited on it, so the whole gap
        ([150], [160], 10),  # started on an idle GPU: waited on nothing, its own 10 ns only
        ([10], [90], 0),  # returned while the GPU was busy
        ([50, 350], [120, 450], 200 + 500),  # each drained its own gap
        ([50, 60], [120, 130], 200),  # overlapping calls count once
        ([1000], [1200], 0),  # past the last GPU work: outside the span, nothing measured
        ([100], [100], 0),  # took no time as the GPU went idle: waited on nothing
        ([100, 100], [100, 110], 200),  # ... beside one that did wait
    ],
)
def test_idle_while_blocked(starts, ends, cost):
    assert idle_while_blocked(np.array(starts), np.array(ends), _IDLE) == cost


def test_no_gpu_busy_is_the_gaps_of_every_devices_work_together():
    work = pd.DataFrame({"device_id": [0, 1, 0], "start_ns": [0, 50, 300], "end_ns": [100, 200, 400]})
    gs, ge = no_gpu_busy(device_unions(work))
    assert (gs.tolist(), ge.tolist()) == ([200], [300])


def test_no_gpu_busy_of_one_device_is_a_read_only_view_of_its_kept_union():
    """One device: the gaps are the kept union's own ends and starts (no copy), and cannot be written through."""
    unions = {3: (np.array([0, 150, 400]), np.array([100, 300, 450]))}
    gs, ge = no_gpu_busy(unions)
    assert (gs.tolist(), ge.tolist()) == ([100, 300], [150, 400])
    assert np.shares_memory(gs, unions[3][1]) and np.shares_memory(ge, unions[3][0])
    with pytest.raises(ValueError):
        gs[0] = 0
    assert unions[3][1].flags.writeable  # the union itself is left as it was
    touching = {0: (np.array([0, 100, 300]), np.array([100, 200, 400]))}  # not as union_intervals makes one
    assert [a.tolist() for a in no_gpu_busy(touching)] == [[200], [300]]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("n", [0, 1, 3, 17, 500])
def test_the_largest_gaps_are_the_head_of_every_gap_sorted(seed, n):
    """Three devices whose gaps tie in length across and within devices (durations from a few values): the
    largest n, their order and the count equal those of the full sorted frame (the gap table's rows and note)."""
    rng = np.random.default_rng(seed)
    unions = {}
    for dev in (2, 0, 1)[: 1 + seed % 3]:
        busy = rng.choice([5, 10, 20], 60)
        idle = rng.choice([1, 3, 3, 8, 30], 60)
        starts = np.cumsum(np.r_[0, busy[:-1] + idle[:-1]]).astype(np.int64)
        unions[dev] = (starts, starts + busy)
    for min_gap_ns in (0, 3, 9):
        full = idle_gaps_of(unions, min_gap_ns=min_gap_ns)
        top, count = largest_idle_gaps(unions, min_gap_ns=min_gap_ns, n=n)
        assert count == len(full)
        pd.testing.assert_frame_equal(top, full.head(n).reset_index(drop=True))
