"""NVTX ranges and marks of an nsys export (``NVTX_EVENTS``): push/pop and start/end ranges with their
domains, marks, and the naming rows (categories, thread, domain and CUDA resource names), counted."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.loaders.nsys_tables import RULE_BAD_TIME, _int, _names, _pid_of, _rules, _tid_of
from dashboard.loaders.sqlite_access import _col, _count, _q, _query
from dashboard.model import NVTX_MARKS, NVTX_RANGES, UNNAMED_NVTX, RowAccount, conform, empty_frame

# NVTX_EVENTS.eventType values (ENUM_NSYS_EVENT_TYPE; unchanged 2021.5 -> 2026.2).
NVTX_MARK = 34
NVTX_PUSHPOP = 59
NVTX_STARTEND = 60
NVTXT_PUSHPOP = 70
NVTXT_STARTEND = 71
NVTX_DOMAIN_CREATE = 75
NVTX_RANGE_TYPES = (NVTX_PUSHPOP, NVTX_STARTEND, NVTXT_PUSHPOP, NVTXT_STARTEND)


# NVTX_EVENTS.eventType values that name things rather than record events: category (33), thread
# name (39), domain create/destroy (75/76), CUDA device/context/stream names (97-99). Used, not shown.
NVTX_METADATA_TYPES = (33, 39, NVTX_DOMAIN_CREATE, 76, 97, 98, 99)


def _load_nvtx(
    con, probe, strings, *, where: str = "", close_at: int | None = None, domain_names: dict | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, int], list[RowAccount]]:
    """NVTX_RANGES, NVTX_MARKS, how many range/mark rows were dropped for unusable times, and the
    accounts of NVTX rows ("NVTX ranges", "NVTX marks", "NVTX metadata"; the last has the naming
    rows of ``NVTX_METADATA_TYPES`` as loaded, i.e. used, and rows of any other event type as not
    recognised).

    Dropped: a start that is NULL, not a number or beyond 2**62 ns; an end that is not a number or
    beyond 2**62 ns (a NULL end is an open range, closed as the contract says); ``end < start``.

    A time slice (``data.slices``) reads only some rows (``where``, an SQL condition) and passes what
    depends on the whole table: ``close_at`` (where open ranges close) and ``domain_names``
    (``nvtx_domain_names``); by default both come from the rows read.
    """
    table = probe.table("NVTX_EVENTS")
    cols = probe.columns(table)
    if not table:
        return empty_frame(NVTX_RANGES), empty_frame(NVTX_MARKS), {}, []
    if not {"start", "eventType"} <= set(cols):
        n = _count(con, table)
        accounts = [RowAccount("NVTX events", n, 0, unrecognised=n)] if n else []
        return empty_frame(NVTX_RANGES), empty_frame(NVTX_MARKS), {}, accounts
    raw = _nvtx_raw(con, probe, strings, where)
    if raw.empty:
        return empty_frame(NVTX_RANGES), empty_frame(NVTX_MARKS), {}, []
    start = pd.to_numeric(raw["start"], errors="coerce")
    end = pd.to_numeric(raw["end"], errors="coerce")
    if close_at is None:
        # Open ranges close at the largest NVTX timestamp (start or end) in the file, as nsys stats does.
        stamps = np.r_[start.to_numpy(dtype=float, na_value=np.nan), end.to_numpy(dtype=float, na_value=np.nan)]
        stamps = stamps[np.isfinite(stamps) & (np.abs(stamps) < 2.0**62)]
        close_at = int(stamps.max()) if stamps.size else 0
    bad_end = raw["end"].notna().to_numpy() & ~(end.abs() < 2**62).to_numpy()  # set, but not a usable time
    start = start.where(start.abs() < 2**62)  # non-numeric or absurd timestamps: not an event
    end = end.where(end.abs() < 2**62)

    domain_name = _domain_names(raw) if domain_names is None else domain_names

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
    ranges = conform(r, NVTX_RANGES).reset_index(drop=True)  # row positions, as the Parquet cache gives them back

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
    return ranges, conform(m, NVTX_MARKS).reset_index(drop=True), dropped, [a for a in accounts if a.read]


def _nvtx_raw(con, probe, strings, where: str = "") -> pd.DataFrame:
    """The NVTX_EVENTS rows (``where``: an SQL condition), with int event type, thread, domain, process and
    resolved message (``StringIds[textId]`` when set, else ``text``)."""
    table = probe.table("NVTX_EVENTS")
    cols = probe.columns(table)
    sql = (
        f'SELECT "start", {_col(cols, "end")}, "eventType", {_col(cols, "text")}, {_col(cols, "textId")}, '
        f'{_col(cols, "domainId", "0")}, {_col(cols, "globalTid", "0")}, {_col(cols, "endGlobalTid")} '
        f"FROM {_q(table)}" + (f" WHERE {where}" if where else "")
    )
    raw = _query(con, sql, ["start", "end", "event_type", "text", "text_id", "domain_id", "global_tid", "end_tid"])
    if raw.empty:
        return raw
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
    return raw


def _domain_names(raw: pd.DataFrame) -> dict[tuple[int, int], str]:
    """(process, domain id) -> domain name, from the domain-create rows among ``raw`` (``_nvtx_raw``)."""
    domains = raw[raw["event_type"] == NVTX_DOMAIN_CREATE]
    return {(int(p), int(d)): m for p, d, m in zip(domains["process"], domains["domain_id"], domains["message"])}


def nvtx_domain_names(con, probe, strings) -> dict[tuple[int, int], str]:
    """(process, domain id) -> domain name of the whole export (its domain-create rows): what a time slice
    of NVTX_EVENTS passes to ``_load_nvtx``. Empty without a usable NVTX_EVENTS table."""
    table = probe.table("NVTX_EVENTS")
    if not table or not {"start", "eventType"} <= set(probe.columns(table)):
        return {}
    raw = _nvtx_raw(con, probe, strings, f'"eventType" = {NVTX_DOMAIN_CREATE}')
    return _domain_names(raw) if len(raw) else {}
