"""Build small nsys-shaped SQLite exports in code (the subset of the schema tracedash reads).

Column names and types follow the real DDL (shared/reference/ddl); tables are created only for
the kinds of rows given, as nsys does (tables exist only if they hold data).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

GLOBAL_PID_1 = (1 << 48) | (100 << 24)  # hardware id 1, pid 100
GLOBAL_TID_1 = GLOBAL_PID_1 | 101  # pid 100, tid 101


def write_nsys_sqlite(
    path: Path,
    *,
    kernels=(),
    runtime=(),
    nvtx=(),
    memcpy=(),
    memset=(),
    graph_trace=(),
    gpus=None,
    version="2024.5.1.113",
    kernel_extra_columns=True,
    thread_names=None,
) -> Path:
    """Write a minimal nsys export.

    Args:
        kernels: dicts with start, end and optional deviceId, streamId, correlationId, globalPid,
            shortName/demangledName (strings), graphNodeId.
        runtime: dicts with start, end, name (string), optional eventClass, globalTid, correlationId.
        nvtx: dicts with start, end (None = open), eventType, optional text, textId (string, stored
            through StringIds), domainId, globalTid, endGlobalTid.
        memcpy / memset: dicts with start, end, optional deviceId, streamId, bytes, copyKind.
        graph_trace: dicts with start, end, optional deviceId, streamId, graphId.
        gpus: {id: name} for TARGET_INFO_GPU.
        thread_names: {globalTid: name} (or a list of (globalTid, name) rows, kept in order) for ThreadNames.
    """
    path = Path(path)
    con = sqlite3.connect(path)
    strings: dict[str, int] = {}

    def sid(value: str) -> int:
        if value not in strings:
            strings[value] = len(strings) + 1
        return strings[value]

    con.execute("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
    con.executemany(
        "INSERT INTO META_DATA_EXPORT VALUES (?, ?)",
        [("EXPORT_PRODUCT_VERSION", version), ("EXPORT_SCHEMA_VERSION", "3.13.2")],
    )
    if gpus:
        con.execute("CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT)")
        con.executemany("INSERT INTO TARGET_INFO_GPU VALUES (?, ?)", list(gpus.items()))
    if kernels:
        extra = ", greenContextId INTEGER, gridX INTEGER NOT NULL DEFAULT 1" if kernel_extra_columns else ""
        con.execute(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, "
            "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL" + extra + ", streamId INTEGER NOT NULL, "
            "correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, "
            "graphNodeId INTEGER)"
        )
        for k in kernels:
            short = k.get("shortName", "kernel")
            con.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, "
                "globalPid, demangledName, shortName, graphNodeId) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    k["start"],
                    k["end"],
                    k.get("deviceId", 0),
                    k.get("contextId", 1),
                    k.get("streamId", 7),
                    k.get("correlationId", 1),
                    k.get("globalPid", GLOBAL_PID_1),
                    sid(k.get("demangledName", f"void {short}()")),
                    sid(short),
                    k.get("graphNodeId"),
                ),
            )
    if runtime:
        con.execute(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, "
            "eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, "
            "returnValue INTEGER NOT NULL, callchainId INTEGER)"
        )
        for r in runtime:
            con.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,0,NULL)",
                (
                    r["start"],
                    r["end"],
                    r.get("eventClass", 0),
                    r.get("globalTid", GLOBAL_TID_1),
                    r.get("correlationId", 1),
                    sid(r["name"]),
                ),
            )
    if nvtx:
        con.execute(
            "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, "
            "rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, "
            "textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, "
            "uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT)"
        )
        for n in nvtx:
            text_id = sid(n["textId"]) if n.get("textId") is not None else None
            con.execute(
                "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid, textId, domainId) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (
                    n["start"],
                    n.get("end"),
                    n["eventType"],
                    n.get("text"),
                    n.get("globalTid", GLOBAL_TID_1),
                    n.get("endGlobalTid"),
                    text_id,
                    n.get("domainId", 0),
                ),
            )
    if memcpy:
        con.execute(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, "
            "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, "
            "globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL)"
        )
        for m in memcpy:
            con.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,?,1,?,1,?,?,?)",
                (
                    m["start"],
                    m["end"],
                    m.get("deviceId", 0),
                    m.get("streamId", 7),
                    GLOBAL_PID_1,
                    m.get("bytes", 1 << 20),
                    m.get("copyKind", 1),
                ),
            )
    if memset:
        con.execute(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, "
            "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, "
            "globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL)"
        )
        for m in memset:
            con.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?,?,?,1,?,1,?,0,?)",
                (m["start"], m["end"], m.get("deviceId", 0), m.get("streamId", 7), GLOBAL_PID_1, m.get("bytes", 4096)),
            )
    if graph_trace:
        con.execute(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER NOT NULL, end INTEGER NOT NULL, "
            "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, "
            "correlationId INTEGER, globalPid INTEGER, graphId INTEGER NOT NULL, graphExecId INTEGER NOT NULL)"
        )
        for g in graph_trace:
            con.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (?,?,?,1,0,?,1,?,?,1)",
                (g["start"], g["end"], g.get("deviceId", 0), g.get("streamId", 7), GLOBAL_PID_1, g.get("graphId", 1)),
            )
    if thread_names:
        con.execute("CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER)")
        rows = thread_names.items() if isinstance(thread_names, dict) else thread_names
        con.executemany("INSERT INTO ThreadNames VALUES (?, 0, ?)", [(sid(n), g) for g, n in rows])
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, v) for v, i in strings.items()])
    con.commit()
    con.close()
    return path
