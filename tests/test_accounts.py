"""Every input row accounted for (issue 12 §1): RowAccounts of the nsys SQLite loader, the
launch-without-kernels class (possible capture gap), nvprof databases, and where the counts show:
overview, ``summarize`` (``warnings`` + stderr) and ``inspect``."""

import json
import logging
import shutil
import sqlite3

import pytest

from dashboard.analysis.summary import summary_to_dict
from dashboard.cli import main
from dashboard.data.cache import TraceCache
from dashboard.data.trace import load_trace
from dashboard.errors import TraceFormatError
from dashboard.loaders import load_nsys_sqlite
from dashboard.model import RowAccount, input_warnings
from dashboard.render import overview_cards

from factories import GLOBAL_TID_1, write_nsys_sqlite
from paths import DATA, nsys_trace

CASE = DATA / "cases" / "launch_without_kernels" / "f_launch_no_kernels.sqlite"
GAP_200 = "pid 200: 50 launches, 0 kernels (possible capture gap)"


def tid(pid: int, t: int = 1) -> int:
    return (1 << 48) | (pid << 24) | t


# --- launch_without_kernels (handed case, real values) -------------------------------------------------


@pytest.mark.parametrize("lean", [False, True])
def test_case_launch_without_kernels_names_the_process(lean):
    b = load_nsys_sqlite(CASE, lean=lean)
    assert b.meta.launches_by_pid == ((100, 3, 3), (200, 50, 0))
    assert b.meta.warnings == (GAP_200,)
    assert b.meta.accounts == (RowAccount("kernels", 3, 3), RowAccount("CUDA API calls", 53, 53))


def test_case_launch_without_kernels_in_summarize_inspect_and_overview(tmp_path, capsys):
    out = tmp_path / "s.json"
    assert main(["summarize", str(CASE), "-o", str(out), "--no-cache"]) == 0
    assert json.loads(out.read_text())["warnings"] == [GAP_200]
    assert capsys.readouterr().err == f"tracedash: warning: {CASE.name}: {GAP_200}\n"
    assert main(["inspect", str(CASE), "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "  pid 100                 3 launches          3 executed\n" in text
    assert "  pid 200                50 launches          0 executed\n" in text
    assert f"warnings (1):\n  {GAP_200}\n" in text
    assert main(["inspect", "--json", str(CASE), "--no-cache"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["processes"] == [
        {"pid": 100, "launches": 3, "gpu_executions": 3},
        {"pid": 200, "launches": 50, "gpu_executions": 0},
    ]
    assert info["warnings"] == [GAP_200]
    cards = {c.label: c for c in overview_cards(load_trace(CASE))}
    assert cards["Input warnings"].hint == GAP_200
    assert (cards["Input rows"].value, cards["Input rows"].hint) == (
        "56",
        "read per kind: kernels 3 · CUDA API calls 53; launch calls / GPU executions per process: "
        "pid 100 3/3, pid 200 50/0",
    )


def test_launch_gap_class_driver_and_graph_launches_without_a_kernel_table(tmp_path):
    """Another member: no kernel table at all (nsys creates tables only for data); pid 300 launches
    through the driver API and CUDA graphs; pid 100 launches graphs traced at graph level (GPU
    executions in GRAPH_TRACE: no gap); cudaLaunchHostFunc is not a GPU launch."""
    runtime = (
        [
            {"start": 10 + i, "end": 11 + i, "name": "cuLaunchKernel", "eventClass": 1, "globalTid": tid(300)}
            for i in range(4)
        ]
        + [{"start": 30 + i, "end": 31 + i, "name": "cudaGraphLaunch_v10000", "globalTid": tid(300)} for i in range(2)]
        + [{"start": 40, "end": 41, "name": "cudaLaunchHostFunc_v10000", "globalTid": tid(400)}]
        + [
            {"start": 50 + i, "end": 51 + i, "name": "cudaGraphLaunch_v10000", "globalTid": GLOBAL_TID_1}
            for i in range(2)
        ]
    )
    path = write_nsys_sqlite(
        tmp_path / "gap.sqlite", runtime=runtime, graph_trace=[{"start": 60, "end": 90}, {"start": 95, "end": 99}]
    )
    for lean in (False, True):
        b = load_nsys_sqlite(path, lean=lean)
        assert b.meta.launches_by_pid == ((100, 2, 2), (300, 6, 0))
        assert b.meta.warnings == ("pid 300: 6 launches, 0 kernels (possible capture gap)",)
        assert b.meta.gpu_activity_missing == ""  # pid 100's graphs ran: busy is measured
    s = summary_to_dict(load_trace(path).summary)
    assert s["kernel_count"] == 0 and s["warnings"] == [
        "pid 300: 6 launches, 0 kernels (possible capture gap)",
        "no kernel rows (only CUDA graph launches): the GPU span, busy union and idle count kernel rows, so they are 0 "
        "here; the dashboard's other busy sources count the rest",
    ]


def test_launches_and_no_gpu_execution_at_all_make_busy_unknown(tmp_path):
    """Another member: two processes launch, the export holds no kernel table and no graph trace: busy is
    unknown (n/a), not an idle GPU; both processes are named."""
    runtime = [
        {"start": 10 + i, "end": 11 + i, "name": "cudaLaunchKernel_v7000", "globalTid": tid(p)}
        for p in (100, 200)
        for i in range(3)
    ]
    path = write_nsys_sqlite(tmp_path / "none.sqlite", runtime=runtime)
    for lean in (False, True):
        meta = load_nsys_sqlite(path, lean=lean).meta
        assert meta.warnings == (
            "pid 100: 3 launches, 0 kernels (possible capture gap)",
            "pid 200: 3 launches, 0 kernels (possible capture gap)",
        )
        assert meta.gpu_activity_missing == (
            "no kernel activity although 6 launch calls were recorded (possible capture gap: no kernel or CUDA "
            "graph execution in the export); GPU busy, idle and utilisation are unknown (n/a)"
        )
    assert load_nsys_sqlite(CASE).meta.gpu_activity_missing == ""  # pid 100's kernels ran


def test_kernels_of_unknown_process_silence_the_per_process_check(tmp_path):
    """Kernel rows without globalPid cannot be given to a process: no per-process gap is claimed."""
    path = write_nsys_sqlite(
        tmp_path / "nopid.sqlite",
        kernels=[{"start": 100, "end": 200, "globalPid": None}],
        runtime=[{"start": 10, "end": 20, "name": "cudaLaunchKernel_v7000"}],
    )
    b = load_nsys_sqlite(path)
    assert b.meta.launches_by_pid == ((100, 1, 0),) and b.meta.warnings == ()


# --- accounts per kind ------------------------------------------------------------------------------------


def test_accounts_of_a_fixture_with_every_rule(tmp_path):
    path = write_nsys_sqlite(
        tmp_path / "t.sqlite",
        kernels=[{"start": 100, "end": 200}, {"start": 0, "end": 0}],
        runtime=[
            {"start": 10, "end": 20, "name": "cudaLaunchKernel_v7000"},
            {"start": 10, "end": 20, "name": "cudaLaunchKernel", "eventClass": 67},
            {"start": 30, "end": 25, "name": "cudaMemcpy_v3020"},
        ],
        nvtx=[
            {"start": 5, "end": 50, "eventType": 59, "text": "r"},
            {"start": 60, "end": 50, "eventType": 59, "text": "backwards"},
            {"start": 7, "end": None, "eventType": 34, "text": "m"},
            {"start": -5, "end": None, "eventType": 75, "text": "dom", "domainId": 1},
            {"start": 8, "end": 9, "eventType": 200, "text": "future event type"},
        ],
        memcpy=[{"start": 300, "end": 310}, {"start": 320, "end": 310}],
        graph_trace=[{"start": 400, "end": 500}],
    )
    b = load_nsys_sqlite(path)
    bad = "with unusable times (NULL, end < start or beyond 2^62 ns)"
    assert b.meta.accounts == (
        RowAccount("kernels", 2, 2),
        RowAccount("CUDA API calls", 3, 1, (("CUDA backtrace duplicates (eventClass 67)", 1), (bad, 1))),
        RowAccount("NVTX ranges", 2, 1, ((bad, 1),)),
        RowAccount("NVTX marks", 1, 1),
        RowAccount("NVTX metadata", 2, 1, (), 1),
        RowAccount("memcpy/memset", 2, 1, ((bad, 1),)),
        RowAccount("CUDA graph launches", 1, 1),
    )
    for a in b.meta.accounts:
        assert a.read == a.loaded + a.skipped_total + a.unrecognised
    assert input_warnings(b.meta) == (
        "CUDA API calls: 2 of 3 rows not loaded: 1 CUDA backtrace duplicates (eventClass 67); 1 " + bad,
        "NVTX ranges: 1 of 2 rows not loaded: 1 " + bad,
        "NVTX metadata: 1 of 2 rows not loaded: 1 not recognised",
        "memcpy/memset: 1 of 2 rows not loaded: 1 " + bad,
        "kernels: 1 without timestamps (start = end = 0), left out of span and busy",
    )


def test_unusable_table_is_not_recognised_not_a_zero(tmp_path):
    """A table of a known kind whose required columns are missing: every row counted as not recognised."""
    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels=[{"start": 100, "end": 200}])
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (begin_ns INTEGER, finish_ns INTEGER)")
        con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?, ?)", [(1, 2), (3, 4)])
    con.close()
    b = load_nsys_sqlite(path)
    assert RowAccount("memcpy/memset", 2, 0, (), 2) in b.meta.accounts
    assert (
        "memcpy/memset: 2 of 2 rows not loaded: 2 not recognised"
        in summary_to_dict(load_trace(path).summary)["warnings"]
    )


def test_backtrace_trace_accounts_and_overview_card():
    t = load_trace(nsys_trace("nsys2022.2_a100_saxpy_mpi_backtraces.sqlite"))
    api = next(a for a in t.meta.accounts if a.kind == "CUDA API calls")
    assert api == RowAccount("CUDA API calls", 95, 57, (("CUDA backtrace duplicates (eventClass 67)", 38),))
    card = {c.label: c for c in overview_cards(t)}["Input rows"]
    assert card.value == "139"
    assert "CUDA API calls 95 (38 not loaded: 38 CUDA backtrace duplicates (eventClass 67))" in card.hint


def test_accounts_survive_the_cache(tmp_path):
    cache = TraceCache(tmp_path / "c")
    first = load_trace(CASE, cache=cache)
    second = load_trace(CASE, cache=cache)
    assert second.meta == first.meta and second.meta.accounts[1] == RowAccount("CUDA API calls", 53, 53)
    assert second.meta.launches_by_pid == ((100, 3, 3), (200, 50, 0))


def test_summarize_then_full_load_logs_no_unreadable_cache_entry(tmp_path, caplog):
    """`summarize` stores its output in the trace's cache entry before any frames exist; the first
    full load then must not call that entry unreadable (it did: '... meta.json: No such file')."""
    cache_dir = tmp_path / "c"
    trace = tmp_path / CASE.name
    shutil.copy(CASE, trace)
    assert main(["summarize", str(trace), "--cache-dir", str(cache_dir), "-o", str(tmp_path / "s.json")]) == 0
    with caplog.at_level(logging.WARNING, logger="dashboard.data.cache"):
        t = load_trace(trace, cache=TraceCache(cache_dir))
        again = TraceCache(cache_dir).load_bundle(trace, lambda p: pytest.fail("frames must now be cached"))
    assert caplog.records == []
    assert again[1] is True and again[0].meta == t.meta
    entry = next(TraceCache(cache_dir).entries_dir.iterdir())
    assert sum(1 for f in entry.iterdir() if f.name.startswith("summary-")) == 1  # summarize output kept


# --- nvprof databases ------------------------------------------------------------------------------------


def write_nvprof(path, *, concurrent=True, string_table=True):
    """An nvprof export (nvprof --export-profile): CUPTI tables with nvprof's own columns."""
    con = sqlite3.connect(path)
    if string_table:
        con.execute("CREATE TABLE StringTable (_id_ INTEGER PRIMARY KEY, value TEXT NOT NULL)")
        con.execute("INSERT INTO StringTable VALUES (1, 'saxpy')")
    kernel = "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL" if concurrent else "CUPTI_ACTIVITY_KIND_KERNEL"
    con.execute(
        f"CREATE TABLE {kernel} (_id_ INTEGER PRIMARY KEY, start INT NOT NULL, end INT NOT NULL, "
        "deviceId INT, contextId INT, streamId INT, correlationId INT, name INT NOT NULL)"
    )
    con.execute(f"INSERT INTO {kernel} VALUES (1, 1500000000000000100, 1500000000000000200, 0, 1, 7, 5, 1)")
    con.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (_id_ INTEGER PRIMARY KEY, cbid INT NOT NULL, "
        "start INT NOT NULL, end INT NOT NULL, processId INT, threadId INT, correlationId INT, returnValue INT)"
    )
    con.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1, 211, 1500000000000000000, "
        "1500000000000000050, 42, 42, 5, 0)"
    )
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize(
    "concurrent, string_table",
    [(True, True), (False, True), (False, False)],
    ids=["nvvp-concurrent-kernels", "serial-kernel-table", "trimmed-runtime-by-cbid"],
)
def test_nvprof_database_is_refused_as_such(tmp_path, capsys, concurrent, string_table):
    path = write_nvprof(
        tmp_path / ("run.nvvp" if concurrent else "run.sqlite"), concurrent=concurrent, string_table=string_table
    )
    with pytest.raises(TraceFormatError, match="an nvprof database, not an nsys export"):
        load_nsys_sqlite(path)
    for argv in (["summarize", str(path), "--no-cache"], ["inspect", str(path), "--no-cache"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"tracedash: error: {path.name}: an nvprof database, not an nsys export (tables ")
        assert ("StringTable" in err) == string_table and "nsys profile" in err and err.count("\n") == 1


# --- files that are neither: an unfinished .qdstrm capture ---------------------------------------------


@pytest.mark.parametrize(
    "name, content",
    [
        ("rep.qdstrm", b"\x00\x01QDSTRM stream bytes"),  # what nsys leaves when it stops before importing
        ("Run 2.QDSTRM", b""),  # empty, upper-case suffix: the same sentence
        ("rep1.qdstrm", b"SQLite format 3\x00" + b"\x00" * 200),  # whatever it holds, a capture stream is not read
    ],
)
def test_unfinished_qdstrm_capture_gets_one_specific_sentence(tmp_path, capsys, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    rep = name[: -len(".qdstrm")] + ".nsys-rep"
    for argv in (["summarize", str(path), "--no-cache"], ["inspect", str(path), "--no-cache"]):
        assert main(argv) == 2
        assert capsys.readouterr().err == (
            f"tracedash: error: {name}: an unfinished Nsight Systems capture (.qdstrm: the raw stream nsys writes "
            "while recording, left when nsys stopped before importing it into a report); import it with the "
            f"QdstrmImporter of the Nsight Systems install (host-linux-x64/QdstrmImporter -i {name}), then open "
            f"{rep} or its SQLite export (nsys export --type sqlite {rep})\n"
        )


# --- §5: help, links for another trace ----------------------------------------------------------------


def _options(command):
    from dashboard.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices[command]


@pytest.mark.parametrize("command", ["summarize", "serve", "inspect", "export", "report", "diff", "cache", "findings"])
def test_every_help_lists_the_inputs_and_every_default(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    if command == "cache":
        assert "inputs: none (acts on the cache folder" in text
    else:
        for what in (
            "nsys SQLite export",
            "Nsight Systems report (.nsys-rep/.qdrep)",
            "PyTorch profiler (Kineto) trace (.json, .json.gz",
            "tracedash summary JSON",
        ):
            assert what in text
    parser = _options(command)
    helps = {}
    for action in parser._actions:
        if action.option_strings and action.dest != "help":
            helps[action.option_strings[-1]] = " ".join(parser._get_formatter()._expand_help(action).split())
    for option, shown in helps.items():
        assert "default" in shown or shown.endswith("(required)"), (command, option, shown)
    expected = {
        "serve": {
            "--port": "(default 8050)",
            "--no-upload": "(default: off)",
            "--ranks": "(default: none: no ranks view)",
        },
        "export": {
            "--figure": "(default timeline)",
            "--output": "image file to write (required)",
            "--no-cache": "(default: off)",
        },
        "inspect": {"--json": "(default: off)"},
    }.get(command, {})
    for option, text in expected.items():
        assert text in helps[option]


def test_export_and_report_refuse_a_link_made_for_another_trace(tmp_path, capsys):
    from dashboard.app.trace_files import trace_id

    trace = tmp_path / CASE.name
    shutil.copy(CASE, trace)
    other = trace_id(nsys_trace("nsys2024.6_h100_nvfuser.sqlite"))
    link = f"http://127.0.0.1:8050/?trace={other.replace('@', '%40')}&tab=gaps&v=1"
    expected = (
        f"tracedash: error: the link was made for trace '{other}', not for {trace.name} ({trace_id(trace)}): "
        "pass the trace it was made for, or remove 'trace=' from the link to apply its settings to this file\n"
    )
    for argv in (
        ["export", str(trace), "--url", link, "-o", str(tmp_path / "v.svg"), "--no-cache"],
        ["report", str(trace), "--url", link, "-o", str(tmp_path / "r.html"), "--no-cache"],
    ):
        assert main(argv) == 2
        assert capsys.readouterr().err == expected
    assert not (tmp_path / "v.svg").exists() and not (tmp_path / "r.html").exists()
    # the same name with other content is another trace; a renamed copy (same hash) is the same one
    same_name = f"?trace={CASE.name}%40{'0' * 8}&v=1"
    assert main(["report", str(trace), "--url", same_name, "-o", str(tmp_path / "r.html"), "--no-cache"]) == 2
    capsys.readouterr()
    renamed = tmp_path / "renamed.sqlite"
    shutil.copy(CASE, renamed)
    mine = f"?trace={trace_id(trace).replace('@', '%40')}&v=1"
    assert main(["report", str(renamed), "--url", mine, "-o", str(tmp_path / "r.html"), "--no-cache"]) == 0
    # a bare file name, as the page takes it (QA: "not a trace id"): this file's name is this file, another is not
    bare = f"?trace={CASE.name}&v=1"
    assert main(["report", str(trace), "--url", bare, "-o", str(tmp_path / "r.html"), "--no-cache"]) == 0
    assert "warning" not in capsys.readouterr().err
    other = "?trace=other.sqlite&v=1"
    assert main(["export", str(trace), "--url", other, "-o", str(tmp_path / "v.svg"), "--no-cache"]) == 2
    assert capsys.readouterr().err == (
        f"tracedash: error: the link was made for the file 'other.sqlite', not for {trace.name}: pass that file, or "
        "remove 'trace=' from the link to apply its settings to this file\n"
    )
    short = mine[: mine.index("%40") + 3 + 8] + "&v=1"  # its version cut to 8 hex digits by hand, as the page takes
    assert main(["report", str(renamed), "--url", short, "-o", str(tmp_path / "r.html"), "--no-cache"]) == 0
    assert (tmp_path / "r.html").stat().st_size > 0


def test_ranks_view_adds_up_accounts_and_names_the_rank_of_each_warning():
    from dashboard.analysis.ranks import merge_ranks

    a = load_nsys_sqlite(CASE)
    b = load_nsys_sqlite(nsys_trace("nsys2022.2_a100_saxpy_mpi_backtraces.sqlite"))
    m = merge_ranks([a, b], ["a.sqlite", "b.sqlite"]).meta
    assert m.accounts[:2] == (
        RowAccount("kernels", 8, 8),
        RowAccount("CUDA API calls", 148, 110, (("CUDA backtrace duplicates (eventClass 67)", 38),)),
    )
    assert f"rank 0 (a.sqlite): {GAP_200}" in m.warnings


def test_page_overview_shows_the_capture_gap_and_the_input_rows(tmp_path):
    """What a user sees: the served page's overview (the view callback's output) names pid 200."""
    from test_bad_inputs import view_response

    shutil.copy(CASE, tmp_path / CASE.name)
    overview = json.dumps(view_response(tmp_path, CASE.name)["overview"]["children"], ensure_ascii=False)
    assert "Input warnings" in overview and GAP_200 in overview
    assert "Input rows" in overview and "pid 200 50/0" in overview


def test_inspect_lists_tables_no_loader_reads(capsys):
    trace = nsys_trace("nsys2024.5_a100_cloverleaf.sqlite")
    assert main(["inspect", "--json", str(trace), "--no-cache"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["unread"]["OSRT_API"] == 1831 and info["unread"]["CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"] == 1312
    assert not set(info["unread"]) & {
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        "StringIds",
        "META_DATA_EXPORT",
    }
    assert [a["kind"] for a in info["accounts"]] == ["kernels", "CUDA API calls", "memcpy/memset"]
    assert main(["inspect", str(trace), "--no-cache"]) == 0
    assert "  OSRT_API                                        1,831 rows\n" in capsys.readouterr().out


def test_summarize_several_files_repeats_each_files_warnings_on_stderr(tmp_path, capsys, monkeypatch):
    import functools

    import dashboard.data.multirank

    monkeypatch.setattr(
        dashboard.data.multirank,
        "summarize_many",
        functools.partial(dashboard.data.multirank.summarize_many, processes=False),
    )
    other = nsys_trace("nsys2024.6_h100_nvfuser.sqlite")
    assert main(["summarize", str(CASE), str(other), "--workers", "1", "--no-cache", "-o", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert f"tracedash: warning: {CASE.name}: {GAP_200}\n" in err and err.count("tracedash: warning:") == 1
    written = json.loads((tmp_path / "out" / f"{CASE.name}.summary.json").read_text())
    assert written["warnings"] == [GAP_200]


def test_readme_says_how_to_change_host_and_port():
    from paths import ROOT

    # the link's query keys: tests/test_state.py keeps the generated table in step with the field table
    assert "make run HOST=0.0.0.0 PORT=9000" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_launch_api_names():
    from dashboard.loaders.nsys_tables import LAUNCH_API

    launches = [
        "cudaLaunchKernel_v7000",
        "cudaLaunchKernel_ptsz_v7000",
        "cudaLaunchKernelExC_v11060",
        "cudaLaunchCooperativeKernel_v9000",
        "cudaLaunchCooperativeKernelMultiDevice_v9000",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cuLaunchCooperativeKernel",
        "cudaGraphLaunch_v10000",
        "cudaGraphLaunch_ptsz_v10000",
        "cuGraphLaunch",
        "cudaLaunch_v3020",
        "cuLaunch",
        "cuLaunchGrid",
        "cuLaunchGridAsync",
        "cudaLaunchKernel",
    ]
    others = [
        "cudaLaunchHostFunc_v10000",
        "cuLaunchHostFunc",
        "cudaMemcpyAsync_v3020",
        "cudaGraphInstantiate_v10000",
        "cudaStreamSynchronize_v3020",
        "",
    ]
    assert [n for n in launches if not LAUNCH_API.match(n)] == []
    assert [n for n in others if LAUNCH_API.match(n)] == []


def test_summary_json_whose_fields_contradict_each_other_is_flagged(tmp_path, seed_dict, capsys):
    """A summary whose content does not fit what it claims: one warning per contradiction, on stderr too."""
    bad = {
        **seed_dict,
        "gpu_idle_within_span_s": 1.0,
        "kernel_count": 100,
        "graph_node_kernel_count": 101,
        "dispatch": {**seed_dict["dispatch"], "CG_DISPATCH:extra": 2},
    }
    path = tmp_path / "bad.summary.json"
    path.write_text(json.dumps(bad))
    assert main(["summarize", str(path), "--no-cache"]) == 0
    out, err = capsys.readouterr()
    expected = [
        "summary JSON: gpu_idle_within_span_s (1.0 s) is not span - busy (0.458023615 s); span - busy is used",
        "summary JSON: top_kernels hold 63,703 kernels, more than kernel_count (100)",
        "summary JSON: graph_node_kernel_count (101) exceeds kernel_count (100)",
        "summary JSON: dispatch counts add up to 140 but dispatch_timeline has 138 entries",
    ]
    assert json.loads(out)["warnings"] == expected
    assert err == "".join(f"tracedash: warning: bad.summary.json: {w}\n" for w in expected)
    assert json.loads(out)["gpu_idle_within_span_s"] == pytest.approx(0.458023615, abs=1e-9)
    zero = {**seed_dict, "kernel_count": 0, "top_kernels": [], "graph_node_kernel_count": 0}
    path.write_text(json.dumps(zero))
    assert load_trace(path).summary.warnings == (
        "summary JSON: kernel_count is 0 but the GPU activity span is 17.45799776 s and busy 16.999974145 s",
    )


def test_page_alert_for_an_unfinished_qdstrm_capture(tmp_path):
    from test_app import update_payload

    from dashboard.app import create_app

    path = tmp_path / "rep.qdstrm"
    path.write_bytes(b"partial stream")
    app = create_app([str(path)])
    (tid,) = app.server.config["TRACE_STORE"].ids()
    resp = app.server.test_client().post("/_dash-update-component", json=update_payload(tid))
    assert resp.status_code == 200
    alerts = []

    def walk(node):  # every alert component in the callback's response, wherever the view puts it
        if isinstance(node, dict):
            props = node.get("props", {})
            if "alert" in str(props.get("className", "")):
                alerts.append((props["className"], props.get("children")))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(resp.get_data(as_text=True))["response"])
    assert [c for c, text in alerts if str(text).startswith("rep.qdstrm: an unfinished Nsight Systems capture")] == [
        "alert alert-error"
    ]
