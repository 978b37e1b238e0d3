"""CUDA API calls read as totals per thread and name, reduced chunk by chunk as the rows arrive.

A summary needs of the CUDA API calls only, per raw name, how many and their summed duration, and per process
how many were kernel launches: never one row per call. Read as rows, 10M calls are ~0.3 GB of columns and more
as a frame; read as totals they are a few hundred rows however many calls there are. The rows are judged
exactly as ``nsys_tables._api_frame`` judges them (the same ``_int`` and ``_drop_invalid_times``), so the
totals equal those of the full frame.
"""

from __future__ import annotations

import sqlite3
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pandas as pd

from dashboard.loaders.nsys_reads import READ_THREAD, interrupted, rowid_ranges
from dashboard.loaders.nsys_schema import SchemaProbe
from dashboard.loaders.nsys_sql import API_TOTALS_READ, _api_sql
from dashboard.loaders.nsys_tables import _MISSING, _drop_invalid_times, _int, _names, _pid_of
from dashboard.loaders.sqlite_access import (
    _HAVE_ADBC,
    ADBC_BATCH_ROWS,
    _int_values,
    adbc_batches,
    own_connection,
    records_frame,
)
from dashboard.model import API_TOTALS, conform, empty_frame

# What a column's NULL (or non-numeric value) becomes before the rows are judged: as ``_api_frame`` reads them.
_DEFAULTS = {"start_ns": _MISSING, "end_ns": _MISSING, "global_tid": 0, "name_id": _MISSING}


class ApiTotals:
    """Totals of the usable calls by (global_tid, name id), added up chunk by chunk; ``returned`` counts every
    row the query gave, ``dropped`` those left out for unusable times."""

    def __init__(self) -> None:
        self.parts: list[pd.DataFrame] = []
        self.returned = 0
        self.dropped = 0

    def add(self, raw: pd.DataFrame) -> None:
        """One chunk of rows (columns ``API_TOTALS_READ``, any dtype SQLite gave them)."""
        self.returned += len(raw)
        for c, default in _DEFAULTS.items():
            raw[c] = _int(raw[c], default)
        raw, dropped = _drop_invalid_times(raw)
        self.dropped += dropped
        if len(raw):
            raw["total_ns"] = raw["end_ns"].to_numpy(np.int64) - raw["start_ns"].to_numpy(np.int64)
            grouped = raw.groupby(["global_tid", "name_id"], sort=False)["total_ns"]
            self.parts.append(pd.DataFrame({"count": grouped.size(), "total_ns": grouped.sum()}))

    def merge(self, other: ApiTotals) -> None:
        """Take in the totals of another part of the same query's rows."""
        self.parts += other.parts
        self.returned += other.returned
        self.dropped += other.dropped

    def frame(self, strings: dict[int, str]) -> pd.DataFrame:
        """``API_TOTALS``, one row per (thread, name id), sorted by both; names resolved as ``_api_frame``
        resolves them (an id of NULL or a non-number is ``<unnamed ?>``)."""
        if not self.parts:
            return empty_frame(API_TOTALS)
        t = pd.concat(self.parts).groupby(level=[0, 1], sort=True).sum().reset_index()
        self.parts = []
        ids = t["name_id"].to_numpy(np.int64)
        t["name"] = _names(pd.Series(pd.arrays.IntegerArray(ids, ids == _MISSING)), strings)
        t["pid"] = _pid_of(t["global_tid"])
        return conform(t, API_TOTALS)


def _adbc_totals(uri: str, sql: str) -> ApiTotals:
    """The totals of ``sql``'s rows through ADBC's Arrow batches (raises what ADBC raises)."""
    totals = ApiTotals()
    for batch in adbc_batches(uri, sql):
        columns = zip(API_TOTALS_READ, batch.columns)
        # copy=False: the batch's columns as they are, not copied into one block (nothing writes them)
        totals.add(pd.DataFrame({c: _column(col, _DEFAULTS[c]) for c, col in columns}, copy=False))
        del batch
    return totals


class ApiTotalsRun:
    """A summary's CUDA API totals (``read_api_totals`` of the whole table), read in the background from when it
    is made: with ADBC, two rowid ranges of the table in threads of their own, so that they take both cores while
    the caller builds frames of what it has read before. ``result()`` waits for them; without ADBC, or when ADBC
    cannot type a column, it reads the query there, as ``read_api_totals`` does."""

    def __init__(self, con: sqlite3.Connection, probe: SchemaProbe, strings: dict[int, str]):
        self.con, self.strings = con, strings
        self.sql = _api_sql(probe, totals=True)
        self.pool: ThreadPoolExecutor | None = None
        self.futures: list[Future] = []
        uri = getattr(con, "tracedash_uri", None)
        if self.sql is None or not (_HAVE_ADBC and uri):
            return
        table = probe.table("CUPTI_ACTIVITY_KIND_RUNTIME")
        ranges = rowid_ranges(con, table, 2) if table else None
        queries = [_api_sql(probe, r, totals=True) for r in ranges] if ranges else [self.sql]
        self.pool = ThreadPoolExecutor(max_workers=len(queries), thread_name_prefix=READ_THREAD)
        self.futures = [self.pool.submit(_adbc_totals, uri, q) for q in queries]

    def result(self) -> tuple[pd.DataFrame, int, int] | None:
        """``read_api_totals``' answer for the whole table (None when the table cannot be read as calls)."""
        if self.sql is None:
            return None
        if self.pool is not None:
            try:
                totals = ApiTotals()
                for f in self.futures:
                    totals.merge(f.result())
                return totals.frame(self.strings), totals.returned, totals.dropped
            except Exception:  # noqa: BLE001 - ADBC could not type a column: the exact sqlite3 path below
                pass
            finally:
                self.close()
        return read_api_totals(self.con, self.sql, self.strings, adbc=False)

    def close(self) -> None:
        """Wait for the threads (a read cannot be stopped half-way) and end them; not on the user's Ctrl-C."""
        if self.pool is not None:
            self.pool.shutdown(wait=not interrupted(), cancel_futures=True)
            self.pool = None


def read_api_totals(
    con: sqlite3.Connection, sql: str, strings: dict[int, str], *, adbc: bool = True
) -> tuple[pd.DataFrame, int, int]:
    """``(API_TOTALS frame, rows the query returned, rows dropped for unusable times)`` of ``sql`` (a query of
    ``nsys_sql._api_sql(totals=True)``). Through ADBC's Arrow batches when it can type the columns (and ``adbc``),
    else the exact sqlite3 path on its own connection (it may run beside other reads of ``con``)."""
    uri = getattr(con, "tracedash_uri", None)
    if adbc and _HAVE_ADBC and uri:
        try:
            totals = _adbc_totals(uri, sql)
            return totals.frame(strings), totals.returned, totals.dropped
        except Exception:  # noqa: BLE001 - ADBC could not type a column: the exact sqlite3 path
            pass
    with own_connection(con) as own:
        totals = ApiTotals()
        cur = own.execute(sql)
        while rows := cur.fetchmany(ADBC_BATCH_ROWS):
            totals.add(records_frame(rows, list(API_TOTALS_READ)))
        return totals.frame(strings), totals.returned, totals.dropped


def _column(col, default: int):
    """An Arrow column as ``_int`` takes it: integers as int64 with NULL as ``default`` (never through float,
    which would round times above 2**53), a column of NULLs as ``default``, anything else as Python values."""
    import pyarrow as pa

    if pa.types.is_integer(col.type):
        values, nulls = _int_values(col)
        if nulls is not None:
            values[nulls] = default  # a copy already
        return values.astype(np.int64, copy=False)
    if pa.types.is_null(col.type):
        return np.full(len(col), default, dtype=np.int64)
    return pd.Series(col.to_pylist(), dtype=object)
