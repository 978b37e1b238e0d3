"""CUDA API calls read as totals for a summary (``loaders.nsys_api_totals``): the same figures as the full read.

`summarize` reduces the API table chunk by chunk to counts and summed durations per thread and name. Every
kind of row the full read judges (NULL, text and REAL times, end < start, times at or past 2**62, NULL or
unknown name ids, a missing thread, backtrace duplicates, ids that share a string) must come out the same,
through ADBC, through the sqlite3 path, and across chunk boundaries.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from dashboard.analysis.summary import summarize, summary_to_dict
from dashboard.loaders import nsys_api_totals, sqlite_access
from dashboard.loaders.nsys_sqlite import load_nsys_sqlite

from factories import GLOBAL_TID_1, write_nsys_sqlite

BIG = 1_700_000_000_000_000_000  # a wall-clock time in ns: above 2**53, where a float would round it
OTHER_TID = (1 << 48) | (200 << 24) | 7  # pid 200


def _odd_runtime(path):
    """An export whose RUNTIME table (no NOT NULL constraints, as a user-edited file may have) holds one row of
    each kind; StringIds 1..4, where ids 3 and 4 share a name and id 9 is unknown."""
    write_nsys_sqlite(path, kernels=[{"start": 100, "end": 200}])
    con = sqlite3.connect(path)
    con.executemany(
        "INSERT INTO StringIds VALUES (?, ?)",
        [(101, "cudaLaunchKernel_v7000"), (102, "cudaMemcpy_v3020"), (103, "cuLaunchKernel"), (104, "cuLaunchKernel")],
    )
    con.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass INTEGER, globalTid, correlationId INTEGER, "
        "nameId)"
    )
    rows = [
        (10, 20, 0, GLOBAL_TID_1, 1, 101),  # launch, 10 ns
        (30, 45, 0, GLOBAL_TID_1, 2, 101),  # launch, 15 ns
        (BIG, BIG + 7, 0, OTHER_TID, 3, 101),  # launch of pid 200, 7 ns, exact only in integers
        (50, 60, 67, GLOBAL_TID_1, 4, 101),  # backtrace duplicate: not a call
        (70, None, 0, GLOBAL_TID_1, 5, 102),  # NULL end: dropped
        (90, 80, 0, GLOBAL_TID_1, 6, 102),  # end < start: dropped
        (1, 2**62, 0, GLOBAL_TID_1, 7, 102),  # past 2**62: dropped
        (100, 103, 0, None, 8, 102),  # no thread: pid 0, 3 ns
        (110, 111, 0, GLOBAL_TID_1, 9, 103),  # 1 ns
        (120, 122, 0, GLOBAL_TID_1, 10, 104),  # another id, the same name: 2 ns
        (130, 134, 0, GLOBAL_TID_1, 11, None),  # NULL name id: <unnamed ?>, 4 ns
        (140, 145, 0, GLOBAL_TID_1, 12, 9),  # unknown name id: <unnamed 9>, 5 ns
        ("150", "156", 0, GLOBAL_TID_1, 13, 102),  # times as text: read as numbers, 6 ns
        (160.0, 168.0, 0, GLOBAL_TID_1, 14, 102),  # times as REAL: 8 ns
        ("x", 170, 0, GLOBAL_TID_1, 15, 102),  # a time that is no number: dropped
    ]
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?)", rows)
    con.commit()
    con.close()
    return path


EXPECTED_API = {
    "cudaLaunchKernel_v7000": [3, 32e-9],
    "cudaMemcpy_v3020": [3, 17e-9],
    "<unnamed 9>": [1, 5e-9],
    "<unnamed ?>": [1, 4e-9],
    "cuLaunchKernel": [2, 3e-9],
}


def _api(path) -> dict:
    return {
        k: [c, round(s, 12)]
        for k, (c, s) in summary_to_dict(summarize(load_nsys_sqlite(path, lean=True)))["api"].items()
    }


def test_odd_rows_give_the_full_reads_summary_and_accounts(tmp_path):
    path = _odd_runtime(tmp_path / "odd.sqlite")
    lean, full = load_nsys_sqlite(path, lean=True), load_nsys_sqlite(path)
    assert lean.api_calls.empty and full.api_totals is None
    assert summary_to_dict(summarize(lean)) == summary_to_dict(summarize(full))
    assert lean.meta == full.meta  # the row accounts, launches per process and warnings included
    assert _api(path) == {k: [c, round(s, 12)] for k, (c, s) in EXPECTED_API.items()}
    api = next(a for a in lean.meta.accounts if a.kind == "CUDA API calls")
    assert (api.read, api.loaded) == (15, 10)
    assert dict(api.skipped) == {
        "CUDA backtrace duplicates (eventClass 67)": 1,
        "with unusable times (NULL, end < start or beyond 2^62 ns)": 4,
    }
    # pid 200's launch with its 2**60-scale times counts (pid 100: 2 runtime launches + 2 driver ones)
    assert lean.meta.launches_by_pid == ((100, 4, 1), (200, 1, 0))


def test_totals_per_thread_and_name_exact(tmp_path):
    path = _odd_runtime(tmp_path / "odd.sqlite")
    t = load_nsys_sqlite(path, lean=True).api_totals
    rows = [(int(g), int(p), str(n), int(c), int(s)) for g, p, n, c, s in t.itertuples(index=False)]
    assert rows == [  # sorted by thread, then name id (a NULL id first)
        (0, 0, "cudaMemcpy_v3020", 1, 3),
        (GLOBAL_TID_1, 100, "<unnamed ?>", 1, 4),
        (GLOBAL_TID_1, 100, "<unnamed 9>", 1, 5),
        (GLOBAL_TID_1, 100, "cudaLaunchKernel_v7000", 2, 25),
        (GLOBAL_TID_1, 100, "cudaMemcpy_v3020", 2, 14),  # the text and REAL times: 6 + 8 ns
        (GLOBAL_TID_1, 100, "cuLaunchKernel", 1, 1),
        (GLOBAL_TID_1, 100, "cuLaunchKernel", 1, 2),  # another id of the same name: its own row
        (OTHER_TID, 200, "cudaLaunchKernel_v7000", 1, 7),
    ]
    assert t["total_ns"].dtype == np.int64 and str(t["name"].dtype) == "category"


def test_sqlite3_path_and_small_chunks_agree(tmp_path, monkeypatch):
    """Without ADBC (the sqlite3 reader), and with chunks of 2 rows (totals added across chunks), the same."""
    path = _odd_runtime(tmp_path / "odd.sqlite")
    expected = summary_to_dict(summarize(load_nsys_sqlite(path)))
    monkeypatch.setattr(nsys_api_totals, "ADBC_BATCH_ROWS", 2)
    monkeypatch.setattr(sqlite_access, "ADBC_BATCH_ROWS", 2)
    assert summary_to_dict(summarize(load_nsys_sqlite(path, lean=True))) == expected
    monkeypatch.setattr(nsys_api_totals, "_HAVE_ADBC", False)
    assert summary_to_dict(summarize(load_nsys_sqlite(path, lean=True))) == expected


@pytest.mark.parametrize("n", [5, 40_001])
def test_many_clean_calls_in_adbc_batches(tmp_path, monkeypatch, n):
    """Integer columns straight from Arrow (batches of 4,096 rows here): the per-thread totals of a few thousand
    calls on two threads equal the full read's, times above 2**53 included."""
    monkeypatch.setattr(sqlite_access, "ADBC_BATCH_ROWS", 4096)
    runtime = [
        {"start": BIG + 10 * i, "end": BIG + 10 * i + i % 7, "name": f"cudaApi{i % 3}", "globalTid": tid}
        for i, tid in zip(range(n), [GLOBAL_TID_1, OTHER_TID] * n)
    ]
    path = write_nsys_sqlite(tmp_path / "many.sqlite", runtime=runtime)
    lean = load_nsys_sqlite(path, lean=True)
    full = load_nsys_sqlite(path)
    assert summary_to_dict(summarize(lean)) == summary_to_dict(summarize(full))
    assert int(lean.api_totals["count"].sum()) == n
    assert int(lean.api_totals["total_ns"].sum()) == sum(i % 7 for i in range(n))


def test_time_slices_add_up_the_totals_of_the_single_pass(tmp_path):
    """Each time slice reads its calls as totals too (``SliceReader.api_totals``): added up they are the one pass's,
    rows dropped for unusable times included."""
    from dashboard.data.cache import TraceCache
    from dashboard.data.multirank import summary_text
    from dashboard.data.slices import sliced_summary, summary_json_text

    kernels = [{"start": 1_000 * i, "end": 1_000 * i + 600} for i in range(1, 40)]
    runtime = [
        {"start": 1_000 * i - 50, "end": 1_000 * i - 50 + i % 11, "name": f"cudaApi{i % 4}", "globalTid": tid}
        for i, tid in zip(range(1, 40), [GLOBAL_TID_1, OTHER_TID] * 40)
    ] + [{"start": 5_000, "end": 4_000, "name": "cudaApi0"}]  # end < start: dropped in whichever slice owns it
    path = write_nsys_sqlite(tmp_path / "sliced.sqlite", kernels=kernels, runtime=runtime)
    one_pass = summary_text(path, "CG_DISPATCH", TraceCache(enabled=False))
    for n in (2, 3):
        assert summary_json_text(sliced_summary(path, n)) == one_pass
    assert '"cudaApi1": [\n      10,' in one_pass


def test_a_summarys_read_is_never_cached(tmp_path):
    """Its CUDA API calls are totals: a view needs the rows, so the cache refuses the bundle and writes nothing."""
    from dashboard.data.cache import TraceCache

    path = write_nsys_sqlite(tmp_path / "t.sqlite", runtime=[{"start": 1, "end": 2, "name": "cudaFree"}])
    cache = TraceCache(tmp_path / "cache")
    with pytest.raises(ValueError, match="never cached"):
        cache.load_bundle(path, lambda p: load_nsys_sqlite(p, lean=True))
    assert cache.cached_bundle(path) is None


def _odd_runtime_far_apart(path):
    """``_odd_runtime`` with its rows' rowids 300,000 apart after the 7th row: the table is cut into two rowid
    ranges (each read in a thread of its own), odd rows on both sides."""
    _odd_runtime(path)
    con = sqlite3.connect(path)
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET rowid = rowid + 300000 WHERE rowid > 7")
    con.commit()
    con.close()
    return path


def test_totals_read_in_two_rowid_ranges_equal_the_full_read(tmp_path, monkeypatch):
    path = _odd_runtime_far_apart(tmp_path / "odd.sqlite")
    parts = []
    real = nsys_api_totals._adbc_totals
    monkeypatch.setattr(nsys_api_totals, "_adbc_totals", lambda uri, sql: parts.append(sql) or real(uri, sql))
    lean, full = load_nsys_sqlite(path, lean=True), load_nsys_sqlite(path)
    assert [p.split("WHERE ")[1] for p in parts] == [
        '"eventClass" IS NOT 67 AND (rowid >= 1 AND rowid < 150008)',
        '"eventClass" IS NOT 67 AND (rowid >= 150008 AND rowid < 300016)',
    ]
    assert summary_to_dict(summarize(lean)) == summary_to_dict(summarize(full))
    assert lean.meta == full.meta
    assert _api(path) == {k: [c, round(s, 12)] for k, (c, s) in EXPECTED_API.items()}


def test_a_range_adbc_cannot_type_reads_the_whole_table_with_sqlite3(tmp_path, monkeypatch):
    """One part failing in ADBC (a column it cannot type) drops both parts' totals: the sqlite3 path reads the
    whole table once, so no row counts twice."""
    path = _odd_runtime_far_apart(tmp_path / "odd.sqlite")
    expected = summary_to_dict(summarize(load_nsys_sqlite(path)))
    real = nsys_api_totals._adbc_totals

    def second_fails(uri, sql):
        if "rowid >= 150008" in sql:
            raise ValueError("cannot type column")
        return real(uri, sql)

    monkeypatch.setattr(nsys_api_totals, "_adbc_totals", second_fails)
    lean = load_nsys_sqlite(path, lean=True)
    assert summary_to_dict(summarize(lean)) == expected
    assert next(a for a in lean.meta.accounts if a.kind == "CUDA API calls").loaded == 10


def test_a_summary_takes_its_kernel_side_made_while_the_api_totals_were_read(tmp_path):
    """``before_api`` gets the bundle's own kernel, NVTX range and mark frames; ``summarize`` uses a
    ``kernel_summary`` of those frames (and that prefix) and computes afresh for any other."""
    from dashboard.analysis.summary import kernel_summary

    path = _odd_runtime_far_apart(tmp_path / "odd.sqlite")
    seen = []
    lean = load_nsys_sqlite(path, lean=True, before_api=lambda *frames: seen.append(frames))
    assert [tuple(map(id, f)) for f in seen] == [(id(lean.kernels), id(lean.nvtx_ranges), id(lean.nvtx_marks))]
    part = kernel_summary(*seen[0], "CG_DISPATCH")
    assert summary_to_dict(summarize(lean, kernel_part=part)) == summary_to_dict(summarize(lean))
    other = load_nsys_sqlite(path, lean=True)  # the same file, other frames: the part is not theirs
    stale = kernel_summary(*seen[0], "CG_DISPATCH")
    stale.fields["kernel_count"] = 99
    assert summarize(other, kernel_part=stale).kernel_count == 1
    assert summarize(lean, kernel_part=stale, dispatch_prefix="X").kernel_count == 1
    assert summarize(lean, kernel_part=stale).kernel_count == 99  # used as given when it is this bundle's
