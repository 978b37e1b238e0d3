"""What an nsys export older than the versions tracedash is checked against (2021.5 to 2026.2) shows of its
schema: such exports (2020.x, early 2021) have no export metadata table, so no version to name.

Traits are read from the tables and their declarations (see shared/reference/nsys_schema_notes.md §2:
the 2019-2020 "BETA" schema declares every column NOT NULL and exports default values for missing data;
``mangledName`` and NVTX domains came later; the BETA ``SCHED_EVENTS`` had an ``id`` column).
"""

from __future__ import annotations

import sqlite3

__all__ = ["SUPPORTED_RANGE", "METADATA_TABLES", "predates_supported", "old_schema_traits", "predates_text"]

SUPPORTED_RANGE = "2021.5 to 2026.2"
METADATA_TABLES = ("EXPORT_META_DATA", "META_DATA_EXPORT")  # every export from 2021.5 on has one


def predates_supported(tables) -> bool:
    """Whether an export (its table names) has no export metadata table: older than 2021.5."""
    return not any(t in tables for t in METADATA_TABLES)


def _not_null(con: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column and row[3] for row in con.execute(f'PRAGMA table_info("{table}")'))


def old_schema_traits(con: sqlite3.Connection, tables: dict[str, tuple[str, ...]]) -> list[str]:
    """The traits of an export without a metadata table, in the field's words (empty for an export that
    has one: its version is named there)."""
    if not predates_supported(tables):
        return []
    traits = [f"no export metadata table ({' or '.join(METADATA_TABLES)}), which every export from 2021.5 on has"]
    kernel = tables.get("CUPTI_ACTIVITY_KIND_KERNEL")
    if kernel is not None and "mangledName" not in kernel:
        traits.append("kernel table without mangledName (added in 2021)")
    nvtx = tables.get("NVTX_EVENTS")
    if nvtx is not None:
        if "domainId" not in nvtx:
            traits.append("NVTX_EVENTS without domainId (no NVTX domains)")
        if "end" in nvtx and _not_null(con, "NVTX_EVENTS", "end"):
            traits.append("NVTX_EVENTS.end declared NOT NULL (the 2019-2020 schema: default values for missing data)")
    sched = tables.get("SCHED_EVENTS")
    if sched is not None and "id" in sched:
        traits.append("SCHED_EVENTS with an id column (the 2019-2020 schema)")
    return traits


def predates_text(traits: list[str] | None = None) -> str:
    """The label of an export without a metadata table (``traits``: ``old_schema_traits``). With traits of an
    older schema beside the missing table it predates the supported range; with that one alone (or none
    given) it may also be a newer export stripped of the table, and the words say both."""
    if traits and len(traits) > 1:
        text = f"nsys version unknown: the export predates the supported range ({SUPPORTED_RANGE})"
    else:
        text = (
            f"nsys version unknown: no export metadata table, so older than the supported range ({SUPPORTED_RANGE}) "
            "or stripped of that table"
        )
    return text + ", read with the 2021.5 schema" + ("; schema traits found: " + "; ".join(traits) if traits else "")
