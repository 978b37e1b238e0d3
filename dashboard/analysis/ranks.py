"""Several traces of one multi-rank run: a per-rank table and one merged bundle for the views.

Ranks are the input files in the order given (rank 0 = the first file). Each nsys export keeps
its own session timeline (t = 0 is that process's capture start, see nsys_schema_notes.md §1): the
merged bundle aligns every rank on its own session origin and never tries to relate the clocks of
different hosts, which are not comparable to the nanosecond.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dashboard.errors import TraceFormatError
from dashboard.model import (
    API_CALLS,
    GRAPH_LAUNCHES,
    KERNELS,
    MEMOPS,
    NVTX_MARKS,
    NVTX_RANGES,
    Summary,
    TraceBundle,
    TraceMeta,
    conform,
    merge_accounts,
)

MAX_RANKS = 4096
RANKS_FORMAT = "nsys-ranks"
RANKS_NOTICE = (
    "Ranks aligned on their own session start; clocks of different hosts are not comparable to the ns. "
    "GPU lanes are “rank r · GPU d” and threads “rank r · pid p · tid t”; NVTX ranges are per rank "
    "(“rank r · name”, GPU overlap against that rank's own GPU work); dispatch marks are per rank "
    "(“rank r · …”), so the dispatch and phase analysis needs one rank opened alone."
)
RANK_COLUMN = "rank"  # every frame of a merged bundle carries the rank each row belongs to (int64)

RANK_TABLE: dict[str, str] = {
    "rank": "int64",
    "file": "object",
    "span_ns": "Int64",  # gpu_activity_span: first kernel start to last kernel end (NA: GPU work not captured)
    "busy_ns": "Int64",  # union of kernel intervals (NA: GPU work not captured)
    "idle_ns": "Int64",  # span - busy (NA: GPU work not captured)
    "utilisation_pct": "float64",  # 100 * busy / span (0.0 without kernels)
    "kernel_count": "int64",
    "top_kernel": "object",  # short name with the largest total kernel time ("" without kernels)
    "top_kernel_ns": "int64",
    "slowest": "bool",
}


def rank_label(rank: int, device_id: int, name: str = "") -> str:
    """GPU name shown for a merged device: ``"rank 1 · GPU 0 · NVIDIA H100"`` (name optional)."""
    return f"rank {rank} · GPU {device_id}" + (f" · {name}" if name else "")


def rank_table(
    summaries: Sequence[Summary | None], files: Sequence[str], ranks: Sequence[int] | None = None
) -> pd.DataFrame:
    """Combined per-rank table of a multi-rank run.

    Args:
        summaries: one Summary per input file; ``None`` for a file that failed (it gets no row,
            and the other ranks keep their numbers).
        files: the file names, same length and order.
        ranks: the rank of each file (default: its position; see ``declared_ranks``).

    Returns:
        Frame with the columns and dtypes of ``RANK_TABLE``, one row per summary, sorted by rank.
        ``slowest`` is True on exactly one row (none when there are no rows, or no rank has GPU
        activity: a span of 0 is no work, not the longest wait): the rank with the longest GPU
        activity span (first kernel start to last kernel end on its own clock; in a synchronised
        run the other ranks wait for it); ties go to the larger busy union, then the lower rank.

    Raises:
        ValueError: ``summaries``, ``files`` (and ``ranks``) differ in length (a caller bug).
    """
    if len(summaries) != len(files) or (ranks is not None and len(ranks) != len(files)):
        raise ValueError(f"{len(summaries)} summaries for {len(files)} files")
    ranks = list(ranks) if ranks is not None else list(range(len(files)))
    rows = []
    for rank, s, name in sorted(zip(ranks, summaries, files), key=lambda t: t[0]):
        if s is None:
            continue
        top = s.top_kernels.iloc[0] if len(s.top_kernels) else None
        unknown = bool(s.gpu_activity_missing)  # launched, not captured: n/a, as its own summary writes null
        rows.append(
            {
                "rank": rank,
                "file": str(name),
                "span_ns": pd.NA if unknown else int(s.gpu_activity_span_ns),
                "busy_ns": pd.NA if unknown else int(s.gpu_busy_union_ns),
                "idle_ns": pd.NA if unknown else int(s.gpu_idle_within_span_ns),
                "utilisation_pct": np.nan if unknown or s.utilisation_pct is None else float(s.utilisation_pct),
                "kernel_count": int(s.kernel_count),
                "top_kernel": "" if top is None else str(top["name"]),
                "top_kernel_ns": 0 if top is None else int(top["total_ns"]),
                "slowest": False,
            }
        )
    table = pd.DataFrame(rows, columns=list(RANK_TABLE)).astype(RANK_TABLE)
    if len(table) and int(table["span_ns"].fillna(0).max()) > 0:  # a rank without GPU work is never "the slowest"
        order = table.sort_values(
            ["span_ns", "busy_ns", "rank"], ascending=[False, False, True], kind="stable", na_position="last"
        )
        table.loc[order.index[0], "slowest"] = True
    return table


def declared_ranks(declared: Sequence[int | None], files: Sequence[str]) -> tuple[list[int], list[str]]:
    """The rank of each input: what the traces say (Kineto ``distributedInfo.rank``) when every one
    says it and no two say the same, else the order given (rank r = the r-th file).

    Args:
        declared: the rank each trace declares (``TraceMeta.rank``), None where it declares none.
        files: the file names, same order (for the warnings).

    Returns:
        ``(ranks, warnings)``: one rank per input, and one line per problem: the declared ranks
        contradict the order given (they are used), or they cannot be used (some missing or
        duplicated: the order given is used).
    """
    given = list(range(len(declared)))
    if not any(r is not None for r in declared):
        return given, []
    if any(r is None for r in declared) or len(set(declared)) != len(declared):
        said = ", ".join(f"{f}: {'none' if r is None else r}" for f, r in zip(files, declared))
        return given, [
            f"ranks taken from the order given: the traces' distributedInfo.rank values ({said}) are "
            "missing or repeated"
        ]
    ranks = [int(r) for r in declared]
    if ranks != given:
        said = ", ".join(f"{f} is rank {r}" for f, r in zip(files, ranks))
        return ranks, [f"ranks taken from each trace's distributedInfo.rank, not from the order given: {said}"]
    return ranks, []


def merge_ranks(
    bundles: Sequence[TraceBundle], files: Sequence[str] | None = None, ranks: Sequence[int] | None = None
) -> TraceBundle:
    """One bundle holding every rank, so the single-trace views work on it unchanged.

    Times are kept as they are: each trace is already on its own session timeline (t = 0 = its
    capture start), so every rank is aligned on its own origin; the clocks of different hosts are
    not comparable, and nothing here pretends they are.

    Identity is explicit, never packed into ids:
      * every frame gets a ``rank`` column (int64), the rank the row belongs to;
      * ``device_id`` becomes a lane id, numbered 0, 1, ... over the (rank, device) pairs in order;
        ``meta.rank_devices`` maps each lane id back to ``(rank, device id)`` and ``meta.gpus`` names
        it ``"rank r · GPU d[ · name]"`` (for display only: nothing parses it back);
      * ``pid`` becomes a process id numbered 1, 2, ... over the (rank, pid) pairs, and
        ``global_tid`` is rebuilt from it (``pid << 24 | tid``, nsys's layout), so
        correlation-id joins (keyed by pid) and NVTX thread lanes stay per rank; ``meta.rank_pids``
        maps it back to ``(rank, pid)``;
      * NVTX mark names get the prefix ``"rank r · "``: dispatch marks of different ranks are never
        mixed into one dispatch sequence (dispatch analysis needs a single rank).
    Rows keep their order within a rank; ranks follow each other in the order given.

    Args:
        bundles: the ranks' bundles (at least one).
        files: file name per rank for ``meta.source`` (default ``rank0, rank1, ...``).
        ranks: the rank number of each bundle (default: its position; see ``declared_ranks``).

    Returns:
        A TraceBundle with the canonical schemas plus the ``rank`` column, ``meta.format ==
        "nsys-ranks"``, ``meta.rank_devices`` and ``meta.rank_pids``.

    Raises:
        TraceFormatError: no bundles, too many, or two bundles given the same rank.
    """
    if not bundles:
        raise TraceFormatError("no traces to merge as ranks")
    if len(bundles) > MAX_RANKS:
        raise TraceFormatError(f"{len(bundles)} traces: at most {MAX_RANKS} ranks can be merged into one view")
    files = list(files) if files is not None else [f"rank{r}" for r in range(len(bundles))]
    ranks = list(ranks) if ranks is not None else list(range(len(bundles)))
    if len(set(ranks)) != len(ranks):
        raise TraceFormatError("two traces are given the same rank: " + ", ".join(map(str, ranks)))
    keys = ("kernels", "api_calls", "nvtx_ranges", "nvtx_marks", "memops", "graph_launches")
    parts: dict[str, list[pd.DataFrame]] = {k: [] for k in keys}
    gpus: dict[int, str] = {}
    rank_devices: dict[int, tuple[int, int]] = {}
    rank_pids: dict[int, tuple[int, int]] = {}
    tables: set[str] = set()
    warnings: list[str] = []
    thread_names: dict[int, str] = {}  # merged global_tid -> name
    dropped = 0
    for rank, b, name in zip(ranks, bundles, files):
        devices = (
            set(b.kernels["device_id"].tolist())
            | set(b.memops["device_id"].tolist())
            | set(b.graph_launches["device_id"].tolist())
            | set(b.meta.gpus)
        )
        lane_of = {}
        for d in sorted(devices):
            lane_of[d] = len(rank_devices)
            rank_devices[lane_of[d]] = (rank, d)
            gpus[lane_of[d]] = rank_label(rank, d, b.meta.gpus.get(d, ""))
        pids = set()
        for f in (b.kernels, b.api_calls, b.nvtx_ranges, b.nvtx_marks):
            pids.update(f["pid"].tolist())
        pid_of = {}
        for p in sorted(pids):
            pid_of[p] = len(rank_pids) + 1
            rank_pids[pid_of[p]] = (rank, p)

        def lanes(series: pd.Series, lane_of=lane_of) -> np.ndarray:  # this rank's maps
            return series.map(lane_of).to_numpy(dtype=np.int64)

        def procs(series: pd.Series, pid_of=pid_of) -> np.ndarray:
            return series.map(pid_of).to_numpy(dtype=np.int64)

        def threads(frame: pd.DataFrame) -> np.ndarray:
            return (procs(frame["pid"]) << 24) | (frame["tid"].to_numpy(dtype=np.int64) & 0xFFFFFF)

        k = b.kernels
        parts["kernels"].append(k.assign(device_id=lanes(k["device_id"]), pid=procs(k["pid"]), rank=rank))
        a = b.api_calls
        parts["api_calls"].append(a.assign(global_tid=threads(a), pid=procs(a["pid"]), rank=rank))
        r = b.nvtx_ranges
        parts["nvtx_ranges"].append(r.assign(global_tid=threads(r), pid=procs(r["pid"]), rank=rank))
        m = b.nvtx_marks
        parts["nvtx_marks"].append(
            m.assign(
                global_tid=threads(m),
                pid=procs(m["pid"]),
                rank=rank,
                name=(f"rank {rank} · " + m["name"].astype(str)).astype(object) if len(m) else m["name"].astype(object),
            )
        )
        parts["memops"].append(b.memops.assign(device_id=lanes(b.memops["device_id"]), rank=rank))
        g = b.graph_launches
        parts["graph_launches"].append(g.assign(device_id=lanes(g["device_id"]), rank=rank))
        tables.update(b.meta.tables)
        warnings.extend(f"rank {rank} ({name}): {w}" for w in b.meta.warnings)
        dropped += b.meta.dropped_zero_ts_kernels
        thread_names.update(
            {
                (pid_of[(int(g) >> 24) & 0xFFFFFF] << 24) | (int(g) & 0xFFFFFF): n
                for g, n in b.meta.thread_names.items()
                if (int(g) >> 24) & 0xFFFFFF in pid_of
            }
        )
    schemas = {
        "kernels": KERNELS,
        "api_calls": API_CALLS,
        "nvtx_ranges": NVTX_RANGES,
        "nvtx_marks": NVTX_MARKS,
        "memops": MEMOPS,
        "graph_launches": GRAPH_LAUNCHES,
    }
    frames = {}
    for key, schema in schemas.items():
        # Categories differ per rank: concatenate as strings, then conform back to the schema.
        pieces = [p.astype({c: object for c, t in schema.items() if t == "category"}) for p in parts[key]]
        merged = pd.concat(pieces, ignore_index=True)
        frames[key] = conform(merged, schema).assign(rank=merged[RANK_COLUMN].to_numpy(dtype=np.int64))
    versions = sorted({b.meta.nsys_version for b in bundles if b.meta.nsys_version})
    unanalysed: dict[str, int] = {}  # other accelerators' events, summed over the ranks
    for b in bundles:
        for what, n in b.meta.unanalysed_device:
            unanalysed[what] = unanalysed.get(what, 0) + n
    meta = TraceMeta(
        source=" + ".join(files),
        format=RANKS_FORMAT,
        nsys_version=", ".join(versions),
        schema_version=", ".join(sorted({b.meta.schema_version for b in bundles if b.meta.schema_version})),
        gpus=gpus,
        tables=tuple(sorted(tables)),
        dropped_zero_ts_kernels=dropped,
        warnings=tuple(warnings),
        rank_devices=rank_devices,
        rank_pids=rank_pids,
        accounts=merge_accounts([b.meta.accounts for b in bundles]),
        unanalysed_device=tuple(unanalysed.items()),
        thread_names=thread_names,
    )
    return TraceBundle(meta=meta, **frames)


def rank_nvtx_stats(bundle: TraceBundle, rename=None) -> pd.DataFrame:
    """NVTX statistics of a merged bundle, rank by rank: each rank's ranges against that rank's own
    kernels only (never another rank's GPU work on an unrelated clock), and same-named ranges of
    different ranks kept apart as ``"rank r · name"``.

    Args:
        bundle: a ``merge_ranks`` bundle.
        rename: optional function applied to each range name first (e.g. the table's grouping of
            unique-per-call names).

    Returns:
        NVTX_STATS frame (as ``summary.nvtx_stats``), ranks in order, each rank's rows in that
        function's order.
    """
    from dashboard.analysis.kernel_times import kernel_busy_union
    from dashboard.analysis.summary import nvtx_stats

    ranges, kernels = bundle.nvtx_ranges, bundle.kernels
    parts = []
    for rank in sorted(set(ranges[RANK_COLUMN].tolist())):
        r = ranges[ranges[RANK_COLUMN] == rank]
        names = r["name"].astype(str)
        if rename is not None:
            names = names.map(rename)
        r = r.assign(name=(f"rank {rank} · " + names).astype(object))
        parts.append(nvtx_stats(r, kernel_busy_union(kernels[kernels[RANK_COLUMN] == rank])))
    if not parts:
        return nvtx_stats(ranges.iloc[:0], kernel_busy_union(kernels.iloc[:0]))
    return pd.concat(parts, ignore_index=True)


def per_rank_gpu_time(bundle: TraceBundle, work: pd.DataFrame | None = None) -> pd.DataFrame:
    """GPU time of each rank of a merged bundle (``merge_ranks``), each on its own clock.

    A span or union across ranks would mix clocks that are not comparable, so the ranks view
    reports these instead. Kernels as ``kernel_times.timed_kernels`` counts them (no invalid rows), or
    ``work`` (a ``gpu_time.gpu_work`` frame, e.g. kernels + memcpy/memset) when given.

    Returns:
        Frame ``rank`` (int64), ``span_ns`` (first kernel start to last kernel end of that rank),
        ``busy_ns`` (union of that rank's kernels over all its GPUs), ``utilisation_pct``
        (busy / span x 100; 0 for an empty span), one row per rank with kernels, by rank.
    """
    from dashboard.analysis.gpu_time import ALL_GPUS, gpu_time, gpu_work

    if work is None:
        work = gpu_work(bundle.kernels, include_graphs=False)
    rows = []
    for rank, w in _by_rank(work, bundle.meta.rank_devices):
        t = gpu_time(w)  # its all-GPU row is this rank's union over its own window
        a = t[t["device_id"] == ALL_GPUS].iloc[0]
        rows.append((rank, int(a["window_ns"]), int(a["busy_ns"]), float(a["utilisation_pct"])))
    return pd.DataFrame(
        {
            "rank": pd.Series([r[0] for r in rows], dtype="int64"),
            "span_ns": pd.Series([r[1] for r in rows], dtype="int64"),
            "busy_ns": pd.Series([r[2] for r in rows], dtype="int64"),
            "utilisation_pct": pd.Series([r[3] for r in rows], dtype="float64"),
        }
    )


def _by_rank(work: pd.DataFrame, rank_devices: dict[int, tuple[int, int]]):
    """(rank, that rank's rows of a gpu_work frame) by rank, the rank of each device lane read from
    the merged bundle's ``meta.rank_devices`` table."""
    lane_rank = {lane: rank for lane, (rank, _d) in rank_devices.items()}
    for rank, w in work.groupby(work["device_id"].map(lane_rank), sort=True):
        yield int(rank), w


def gpu_time_per_rank(bundle: TraceBundle, work: pd.DataFrame) -> pd.DataFrame:
    """``gpu_time`` for a merged bundle, rank by rank: each device's idle and utilisation are measured
    in its own rank's GPU window (never a window spanning two clocks), and there is no ALL_GPUS row.

    Args:
        bundle: a ``merge_ranks`` bundle. work: frame from ``gpu_time.gpu_work`` on it.

    Returns:
        GPU_TIME frame, one row per device lane, sorted by lane id.
    """
    from dashboard.analysis.gpu_time import ALL_GPUS, gpu_time

    kernels = bundle.kernels
    parts = []
    for rank, w in _by_rank(work, bundle.meta.rank_devices):
        t = gpu_time(w, kernels[kernels[RANK_COLUMN] == rank])
        parts.append(t[t["device_id"] != ALL_GPUS])
    if not parts:
        return gpu_time(work.iloc[:0], kernels.iloc[:0])
    return pd.concat(parts, ignore_index=True).sort_values("device_id", kind="stable").reset_index(drop=True)
