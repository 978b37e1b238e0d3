"""URL state codec: canonical, round-trips, never raises."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.state import DEFAULT, LANES, SORT_COLUMNS, TABS, ViewState, from_query, to_query


def test_defaults_give_the_shortest_link():
    assert to_query(DEFAULT) == "v=1"
    assert from_query("v=1") == DEFAULT and from_query("") == DEFAULT and from_query(None) == DEFAULT


def test_canonical_and_round_trip():
    s = ViewState(
        trace="run 1.sqlite@0a1b2c3d",
        tab="gaps",
        t0_ns=5,
        t1_ns=9,
        lanes=("gpu", "nvtx"),
        threshold=47.5,
        prefix="CG X",
        busy="kernels+memops",
        sort="count",
        group=True,
        gap_us=25,
    )
    q = to_query(s)
    assert q == (
        "busy=kernels%2Bmemops&gap_us=25&group=1&lanes=nvtx,gpu&prefix=CG+X&sort=count"
        "&t0_ns=5&t1_ns=9&tab=gaps&threshold=47.5&trace=run+1.sqlite%400a1b2c3d&v=1"
    )
    assert from_query("?" + q) == s
    assert to_query(from_query(q)) == q


@pytest.mark.parametrize(
    "query, key",
    [
        ("tab=bogus", "tab"),
        ("t0_ns=9&t1_ns=5", "t0_ns/t1_ns"),
        ("t0_ns=x", "t0_ns='x' in the link: the window needs t1_ns too"),
        ("t1_ns=5", "t1_ns='5' in the link: the window needs t0_ns too"),
        (  # integers in order: the reason is the limit (QA: "not a window in integer ns with t0 < t1")
            "t0_ns=9000000000000000000&t1_ns=9000000000000000001",
            "t0_ns/t1_ns='9000000000000000000,9000000000000000001' in the link: a window edge beyond ±2**62 ns",
        ),
        ("lanes=gpu,warp", "lanes"),
        ("threshold=-1", "threshold"),
        ("threshold=nan", "threshold"),
        ("threshold=1e999", "threshold"),
        ("busy=all", "busy"),
        ("sort=-evil", "sort"),
        ("group=maybe", "group"),
        ("trace=../../etc/passwd", "trace"),
        ("trace=%2Fetc%2Fpasswd@0123abcd", "trace"),
        ("prefix=%20", "prefix"),
        ("gap_us=-5", "gap_us"),
        ("t0_ns=1_000&t1_ns=2_000", "t0_ns/t1_ns"),
        ("prefix=%00", "prefix"),
        ("trace=a.sqlite%400123abcd%0A", "trace"),
        ("trace=a%00b@0123abcd", "trace"),
        ("hide_devices=0,x", "hide_devices"),
        ("hide_devices=-1", "hide_devices"),
    ],
)
def test_bad_values_fall_back_with_a_warning(query, key):
    s = from_query(query)
    assert s == DEFAULT
    assert len(s.warnings) == 1 and key in s.warnings[0] and "None" not in s.warnings[0]


def test_unknown_keys_and_other_versions():
    assert from_query("zzz=1&tab=nvtx") == ViewState(tab="nvtx")
    assert "another version" in from_query("v=7").warnings[0]


states = st.builds(
    ViewState,
    trace=st.one_of(st.just(""), st.from_regex(r"[A-Za-z0-9_. -]{1,20}@[0-9a-f]{8}", fullmatch=True)),
    tab=st.sampled_from(TABS),
    lanes=st.lists(st.sampled_from(LANES), unique=True).map(lambda xs: tuple(v for v in LANES if v in xs)),
    threshold=st.one_of(st.none(), st.integers(0, 10**6).map(float), st.floats(0, 1e6, allow_nan=False)),
    prefix=st.text(min_size=1, max_size=30).filter(lambda t: t.strip() and t.isprintable()),
    kernel=st.text(max_size=30),
    kernel_names=st.sampled_from(("short", "full")),
    hide_devices=st.lists(st.integers(0, 64), max_size=8).map(tuple),
    busy=st.sampled_from(("kernels", "kernels+memops")),
    sort=st.sampled_from(SORT_COLUMNS).flatmap(lambda c: st.sampled_from((c, "-" + c))),
    group=st.booleans(),
    gap_us=st.floats(0, 1e6, allow_nan=False),
).flatmap(
    lambda s: st.one_of(
        st.just(s),
        st.tuples(st.integers(0, 2**40), st.integers(1, 2**40)).map(
            lambda w: ViewState(**{**s.__dict__, "t0_ns": w[0], "t1_ns": w[0] + w[1], "warnings": ()})
        ),
    )
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(states)
def test_property_round_trip_is_exact_and_canonical(state):
    q = to_query(state)
    back = from_query(q)
    assert back == state and back.warnings == ()
    assert to_query(back) == q


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(max_size=200))
def test_property_parser_never_raises(text):
    s = from_query(text)
    assert isinstance(s, ViewState)
    to_query(s)


def test_devices_and_kernel_filter():
    s = ViewState(hide_devices=(1, 0, 1), kernel="gemm")
    assert to_query(s) == "hide_devices=0,1&kernel=gemm&v=1"
    assert from_query("hide_devices=&v=1").hide_devices == ()
    assert from_query(to_query(s)) == s


def test_repeated_keys_are_reported():
    s = from_query("tab=gaps&tab=nvtx&threshold=3&threshold=x")
    assert (s.tab, s.threshold) == ("gaps", 3.0)
    assert s.warnings == ("The link repeats tab, threshold: the first value of each is used.",)


# ----- the field table, transitions and view slices (pure: no browser) ---------------------------------------
from dataclasses import replace  # noqa: E402

from dashboard.state import (  # noqa: E402
    FIELDS,
    apply_control,
    apply_grid,
    apply_relayout,
    apply_row_click,
    canonical_filter,
    changed_fields,
    column_state_for,
    control_values,
    query_key_table,
)


def test_every_control_of_the_field_table_is_on_the_page():
    from dashboard.app import ids

    keys = [f.key for f in FIELDS]
    assert len(keys) == len(set(keys)) and "t0_ns" not in keys
    assert {f.control[0] for f in FIELDS if f.control} <= set(ids.ALL)
    values = control_values(DEFAULT)
    assert values["lanes"] == list(LANES) and values["group"] == "auto" and values["threshold"] is None


def test_a_control_change_keeps_the_window_and_a_new_trace_clears_it():
    s = ViewState(
        trace="a.sqlite@0123abcd",
        t0_ns=2_000_000_000,
        t1_ns=2_100_000_000,
        mark=("gap", 2_010_000_000, 2_020_000_000),
        hide_devices=(1,),
    )
    for name, raw in (
        ("threshold", 100),
        ("busy", "kernels+memops"),
        ("lanes", ["gpu"]),
        ("kernel_names", "full"),
        ("stats", "window"),
        ("gap_us", 25),
    ):
        new, notice = apply_control(s, name, raw)
        assert notice is None and new.window() == s.window() and new.mark == s.mark
        assert "t0_ns=2000000000&t1_ns=2100000000" in to_query(new)
    new, _ = apply_control(s, "trace", "b.sqlite@89abcdef")
    assert (new.trace, new.window(), new.mark, new.hide_devices) == ("b.sqlite@89abcdef", None, None, ())
    assert "t0_ns" not in to_query(new)


def test_invalid_control_values_keep_the_state_and_say_why():
    s = ViewState(threshold=47.0)
    for name, raw in (("threshold", -3), ("threshold", "x"), ("gap_us", None), ("prefix", "   "), ("busy", "all")):
        new, notice = apply_control(s, name, raw)
        assert new == s and notice
    assert apply_control(s, "threshold", "")[0].threshold is None  # emptied: back to the automatic split
    assert apply_control(s, "prefix", " CG ")[0].prefix == "CG"
    # the notice names the control as the page labels it and what it takes, never a Python value (None)
    assert (
        apply_control(s, "gap_us", None)[1]
        == "“Gaps of at least (µs)” takes a number of µs from 0 to 10^15: keeping 10."
    )
    assert apply_control(s, "gap_us", 1e20)[1] == (
        "“Gaps of at least (µs)” takes a number of µs from 0 to 10^15, not 1e+20: keeping 10."
    )
    assert apply_control(ViewState(), "threshold", -5)[1] == (
        "“Prefill when tokens ≥” takes a token count from 0 to 10^15 (empty: the automatic split), not -5: keeping "
        "the automatic split."
    )
    assert apply_control(s, "busy", "all")[1] == "“busy” takes a valid value, not all: keeping kernels."


def test_relayout_row_click_and_grid_transitions():
    s = ViewState(trace="a.sqlite@0123abcd")
    z = apply_relayout(s, {"xaxis.range[0]": 2.0, "xaxis.range[1]": 2.1})
    assert z.window() == (2_000_000_000, 2_100_000_000)
    assert apply_relayout(z, {"autosize": True}) == z and apply_relayout(z, {"xaxis.autorange": True}).window() is None
    r = apply_row_click(z, {"kind": "dispatch", "start_ns": 5_000, "end_ns": 9_000})
    assert r.window() == (1_000, 13_000) and r.mark == ("dispatch", 5_000, 9_000)
    assert apply_row_click(z, {"kind": "bogus", "start_ns": 1, "end_ns": 2}) == z
    assert apply_row_click(z, {"kind": "gap", "start_ns": 9, "end_ns": 2}) == z
    # a Gantt bar of a same-phase run: its window, no context around it, the mark kept
    w = apply_row_click(r, {"kind": "window", "start_ns": 20_000, "end_ns": 90_000})
    assert w.window() == (20_000, 90_000) and w.mark == ("dispatch", 5_000, 9_000)
    assert apply_row_click(z, {"kind": "window", "start_ns": 9, "end_ns": 9}) == z
    g = apply_grid(s, "api", column_state=column_state_for("api", "count"))
    assert g.api_sort == "count" and "api_sort=count" in to_query(g)
    assert apply_grid(g, "api", column_state=[{"colId": "count", "sort": None}]).api_sort == "-total_ns"
    f = apply_grid(s, "gaps", filter_model={"cause": {"filterType": "text", "type": "contains", "filter": "sync"}})
    assert f.gaps_filter == '{"cause":{"filter":"sync","filterType":"text","type":"contains"}}'
    assert from_query(to_query(f)) == f
    assert apply_grid(s, "gaps", filter_model={"evil": {"filterType": "text", "type": "contains"}}) == s
    assert changed_fields(s, r) == {"window", "mark"}


@pytest.mark.parametrize(
    "model",
    [
        {"name": {"filterType": "set", "values": ["x"]}},
        {"name": {"filterType": "text", "type": "regex"}},
        {"count": {"filterType": "number", "type": "equals", "filter": float("inf")}},
        [1, 2],
        "{",
        {"name": {"filterType": "text", "type": "contains", "filter": "x" * 500}},
    ],
)
def test_filters_the_link_cannot_hold_are_refused(model):
    with pytest.raises((ValueError, TypeError)):
        canonical_filter(model, "kernels")


def test_every_table_sort_and_filter_travels_in_the_link():
    s = ViewState(
        api_sort="count",
        nvtx_sort="-union_ns",
        dispatch_sort="-duration_ns",
        gap_sort="start_ns",
        kernels_filter='{"name":{"filter":"gemm","filterType":"text","type":"contains"}}',
        stats="window",
        mark=("kernel", 10, 20),
        group=False,
    )
    q = to_query(s)
    assert from_query(q) == s
    for key in (
        "api_sort=count",
        "nvtx_sort=-union_ns",
        "dispatch_sort=-duration_ns",
        "gap_sort=start_ns",
        "kernels_filter=",
        "stats=window",
        "mark=kernel:10-20",
        "group=0",
    ):
        assert key in q


def test_query_key_table_lists_every_key():
    table = query_key_table()
    for f in FIELDS:
        assert f"`{f.key}`" in table
    assert "`t0_ns`, `t1_ns`" in table


def test_a_control_change_resends_only_the_views_that_read_it():
    from dashboard.app.views import VIEWS, view_slice

    s = ViewState(trace="a.sqlite@0123abcd")

    def touched(new):
        return sorted(v.name for v in VIEWS if view_slice(v, new) != view_slice(v, s))

    assert touched(apply_control(s, "kernel_names", "full")[0]) == ["kernels"]
    assert touched(apply_control(s, "kernel", "gemm")[0]) == ["kernel_filter"]
    assert touched(apply_control(s, "gap_us", 50)[0]) == ["gaps"]
    assert touched(apply_control(s, "group", "on")[0]) == ["gaps", "nvtx"]  # gap causes are grouped alike
    assert touched(apply_control(s, "threshold", 100)[0]) == [
        "compare_link",
        "dispatches",
        "findings",
        "gantt",
        "phase_figure",
        "phases",
    ]  # the link carries it
    assert touched(apply_relayout(s, {"xaxis.range": [1, 2]})) == ["gantt", "timeline"]  # stats: whole trace
    w = apply_control(s, "stats", "window")[0]
    assert touched(w) == []  # no window yet: still the whole trace
    assert touched(apply_relayout(w, {"xaxis.range": [1, 2]})) == [
        "api",
        "dispatches",
        "gantt",
        "gaps",
        "gpu",
        "kernels",
        "nvtx",
        "overview",
        "phase_figure",
        "phases",
        "timeline",
    ]
    assert touched(apply_grid(s, "api", column_state=column_state_for("api", "count"))) == []  # sorted in the browser


def test_sync_next_state_applies_events_in_order():
    from dashboard.app import ids
    from dashboard.app.sync import next_state

    s = ViewState(trace="a.sqlite@0123abcd", t0_ns=1, t1_ns=5)
    values = {"controls": {"threshold": 64, "group": "auto"}, "relayout": None, "row": None, "grids": None}
    new, notices, _ = next_state(s, [(ids.THRESHOLD, "value")], values)
    assert new.threshold == 64 and new.window() == (1, 5) and new.group is None and notices == []
    assert next_state(s, [(ids.NVTX_GROUP, "value")], {**values, "controls": {"group": "off"}})[0].group is False
    bad = next_state(s, [(ids.THRESHOLD, "value")], {**values, "controls": {"threshold": -1}})
    assert bad[0] == s and bad[1] == [apply_control(s, "threshold", -1)[1]] and bad[1][0].startswith("“Prefill when")
    # A call overtaken by a newer one is dropped by Dash: the newer call still sees every input's value.
    values = {
        "controls": {"threshold": 64, "lanes": ["gpu"], "tab": "gaps"},
        "relayout": {"xaxis.range": [0.03, 0.05], "at": 1},
        "row": None,
        "grids": {"sorts": {"api": column_state_for("api", "count")}, "filters": {}},
    }
    new, _, seen = next_state(s, [(ids.TABLE_TABS, "value")], values)
    assert (new.threshold, new.lanes, new.tab, new.window(), new.api_sort) == (
        64,
        ("gpu",),
        "gaps",
        (30_000_000, 50_000_000),
        "count",
    )
    again, _, _ = next_state(replace(new, t0_ns=7, t1_ns=9), [(ids.TABLE_TABS, "value")], values, seen=seen)
    assert again.window() == (7, 9)  # a zoom already applied is not applied twice (a row click moved on since)
    cleared = next_state(
        new,
        [(ids.TRACE_PICKER, "value")],
        {**values, "controls": {**values["controls"], "trace": "b.sqlite@89abcdef", "hide_devices": [1]}},
        seen=seen,
    )[0]
    assert (cleared.trace, cleared.window(), cleared.hide_devices) == ("b.sqlite@89abcdef", None, ())


def test_reference_lists_the_link_keys_of_the_field_table():
    from pathlib import Path

    reference = (Path(__file__).resolve().parents[1] / "docs" / "reference.md").read_text(encoding="utf-8")
    listed = reference.split("<!-- link-keys:start -->\n", 1)[1].split("\n<!-- link-keys:end -->", 1)[0]
    assert listed.strip() == query_key_table().strip()
