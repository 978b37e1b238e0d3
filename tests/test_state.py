"""URL state codec: canonical, round-trips, never raises."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.state import DEFAULT, LANES, SORT_COLUMNS, TABS, ViewState, from_query, to_query


def test_defaults_give_the_shortest_link():
    assert to_query(DEFAULT) == "v=1"
    assert from_query("v=1") == DEFAULT and from_query("") == DEFAULT and from_query(None) == DEFAULT


def test_canonical_and_round_trip():
    s = ViewState(trace="run 1.sqlite@0a1b2c3d", tab="gaps", t0_ns=5, t1_ns=9, lanes=("gpu", "nvtx"),
                  threshold=47.5, prefix="CG X", busy="kernels+memops", sort="count", group=True,
                  gap_us=25)
    q = to_query(s)
    assert q == ("busy=kernels%2Bmemops&gap_us=25&group=1&lanes=nvtx,gpu&prefix=CG+X&sort=count"
                 "&t0_ns=5&t1_ns=9&tab=gaps&threshold=47.5&trace=run+1.sqlite%400a1b2c3d&v=1")
    assert from_query("?" + q) == s
    assert to_query(from_query(q)) == q


@pytest.mark.parametrize("query, key", [
    ("tab=bogus", "tab"), ("t0_ns=9&t1_ns=5", "t0_ns/t1_ns"), ("t0_ns=x", "t0_ns/t1_ns"),
    ("lanes=gpu,warp", "lanes"), ("threshold=-1", "threshold"), ("threshold=nan", "threshold"),
    ("threshold=1e999", "threshold"), ("busy=all", "busy"), ("sort=-evil", "sort"), ("group=maybe", "group"),
    ("trace=../../etc/passwd", "trace"), ("trace=%2Fetc%2Fpasswd@0123abcd", "trace"), ("prefix=%20", "prefix"),
    ("gap_us=-5", "gap_us"), ("t0_ns=1_000&t1_ns=2_000", "t0_ns/t1_ns"), ("prefix=%00", "prefix"),
    ("trace=a.sqlite%400123abcd%0A", "trace"), ("trace=a%00b@0123abcd", "trace"), ("hide_devices=0,x", "hide_devices"), ("hide_devices=-1", "hide_devices"),
])
def test_bad_values_fall_back_with_a_warning(query, key):
    s = from_query(query)
    assert s == DEFAULT
    assert len(s.warnings) == 1 and key in s.warnings[0]


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
).flatmap(lambda s: st.one_of(st.just(s), st.tuples(st.integers(0, 2**40), st.integers(1, 2**40)).map(
    lambda w: ViewState(**{**s.__dict__, "t0_ns": w[0], "t1_ns": w[0] + w[1], "warnings": ()}))))


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
