"""The first half of reading an nsys export: open it, probe its schema, read its names and start the kernel and CUDA
API queries, in threads of their own when ADBC is there. ``nsys_sqlite.load_nsys_sqlite`` does the second half (it
collects the reads and builds the frames).

Importable without pandas: a cold ``tracedash summarize`` starts its reads here and imports pandas and the analysis
modules while SQLite decodes rows (``begin_reads``). Nothing here imports a module in a worker thread: the ADBC
driver, pyarrow and numpy are imported with this module, so no thread waits on an import the main thread is doing.
"""

from __future__ import annotations

import inspect
import os
import sqlite3
import sys
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from dashboard.errors import TraceFormatError, clean_message
from dashboard.loaders.nsys_schema import SchemaProbe, check_nsys_tables, open_export, probe_schema
from dashboard.loaders.nsys_sql import (
    _API_COLUMNS,
    _KERNEL_COLUMNS,
    _LEAN_KERNEL_COLUMNS,
    KERNEL_REST_COLUMNS,
    KERNEL_TIME_COLUMNS,
    NARROW_READ_COLUMNS,
    _api_sql,
    _kernel_sql,
    _load_strings,
    kernel_sql_parts,
)
from dashboard.loaders.sqlite_access import (
    _HAVE_ADBC,
    _chunks_to_frame,
    _count,
    _fetch_columns,
    _q,
    _query_sqlite3,
    own_connection,
)

READ_THREAD = "tracedash-read"  # the name prefix of the threads that read an export (``cli`` leaves them at Ctrl-C)


def interrupted() -> bool:
    """Whether the exception now unwinding is the user's Ctrl-C: reads running in threads are then left to run
    out, not waited for (a 10M-kernel read goes on for seconds; ``cli`` exits without joining them)."""
    return isinstance(sys.exc_info()[1], KeyboardInterrupt)


# A query to run: (sql or None, result columns, table cut into two rowid ranges read in parallel or None, row bound).
Job = tuple[str | None, list[str], str | None, int | None]


def stage_reporter(progress):
    """``progress`` as a callable ``(stage, rows=None)``: a callback that takes a ``rows`` keyword gets the
    row counts known as a stage starts (``(("kernels", n), ...)``), one that takes only the stage name
    (as before rows were reported) gets just that. None gives a callable that does nothing."""
    if progress is None:
        return lambda stage, rows=None: None
    try:
        params = inspect.signature(progress).parameters.values()
        takes_rows = any(p.name == "rows" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    except (TypeError, ValueError):  # a builtin without a signature
        takes_rows = False
    if not takes_rows:
        return lambda stage, rows=None: progress(stage)
    return lambda stage, rows=None: progress(stage, rows=rows)


def read_failure(name: str, exc: BaseException) -> TraceFormatError | None:
    """The error to raise for ``exc`` met while reading the export named ``name``: SQLite's damage and data no
    column can hold, said as such; None for anything else (the caller re-raises it)."""
    if isinstance(exc, sqlite3.DatabaseError):
        return TraceFormatError(
            f"{name}: the SQLite file is damaged or truncated ({clean_message(exc, with_type=False)})"
        )
    if isinstance(exc, (UnicodeDecodeError, MemoryError, OverflowError)):
        detail = clean_message(exc, with_type=False)
        return TraceFormatError(f"{name}: the SQLite file holds unreadable data ({detail})")
    return None


def _rowid_bounds(con: sqlite3.Connection, table: str) -> tuple[int | None, int | None] | None:
    """``(min(rowid), max(rowid))`` of ``table`` (both None when it is empty; None when it cannot be asked)."""
    try:  # two queries: SQLite answers a lone min() or max() of the rowid from the b-tree's ends, both at once by a
        # scan
        lo = con.execute(f"SELECT min(rowid) FROM {_q(table)}").fetchone()[0]
        hi = con.execute(f"SELECT max(rowid) FROM {_q(table)}").fetchone()[0]
    except sqlite3.Error:
        return None
    return lo, hi


def rowid_ranges(con: sqlite3.Connection, table: str, parts: int) -> list[str] | None:
    """SQL conditions cutting ``table`` into ``parts`` rowid ranges (None if it cannot be cut: it cannot be asked,
    or it holds too few rows to be worth it)."""
    bounds = _rowid_bounds(con, table)
    if bounds is None:
        return None
    lo, hi = bounds
    if lo is None or hi - lo < 100_000:
        return None
    edges = [lo + (hi - lo + 1) * i // parts for i in range(parts)] + [hi + 1]
    return [f"rowid >= {edges[i]} AND rowid < {edges[i + 1]}" for i in range(parts)]


def _rowid_parts(con: sqlite3.Connection, table: str, parts: int) -> list[str] | None:
    """``WHERE`` clauses of ``rowid_ranges`` (None if the table cannot be cut)."""
    ranges = rowid_ranges(con, table, parts)
    return None if ranges is None else [f" WHERE {r}" for r in ranges]


def _rowid_span(con: sqlite3.Connection, table: str | None) -> int | None:
    """At least the rows of ``table`` (``max(rowid) - min(rowid) + 1``, two b-tree lookups): a read's capacity
    hint without counting; None when it cannot be had. Sparse rowids only leave pages untouched, but no more
    than the file could hold (a row takes at least 4 bytes of a page) is ever asked for."""
    bounds = _rowid_bounds(con, table) if table else None
    if bounds is None:
        return None
    lo, hi = bounds
    if lo is None:
        return 0
    try:
        pages, page_bytes = (con.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_count", "page_size"))
    except sqlite3.Error:
        return None
    return min(hi - lo + 1, pages * page_bytes // 4)


# The tables whose rows a summary's memory grows with (``data.slice_count``).
ESTIMATED_TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "NVTX_EVENTS",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
)


def row_estimate(con: sqlite3.Connection, probe: SchemaProbe) -> int:
    """About how many kernel, CUDA API, NVTX and memcpy/memset rows the export holds (rowid ranges, as
    ``_rowid_span``: no scan, and never more than the file could hold, whatever its rowids)."""
    return sum(_rowid_span(con, t) or 0 for logical in ESTIMATED_TABLES if (t := probe.table(logical)))


def estimate_rows(path: str | os.PathLike) -> int:
    """``row_estimate`` of the export at ``path``.

    Raises:
        TraceNotFoundError, TraceFormatError: as ``load_nsys_sqlite``.
    """
    p, con = open_export(path)
    try:
        probe = probe_schema(con)
        check_nsys_tables(probe, p.name)
        return row_estimate(con, probe)
    except sqlite3.DatabaseError as exc:
        raise read_failure(p.name, exc) from exc
    finally:
        con.close()


def _count_alone(con: sqlite3.Connection, table: str | None) -> int:
    """``_count`` on a connection of its own (it runs beside the other reads of ``con``)."""
    with own_connection(con) as own:
        return _count(own, table)


def _narrow(columns: list[str]) -> tuple[bool, ...]:
    """Which columns of a read are ids held as int32 while they fit (the typed frames narrow them anyway)."""
    return tuple(c in NARROW_READ_COLUMNS for c in columns)


class QueryRun:
    """Independent queries, started at once: with ADBC in parallel threads, each on its own connection (without
    ADBC they run one by one on ``con`` when the results are asked for).

    ``jobs`` maps a name to a ``Job``: a query without a WHERE clause on its split table is cut into two rowid
    ranges read in parallel and joined in order; its row bound (its table's rows) lets each column be allocated
    once. ``also``: further reads (callables that open their own connections), run beside them.
    """

    def __init__(
        self, con: sqlite3.Connection, jobs: dict[str, Job], also: dict[str, Callable[[], object]] | None = None
    ):
        self.con = con
        self.names = list(jobs) + list(also or {})
        self.todo = {k: v for k, v in jobs.items() if v[0] is not None}
        self.also = dict(also or {})
        self.pool: ThreadPoolExecutor | None = None
        self.futures: dict[str, list[Future]] = {}
        self.others: dict[str, Future] = {}
        uri = getattr(con, "tracedash_uri", None)
        if not (_HAVE_ADBC and uri and (self.todo or self.also)):
            return
        pieces = {
            k: [sql + w for w in (_rowid_parts(con, split, 2) if split else None) or [""]]
            for k, (sql, _, split, _) in self.todo.items()
        }
        self.pool = ThreadPoolExecutor(
            max_workers=sum(len(v) for v in pieces.values()) + len(self.also), thread_name_prefix=READ_THREAD
        )
        self.others = {k: self.pool.submit(read) for k, read in self.also.items()}
        self.futures = {k: [self._submit(uri, q, *self.todo[k][1:]) for q in qs] for k, qs in pieces.items()}

    def _submit(self, uri: str, sql: str, columns: list[str], _split, rows: int | None) -> Future:
        return self.pool.submit(_fetch_columns, uri, sql, len(columns), rows, _narrow(columns))

    def results(self) -> dict[str, object]:
        """Every query's frame (None for a job without SQL) and every ``also`` read's result, by name."""
        out: dict[str, object] = dict.fromkeys(self.names)
        if self.pool is None:
            out.update({k: _query_sqlite3(self.con, sql, cols) for k, (sql, cols, _, _) in self.todo.items()})
            out.update({k: read() for k, read in self.also.items()})
            return out
        try:
            for k, futs in self.futures.items():
                sql, cols, _, _ = self.todo[k]
                try:
                    out[k] = _chunks_to_frame([f.result() for f in futs], cols)
                except Exception:  # noqa: BLE001 - ADBC could not type a column: exact sqlite3 path
                    out[k] = _query_sqlite3(self.con, sql, cols)
            out.update({k: f.result() for k, f in self.others.items()})
        finally:
            self.close()
        return out

    def close(self) -> None:
        """Wait for the threads (a read cannot be stopped half-way) and end them; not on the user's Ctrl-C
        (``interrupted``)."""
        if self.pool is not None:
            self.pool.shutdown(wait=not interrupted(), cancel_futures=True)
            self.pool = None


def _run_queries(
    con: sqlite3.Connection, jobs: dict[str, Job], also: dict[str, Callable[[], object]] | None = None
) -> dict[str, object]:
    """``QueryRun(con, jobs, also).results()``: the queries started together and waited for."""
    return QueryRun(con, jobs, also).results()


@dataclass
class StartedReads:
    """An export opened, probed and named, with its kernel and CUDA API reads running (``begin_reads``).

    ``queries`` holds the kernel rows (``"kernels"``), the CUDA API rows of a full read (``"api"``) and the CUDA
    API table's row count (``"api_read"``); ``times``: the kernel rows' times and devices read first for a page's
    preview (then ``"kernels"`` holds the other columns). Whoever takes it closes it.
    """

    path: Path
    con: sqlite3.Connection
    probe: SchemaProbe
    strings: dict[int, str]
    lean: bool
    queries: QueryRun
    times: object = None
    closed: bool = field(default=False, repr=False)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self.queries.close()
            finally:
                self.con.close()


def begin_reads(path: str | os.PathLike, progress=None, *, lean: bool = False, on_kernel_times=None) -> StartedReads:
    """Open the export at ``path`` and start its reads (see ``load_nsys_sqlite`` for ``progress``, ``lean`` and
    ``on_kernel_times``; the last needs pandas imported, as it builds the times' frame before the rest starts).

    Raises:
        TraceNotFoundError, TraceFormatError: as ``load_nsys_sqlite``.
    """
    step = stage_reporter(progress)
    p, con = open_export(path)
    try:
        probe = probe_schema(con)
        check_nsys_tables(probe, p.name)
        step("names")
        strings = _load_strings(con, probe)
        kernel_table = probe.table("CUPTI_ACTIVITY_KIND_KERNEL")
        # count(*) walks the b-tree without decoding a row: cheap next to the read, and it lets the page show the size.
        # A summary shows no page: its reads start at once, sized by the rowid range (10M kernels: ~0.3 s sooner)
        kernel_rows = _rowid_span(con, kernel_table) if lean else _count(con, kernel_table)
        runtime_table = probe.table("CUPTI_ACTIVITY_KIND_RUNTIME")
        step("kernels and CUDA API calls", rows=None if lean else (("kernels", kernel_rows),))
        kernel_job = (_kernel_sql(probe, lean), _LEAN_KERNEL_COLUMNS if lean else _KERNEL_COLUMNS)
        parts = kernel_sql_parts(probe) if on_kernel_times is not None and not lean else None
        times = None
        if parts is not None:
            times = _run_queries(con, {"times": (parts[0], KERNEL_TIME_COLUMNS, kernel_table, kernel_rows)})["times"]
            on_kernel_times(*(times[c] for c in KERNEL_TIME_COLUMNS))
            kernel_job = (parts[1], KERNEL_REST_COLUMNS)
        jobs: dict[str, Job] = {"kernels": (*kernel_job, kernel_table, kernel_rows)}
        if not lean:
            jobs["api"] = (_api_sql(probe), _API_COLUMNS, None, _rowid_span(con, runtime_table))
        # The API table's row count is only its account's: counted beside the reads (10M calls: ~0.4 s).
        also = {"api_read": lambda: _count_alone(con, runtime_table)}
        return StartedReads(p, con, probe, strings, lean, QueryRun(con, jobs, also), times)
    except BaseException as exc:
        con.close()
        failure = read_failure(p.name, exc)
        if failure is not None:
            raise failure from exc
        raise
