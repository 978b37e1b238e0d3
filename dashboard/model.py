"""Canonical frames and value objects shared by loaders, analysis, figures and the app.

Times are integer nanoseconds on the nsys session timeline (t = 0 is the capture start) and stay
integers until the figure layer. Intervals are half-open ``[start_ns, end_ns)``.

This module imports nothing from the rest of the package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pandas as pd

# Column name -> dtype of every canonical frame. Loaders must return exactly these columns in
# this order (extra information goes into new columns only after a schema change here).
KERNELS: dict[str, str] = {
    "start_ns": "int64",
    "end_ns": "int64",
    "device_id": "int64",
    "context_id": "int64",
    "stream_id": "int64",
    "correlation_id": "int64",
    "pid": "int64",  # the process (nsys: globalPid >> 24 & 0xFFFFFF); nothing reads the 64-bit globalPid itself
    "graph_node_id": "Int64",  # nullable: NULL for kernels launched outside a CUDA graph
    "short_name": "category",
    "name": "category",  # demangled name
    "launch": "category",  # "grid 128×1×1 · block 256×1×1" ("" when the export lacks grid/block columns)
}
API_CALLS: dict[str, str] = {
    "start_ns": "int64",
    "end_ns": "int64",
    "global_tid": "int64",
    "pid": "int64",
    "tid": "int64",
    "correlation_id": "int64",
    "event_class": "int64",
    "name": "category",  # raw callback name, e.g. cudaLaunchKernel_v7000
}
NVTX_RANGES: dict[str, str] = {
    "start_ns": "int64",
    "end_ns": "int64",
    "name": "category",  # "domain:name" for named domains, else the message
    "message": "category",  # the message alone, without the domain
    "domain": "category",  # "" for the default domain
    "global_tid": "int64",
    "pid": "int64",
    "tid": "int64",
    "kind": "category",  # "push/pop" or "start/end"
    "unclosed": "bool",  # end was NULL; closed at the largest NVTX timestamp
    "cross_thread": "bool",  # ended on another thread (endGlobalTid set and different)
}
NVTX_MARKS: dict[str, str] = {
    "ts_ns": "int64",
    "name": "category",
    "global_tid": "int64",
    "pid": "int64",
    "tid": "int64",
}
MEMOPS: dict[str, str] = {
    "start_ns": "int64",
    "end_ns": "int64",
    "device_id": "int64",
    "stream_id": "int64",
    "kind": "category",  # "memcpy HtoD" ... or "memset"
    "bytes": "int64",
    "pid": "int64",  # process of the operation (-1 when unknown)
    "context_id": "int64",  # CUDA context (-1 when unknown)
    "correlation_id": "int64",  # of the CUDA API call that issued it (-1 when unknown)
    # memory kinds as nsys labels them (ENUM_CUDA_MEM_KIND: "Pageable", "Pinned", "Device", "Managed", ...);
    # memset: the set memory's kind in dst_kind, src_kind ""; "" when the input does not record it
    "src_kind": "category",
    "dst_kind": "category",
}
GRAPH_LAUNCHES: dict[str, str] = {
    "start_ns": "int64",
    "end_ns": "int64",
    "device_id": "int64",
    "stream_id": "int64",
    "graph_id": "int64",
}

# Summary-model frames (see Summary below).
API_STATS: dict[str, str] = {"name": "object", "count": "int64", "total_ns": "int64"}
# CUDA API calls reduced as they are read, for a summary: usable calls per (thread, raw name), never one row a call.
API_TOTALS: dict[str, str] = {
    "global_tid": "int64",
    "pid": "int64",
    "name": "category",
    "count": "int64",
    "total_ns": "int64",
}
NVTX_STATS: dict[str, str] = {
    "name": "object",
    "count": "int64",
    "sum_ns": "int64",
    "union_ns": "int64",
    "gpu_overlap_ns": "int64",
}
KERNEL_STATS: dict[str, str] = {"name": "object", "count": "int64", "total_ns": "int64"}
DISPATCH_MARKS: dict[str, str] = {"start_ns": "int64", "name": "object"}

# Name of an NVTX range or mark with neither a text nor a registered string (never a blank row or hover).
UNNAMED_NVTX = "<unnamed>"

SUMMARY_NOTE = (
    "GPU busy is interval union, not utilization counter. CPU/API/NVTX times overlap GPU work "
    "and each other; do not sum them as exclusive costs."
)


def _dtype(name: str):
    # Categories are always str (what a Parquet round trip gives), even when empty.
    return pd.CategoricalDtype(pd.Index([], dtype="str")) if name == "category" else name


@lru_cache(maxsize=64)
def _empty(items: tuple[tuple[str, str], ...]) -> pd.DataFrame:
    return pd.DataFrame({col: pd.Series([], dtype=_dtype(dtype)) for col, dtype in items})


def empty_frame(schema: dict[str, str]) -> pd.DataFrame:
    """Return a zero-row frame with exactly the columns and dtypes of ``schema`` (a new frame each call:
    a copy of one built per schema, ~80 times quicker than building it)."""
    return _empty(tuple(schema.items())).copy()


# Id columns kept as int32 when every value fits (the schema's int64 otherwise): a stream, device, context,
# process or thread id and a correlation id are small numbers, and the event frames are most of a big trace's
# memory. Readers take them with ``to_numpy(np.int64)`` before any arithmetic.
NARROW_IDS = frozenset({"device_id", "context_id", "stream_id", "correlation_id", "pid", "tid", "event_class"})
_I32 = np.iinfo(np.int32)


def _narrowed(series: pd.Series) -> pd.Series:
    if series.dtype != np.int64 or series.empty:
        return series
    values = series.to_numpy()
    if values.min() < _I32.min or values.max() > _I32.max:
        return series
    return series.astype(np.int32)


def conform(frame: pd.DataFrame, schema: dict[str, str]) -> pd.DataFrame:
    """Return ``frame`` restricted to the columns of ``schema``, in order, cast to its dtypes.

    Columns already of their dtype are taken as they are (copy-on-write: the result never changes
    ``frame``). An int64 id column of ``NARROW_IDS`` whose values all fit is int32.

    Raises:
        KeyError: if a column of the schema is missing (a loader bug, not a user error).
    """
    out = {}
    for col, dtype in schema.items():
        series = frame[col]
        narrow = dtype == "int64" and col in NARROW_IDS
        if series.dtype != dtype and not (narrow and series.dtype == np.int32):
            series = series.astype(dtype)
        if narrow:
            series = _narrowed(series)
        if dtype == "category" and series.cat.categories.dtype == object:
            series = series.cat.rename_categories(series.cat.categories.astype("str"))
        out[col] = series
    return pd.DataFrame(out, copy=False)  # one block per column: no consolidation copy


@dataclass(frozen=True)
class RowAccount:
    """How the input rows (or events) of one kind were used: every row read is accounted for.

    ``read == loaded + sum(count for _, count in skipped) + unrecognised``.

    Attributes:
        kind: what the rows are, in the field's words ("kernels", "CUDA API calls", "NVTX ranges",
            "NVTX marks", "memcpy/memset", "CUDA graph launches", "events", ...).
        read: rows (events) of this kind found in the input.
        loaded: rows kept in the bundle's frames (kernels kept but flagged invalid count as loaded).
        skipped: ``(documented rule, count)`` for rows left out on purpose, e.g.
            ``("end before start", 3)``; only rules with a non-zero count.
        unrecognised: rows that looked like this kind but could not be read as it.
    """

    kind: str
    read: int
    loaded: int
    skipped: tuple[tuple[str, int], ...] = ()
    unrecognised: int = 0

    @property
    def skipped_total(self) -> int:
        """Rows left out by a documented rule."""
        return sum(n for _, n in self.skipped)


@dataclass(frozen=True)
class TraceMeta:
    """What is known about the recording, for display and diagnostics.

    ``gpus`` maps device id -> GPU name (empty when the export has no TARGET_INFO_GPU).
    """

    source: str  # base name of the file
    format: str  # "nsys-sqlite", "summary-json" or "kineto-json"
    nsys_version: str = ""
    schema_version: str = ""
    gpus: dict[int, str] = field(default_factory=dict)
    tables: tuple[str, ...] = ()
    dropped_zero_ts_kernels: int = 0
    # rows dropped for unusable times (NULL/non-numeric, end < start, >= 2**62 ns), per kind
    # ("CUDA API calls", "memcpy/memset", "CUDA graph launches"); only kinds with drops appear
    invalid_time_rows: dict[str, int] = field(default_factory=dict)
    # problems found while reading the input that did not stop it (one line each, for display)
    warnings: tuple[str, ...] = ()
    unmatched_ends: int = 0  # Chrome-trace 'E' events without an open 'B' on their thread (ignored)
    # per kind of input row: read / loaded / skipped by rule / not recognised (see RowAccount)
    accounts: tuple[RowAccount, ...] = ()
    # the distributed rank the trace says it was recorded on (Kineto ``distributedInfo.rank``), if any
    rank: int | None = None
    # non-empty when GPU work was launched but the trace holds no kernel activity to measure it (e.g.
    # a Kineto trace recorded in CUPTI range-profiler mode): why. GPU busy, idle and utilisation are
    # then unknown and shown as "n/a", never as 0.
    gpu_activity_missing: str = ""
    # merged multi-rank bundle only (analysis.ranks.merge_ranks): device lane id -> (rank, device id),
    # and process id -> (rank, pid), the explicit identity behind the renumbered ids
    rank_devices: dict[int, tuple[int, int]] = field(default_factory=dict)
    rank_pids: dict[int, tuple[int, int]] = field(default_factory=dict)
    # per process that made CUDA launch calls: (pid, launch API calls, GPU executions recorded: kernel
    # rows + graph-level graph executions); sorted by pid. Empty when the input has no launch calls.
    launches_by_pid: tuple[tuple[int, int, int], ...] = ()
    # events of accelerators whose work tracedash does not analyse (Kineto ``mtia_ccp_events``, ...):
    # ``(what, count)`` such as ``("MTIA device events", 1313)``, ``("MTIA runtime calls", 823)``; device
    # work among them means the GPU figures are 0 because that work is not measured, not because none ran
    unanalysed_device: tuple[tuple[str, int], ...] = ()
    # global_tid (nsys packing: pid << 24 | tid) -> thread name, for timeline lane labels: nsys
    # ThreadNames (last row per thread), Kineto ``thread_name`` metadata events; empty when unknown
    thread_names: dict[int, str] = field(default_factory=dict)


# The kind of RowAccount for input events no frame is meant to hold (a Kineto trace's CPU ops, flow
# arrows, metadata, ...): skipped by design, so only its unrecognised events are a problem to report.
NOT_SHOWN_KIND = "events not shown"


def account_lines(accounts: tuple[RowAccount, ...] | list[RowAccount]) -> list[str]:
    """One line per kind whose rows were not all loaded: skipped (by rule) and unrecognised counts.

    E.g. ``"CUDA API calls: 38 of 95 rows not loaded: 38 CUDA backtrace duplicates (eventClass 67)"``.
    Kinds whose every row was loaded give no line; ``NOT_SHOWN_KIND`` gives one only for rows not
    recognised.
    """
    out = []
    for a in accounts:
        parts = [f"{n:,} {rule}" for rule, n in a.skipped if n and a.kind != NOT_SHOWN_KIND]
        if a.unrecognised:
            parts.append(f"{a.unrecognised:,} not recognised")
        if parts:
            lost = a.skipped_total + a.unrecognised
            out.append(f"{a.kind}: {lost:,} of {a.read:,} rows not loaded: {'; '.join(parts)}")
    return out


def merge_accounts(groups: list[tuple[RowAccount, ...]]) -> tuple[RowAccount, ...]:
    """Add up the accounts of several inputs (e.g. the ranks of one run) kind by kind, in first-seen
    order; the counts of a rule are summed."""
    merged: dict[str, list] = {}
    for accounts in groups:
        for a in accounts:
            m = merged.setdefault(a.kind, [0, 0, {}, 0])
            m[0] += a.read
            m[1] += a.loaded
            for rule, n in a.skipped:
                m[2][rule] = m[2].get(rule, 0) + n
            m[3] += a.unrecognised
    return tuple(RowAccount(k, r, lo, tuple(sk.items()), u) for k, (r, lo, sk, u) in merged.items())


def account_brief(accounts: tuple[RowAccount, ...] | list[RowAccount]) -> str:
    """One compact line over every kind: ``"kernels 3 · CUDA API calls 95 (38 not loaded: 38 CUDA
    backtrace duplicates (eventClass 67)) · NVTX ranges 22"`` (rows read; what was not loaded)."""
    parts = []
    for a in accounts:
        lost = [f"{n:,} {rule}" for rule, n in a.skipped if n]
        if a.unrecognised:
            lost.append(f"{a.unrecognised:,} not recognised")
        tail = f" ({a.skipped_total + a.unrecognised:,} not loaded: {'; '.join(lost)})" if lost else ""
        parts.append(f"{a.kind} {a.read:,}{tail}")
    return " · ".join(parts)


def input_warnings(meta: TraceMeta) -> tuple[str, ...]:
    """Every problem with the input a reader must know, one line each, in a fixed order.

    ``meta.warnings`` (content that does not fit what the file claims, e.g. a possible capture
    gap), then ``account_lines(meta.accounts)``, then kernels without timestamps. Empty when every
    input row was loaded and nothing looked wrong. This is the ``warnings`` list of ``summarize``
    and the overview's input notice.
    """
    lines = [*meta.warnings, *account_lines(meta.accounts)]
    if meta.dropped_zero_ts_kernels:
        lines.append(
            f"kernels: {meta.dropped_zero_ts_kernels:,} without timestamps (start = end = 0), left out of span and busy"
        )
    return tuple(lines)


@dataclass(frozen=True)
class TraceBundle:
    """All event frames of one nsys trace (see the schema dicts above for columns and dtypes).

    A value: analysis never mutates it, so the app may share one bundle between sessions.
    Missing tables give typed empty frames, never ``None``.

    ``api_totals`` is set only by a load for a summary (``load_nsys_sqlite(lean=True)``): the CUDA API calls
    as ``API_TOTALS`` (counts and summed durations per thread and name), and ``api_calls`` is then empty.
    Such a bundle answers ``summarize`` and nothing else: it is never cached or shown.
    """

    meta: TraceMeta
    kernels: pd.DataFrame
    api_calls: pd.DataFrame
    nvtx_ranges: pd.DataFrame
    nvtx_marks: pd.DataFrame
    memops: pd.DataFrame
    graph_launches: pd.DataFrame
    api_totals: pd.DataFrame | None = None


@dataclass(frozen=True)
class Summary:
    """The seed-format summary of a trace, with times as integer ns (see summary_contract.md).

    Frames:
        api: API_STATS, one row per raw API name, sorted by total_ns descending.
        nvtx: NVTX_STATS, one row per range name (``domain:name`` for named domains).
        top_kernels: KERNEL_STATS, first 20 short names by total_ns descending (ties: name).
        dispatch_timeline: DISPATCH_MARKS sorted by (start_ns, name).
    ``gpu_start_ns``/``gpu_end_ns`` are the first kernel start and last kernel end when known
    (SQLite input); ``None`` for a summary read from JSON, which does not carry them.
    """

    file: str
    gpu_activity_span_ns: int
    gpu_busy_union_ns: int
    kernel_count: int
    graph_node_kernel_count: int
    api: pd.DataFrame
    nvtx: pd.DataFrame
    dispatch: dict[str, int]
    dispatch_timeline: pd.DataFrame
    top_kernels: pd.DataFrame
    notes: str = SUMMARY_NOTE
    gpu_start_ns: int | None = None
    gpu_end_ns: int | None = None
    # input problems, one line each (``input_warnings``); the ``warnings`` list of the JSON
    warnings: tuple[str, ...] = ()
    # non-empty (why) when GPU work was launched but none of it was captured (``TraceMeta.gpu_activity_missing``):
    # span, busy and idle are then unknown, written as null (n/a), never as a measured 0
    gpu_activity_missing: str = ""

    @property
    def gpu_idle_within_span_ns(self) -> int:
        """Span minus busy union, ns."""
        return self.gpu_activity_span_ns - self.gpu_busy_union_ns

    @property
    def utilisation_pct(self) -> float | None:
        """Busy union as a percentage of the span; None ("n/a") when the span is 0 (no kernels)."""
        if self.gpu_activity_span_ns <= 0:
            return None
        return 100.0 * self.gpu_busy_union_ns / self.gpu_activity_span_ns


def ns_to_s(value: int | np.integer) -> float:
    """Convert integer ns to float seconds (the only rounding step, done once, at output)."""
    return int(value) / 1e9


@dataclass(frozen=True)
class DeviceLane:
    """What one device lane shows in ``[lo_ns, hi_ns)``.

    ``mode`` is ``"intervals"`` (``starts``/``ends``: busy union, ``gap_starts``/``gap_ends``:
    idle gaps inside the device's own activity) or ``"bins"`` (``edges`` ns and per-bin busy
    ``fraction`` in [0, 1]). ``busy_ns`` is the device's busy union inside the window.
    ``full_starts``/``full_ends`` and ``gap_full_starts``/``gap_full_ends`` (intervals mode; aligned with
    the busy intervals and gaps) are their whole extents when the window's edges cut them (hovers say both).
    """

    device_id: int
    mode: str
    busy_ns: int
    starts: np.ndarray
    ends: np.ndarray
    gap_starts: np.ndarray
    gap_ends: np.ndarray
    edges: np.ndarray
    fraction: np.ndarray
    full_starts: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    full_ends: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    gap_full_starts: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    gap_full_ends: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))


def device_label(
    device_id: int, gpus: dict[int, str] | None = None, rank_devices: dict[int, tuple[int, int]] | None = None
) -> str:
    """Short display name of a device: ``"GPU 0"``, or ``"rank 1 · GPU 0"`` for a lane of a merged
    multi-rank bundle (looked up in its ``meta.rank_devices``); "GPU not recorded" for a negative id (an
    event that names no device)."""
    if rank_devices and device_id in rank_devices:
        rank, device = rank_devices[device_id]
        return f"rank {rank} · GPU {device}"
    return f"GPU {device_id}" if device_id >= 0 else "GPU not recorded"
