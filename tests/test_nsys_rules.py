"""The six ``nsys analyze`` rules (dashboard.analysis.nsys_rules) and the memory kinds they read,
on exports built in code with exact numbers."""

import sqlite3

import numpy as np
import pytest

from dashboard.analysis import nsys_rules as r
from dashboard.loaders import load_nsys_sqlite

from factories import GLOBAL_PID_1, GLOBAL_TID_1, write_nsys_sqlite
from paths import nsys_trace

PID = 100  # GLOBAL_PID_1's pid
OTHER_PID = (1 << 48) | (200 << 24)


def _add_memops(path, memcpy=(), memset=(), enum=False):
    """Add MEMCPY (with srcKind/dstKind) and MEMSET (with memKind) tables, as 2022.4+ exports have them."""
    con = sqlite3.connect(path)
    con.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
        "correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, "
        "srcKind INTEGER, dstKind INTEGER)"
    )
    con.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
        "correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL, "
        "memKind INTEGER)"
    )
    for m in memcpy:
        con.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,0,3,7,?,?,?,?,?,?)",
            (
                m["start"],
                m["end"],
                m["corr"],
                m.get("gpid", GLOBAL_PID_1),
                m.get("bytes", 1 << 20),
                m["copyKind"],
                m.get("src"),
                m.get("dst"),
            ),
        )
    for m in memset:
        con.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?,?,0,3,7,?,?,0,?,?)",
            (m["start"], m["end"], m["corr"], GLOBAL_PID_1, m.get("bytes", 4096), m.get("kind")),
        )
    if enum:
        con.execute("CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER PRIMARY KEY, name TEXT, label TEXT)")
        con.execute("INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable (enum)')")
    con.commit()
    con.close()


def _api(start, end, name, corr, tid=GLOBAL_TID_1):
    return {"start": start, "end": end, "name": name, "correlationId": corr, "globalTid": tid}


@pytest.fixture
def copies(tmp_path):
    """Copies and memsets of pid 100 with their API calls (correlation ids 1-9)."""
    path = write_nsys_sqlite(
        tmp_path / "copies.sqlite",
        runtime=[
            _api(100, 900, "cudaMemcpy_v3020", 1),  # pageable HtoD 1 MiB: sync copy
            _api(1000, 1100, "cudaMemcpy_v3020", 2),  # HtoD 64 KiB: returns before the copy
            _api(1200, 1300, "cudaMemcpy_v3020", 3),  # DtoD: no host sync
            _api(1400, 2400, "cudaMemcpy_v3020", 4),  # DtoH to pageable: sync copy
            _api(2500, 2600, "cudaMemcpyAsync_v3020", 5),  # pageable async: becomes sync
            _api(2700, 2800, "cudaMemcpyAsync_v3020", 6),  # pinned async: really async
            _api(2900, 3000, "cudaMemset_v3020", 7),  # memset of pinned memory: sync
            _api(3100, 3200, "cudaMemsetAsync_v3020", 8),  # async memset: not reported
            _api(3300, 3400, "cudaMemset_v3020", 9),  # memset of device memory: not reported
            _api(3500, 9500, "cudaStreamSynchronize_v3020", 10),
            _api(9600, 9700, "cudaDeviceSynchronize_v3020", 11),
            _api(9800, 9900, "cudaLaunchKernel_v7000", 12),
        ],
    )
    _add_memops(
        path,
        memcpy=[
            {"start": 200, "end": 800, "corr": 1, "copyKind": 1, "src": 0, "dst": 2},
            {"start": 1050, "end": 1060, "corr": 2, "copyKind": 1, "src": 0, "dst": 2, "bytes": 65536},
            {"start": 1250, "end": 1280, "corr": 3, "copyKind": 8, "src": 2, "dst": 2},
            {"start": 1500, "end": 2300, "corr": 4, "copyKind": 2, "src": 2, "dst": 0, "bytes": 2_000_000},
            {"start": 2550, "end": 2590, "corr": 5, "copyKind": 1, "src": 0, "dst": 2, "bytes": 8},
            {"start": 2750, "end": 2790, "corr": 6, "copyKind": 1, "src": 1, "dst": 2},
            # another process's copy with correlation id 1: not the pid-100 cudaMemcpy call
            {"start": 5000, "end": 5100, "corr": 1, "copyKind": 1, "src": 0, "dst": 2, "gpid": OTHER_PID},
        ],
        memset=[
            {"start": 2950, "end": 2980, "corr": 7, "kind": 1},
            {"start": 3150, "end": 3180, "corr": 8, "kind": 1},
            {"start": 3350, "end": 3380, "corr": 9, "kind": 2},
        ],
    )
    return path


def test_loader_reads_memory_kinds_process_context_and_correlation(copies):
    m = load_nsys_sqlite(copies).memops
    first = m.iloc[0]
    assert (first["start_ns"], first["pid"], first["context_id"], first["correlation_id"]) == (200, PID, 3, 1)
    assert (first["src_kind"], first["dst_kind"], first["kind"]) == ("Pageable", "Device", "memcpy HtoD")
    sets = m[m["kind"] == "memset"]
    assert sets["dst_kind"].astype(str).tolist() == ["Pinned", "Pinned", "Device"]
    assert sets["src_kind"].astype(str).tolist() == ["", "", ""]
    assert m["pid"].tolist().count(200) == 1


def test_loader_memory_kind_labels_from_enum_table_and_missing_columns(tmp_path):
    p = write_nsys_sqlite(tmp_path / "e.sqlite", runtime=[_api(1, 2, "x", 1)])
    _add_memops(
        p,
        memcpy=[
            {"start": 10, "end": 20, "corr": 1, "copyKind": 1, "src": 0, "dst": None},
            {"start": 30, "end": 40, "corr": 1, "copyKind": 1, "src": 9, "dst": 4},
        ],
        enum=True,
    )
    m = load_nsys_sqlite(p).memops
    assert m["src_kind"].astype(str).tolist() == ["Pageable (enum)", "kind 9"]
    assert m["dst_kind"].astype(str).tolist() == ["", "Managed"]
    # an export whose MEMCPY table has no srcKind/dstKind/contextId columns: "" and -1, not a guess
    q = write_nsys_sqlite(tmp_path / "old.sqlite", memcpy=[{"start": 5, "end": 9}])
    old = load_nsys_sqlite(q).memops
    assert old[["src_kind", "dst_kind"]].astype(str).values.tolist() == [["", ""]]
    assert (old["pid"].iloc[0], old["context_id"].iloc[0], old["correlation_id"].iloc[0]) == (PID, 1, 1)


def test_real_trace_memory_kinds():
    m = load_nsys_sqlite(nsys_trace("nsys2026.2_h100_2gpu_torchrun_1s.sqlite")).memops
    counts = m.groupby(["kind", "src_kind", "dst_kind"], observed=True).size().to_dict()
    assert counts[("memcpy HtoD", "Pageable", "Device")] == 4
    assert counts[("memcpy HtoD", "Pinned", "Device")] == 446
    assert counts[("memcpy DtoH", "Device", "Pinned")] == 4
    assert counts[("memset", "", "Device")] == 22


def test_sync_and_async_memcpy_and_memset_rules(copies):
    b = load_nsys_sqlite(copies)
    sync = r.cuda_sync_memcpy(b.memops, b.api_calls)
    assert sync[["duration_ns", "start_ns", "src_kind", "dst_kind", "bytes", "api_name"]].values.tolist() == [
        [800, 1500, "Device", "Pageable", 2_000_000, "cudaMemcpy_v3020"],
        [600, 200, "Pageable", "Device", 1 << 20, "cudaMemcpy_v3020"],
    ]
    assert sync[["pid", "device_id", "context_id", "stream_id"]].values.tolist() == [[PID, 0, 3, 7]] * 2
    asyn = r.cuda_async_memcpy(b.memops, b.api_calls)
    assert asyn[["duration_ns", "start_ns", "bytes", "api_name"]].values.tolist() == [
        [40, 2550, 8, "cudaMemcpyAsync_v3020"]
    ]
    mset = r.cuda_sync_memset(b.memops, b.api_calls)
    assert mset[["duration_ns", "start_ns", "dst_kind", "bytes", "api_name"]].values.tolist() == [
        [30, 2950, "Pinned", 4096, "cudaMemset_v3020"]
    ]
    api = r.cuda_sync_api(b.api_calls)
    assert api.values.tolist() == [
        [6000, 3500, PID, 101, "cudaStreamSynchronize_v3020"],
        [100, 9600, PID, 101, "cudaDeviceSynchronize_v3020"],
    ]


def test_gpu_starvation_follows_nsys_pairing_of_sorted_ends_and_starts(tmp_path):
    # op a [1 ms, 10 ms) covers op b [2, 3) ms; op c starts at 5 ms. nsys pairs the 1st end (3 ms, b)
    # with the 2nd start (2 ms): no gap; the 2nd end (10 ms) with the 3rd start (5 ms): no gap. A gap of
    # 4 ms after a's end (10 ms) to d (14 ms); one of 0.5 ms (under 1 ms) before e.
    ms = 1_000_000
    p = write_nsys_sqlite(
        tmp_path / "g.sqlite",
        kernels=[
            {"start": 1 * ms, "end": 10 * ms},
            {"start": 2 * ms, "end": 3 * ms},
            {"start": 5 * ms, "end": 6 * ms},
            {"start": 14 * ms, "end": 15 * ms},
            {"start": 15 * ms + ms // 2, "end": 16 * ms},
            {"start": 0, "end": 5},  # start 0: not a GPU operation for nsys (start > 0)
            {"start": 30 * ms, "end": 31 * ms, "deviceId": 1},  # alone on GPU 1: no gap
        ],
    )
    ops = r.gpu_ops(load_nsys_sqlite(p))
    gaps = r.gpu_starvation(ops, gap_ms=1)
    assert gaps.values.tolist() == [[4 * ms, 10 * ms, PID, 0, 1]]
    assert r.gpu_starvation(ops, gap_ms=4).empty  # strictly longer than the threshold
    assert r.gpu_starvation(ops, gap_ms=0)["duration_ns"].tolist() == [4 * ms, ms // 2]
    assert r.gpu_starvation(ops, gap_ms=0.4)["duration_ns"].tolist() == [4 * ms, ms // 2]  # 0.5 ms > 0.4 ms
    assert r.gpu_starvation(ops, gap_ms=0.5)["duration_ns"].tolist() == [4 * ms]


def test_gpu_low_utilization_chunks_and_merging(tmp_path):
    # Window [100, 1100): 10 chunks of 100 ns. Busy: [100, 200) full, [200, 300) 20 %, two overlapping
    # ops in [300, 400) add to 150 %, [400, 1000) empty, [1000, 1100) 50 % (not under 50: kept out).
    p = write_nsys_sqlite(
        tmp_path / "u.sqlite",
        kernels=[
            {"start": 100, "end": 200},
            {"start": 250, "end": 270},
            {"start": 300, "end": 400},
            {"start": 300, "end": 350},
            {"start": 1000, "end": 1050},
            {"start": 1099, "end": 1100},
        ],
    )
    ops = r.gpu_ops(load_nsys_sqlite(p))
    rows = r.gpu_low_utilization(ops, threshold=50, chunks=10)
    assert rows.values.tolist() == [[0.0, 600, 400, PID, 0, 1], [20.0, 100, 200, PID, 0, 1]]
    # chunk 9 holds 51 % (50 + 1 ns): at threshold 52 it is reported too, merged with the empty chunks
    # before it into one row of 700 ns at (6 x 0 + 51) / 7 = 7.29 -> 7.3 %
    rows = r.gpu_low_utilization(ops, threshold=52, chunks=10)
    assert rows[["in_use_pct", "duration_ns", "start_ns"]].values.tolist() == [[7.3, 700, 400], [20.0, 100, 200]]
    # 3 chunks of ceil(1000 / 3) = 334 ns: [100, 434) 80.8 %, [434, 768) 0 %, [768, 1100) 15.4 % -> merged
    rows = r.gpu_low_utilization(ops, threshold=50, chunks=3)
    assert rows[["in_use_pct", "duration_ns", "start_ns"]].values.tolist() == [[7.7, 666, 434]]
    with pytest.raises(ValueError, match="between 1 and 1000"):
        r.gpu_low_utilization(ops, chunks=0)


def test_sqlite_round_half_up():
    assert [r._sqlite_round1(x) for x in (0.05, 0.15, 2.25, 47.249, 0.0)] == [0.1, 0.2, 2.3, 47.2, 0.0]


def test_gaps_over_the_threshold_are_found_across_part_boundaries():
    from dashboard.analysis.nsys_rules import _gaps_over

    starts = np.array([0, 10, 30, 31, 60, 100])
    ends = np.array([5, 12, 31, 40, 70, 120])  # gaps after each op: 5, 18, 0, 20, 30
    for part in (1, 2, 3, 4, 5, 10):
        assert _gaps_over(starts, ends, 18, part).tolist() == [3, 4]
        assert _gaps_over(starts, ends, 4, part).tolist() == [0, 1, 3, 4]
    assert _gaps_over(starts[:1], ends[:1], 0).tolist() == []
    assert _gaps_over(starts[:0], ends[:0], 0).tolist() == []
