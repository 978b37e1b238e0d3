"""Which nsys export this is: its tables and columns (schemas drift across versions), and what the loader needs."""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from dashboard.errors import TraceFormatError, TraceNotFoundError, clean_message
from dashboard.loaders.side_files import check_no_writer
from dashboard.loaders.sqlite_access import _q, check_sqlite_header, connect_readonly

# Tables of an nvprof database (nvprof --export-profile, .nvvp): not an nsys export.
_NVPROF_MARKER_TABLES = ("StringTable", "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL")


# Tables whose presence makes a SQLite file an nsys export.
_NSYS_MARKER_TABLES = (
    "StringIds",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "NVTX_EVENTS",
    "TARGET_INFO_SESSION_START_TIME",
    "EXPORT_META_DATA",
    "META_DATA_EXPORT",
    "ANALYSIS_DETAILS",
)


@dataclass(frozen=True)
class SchemaProbe:
    """Tables and their columns found in an export (``tables`` maps name -> column tuple)."""

    tables: dict[str, tuple[str, ...]]

    def table(self, logical: str) -> str | None:
        """Resolve a logical table name: exact match, else the highest ``NAME_V<n>`` variant."""
        if logical in self.tables:
            return logical
        pattern = re.compile(re.escape(logical) + r"_V(\d+)$")
        versions = [(int(m.group(1)), t) for t in self.tables if (m := pattern.match(t))]
        return max(versions)[1] if versions else None

    def columns(self, table: str | None) -> tuple[str, ...]:
        return self.tables.get(table, ()) if table else ()


def probe_schema(con: sqlite3.Connection) -> SchemaProbe:
    """List every table and its columns (``sqlite_master`` + ``PRAGMA table_info``)."""
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    tables = {}
    for name in names:
        cols = con.execute(f"PRAGMA table_info({_q(name)})").fetchall()
        tables[name] = tuple(c[1] for c in cols)
    return SchemaProbe(tables)


# What each loader needs: logical table -> (required columns, optional columns it reads if present).
LOADER_TABLES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "kernels": (
        "CUPTI_ACTIVITY_KIND_KERNEL",
        ("start", "end"),
        (
            "deviceId",
            "contextId",
            "streamId",
            "correlationId",
            "globalPid",
            "graphNodeId",
            "shortName",
            "demangledName",
        ),
    ),
    "CUDA API calls": (
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        ("start", "end", "nameId"),
        ("eventClass", "globalTid", "correlationId"),
    ),
    "NVTX ranges and marks": (
        "NVTX_EVENTS",
        ("start", "eventType"),
        ("end", "text", "textId", "domainId", "globalTid", "endGlobalTid"),
    ),
    "memcpy": (
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        ("start", "end"),
        ("deviceId", "streamId", "bytes", "copyKind", "globalPid", "contextId", "correlationId", "srcKind", "dstKind"),
    ),
    "memset": (
        "CUPTI_ACTIVITY_KIND_MEMSET",
        ("start", "end"),
        ("deviceId", "streamId", "bytes", "globalPid", "contextId", "correlationId", "memKind"),
    ),
    "CUDA graph launches": ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", ("start", "end"), ("deviceId", "streamId", "graphId")),
    "names": ("StringIds", ("id", "value"), ()),
    "GPU names": ("TARGET_INFO_GPU", ("id", "name"), ()),
}


def check_nsys_tables(probe: SchemaProbe, name: str) -> None:
    """Refuse a SQLite database without any nsys table (``_NSYS_MARKER_TABLES``), and an nvprof
    database (no ``StringIds``, and ``StringTable``, ``CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`` or a
    runtime table of callback ids: ``cbid`` and no ``nameId``),
    whose CUPTI tables look like an nsys export's but hold other columns (names in StringTable,
    API calls by callback id): read as an export it would give zero kernels.

    Raises:
        TraceFormatError: "NAME: a SQLite database but not an nsys export (found: ...)", or
            "NAME: an nvprof database, not an nsys export ...".
    """
    runtime = probe.table("CUPTI_ACTIVITY_KIND_RUNTIME")
    nvprof_runtime = "cbid" in probe.columns(runtime) and "nameId" not in probe.columns(runtime)  # calls by callback id
    if not probe.table("StringIds") and (nvprof_runtime or any(probe.table(t) for t in _NVPROF_MARKER_TABLES)):
        found = ", ".join(
            t
            for t in (*_NVPROF_MARKER_TABLES, "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME")
            if probe.table(t)
        )
        raise TraceFormatError(
            f"{name}: an nvprof database, not an nsys export (tables {found}; no StringIds). tracedash reads "
            "Nsight Systems exports: record the run with 'nsys profile' and export it with "
            "'nsys export --type sqlite REPORT.nsys-rep'."
        )
    if not any(probe.table(t) for t in _NSYS_MARKER_TABLES):
        found = ", ".join(sorted(probe.tables)[:8]) or "no tables"
        raise TraceFormatError(
            f"{name}: a SQLite database but not an nsys export (found: {found}). "
            "Expected tables such as StringIds, CUPTI_ACTIVITY_KIND_KERNEL or NVTX_EVENTS."
        )


def open_export(path: str | os.PathLike) -> tuple[Path, sqlite3.Connection]:
    """The checks every reader of an export makes first, then a read-only, immutable connection.

    Returns:
        ``(path, connection)``; the caller closes the connection.

    Raises:
        TraceNotFoundError: the path does not exist or is not a regular file (a directory, device...).
        TraceFormatError: not a SQLite file (``check_sqlite_header``), being written by another
            program (``check_no_writer``), or SQLite cannot open it.
    """
    p = Path(path)
    if not p.exists():
        raise TraceNotFoundError(f"{p}: no such file")
    if not p.is_file():
        raise TraceNotFoundError(
            f"{p}: not a regular file ({'a directory' if p.is_dir() else 'a device, pipe or socket'})"
        )
    check_sqlite_header(p)
    check_no_writer(p)
    try:
        return p, connect_readonly(p)
    except sqlite3.Error as exc:
        raise TraceFormatError(f"{p.name}: cannot open as SQLite ({exc})") from exc


def check_nsys_export(path: str | os.PathLike) -> None:
    """Cheaply check that ``path`` is an nsys SQLite export (header, no writer, nsys tables), reading no events.

    Raises:
        TraceNotFoundError, TraceFormatError: as ``load_nsys_sqlite`` would for the same file.
    """
    p, con = open_export(path)
    try:
        check_nsys_tables(probe_schema(con), p.name)
    except sqlite3.DatabaseError as exc:
        raise TraceFormatError(
            f"{p.name}: the SQLite file is damaged or truncated ({clean_message(exc, with_type=False)})"
        ) from exc
    finally:
        con.close()
