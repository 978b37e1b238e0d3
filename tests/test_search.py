"""The timeline search: queries, occurrences counted by hand, Next / Previous, the lane of marks and the link."""

from dataclasses import replace

import numpy as np
import pytest
from search_fixture import ELEMENTWISE, write_search_fixture

from dashboard.analysis.search import SearchError, count_text, parse_query, step_to
from dashboard.data.analysis import analysis_of
from dashboard.data.trace import load_trace
from dashboard.state import DEFAULT, from_query, to_query


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return load_trace(write_search_fixture(tmp_path_factory.mktemp("search") / "search.sqlite"))


def occ_list(occ):
    from dashboard.analysis.search import KINDS

    return [(KINDS[k], int(s), int(e)) for k, s, e in zip(occ.kind, occ.start_ns, occ.end_ns)]


def test_a_substring_ignores_case_and_a_regex_between_slashes_does_not():
    assert parse_query("  GeMM ").matches("sgemm_128") and parse_query("  GeMM ").text == "GeMM"
    assert parse_query("a.b").matches("xa.by") and not parse_query("a.b").matches("axb")  # literal, not a regex
    assert parse_query("/^gemm/").matches("gemm_x") and not parse_query("/^gemm/").matches("GEMM_x")
    assert parse_query("/(?i)^gemm/").matches("GEMM_x")
    assert parse_query("/").matches("a/b")  # one slash is text


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "the search is empty"),
        ("   ", "the search is empty"),
        ("x" * 201, "a search is printable text of at most 200 characters"),
        ("a\tb", "a search is printable text of at most 200 characters"),
        ("/(/", "/(/ is not a regular expression RE2 reads: missing ): ("),
        (r"/(a)\1/", r"/(a)\1/ is not a regular expression RE2 reads: invalid escape sequence: \1"),
    ],
)
def test_a_bad_query_says_why(text, message):
    with pytest.raises(SearchError) as err:
        parse_query(text)
    assert str(err.value) == message


def test_a_pattern_that_backtracks_forever_elsewhere_answers_at_once():
    assert not parse_query("/(a+)+$/").matches("a" * 100_000 + "b")  # RE2: linear time, no catastrophic backtracking


def test_occurrences_are_the_hand_counted_ones_in_time_order(trace):
    occ = analysis_of(trace).search("elementwise")
    assert occ_list(occ) == ELEMENTWISE
    assert occ.counts() == {"kernel": 5, "nvtx": 2, "api": 0}
    assert occ.names == {"kernel": ("elementwise_kernel",), "nvtx": ("elementwise phase",), "api": ()}
    assert occ.interval(0) == ("nvtx", 5_000, 15_000)


def test_kernels_match_by_demangled_name_and_calls_by_display_name(trace):
    a = analysis_of(trace)
    assert occ_list(a.search("cutlass")) == [
        ("kernel", 20_000, 25_000),
        ("kernel", 40_000, 45_000),
        ("kernel", 60_000, 65_000),
    ]
    calls = a.search("/^cudaLaunchKernel$/")  # the raw name is cudaLaunchKernel_v7000
    assert len(calls) == 8 and occ_list(calls)[0] == ("api", 9_000, 9_500)
    assert len(a.search("/^cudaLaunchKernel_v7000$/")) == 8
    assert len(a.search("no such name")) == 0


def test_marks_are_found_and_counted_as_points(tmp_path):
    from factories import write_nsys_sqlite

    path = write_nsys_sqlite(
        tmp_path / "marks.sqlite",
        kernels=[{"start": 0, "end": 100, "shortName": "k"}],
        nvtx=[
            {"start": 40, "end": None, "eventType": 34, "text": "CG_DISPATCH:actual=3"},
            {"start": 90, "end": None, "eventType": 34, "text": "other"},
        ],
    )
    marked = load_trace(path)  # the analysis holds its trace weakly
    occ = analysis_of(marked).search("cg_dispatch")
    assert occ_list(occ) == [("nvtx", 40, 40)]
    assert occ.interval(0) == ("nvtx", 40, 41)  # a mark has no length: marked as 1 ns
    assert (
        occ.in_window((40, 50)).tolist() == [0]
        and occ.in_window((41, 50)).tolist() == []
        and occ.in_window((0, 40)).tolist() == []
    )


def test_in_view_counts_what_overlaps_the_window(trace):
    occ = analysis_of(trace).search("elementwise")
    assert occ.in_window((20_000, 60_000)).tolist() == [2, 3]
    assert occ.in_window((12_000, 30_000)).tolist() == [
        0
    ]  # the kernel [10,000, 12,000) ends at t0; [30,000 ... starts at t1
    assert occ.in_window((11_999, 30_001)).tolist() == [0, 1, 2]
    assert occ.in_window(None).tolist() == list(range(7))
    assert count_text(occ, (20_000, 60_000)) == "elementwise: 7 in the trace, 2 in view (5 kernels, 2 NVTX annotations)"
    assert count_text(occ, None) == "elementwise: 7 in the trace, 7 in view (5 kernels, 2 NVTX annotations)"
    none = analysis_of(trace).search("zzz")
    assert count_text(none, None) == "zzz: no kernel, NVTX annotation or CUDA API call matches"
    one = analysis_of(trace).search("decode")
    assert count_text(one, (0, 1)) == "decode: 1 in the trace, 1 in view (1 NVTX annotation)"


def test_next_and_previous_wrap_and_start_from_the_window(trace):
    occ = analysis_of(trace).search("elementwise")
    assert [step_to(occ, h, 1, None) for h in (None, 1, 6, 7)] == [1, 2, 7, 1]
    assert [step_to(occ, h, -1, None) for h in (None, 1, 2)] == [7, 7, 1]
    assert step_to(occ, None, 1, (31_000, 60_000)) == 4  # the first starting at or after t0: [50,000, ...)
    assert step_to(occ, None, -1, (31_000, 60_000)) == 4  # the last starting before t1
    assert step_to(occ, None, 1, (95_000, 99_000)) == 1  # none after: wraps to the first
    assert step_to(occ, 99, 1, None) == 1  # a stale hit from another trace: as if none
    assert step_to(analysis_of(trace).search("zzz"), None, 1, None) is None


def test_go_to_zooms_and_marks_the_occurrence_and_the_link_holds_it(trace):
    from dashboard.render.search import go_to, search_status

    state = replace(DEFAULT, trace="search.sqlite@0123abcd", search="elementwise")
    first, note = go_to(trace, state, 1)
    assert note is None
    # its width of context each side, but not before the trace's start (state.mark_window)
    assert (first.hit, first.mark, first.window()) == (1, ("nvtx", 5_000, 15_000), (0, 25_000))
    second, _ = go_to(trace, first, 1)
    assert (second.hit, second.mark, second.window()) == (2, ("kernel", 10_000, 12_000), (8_000, 14_000))
    back, _ = go_to(trace, second, -1)
    assert back.hit == 1 and back.mark == ("nvtx", 5_000, 15_000)
    last, _ = go_to(trace, first, -1)
    assert last.hit == 7 and last.mark == ("kernel", 90_000, 92_000)
    query = to_query(second)
    assert "hit=2" in query and "search=elementwise" in query and "mark=kernel:10000-12000" in query
    assert from_query(query) == second
    assert search_status(trace, second) == (
        "elementwise: 7 in the trace, 2 in view (5 kernels, 2 NVTX annotations)"
        " · at #2: elementwise_kernel at 0.000010 s"
    )
    assert go_to(trace, replace(state, search="/(/"), 1) == (
        replace(state, search="/(/"),
        "Search: /(/ is not a regular expression RE2 reads: missing ): (.",
    )
    assert go_to(trace, replace(state, search="zzz"), 1)[1] == (
        "Nothing matches zzz: no kernel, NVTX annotation or CUDA API call."
    )
    assert (
        go_to(trace, replace(state, search=""), 1)[1] == "Type a kernel, NVTX or CUDA API name in the search box first."
    )


def test_a_link_whose_search_cannot_be_applied_says_so_in_the_status_and_for_export(trace):
    from dashboard.render.search import search_status, search_warnings

    state = replace(DEFAULT, trace="search.sqlite@0123abcd", search="elementwise")
    assert search_warnings(trace, state) == [] == search_warnings(trace, replace(state, hit=7))
    past = replace(state, hit=8)
    assert search_status(trace, past) == (
        "elementwise: 7 in the trace, 7 in view (5 kernels, 2 NVTX annotations)"
        " · #8 of the link is past the last one: Next goes to the first"
    )
    assert search_warnings(trace, past) == [
        "Ignored hit=8 in the link: the search finds 7 occurrences; nothing is marked as gone to"
    ]
    assert search_warnings(trace, replace(state, search="/(/")) == [
        "Ignored search='/(/' in the link: /(/ is not a regular expression RE2 reads: missing ): ("
    ]
    none = replace(state, search="zzz", hit=1)
    assert search_warnings(trace, none) == [
        "Ignored hit=1 in the link: the search finds 0 occurrences; nothing is marked as gone to"
    ]


def test_a_new_search_or_trace_forgets_the_occurrence():
    from dashboard.state import apply_control

    state = replace(DEFAULT, search="a", hit=3)
    assert apply_control(state, "search", " b ")[0] == replace(DEFAULT, search="b")
    assert apply_control(state, "trace", "x.sqlite@0123abcd")[0].hit is None
    assert from_query("search=" + "x" * 201).warnings == (
        "Ignored search='xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' in the link: not printable text of at most 200 "
        "characters; using the default.",
    )
    assert from_query("hit=0").hit is None and from_query("hit=0").warnings
    assert from_query("search=%2F%5Egemm%2F&hit=12") == replace(DEFAULT, search="/^gemm/", hit=12)


def test_the_timeline_draws_each_occurrence_in_view_in_the_search_lane(trace):
    from dashboard.render.timeline import timeline_view_spec

    state = replace(DEFAULT, search="elementwise", t0_ns=20_000, t1_ns=80_000)
    fig, _ = timeline_view_spec(trace, state)
    lane = next(t for t in fig["data"] if t.get("name") == "search matches")
    assert list(lane["y"]) == ["search: elementwise"] * 3
    assert np.round(np.asarray(lane["base"]) * 1e9).astype(int).tolist() == [30_000, 50_000, 70_000]
    assert fig["layout"]["yaxis"]["tickvals"][0] == "search: elementwise"  # the top lane
    assert lane["hovertext"][0] == "<b>elementwise_kernel</b><br>kernel · #3 of 7 · 2.00 µs · start 0.000030 s"
    bare, _ = timeline_view_spec(trace, replace(state, search=""))
    assert not any(t.get("name") == "search matches" for t in bare["data"])
    assert "search: elementwise" not in bare["layout"]["yaxis"]["tickvals"]


def test_past_the_budget_the_lane_marks_every_bin_that_holds_a_match(trace, monkeypatch):
    from dashboard.render import search as rs

    monkeypatch.setattr(rs, "SEARCH_BUDGET", 2)
    state = replace(DEFAULT, search="elementwise")
    lane, note = rs.search_lane(trace, state, (0, 100_000), plot_width_px=30)  # 10 bins of 10,000 ns
    assert note == "7 search matches in view: each mark is a bin holding some (zoom in to see each one)"
    assert list(zip(lane.start_ns.tolist(), lane.end_ns.tolist())) == [
        (0, 10_000),  # the NVTX range [5,000, 15,000)
        (10_000, 20_000),  # it and the kernel at 10,000
        (30_000, 40_000),
        (50_000, 60_000),
        (70_000, 80_000),
        (80_000, 90_000),  # the range [85,000, 95,000)
        (90_000, 100_000),  # it and the kernel at 90,000
    ]
    assert lane.hover[1] == "<b>2 matches</b> in 0.000010–0.000020 s"


def test_the_state_callback_applies_each_next_once(trace):
    from dashboard.app import ids
    from dashboard.app.sync import next_state
    from dashboard.render.search import go_to

    state = replace(DEFAULT, search="elementwise")
    values = {"controls": {}, "step": {"n": 1.5, "dir": 1}}
    new, notices, seen = next_state(state, [(ids.SEARCH_STEP, "data")], values, None, lambda s, d: go_to(trace, s, d))
    assert (new.hit, new.mark, notices, seen) == (1, ("nvtx", 5_000, 15_000), [], {"step": {"n": 1.5, "dir": 1}})
    again, _, _ = next_state(new, [(ids.TABLE_TABS, "value")], values, seen, lambda s, d: go_to(trace, s, d))
    assert again.hit == 1  # the same Next is not applied twice
    typed = {"controls": {"search": "gemm"}, "step": {"n": 2.5, "dir": 1}}  # Enter: the text and Next at once
    first, _, _ = next_state(new, [(ids.TIMELINE_SEARCH, "n_submit")], typed, seen, lambda s, d: go_to(trace, s, d))
    assert (first.search, first.hit, first.mark) == ("gemm", 1, ("kernel", 20_000, 25_000))


def test_report_warns_of_a_search_it_cannot_apply(tmp_path, capsys):
    from dashboard.cli import main

    path = write_search_fixture(tmp_path / "search.sqlite")
    out = tmp_path / "r.html"
    assert main(["report", str(path), "--url", "?search=/(/", "-o", str(out), "--no-cache"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        "tracedash: warning: Ignored search='/(/' in the link: /(/ is not a regular expression RE2 reads: missing ): ("
    )
    assert main(["report", str(path), "--url", "?search=elementwise&hit=9", "-o", str(out), "--no-cache"]) == 0
    assert capsys.readouterr().err.splitlines()[0] == (
        "tracedash: warning: Ignored hit=9 in the link: the search finds 7 occurrences; nothing is marked as gone to"
    )
