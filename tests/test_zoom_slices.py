"""A zoom's slices written in the browser (assets/tracedash.js, xRange) and the state callback's corrections
(app/sync.py: ``written_slices``, ``slice_outputs``): exact outputs for each case."""

from dash import no_update

from dashboard.app.sync import WINDOW_VIEWS, slice_outputs, written_slices
from dashboard.app.views import VIEWS, slice_data
from dashboard.state import ViewState, apply_relayout

TRACE = "t.sqlite@0123abcd"
RANGE = {"xaxis.range": [1.5, 2.25], "at": 1}


def sent(state: ViewState, relayout: dict) -> dict:
    """The range as the browser sends it: with the slices it wrote (the window views' at the new window)."""
    new = apply_relayout(state, relayout)
    return {**relayout, "slices": [slice_data(v, new)["q"] for v in WINDOW_VIEWS]}


def test_the_window_views_are_the_timeline_and_the_gantt():
    assert [v.name for v in WINDOW_VIEWS] == ["timeline", "gantt"]


def test_a_zoom_the_browser_wrote_leaves_those_slices_and_writes_the_rest_that_changed():
    old = ViewState(trace=TRACE, stats="window")
    relayout = sent(old, RANGE)
    written = written_slices(relayout, seen={})
    new = apply_relayout(old, relayout)
    assert (new.t0_ns, new.t1_ns) == (1_500_000_000, 2_250_000_000)
    assert written == {v.name: slice_data(v, new)["q"] for v in WINDOW_VIEWS}
    out = slice_outputs(old, new, written)
    assert out["timeline"] is no_update and out["gantt"] is no_update
    # stats for the window: the tables and cards read the window too, through the state callback
    assert out["kernels"] == slice_data(next(v for v in VIEWS if v.name == "kernels"), new)
    assert out["kernels"]["q"] == "stats=window&t0_ns=1500000000&t1_ns=2250000000&trace=t.sqlite%400123abcd&v=1"
    assert out["alerts"] is no_update  # reads no window


def test_a_slice_the_browser_got_wrong_is_written_again():
    old = ViewState(trace=TRACE)
    gantt = slice_data(WINDOW_VIEWS[1], apply_relayout(old, RANGE))["q"]
    relayout = {**RANGE, "slices": ["t0_ns=1&t1_ns=2&trace=x&v=1", gantt]}
    new = apply_relayout(old, relayout)
    out = slice_outputs(old, new, written_slices(relayout, seen={}))
    assert out["timeline"] == slice_data(WINDOW_VIEWS[0], new) and out["gantt"] is no_update
    # even where the state does not change (the same window again)
    out = slice_outputs(new, new, written_slices(relayout, seen={}))
    assert out["timeline"] == slice_data(WINDOW_VIEWS[0], new)
    assert [k for k, v in out.items() if v is not no_update] == ["timeline"]


def test_a_range_already_applied_or_without_slices_writes_as_any_other_change():
    old = ViewState(trace=TRACE)
    relayout = sent(old, RANGE)
    assert written_slices(relayout, seen={"relayout": relayout}) == {}  # another input fired: not the zoom's
    assert written_slices(RANGE, seen={}) == {}  # a range the browser wrote no slices for
    assert written_slices({**RANGE, "slices": ["q"]}, seen={}) == {}  # not one per window view
    assert written_slices({**RANGE, "slices": [1, 2]}, seen={}) == {}
    assert written_slices(None, seen={}) == {}
    new = apply_relayout(old, RANGE)
    out = slice_outputs(old, new, {})
    assert out["timeline"] == slice_data(WINDOW_VIEWS[0], new) and out["gantt"] == slice_data(WINDOW_VIEWS[1], new)
