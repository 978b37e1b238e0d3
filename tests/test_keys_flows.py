"""Keyboard navigation (F / Escape transitions, the documented amounts) and flows (issue 28, parts 2 and 4):
the hovered kernel's flow data and the outline of a marked step's kernels, exact values on small fixtures."""

import math

import pytest

from dashboard.app import ids
from dashboard.app.keys_help import KEYS, MIN_WIDTH_NS, PAN_SHARE, ZOOM_FACTOR, keys_markdown, keys_overlay
from dashboard.app.sync import next_state
from dashboard.data.trace import load_trace
from dashboard.figures.timeline_gpu import MARKED_STEP_KERNELS
from dashboard.render import timeline_figure
from dashboard.render.timeline import timeline_view
from dashboard.state import ViewState, apply_clear_mark, apply_fit_mark, apply_row_click, mark_window, to_query

from factories import GLOBAL_TID_1, write_nsys_sqlite

API_LANE = "CUDA API · python3"


# --- F / Escape: pure transitions -----------------------------------------------------------------------------
def test_fit_mark_restores_the_row_click_window_and_escape_clears_the_mark():
    s = ViewState(trace="a.sqlite@0123abcd")
    clicked = apply_row_click(s, {"kind": "gap", "start_ns": 5_000, "end_ns": 9_000})
    assert clicked.window() == (1_000, 13_000) == mark_window(5_000, 9_000)
    # near the trace's start the context stops at 0 (QA: a step at 2.4 ms opened a window from -2.4 ms)
    assert mark_window(2_400_000, 4_800_000) == (0, 7_200_000) and mark_window(-50, 50) == (-1_050, 1_050)
    zoomed = ViewState(trace=s.trace, t0_ns=0, t1_ns=50_000, mark=("gap", 5_000, 9_000))
    assert apply_fit_mark(zoomed) == clicked
    short = ViewState(t0_ns=0, t1_ns=10**9, mark=("kernel", 2_000, 2_010))  # 10 ns: at least 1 µs of context
    assert apply_fit_mark(short).window() == (1_000, 3_010)
    assert apply_fit_mark(ViewState(t0_ns=7, t1_ns=9)) == ViewState(t0_ns=7, t1_ns=9)  # nothing marked: no change
    cleared = apply_clear_mark(zoomed)
    assert cleared.mark is None and cleared.window() == (0, 50_000)
    assert "mark=" in to_query(zoomed) and "mark=" not in to_query(cleared)


def test_sync_applies_each_key_press_once():
    s = ViewState(trace="a.sqlite@0123abcd", t0_ns=0, t1_ns=50_000, mark=("dispatch", 5_000, 9_000))
    values = {"controls": {}, "relayout": None, "row": None, "grids": None, "key": {"key": "fit", "n": 1}}
    fit, _, seen = next_state(s, [(ids.KEY_EVENT, "data")], values)
    assert fit.window() == (1_000, 13_000) and seen["key"] == {"key": "fit", "n": 1}
    zoomed = ViewState(trace=s.trace, t0_ns=2_000, t1_ns=3_000, mark=s.mark)
    assert next_state(zoomed, [(ids.X_RANGE, "data")], values, seen)[0] == zoomed  # the same press: not again
    values["key"] = {"key": "clear", "n": 2}
    cleared, _, seen = next_state(zoomed, [(ids.KEY_EVENT, "data")], values, seen)
    assert cleared.mark is None and cleared.window() == (2_000, 3_000)
    values["key"] = {"key": "bogus", "n": 3}
    assert next_state(zoomed, [(ids.KEY_EVENT, "data")], values, seen)[0] == zoomed


def test_the_documented_amounts_are_the_ones_the_page_uses():
    assert (ZOOM_FACTOR, PAN_SHARE, MIN_WIDTH_NS) == (2, 0.25, 100)
    overlay = keys_overlay().to_plotly_json()["props"]
    assert (overlay["data-zoom"], overlay["data-pan"], overlay["data-min-ns"]) == ("2", "0.25", "100")
    assert overlay["hidden"] is True
    assert [k for k, _ in KEYS] == ["W", "S", "A / D", "F", "Esc", "?"]
    table = keys_markdown().splitlines()
    assert table[2] == "| `W` | zoom in: the window's width ÷ 2, around the pointer's time (or the centre) |"
    assert table[4] == "| `A / D` | pan left / right by 25% of the window's width (stops at the trace's ends) |"


# --- flows: the hovered kernel's launch call ------------------------------------------------------------------
@pytest.fixture
def launch_trace(tmp_path):
    """gemm (correlation 5, call at 500 ns), rms_norm (6, call at 3,500 ns), and a kernel without a call (9)."""
    path = write_nsys_sqlite(
        tmp_path / "flows.sqlite",
        kernels=[
            {"start": 1_000, "end": 3_000, "correlationId": 5, "shortName": "gemm_kernel"},
            {"start": 4_000, "end": 4_500, "correlationId": 6, "shortName": "rms_norm_kernel"},
            {"start": 5_000, "end": 5_200, "correlationId": 9, "shortName": "gemm_kernel"},
        ],
        runtime=[
            {"start": 500, "end": 800, "name": "cudaLaunchKernel_v7000", "correlationId": 5},
            {"start": 3_500, "end": 3_600, "name": "cudaLaunchKernel_v7000", "correlationId": 6},
        ],
        nvtx=[{"start": 400, "end": 5_500, "eventType": 59, "text": "step"}],
        thread_names={GLOBAL_TID_1: "python3"},
    )
    return load_trace(path)


def test_each_kernel_carries_its_launch_calls_start_and_api_lane(launch_trace):
    fig = timeline_figure(launch_trace, ViewState(), (0, 6_000))
    cats = list(fig.layout.yaxis.categoryarray)
    assert cats == ["GPU 0 · stream 7", "GPU 0", API_LANE, "python3 · L0"]  # y position = index, bottom lane 0
    kern = {tr.name: tr for tr in fig.data if tr.name.startswith("kernels: ")}
    gemm, norm = kern["kernels: GEMM"], kern["kernels: normalisation"]
    assert list(gemm.base) == [1e-6, 5e-6] and list(norm.base) == [4e-6]
    assert gemm.customdata[0].tolist() == [500 / 1e9, 2.0] and norm.customdata.tolist() == [[3_500 / 1e9, 2.0]]
    assert all(math.isnan(v) for v in gemm.customdata[1])  # correlation 9: no launch call, no flow
    assert cats.index(API_LANE) == 2


def test_flow_data_costs_16_bytes_a_kernel_and_is_absent_without_launch_calls(launch_trace):
    from dashboard.figures.common import wire_figure
    from dashboard.render.timeline import timeline_spec

    spec = wire_figure(timeline_spec(launch_trace, ViewState(), (0, 6_000)))
    gemm = next(tr for tr in spec["data"] if tr["name"] == "kernels: GEMM")
    assert gemm["customdata"]["dtype"] == "f8" and gemm["customdata"]["shape"] == "2, 2"
    hidden = timeline_figure(launch_trace, ViewState(lanes=("nvtx", "gpu")), (0, 6_000))
    assert not [tr for tr in hidden.data if tr.customdata is not None]  # no kernel bars drawn: no flow data


# --- flows: the kernels a marked step's launches issued ------------------------------------------------------
def dispatch_fixture(tmp_path):
    """Two seed dispatches (test_attribution's fixture): D0 [0, 1000) launches k0 [100, 400) and k1 [1100, 1300)
    (after D1's mark, still D0's work), D1 [1000, 1960) launches k2 [1300, 1900); k3 [1950, 1960) has no call."""
    write_nsys_sqlite(
        tmp_path / "a.sqlite",
        kernels=[
            {"start": 100, "end": 400, "correlationId": 1, "shortName": "nvjet_gemm"},
            {"start": 1100, "end": 1300, "correlationId": 2, "shortName": "flash_fwd_kernel"},
            {"start": 1300, "end": 1900, "correlationId": 3, "shortName": "nvjet_gemm"},
            {"start": 1950, "end": 1960, "correlationId": 99, "shortName": "elementwise_kernel"},
        ],
        runtime=[
            {"start": 10, "end": 15, "name": "cudaLaunchKernel_v7000", "correlationId": 1},
            {"start": 20, "end": 25, "name": "cudaLaunchKernel_v7000", "correlationId": 2},
            {"start": 1010, "end": 1015, "name": "cudaLaunchKernel_v7000", "correlationId": 3},
        ],
        nvtx=[
            {"start": 0, "end": None, "eventType": 34, "text": "CG_DISPATCH:actual=1:mode=NONE:padded=1"},
            {"start": 1000, "end": None, "eventType": 34, "text": "CG_DISPATCH:actual=100:mode=NONE:padded=128"},
        ],
    )


def test_a_marked_step_outlines_exactly_its_attributed_kernels(tmp_path):
    dispatch_fixture(tmp_path)  # D0 [0, 1000) launches k0 [100,400) and k1 [1100,1300); D1 [1000, 1960) k2
    trace = load_trace(tmp_path / "a.sqlite")
    fig, _ = timeline_view(trace, ViewState(t0_ns=0, t1_ns=2_000, mark=("dispatch", 0, 1_000)))
    outline = next(tr for tr in fig.data if tr.name == MARKED_STEP_KERNELS)
    assert list(outline.base) == [100 / 1e9, 1_100 / 1e9] and list(outline.x) == [300 / 1e9, 200 / 1e9]
    assert list(outline.y) == ["GPU 0 · stream 7"] * 2 and outline.hoverinfo == "skip"
    assert outline.marker.line.width == 2 and outline.marker.color == "rgba(0,0,0,0)"
    status = next(a.text for a in fig.layout.annotations if a.name == "status")
    assert "the marked step launched 2 kernels (by correlation): 2 in view, outlined" in status
    # the second step, its one kernel [1300, 1900) cut to the window [1500, 2000)
    fig, _ = timeline_view(trace, ViewState(t0_ns=1_500, t1_ns=2_000, mark=("dispatch", 1_000, 1_960)))
    outline = next(tr for tr in fig.data if tr.name == MARKED_STEP_KERNELS)
    assert list(outline.base) == [1_500 / 1e9] and list(outline.x) == pytest.approx([400 / 1e9], abs=1e-18)
    status = next(a.text for a in fig.layout.annotations if a.name == "status")
    assert "the marked step launched 1 kernel (by correlation): 1 in view, outlined" in status
    # not a step (a gap or a kernel mark), or no step with that interval: nothing outlined, no note
    for mark in (("gap", 400, 1_100), ("dispatch", 0, 999)):
        fig, _ = timeline_view(trace, ViewState(t0_ns=0, t1_ns=2_000, mark=mark))
        assert not [tr for tr in fig.data if tr.name == MARKED_STEP_KERNELS]
        assert "marked step" not in " ".join(a.text for a in fig.layout.annotations)


def test_the_timeline_tells_the_keys_the_whole_traces_window(tmp_path):
    dispatch_fixture(tmp_path)
    trace = load_trace(tmp_path / "a.sqlite")
    fig, _ = timeline_view(trace, ViewState(t0_ns=0, t1_ns=2_000))
    # activity 0..1960 ns padded by 1 % (19 ns) on each side: the window of the whole-trace view
    assert fig.layout.meta["x_extent_s"] == [-19 / 1e9, 1_979 / 1e9]
    assert list(timeline_view(trace, ViewState())[0].layout.xaxis.range) == [-19 / 1e9, 1_979 / 1e9]


def test_reference_lists_the_keys_of_keys_help():
    from pathlib import Path

    reference = (Path(__file__).resolve().parents[1] / "docs" / "reference.md").read_text(encoding="utf-8")
    listed = reference.split("<!-- keys:start -->\n", 1)[1].split("\n<!-- keys:end -->", 1)[0]
    assert listed.strip() == keys_markdown().strip()
