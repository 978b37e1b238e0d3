"""The derived-data layer: one kernel -> launch join, one memo per trace (``data.analysis.TraceAnalysis``)
shared by the views and the findings, windows with their own analysis, and results that die with their trace."""

import gc

import numpy as np
import pandas as pd
import pytest

from dashboard.analysis.attribution import UNATTRIBUTED, dispatch_busy_ns
from dashboard.analysis.launches import (
    _match_by_merge,
    kernel_launches,
    launch_call_ns,
    launch_index,
    launch_key,
    match_launches,
)
from dashboard.analysis.window import clip_dispatches
from dashboard.data import analysis as data_analysis
from dashboard.data.analysis import analysis_of
from dashboard.data.trace import load_trace
from dashboard.render import build_view
from dashboard.render.findings import findings_for
from dashboard.state import ViewState

from factories import write_nsys_sqlite
from paths import SAMPLES


def api_frame(pids, corrs, starts):
    return pd.DataFrame(
        {
            "pid": pids,
            "correlation_id": corrs,
            "start_ns": starts,
            "end_ns": [s + 3 for s in starts],
            "name": pd.Series([f"call{s}" for s in starts]),
        }
    )


def test_launch_key_packs_pid_and_correlation_id_in_order_and_refuses_what_does_not_fit():
    assert launch_key([0, 0, 1], [5, -1, 0]).tolist() == [(1 << 33) | 6, 1 << 33, 2 << 33 | 1]
    assert launch_key([1 << 29], [1]) is None
    assert launch_key([1], [(1 << 33) - 1]) is None
    assert launch_key([-2], [1]) is None


@pytest.mark.parametrize("part_rows", [1 << 21, 1, 2])  # kernels matched in one part, or 1 and 2 at a time
def test_the_first_call_of_a_key_is_the_launch_and_an_unknown_correlation_id_never_matches(monkeypatch, part_rows):
    # calls out of key order, the key (pid 7, corr 3) twice: the first one in file order (start 30) wins
    import dashboard.analysis.launches as launches_module

    monkeypatch.setattr(launches_module, "PART_ROWS", part_rows)
    api = api_frame([7, 7, 8, 7, 7], [3, 1, 3, 3, -1], [30, 10, 50, 60, 70])
    kernels = pd.DataFrame({"pid": [7, 8, 7, 7, 9], "correlation_id": [3, 3, 1, -1, 3], "start_ns": [1, 2, 3, 4, 5]})
    idx = launch_index(api)
    assert idx.keys.tolist() == sorted(set(idx.keys.tolist())) and idx.rows.tolist() == [1, 0, 2]
    kpos, apos = match_launches(kernels, api, idx)
    assert (kpos.tolist(), apos.tolist()) == ([0, 1, 2], [0, 2, 1])
    assert [a.tolist() for a in _match_by_merge(kernels, api)] == [[0, 1, 2], [0, 2, 1]]
    j = kernel_launches(kernels, api)
    assert j[["kernel_index", "api_index", "api_start_ns"]].values.tolist() == [[0, 0, 30], [1, 2, 50], [2, 1, 10]]
    assert api["name"].iloc[j["api_index"]].tolist() == ["call30", "call50", "call10"]
    assert list(j.columns) == ["kernel_index", "api_index", "pid", "api_start_ns"]  # kept per trace: lean
    timed = api.assign(end_ns=api["start_ns"] + [7, 14, 21, 28, 35])  # each call's own duration, by api_index
    assert launch_call_ns(j, timed).tolist() == [7, 21, 14]
    assert launch_call_ns(j.iloc[[2]], timed).tolist() == [14]


def test_ids_too_large_to_pack_join_by_merge_with_the_same_answer():
    api = api_frame([1 << 40, 1 << 40, 5], [2, 2, 2], [10, 20, 30])
    kernels = pd.DataFrame({"pid": [5, 1 << 40], "correlation_id": [2, 2]})
    assert launch_index(api).keys is None
    kpos, apos = match_launches(kernels, api)
    assert (kpos.tolist(), apos.tolist()) == ([0, 1], [2, 0])


@pytest.mark.parametrize("part_rows", [1 << 21, 2, 1])  # one part; dispatch id ranges of about 2 and 1 kernels
def test_dispatch_busy_is_the_union_of_each_dispatchs_own_kernels(monkeypatch, part_rows):
    import dashboard.analysis.attribution as attribution_module

    monkeypatch.setattr(attribution_module.dispatch_id_ranges, "__defaults__", (part_rows,))
    starts = np.array([0, 50, 200, 210, -5, 400, 500], dtype=np.int64)
    ends = np.array([100, 120, 300, 250, 10, 390, 510], dtype=np.int64)  # -5: invalid start; 400 > 390: invalid
    attribution = np.array([0, 0, 2, 2, 0, 2, UNATTRIBUTED], dtype=np.int64)
    assert dispatch_busy_ns(starts, ends, attribution, 3).tolist() == [120, 0, 100]
    ranges = list(attribution_module.dispatch_id_ranges(attribution, 3))
    assert [(lo, hi, rows.tolist()) for lo, hi, rows in ranges] == (
        [(0, 3, [0, 1, 2, 3, 4, 5])] if part_rows > len(attribution) else [(0, 1, [0, 1, 4]), (2, 3, [2, 3, 5])]
    )
    none = np.full(6, UNATTRIBUTED, dtype=np.int64)
    assert dispatch_busy_ns(starts, ends, none, 2).tolist() == [0, 0]


def test_views_and_findings_share_one_join_one_memo_per_trace(monkeypatch):
    import dashboard.analysis.derived as derived

    joins = []
    real = derived.kernel_launches
    monkeypatch.setattr(derived, "kernel_launches", lambda k, a, i=None: joins.append(len(k)) or real(k, a, i))
    trace = load_trace(SAMPLES / "generated_seed_shaped_108k.sqlite")
    ta = analysis_of(trace)
    assert analysis_of(trace) is ta and ta.trace is trace
    build_view(trace, ViewState())
    first = findings_for(trace)
    assert findings_for(trace) is first  # the default findings are computed once per trace
    assert joins == [108_000]  # views, attribution, idle gaps and findings: one join
    assert int((ta.attribution("CG_DISPATCH") != UNATTRIBUTED).sum()) == 108_000
    w = (int(trace.summary.gpu_start_ns), int(trace.summary.gpu_start_ns) + 50_000_000)
    clipped = ta.windowed(w)
    assert ta.windowed(w) is clipped and analysis_of(clipped) is ta.window(w) and ta.window(w) is not ta
    assert ta.window(None) is ta


def test_a_windows_attribution_to_the_cut_steps_is_kept_apart_from_its_own_marks_steps():
    # A window from the middle of step 10 to the middle of step 13 of the 108k sample: cut from the trace's
    # steps, its kernels go to steps 11-13; its own marks make steps numbered from 0. Either may be asked first.
    trace = load_trace(SAMPLES / "generated_seed_shaped_108k.sqlite")
    ta = analysis_of(trace)
    d = ta.dispatches("CG_DISPATCH")
    s, e = d["start_ns"].to_numpy(), d["end_ns"].to_numpy()
    w = (int(s[10] + (e[10] - s[10]) // 2), int(e[12] + (e[13] - e[12]) // 2))
    assert w == (1_363_128_767, 1_412_136_569)
    counts = [279, 600, 600, 314]
    for win, own_first in ((w, True), ((w[0], w[1] + 1), False)):  # a fresh window analysis for each order
        wa = ta.window(win)
        if own_first:
            own = wa.attribution("CG_DISPATCH")
            cut = wa.attribution("CG_DISPATCH", clip_dispatches(d, *win))
        else:
            cut = wa.attribution("CG_DISPATCH", clip_dispatches(d, *win))
            own = wa.attribution("CG_DISPATCH")
        assert [np.unique(own, return_counts=True)[i].tolist() for i in (0, 1)] == [[-1, 0, 1, 2], counts]
        assert [np.unique(cut, return_counts=True)[i].tolist() for i in (0, 1)] == [
            [-1, 11, 12, 13],
            [279, 600, 600, 314],
        ]


def test_the_whole_traces_steps_asked_for_by_value_share_the_one_attribution():
    # The phase views pass the trace's own steps as a frame of their own: one int32 array per kernel, not two.
    trace = load_trace(SAMPLES / "generated_seed_shaped_108k.sqlite")
    ta = analysis_of(trace)
    own = ta.attribution("CG_DISPATCH")
    assert ta.attribution("CG_DISPATCH", ta.dispatches("CG_DISPATCH").copy()) is own
    assert own.dtype == np.int32 and len(own) == 108_000 and int((own == UNATTRIBUTED).sum()) == 0
    assert sum(1 for k in ta.memo._values if k[0] == "attribution") == 1


def test_an_analysis_dies_with_its_trace(tmp_path):
    path = write_nsys_sqlite(
        tmp_path / "t.sqlite",
        kernels=[{"start": 10, "end": 20, "correlationId": 1}],
        runtime=[{"start": 1, "end": 5, "name": "cudaLaunchKernel_v7000", "correlationId": 1}],
    )
    trace = load_trace(path)
    ta = analysis_of(trace)
    assert ta.launches()["api_index"].tolist() == [0]
    key = id(trace)
    del trace
    gc.collect()
    assert ta.trace is None

    class Other:
        pass

    other = Other()
    analysis_of(other)  # a new entry prunes the dead ones
    assert all(ref() is not None for ref, _ in data_analysis._ANALYSES.values())
    assert key == id(other) or key not in data_analysis._ANALYSES
