"""Per-table readers of an nsys export: kernels, CUDA API calls, threads and metadata, with the helpers every
reader shares (integer columns, unusable times, names from StringIds). NVTX is read in ``nsys_nvtx``,
memcpy/memset and CUDA graph launches in ``nsys_gpu_ops``."""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from dashboard import units
from dashboard.errors import TraceFormatError
from dashboard.loaders.nsys_schema import SchemaProbe
from dashboard.loaders.nsys_sql import _LAUNCH_FRAME_COLUMNS
from dashboard.loaders.sqlite_access import _count, _q, _query
from dashboard.model import (
    API_CALLS,
    KERNELS,
    RowAccount,
    TraceMeta,
    conform,
    empty_frame,
)

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
    """Integer column with NULL/non-numeric values replaced by ``default``: as it is when already a numpy
    integer column (int32 for ids read narrow), else int64. A column of mixed SQLite types (Python objects, or
    text where ADBC gave one) is converted value by value, so its integers stay exact (through float64 a time
    above 2**53 ns rounds)."""
    if series.dtype in (np.int64, np.int32):
        return series
    if not pd.api.types.is_numeric_dtype(series.dtype):  # object, or pandas' str for a column ADBC read as text
        values = np.fromiter((_exact_int(v, default) for v in series), dtype=np.int64, count=len(series))
        return pd.Series(values, index=series.index, copy=False)
    numeric = pd.to_numeric(series, errors="coerce")
    if numeric.dtype.kind == "f":  # NaN, inf and values past int64 are not numbers here
        numeric = numeric.where(np.isfinite(numeric) & (numeric.abs() < 2.0**63))
    return numeric.fillna(default).astype("int64")


def _exact_int(value, default: int) -> int:
    """One SQLite value as an int64: an integer as it is, a REAL or numeric text truncated like ``astype``,
    anything else (NULL, a BLOB, text that is no number, beyond int64) ``default``."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                return default
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else default
    if isinstance(value, float) and math.isfinite(value) and abs(value) < 2.0**63:
        return int(value)
    return default


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
        api_calls: API_CALLS frame (``pid``, ``name``), or an ``API_TOTALS`` frame, whose rows count ``count``
            calls each.
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
    launching = names.isin(launch_names).to_numpy(bool)
    pids = api_calls.loc[launching, "pid"].to_numpy(np.int64)
    if "count" in api_calls:  # totals: one row per thread and name
        counts = pd.Series(api_calls.loc[launching, "count"].to_numpy(np.int64)).groupby(pids).sum()
        lp, ln = counts.index.to_numpy(np.int64), counts.to_numpy(np.int64)
    else:
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
        f"pid {p}: {units.count(n, 'launch', 'launches')}, 0 kernels (possible capture gap)"
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
        f"no kernel activity although {units.count(calls, 'launch call')} {'was' if calls == 1 else 'were'} recorded "
        f"(possible capture gap: no kernel "
        "or CUDA graph execution in the export); GPU busy, idle and utilisation are unknown (n/a)"
    )


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
    if ids.dtype not in (np.int64, np.int32) or not len(ids):
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


def lean_demangled(con: sqlite3.Connection, probe: SchemaProbe, file_name: str, where: str = ""):
    """How to read the demangled name ids of the rows ``_kernel_sql(probe, True, where)`` reads, in the same (rowid)
    order, when that read left them out (a table with a shortName column and a demangledName one; else None): a
    callable taking the rows read, which raises ``TraceFormatError`` naming the file when the count differs."""
    table = probe.table("CUPTI_ACTIVITY_KIND_KERNEL")
    cols = probe.columns(table)
    if not table or not {"start", "end", "shortName", "demangledName"} <= set(cols):
        return None
    sql = f'SELECT "demangledName" FROM {_q(table)}' + (f" WHERE {where}" if where else "")

    def read(rows: int) -> pd.Series:
        ids = _query(con, sql, ["name_id"])["name_id"]
        if len(ids) != rows:  # the file changed between the two reads
            raise TraceFormatError(
                f"{file_name}: the kernel table changed while it was read (is it still being written?)"
            )
        return ids

    return read


def _launch_configs(raw: pd.DataFrame) -> pd.Categorical:
    """ "grid X×Y×Z · block X×Y×Z" per kernel, built once per distinct configuration."""
    cols = list(_LAUNCH_FRAME_COLUMNS)
    if not all(c in raw for c in cols):
        return pd.Categorical.from_codes(np.zeros(len(raw), np.int8), categories=pd.Index([""]))
    dims = [_int(raw[c], 0).to_numpy() for c in cols]
    lows = [int(d.min()) for d in dims]
    spans = [int(d.max()) - lo + 1 for d, lo in zip(dims, lows)]
    if len(raw) and math.prod(spans) < 2**62:
        return _launch_configs_in_parts(dims, lows, spans)
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


LAUNCH_PART_ROWS = 1 << 21  # kernel rows labelled a part at a time (``_launch_configs_in_parts``)


def _launch_configs_in_parts(dims: list[np.ndarray], lows: list[int], spans: list[int]) -> pd.Categorical:
    """``_launch_configs`` where the six dimensions' value ranges multiply to under 2**62: one mixed-radix key per
    row, the distinct keys found (in order of first appearance) and looked up a part of the rows at a time, so
    10M kernels make no 80 MB key, code or hash columns."""
    n = len(dims[0])

    def keys(a: int) -> np.ndarray:
        key = np.zeros(len(dims[0][a : a + LAUNCH_PART_ROWS]), dtype=np.int64)
        for d, lo, span in zip(dims, lows, spans):
            key *= span
            key += d[a : a + LAUNCH_PART_ROWS]
            key -= lo
        return key

    uniques = pd.unique(np.concatenate([pd.unique(keys(a)) for a in range(0, n, LAUNCH_PART_ROWS)]))
    labels = []
    for k in uniques.tolist():
        values = []
        for lo, span in zip(reversed(lows), reversed(spans)):
            k, r = divmod(k, span)
            values.append(lo + r)
        a, b, c, d, e, f = reversed(values)
        labels.append(f"grid {a}×{b}×{c} · block {d}×{e}×{f}" if any(values) else "")
    idx, names = pd.factorize(np.array(labels, dtype=object))
    order = np.argsort(uniques, kind="stable")
    ordered, per_key = uniques[order], idx[order].astype(np.int8 if len(names) < 128 else np.int32)
    codes = np.empty(n, dtype=per_key.dtype)
    for a in range(0, n, LAUNCH_PART_ROWS):
        codes[a : a + LAUNCH_PART_ROWS] = per_key[np.searchsorted(ordered, keys(a))]
    return pd.Categorical.from_codes(codes, categories=pd.Index(names))


def _kernel_frame(
    raw: pd.DataFrame | None, strings: dict[int, str], demangled: Callable[[int], pd.Series] | None = None
) -> tuple[pd.DataFrame, int]:
    """The KERNELS frame of the kernel query's columns, and the rows with both times 0.

    ``demangled``: for a lean read without the demangled name ids, how to read them (``lean_demangled``);
    called only when a short name id is NULL or not in StringIds (then every name falls back as in a full load).

    Built column by column into a new frame, never by assigning into ``raw``: with copy-on-write every column
    assigned there was copied (10M kernels: ~1 s and ~1 GB of fresh pages)."""
    if raw is None or raw.empty:
        return empty_frame(KERNELS), 0
    n = len(raw)
    # A NULL or non-numeric time makes the row invalid (start -1), never a fake interval from 0:
    # analysis leaves it out of every time and reports it (summary.invalid_kernel_count).
    start = _int(raw["start_ns"], -1).to_numpy()
    end = _int(raw["end_ns"], -1).to_numpy()
    missing = (start == -1) | (end == -1)
    if missing.any():
        start, end = np.where(missing, -1, start), np.where(missing, -1, end)
    del missing
    out = {"start_ns": start, "end_ns": end}
    for c in ("device_id", "context_id", "stream_id", "correlation_id"):
        # A column the query lacks is a constant: int32 at once, as ``conform`` would narrow it.
        out[c] = _int(raw[c]) if c in raw else np.full(n, 0 if c != "correlation_id" else -1, np.int32)
    out["pid"] = _pid_of(_int(raw["global_pid"], 0)) if "global_pid" in raw else np.zeros(n, np.int32)
    out["graph_node_id"] = _nullable_int(raw["graph_node_id"])
    if "name_id" not in raw:  # a lean read (``_LEAN_KERNEL_COLUMNS``): one name id per row
        short = _dense_names(raw["short_id"], strings)
        if short is None and demangled is not None:  # a short name falls back: the demangled ids are needed
            full = _names(demangled(n).set_axis(raw.index), strings)
            out["short_name"], out["name"] = _names(raw["short_id"], strings, fallback=full), full
        else:  # every short name resolves, or there is no other name to fall back to: a summary keys by these
            out["short_name"] = out["name"] = short if short is not None else _names(raw["short_id"], strings)
    elif raw["name_id"].isna().all() and not raw["short_id"].isna().all():  # no demangled names at all
        out["short_name"] = out["name"] = _names(raw["short_id"], strings)
    else:
        full = _names(raw["name_id"], strings)
        out["short_name"] = _names(raw["short_id"], strings, fallback=full)  # no shortName: demangled name
        out["name"] = full
    out["launch"] = _launch_configs(raw)
    zero_ts = int(np.count_nonzero((start == 0) & (end == 0)))
    return conform(pd.DataFrame(out, copy=False), KERNELS), zero_ts


def _nullable_int(column: pd.Series) -> pd.arrays.IntegerArray:
    """An id column that may hold NULLs (a graph node) as ``Int64``: integers as they are, anything that is
    no number NULL. A column read as integers (with or without NULLs) is taken without a per-row pass."""
    values = column.array
    if isinstance(values, pd.arrays.IntegerArray):
        return values if values.dtype == "Int64" else values.astype("Int64")
    if column.dtype in (np.int64, np.int32):
        ints = column.to_numpy(np.int64)
        return pd.arrays.IntegerArray(ints, np.zeros(len(ints), dtype=bool))
    return pd.to_numeric(column, errors="coerce").astype("Int64").array


def _kernel_account(con, probe: SchemaProbe, raw: pd.DataFrame | None) -> RowAccount:
    """The "kernels" account: every row read is loaded (rows with unusable times are kept and
    flagged invalid); a kernel table without start/end columns is not recognised."""
    if raw is not None:
        return RowAccount("kernels", len(raw), len(raw))
    n = _count(con, probe.table("CUPTI_ACTIVITY_KIND_KERNEL"))
    return RowAccount("kernels", n, 0, unrecognised=n)


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
