"""Notes (issue 28, part 3): the link codec and its bounds, the add/remove/zoom transitions, the flags on the
timeline and the Gantt, the Notes panel, the report's Notes section and `tracedash export/report --url`."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from urllib.parse import urlencode

import pytest

from dashboard.state import DEFAULT, ViewState, apply_add_note, from_query, note_anchor, to_query
from dashboard.state.notes import apply_note_zoom, apply_remove_note, notes_query_chars, point_from_click

from factories import write_nsys_sqlite

SCRIPT = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
SVG = "{http://www.w3.org/2000/svg}"


# ----- the link --------------------------------------------------------------------------------------------------
def test_notes_round_trip_in_canonical_order_with_any_text():
    s = ViewState(
        tab="gaps",
        notes=((1_500_000_000, 1_500_000_000, "a&b=c:d 100% é ✓"), (2_000, 9_000, SCRIPT), (2_000, 9_000, "x:y")),
    )
    q = to_query(s)
    assert q == (
        "note=2000-9000:%3Cscript%3Ealert%281%29%3C%2Fscript%3E&note=2000-9000:x:y"
        "&note=1500000000:a%26b%3Dc:d+100%25+%C3%A9+%E2%9C%93&tab=gaps&v=1"
    )
    back = from_query(q)
    assert back == s and back.warnings == ()
    assert back.notes == (
        (2_000, 9_000, SCRIPT),
        (2_000, 9_000, "x:y"),
        (1_500_000_000, 1_500_000_000, "a&b=c:d 100% é ✓"),
    )
    # a link's own order, a repeated note and spaces around the text: the same view, the same link
    shuffled = "note=1500000000:a%26b%3Dc:d+100%25+%C3%A9+%E2%9C%93&note=2000-9000:x:y&tab=gaps&note=2000-9000:x:y"
    again = from_query(shuffled + "&note=2000-9000:+%3Cscript%3Ealert%281%29%3C%2Fscript%3E+")
    assert again == s and again.warnings == () and to_query(again) == q
    assert from_query("note=7-7:p").notes == ((7, 7, "p"),) and to_query(from_query("note=7-7:p")) == "note=7:p&v=1"
    assert from_query("note=007:p").notes == ((7, 7, "p"),)


@pytest.mark.parametrize(
    "value, why",
    [
        ("abc", "not T0_NS-T1_NS:TEXT or T_NS:TEXT with integer ns times, 0 ≤ T0 ≤ T1 < 2^62"),
        ("9-3:x", "not T0_NS-T1_NS:TEXT or T_NS:TEXT with integer ns times, 0 ≤ T0 ≤ T1 < 2^62"),
        ("-5:x", "not T0_NS-T1_NS:TEXT or T_NS:TEXT with integer ns times, 0 ≤ T0 ≤ T1 < 2^62"),
        ("4611686018427387904:x", "not T0_NS-T1_NS:TEXT or T_NS:TEXT with integer ns times, 0 ≤ T0 ≤ T1 < 2^62"),
        ("5:", "a note needs some text"),
        ("5:a\nb", "a note's text is printable text on one line (no line breaks or control characters)"),
    ],
)
def test_a_bad_note_is_left_out_with_a_warning_saying_which_and_why(value, why):
    s = from_query(urlencode({"note": value, "tab": "api"}) + "&note=1:kept")
    assert s.notes == ((1, 1, "kept"),) and s.tab == "api"
    assert s.warnings == (f"Ignored note={value!r} in the link: {why}.",)


def test_the_bounds_of_the_link():
    long = from_query("note=1-2:" + "x" * 201 + "&note=3:ok")
    assert long.notes == ((3, 3, "ok"),)
    assert long.warnings == (
        "Ignored note='1-2:xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' in the link: a note's text is 1 to 200 characters "
        "(this one has 201).",
    )
    utf8 = from_query("note=1:" + "é" * 200)  # 200 characters: 1,207 characters of link (%C3%A9 each)
    assert utf8.notes == ((1, 1, "é" * 200),) and notes_query_chars(utf8.notes) == 1_207 and utf8.warnings == ()
    twenty_one = from_query("&".join(f"note={i}:n" for i in range(21)))
    assert len(twenty_one.notes) == 20 and twenty_one.notes[-1] == (19, 19, "n")
    assert twenty_one.warnings == ("Ignored 1 note of the link from note='20:n' on: at most 20 notes in a link.",)
    big = from_query("&".join(f"note={i}:" + "y" * 190 for i in range(12)))
    assert len(big.notes) == 10 and notes_query_chars(big.notes) == 1_979
    assert big.warnings == (
        "Ignored 2 notes of the link from note='10:" + "y" * 34 + "...' on: a link holds at most 2,000 characters "
        "of notes.",
    )
    assert len(to_query(big)) == 1_979 + len("&v=1")
    many_bad = from_query("&".join(f"note=x{i}" for i in range(8)))
    assert many_bad.notes == () and len(many_bad.warnings) == 6
    assert many_bad.warnings[-1] == "Ignored 3 more notes of the link that cannot be read."


def test_other_repeated_keys_still_keep_their_first_value():
    s = from_query("note=1:a&tab=gaps&note=2:b&tab=nvtx")
    assert s.notes == ((1, 1, "a"), (2, 2, "b")) and s.tab == "gaps"
    assert s.warnings == ("The link repeats tab: the first value of each is used.",)


# ----- transitions -------------------------------------------------------------------------------------------------
def test_add_note_pins_to_the_click_else_the_mark_else_the_window_else_the_trace():
    extent = lambda: (100, 900)  # noqa: E731
    plain = ViewState(trace="t.sqlite@0123abcd")
    zoomed = ViewState(trace="t.sqlite@0123abcd", t0_ns=-40, t1_ns=700)
    marked = ViewState(trace="t.sqlite@0123abcd", t0_ns=10, t1_ns=700, mark=("kernel", 300, 400))
    assert note_anchor(marked, 555, extent) == (555, 555)
    assert note_anchor(marked, None, extent) == (300, 400)
    assert note_anchor(zoomed, None, extent) == (0, 700)  # a window's context before 0 starts at 0
    assert note_anchor(plain, None, extent) == (100, 900)
    assert note_anchor(plain, None, None) is None
    assert point_from_click({"points": [{"x": 1.25, "y": "GPU 0"}]}) == 1_250_000_000
    assert point_from_click(None) is None and point_from_click({"points": []}) is None
    assert point_from_click({"points": [{"x": "nan"}]}) is None and point_from_click({"points": [{"x": -1}]}) is None

    s, notice = apply_add_note(marked, "  stall\nafter\tsync  ", (300, 400))
    assert notice is None and s.notes == ((300, 400, "stall after sync"),)
    assert s.window() == marked.window() and s.mark == marked.mark
    assert apply_add_note(s, "stall after sync", (300, 400)) == (s, "That note is already there.")
    assert apply_add_note(s, " \t ", (1, 2)) == (
        s,
        "Type the note's text in the box first: an empty note is not added.",
    )
    assert apply_add_note(s, "x" * 201, (1, 2)) == (
        s,
        "A note is at most 200 characters (this one has 201): not added.",
    )
    assert apply_add_note(DEFAULT, "x", None) == (DEFAULT, "No trace to pin a note to: open a trace first.")
    full = ViewState(notes=tuple((i, i, "n") for i in range(20)))
    assert apply_add_note(full, "one more", (50, 60)) == (
        full,
        "At most 20 notes travel in a link: remove one (×) before adding another.",
    )
    heavy = ViewState(notes=tuple((i, i, "y" * 190) for i in range(10)))
    assert apply_add_note(heavy, "y" * 20, (99, 99)) == (
        heavy,
        "The notes would take more than 2,000 characters of the link: shorten this note or remove one (×).",
    )
    assert apply_add_note(heavy, "y", (99, 99))[0].notes[-1] == (99, 99, "y")  # 1,979 + 1 + 9 = 1,989 characters

    two = ViewState(notes=((5, 5, "p"), (2_000, 5_000, "r")))
    assert apply_remove_note(two, 0).notes == ((2_000, 5_000, "r"),)
    assert (
        apply_remove_note(two, 2) == two and apply_remove_note(two, -1) == two and apply_remove_note(two, None) == two
    )
    assert apply_note_zoom(two, 1).window() == (0, 8_000)  # its width of context on each side, not before 0
    assert apply_note_zoom(ViewState(notes=((2_000, 2_400, "r"),)), 0).window() == (1_000, 3_400)  # at least 1 µs
    assert apply_note_zoom(two, 0).window() == (0, 1_005)  # a point: ±1 µs (from 0 at the trace's start)
    assert apply_note_zoom(two, 7) == two


def test_a_new_trace_clears_the_notes():
    from dashboard.state import apply_control

    s = ViewState(trace="a.sqlite@0123abcd", notes=((1, 1, "a"),))
    assert apply_control(s, "trace", "b.sqlite@0123abcd")[0].notes == ()
    assert apply_control(s, "tab", "gaps")[0].notes == ((1, 1, "a"),)


def test_sync_applies_each_add_once_and_the_panel_buttons():
    from dashboard.app.sync import next_state

    base = ViewState(trace="t.sqlite@0123abcd", t0_ns=1_000, t1_ns=9_000)
    click = {"points": [{"x": 4e-6}]}
    note = {"adds": 1, "text": "here", "click": click, "extent": lambda s: (0, 10)}
    s, notices, seen = next_state(base, [("note-add", "n_clicks")], {"note": note})
    assert s.notes == ((4_000, 4_000, "here"),) and notices == [] and seen == {"note_adds": 1, "note_click": 4_000}
    # the same event seen again (a zoom's call): nothing new
    assert next_state(s, [("x-range", "data")], {"note": note}, seen)[0] == s
    # the next add: the click was used, so the window
    s2, _, seen = next_state(s, [("note-text", "n_submit")], {"note": {**note, "adds": 2, "text": "win"}}, seen)
    assert s2.notes == ((1_000, 9_000, "win"), (4_000, 4_000, "here"))
    s3, notices, seen = next_state(s2, [("note-add", "n_clicks")], {"note": {**note, "adds": 3, "text": ""}}, seen)
    assert s3 == s2 and notices == ["Type the note's text in the box first: an empty note is not added."]
    zoomed = next_state(
        s2, [('{"index":1,"type":"note-zoom"}', "n_clicks")], {"note": {**note, "adds": 3, "zoom": 1}}, seen
    )[0]
    assert zoomed.window() == (3_000, 5_000) and zoomed.notes == s2.notes
    removed = next_state(s2, [], {"note": {**note, "adds": 3, "remove": 0}}, seen)[0]
    assert removed.notes == ((4_000, 4_000, "here"),)


# ----- figures -----------------------------------------------------------------------------------------------------
def test_flags_are_a_line_or_a_band_with_a_label_of_text():
    from dashboard.figures.notes import add_note_flags

    fig = {"data": [{"type": "bar", "x": [1]}], "layout": {"xaxis": {"ticksuffix": "s"}, "shapes": [{"name": "x"}]}}
    long = "a" * 45
    add_note_flags(fig, ((1_000_000_000, 1_000_000_000, SCRIPT), (1_200_000_000, 1_500_000_000, long)), (1e9, 2e9))
    shapes = fig["layout"]["shapes"]
    assert [s["name"] for s in shapes] == ["x", "note 1", "note 2", "note 2 edges"]
    assert (shapes[1]["type"], shapes[1]["x0"], shapes[1]["x1"], shapes[1]["yref"]) == ("line", 1.0, 1.0, "paper")
    assert (shapes[2]["type"], shapes[2]["x0"], shapes[2]["x1"], shapes[2]["layer"]) == ("rect", 1.2, 1.5, "below")
    assert (shapes[3]["type"], shapes[3]["layer"], shapes[3]["line"]["dash"]) == ("rect", "above", "dot")
    labels = fig["layout"]["annotations"]
    assert [(a["name"], a["text"], a["x"], a["yshift"]) for a in labels] == [
        ("note 1", ESCAPED, 1.0, -2),
        ("note 2", "a" * 39 + "…", 1.2, -2),  # 200 ms apart at 1 s over 1,300 px: both fit in the first row
    ]
    assert labels[0]["hovertext"] == ESCAPED and labels[1]["hovertext"] == long
    close = {"data": [{"x": [1]}], "layout": {"xaxis": {"ticksuffix": "s"}}}
    add_note_flags(close, ((1_000_000_000, 1_000_000_000, "a"), (1_001_000_000, 1_001_000_000, "b")), (1e9, 2e9))
    assert [a["yshift"] for a in close["layout"]["annotations"]] == [-2, -26]  # 1 ms apart: one row lower
    edge = {"data": [{"x": [1]}], "layout": {"xaxis": {"ticksuffix": "s"}}}
    add_note_flags(edge, ((1_100_000_000, 1_100_000_000, "a"), (1_990_000_000, 1_990_000_000, "b" * 30)), (1e9, 2e9))
    assert [a["xanchor"] for a in edge["layout"]["annotations"]] == ["left", "right"]  # ends at its note
    empty = {"data": [], "layout": {"xaxis": {"ticksuffix": "s"}}}
    other_axis = {"data": [{"x": [1]}], "layout": {"xaxis": {"title": "ms"}}}
    for f in (empty, other_axis):
        assert add_note_flags(f, ((1, 1, "a"),))["layout"].get("shapes") is None


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory):
    from dashboard.data.trace import load_trace

    path = write_nsys_sqlite(
        tmp_path_factory.mktemp("notes") / "notes.sqlite",
        kernels=[
            {"start": 1_000_000 + 100_000 * i, "end": 1_050_000 + 100_000 * i, "correlationId": i + 1} for i in range(8)
        ],
        nvtx=[
            {"start": 1_000_000 + 100_000 * i, "end": None, "eventType": 34, "text": f"CG_DISPATCH {i}"}
            for i in range(8)
        ],
    )
    return path, load_trace(path)


def test_the_timeline_and_the_gantt_carry_the_flags_and_their_views_read_the_notes(small_trace):
    from dashboard.app.views import BY_NAME, view_slice
    from dashboard.render import gantt_view, timeline_view_spec

    _, trace = small_trace
    state = ViewState(notes=((1_200_000, 1_300_000, SCRIPT), (1_500_000, 1_500_000, "point")))
    spec, _ = timeline_view_spec(trace, state)
    names = [s.get("name") for s in spec["layout"]["shapes"]]
    assert [n for n in names if n and n.startswith("note")] == ["note 1", "note 1 edges", "note 2"]
    texts = {a["name"]: a["text"] for a in spec["layout"]["annotations"] if a.get("name", "").startswith("note")}
    assert texts == {"note 1": ESCAPED, "note 2": "point"}
    gantt, _ = gantt_view(trace, state)
    assert [s.name for s in gantt.layout.shapes if (s.name or "").startswith("note")] == [
        "note 1",
        "note 1 edges",
        "note 2",
    ]
    assert [a.text for a in gantt.layout.annotations if (a.name or "").startswith("note")] == [ESCAPED, "point"]
    assert "note" not in str(timeline_view_spec(trace, DEFAULT)[0]["layout"].get("shapes"))
    for name in ("timeline", "gantt", "notes"):  # a change of notes re-renders these views
        assert view_slice(BY_NAME[name], state).notes == state.notes
    assert view_slice(BY_NAME["kernels"], state).notes == ()


def test_the_notes_panel_lists_each_note_as_text():
    from dashboard.app.views.notes import EMPTY, note_rows

    rows = note_rows(ViewState(notes=((1_000_000_000, 1_020_000_000, SCRIPT), (1_234_567_891, 1_234_567_891, "p"))))
    cells = [[c.children for c in r.children] for r in rows]
    assert cells == [["1.000000–1.020000 s", SCRIPT, "×"], ["1.234568 s", "p", "×"]]
    assert [r.children[0].id for r in rows] == [{"type": "note-zoom", "index": 0}, {"type": "note-zoom", "index": 1}]
    assert rows[1].children[2].id == {"type": "note-remove", "index": 1}
    assert [r.children for r in note_rows(DEFAULT)] == [EMPTY]
    assert note_rows(ViewState(notes=((80, 520, "ns"),)))[0].children[0].children == "80–520 ns"


# ----- report and export -------------------------------------------------------------------------------------------
def test_report_has_a_notes_section_and_flags(small_trace, tmp_path, capsys):
    from dashboard.cli import main

    path, _ = small_trace
    url = "http://127.0.0.1:8050/?" + urlencode([("note", f"1200000-1300000:{SCRIPT}"), ("note", "1500000:a&b")])
    out = tmp_path / "r.html"
    assert main(["report", str(path), "--url", url, "-o", str(out), "--no-cache"]) == 0
    assert capsys.readouterr().err.strip().endswith(" MiB, 2 notes)")
    html = out.read_text(encoding="utf-8")
    assert (
        "<h2>Notes</h2><ul class='notes'><li><span class='t'>0.001200–0.001300 s</span> "
        "&lt;script&gt;alert(1)&lt;/script&gt;</li><li><span class='t'>0.001500 s</span> a&amp;b</li></ul>"
    ) in html
    assert SCRIPT not in html
    # both figures carry the flags (Plotly's JSON: the label text escaped for its HTML-like labels)
    assert html.count('"name":"note 1 edges"') == 2 and html.count('"text":"a&amp;b"') == 2


def test_export_svg_shows_the_note_as_text(small_trace, tmp_path, capsys):
    from dashboard.cli import main

    path, _ = small_trace
    url = "?" + urlencode([("note", f"1200000-1300000:{SCRIPT}"), ("note", "1500000:a&b")])
    for figure in ("timeline", "gantt"):
        out = tmp_path / f"{figure}.svg"
        assert main(["export", str(path), "--url", url, "--figure", figure, "-o", str(out), "--no-cache"]) == 0
        assert capsys.readouterr().err.strip().endswith(f"svg, {figure}, 2 notes)")
        svg = out.read_text(encoding="utf-8")
        assert "&#60;script&#62;alert(1)&#60;/script&#62;" in svg and "<script" not in svg  # text, as kaleido writes it
        root = ET.fromstring(svg)
        labels = [t.text for t in root.iter(f"{SVG}text") if "annotation-text" in t.get("class", "")]
        assert labels[:2] == [SCRIPT, "a&b"]  # the two flags, shown as typed
        assert not [e for e in root.iter() if e.tag in (f"{SVG}script", f"{SVG}a")]
