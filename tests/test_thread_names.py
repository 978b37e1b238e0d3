"""Thread names for timeline lanes: nsys ThreadNames (via StringIds) and Kineto thread_name metadata."""

from dashboard.analysis.ranks import merge_ranks
from dashboard.data.cache import TraceCache
from dashboard.loaders.kineto_json import parse_kineto
from dashboard.loaders.nsys_sqlite import load_nsys_sqlite

from factories import GLOBAL_PID_1, GLOBAL_TID_1, write_nsys_sqlite
from paths import nsys_trace


def test_nsys_thread_names_last_row_wins_and_bad_rows_skipped(tmp_path):
    other = GLOBAL_PID_1 | 102
    p = write_nsys_sqlite(
        tmp_path / "t.sqlite",
        kernels=[{"start": 1, "end": 9}],
        thread_names=[(GLOBAL_TID_1, "old"), (GLOBAL_TID_1, "python3"), (other, "pt_nccl_watchdg")],
    )
    assert load_nsys_sqlite(p).meta.thread_names == {GLOBAL_TID_1: "python3", other: "pt_nccl_watchdg"}
    assert (
        load_nsys_sqlite(write_nsys_sqlite(tmp_path / "n.sqlite", kernels=[{"start": 1, "end": 9}])).meta.thread_names
        == {}
    )


def test_nsys_thread_names_real_export():
    names = load_nsys_sqlite(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")).meta.thread_names
    # pid 144 tid 144 and tid 245 (globalTid = 1 << 48 | pid << 24 | tid)
    assert names[(1 << 48) | (144 << 24) | 144] == "python3"
    assert names[(1 << 48) | (144 << 24) | 245] == "pt_nccl_watchdg"


def test_kineto_thread_name_metadata():
    events = [
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 8, "args": {"name": "thread 8 (python3)"}},
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 9, "args": {"name": "  "}},
        {"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "proc"}},
        {"ph": "X", "cat": "user_annotation", "name": "r", "pid": 7, "tid": 8, "ts": 1, "dur": 2},
    ]
    b = parse_kineto({"traceEvents": events}, "k.json")
    assert b.meta.thread_names == {(7 << 24) | 8: "thread 8 (python3)"}
    assert int(b.nvtx_ranges["global_tid"].iloc[0]) in b.meta.thread_names


def test_thread_names_survive_the_cache_and_rank_merge(tmp_path):
    p = write_nsys_sqlite(tmp_path / "t.sqlite", kernels=[{"start": 1, "end": 9}], thread_names={GLOBAL_TID_1: "py"})
    cache = TraceCache(tmp_path / "cache")
    b, hit = cache.load_bundle(p, load_nsys_sqlite)
    again, hit_again = cache.load_bundle(p, load_nsys_sqlite)
    assert (hit, hit_again) == (False, True) and again.meta.thread_names == {GLOBAL_TID_1: "py"}
    merged = merge_ranks([b, b])  # pid 100 of rank 0 becomes process 1, that of rank 1 process 2
    assert merged.meta.rank_pids == {1: (0, 100), 2: (1, 100)}
    assert merged.meta.thread_names == {(1 << 24) | 101: "py", (2 << 24) | 101: "py"}
