"""GPU operations besides kernels in an nsys export: memcpy/memset (``CUPTI_ACTIVITY_KIND_MEMCPY`` /
``_MEMSET``, with copy and memory kinds) and CUDA graph launches (``CUPTI_ACTIVITY_KIND_GRAPH_TRACE``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.loaders.nsys_tables import _MISSING, RULE_BAD_TIME, _drop_invalid_times, _int, _pid_of, _rules
from dashboard.loaders.sqlite_access import _col, _count, _q, _query
from dashboard.model import GRAPH_LAUNCHES, MEMOPS, RowAccount, conform, empty_frame

# ENUM_CUDA_MEMCPY_OPER, used when the export lacks the enum table.
_COPY_KINDS = {
    0: "unknown",
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
    11: "UVM HtoD",
    12: "UVM DtoH",
}


def _copy_kind_names(con, probe) -> dict[int, str]:
    """Copy-kind id -> short name (HtoD ...), as nsys stats prints; the enum table fills unknown ids."""
    kinds = {}
    table = probe.table("ENUM_CUDA_MEMCPY_OPER")
    if table and {"id", "label"} <= set(probe.columns(table)):
        kinds = {int(i): str(label) for i, label in con.execute(f'SELECT id, label FROM {_q(table)}') if i is not None}
    return {**kinds, **_COPY_KINDS}


# ENUM_CUDA_MEM_KIND labels (as nsys analyze prints them), used when the export lacks the enum table.
_MEM_KINDS = {
    0: "Pageable",
    1: "Pinned",
    2: "Device",
    3: "Array",
    4: "Managed",
    5: "Device Static",
    6: "Managed Static",
    7: "Unknown",
}


def _mem_kind_names(con, probe) -> dict[int, str]:
    """Memory-kind id -> label ("Pageable", "Device", ...): the export's enum table, else the built-in copy."""
    table = probe.table("ENUM_CUDA_MEM_KIND")
    names = dict(_MEM_KINDS)
    if table and {"id", "label"} <= set(probe.columns(table)):
        for i, label in con.execute(f"SELECT id, label FROM {_q(table)}"):
            if isinstance(i, int) and not isinstance(i, bool) and label:
                names[i] = str(label)
    return names


def _mem_kind_labels(ids: pd.Series, names: dict[int, str]) -> pd.Categorical:
    """Labels of memory-kind ids; "" for a NULL/absent kind (-1), "kind N" for an id no table names."""
    labels = {i: names.get(i, f"kind {i}") for i in pd.unique(ids.to_numpy()).tolist()}
    labels[-1] = ""
    return pd.Categorical(ids.map(labels))


def _load_memops(con, probe, where: str = "") -> tuple[pd.DataFrame, int, RowAccount]:
    """MEMOPS frame, the number of rows dropped for unusable times (NULL, end < start), and the
    "memcpy/memset" account (rows of a table without start/end columns are not recognised).
    ``where``: an SQL condition on the rows read (a time slice); not applied to an unrecognised table."""
    frames = []
    dropped = read = unusable = 0
    kinds = _copy_kind_names(con, probe)
    mem_kinds = _mem_kind_names(con, probe)
    for logical, label in (("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"), ("CUPTI_ACTIVITY_KIND_MEMSET", "memset")):
        table = probe.table(logical)
        cols = probe.columns(table)
        if not table:
            continue
        if not {"start", "end"} <= set(cols):
            n = _count(con, table)
            read += n
            unusable += n
            continue
        src, dst = ("srcKind", "dstKind") if label == "memcpy" else ("NULL", "memKind")
        sql = (
            f'SELECT "start", "end", {_col(cols, "deviceId", "0")}, {_col(cols, "streamId", "0")}, '
            f'{_col(cols, "bytes", "0")}, {_col(cols, "copyKind")}, {_col(cols, "globalPid")}, '
            f'{_col(cols, "contextId")}, {_col(cols, "correlationId")}, {_col(cols, src)}, {_col(cols, dst)} '
            f'FROM {_q(table)}' + (f" WHERE {where}" if where else "")
        )
        raw = _query(
            con,
            sql,
            [
                "start_ns",
                "end_ns",
                "device_id",
                "stream_id",
                "bytes",
                "copy_kind",
                "global_pid",
                "context_id",
                "correlation_id",
                "src_kind",
                "dst_kind",
            ],
        )
        read += len(raw)
        if raw.empty:
            continue
        raw["start_ns"] = _int(raw["start_ns"], _MISSING)
        raw["end_ns"] = _int(raw["end_ns"], _MISSING)
        raw, n_bad = _drop_invalid_times(raw)
        dropped += n_bad
        if raw.empty:
            continue
        raw["bytes"] = _int(raw["bytes"], 0)
        raw["device_id"] = _int(raw["device_id"])
        raw["stream_id"] = _int(raw["stream_id"])
        gpid = _int(raw["global_pid"], -1)
        raw["pid"] = _pid_of(gpid).where(gpid >= 0, -1)
        raw["context_id"] = _int(raw["context_id"])
        raw["correlation_id"] = _int(raw["correlation_id"])
        for c in ("src_kind", "dst_kind"):
            raw[c] = _mem_kind_labels(_int(raw[c]), mem_kinds)
        if label == "memcpy":
            ck = _int(raw["copy_kind"], 0)
            raw["kind"] = ["memcpy " + kinds.get(int(k), str(k)).replace("CUDA_MEMCPY_OPER_", "") for k in ck]
        else:
            raw["kind"] = "memset"
        frames.append(raw)
    account = RowAccount("memcpy/memset", read, read - dropped - unusable, _rules((RULE_BAD_TIME, dropped)), unusable)
    if not frames:
        return empty_frame(MEMOPS), dropped, account
    out = pd.concat(frames, ignore_index=True).sort_values("start_ns", kind="stable")
    return conform(out.reset_index(drop=True), MEMOPS), dropped, account


def _load_graph_launches(con, probe, where: str = "") -> tuple[pd.DataFrame, int, RowAccount, np.ndarray]:
    """GRAPH_LAUNCHES frame, the number of rows dropped for unusable times (NULL, end < start), the
    "CUDA graph launches" account, and the pid of every row read (0 when globalPid is absent).
    ``where``: an SQL condition on the rows read (a time slice); not applied to an unrecognised table."""
    table = probe.table("CUPTI_ACTIVITY_KIND_GRAPH_TRACE")
    cols = probe.columns(table)
    no_pids = np.zeros(0, np.int64)
    if not table:
        return empty_frame(GRAPH_LAUNCHES), 0, RowAccount("CUDA graph launches", 0, 0), no_pids
    if not {"start", "end"} <= set(cols):
        n = _count(con, table)
        return empty_frame(GRAPH_LAUNCHES), 0, RowAccount("CUDA graph launches", n, 0, unrecognised=n), no_pids
    sql = (
        f'SELECT "start", "end", {_col(cols, "deviceId", "0")}, {_col(cols, "streamId", "0")}, '
        f'{_col(cols, "graphId")}, {_col(cols, "globalPid")} FROM {_q(table)}' + (f" WHERE {where}" if where else "")
    )
    raw = _query(con, sql, ["start_ns", "end_ns", "device_id", "stream_id", "graph_id", "global_pid"])
    read = len(raw)
    if raw.empty:
        return empty_frame(GRAPH_LAUNCHES), 0, RowAccount("CUDA graph launches", 0, 0), no_pids
    pids = _pid_of(_int(raw["global_pid"], 0)).to_numpy()
    for c in ("start_ns", "end_ns"):
        raw[c] = _int(raw[c], _MISSING)
    raw, dropped = _drop_invalid_times(raw)
    account = RowAccount("CUDA graph launches", read, read - dropped, _rules((RULE_BAD_TIME, dropped)))
    if raw.empty:
        return empty_frame(GRAPH_LAUNCHES), dropped, account, pids
    for c in ("device_id", "stream_id", "graph_id"):
        raw[c] = _int(raw[c])
    return conform(raw, GRAPH_LAUNCHES), dropped, account, pids
