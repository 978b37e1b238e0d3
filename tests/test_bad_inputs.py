"""Issue #6 "Bad input": every case of the corpus (tests/bad_inputs.py) through the loader, the CLI
and the page; the input file is never changed and no side file appears next to it."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3

import pytest
from test_app import view_outputs

from dashboard.analysis.kernel_times import invalid_kernel_count, overlong_kernel_count
from dashboard.analysis.summary import summary_to_dict
from dashboard.app import create_app
from dashboard.cli import main
from dashboard.data.trace import load_trace
from dashboard.errors import TraceError
from dashboard.render import build_view, kernel_rows, phase_view, time_extent
from dashboard.state import ViewState

from bad_inputs import CENTURY_NS, IMG_NAME, LOADED, LONG_NAME, REFUSED, SCRIPT_NAME, write_case, write_valid


def snapshot(path):
    """Bytes, mtime and the folder listing: what a reader must never change."""
    folder = sorted(p.name for p in path.parent.iterdir())
    if path.is_dir():
        return folder, None, path.stat().st_mtime_ns
    return folder, hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def assert_untouched(path, before):
    assert snapshot(path) == before
    for suffix in ("-wal", "-journal", "-shm"):
        assert not path.with_name(path.name + suffix).exists()


@pytest.fixture(params=REFUSED, ids=lambda c: c.id)
def refused(request, tmp_path):
    path = request.param.make(tmp_path)
    return request.param, path, snapshot(path)


@pytest.fixture(params=LOADED, ids=lambda c: c.id)
def loaded(request, tmp_path):
    path = request.param.make(tmp_path)
    return request.param, path, snapshot(path)


def view_response(folder, name):
    """Every view of the page for the trace ``name`` served from ``folder``: {output id: {prop: value}}."""
    app = create_app(trace_dirs=[folder])
    tid = next(t for t in app.server.config["TRACE_STORE"].ids() if t.startswith(name + "@"))
    return view_outputs(app, tid)


def alerts_of(response) -> list[tuple[str, str]]:
    """(class, text) of every alert the view callback returned."""
    children = response["alerts"]["children"]
    children = children if isinstance(children, list) else [children]
    return [(c["props"]["className"], c["props"]["children"]) for c in children if c]


# ---- refused inputs: one clear message naming the file and the problem, everywhere ----------------------------


def test_loader_refuses_with_a_message_naming_file_and_problem(refused):
    case, path, before = refused
    with pytest.raises(TraceError) as err:
        load_trace(path)
    msg = str(err.value)
    assert path.name in msg and case.error in msg and "\n" not in msg
    assert_untouched(path, before)


def test_cli_exits_2_with_one_line(refused, capsys):
    case, path, before = refused
    assert main(["summarize", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("tracedash: error: ")
    assert path.name in err and case.error in err and "Traceback" not in err
    assert_untouched(path, before)


def test_page_shows_an_alert_naming_the_file(refused):
    case, path, before = refused
    if case.id == "directory":  # a folder is never offered as a trace: discovery skips it
        app = create_app(trace_dirs=[path.parent])
        assert app.server.config["TRACE_STORE"].ids() == []
        return
    response = view_response(path.parent, path.name)
    alerts = alerts_of(response)
    assert len(alerts) == 1
    kind, text = alerts[0]
    assert "alert-error" in kind and text.startswith(path.name + ": ") and case.error in text
    assert_untouched(path, before)


def test_cli_subprocess_no_traceback(tmp_path):
    """The installed entry point, end to end, on the worst case (a damaged SQLite file)."""
    import subprocess
    import sys

    path = write_case("corrupt_pages", tmp_path)
    before = snapshot(path)
    proc = subprocess.run(
        [sys.executable, "-m", "dashboard", "summarize", str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        "tracedash: error: corrupt.sqlite: the SQLite file is damaged or truncated (database disk image is malformed)\n"
    )
    assert_untouched(path, before)


# ---- inputs that must load, with exact counts ----------------------------------------------------------------

EXPECTED = {  # case -> (kernel_count, span_ns, busy_ns, invalid kernels, overlong kernels, invalid_time_rows)
    "missing_short_name": (2, 250, 150, 0, 0, {}),
    "end_before_start": (4, 250, 150, 2, 0, {}),
    "durations_of_centuries": (3, 3_000, 2_000, 1, 1, {}),
    "null_and_nan_times": (5, 900, 200, 3, 0, {"CUDA API calls": 1, "memcpy/memset": 1, "NVTX ranges": 3}),
    "names_of_10000_characters": (1, 100, 100, 0, 0, {}),
    "html_and_script_names": (2, 1_600, 1_100, 0, 0, {}),
    "summary_json_with_html_and_long_names": (2, 2_000_000_000, 1_500_000_000, 0, 0, {}),
}


def test_loader_loads_with_exact_counts(loaded):
    case, path, before = loaded
    t = load_trace(path)
    s = t.summary
    count, span, busy, invalid, overlong, rows = EXPECTED[case.id]
    assert (s.kernel_count, s.gpu_activity_span_ns, s.gpu_busy_union_ns) == (count, span, busy)
    if t.bundle is not None:
        k = t.bundle.kernels
        assert (invalid_kernel_count(k), overlong_kernel_count(k), t.meta.invalid_time_rows) == (
            invalid,
            overlong,
            rows,
        )
    assert_untouched(path, before)


def test_missing_short_name_falls_back_to_the_demangled_name(tmp_path):
    s = load_trace(write_case("missing_short_name", tmp_path)).summary
    assert summary_to_dict(s)["top_kernels"] == [
        ["void gemm<128>(float*)", [1, 1e-07]],
        ["void relu(float*)", [1, 5e-08]],
    ]


def test_end_before_start_rows_are_skipped_and_counted(tmp_path):
    t = load_trace(write_case("end_before_start", tmp_path))
    assert summary_to_dict(t.summary)["top_kernels"] == [["good", [2, 1.5e-07]], ["backwards", [2, 0.0]]]
    cards = {c.label: c for c in build_view(t, ViewState()).cards}
    assert cards["Invalid kernel rows"].value == "2"
    # a click on a kernel row zooms to a real instance, never to a backwards one
    rows = {r["name"]: r for r in kernel_rows(t)}
    assert (rows["good"]["start_ns"], rows["good"]["end_ns"]) == (100, 200)
    assert rows["backwards"]["start_ns"] is None


def test_centuries_are_reported_and_kept_off_the_axes(tmp_path):
    t = load_trace(write_case("durations_of_centuries", tmp_path))
    assert t.bundle.kernels["end_ns"].max() == 1_500 + CENTURY_NS  # the row is kept as the file says
    view = build_view(t, ViewState())
    cards = {c.label: c for c in view.cards}
    assert cards["Invalid kernel rows"].value == "1" and "1 longer than 24 h" in cards["Invalid kernel rows"].hint
    assert cards["NVTX ranges over 24 h"].value == "1"
    assert cards["GPU activity span"].value == "3.00 µs"
    # extent: kernels 1000..4000, the ordinary NVTX range 1000..4000 (padded by 1 %), not 100 years
    assert time_extent(t, phase_view(t, ViewState()).dispatches) == (970, 4_030)
    assert list(view.timeline.layout.xaxis.range) == pytest.approx([970e-9, 4_030e-9])
    drawn = [tr for tr in view.timeline.data if tr.name.startswith("kernels: ")]
    assert sum(len(tr.x) for tr in drawn) == 2  # the 100-year kernel is not drawn
    nvtx = {r.name: r for r in t.summary.nvtx.itertuples()}
    assert nvtx["eternal_range"].sum_ns == CENTURY_NS  # the NVTX table still says what the file says


def test_null_and_nan_times(tmp_path):
    t = load_trace(write_case("null_and_nan_times", tmp_path))
    k = t.bundle.kernels
    assert k["start_ns"].tolist() == [100, -1, -1, -1, 900] and k["end_ns"].tolist() == [200, -1, -1, -1, 1_000]
    assert t.bundle.api_calls[["start_ns", "end_ns"]].values.tolist() == [[90, 95]]
    assert t.bundle.memops[["start_ns", "end_ns"]].values.tolist() == [[210, 250]]
    r = t.bundle.nvtx_ranges  # the open range closes at the largest usable NVTX timestamp
    assert r[["name", "start_ns", "end_ns", "unclosed"]].values.tolist() == [
        ["outer", 50, 1_100, False],
        ["open", 80, 1_100, True],
    ]
    cards = {c.label: c for c in build_view(t, ViewState()).cards}
    assert cards["Invalid kernel rows"].value == "3"
    assert cards["Rows with unusable times"].value == "5"
    assert cards["Rows with unusable times"].hint.endswith("CUDA API calls 1, memcpy/memset 1, NVTX ranges 3")
    out = summary_to_dict(t.summary)
    assert out["api"] == {"cudaLaunchKernel_v7000": [1, 5e-09]}
    assert out["top_kernels"][0] == ["ok", [2, 2e-07]]


def test_cli_summarizes_the_loadable_cases(loaded, capsys):
    case, path, before = loaded
    assert main(["summarize", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    count, span, busy, *_ = EXPECTED[case.id]
    assert out["kernel_count"] == count
    assert round(out["gpu_activity_span_s"] * 1e9) == span and round(out["gpu_busy_union_s"] * 1e9) == busy
    assert_untouched(path, before)


def test_page_shows_the_loadable_cases_without_error(loaded):
    case, path, before = loaded
    response = view_response(path.parent, path.name)
    assert all("alert-error" not in kind for kind, _ in alerts_of(response))
    cards = json.dumps(response["overview"]["children"])
    invalid = EXPECTED[case.id][3]
    assert ("Invalid kernel rows" in cards) == bool(invalid)
    assert_untouched(path, before)


def test_long_names_stay_bounded_in_figures(tmp_path):
    t = load_trace(write_case("names_of_10000_characters", tmp_path))
    assert t.summary.top_kernels["name"].tolist() == [LONG_NAME]
    view = build_view(t, ViewState())
    for fig in (view.timeline, view.gantt):
        for tr in fig.data:
            for text in (tr.hovertext or ()) if not isinstance(tr.hovertext, str) else (tr.hovertext,):
                assert len(text) < 1_000
    assert view.kernel_rows[0]["name"] == LONG_NAME  # the table keeps the whole name


HOSTILE = (SCRIPT_NAME, IMG_NAME)


# Category keys (bar ``y`` values, ``categoryarray``/``tickvals``) are identifiers Plotly never shows:
# the lane labels it draws are ``ticktext``. Everything else is text Plotly renders as HTML.
NOT_RENDERED = ("uirevision", "customdata", "y", "categoryarray", "tickvals")


def _figure_texts(fig) -> list[str]:
    """Every string Plotly renders as HTML: titles, annotations, hover texts, trace names, tick labels."""
    d = fig if isinstance(fig, dict) else fig.to_plotly_json()
    out = []

    def walk(v, key=""):
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                if k not in NOT_RENDERED:
                    walk(x, k)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x, key)

    walk(d)
    return out


def test_html_names_are_escaped_in_figures_and_report(tmp_path):
    from dashboard.render.export import report_html
    from dashboard.state import ViewState

    t = load_trace(write_case("html_and_script_names", tmp_path))
    window = (900, 3_100)
    view = build_view(t, ViewState(t0_ns=window[0], t1_ns=window[1]))
    texts = [s for fig in (view.timeline, view.gantt, view.phase_figure) for s in _figure_texts(fig)]
    joined = "\n".join(texts)
    for name in HOSTILE:
        assert name not in joined
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in joined  # the kernel's hover, escaped
    assert (
        '&lt;img src=x onerror="window.__pwned=2"&gt;' in joined
    )  # the NVTX range's hover (quotes kept: Plotly shows &quot; verbatim)
    # grid rows carry the raw text (AG Grid renders cell values as text)
    assert {r["name"] for r in view.kernel_rows} == {SCRIPT_NAME, IMG_NAME}
    report = report_html(t, ViewState(t0_ns=window[0], t1_ns=window[1]))
    body = report.split("<body>", 1)[1]
    plotly_free = body.split("<script")[0] + "".join(
        part.split("</script>", 1)[1] for part in body.split("<script")[1:] if "</script>" in part
    )
    for name in HOSTILE:
        assert name not in plotly_free
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in plotly_free  # kernel table, escaped
    assert "<script>window.__pwned" not in report


def test_html_names_in_the_page_response_are_escaped_in_figures(tmp_path):
    path = write_case("html_and_script_names", tmp_path)
    response = view_response(tmp_path, path.name)
    for out in ("gantt", "timeline", "phase-analysis"):
        text = "\n".join(_figure_texts(response[out]["figure"]))
        assert "<script" not in text and "<img" not in text
    assert {r["name"] for r in response["kernel-table"]["rowData"]} == {SCRIPT_NAME, IMG_NAME}


def test_a_file_name_with_html_is_text_in_titles(tmp_path):
    path = write_case("end_before_start", tmp_path).rename(tmp_path / "<b>x<img src=y>.sqlite")
    view = build_view(load_trace(path), ViewState())
    assert "&lt;b&gt;x&lt;img src=y&gt;.sqlite" in view.gantt.layout.title.text
    assert "<img" not in "\n".join(_figure_texts(view.gantt) + _figure_texts(view.timeline))


# ---- a file locked by another writer ---------------------------------------------------------------------------


@pytest.fixture(
    params=["exclusive_lock_nothing_written", "rollback_transaction_in_progress", "wal_changes_not_checkpointed"]
)
def writer(request, tmp_path):
    """A second sqlite3 connection writing the export while we read it: (path, writer kind)."""
    path = write_valid(tmp_path)
    con = sqlite3.connect(path, isolation_level=None)
    if request.param == "wal_changes_not_checkpointed":
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA wal_autocheckpoint=0")
        con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid > 1000")  # committed, only in -wal
        con.execute("BEGIN IMMEDIATE")
    else:
        con.execute("BEGIN EXCLUSIVE")
        if request.param == "rollback_transaction_in_progress":
            con.execute("INSERT INTO StringIds VALUES (99999, 'uncommitted')")  # creates NAME-journal
    yield path, request.param
    con.execute("ROLLBACK")
    con.close()


def test_a_file_being_written_is_refused_or_read_as_committed(writer, capsys):
    path, kind = writer
    listing = sorted(p.name for p in path.parent.iterdir())  # the writer's own side files, if any
    if kind == "exclusive_lock_nothing_written":  # the file alone is consistent: read it
        assert load_trace(path).summary.kernel_count == 2_000
        assert main(["summarize", str(path)]) == 0
        assert json.loads(capsys.readouterr().out)["kernel_count"] == 2_000
        assert all("alert-error" not in k for k, _ in alerts_of(view_response(path.parent, path.name)))
    else:
        side = "valid.sqlite-journal" if kind == "rollback_transaction_in_progress" else "valid.sqlite-wal"
        expected = f"valid.sqlite: another program is writing this SQLite file, or stopped while writing it ({side}"
        with pytest.raises(TraceError, match=re.escape(expected)):
            load_trace(path)
        assert main(["summarize", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("tracedash: error: " + expected) and err.count("\n") == 1
        ((kind_, text),) = alerts_of(view_response(path.parent, path.name))
        assert "alert-error" in kind_ and text.startswith(expected)
    assert sorted(p.name for p in path.parent.iterdir()) == listing  # we added no side file


def test_a_file_once_written_is_read_in_full_after_the_writer_closes(tmp_path):
    """After the WAL writer checkpoints and closes, the deletion it made is what is read."""
    path = write_valid(tmp_path)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid > 1000")
    con.close()  # the last connection checkpoints and removes -wal/-shm
    assert sorted(p.name for p in tmp_path.iterdir()) == ["valid.sqlite"]
    assert load_trace(path).summary.kernel_count == 1_000


def test_lane_labels_are_elided_before_escaping():
    """An elided lane label never cuts an HTML entity in two (Plotly would show '&l' or '&g')."""
    import html as html_mod

    from dashboard.figures.lanes import _short_label

    label = "GPU 0 · " + SCRIPT_NAME
    short = _short_label(label)
    assert short == "GPU 0 · &lt;script&gt;w…__pwned=1&lt;/script&gt;"
    for n in range(30, 60):
        raw = ("<>&" * 30)[:n]
        assert html_mod.escape(html_mod.unescape(_short_label(raw))) == _short_label(raw)
        assert len(html_mod.unescape(_short_label(raw))) <= 36


def test_summary_json_names_are_text_in_figures_and_whole_in_tables(tmp_path):
    t = load_trace(write_case("summary_json_with_html_and_long_names", tmp_path))
    view = build_view(t, ViewState())
    texts = "\n".join(s for fig in (view.timeline, view.gantt, view.phase_figure) for s in _figure_texts(fig))
    for name in HOSTILE:
        assert name not in texts
    assert "&lt;img src=x onerror=\"window.__pwned=2\"&gt;" in texts  # NVTX bar label and dispatch hover
    assert max(len(x) for x in texts.split("\n")) < 2_000  # the 10,000-character name is cut in figures
    assert [r["name"] for r in view.kernel_rows] == [SCRIPT_NAME, IMG_NAME]
    assert {r["raw_name"] for r in view.api_rows} == {SCRIPT_NAME, LONG_NAME}
