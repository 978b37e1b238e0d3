"""Per-table readers of an nsys export: kernels, CUDA API calls, NVTX, memcpy/memset, CUDA graphs, threads, metadata."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

from dashboard.loaders.nsys_schema import SchemaProbe
from dashboard.loaders.sqlite_access import _col, _count, _q, _query
from dashboard.model import (
    API_CALLS,
    GRAPH_LAUNCHES,
    KERNELS,
    MEMOPS,
    NVTX_MARKS,
    NVTX_RANGES,
    UNNAMED_NVTX,
    RowAccount,
    TraceMeta,
    conform,
    empty_frame,
)
from dashboard.text import count_noun

# NVTX_EVENTS.eventType values (ENUM_NSYS_EVENT_TYPE; unchanged 2021.5 -> 2026.2).
NVTX_MARK = 34


NVTX_PUSHPOP = 59


NVTX_STARTEND = 60


NVTXT_PUSHPOP = 70


NVTXT_STARTEND = 71


NVTX_DOMAIN_CREATE = 75


NVTX_RANGE_TYPES = (NVTX_PUSHPOP, NVTX_STARTEND, NVTXT_PUSHPOP, NVTXT_STARTEND)


# CUPTI_ACTIVITY_KIND_RUNTIME.eventClass of CUDA backtrace duplicates of an API call.
EVENT_CLASS_BACKTRACE = 67


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


# NVTX_EVENTS.eventType values that name things rather than record events: category (33), thread
# name (39), domain create/destroy (75/76), CUDA device/context/stream names (97-99). Used, not shown.
NVTX_METADATA_TYPES = (33, 39, NVTX_DOMAIN_CREATE, 76, 97, 98, 99)


# Documented rules for rows left out (the ``skipped`` entries of ``RowAccount``).
RULE_BACKTRACE = "CUDA backtrace duplicates (eventClass 67)"


RULE_BAD_TIME = "with unusable times (NULL, end < start or beyond 2^62 ns)"


# CUDA API calls that put work on the GPU: kernel launches (runtime and driver, cooperative, Ex/ExC,
# the legacy cudaLaunch and cuLaunch/cuLaunchGrid[Async]) and CUDA graph launches. Not
# cudaLaunchHostFunc/cuLaunchHostFunc (CPU work).
LAUNCH_API = re.compile(
    r"^(?:cu(?:da)?(?:Launch(?:Cooperative)?Kernel|GraphLaunch)|cudaLaunch(?:_v\d+)?$"
    r"|cuLaunch(?:Grid(?:Async)?)?(?:_v\d+)?$)"
)


def _int(series: pd.Series, default: int = -1) -> pd.Series:
    """int64 column with NULL/non-numeric values replaced by ``default`` (no copy when already int64)."""
    if series.dtype == np.int64:
        return series
    return pd.to_numeric(series, errors="coerce").fillna(default).astype("int64")


INVALID_TIME_LIMIT_NS = 2**62  # a start/end at or beyond this is corrupt (about 146 years)


_MISSING = np.iinfo(np.int64).min  # a NULL or non-numeric time in an event table, before validation


def _drop_invalid_times(raw: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Rows of ``raw`` (start_ns/end_ns already int64, NULL and non-numeric as -2**63) whose times
    are usable: both present, ``end >= start`` and below 2**62 ns; plus how many were dropped."""
    s, e = raw["start_ns"], raw["end_ns"]
    ok = (s > _MISSING) & (e > _MISSING) & (e >= s) & (e < INVALID_TIME_LIMIT_NS)
    dropped = int((~ok).sum())
    return (raw if not dropped else raw[ok].reset_index(drop=True)), dropped


def _rules(*pairs: tuple[str, int]) -> tuple[tuple[str, int], ...]:
    """The ``skipped`` entries of a RowAccount: only rules with a non-zero count."""
    return tuple((rule, int(n)) for rule, n in pairs if n)


def launches_by_pid(api_calls: pd.DataFrame, execution_pids: np.ndarray) -> tuple[tuple[int, int, int], ...]:
    """Per process that called a launch API (``LAUNCH_API``): ``(pid, launch calls, GPU executions)``.

    Args:
        api_calls: API_CALLS frame (``pid``, ``name``).
        execution_pids: pid of every GPU execution recorded (kernel rows, graph-level graph
            executions), int64.

    Returns:
        Tuples sorted by pid; only processes with at least one launch call.
    """
    if api_calls.empty:
        return ()
    names = api_calls["name"]
    cats = names.cat.categories if hasattr(names, "cat") else pd.Index(pd.unique(names))
    launch_names = [c for c in cats if LAUNCH_API.match(str(c))]
    if not launch_names:
        return ()
    pids = api_calls.loc[names.isin(launch_names), "pid"].to_numpy(np.int64)
    lp, ln = np.unique(pids, return_counts=True)
    ep, en = np.unique(np.asarray(execution_pids, np.int64), return_counts=True)
    execs = dict(zip(ep.tolist(), en.tolist()))
    return tuple((int(p), int(n), int(execs.get(int(p), 0))) for p, n in zip(lp.tolist(), ln.tolist()))


def capture_gap_warnings(launches: tuple[tuple[int, int, int], ...], unattributed: int = 0) -> tuple[str, ...]:
    """``"pid 200: 50 launches, 0 kernels (possible capture gap)"`` for each process that made launch
    calls but has no GPU execution recorded. ``unattributed``: executions whose process is unknown
    (no globalPid); while there are any, only a trace with no execution at all is flagged."""
    if unattributed:
        return ()
    return tuple(
        f"pid {p}: {count_noun(n, 'launch', 'launches')}, 0 kernels (possible capture gap)"
        for p, n, e in launches
        if e == 0
    )


def gpu_activity_missing(launches: tuple[tuple[int, int, int], ...], executions: int) -> str:
    """Why GPU busy is unknown (``TraceMeta.gpu_activity_missing``): launch calls were recorded but not
    one kernel or CUDA graph execution; "" otherwise (a trace without launches is simply CPU-only)."""
    calls = sum(n for _, n, _ in launches)
    if executions or not calls:
        return ""
    return (
        f"no kernel activity although {count_noun(calls, 'launch call')} {'was' if calls == 1 else 'were'} recorded "
        f"(possible capture gap: no kernel "
        "or CUDA graph execution in the export); GPU busy, idle and utilisation are unknown (n/a)"
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


def _names(ids: pd.Series, strings: dict[int, str], fallback=None) -> pd.Categorical:
    """Resolve StringIds ids to a categorical of names; ids not found use ``fallback`` or a tag.

    Vectorised over distinct ids: the cost is one ``np.unique`` plus one lookup per distinct id.
    """
    dense = _dense_names(ids, strings)
    if dense is not None:
        return dense
    numeric = pd.to_numeric(ids, errors="coerce")
    inverse, uniq = pd.factorize(numeric.fillna(-1).astype("int64").to_numpy())  # hash-based, no sort
    lookup = [strings.get(int(u)) for u in uniq]
    if any(v is None for v in lookup):
        values = np.array(lookup, dtype=object)[inverse] if len(uniq) else np.empty(0, dtype=object)
        missing = pd.isna(values)
        if fallback is not None:
            values[missing] = np.asarray(fallback, dtype=object)[missing]
        still = pd.isna(values)
        values[still] = [f"<unnamed {int(x) if pd.notna(x) else '?'}>" for x in numeric.to_numpy(dtype=float)[still]]
        return pd.Categorical(values)
    categories, code_of_uniq = np.unique(np.array(lookup, dtype=object), return_inverse=True)
    codes = code_of_uniq[inverse] if len(uniq) else np.empty(0, dtype=np.int64)
    return pd.Categorical.from_codes(codes, categories=pd.Index(categories))


def _dense_names(ids: pd.Series, strings: dict[int, str]) -> pd.Categorical | None:
    """``_names`` for the usual column: int64 ids, no NULL, every id in StringIds, ids below a few times
    the row count (nsys numbers strings from 0). One table lookup per row instead of a hash per row;
    the same categories (sorted distinct names) and codes. None when the column is not like that."""
    if ids.dtype != np.int64 or not len(ids):
        return None
    values = ids.to_numpy()
    lo, hi = int(values.min()), int(values.max())
    if lo < 0 or hi >= max(4 * len(values), 1 << 20):
        return None
    present = np.flatnonzero(np.bincount(values, minlength=hi + 1))
    lookup = [strings.get(int(u)) for u in present]
    if any(v is None for v in lookup):
        return None
    categories, code_of_present = np.unique(np.array(lookup, dtype=object), return_inverse=True)
    table = np.zeros(hi + 1, dtype=np.int32)
    table[present] = code_of_present
    return pd.Categorical.from_codes(table[values], categories=pd.Index(categories))


def _pid_of(global_id: pd.Series) -> pd.Series:
    return pd.Series((global_id.to_numpy(np.int64) >> 24) & 0xFFFFFF, index=global_id.index, copy=False)


def _tid_of(global_id: pd.Series) -> pd.Series:
    return pd.Series(global_id.to_numpy(np.int64) & 0xFFFFFF, index=global_id.index, copy=False)


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


_API_COLUMNS = ["start_ns", "end_ns", "global_tid", "correlation_id", "event_class", "name_id"]


_LEAN_KERNEL_COLUMNS = [
    "start_ns",
    "end_ns",
    "device_id",
    "context_id",
    "stream_id",
    "global_pid",
    "graph_node_id",
    "short_id",
    "name_id",
]


_LEAN_API_COLUMNS = ["start_ns", "end_ns", "global_tid", "event_class", "name_id"]


def _kernel_sql(probe: SchemaProbe, lean: bool = False) -> str | None:
    table = probe.table("CUPTI_ACTIVITY_KIND_KERNEL")
    cols = probe.columns(table)
    if not table or not {"start", "end"} <= set(cols):
        return None
    if lean:  # what the summary needs: times, stream identity (overrun clipping), graph node, names
        # Both name ids (integers): a row whose shortName is NULL or unknown falls back to its demangled
        # name exactly as the full load does, so `summarize` and the dashboard key kernels alike.
        return (
            f'SELECT "start", "end", {_col(cols, "deviceId", "0")}, {_col(cols, "contextId", "0")}, '
            f'{_col(cols, "streamId", "0")}, {_col(cols, "globalPid")}, {_col(cols, "graphNodeId")}, '
            f'{_col(cols, "shortName")}, {_col(cols, "demangledName")} FROM {_q(table)}'
        )
    return (
        f'SELECT "start", "end", {_col(cols, "deviceId", "0")}, {_col(cols, "contextId", "0")}, '
        f'{_col(cols, "streamId", "0")}, {_col(cols, "correlationId")}, {_col(cols, "globalPid")}, '
        f'{_col(cols, "graphNodeId")}, {_col(cols, "shortName")}, {_col(cols, "demangledName")}, '
        + ", ".join(_col(cols, c, "0") for c in _LAUNCH_COLUMNS)
        + f" FROM {_q(table)}"
    )


def _launch_configs(raw: pd.DataFrame) -> pd.Categorical:
    """ "grid X×Y×Z · block X×Y×Z" per kernel, built once per distinct configuration."""
    cols = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"]
    if not all(c in raw for c in cols):
        return pd.Categorical.from_codes(np.zeros(len(raw), np.int8), categories=pd.Index([""]))
    # Hash-factorize each dimension, combine the small codes into one key, factorize that: no sort.
    key = np.zeros(len(raw), dtype=np.int64)
    values = []
    radix = 1
    for c in cols:
        codes, uniq = pd.factorize(_int(raw[c], 0).to_numpy())
        key = key * len(uniq) + codes
        radix *= max(len(uniq), 1)
        values.append(uniq)
        if radix >= 2**62:  # absurdly many distinct shapes: not worth labelling
            return pd.Categorical.from_codes(np.zeros(len(raw), np.int8), categories=pd.Index([""]))
    combo, first = pd.factorize(key)
    labels = []
    for k in first.tolist():
        digits = []
        for uniq in reversed(values):
            k, r = divmod(k, len(uniq))
            digits.append(int(uniq[r]))
        a, b, c, d, e, f = reversed(digits)
        labels.append(f"grid {a}×{b}×{c} · block {d}×{e}×{f}" if any(digits) else "")
    idx, names = pd.factorize(np.array(labels, dtype=object))
    return pd.Categorical.from_codes(idx[combo], categories=pd.Index(names))


def _kernel_frame(raw: pd.DataFrame | None, strings: dict[int, str]) -> tuple[pd.DataFrame, int]:
    if raw is None or raw.empty:
        return empty_frame(KERNELS), 0
    n = len(raw)
    # A NULL or non-numeric time makes the row invalid (start -1), never a fake interval from 0:
    # analysis leaves it out of every time and reports it (summary.invalid_kernel_count).
    raw["start_ns"] = _int(raw["start_ns"], -1)
    raw["end_ns"] = _int(raw["end_ns"], -1)
    missing = (raw["start_ns"] == -1) | (raw["end_ns"] == -1)
    if missing.any():
        raw.loc[missing, ["start_ns", "end_ns"]] = -1
    for c in ("device_id", "context_id", "stream_id", "correlation_id"):
        raw[c] = _int(raw[c]) if c in raw else np.full(n, 0 if c != "correlation_id" else -1, np.int64)
    raw["global_pid"] = _int(raw["global_pid"], 0) if "global_pid" in raw else np.zeros(n, np.int64)
    raw["pid"] = _pid_of(raw["global_pid"])
    raw["graph_node_id"] = pd.to_numeric(raw["graph_node_id"], errors="coerce").astype("Int64")
    if raw["name_id"].isna().all() and not raw["short_id"].isna().all():  # lean read: short names only
        raw["short_name"] = _names(raw["short_id"], strings)
        raw["name"] = raw["short_name"]
    else:
        full = _names(raw["name_id"], strings)
        raw["name"] = full
        raw["short_name"] = _names(raw["short_id"], strings, fallback=full)  # no shortName: demangled name
    raw["launch"] = _launch_configs(raw)
    zero_ts = int(((raw["start_ns"] == 0) & (raw["end_ns"] == 0)).sum())
    return conform(raw, KERNELS), zero_ts


def _kernel_account(con, probe: SchemaProbe, raw: pd.DataFrame | None) -> RowAccount:
    """The "kernels" account: every row read is loaded (rows with unusable times are kept and
    flagged invalid); a kernel table without start/end columns is not recognised."""
    if raw is not None:
        return RowAccount("kernels", len(raw), len(raw))
    n = _count(con, probe.table("CUPTI_ACTIVITY_KIND_KERNEL"))
    return RowAccount("kernels", n, 0, unrecognised=n)


def _api_sql(probe: SchemaProbe, lean: bool = False) -> str | None:
    table = probe.table("CUPTI_ACTIVITY_KIND_RUNTIME")
    cols = probe.columns(table)
    if not table or not {"start", "end", "nameId"} <= set(cols):
        return None
    where = f'WHERE "eventClass" IS NOT {EVENT_CLASS_BACKTRACE}' if "eventClass" in cols else ""
    if lean:
        return (
            f'SELECT "start", "end", {_col(cols, "globalTid")}, {_col(cols, "eventClass", "0")}, "nameId" '
            f'FROM {_q(table)} {where}'
        )
    return (
        f'SELECT "start", "end", {_col(cols, "globalTid")}, {_col(cols, "correlationId")}, '
        f'{_col(cols, "eventClass", "0")}, "nameId" FROM {_q(table)} {where}'
    )


def _api_frame(raw: pd.DataFrame | None, strings: dict[int, str]) -> tuple[pd.DataFrame, int]:
    """API_CALLS frame and the number of rows dropped for unusable times (NULL, end < start)."""
    if raw is None or raw.empty:
        return empty_frame(API_CALLS), 0
    raw["start_ns"] = _int(raw["start_ns"], _MISSING)
    raw["end_ns"] = _int(raw["end_ns"], _MISSING)
    raw, dropped = _drop_invalid_times(raw)
    if raw.empty:
        return empty_frame(API_CALLS), dropped
    n = len(raw)
    raw["global_tid"] = _int(raw["global_tid"], 0) if "global_tid" in raw else np.zeros(n, np.int64)
    raw["pid"] = _pid_of(raw["global_tid"])
    raw["tid"] = _tid_of(raw["global_tid"])
    raw["correlation_id"] = _int(raw["correlation_id"]) if "correlation_id" in raw else np.full(n, -1, np.int64)
    raw["event_class"] = _int(raw["event_class"], 0)
    raw["name"] = _names(raw["name_id"], strings)
    return conform(raw, API_CALLS), dropped


def _load_nvtx(con, probe, strings) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, int], list[RowAccount]]:
    """NVTX_RANGES, NVTX_MARKS, how many range/mark rows were dropped for unusable times, and the
    accounts of NVTX rows ("NVTX ranges", "NVTX marks", "NVTX metadata"; the last has the naming
    rows of ``NVTX_METADATA_TYPES`` as loaded, i.e. used, and rows of any other event type as not
    recognised).

    Dropped: a start that is NULL, not a number or beyond 2**62 ns; an end that is not a number or
    beyond 2**62 ns (a NULL end is an open range, closed as the contract says); ``end < start``.
    """
    table = probe.table("NVTX_EVENTS")
    cols = probe.columns(table)
    if not table:
        return empty_frame(NVTX_RANGES), empty_frame(NVTX_MARKS), {}, []
    if not {"start", "eventType"} <= set(cols):
        n = _count(con, table)
        accounts = [RowAccount("NVTX events", n, 0, unrecognised=n)] if n else []
        return empty_frame(NVTX_RANGES), empty_frame(NVTX_MARKS), {}, accounts
    sql = (
        f'SELECT "start", {_col(cols, "end")}, "eventType", {_col(cols, "text")}, {_col(cols, "textId")}, '
        f'{_col(cols, "domainId", "0")}, {_col(cols, "globalTid", "0")}, {_col(cols, "endGlobalTid")} '
        f'FROM {_q(table)}'
    )
    raw = _query(con, sql, ["start", "end", "event_type", "text", "text_id", "domain_id", "global_tid", "end_tid"])
    if raw.empty:
        return empty_frame(NVTX_RANGES), empty_frame(NVTX_MARKS), {}, []
    raw["event_type"] = _int(raw["event_type"])
    raw["global_tid"] = _int(raw["global_tid"], 0)
    raw["domain_id"] = _int(raw["domain_id"], 0)
    raw["process"] = raw["global_tid"].to_numpy(np.int64) >> 24
    has_text_id = pd.to_numeric(raw["text_id"], errors="coerce").notna()
    message = raw["text"].astype(object).where(raw["text"].notna(), "")
    if has_text_id.any():
        resolved = _names(raw.loc[has_text_id, "text_id"], strings, fallback=message[has_text_id])
        message = message.copy()
        message.loc[has_text_id] = np.asarray(resolved, dtype=object)
    raw["message"] = message.astype(str)
    start = pd.to_numeric(raw["start"], errors="coerce")
    end = pd.to_numeric(raw["end"], errors="coerce")
    # Open ranges close at the largest NVTX timestamp (start or end) in the file, as nsys stats does.
    stamps = np.r_[start.to_numpy(dtype=float, na_value=np.nan), end.to_numpy(dtype=float, na_value=np.nan)]
    stamps = stamps[np.isfinite(stamps) & (np.abs(stamps) < 2.0**62)]
    close_at = int(stamps.max()) if stamps.size else 0
    bad_end = raw["end"].notna().to_numpy() & ~(end.abs() < 2**62).to_numpy()  # set, but not a usable time
    start = start.where(start.abs() < 2**62)  # non-numeric or absurd timestamps: not an event
    end = end.where(end.abs() < 2**62)

    domains = raw[raw["event_type"] == NVTX_DOMAIN_CREATE]
    domain_name = {(int(p), int(d)): m for p, d, m in zip(domains["process"], domains["domain_id"], domains["message"])}

    range_rows = raw["event_type"].isin(NVTX_RANGE_TYPES)
    is_range = range_rows & start.notna() & ~bad_end
    r = raw[is_range].copy()
    r["start_ns"] = start[is_range].astype("int64")
    r["unclosed"] = end[is_range].isna()
    r["end_ns"] = end[is_range].fillna(close_at).astype("int64")
    r = r[r["end_ns"] >= r["start_ns"]]
    r["message"] = r["message"].mask(r["message"] == "", UNNAMED_NVTX)  # neither text nor a registered string
    dropped = {"NVTX ranges": int(range_rows.sum()) - len(r)}
    doms = [domain_name.get((int(p), int(d)), "") if d else "" for p, d in zip(r["process"], r["domain_id"])]
    r["domain"] = doms
    r["name"] = [f"{d}:{m}" if d else m for d, m in zip(doms, r["message"])]
    r["pid"] = _pid_of(r["global_tid"])
    r["tid"] = _tid_of(r["global_tid"])
    r["kind"] = np.where(r["event_type"].isin((NVTX_PUSHPOP, NVTXT_PUSHPOP)), "push/pop", "start/end")
    end_tid = pd.to_numeric(r["end_tid"], errors="coerce")
    r["cross_thread"] = (end_tid.notna() & (end_tid != r["global_tid"])).to_numpy()
    ranges = conform(r, NVTX_RANGES)

    mark_rows = raw["event_type"] == NVTX_MARK
    m = raw[mark_rows & start.notna()].copy()
    dropped["NVTX marks"] = int(mark_rows.sum()) - len(m)
    m["ts_ns"] = start[m.index].astype("int64")
    m["name"] = m["message"].mask(m["message"] == "", UNNAMED_NVTX)
    m["pid"] = _pid_of(m["global_tid"])
    m["tid"] = _tid_of(m["global_tid"])
    n_meta = int(raw["event_type"].isin(NVTX_METADATA_TYPES).sum())
    other = len(raw) - int(range_rows.sum()) - int(mark_rows.sum()) - n_meta
    accounts = [
        RowAccount("NVTX ranges", int(range_rows.sum()), len(ranges), _rules((RULE_BAD_TIME, dropped["NVTX ranges"]))),
        RowAccount("NVTX marks", int(mark_rows.sum()), len(m), _rules((RULE_BAD_TIME, dropped["NVTX marks"]))),
        RowAccount("NVTX metadata", n_meta + other, n_meta, unrecognised=other),
    ]
    return ranges, conform(m, NVTX_MARKS), dropped, [a for a in accounts if a.read]


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


def _load_memops(con, probe) -> tuple[pd.DataFrame, int, RowAccount]:
    """MEMOPS frame, the number of rows dropped for unusable times (NULL, end < start), and the
    "memcpy/memset" account (rows of a table without start/end columns are not recognised)."""
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
            f'FROM {_q(table)}'
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


def _load_graph_launches(con, probe) -> tuple[pd.DataFrame, int, RowAccount, np.ndarray]:
    """GRAPH_LAUNCHES frame, the number of rows dropped for unusable times (NULL, end < start), the
    "CUDA graph launches" account, and the pid of every row read (0 when globalPid is absent)."""
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
        f'{_col(cols, "graphId")}, {_col(cols, "globalPid")} FROM {_q(table)}'
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


def _thread_names(con, probe, strings: dict[int, str]) -> dict[int, str]:
    """globalTid -> thread name from ``ThreadNames(nameId -> StringIds, globalTid)`` (unchanged
    2021.5 -> 2026.2); the last row of a thread wins (a renamed thread); rows with a non-integer
    id or a name not in StringIds are skipped. Empty when the table or its columns are absent."""
    table = probe.table("ThreadNames")
    if not table or not {"nameId", "globalTid"} <= set(probe.columns(table)):
        return {}
    names: dict[int, str] = {}
    for name_id, gtid in con.execute(f"SELECT nameId, globalTid FROM {_q(table)} ORDER BY rowid"):
        if isinstance(gtid, int) and not isinstance(gtid, bool) and isinstance(name_id, int) and name_id in strings:
            names[gtid] = strings[name_id]
    return names


def _load_meta(
    con,
    probe,
    path: Path,
    dropped: int,
    invalid_rows: dict[str, int] | None = None,
    *,
    accounts: tuple[RowAccount, ...] = (),
    launches: tuple[tuple[int, int, int], ...] = (),
    warnings: tuple[str, ...] = (),
    gpu_activity_missing: str = "",
    thread_names: dict[int, str] | None = None,
) -> TraceMeta:
    version = schema = ""
    for logical in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        table = probe.table(logical)
        if table and {"name", "value"} <= set(probe.columns(table)):
            kv = dict(con.execute(f'SELECT name, value FROM {_q(table)}').fetchall())
            version = str(kv.get("EXPORT_PRODUCT_VERSION", "") or "")
            schema = str(kv.get("EXPORT_SCHEMA_VERSION", "") or "")
            break
    gpus: dict[int, str] = {}
    table = probe.table("TARGET_INFO_GPU")
    if table and {"id", "name"} <= set(probe.columns(table)):
        for gid, name in con.execute(f"SELECT id, name FROM {_q(table)}"):
            if isinstance(gid, int) and not isinstance(gid, bool):
                gpus[gid] = str(name)
    return TraceMeta(
        source=path.name,
        format="nsys-sqlite",
        nsys_version=version,
        schema_version=schema,
        gpus=dict(sorted(gpus.items())),
        tables=tuple(sorted(probe.tables)),
        dropped_zero_ts_kernels=dropped,
        invalid_time_rows={k: v for k, v in (invalid_rows or {}).items() if v},
        warnings=warnings,
        accounts=accounts,
        launches_by_pid=launches,
        gpu_activity_missing=gpu_activity_missing,
        thread_names=thread_names or {},
    )
