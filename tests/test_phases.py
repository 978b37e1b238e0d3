"""Dispatch parsing, default prefill/decode split and per-phase statistics."""

import math

import numpy as np
import pandas as pd
import pytest

from dashboard.analysis import phases as ph
from dashboard.data.trace import load_trace
from dashboard.model import DISPATCH_MARKS, conform
from dashboard.render import phase_view
from dashboard.state import ViewState

from paths import SEED, nsys_trace


def marks(rows):
    return conform(pd.DataFrame(rows, columns=["start_ns", "name"]), DISPATCH_MARKS)


def test_parse_dispatch_name():
    assert ph.parse_dispatch_name("CG_DISPATCH:actual=1600:mode=PIECEWISE:padded=1664") == {
        "actual": "1600",
        "mode": "PIECEWISE",
        "padded": "1664",
    }
    assert ph.parse_dispatch_name("CG_DISPATCH") == {}
    assert ph.parse_dispatch_name("CG_DISPATCH:noequals:x=") == {"x": ""}


def test_seed_splits_into_prefill_and_decode():
    pv = phase_view(load_trace(SEED), ViewState())
    assert pv.auto_threshold == pytest.approx(math.sqrt(3 * 742))
    d = pv.dispatches.assign(phase=pv.phases)
    assert set(d.loc[d["phase"] == "prefill", "tokens"]) == {742, 1600}
    assert set(d.loc[d["phase"] == "decode", "tokens"]) == {1, 3}
    stats = pv.stats.set_index("phase")
    assert stats.loc["prefill", "dispatches"] == 42 and stats.loc["decode", "dispatches"] == 96
    assert stats.loc["prefill", "tokens"] == 40 * 1600 + 2 * 742
    assert stats.loc["decode", "tokens"] == 46 * 1 + 50 * 3
    # the last dispatch of a summary has no GPU end: it gets the median of its own kind, flagged
    assert d["end_estimated"].tolist().count(True) == 1 and bool(d["end_estimated"].iloc[-1])


def test_nvtx_sample_last_dispatch_is_estimated_without_kernels():
    pv = phase_view(load_trace(nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite")), ViewState())
    d = pv.dispatches
    assert len(d) == 46 and d["end_estimated"].tolist() == [False] * 45 + [True]
    assert (d["end_ns"].iloc[:-1].to_numpy() == d["start_ns"].iloc[1:].to_numpy()).all()
    # no GPU end: the last decode step (1 token) lasts the median of the earlier 1-token steps,
    # not until the never-closed range ends 106 ms later
    ones = d[(d["tokens"] == 1)].iloc[:-1]["duration_ns"]
    assert d["duration_ns"].iloc[-1] == int(ones.median())
    stats = pv.stats.set_index("phase")
    assert stats.loc["prefill", "dispatches"] == 3 and stats.loc["decode", "dispatches"] == 43


def test_build_dispatches_exact():
    d = ph.build_dispatches(
        marks([(300, "CG_DISPATCH:actual=1"), (100, "CG_DISPATCH:actual=8:mode=FULL:padded=8")]), end_ns=450
    )
    assert d[["start_ns", "end_ns", "duration_ns"]].values.tolist() == [[100, 300, 200], [300, 450, 150]]
    assert d["tokens"].tolist() == [8, 1] and d["mode"].tolist() == ["FULL", ""]
    assert d["padded"].isna().tolist() == [False, True]


def test_last_dispatch_estimated_from_same_name():
    d = ph.build_dispatches(
        marks([(0, "A:actual=1"), (10, "B:actual=9"), (40, "A:actual=1"), (45, "B:actual=9")]), end_ns=None
    )
    assert d["duration_ns"].tolist() == [10, 30, 5, 30] and d["end_estimated"].tolist() == [False, False, False, True]


@pytest.mark.parametrize(
    "tokens, expected",
    [
        ([1, 3, 742, 1600], math.sqrt(3 * 742)),
        ([1, 1, 1], None),
        ([], None),
        ([2, 8], 4.0),
        ([1, 2, 4, 1000, 2000], math.sqrt(4 * 1000)),
    ],
)
def test_default_threshold(tokens, expected):
    got = ph.default_threshold(pd.array(tokens, dtype="Int64"))
    assert got == (pytest.approx(expected) if expected else None)


def test_assign_phases_with_override_and_unknown():
    d = ph.build_dispatches(
        marks([(0, "X:actual=1"), (1, "X:actual=64"), (2, "X:mode=NONE"), (3, "X:actual=700")]), end_ns=10
    )
    assert ph.assign_phases(d, 64).tolist() == ["decode", "prefill", "unknown", "prefill"]
    assert ph.assign_phases(d, 100).tolist() == ["decode", "decode", "unknown", "prefill"]
    assert ph.assign_phases(d, None).tolist() == ["unsplit", "unsplit", "unknown", "unsplit"]


def test_phase_stats_exact():
    d = ph.build_dispatches(
        marks([(0, "X:actual=1000"), (100, "X:actual=1"), (110, "X:actual=1"), (130, "X:actual=1")]), end_ns=170
    )
    s = ph.phase_stats(d, ph.assign_phases(d, 10)).set_index("phase")
    assert s.loc["prefill"].tolist() == [1, 1000, 100, 100.0, 100.0, 100.0, 100.0, 1000 / 100e-9]
    assert s.loc["decode", "total_ns"] == 70 and s.loc["decode", "mean_ns"] == pytest.approx(70 / 3)
    assert s.loc["decode", "p50_ns"] == 20.0 and s.loc["decode", "p90_ns"] == pytest.approx(36.0)
    assert list(s.index) == ["prefill", "decode"]


def test_mixed_batches_are_their_own_phase():
    d = ph.build_dispatches(
        marks(
            [
                (0, "CG_DISPATCH:actual=1"),
                (10, "CG_DISPATCH:actual=900"),
                (20, "CG_DISPATCH:actual=520:prefill=512:decode=8"),
                (30, "CG_DISPATCH:actual=64:mixed=true"),
            ]
        ),
        end_ns=40,
    )
    assert d["mixed"].tolist() == [False, False, True, True]
    assert ph.assign_phases(d, 30).tolist() == ["decode", "prefill", "mixed", "mixed"]
    stats = ph.phase_stats(d, ph.assign_phases(d, 30))
    assert stats["phase"].tolist() == ["prefill", "decode", "mixed"] and stats["dispatches"].tolist() == [1, 1, 2]


def test_phase_runs_merge_consecutive_same_phase_dispatches():
    d = ph.build_dispatches(
        marks(
            [
                (0, "X:actual=900:mode=NONE:padded=1024"),
                (10, "X:actual=900:mode=NONE:padded=1024"),
                (20, "X:actual=1:mode=FULL:padded=8"),
                (30, "X:actual=3:mode=NONE:padded=8"),
                (40, "X:actual=900"),
            ]
        ),
        end_ns=50,
    )
    runs, rp = ph.phase_runs(d, ph.assign_phases(d, 30))
    assert rp.tolist() == ["prefill", "decode", "prefill"]
    assert runs[["start_ns", "end_ns", "duration_ns", "dispatches"]].values.tolist() == [
        [0, 20, 20, 2],
        [20, 40, 20, 2],
        [40, 50, 10, 1],
    ]
    assert runs["tokens"].tolist() == [1800, 4, 900]
    # padded tokens summed as the tokens are (a run read "tokens 20 · padded 1": its first dispatch's), and a run
    # in two graph modes says so
    assert runs["padded"].tolist() == [2048, 16, pd.NA]
    assert runs["mode"].tolist() == ["NONE", "varied", ""]


def _alternating_dispatches(path, n: int):
    """A summary JSON of ``n`` dispatches 1 µs apart, in runs of 7 of one phase (decode first, then prefill)."""
    import json as _json

    timeline = [{"start_ns": i * 1000, "name": f"CG_DISPATCH:actual={1600 if (i // 7) % 2 else 1}"} for i in range(n)]
    summary = {"gpu_activity_span_s": 1.0, "gpu_busy_union_s": 0.5, "kernel_count": 1, "dispatch_timeline": timeline}
    path.write_text(_json.dumps(summary))
    return load_trace(path)


def test_gantt_of_many_dispatches_stays_in_budget(tmp_path):
    from dashboard.render import GANTT_BUDGET, build_view

    view = build_view(_alternating_dispatches(tmp_path / "many.json", 200_000), ViewState())
    bars = sum(len(t.x) for t in view.gantt.data)
    assert bars <= GANTT_BUDGET
    assert "200,000 dispatches drawn as" in view.gantt.layout.title.text
    assert len(view.gantt.to_json()) < 1_500_000


def test_a_gantt_of_more_dispatches_than_pixels_draws_same_phase_runs_until_zoomed(tmp_path):
    """2,000 dispatches are more bars than a full-width Gantt has pixels: the whole trace draws one bar per run of
    same-phase dispatches (each bar an SVG element Plotly draws again on every zoom); a window holding fewer
    dispatches than the budget draws each of them."""
    from dashboard.render import GANTT_BUDGET, build_view

    assert GANTT_BUDGET == 1200
    trace = _alternating_dispatches(tmp_path / "runs.json", 2000)
    whole = build_view(trace, ViewState()).gantt
    assert sum(len(t.x) for t in whole.data) == 286  # ceil(2000 / 7) runs of 7 dispatches
    assert "2,000 dispatches drawn as 286 same-phase runs" in whole.layout.title.text
    assert [t.name for t in whole.data] == ["prefill (999)", "decode (1,001)"]
    # a click on a bar reads [index, start_ns, end_ns, dispatches] (assets/tracedash.js, rowClick): a run's bar
    # spans its 7 dispatches of 1 µs each; zoomed in, each dispatch is its own bar (decode: #294-300, #308-314…)
    decode = next(t for t in whole.data if t.name.startswith("decode"))
    assert [list(c) for c in decode.customdata[:2]] == [[0, 0, 7_000, 7], [14, 14_000, 21_000, 7]]
    zoomed = build_view(trace, ViewState(t0_ns=500_000, t1_ns=700_000)).gantt
    assert sum(int(np.isfinite(t.x).sum()) for t in zoomed.data) == 600  # the window and a width either side
    assert "same-phase runs" not in zoomed.layout.title.text
    one = next(t for t in zoomed.data if t.name.startswith("decode"))
    assert [list(c) for c in one.customdata[:2]] == [[300, 300_000, 301_000, 1], [308, 308_000, 309_000, 1]]


def test_a_phase_without_token_counts_has_na_tokens_not_zero():
    d = pd.DataFrame(
        {
            "start_ns": [0, 100, 300],
            "end_ns": [100, 300, 600],
            "duration_ns": [100, 200, 300],
            "tokens": pd.array([None, None, 4], dtype="Int64"),
        }
    )
    out = ph.phase_stats(d, pd.Series(["unknown", "unknown", "decode"])).set_index("phase")
    assert out.loc["unknown", "tokens"] is pd.NA and math.isnan(out.loc["unknown", "tokens_per_s"])
    assert out.loc["unknown", "dispatches"] == 2 and out.loc["unknown", "total_ns"] == 300
    assert out.loc["decode", "tokens"] == 4 and out.loc["decode", "tokens_per_s"] == 4 / 300e-9
