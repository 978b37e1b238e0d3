"""Read an nsys SQLite export (any version 2021.5–2026.2) into a ``TraceBundle``.

The file is opened read-only and immutable (no lock, no ``-journal``/``-wal`` file is ever created
next to it). Tables and columns are probed, never assumed: a missing table gives a typed empty
frame, a missing optional column a default value. See ``shared/reference/nsys_schema_notes.md``.
"""

from __future__ import annotations

import inspect
import os
import sqlite3
from collections.abc import Callable

import numpy as np
import pandas as pd

from dashboard.errors import TraceFormatError, clean_message
from dashboard.loaders.nsys_api_totals import read_api_totals
from dashboard.loaders.nsys_gpu_ops import _load_graph_launches, _load_memops
from dashboard.loaders.nsys_nvtx import _load_nvtx
from dashboard.loaders.nsys_schema import (
    _NSYS_MARKER_TABLES,
    LOADER_TABLES,
    check_nsys_tables,
    open_export,
    probe_schema,
)
from dashboard.loaders.nsys_tables import (
    _API_COLUMNS,
    _KERNEL_COLUMNS,
    _LEAN_KERNEL_COLUMNS,
    KERNEL_REST_COLUMNS,
    KERNEL_TIME_COLUMNS,
    NARROW_READ_COLUMNS,
    RULE_BACKTRACE,
    RULE_BAD_TIME,
    _api_frame,
    _api_sql,
    _kernel_account,
    _kernel_frame,
    _kernel_sql,
    _load_meta,
    _load_strings,
    _rules,
    _thread_names,
    capture_gap_warnings,
    gpu_activity_missing,
    kernel_sql_parts,
    launches_by_pid,
    lean_demangled,
)
from dashboard.loaders.nsys_traits import old_schema_traits
from dashboard.loaders.sqlite_access import (
    _HAVE_ADBC,
    _chunks_to_frame,
    _count,
    _fetch_columns,
    _q,
    _query_sqlite3,
    own_connection,
)
from dashboard.model import API_CALLS, API_TOTALS, RowAccount, TraceBundle, empty_frame


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


def _rowid_bounds(con: sqlite3.Connection, table: str) -> tuple[int | None, int | None] | None:
    """``(min(rowid), max(rowid))`` of ``table`` (both None when it is empty; None when it cannot be asked)."""
    try:  # two queries: SQLite answers a lone min() or max() of the rowid from the b-tree's ends, both at once by a
        # scan
        lo = con.execute(f"SELECT min(rowid) FROM {_q(table)}").fetchone()[0]
        hi = con.execute(f"SELECT max(rowid) FROM {_q(table)}").fetchone()[0]
    except sqlite3.Error:
        return None
    return lo, hi


def _rowid_parts(con: sqlite3.Connection, table: str, parts: int) -> list[str] | None:
    """``WHERE`` clauses cutting ``table`` into ``parts`` rowid ranges (None if it cannot be cut)."""
    bounds = _rowid_bounds(con, table)
    if bounds is None:
        return None
    lo, hi = bounds
    if lo is None or hi - lo < 100_000:
        return None
    edges = [lo + (hi - lo + 1) * i // parts for i in range(parts)] + [hi + 1]
    return [f" WHERE rowid >= {edges[i]} AND rowid < {edges[i + 1]}" for i in range(parts)]


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


def _count_alone(con: sqlite3.Connection, table: str | None) -> int:
    """``_count`` on a connection of its own (it runs beside the other reads of ``con``)."""
    with own_connection(con) as own:
        return _count(own, table)


def _narrow(columns: list[str]) -> tuple[bool, ...]:
    """Which columns of a read are ids held as int32 while they fit (the typed frames narrow them anyway)."""
    return tuple(c in NARROW_READ_COLUMNS for c in columns)


def _run_queries(
    con: sqlite3.Connection,
    jobs: dict[str, tuple[str | None, list[str], str | None, int]],
    also: dict[str, Callable[[], object]] | None = None,
) -> dict[str, object]:
    """Run independent queries; with ADBC, in parallel threads, each on its own connection.

    ``jobs`` maps a name to ``(sql, columns, split_table, rows)``: a query without a WHERE clause on
    ``split_table`` is cut into two rowid ranges read in parallel and joined in order; ``rows`` is an
    upper bound of its result's rows (its table's), so each column is allocated once. ``also``: further
    reads (callables that open their own connections), run beside them; their results under their names.
    """
    out: dict[str, object] = {k: None for k in jobs}
    todo = {k: v for k, v in jobs.items() if v[0] is not None}
    also = also or {}
    uri = getattr(con, "tracedash_uri", None)
    if not (_HAVE_ADBC and uri and (todo or also)):
        out.update({k: _query_sqlite3(con, sql, cols) for k, (sql, cols, _, _) in todo.items()})
        out.update({k: read() for k, read in also.items()})
        return out
    from concurrent.futures import ThreadPoolExecutor

    pieces = {
        k: [sql + w for w in (_rowid_parts(con, split, 2) if split else None) or [""]]
        for k, (sql, _, split, _) in todo.items()
    }
    with ThreadPoolExecutor(max_workers=sum(len(v) for v in pieces.values()) + len(also)) as pool:
        others = {k: pool.submit(read) for k, read in also.items()}
        futures = {
            k: [pool.submit(_fetch_columns, uri, q, len(todo[k][1]), todo[k][3], _narrow(todo[k][1])) for q in qs]
            for k, qs in pieces.items()
        }
        for k, futs in futures.items():
            sql, cols, _, _ = todo[k]
            try:
                out[k] = _chunks_to_frame([f.result() for f in futs], cols)
            except Exception:  # noqa: BLE001 - ADBC could not type a column: exact sqlite3 path
                out[k] = _query_sqlite3(con, sql, cols)
        out.update({k: f.result() for k, f in others.items()})
    return out


def _join_columns(left: pd.DataFrame, right: pd.DataFrame, name: str) -> pd.DataFrame:
    """Two column groups of one table's rows, read in the same (rowid) order, as one frame (no copy)."""
    if len(left) != len(right):  # the file changed between the two reads
        raise TraceFormatError(f"{name}: the kernel table changed while it was read (is it still being written?)")
    return pd.DataFrame({c: f[c].array for f in (left, right) for c in f.columns}, copy=False)


def inspect_export(path: str | os.PathLike) -> dict:
    """Describe what tracedash finds in an nsys export, without loading the events.

    Returns:
        dict with ``file``, ``nsys_version``, ``schema_version``, ``tables`` (name -> list of
        columns), ``rows`` (row count per table the loaders read), and ``loaders``: one entry per
        loader with ``table`` (resolved name or None), ``status`` ("ok", "absent" or "unusable"),
        ``missing`` (required and optional columns not found); ``old_schema``: the schema traits of an
        export older than 2021.5 (``nsys_traits.old_schema_traits``; empty otherwise); ``unread``: row count of every
        other
        table that holds rows (not ``ENUM_*``), which tracedash does not read (OS runtime calls,
        cuDNN/cuBLAS events, CUDA synchronization events, metadata tables, ...).

    Raises:
        TraceNotFoundError, TraceFormatError: as ``load_nsys_sqlite`` (also for a SQLite file
            without any nsys table).
    """
    p, con = open_export(path)
    try:
        probe = probe_schema(con)
        check_nsys_tables(probe, p.name)
        meta = _load_meta(con, probe, p, 0)
        loaders, rows = {}, {}
        for label, (logical, required, optional) in LOADER_TABLES.items():
            table = probe.table(logical)
            cols = set(probe.columns(table))
            missing = [c for c in (*required, *optional) if c not in cols]
            status = "absent" if not table else ("unusable" if any(c not in cols for c in required) else "ok")
            loaders[label] = {"table": table, "status": status, "missing": missing if table else []}
            if table:
                rows[table] = con.execute(f'SELECT count(*) FROM {_q(table)}').fetchone()[0]
        unread = {}  # tables with rows that no loader reads (OS runtime, cuDNN/cuBLAS, sync events, ...)
        for table in sorted(set(probe.tables) - set(rows)):
            if not table.startswith(("ENUM_", "sqlite_")) and table not in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
                n = con.execute(f'SELECT count(*) FROM {_q(table)}').fetchone()[0]
                if n:
                    unread[table] = n
        return {
            "file": p.name,
            "nsys_version": meta.nsys_version,
            "schema_version": meta.schema_version,
            "old_schema": old_schema_traits(con, probe.tables),
            "is_nsys": any(probe.table(t) for t in _NSYS_MARKER_TABLES),
            "tables": {t: list(c) for t, c in sorted(probe.tables.items())},
            "rows": rows,
            "loaders": loaders,
            "unread": unread,
        }
    except sqlite3.DatabaseError as exc:
        raise TraceFormatError(
            f"{p.name}: the SQLite file is damaged or truncated ({clean_message(exc, with_type=False)})"
        ) from exc
    finally:
        con.close()


def load_nsys_sqlite(
    path: str | os.PathLike, progress=None, *, lean: bool = False, on_kernel_times=None
) -> TraceBundle:
    """Load an nsys SQLite export into canonical frames.

    Args:
        path: the ``.sqlite`` file written by ``nsys export --type sqlite``.

    Returns:
        TraceBundle with frames in the shapes of ``model.KERNELS``, ``API_CALLS`` (without
        ``eventClass = 67`` backtrace duplicates), ``NVTX_RANGES`` (event types 59/60/70/71;
        open ranges closed at the largest NVTX timestamp and flagged; ``end < start`` dropped),
        ``NVTX_MARKS`` (type 34), ``MEMOPS`` and ``GRAPH_LAUNCHES``. Rows keep file order except
        memops, sorted by start. Names are resolved from ``StringIds``.

        Bad times: a kernel whose start or end is NULL or not a number is kept (``kernel_count``
        counts every row) with ``start_ns = end_ns = -1``, which analysis treats as invalid (see
        ``summary.invalid_kernel_count``). CUDA API calls, memcpy/memset and graph launches with a
        NULL/non-numeric time, ``end < start`` or a time >= 2**62 ns are dropped and counted per
        kind in ``meta.invalid_time_rows``; so are NVTX ranges and marks with unusable times
        (a NULL range end is not one: the range is open, see above).

        Every input row is accounted for in ``meta.accounts`` (one ``RowAccount`` per kind with rows:
        "kernels", "CUDA API calls", "NVTX ranges", "NVTX marks", "NVTX metadata", "memcpy/memset",
        "CUDA graph launches"): skipped by ``RULE_BACKTRACE`` or ``RULE_BAD_TIME``, or not
        recognised (a table without its required columns, an unknown NVTX event type).
        ``meta.launches_by_pid`` holds each launching process's launch calls (``LAUNCH_API``) and
        GPU executions; ``meta.warnings`` names each process that launched with nothing executed
        (``capture_gap_warnings``), and ``meta.gpu_activity_missing`` says why busy is unknown when
        nothing at all executed (``gpu_activity_missing``).

    Args:
        progress: optional callable taking a stage name, called as each stage starts; one that also takes a
            ``rows`` keyword gets the row counts known then (see ``stage_reporter``): the kernel table's
            rows as "kernels and CUDA API calls" starts.
        lean: read only what the seed-format summary needs: the kernel columns of times, stream identity,
            graph node and names (correlation ids left at -1), and the CUDA API calls as totals per thread
            and name (``api_totals``, reduced as they are read: ``nsys_api_totals``; ``api_calls`` is empty).
            Never cache it.
        on_kernel_times: optional callable ``(start_ns, end_ns, device_id)``, called with the kernel rows'
            recorded times and devices (aligned columns; NULL as NA) as soon as they are read, before the rest of
            the kernel columns and the CUDA API calls (a full read only): what a page previews while the
            rest loads (``analysis.preview``). The kernel table is then read in two column groups.

    Raises:
        TraceNotFoundError: the path does not exist or is not a regular file.
        TraceFormatError: not SQLite, corrupt, SQLite without any nsys table, or being written by
            another program (a non-empty ``-journal``/``-wal`` next to it; see ``check_no_writer``).
    """
    step = stage_reporter(progress)
    p, con = open_export(path)
    try:
        probe = probe_schema(con)
        check_nsys_tables(probe, p.name)
        step("names")
        strings = _load_strings(con, probe)
        kernel_table = probe.table("CUPTI_ACTIVITY_KIND_KERNEL")
        # count(*) walks the b-tree without decoding a row: cheap next to the read, and it lets the page show the size
        kernel_rows = _count(con, kernel_table)
        runtime_table = probe.table("CUPTI_ACTIVITY_KIND_RUNTIME")
        step("kernels and CUDA API calls", rows=(("kernels", kernel_rows),))
        kernel_job = (_kernel_sql(probe, lean), _LEAN_KERNEL_COLUMNS if lean else _KERNEL_COLUMNS)
        parts = kernel_sql_parts(probe) if on_kernel_times is not None and not lean else None
        times = None
        if parts is not None:
            times = _run_queries(con, {"times": (parts[0], KERNEL_TIME_COLUMNS, kernel_table, kernel_rows)})["times"]
            on_kernel_times(*(times[c] for c in KERNEL_TIME_COLUMNS))
            kernel_job = (parts[1], KERNEL_REST_COLUMNS)
        jobs = {"kernels": (*kernel_job, kernel_table, kernel_rows)}
        totals_sql = _api_sql(probe, totals=True) if lean else None
        # The API table's row count is only its account's: counted beside the reads (10M calls: ~0.4 s).
        also = {"api_read": lambda: _count_alone(con, runtime_table)}
        if totals_sql:
            also["api_totals"] = lambda: read_api_totals(con, totals_sql, strings)
        if not lean:
            jobs["api"] = (_api_sql(probe), _API_COLUMNS, None, _rowid_span(con, runtime_table))
        raw = _run_queries(con, jobs, also)
        api_read = raw.pop("api_read")
        if times is not None:
            raw["kernels"] = _join_columns(times, raw["kernels"], p.name)
            del times
        accounts = [_kernel_account(con, probe, raw["kernels"])]
        # Popped: each raw frame is freed as soon as its typed frame is built (a 10M-kernel read is ~1.3 GB raw).
        demangled = lean_demangled(con, probe, p.name) if lean else None
        kernels, dropped = _kernel_frame(raw.pop("kernels"), strings, demangled)
        api_totals = None
        if lean:  # a summary's read: the calls as totals per thread and name, never a row per call
            api_totals, api_returned, bad_api = raw.pop("api_totals", None) or (empty_frame(API_TOTALS), 0, 0)
            api_calls, api_kept = empty_frame(API_CALLS), int(api_totals["count"].sum())
        else:
            api_returned = 0 if raw["api"] is None else len(raw["api"])
            api_calls, bad_api = _api_frame(raw.pop("api"), strings)
            api_kept = len(api_calls)
        if _api_sql(probe) is None:  # a RUNTIME table without start/end/nameId: none of it readable
            accounts.append(RowAccount("CUDA API calls", api_read, 0, unrecognised=api_read))
        else:
            accounts.append(
                RowAccount(
                    "CUDA API calls",
                    api_read,
                    api_kept,
                    _rules((RULE_BACKTRACE, api_read - api_returned), (RULE_BAD_TIME, bad_api)),
                )
            )
        step("NVTX")
        ranges, marks, bad_nvtx, nvtx_accounts = _load_nvtx(con, probe, strings)
        step("memcpy/memset")
        memops, bad_memops, memops_account = _load_memops(con, probe)
        step("graphs")
        graph_launches, bad_graphs, graph_account, graph_pids = _load_graph_launches(con, probe)
        invalid = {
            "CUDA API calls": bad_api,
            "memcpy/memset": bad_memops,
            "CUDA graph launches": bad_graphs,
            **bad_nvtx,
        }
        accounts += [*nvtx_accounts, memops_account, graph_account]
        executions = np.concatenate([kernels["pid"].to_numpy(np.int64), graph_pids])
        launches = launches_by_pid(api_calls if api_totals is None else api_totals, executions)
        gaps = capture_gap_warnings(launches, unattributed=int((executions == 0).sum()))
        return TraceBundle(
            meta=_load_meta(
                con,
                probe,
                p,
                dropped,
                invalid,
                accounts=tuple(a for a in accounts if a.read),
                launches=launches,
                warnings=gaps,
                gpu_activity_missing=gpu_activity_missing(launches, executions.size),
                thread_names=_thread_names(con, probe, strings),
            ),
            kernels=kernels,
            api_calls=api_calls,
            nvtx_ranges=ranges,
            nvtx_marks=marks,
            memops=memops,
            graph_launches=graph_launches,
            api_totals=api_totals,
        )
    except sqlite3.DatabaseError as exc:
        raise TraceFormatError(
            f"{p.name}: the SQLite file is damaged or truncated ({clean_message(exc, with_type=False)})"
        ) from exc
    except (UnicodeDecodeError, MemoryError, OverflowError) as exc:
        raise TraceFormatError(
            f"{p.name}: the SQLite file holds unreadable data ({clean_message(exc, with_type=False)})"
        ) from exc
    finally:
        con.close()
