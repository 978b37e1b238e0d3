"""The SQL an nsys export is read with: the kernel and CUDA API queries, their result columns, and the StringIds
names. Importable without pandas (only the standard library and ``sqlite_access``), so that ``nsys_reads`` can start
the reads before pandas is imported."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from dashboard.loaders.sqlite_access import _col, _q

if TYPE_CHECKING:
    from dashboard.loaders.nsys_schema import SchemaProbe

# CUPTI_ACTIVITY_KIND_RUNTIME.eventClass of CUDA backtrace duplicates of an API call.
EVENT_CLASS_BACKTRACE = 67


_KERNEL_COLUMNS = [
    "start_ns",
    "end_ns",
    "device_id",
    "context_id",
    "stream_id",
    "correlation_id",
    "global_pid",
    "graph_node_id",
    "short_id",
    "name_id",
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
]


_LAUNCH_COLUMNS = ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")
_LAUNCH_FRAME_COLUMNS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")


_API_COLUMNS = ["start_ns", "end_ns", "global_tid", "correlation_id", "event_class", "name_id"]


# Read as int32 while their values fit: ids, name ids and launch dimensions, never times or global ids.
NARROW_READ_COLUMNS = frozenset(
    {"device_id", "context_id", "stream_id", "correlation_id", "short_id", "name_id", "event_class"}
    | set(_LAUNCH_FRAME_COLUMNS)
)


_LEAN_KERNEL_COLUMNS = [
    "start_ns",
    "end_ns",
    "device_id",
    "context_id",
    "stream_id",
    "global_pid",
    "graph_node_id",
    "short_id",  # the shortName id; without a shortName column, the demangledName id (see _kernel_sql)
]


API_TOTALS_READ = ("start_ns", "end_ns", "global_tid", "name_id")  # _api_sql(totals=True)'s columns


def _kernel_sql(probe: SchemaProbe, lean: bool = False, where: str = "") -> str | None:
    """The kernel query (``where``: an SQL condition on the table's columns, e.g. a time slice)."""
    table = probe.table("CUPTI_ACTIVITY_KIND_KERNEL")
    cols = probe.columns(table)
    if not table or not {"start", "end"} <= set(cols):
        return None
    if lean:  # what the summary needs: times, stream identity (overrun clipping), graph node, names
        # One name id (the other is a ninth of the read): the short one, whose row falls back to its demangled
        # name when NULL or unknown (read then: ``lean_demangled``) exactly as the full load does, so
        # `summarize` and the dashboard key kernels alike; without a shortName column, the demangled one, which
        # the full load then uses for both names.
        name = _q("shortName") if "shortName" in cols else _col(cols, "demangledName")
        return (
            f'SELECT "start", "end", {_col(cols, "deviceId", "0")}, {_col(cols, "contextId", "0")}, '
            f'{_col(cols, "streamId", "0")}, {_col(cols, "globalPid")}, {_col(cols, "graphNodeId")}, {name} '
            f"FROM {_q(table)}" + (f" WHERE {where}" if where else "")
        )
    return f"SELECT {', '.join(_kernel_items(cols))} FROM {_q(table)}" + (f" WHERE {where}" if where else "")


def _kernel_items(cols: tuple[str, ...]) -> list[str]:
    """The full kernel query's select items, one per ``_KERNEL_COLUMNS`` entry (a missing column's default)."""
    return [
        '"start"',
        '"end"',
        _col(cols, "deviceId", "0"),
        _col(cols, "contextId", "0"),
        _col(cols, "streamId", "0"),
        _col(cols, "correlationId"),
        _col(cols, "globalPid"),
        _col(cols, "graphNodeId"),
        _col(cols, "shortName"),
        _col(cols, "demangledName"),
        *(_col(cols, c, "0") for c in _LAUNCH_COLUMNS),
    ]


# The full kernel read in two queries when the page wants a preview: the times and devices first (what
# ``analysis.preview`` needs), then the rest; both scan the table in rowid order, so their rows line up.
KERNEL_TIME_COLUMNS = _KERNEL_COLUMNS[:3]
KERNEL_REST_COLUMNS = _KERNEL_COLUMNS[3:]


def kernel_sql_parts(probe: SchemaProbe) -> tuple[str, str] | None:
    """``(times_sql, rest_sql)``: the full kernel query split into ``KERNEL_TIME_COLUMNS`` and
    ``KERNEL_REST_COLUMNS`` (None when the table cannot be read: see ``_kernel_sql``)."""
    table = probe.table("CUPTI_ACTIVITY_KIND_KERNEL")
    cols = probe.columns(table)
    if not table or not {"start", "end"} <= set(cols):
        return None
    items = _kernel_items(cols)
    k = len(KERNEL_TIME_COLUMNS)
    return (f"SELECT {', '.join(items[:k])} FROM {_q(table)}", f"SELECT {', '.join(items[k:])} FROM {_q(table)}")


def _api_sql(probe: SchemaProbe, where: str = "", *, totals: bool = False) -> str | None:
    """The CUDA API query without backtrace duplicates (``where``: a further SQL condition, e.g. a time slice);
    ``totals``: only what ``nsys_api_totals`` reduces (``API_TOTALS_READ``: times, thread, name id)."""
    table = probe.table("CUPTI_ACTIVITY_KIND_RUNTIME")
    cols = probe.columns(table)
    if not table or not {"start", "end", "nameId"} <= set(cols):
        return None
    conds = [f'"eventClass" IS NOT {EVENT_CLASS_BACKTRACE}'] if "eventClass" in cols else []
    conds += [f"({where})"] if where else []
    where = "WHERE " + " AND ".join(conds) if conds else ""
    if totals:
        return f'SELECT "start", "end", {_col(cols, "globalTid")}, "nameId" FROM {_q(table)} {where}'
    return (
        f'SELECT "start", "end", {_col(cols, "globalTid")}, {_col(cols, "correlationId")}, '
        f'{_col(cols, "eventClass", "0")}, "nameId" FROM {_q(table)} {where}'
    )


def _load_strings(con: sqlite3.Connection, probe: SchemaProbe) -> dict[int, str]:
    table = probe.table("StringIds")
    if not table or not {"id", "value"} <= set(probe.columns(table)):
        return {}
    strings = {}
    for i, v in con.execute(f"SELECT id, value FROM {_q(table)}"):
        if isinstance(i, int) and not isinstance(i, bool):  # a hand-edited row with a text id is skipped
            strings[i] = v if isinstance(v, str) else str(v)
    return strings
