"""The columnar SQLite reader (``loaders.sqlite_access``): each ADBC batch copied into numpy as it arrives,
ids held as int32 while they fit, exact against the row-wise sqlite3 reader."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from dashboard.loaders import load_nsys_sqlite, nsys_reads, sqlite_access
from dashboard.loaders.sqlite_access import _chunks_to_frame, _Sink

from factories import write_nsys_sqlite


def _sink(batches, *, narrow=False, capacity=None) -> _Sink:
    s = _Sink(capacity, narrow)
    for b in batches:
        s.add(pa.array(b, type=pa.int64()))
    return s


def test_an_id_column_is_int32_while_it_fits_and_widens_exactly_when_a_batch_does_not():
    s = _sink([[1, 2], [-3]], narrow=True, capacity=2)  # the capacity hint is short: the array grows
    assert s.result().dtype == np.int32 and s.result().tolist() == [1, 2, -3]
    s.add(pa.array([2**40, 5], type=pa.int64()))
    assert s.result().dtype == np.int64 and s.result().tolist() == [1, 2, -3, 2**40, 5]
    assert _sink([[1], [2]]).result().dtype == np.int64  # a time column is never narrowed


def test_nulls_in_a_later_batch_give_a_masked_integer_column():
    out = _sink([[7, 8], [None, 9]], narrow=True).result()
    assert isinstance(out, pd.arrays.IntegerArray) and out.dtype == "Int32"
    assert out.tolist() == [7, 8, pd.NA, 9]


def test_nulls_are_read_from_the_buffers_of_a_sliced_column_of_any_integer_width():
    whole = pa.array([None, 5, 6, None, 2**40, None, 9, 10, 11, None], type=pa.int64())
    out = _Sink(None)
    out.add(whole.slice(3, 6))  # starts at bit 3 of the validity bitmap, and crosses a byte
    assert out.result().tolist() == [pd.NA, 2**40, pd.NA, 9, 10, 11]
    assert out.values[:6].tolist() == [0, 2**40, 0, 9, 10, 11]  # NULLs held as 0, never the buffer's bytes
    narrow = _Sink(None, narrow=True)
    narrow.add(pa.array([None, -2, 3], type=pa.int16()))
    assert narrow.result().dtype == "Int32" and narrow.result().tolist() == [pd.NA, -2, 3]


def test_a_kernel_read_outside_cuda_graphs_gives_an_int64_graph_node_column_of_nulls(tmp_path, monkeypatch):
    kernels = [{"start": 10 * i, "end": 10 * i + 5, "graphNodeId": None if i != 4 else 77} for i in range(6)]
    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels=kernels)
    monkeypatch.setattr(sqlite_access, "ADBC_BATCH_ROWS", 2)  # batches of NULLs only, then one with 77
    for lean in (False, True):  # a masked integer column, taken as it is (no pass over 10M values)
        nodes = load_nsys_sqlite(path, lean=lean).kernels["graph_node_id"]
        assert nodes.dtype == "Int64" and nodes.tolist() == [pd.NA] * 4 + [77, pd.NA], lean


def test_parts_join_in_order_with_the_widest_type_and_every_mask():
    first = [_sink([[1, 2]], narrow=True), _sink([[10, 11]], narrow=True)]
    second = [_sink([[3, 2**33]], narrow=True), _sink([[None, 12]], narrow=True)]
    frame = _chunks_to_frame([first, second], ["a", "b"])
    assert frame["a"].dtype == np.int64 and frame["a"].tolist() == [1, 2, 3, 2**33]
    assert frame["b"].dtype == "Int32" and frame["b"].tolist() == [10, 11, pd.NA, 12]


def test_a_column_that_mixes_integers_and_text_is_refused_so_the_caller_reads_it_row_by_row():
    s = _sink([[1]])
    with pytest.raises(TypeError, match="mixes"):
        s.add(pa.array(["x"]))
    text = _Sink(None)
    text.add(pa.array(["a", None]))
    assert text.result().tolist() == ["a", None]
    with pytest.raises(TypeError, match="mixes"):
        text.add(pa.array([1], type=pa.int64()))


def test_many_small_batches_read_exactly_what_sqlite3_reads(tmp_path, monkeypatch):
    kernels = [
        {"start": 10 * i, "end": 10 * i + 5, "streamId": 7 if i != 8 else 2**40, "correlationId": i if i != 9 else None}
        for i in range(11)
    ]
    runtime = [{"start": i, "end": i + 1, "name": "cudaLaunchKernel", "correlationId": i} for i in range(11)]
    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels=kernels, runtime=runtime)
    monkeypatch.setattr(sqlite_access, "ADBC_BATCH_ROWS", 3)
    fast = load_nsys_sqlite(path)
    assert fast.kernels["stream_id"].tolist() == [7] * 8 + [2**40] + [7, 7]
    assert fast.kernels["stream_id"].dtype == np.int64  # 2**40 does not fit int32
    assert fast.kernels["correlation_id"].tolist() == list(range(9)) + [-1, 10]
    assert fast.kernels["correlation_id"].dtype == np.int32
    monkeypatch.setattr(nsys_reads, "_HAVE_ADBC", False)
    slow = load_nsys_sqlite(path)
    for attr in ("kernels", "api_calls"):
        pd.testing.assert_frame_equal(
            getattr(fast, attr), getattr(slow, attr), check_categorical=False, check_exact=True
        )


def test_a_reads_capacity_hint_covers_every_row_and_never_more_than_the_file_could_hold(tmp_path):
    import sqlite3

    from dashboard.loaders.sqlite_access import connect_readonly

    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE dense (a INTEGER)")
        con.executemany("INSERT INTO dense VALUES (?)", [(i,) for i in range(300)])
        con.execute("CREATE TABLE sparse (a INTEGER)")
        con.executemany("INSERT INTO sparse (rowid, a) VALUES (?, ?)", [(1, 0), (10**15, 1)])
        con.execute("CREATE TABLE empty (a INTEGER)")
    con = connect_readonly(path)
    size = path.stat().st_size
    assert nsys_reads._rowid_span(con, "dense") == 300
    assert nsys_reads._rowid_span(con, "sparse") == size // 4  # not 10**15 rows' worth of memory
    assert nsys_reads._rowid_span(con, "empty") == 0
    assert nsys_reads._rowid_span(con, "missing") is None and nsys_reads._rowid_span(con, None) is None
    assert nsys_reads._count_alone(con, "dense") == 300


def test_a_summary_read_takes_demangled_names_only_when_a_short_name_does_not_resolve(tmp_path, monkeypatch):
    import sqlite3

    kernels = [{"start": 10 * i, "end": 10 * i + 5, "shortName": f"k{i % 2}"} for i in range(4)]
    path = write_nsys_sqlite(tmp_path / "t.sqlite", kernels=kernels)
    asked = []
    from dashboard.loaders import nsys_tables

    query = nsys_tables._query
    monkeypatch.setattr(nsys_tables, "_query", lambda con, sql, cols: asked.append(sql) or query(con, sql, cols))
    lean = load_nsys_sqlite(path, lean=True).kernels
    assert asked == [] and lean["short_name"].tolist() == ["k0", "k1", "k0", "k1"]  # the demangled ids unread
    # a short name id that StringIds lacks: that row falls back to its demangled name, as the full load does
    with sqlite3.connect(path) as con:
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = 999 WHERE start = 20")
    lean = load_nsys_sqlite(path, lean=True).kernels
    assert asked == ['SELECT "demangledName" FROM "CUPTI_ACTIVITY_KIND_KERNEL"']
    assert lean["short_name"].tolist() == ["k0", "k1", "void k0()", "k1"]
    assert lean["short_name"].tolist() == load_nsys_sqlite(path).kernels["short_name"].tolist()
    # the demangled ids of fewer rows than the first read gave: the file changed in between, said with its name
    monkeypatch.setattr(nsys_tables, "_query", lambda con, sql, cols: query(con, sql, cols).iloc[:-1])
    from dashboard.errors import TraceFormatError

    with pytest.raises(TraceFormatError, match=r"^t\.sqlite: the kernel table changed while it was read"):
        load_nsys_sqlite(path, lean=True)
