"""Read an nsys SQLite export (any version 2021.5–2026.2) into a ``TraceBundle``.

The file is opened read-only and immutable (no lock, no ``-journal``/``-wal`` file is ever created
next to it). Tables and columns are probed, never assumed: a missing table gives a typed empty
frame, a missing optional column a default value. See ``shared/reference/nsys_schema_notes.md``.
"""

from __future__ import annotations

import os
import sqlite3

import numpy as np
import pandas as pd

from dashboard.errors import TraceFormatError
from dashboard.loaders.nsys_api_totals import ApiTotalsRun
from dashboard.loaders.nsys_gpu_ops import _load_graph_launches, _load_memops
from dashboard.loaders.nsys_nvtx import _load_nvtx
from dashboard.loaders.nsys_reads import StartedReads, begin_reads, read_failure, stage_reporter
from dashboard.loaders.nsys_schema import (
    _NSYS_MARKER_TABLES,
    LOADER_TABLES,
    check_nsys_tables,
    open_export,
    probe_schema,
)
from dashboard.loaders.nsys_sql import (
    _api_sql,
)
from dashboard.loaders.nsys_tables import (
    RULE_BACKTRACE,
    RULE_BAD_TIME,
    _api_frame,
    _kernel_account,
    _kernel_frame,
    _load_meta,
    _rules,
    _thread_names,
    capture_gap_warnings,
    gpu_activity_missing,
    launches_by_pid,
    lean_demangled,
)
from dashboard.loaders.nsys_traits import old_schema_traits
from dashboard.loaders.sqlite_access import (
    _q,
)
from dashboard.model import API_CALLS, API_TOTALS, RowAccount, TraceBundle, empty_frame


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
        raise read_failure(p.name, exc) from exc
    finally:
        con.close()


def load_nsys_sqlite(
    path: str | os.PathLike,
    progress=None,
    *,
    lean: bool = False,
    on_kernel_times=None,
    started: StartedReads | None = None,
    before_api=None,
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
        ``kernel_times.invalid_kernel_count``). CUDA API calls, memcpy/memset and graph launches with a
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

        before_api: optional callable ``(kernels, nvtx_ranges, nvtx_marks)`` (``lean`` only), called with those
            frames once built, while the CUDA API totals are still being read on both cores: what it computes
            (``analysis.summary.kernel_summary``) overlaps that read.

    Raises:
        TraceNotFoundError: the path does not exist or is not a regular file.
        TraceFormatError: not SQLite, corrupt, SQLite without any nsys table, or being written by
            another program (a non-empty ``-journal``/``-wal`` next to it; see ``check_no_writer``).
    """
    reads = started if started is not None else begin_reads(path, progress, lean=lean, on_kernel_times=on_kernel_times)
    step = stage_reporter(progress)
    p, con, probe, strings, lean = reads.path, reads.con, reads.probe, reads.strings, reads.lean
    api_run = None
    try:
        raw = reads.queries.results()
        # A summary's CUDA API calls are reduced to totals after the kernel read (which had both cores), on both cores,
        # while the kernel frame, the NVTX and the copies are built here
        api_run = ApiTotalsRun(con, probe, strings) if lean else None
        api_read = raw.pop("api_read")
        if reads.times is not None:
            raw["kernels"] = _join_columns(reads.times, raw["kernels"], p.name)
            reads.times = None
        accounts = [_kernel_account(con, probe, raw["kernels"])]
        # Popped: each raw frame is freed as soon as its typed frame is built (a 10M-kernel read is ~1.3 GB raw).
        demangled = lean_demangled(con, probe, p.name) if lean else None
        kernels, dropped = _kernel_frame(raw.pop("kernels"), strings, demangled)
        step("NVTX")
        ranges, marks, bad_nvtx, nvtx_accounts = _load_nvtx(con, probe, strings)
        step("memcpy/memset")
        memops, bad_memops, memops_account = _load_memops(con, probe)
        step("graphs")
        graph_launches, bad_graphs, graph_account, graph_pids = _load_graph_launches(con, probe)
        if lean and before_api is not None:
            before_api(kernels, ranges, marks)
        api_totals = None
        if lean:  # a summary's read: the calls as totals per thread and name, never a row per call
            api_totals, api_returned, bad_api = api_run.result() or (empty_frame(API_TOTALS), 0, 0)
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
    except (sqlite3.DatabaseError, UnicodeDecodeError, MemoryError, OverflowError) as exc:
        raise read_failure(p.name, exc) from exc
    finally:
        if api_run is not None:
            api_run.close()
        reads.close()
