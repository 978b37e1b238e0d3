"""Read one time slice of an nsys export: the rows a summary computed per slice needs (``data.slices``).

Slices cut the session timeline at boundaries ``b_1 < ... < b_{N-1}``; slice ``i`` *owns* every row whose
``start`` lies in ``[b_i, b_{i+1})`` (slice 0 also owns NULL starts, the last slice everything from
``b_{N-1}`` on: SQLite orders values of every type, so each row is owned by exactly one slice). Row counts,
accounts and sums come from owned rows only; the rows that start before a slice and reach into it, and
the kernels just after it, are read apart (``SliceReader.kernels``, ``SliceReader.nvtx_ranges_before``).
The export is opened read-only and immutable, as ``load_nsys_sqlite`` opens it.
"""

from __future__ import annotations

import os
import sqlite3

import numpy as np
import pandas as pd

from dashboard.loaders.nsys_api_totals import read_api_totals
from dashboard.loaders.nsys_gpu_ops import _load_graph_launches, _load_memops
from dashboard.loaders.nsys_nvtx import NVTX_RANGE_TYPES, _load_nvtx, nvtx_domain_names
from dashboard.loaders.nsys_reads import read_failure, row_estimate
from dashboard.loaders.nsys_schema import check_nsys_tables, open_export, probe_schema
from dashboard.loaders.nsys_sql import _LEAN_KERNEL_COLUMNS, _api_sql, _kernel_sql, _load_strings
from dashboard.loaders.nsys_tables import (
    RULE_BACKTRACE,
    RULE_BAD_TIME,
    _kernel_frame,
    _load_meta,
    _rules,
    capture_gap_warnings,
    gpu_activity_missing,
    lean_demangled,
)
from dashboard.loaders.sqlite_access import _q, _query
from dashboard.model import API_TOTALS, RowAccount, TraceMeta, empty_frame

_TIME_LIMIT = 2**62
# The largest integer whose float64 value is below 2**62: ``_load_nvtx`` keeps timestamps whose float is
# below 2**62 when it finds where open ranges close; integers from 2**62 - 256 on round up to 2**62.
_FLOAT_BELOW_LIMIT = 2**62 - 257


def owned_condition(edges: list[int], i: int) -> str:
    """The SQL condition on ``"start"`` of the rows slice ``i`` owns ("" for a single slice)."""
    if not edges:
        return ""
    if i == 0:
        return f'("start" IS NULL OR "start" < {edges[0]})'
    if i == len(edges):
        return f'"start" >= {edges[-1]}'
    return f'"start" >= {edges[i - 1]} AND "start" < {edges[i]}'


def _or_where(*conds: str) -> str:
    return " OR ".join(f"({c})" for c in conds if c)


class SliceReader:
    """An open export and its string table, read slice by slice (a context manager).

    Raises:
        TraceNotFoundError, TraceFormatError: as ``load_nsys_sqlite``.
    """

    def __init__(self, path: str | os.PathLike, *, strings: bool = True):
        self.path, self.con = open_export(path)
        try:
            self.probe = probe_schema(self.con)
            check_nsys_tables(self.probe, self.path.name)
            self.strings = _load_strings(self.con, self.probe) if strings else {}
        except sqlite3.DatabaseError as exc:
            self.con.close()
            raise read_failure(self.path.name, exc) from exc

    def __enter__(self) -> SliceReader:
        return self

    def __exit__(self, *exc) -> None:
        self.con.close()

    def _table(self, logical: str) -> str | None:
        return self.probe.table(logical)

    def _scalar(self, sql: str):
        row = self.con.execute(sql).fetchone()
        return None if row is None else row[0]

    def unsliceable(self) -> str:
        """Why this export cannot be summarised per slice to the ns ("" when it can): a table the
        loaders read lacks its time columns (its rows are counted whole, not per slice), or kernel or
        NVTX times are not all integers (SQLite and pandas would order them differently)."""
        p = self.probe
        if self._table("CUPTI_ACTIVITY_KIND_KERNEL") and _kernel_sql(p, True) is None:
            return "the kernel table lacks its start/end columns"
        if self._table("CUPTI_ACTIVITY_KIND_RUNTIME") and _api_sql(p) is None:
            return "the CUDA API table lacks its start/end/nameId columns"
        nvtx = self._table("NVTX_EVENTS")
        if nvtx and not {"start", "eventType"} <= set(p.columns(nvtx)):
            return "the NVTX table lacks its start/eventType columns"
        for logical in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"):
            t = self._table(logical)
            if t and not {"start", "end"} <= set(p.columns(t)):
                return f"{t} lacks its start/end columns"
        for logical in ("CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS"):
            t = self._table(logical)
            if not t:
                continue
            end = '"end"' if "end" in p.columns(t) else "NULL"
            odd = self._scalar(
                f'SELECT 1 FROM {_q(t)} WHERE typeof("start") NOT IN (\'integer\', \'null\') '
                f"OR typeof({end}) NOT IN ('integer', 'null') LIMIT 1"
            )
            if odd:
                return f"{t} holds times that are not integers"
        return ""

    def kernel_time_range(self, max_duration_ns: int) -> tuple[int, int] | None:
        """``(first start, last end)`` of the kernels with plausible times (at most ``max_duration_ns`` long;
        None without any): where the slices are cut. Any cut gives the same summary; an even one gives
        slices of similar size, which one corrupt kernel of centuries would not."""
        t = self._table("CUPTI_ACTIVITY_KIND_KERNEL")
        if not t or _kernel_sql(self.probe, True) is None:
            return None
        lo, hi = self.con.execute(
            f'SELECT min("start"), max("end") FROM {_q(t)} WHERE "start" > 0 AND "end" >= "start" '
            f'AND "end" < {_TIME_LIMIT} AND "end" - "start" <= {int(max_duration_ns)}'
        ).fetchone()
        return None if lo is None else (int(lo), int(hi))

    def row_estimate(self) -> int:
        """``nsys_reads.row_estimate`` of this export."""
        return row_estimate(self.con, self.probe)

    def nvtx_close_at(self) -> int:
        """Where open NVTX ranges close: the largest NVTX timestamp (start or end) of the file, exactly as
        ``_load_nvtx`` finds it from all rows (through float64). 0 without NVTX timestamps."""
        t = self._table("NVTX_EVENTS")
        if not t or not {"start", "eventType"} <= set(self.probe.columns(t)):
            return 0
        cols = ['"start"'] + (['"end"'] if "end" in self.probe.columns(t) else [])
        best = None
        for c in cols:
            v = self._scalar(
                f"SELECT max({c}) FROM {_q(t)} WHERE {c} >= -{_FLOAT_BELOW_LIMIT} AND {c} <= {_FLOAT_BELOW_LIMIT}"
            )
            if v is not None and (best is None or v > best):
                best = v
        return 0 if best is None else int(float(best))

    def domain_names(self) -> dict[tuple[int, int], str]:
        """The NVTX domain names of the whole export (``nvtx_domain_names``)."""
        return nvtx_domain_names(self.con, self.probe, self.strings)

    def kernels(self, where: str) -> pd.DataFrame:
        """Kernel rows (lean columns, as ``load_nsys_sqlite(lean=True)`` reads them) matching ``where``, in
        file order; an empty KERNELS frame without a kernel table."""
        sql = _kernel_sql(self.probe, True, where)
        raw = None if sql is None else _query(self.con, sql, _LEAN_KERNEL_COLUMNS)
        return _kernel_frame(raw, self.strings, lean_demangled(self.con, self.probe, self.path.name, where))[0]

    def kernels_owned_or_before(self, edges: list[int], i: int) -> pd.DataFrame:
        """The kernels slice ``i`` owns and those that start before it and end after its start."""
        before = f'"start" < {edges[i - 1]} AND "end" > {edges[i - 1]}' if i > 0 else ""
        return self.kernels(_or_where(owned_condition(edges, i), before))

    def kernels_after(self, hi: int, until: int, stream_ids: list[int] | None) -> pd.DataFrame:
        """Kernels starting in ``[hi, until)`` (on one of ``stream_ids`` when given): the stream successors
        that same-stream overrun clipping of the kernels before ``hi`` looks at."""
        where = f'"start" >= {hi} AND "start" < {until}'
        cols = self.probe.columns(self._table("CUPTI_ACTIVITY_KIND_KERNEL"))
        if stream_ids is not None and "streamId" in cols:
            where += ' AND "streamId" IN (' + ", ".join(str(int(s)) for s in stream_ids) + ")"
        return self.kernels(where)

    def api_totals(self, where: str) -> tuple[pd.DataFrame, RowAccount | None, int]:
        """The CUDA API calls matching ``where`` (without backtrace duplicates) as ``API_TOTALS`` (see
        ``nsys_api_totals``), their "CUDA API calls" account and the rows dropped for unusable times."""
        t = self._table("CUPTI_ACTIVITY_KIND_RUNTIME")
        sql = _api_sql(self.probe, where=where, totals=True)
        if not t or sql is None:
            return empty_frame(API_TOTALS), None, 0
        read = int(self._scalar(f"SELECT count(*) FROM {_q(t)}" + (f" WHERE {where}" if where else "")))
        totals, returned, bad = read_api_totals(self.con, sql, self.strings)
        kept = int(totals["count"].sum())
        account = RowAccount(
            "CUDA API calls", read, kept, _rules((RULE_BACKTRACE, read - returned), (RULE_BAD_TIME, bad))
        )
        return totals, account, bad

    def nvtx(self, where: str, close_at: int, domains: dict):
        """``_load_nvtx`` of the NVTX rows matching ``where``, closing open ranges at ``close_at``."""
        return _load_nvtx(self.con, self.probe, self.strings, where=where, close_at=close_at, domain_names=domains)

    def nvtx_ranges_before(self, lo: int, close_at: int, domains: dict) -> pd.DataFrame:
        """NVTX ranges that start before ``lo`` and end after it (an open range ends at ``close_at``)."""
        t = self._table("NVTX_EVENTS")
        if not t:
            return self.nvtx("0", close_at, domains)[0]
        end = '"end"' if "end" in self.probe.columns(t) else "NULL"
        types = ", ".join(map(str, NVTX_RANGE_TYPES))
        open_ = f" OR {end} IS NULL" if close_at > lo else ""
        return self.nvtx(f'"start" < {lo} AND ({end} > {lo}{open_}) AND "eventType" IN ({types})', close_at, domains)[0]

    def memops(self, where: str) -> tuple[int, int, RowAccount]:
        """``(rows loaded, rows dropped for unusable times, account)`` of memcpy/memset matching ``where``."""
        frame, bad, account = _load_memops(self.con, self.probe, where)
        return len(frame), bad, account

    def graph_launches(self, where: str) -> tuple[int, int, RowAccount, np.ndarray]:
        """``(rows loaded, rows dropped, account, pid of every row read)`` of CUDA graph launches matching ``where``."""
        frame, bad, account, pids = _load_graph_launches(self.con, self.probe, where)
        return len(frame), bad, account, pids

    def meta(
        self,
        dropped_zero_ts: int,
        invalid: dict[str, int],
        accounts: tuple[RowAccount, ...],
        launch_calls: dict[int, int],
        executions: dict[int, int],
    ) -> TraceMeta:
        """The TraceMeta ``load_nsys_sqlite`` gives this export, from counts added over its slices
        (``launch_calls`` and ``executions``: per process)."""
        launches = tuple((p, n, executions.get(p, 0)) for p, n in sorted(launch_calls.items()) if n)
        total = sum(executions.values())
        return _load_meta(
            self.con,
            self.probe,
            self.path,
            dropped_zero_ts,
            invalid,
            accounts=accounts,
            launches=launches,
            warnings=capture_gap_warnings(launches, unattributed=executions.get(0, 0)),
            gpu_activity_missing=gpu_activity_missing(launches, total),
        )
