"""Statistics for a window: frames clipped exactly at [t0, t1), then the same functions as for the
whole trace (values worked out by hand in tests/window_fixture.py)."""

import numpy as np
import pandas as pd
import pytest

from dashboard.analysis.tables import api_table
from dashboard.analysis.window import clip_bundle, clip_dispatches, clip_frame
from dashboard.data.trace import load_trace
from dashboard.render import build_view, gpu_rows, kernel_rows, nvtx_rows, records, windowed
from dashboard.state import ViewState

from window_fixture import WINDOW, write_window_fixture


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return load_trace(write_window_fixture(tmp_path_factory.mktemp("w") / "window.sqlite"))


def test_clip_frame_cuts_at_the_edges_and_keeps_overlapping_rows():
    f = pd.DataFrame(
        {
            "start_ns": [0, 60, 100, 500, 520, 300, 300],
            "end_ns": [100, 80, 200, 600, 530, 300, 200],
            "x": list("abcdefg"),
        }
    )
    out = clip_frame(f, 80, 520)
    assert out["x"].tolist() == ["a", "c", "d", "f"]  # b ends at t0, e starts at t1, g is invalid (end < start)
    assert out["start_ns"].tolist() == [80, 100, 500, 300] and out["end_ns"].tolist() == [100, 200, 520, 300]
    assert out["start_ns"].dtype == "int64"
    with pytest.raises(ValueError):
        clip_frame(f, 5, 5)


def test_clipped_bundle_summary_by_hand(trace):
    b = clip_bundle(trace.bundle, *WINDOW)
    assert sorted(b.kernels["short_name"].astype(str)) == ["a", "b", "c", "d"]
    w = windowed(trace, WINDOW)
    s = w.summary
    assert (s.kernel_count, s.gpu_activity_span_ns, s.gpu_busy_union_ns, s.gpu_idle_within_span_ns) == (
        4,
        440,
        320,
        120,
    )
    assert (s.gpu_start_ns, s.gpu_end_ns) == (80, 520)
    api = api_table(s)
    assert api[["name", "count", "total_ns"]].values.tolist() == [["cudaLaunchKernel", 2, 40]]
    nvtx = {r["name"]: r["sum_ns"] for r in nvtx_rows(w, grouped=False)}
    assert nvtx == {"r1": 170, "r2": 260}
    kernels = {r["name"]: (r["count"], r["total_ns"]) for r in kernel_rows(w)}
    assert kernels == {"a": (1, 20), "b": (1, 250), "c": (1, 20), "d": (1, 60)}
    assert int(b.memops["end_ns"].sum() - b.memops["start_ns"].sum()) == 50
    assert windowed(trace, WINDOW) is w  # memoised: the same clip is never computed twice


def test_window_panels_use_the_same_definitions(trace):
    whole = build_view(trace, ViewState())
    view = build_view(trace, ViewState(t0_ns=WINDOW[0], t1_ns=WINDOW[1], stats="window"))
    cards = {c.label: c.value for c in view.cards}
    assert cards["Any GPU busy"] == "320 ns" and cards["Kernels"] == "4"  # two GPUs: the union is "any GPU"
    assert cards["Kernels"] == "4" and cards["GPU activity span"] == "440 ns"
    assert {c.label: c.value for c in whole.cards}["Kernels"] == "6"
    notes = {c.label: c.hint for c in view.cards}, {c.label: c.hint for c in whole.cards}
    assert notes == (
        {**notes[0], "Kernels": "kernel rows overlapping the visible window (clipped at its edges)"},
        {**notes[1], "Kernels": "kernel rows in the trace"},
    )
    rows, cols = gpu_rows(windowed(trace, WINDOW), ViewState())
    busy = next(r for r in rows if r["metric"] == "Busy (union)")
    assert (busy["gpu0"], busy["gpu1"], busy["all"]) == ("290 ns", "60 ns", "320 ns")
    assert [r["name"] for r in view.api_rows] == ["cudaLaunchKernel"]


def test_a_summary_has_no_intervals_to_clip():
    from paths import SEED

    t = load_trace(SEED)
    assert windowed(t, (0, 10)) is t


def test_clip_dispatches_recomputes_durations():
    d = pd.DataFrame(
        {
            "index": [0, 1, 2],
            "start_ns": [0, 100, 300],
            "end_ns": [100, 300, 400],
            "duration_ns": [100, 200, 100],
            "tokens": pd.array([1, 2, 3], dtype="Int64"),
        }
    )
    out = clip_dispatches(d, 50, 320)
    assert out["index"].tolist() == [0, 1, 2]
    assert out["duration_ns"].tolist() == [50, 200, 20] and out["tokens"].tolist() == [1, 2, 3]


def test_records_never_hold_nan():
    recs = records(pd.DataFrame({"a": [1.0, float("nan")], "b": pd.array([None, 2], dtype="Int64")}))
    assert recs == [{"a": 1.0, "b": None}, {"a": None, "b": 2}]


def _dispatch_trace(tmp_path):
    from dashboard.data.trace import load_trace

    from factories import write_nsys_sqlite

    # decode at 0, 100, 200, 400; prefill at 300, 500; the last step ends at the last kernel (900)
    marks = [(0, 1), (100, 1), (200, 1), (300, 1600), (400, 1), (500, 1600)]
    path = write_nsys_sqlite(
        tmp_path / "d.sqlite",
        kernels=[{"start": 10, "end": 900, "deviceId": 0, "shortName": "k", "demangledName": "k", "correlationId": 1}],
        nvtx=[{"start": s, "eventType": 34, "text": f"CG_DISPATCH:actual={n}"} for s, n in marks],
    )
    return load_trace(path)


def test_window_step_times_are_of_whole_steps(tmp_path):
    """Stats for a window: a step cut by its edges counts in dispatches, tokens and total time (its time
    inside the window) but is not a step time (a 300 ms prefill step cut to 19 ms read as a 19 ms p50)."""
    from dashboard.render import phase_figure_view, phase_view

    trace = _dispatch_trace(tmp_path)
    # [150, 350): decode [100,200) cut to 50 ns, decode [200,300) whole, prefill [300,400) cut to 50 ns
    pv = phase_view(trace, ViewState(threshold=100, t0_ns=150, t1_ns=350, stats="window"))
    decode = pv.stats.set_index("phase").loc["decode"]
    assert (decode["dispatches"], decode["tokens"], decode["total_ns"]) == (2, 2, 150)
    assert (decode["mean_ns"], decode["p50_ns"], decode["p99_ns"]) == (100.0, 100.0, 100.0)
    assert decode["tokens_per_s"] == 1 / 100e-9  # the whole step's token over its 100 ns
    prefill = pv.stats.set_index("phase").loc["prefill"]
    assert (prefill["dispatches"], prefill["tokens"], prefill["total_ns"]) == (1, 1600, 50)
    assert all(pd.isna(prefill[c]) for c in ("mean_ns", "p50_ns", "p90_ns", "p99_ns", "tokens_per_s"))
    fig, _ = phase_figure_view(trace, ViewState(threshold=100, t0_ns=150, t1_ns=350, stats="window"))
    boxes = [t for t in fig.data if t.type == "box"]
    assert [(t.name, len(t.y)) for t in boxes] == [("decode", 1)]  # the box plot holds whole steps only
    assert "3 dispatches (2 cut by its edges: not in the step times)" in str(fig.layout.annotations[-1].text).replace(
        "<br>", " "
    )
    # [120, 180) lies inside one step: the figure says why it has no step time, in the singular
    fig, _ = phase_figure_view(trace, ViewState(threshold=100, t0_ns=120, t1_ns=180, stats="window"))
    texts = [str(a.text).replace("<br>", " ") for a in fig.layout.annotations]
    assert texts[0] == (
        "No whole dispatch step in this window: its 1 dispatch is cut by its edges, so no step time can be measured."
    )
    assert "1 dispatch (1 cut by its edges: not in the step times)" in texts[-1]
    whole = phase_view(trace, ViewState(threshold=100)).stats.set_index("phase")  # no window: every step whole
    assert (whole.loc["decode", "p50_ns"], whole.loc["prefill", "p50_ns"]) == (100.0, 250.0)


def test_dispatch_rows_cut_by_the_window_measure_no_kernels(tmp_path):
    """A dispatch cut by the stats window's edge shows its step inside the window, flagged, and no kernel
    count or GPU busy: its launch before the window is not counted, and "0 kernels, 0.000 ms busy" read as
    the whole step's (QA: a prefill step cut by the window's left edge)."""
    from dashboard.data.trace import load_trace
    from dashboard.render import CUT_NOTE, dispatch_table_rows, phase_view

    from factories import write_nsys_sqlite

    # steps [0,100) [100,200) [200,300) [300,400); each launches one 50 ns kernel 10 ns after its mark
    marks = [0, 100, 200, 300]
    path = write_nsys_sqlite(
        tmp_path / "cut.sqlite",
        kernels=[{"start": m + 10, "end": m + 60, "correlationId": i + 1} for i, m in enumerate(marks)],
        runtime=[
            {"start": m + 2, "end": m + 5, "name": "cudaLaunchKernel_v7000", "correlationId": i + 1}
            for i, m in enumerate(marks)
        ],
        nvtx=[{"start": m, "eventType": 34, "text": f"CG_DISPATCH:actual={1600 if m == 100 else 1}"} for m in marks],
    )
    trace = load_trace(path)
    whole = {r["index"]: r for r in dispatch_table_rows(phase_view(trace, ViewState(threshold=100)))}
    assert [(r["kernels"], r["gpu_busy_ns"], r["launch_lead_ns"]) for r in whole.values()] == [(1, 50, 10)] * 4
    assert all(r.get("note") is None for r in whole.values())
    # [130, 350): the window cuts [100,200) (its launch at 102 lies before it) and [300,400)
    cut = ViewState(threshold=100, t0_ns=130, t1_ns=350, stats="window")
    rows = {r["index"]: r for r in dispatch_table_rows(phase_view(trace, cut))}
    assert sorted(rows) == [1, 2, 3]
    for i in (1, 3):
        assert (
            rows[i]["kernels"],
            rows[i]["gpu_busy_ns"],
            rows[i]["launch_lead_ns"],
            rows[i]["ns_per_token"],
            rows[i]["note"],
        ) == (None, None, None, None, CUT_NOTE)
    assert (rows[1]["duration_ns"], rows[3]["duration_ns"]) == (70, 50)  # the parts inside the window
    assert (rows[2]["kernels"], rows[2]["gpu_busy_ns"], rows[2]["launch_lead_ns"], rows[2]["note"]) == (1, 50, 10, None)


def test_gantt_legend_counts_the_dispatches_in_a_zoomed_view(tmp_path):
    """A zoomed Gantt's legend says how many dispatches of each phase the window shows, beside the whole
    trace's count (it kept the whole trace's count while showing 2 of 6 dispatches)."""
    from dashboard.render import gantt_view

    trace = _dispatch_trace(tmp_path)

    def names(w):
        return [t.name for t in gantt_view(trace, ViewState(threshold=100, t0_ns=w and w[0], t1_ns=w and w[1]))[0].data]  # noqa: E731

    assert names(None) == ["prefill (2)", "decode (4)"]
    # [150, 350): the steps [100,200), [200,300) and [300,400) overlap it; [0,100) and [400,500) do not
    assert names((150, 350)) == ["prefill (1 in view of 2)", "decode (2 in view of 4)"]
    assert names((600, 700)) == [
        "prefill (1 in view of 2)",
        "decode (0 in view of 4)",
    ]  # inside the last step [500, 900)


def test_the_gantt_legend_counts_the_whole_trace_when_only_the_longest_bars_are_drawn(tmp_path, monkeypatch):
    """Over its bar budget the Gantt draws the longest same-phase runs; its legend still counts every dispatch of
    the trace (it counted the drawn runs' dispatches: a zoom could read "3 in view of 2")."""
    import dashboard.render as render

    monkeypatch.setattr(render, "GANTT_BUDGET", 2)
    trace = _dispatch_trace(tmp_path)

    def names(w):
        return [
            t.name
            for t in render.gantt_view(trace, ViewState(threshold=100, t0_ns=w and w[0], t1_ns=w and w[1]))[0].data
        ]  # noqa: E731

    assert names(None) == ["prefill (2)", "decode (4)"]
    assert names((0, 900)) == ["prefill (2 in view of 2)", "decode (4 in view of 4)"]


def test_a_zoomed_gantt_draws_the_steps_near_its_window_and_keeps_every_row(tmp_path):
    """A zoom redraws the Gantt: it draws the steps overlapping the window widened by its width on each side
    (all 6 drew at every zoom: ~0.4 s of the browser per zoom at 2,745 steps), and a phase with none of them
    keeps its row and legend entry, so the figure keeps its height."""
    from dashboard.render import gantt_view, near_window

    trace = _dispatch_trace(tmp_path)

    def bars(w):
        fig = gantt_view(trace, ViewState(threshold=100, t0_ns=w and w[0], t1_ns=w and w[1]))[0]
        drawn = {t.name.split(" ")[0]: [b for b in t.base if not np.isnan(b)] for t in fig.data}
        # every row is on the figure's y axis: an empty bar holds each row no drawn step is on
        assert {y for t in fig.data for y in t.y} == set(fig.layout.yaxis.categoryarray)
        return drawn, list(fig.layout.yaxis.categoryarray), fig.layout.height

    whole, rows, height = bars(None)
    assert whole == {"prefill": [3e-7, 5e-7], "decode": [0.0, 1e-7, 2e-7, 4e-7]} and rows == ["decode", "prefill"]
    # [250, 300) widened to [200, 350): decode [200,300) and prefill [300,400) overlap it
    assert bars((250, 300)) == ({"prefill": [3e-7], "decode": [2e-7]}, rows, height)
    # [600, 700) widened to [500, 800): only prefill [500, 900); decode keeps its row and entry, with no bar
    assert bars((600, 700)) == ({"prefill": [5e-7], "decode": []}, rows, height)
    assert near_window([0, 100, 500], [100, 500, 900], (600, 700)).tolist() == [False, False, True]
