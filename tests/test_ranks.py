"""Multi-rank runs: merge_ranks, the per-rank table, multi-file summarize on Dask, the ranks view."""

import json

import pytest

from dashboard.analysis.launches import kernel_launches
from dashboard.analysis.ranks import RANK_TABLE, RANKS_FORMAT, RANKS_NOTICE, merge_ranks, rank_table
from dashboard.cli import main
from dashboard.data.cache import TraceCache
from dashboard.data.multirank import (
    FileSummary,
    format_rank_table,
    load_ranks,
    summaries_of,
    summarize_many,
    summary_text,
)
from dashboard.data.trace import load_trace
from dashboard.errors import TraceFormatError
from dashboard.loaders import load_nsys_sqlite
from dashboard.model import KERNELS
from dashboard.render import build_view
from dashboard.state import ViewState

from factories import GLOBAL_TID_1, write_nsys_sqlite
from paths import DATA, nsys_trace

MARK = "CG_DISPATCH:actual=16:mode=NONE:padded=16"
PAIR = [nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"), nsys_trace("nsys2026.2_2gpu_nccl_after.sqlite")]


@pytest.fixture
def thread_cluster(monkeypatch):
    """The CLI's local Dask cluster with thread workers: a process cluster's workers and nannies each import
    the package (~3 CPU-s per cluster); the tests named ``*local_cluster*`` keep the real process path."""
    import dashboard.data.multirank as multirank

    local_client = multirank._local_client
    started = []
    monkeypatch.setattr(multirank, "_local_client", lambda n, processes: started.append(n) or local_client(n, False))
    yield
    assert started, "the CLI summarised on no local cluster"


@pytest.fixture(scope="module")
def rank_files(tmp_path_factory):
    """Two small ranks with the same pid/tid and correlation ids (as two hosts would have)."""
    d = tmp_path_factory.mktemp("ranks")
    r0 = write_nsys_sqlite(
        d / "r0.sqlite",
        gpus={0: "NVIDIA A100"},
        kernels=[
            {"start": 100, "end": 300, "shortName": "gemm", "correlationId": 1},
            {"start": 250, "end": 400, "shortName": "gemm", "correlationId": 2},
        ],
        runtime=[
            {"start": 50, "end": 60, "name": "cudaLaunchKernel_v7000", "correlationId": 1},
            {"start": 70, "end": 80, "name": "cudaLaunchKernel_v7000", "correlationId": 2},
        ],
        nvtx=[
            {"start": 40, "end": 500, "eventType": 59, "text": "step"},
            {"start": 45, "end": None, "eventType": 34, "text": MARK},
        ],
    )
    r1 = write_nsys_sqlite(
        d / "r1.sqlite",
        gpus={0: "NVIDIA H100", 1: "NVIDIA H100"},
        kernels=[
            {"start": 1000, "end": 1600, "shortName": "attn", "correlationId": 1},
            {"start": 1100, "end": 1300, "shortName": "gemm", "correlationId": 2, "deviceId": 1},
        ],
        runtime=[
            {"start": 900, "end": 950, "name": "cudaLaunchKernel_v7000", "correlationId": 1},
            {"start": 960, "end": 990, "name": "cudaLaunchKernel_v7000", "correlationId": 2},
        ],
        nvtx=[
            {"start": 800, "end": 1700, "eventType": 59, "text": "step"},
            {"start": 850, "end": None, "eventType": 34, "text": MARK},
        ],
    )
    return r0, r1


def test_merge_ranks_keys_rows_by_a_real_rank_column_and_keeps_own_origins(rank_files):
    merged = merge_ranks([load_nsys_sqlite(p) for p in rank_files], ["r0.sqlite", "r1.sqlite"])
    k = merged.kernels
    assert merged.meta.format == RANKS_FORMAT and merged.meta.source == "r0.sqlite + r1.sqlite"
    assert merged.meta.rank_devices == {0: (0, 0), 1: (1, 0), 2: (1, 1)}
    assert merged.meta.gpus == {
        0: "rank 0 · GPU 0 · NVIDIA A100",
        1: "rank 1 · GPU 0 · NVIDIA H100",
        2: "rank 1 · GPU 1 · NVIDIA H100",
    }
    assert k["rank"].tolist() == [0, 0, 1, 1] and k["device_id"].tolist() == [0, 0, 1, 2]
    # each rank on its own session timeline: times unchanged
    assert k["start_ns"].tolist() == [100, 250, 1000, 1100] and k["end_ns"].tolist() == [300, 400, 1600, 1300]
    assert k["short_name"].astype(str).tolist() == ["gemm", "gemm", "attn", "gemm"]
    assert list(k.columns) == [*KERNELS, "rank"] and k["device_id"].dtype == "int32" and k["rank"].dtype == "int64"
    for frame in (merged.api_calls, merged.nvtx_ranges, merged.nvtx_marks, merged.memops, merged.graph_launches):
        assert frame.columns[-1] == "rank" and frame["rank"].dtype == "int64"
    assert merged.nvtx_ranges["rank"].tolist() == [0, 1]
    singles = [load_nsys_sqlite(p).meta.accounts for p in rank_files]
    assert [(a.kind, a.read, a.loaded) for a in merged.meta.accounts] == [
        (a.kind, a.read + b.read, a.loaded + b.loaded) for a, b in zip(*singles)
    ]


def test_merge_ranks_ids_never_collide(rank_files):
    merged = merge_ranks([load_nsys_sqlite(p) for p in rank_files])
    # both ranks ran pid 100: two processes, told apart through the explicit table
    assert merged.meta.rank_pids == {1: (0, 100), 2: (1, 100)}
    assert merged.kernels["pid"].tolist() == [1, 1, 2, 2]
    assert "global_pid" not in merged.kernels  # the frames carry the process as ``pid`` only
    tid = GLOBAL_TID_1 & 0xFFFFFF
    assert merged.api_calls["global_tid"].tolist() == [(1 << 24) | tid] * 2 + [(2 << 24) | tid] * 2
    assert merged.nvtx_ranges["pid"].tolist() == [1, 2]
    assert merged.nvtx_marks["name"].astype(str).tolist() == [f"rank 0 · {MARK}", f"rank 1 · {MARK}"]
    # correlation ids 1 and 2 exist on both ranks: each kernel still joins its own rank's launch
    pairs = kernel_launches(merged.kernels, merged.api_calls)
    assert sorted(zip(pairs["kernel_index"], pairs["api_index"])) == [(0, 0), (1, 1), (2, 2), (3, 3)]


def test_merge_ranks_uses_the_ranks_given_and_rejects_bad_input(rank_files):
    with pytest.raises(TraceFormatError, match="no traces"):
        merge_ranks([])
    b = load_nsys_sqlite(rank_files[0])
    with pytest.raises(TraceFormatError, match="two traces are given the same rank: 3, 3"):
        merge_ranks([b, b], ["a", "b"], [3, 3])
    wide = b.__class__(**{**b.__dict__, "kernels": b.kernels.assign(device_id=100)})  # any device id is fine
    merged = merge_ranks([b, wide], ["a", "b"], [5, 2])
    assert merged.meta.rank_devices == {0: (5, 0), 1: (2, 0), 2: (2, 100)}
    assert merged.kernels["rank"].tolist() == [5, 5, 2, 2]


def test_each_ranks_nvtx_overlap_counts_only_its_own_gpu_work(rank_files):
    from dashboard.analysis.ranks import rank_nvtx_stats

    merged = merge_ranks([load_nsys_sqlite(p) for p in rank_files])
    stats = rank_nvtx_stats(merged)
    # rank 0 "step" [40, 500) covers its kernels [100, 400): 300 ns; rank 1 "step" [800, 1700) covers
    # its [1000, 1600): 600 ns. Same-named ranges of two ranks stay two rows.
    assert stats[["name", "count", "sum_ns", "gpu_overlap_ns"]].values.tolist() == [
        ["rank 0 · step", 1, 460, 300],
        ["rank 1 · step", 1, 900, 600],
    ]
    shifted = load_nsys_sqlite(rank_files[1])
    late = shifted.__class__(**{**shifted.__dict__, "nvtx_ranges": shifted.nvtx_ranges.assign(start_ns=0)})
    both = rank_nvtx_stats(merge_ranks([load_nsys_sqlite(rank_files[0]), late]))
    # rank 1's "step" now spans [0, 1700): rank 0's kernels [100, 400) are on another clock, never
    # counted (against the union of both ranks' kernels it would read 900)
    assert both[["name", "gpu_overlap_ns"]].values.tolist() == [["rank 0 · step", 300], ["rank 1 · step", 600]]


def test_rank_table_exact_values_and_slowest(rank_files):
    cache = TraceCache(enabled=False)
    texts = [summary_text(p, "CG_DISPATCH", cache) for p in rank_files]
    summaries = summaries_of([FileSummary(p, t, None) for p, t in zip(rank_files, texts)])
    table = rank_table([summaries[0], None, summaries[1]], ["r0.sqlite", "bad.sqlite", "r1.sqlite"])
    assert list(table.columns) == list(RANK_TABLE)
    assert table["span_ns"].dtype == "Int64" and table["slowest"].dtype == "bool"  # Int64: NA for a capture gap
    assert table.to_dict("records") == [
        {
            "rank": 0,
            "file": "r0.sqlite",
            "span_ns": 300,
            "busy_ns": 300,
            "idle_ns": 0,
            "utilisation_pct": 100.0,
            "kernel_count": 2,
            "top_kernel": "gemm",
            "top_kernel_ns": 350,
            "slowest": False,
        },
        {
            "rank": 2,
            "file": "r1.sqlite",
            "span_ns": 600,
            "busy_ns": 600,
            "idle_ns": 0,
            "utilisation_pct": 100.0,
            "kernel_count": 2,
            "top_kernel": "attn",
            "top_kernel_ns": 600,
            "slowest": True,
        },
    ]
    assert format_rank_table(table).splitlines() == [
        "rank  file         span_s    busy_s    idle_s    util  kernels  top kernel",
        "   0  r0.sqlite  0.000000  0.000000  0.000000  100.0%        2  gemm (0.000000 s)",
        "   2  r1.sqlite  0.000001  0.000001  0.000000  100.0%        2  attn (0.000001 s)  <- slowest",
    ]
    failed = {1: ("bad-rank.sqlite", "/tmp/x/bad-rank.sqlite: the file is empty (0 bytes)")}
    assert format_rank_table(table, failed).splitlines() == [  # the failed rank keeps its place
        "rank  file               span_s    busy_s    idle_s    util  kernels  top kernel",
        "   0  r0.sqlite        0.000000  0.000000  0.000000  100.0%        2  gemm (0.000000 s)",
        "   1  bad-rank.sqlite  failed: the file is empty (0 bytes)",
        "   2  r1.sqlite        0.000001  0.000001  0.000000  100.0%        2  attn (0.000001 s)  <- slowest",
    ]


def test_rank_table_ties_go_to_busier_then_lower_rank(rank_files):
    cache = TraceCache(enabled=False)
    s0 = summaries_of([FileSummary(rank_files[0], summary_text(rank_files[0], "CG_DISPATCH", cache), None)])[0]
    assert rank_table([s0, s0, s0], ["a", "b", "c"])["slowest"].tolist() == [True, False, False]
    assert rank_table([], [])["slowest"].tolist() == []


def test_no_rank_without_gpu_work_is_the_slowest():
    """A CPU-only rank (span 0) was marked "<- slowest" when it was the only row left."""
    from paths import nsys_trace

    cpu = nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite")
    s = summaries_of([FileSummary(cpu, summary_text(cpu, "CG_DISPATCH", TraceCache(enabled=False)), None)])[0]
    assert s.gpu_activity_span_ns == 0
    assert rank_table([s, s], ["a", "b"])["slowest"].tolist() == [False, False]


def test_summarize_many_in_threads_keeps_order_and_reports_failures(rank_files, tmp_path):
    missing = tmp_path / "missing.sqlite"
    results = summarize_many([rank_files[1], missing, rank_files[0]], n_workers=2, processes=False)
    assert [r.path for r in results] == [rank_files[1], missing, rank_files[0]]
    assert results[1].text is None and results[1].error == f"{missing}: no such file"
    single = [summary_text(p, "CG_DISPATCH", TraceCache(enabled=False)) for p in (rank_files[1], rank_files[0])]
    assert [results[0].text, results[2].text] == single


def test_cli_multi_file_default_local_cluster(rank_files, tmp_path, capsys):
    """The real default path: a LocalCluster of processes; -o DIR gets one summary per file."""
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"hello")
    out = tmp_path / "out"
    assert main(["summarize", str(rank_files[0]), str(bad), str(rank_files[1]), "-o", str(out), "--no-cache"]) == 2
    captured = capsys.readouterr()
    assert "tracedash: error: bad.sqlite: " in captured.err and "Traceback" not in captured.err
    assert sorted(p.name for p in out.iterdir()) == ["r0.sqlite.summary.json", "r1.sqlite.summary.json"]
    for p in rank_files:  # byte-identical to single-file summarize
        assert main(["summarize", str(p), "--no-cache"]) == 0
        assert (out / f"{p.name}.summary.json").read_text() == capsys.readouterr().out
    lines = captured.out.splitlines()
    assert lines[0].split() == ["rank", "file", "span_s", "busy_s", "idle_s", "util", "kernels", "top", "kernel"]
    assert lines[1].split()[:2] == ["0", "r0.sqlite"] and lines[3].split()[:2] == ["2", "r1.sqlite"]
    assert lines[2] == (
        "   1  bad.sqlite  failed: not a SQLite database (no 'SQLite format 3' header). Export an nsys report with…"
    )
    assert lines[3].endswith("<- slowest") and len(lines) == 4


def test_cli_multi_file_json_and_stdout_summaries(rank_files, capsys):
    """The --json and the text outputs of several files. On an in-process cluster (the process cluster that runs by
    default is test_cli_multi_file_default_local_cluster's; starting one here twice cost ~10 s of the suite)."""
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, processes=False, dashboard_address=None, scheduler_port=0) as cluster:
        argv = ["summarize", *map(str, rank_files), "--no-cache", "--scheduler", cluster.scheduler_address]
        assert main([*argv, "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert main(argv) == 0
        out = capsys.readouterr().out
    assert_multi_file_outputs(rank_files, doc, out)


def assert_multi_file_outputs(rank_files, doc, out):
    assert [
        (r["rank"], r["file"], r["span_ns"], r["busy_ns"], r["top_kernel"], r["slowest"]) for r in doc["ranks"]
    ] == [(0, "r0.sqlite", 300, 300, "gemm", False), (1, "r1.sqlite", 600, 600, "attn", True)]
    assert doc["slowest_rank"] == 1 and doc["errors"] == []
    assert [s["summary"]["kernel_count"] for s in doc["summaries"]] == [2, 2]
    single = summary_text(rank_files[0], "CG_DISPATCH", TraceCache(enabled=False))
    assert out.startswith(f"==> {rank_files[0]} <==\n{single}\n==> {rank_files[1]} <==\n")


def test_cli_existing_scheduler(rank_files, capsys):
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=1, processes=False, dashboard_address=None, scheduler_port=0) as cluster:
        argv = ["summarize", *map(str, rank_files), "--scheduler", cluster.scheduler_address, "--no-cache", "--json"]
        assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(r["file"], r["kernel_count"], r["slowest"]) for r in doc["ranks"]] == [
        ("r0.sqlite", 2, False),
        ("r1.sqlite", 2, True),
    ]


def test_cli_scheduler_unreachable_is_one_line(rank_files, capsys, monkeypatch):
    monkeypatch.setattr("dashboard.data.multirank.CONNECT_TIMEOUT", "1s")
    assert main(["summarize", str(rank_files[0]), "--scheduler", "tcp://127.0.0.1:8096", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("tracedash: error: cannot reach the Dask scheduler at tcp://127.0.0.1:8096")
        and err.count("\n") == 1
    )


def test_ranks_view_on_shared_pair():
    trace = load_ranks(PAIR)
    view = build_view(trace, ViewState())
    assert view.notices[0] == RANKS_NOTICE
    assert view.devices == [0, 1, 2, 3]
    assert trace.meta.rank_devices == {0: (0, 0), 1: (0, 1), 2: (1, 0), 3: (1, 1)}
    assert trace.summary.kernel_count == 4010 + 3587
    all_lanes = {str(y) for t in view.timeline.data for y in (t.y if t.y is not None else []) if y is not None}
    lanes = {y for y in all_lanes if y.startswith("rank ") and " · L" not in y}  # GPU lanes, not NVTX lanes
    assert lanes == {"rank 0 · GPU 0", "rank 0 · GPU 1", "rank 1 · GPU 0", "rank 1 · GPU 1"}
    assert "rank 1 · python3 · tid 148 · L0" in all_lanes  # NVTX lanes: rank, thread name, depth
    assert {c.label: c.value for c in view.cards}["GPUs with kernels"] == "4"
    # every place a device or thread is named says which rank it belongs to
    assert view.device_labels == {0: "rank 0 · GPU 0", 1: "rank 0 · GPU 1", 2: "rank 1 · GPU 0", 3: "rank 1 · GPU 1"}
    # no "all GPUs" column: a union across ranks would mix clocks
    assert [h for _, h in view.gpu_columns] == ["rank 0 · GPU 0", "rank 0 · GPU 1", "rank 1 · GPU 0", "rank 1 · GPU 1"]
    threads = sorted(
        {
            str(y).rsplit(" · L", 1)[0]
            for t in view.timeline.data
            for y in (t.y if t.y is not None else [])
            if " · tid " in str(y)
        }
    )
    # lanes named by thread (ThreadNames): one "python3" per process, told apart by tid
    assert threads == [
        "rank 0 · python3 · tid 144",
        "rank 0 · python3 · tid 145",
        "rank 1 · python3 · tid 148",
        "rank 1 · python3 · tid 149",
    ]


def test_load_ranks_rejects_summary_json(rank_files):
    from paths import SEED

    with pytest.raises(TraceFormatError, match="only nsys exports can be opened as ranks"):
        load_ranks([rank_files[0], SEED])


def test_ranks_store_lists_the_group_first(rank_files):
    from dashboard.app import create_app
    from dashboard.app.ranks import ranks_store

    store = ranks_store(list(rank_files))
    app = create_app(store=store)
    ids = app.server.config["TRACE_STORE"].ids()
    assert ids[0] == store.ranks_id and ids[0].startswith("ranks(r0.sqlite+r1.sqlite)@") and len(ids) == 3
    assert store.label(ids[0]) == "2 ranks: r0.sqlite + r1.sqlite" and store.label(ids[1]) == "r0.sqlite"
    merged = store.get(ids[0])
    assert merged is store.get(ids[0]) and merged.summary.kernel_count == 4
    assert merged.summary.gpu_activity_span_ns == 1600 - 100  # both ranks on their own session timelines
    assert store.get(ids[2]).summary.kernel_count == 2


def test_serve_ranks_needs_two_files(rank_files, capsys):
    assert main(["serve", "--ranks", str(rank_files[0]), "--port", "8096"]) == 2
    assert capsys.readouterr().err == (
        "tracedash: error: --ranks needs at least two different trace files (or one file holding several ranks)\n"
    )


@pytest.mark.parametrize(
    "bad, message",
    [
        (b"garbage", "garbage.sqlite: not a SQLite database (no 'SQLite format 3' header)"),
        (None, "garbage.sqlite: a SQLite database but not an nsys export (found: t)"),
        (
            b'{"gpu_activity_span_s": 1, "gpu_busy_union_s": 0, "kernel_count": 0}',
            "garbage.sqlite: a summary JSON has no intervals: only nsys exports can be opened as ranks",
        ),
        (
            b"[1, 2, 3]",
            "garbage.sqlite: not a Chrome trace: an entry of its event list (traceEvents, or the file's "
            "top-level array) is a number, not an event object",
        ),
    ],
)
def test_serve_ranks_checks_every_file_before_serving(rank_files, tmp_path, capsys, monkeypatch, bad, message):
    import sqlite3

    import dash

    def never(*args, **kwargs):
        raise AssertionError("the server must not start")

    monkeypatch.setattr(dash.Dash, "run", never)
    garbage = tmp_path / "garbage.sqlite"
    if bad is None:
        with sqlite3.connect(garbage) as con:
            con.execute("CREATE TABLE t (x)")
        con.close()
    else:
        garbage.write_bytes(bad)
    assert main(["serve", "--ranks", str(garbage), str(rank_files[0]), "--port", "8096", "--no-upload"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tracedash: error: {message}") and err.count("\n") == 1


@pytest.mark.parametrize("processes", [True, False])
def test_local_dask_cluster_listens_only_on_free_loopback_ports(processes):
    import psutil

    from dashboard.data.multirank import _local_client

    client, cluster = _local_client(1, processes)
    try:
        me = psutil.Process()
        listening = [
            c.laddr
            for p in [me, *me.children(recursive=True)]
            for c in p.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN
        ]
        assert listening and all(a.ip == "127.0.0.1" and a.port != 8787 for a in listening), listening
    finally:
        client.close()
        cluster.close()


def test_summarize_many_task_that_dies_is_one_error(rank_files, monkeypatch):
    def die(path, *args):
        if path.endswith("r1.sqlite"):
            raise MemoryError("worker ran out of memory")
        return summary_text(path, "CG_DISPATCH", TraceCache(enabled=False)), None

    monkeypatch.setattr("dashboard.data.multirank._summarize_task", die)
    results = summarize_many(list(rank_files), n_workers=1, processes=False)
    assert results[0].error is None and results[0].text.startswith("{")
    assert results[1].text is None
    assert results[1].error == "r1.sqlite: the Dask task failed: MemoryError: worker ran out of memory"


def test_ranks_view_reports_time_per_rank_never_across_clocks():
    from dashboard.analysis.ranks import per_rank_gpu_time

    trace = load_ranks(PAIR)
    per_rank = per_rank_gpu_time(trace.bundle)
    # each rank equals that file on its own (the single-trace goldens: 299.877006 / 285.205624 ms ...)
    assert per_rank[["rank", "span_ns", "busy_ns"]].values.tolist() == [
        [0, 299_877_006, 285_205_624],
        [1, 299_241_533, 266_434_672],
    ]
    cards = {c.label: c for c in build_view(trace, ViewState()).cards}
    assert cards["GPU activity span (slowest rank)"].value == "299.877 ms"
    assert cards["GPU activity span (slowest rank)"].hint.startswith("rank 0;")
    assert cards["Utilisation (lowest rank)"].value == "89.04 %"
    assert "GPU activity span" not in cards and "Utilisation" not in cards  # no span across two clocks
    assert "Busy incl. memcpy/memset" not in cards
    assert cards["Busy incl. memcpy/memset (per rank)"].hint.startswith("busiest rank shown; r0 ")


def test_ranks_per_gpu_table_measures_each_device_in_its_own_ranks_window():
    from dashboard.analysis.gpu_time import gpu_time, gpu_work

    view = build_view(load_ranks(PAIR), ViewState())
    rows = {r["metric"]: r for r in view.gpu_rows}
    alone = load_ranks(PAIR).bundle  # the same numbers as each file opened alone:
    for rank, path in enumerate(PAIR):
        from dashboard.data.trace import load_trace

        b = load_trace(path).bundle
        single = gpu_time(gpu_work(b.kernels, b.memops, b.graph_launches), b.kernels)
        for r in single[single["device_id"] >= 0].itertuples(index=False):
            lane = next(lane for lane, rd in alone.meta.rank_devices.items() if rd == (rank, r.device_id))
            key = f"gpu{lane}"
            assert rows["Utilisation"][key] == f"{r.utilisation_pct:.2f} %"
    assert rows["Idle in window"]["gpu2"] == "61.746 ms" and "all" not in rows["Utilisation"]
    assert alone.meta.format == "nsys-ranks"


def test_load_ranks_summary_keeps_each_ranks_nvtx_apart(rank_files):
    trace = load_ranks(list(rank_files))
    assert trace.summary.nvtx[["name", "gpu_overlap_ns"]].values.tolist() == [
        ["rank 0 · step", 300],
        ["rank 1 · step", 600],
    ]
    from dashboard.render import nvtx_rows

    for grouped in (False, True):  # the NVTX table, as listed and with unique-per-call names grouped
        rows = nvtx_rows(trace, grouped)
        assert sorted(r["name"] for r in rows) == ["rank 0 · step", "rank 1 · step"]


KINETO_RANKS = sorted((DATA / "cases" / "kineto_distributed_rank").glob("*.json"))


def test_kineto_ranks_come_from_distributed_info_with_a_warning():
    from dashboard.analysis.ranks import per_rank_gpu_time

    assert [p.name.split(".")[0] for p in KINETO_RANKS] == ["worker_a", "worker_b", "worker_c"]
    trace = load_ranks(KINETO_RANKS)
    assert trace.meta.warnings[0] == (
        "ranks taken from each trace's distributedInfo.rank, not from the order given: "
        "worker_a.1700000000001.pt.trace.json is rank 2, worker_b.1700000000002.pt.trace.json is rank 0, "
        "worker_c.1700000000003.pt.trace.json is rank 1"
    )
    assert trace.meta.rank_devices == {0: (0, 0), 1: (1, 0), 2: (2, 0)}
    assert trace.meta.source.split(" + ")[0].startswith("worker_b")  # rank 0 first
    per_rank = per_rank_gpu_time(trace.bundle)
    assert per_rank[["rank", "span_ns", "busy_ns"]].values.tolist() == [
        [0, 100_000, 100_000],
        [1, 200_000, 200_000],
        [2, 300_000, 300_000],
    ]
    cards = {c.label: c for c in build_view(trace, ViewState()).cards}
    assert cards["GPU activity span (slowest rank)"].hint.startswith("rank 2;")


def test_declared_ranks_rules():
    from dashboard.analysis.ranks import declared_ranks

    assert declared_ranks([None, None], ["a", "b"]) == ([0, 1], [])
    assert declared_ranks([0, 1], ["a", "b"]) == ([0, 1], [])
    assert declared_ranks([1, 0], ["a", "b"]) == (
        [1, 0],
        ["ranks taken from each trace's distributedInfo.rank, not from the order given: a is rank 1, b is rank 0"],
    )
    assert declared_ranks([1, 1], ["a", "b"]) == (
        [0, 1],
        [
            "ranks taken from the order given: the traces' distributedInfo.rank values (a: 1, b: 1) are missing or "
            "repeated"
        ],
    )
    assert declared_ranks([3, None], ["a", "b"])[0] == [0, 1]


def test_cli_summarize_kineto_ranks_from_distributed_info(capsys, thread_cluster):
    assert main(["summarize", *map(str, KINETO_RANKS), "--no-cache", "--workers", "1", "--json"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert [(r["rank"], r["file"].split(".")[0], r["span_ns"], r["slowest"]) for r in doc["ranks"]] == [
        (0, "worker_b", 100_000, False),
        (1, "worker_c", 200_000, False),
        (2, "worker_a", 300_000, True),
    ]
    assert doc["slowest_rank"] == 2
    assert doc["warnings"] == [
        "ranks taken from each trace's distributedInfo.rank, not from the order given: "
        "worker_a.1700000000001.pt.trace.json is rank 2, worker_b.1700000000002.pt.trace.json "
        "is rank 0, worker_c.1700000000003.pt.trace.json is rank 1"
    ]
    assert [s["rank"] for s in doc["summaries"]] == [0, 1, 2]
    assert main(["summarize", *map(str, KINETO_RANKS), "--no-cache", "--workers", "1"]) == 0
    captured = capsys.readouterr()
    table = captured.out.split("\n")[-5:-1]
    assert [line.split()[:2] for line in table] == [
        ["rank", "file"],
        ["0", "worker_b.1700000000002.pt.trace.json"],
        ["1", "worker_c.1700000000003.pt.trace.json"],
        ["2", "worker_a.1700000000001.pt.trace.json"],
    ]
    assert table[-1].endswith("<- slowest")
    assert "tracedash: warning: ranks taken from each trace's distributedInfo.rank" in captured.err


def _multi_rank_file(tmp_path):
    """One Kineto file holding ranks 0 and 1 (process metadata names the rank of every process),
    each with pid 100 launching a kernel on its GPU 0 with correlation id 1."""
    events = []
    for rank, (pid_cpu, pid_gpu, dur) in enumerate([(1100, 1000, 40), (2100, 2000, 90)]):
        events += [
            {"ph": "M", "name": "process_name", "pid": pid_cpu, "args": {"name": f"Rank {rank} host"}},
            {"ph": "M", "name": "process_name", "pid": pid_gpu, "args": {"name": f"rank {rank} GPU 0"}},
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": pid_cpu,
                "tid": 1,
                "ts": 10,
                "dur": 2,
                "args": {"correlation": 1},
            },
            {"ph": "X", "cat": "user_annotation", "name": "step", "pid": pid_cpu, "tid": 1, "ts": 5, "dur": 200},
            {
                "ph": "X",
                "cat": "kernel",
                "name": "void ns::gemm<1>(int)",
                "pid": pid_gpu,
                "tid": 7,
                "ts": 20,
                "dur": dur,
                "args": {"device": 0, "stream": 7, "correlation": 1},
            },
        ]
    p = tmp_path / "merged_ranks.json"
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}), encoding="utf-8")
    return p


def test_a_file_holding_several_ranks_is_split_never_one_gpu(tmp_path, capsys):
    from dashboard.analysis.ranks import per_rank_gpu_time
    from dashboard.loaders.kineto_json import load_kineto_ranks

    p = _multi_rank_file(tmp_path)
    msg = (
        "merged_ranks.json: holds the traces of 2 ranks (0, 1) in one file; one view of it would mix their GPUs "
        "and clocks. Open it as ranks, each on its own lanes: tracedash serve --ranks merged_ranks.json"
    )
    with pytest.raises(TraceFormatError) as err:
        load_trace(p)
    assert str(err.value) == msg
    assert main(["summarize", str(p), "--no-cache"]) == 2 and msg in capsys.readouterr().err
    parts = load_kineto_ranks(p)
    assert [(b.meta.source, b.meta.rank, len(b.kernels)) for b in parts] == [
        ("merged_ranks.json [rank 0]", 0, 1),
        ("merged_ranks.json [rank 1]", 1, 1),
    ]
    trace = load_ranks([p])
    assert trace.meta.rank_devices == {0: (0, 0), 1: (1, 0)}
    assert per_rank_gpu_time(trace.bundle)[["rank", "busy_ns"]].values.tolist() == [[0, 40_000], [1, 90_000]]
    assert trace.summary.nvtx[["name", "gpu_overlap_ns"]].values.tolist() == [
        ["rank 0 · step", 40_000],
        ["rank 1 · step", 90_000],
    ]
    pairs = kernel_launches(trace.bundle.kernels, trace.bundle.api_calls)  # each kernel to its own rank's launch
    assert sorted(zip(pairs["kernel_index"], pairs["api_index"])) == [(0, 0), (1, 1)]


def test_serve_ranks_takes_one_file_holding_several_ranks(tmp_path):
    from dashboard.app.ranks import ranks_store

    store = ranks_store([_multi_rank_file(tmp_path)])
    assert store.label(store.ranks_id) == "2 ranks: merged_ranks.json"
    assert store.get(store.ranks_id).summary.kernel_count == 2


def test_a_list_of_rank_traces_in_one_file_is_split(tmp_path):
    from dashboard.loaders.kineto_json import load_kineto_ranks

    def one(rank, dur):
        return {
            "distributedInfo": {"rank": rank},
            "traceEvents": [
                {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": dur, "args": {}}
            ],
        }

    p = tmp_path / "list.json"
    p.write_text(json.dumps([one(1, 5), one(0, 3)]), encoding="utf-8")
    with pytest.raises(TraceFormatError, match=r"^list.json: holds the traces of 2 ranks \(1, 0\) in one file"):
        load_trace(p)
    assert [(b.meta.rank, int(b.kernels["end_ns"].iloc[0])) for b in load_kineto_ranks(p)] == [(1, 5000), (0, 3000)]
    trace = load_ranks([p])
    assert trace.meta.rank_devices == {0: (0, 0), 1: (1, 0)} and trace.meta.warnings == (
        "ranks taken from each trace's distributedInfo.rank, not from the order given: list.json [rank 1] is rank 1, "
        "list.json [rank 0] is rank 0",
    )


def test_a_file_with_ranks_that_cannot_be_split_is_refused_with_the_way_to_split(tmp_path):
    p = _multi_rank_file(tmp_path)
    data = json.loads(p.read_text())
    data["traceEvents"].append({"ph": "X", "cat": "kernel", "name": "k", "pid": 77, "tid": 7, "ts": 1, "dur": 1})
    p.write_text(json.dumps(data))
    with pytest.raises(
        TraceFormatError,
        match=r"^merged_ranks.json: holds 2 ranks \(0, 1\) in one file, but 1 "
        r"event\(s\) belong to a process no rank is named for.*save each "
        r"rank's events to its own file",
    ):
        load_ranks([p])

    clash = json.loads(_multi_rank_file(tmp_path).read_text())
    clash["traceEvents"].append({"ph": "M", "name": "process_name", "pid": 1000, "args": {"name": "rank 1 GPU 0"}})
    p.write_text(json.dumps(clash))
    with pytest.raises(
        TraceFormatError,
        match=r"^merged_ranks.json: holds 2 ranks \(0, 1\) in one file, but 1 "
        r"process id\(s\) are named for two different ranks",
    ):
        load_ranks([p])


def test_summarize_json_writes_null_not_nan_for_an_undefined_utilisation(capsys, thread_cluster):
    """A rank without GPU work has no utilisation: ``--json`` wrote ``NaN``, which JSON parsers refuse."""
    import json as _json

    from dashboard.cli import main

    from paths import nsys_trace

    assert main(["summarize", "--json", "--no-cache", str(nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite"))]) == 0
    text = capsys.readouterr().out
    doc = _json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"not JSON: {c}")))
    assert doc["ranks"][0]["utilisation_pct"] is None and doc["slowest_rank"] is None


def _trace_fusion_file(tmp_path, *, drop_rank_of=None):
    """Two ranks' traces merged as TraceLens TraceFusion merges them: ``args.rank`` on every event, pid
    offset by rank x 10**5 (CPU pid 4242, GPU track pid 0), correlation and flow id by rank x 100 (raw values
    kept in ``*_raw``), ``args.device`` left at each rank's own GPU 0, the profiler's 'Trace' spans dropped."""
    events = []
    for rank, dur in ((0, 40), (1, 90)):
        cpu, gpu, corr = 4242 + rank * 10**5, rank * 10**5, 5 + rank * 100
        raw = {"rank": rank, "pid_raw": 4242}
        events += [
            {"ph": "M", "name": "process_name", "pid": cpu, "args": {"name": "python3", **raw}},
            {"ph": "M", "name": "process_name", "pid": gpu, "args": {"name": "GPU 0", "rank": rank, "pid_raw": 0}},
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": "ProfilerStep#3",
                "pid": cpu,
                "tid": 1,
                "ts": 5,
                "dur": 200,
                "args": dict(raw),
            },
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": cpu,
                "tid": 1,
                "ts": 10,
                "dur": 2,
                "args": {"correlation": corr, "correlation_raw": 5, **raw},
            },
            {"ph": "s", "cat": "ac2g", "id": corr, "pid": cpu, "tid": 1, "ts": 10, "args": {"id_raw": 5, **raw}},
            {
                "ph": "X",
                "cat": "kernel",
                "name": "void ns::gemm<1>(int)",
                "pid": gpu,
                "tid": 7,
                "ts": 20,
                "dur": dur,
                "args": {
                    "device": 0,
                    "stream": 7,
                    "correlation": corr,
                    "correlation_raw": 5,
                    "rank": rank,
                    "pid_raw": 0,
                },
            },
            {
                "ph": "f",
                "cat": "ac2g",
                "id": corr,
                "pid": gpu,
                "tid": 7,
                "ts": 20,
                "bp": "e",
                "args": {"id_raw": 5, "rank": rank, "pid_raw": 0},
            },
        ]
    if drop_rank_of is not None:
        del events[drop_rank_of]["args"]["rank"]
    p = tmp_path / "merged_trace.json"
    p.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
    return p


def test_a_trace_fusion_merge_is_split_into_its_ranks_never_one_gpu(tmp_path, capsys):
    """Issue 26 class 8: a TraceFusion file showed as one GPU 0 with the union of both ranks' busy time."""
    from dashboard.analysis.ranks import per_rank_gpu_time
    from dashboard.loaders.kineto_json import load_kineto_ranks

    p = _trace_fusion_file(tmp_path)
    msg = (
        "merged_trace.json: holds the traces of 2 ranks (0, 1) in one file (merged by TraceLens TraceFusion: "
        "args.rank on its events); one view of it would mix their GPUs and clocks. Open it as ranks, each on its "
        "own lanes: tracedash serve --ranks merged_trace.json"
    )
    with pytest.raises(TraceFormatError) as err:
        load_trace(p)
    assert str(err.value) == msg
    assert main(["summarize", str(p), "--no-cache"]) == 2 and msg in capsys.readouterr().err
    parts = load_kineto_ranks(p)
    assert [
        (
            b.meta.source,
            b.meta.rank,
            len(b.kernels),
            b.kernels["device_id"].tolist(),
            b.kernels["correlation_id"].tolist(),
            b.kernels["pid"].tolist(),
        )
        for b in parts
    ] == [
        ("merged_trace.json [rank 0]", 0, 1, [0], [5], [4242]),
        ("merged_trace.json [rank 1]", 1, 1, [0], [105], [104242]),
    ]
    trace = load_ranks([p])
    assert trace.meta.rank_devices == {0: (0, 0), 1: (1, 0)}
    assert per_rank_gpu_time(trace.bundle)[["rank", "busy_ns"]].values.tolist() == [[0, 40_000], [1, 90_000]]
    assert trace.summary.nvtx[["name", "gpu_overlap_ns"]].values.tolist() == [
        ["rank 0 · ProfilerStep#3", 40_000],
        ["rank 1 · ProfilerStep#3", 90_000],
    ]
    pairs = kernel_launches(trace.bundle.kernels, trace.bundle.api_calls)
    assert sorted(zip(pairs["kernel_index"], pairs["api_index"])) == [(0, 0), (1, 1)]


def test_a_trace_fusion_merge_with_an_event_of_no_rank_is_refused_with_the_way_to_open_it(tmp_path):
    p = _trace_fusion_file(tmp_path, drop_rank_of=5)  # rank 0's kernel
    with pytest.raises(TraceFormatError) as err:
        load_ranks([p])
    assert str(err.value) == (
        "merged_trace.json: a merge of 2 ranks (0, 1) by TraceLens TraceFusion (args.rank on its events), but 1 "
        "event(s) carry no rank, so it cannot be split safely: open the per-rank traces TraceFusion merged (one "
        "PyTorch profiler trace per rank, as tensorboard_trace_handler writes them) with: tracedash serve --ranks "
        "FILE..."
    )


def test_a_rank_arg_on_a_few_events_of_one_trace_is_not_a_merge(tmp_path):
    """A 'rank' arg of a few events (e.g. a collective's peer) does not make a trace a TraceFusion merge."""
    events = [
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k",
            "pid": 0,
            "tid": 7,
            "ts": 10 * i,
            "dur": 5,
            "args": {"device": 0, "stream": 7},
        }
        for i in range(6)
    ]
    events[0]["args"]["rank"], events[1]["args"]["rank"] = 0, 1
    p = tmp_path / "one.json"
    p.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
    assert load_trace(p, cache=None).summary.kernel_count == 6


def test_a_rank_whose_gpu_work_was_not_captured_reads_na_in_the_rank_table(tmp_path, capsys, thread_cluster):
    """Issue 26 class 1: a rank that launched kernels none of which were recorded has an unknown span, busy and
    idle (its own summary writes null); the rank table said 0 s and 0 ns for it."""
    gap = write_nsys_sqlite(
        tmp_path / "gap.sqlite",
        runtime=[{"start": 1, "end": 5, "name": "cudaLaunchKernel_v7000", "correlationId": 1}],
    )
    ok = write_nsys_sqlite(
        tmp_path / "ok.sqlite",
        kernels=[{"start": 100, "end": 400, "correlationId": 1}],
        runtime=[{"start": 90, "end": 95, "name": "cudaLaunchKernel_v7000", "correlationId": 1}],
    )
    assert main(["summarize", str(ok), str(gap), "--json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["file"]: r for r in doc["ranks"]}
    assert (rows["gap.sqlite"]["span_ns"], rows["gap.sqlite"]["busy_ns"], rows["gap.sqlite"]["idle_ns"]) == (None,) * 3
    assert rows["gap.sqlite"]["utilisation_pct"] is None and rows["gap.sqlite"]["slowest"] is False
    assert (rows["ok.sqlite"]["span_ns"], rows["ok.sqlite"]["slowest"], doc["slowest_rank"]) == (300, True, 0)
    assert main(["summarize", str(ok), str(gap), "--no-cache"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.split()[:2] == ["1", "gap.sqlite"])
    assert line.split() == ["1", "gap.sqlite", "n/a", "n/a", "n/a", "n/a", "0", "-"]
