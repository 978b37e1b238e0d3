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
)

RANK_DEVICE_STRIDE = 100  # merged device id = rank * 100 + device id (rank 1 GPU 2 -> 102)
RANK_PID_STRIDE = 10_000_000  # merged pid = rank * 10_000_000 + pid (Linux pids stay below 2**22)
RANK_GLOBAL_SHIFT = 56  # merged global pid/tid = rank << 56 + global id (nsys uses bits 0..55)
MAX_RANKS = 127  # keeps rank << 56 inside int64
RANKS_FORMAT = "nsys-ranks"
RANKS_NOTICE = ("Ranks aligned on their own session start; clocks of different hosts are not comparable to the ns. "
                "GPU lanes are “rank r · GPU d” (device id r×100 + d), threads of rank r show pid "
                "r×10,000,000 + pid; dispatch marks are per rank (“rank r · …”), so the dispatch and phase "
                "analysis needs one rank opened alone.")

RANK_TABLE: dict[str, str] = {
    "rank": "int64",
    "file": "object",
    "span_ns": "int64",  # gpu_activity_span: first kernel start to last kernel end
    "busy_ns": "int64",  # union of kernel intervals
    "idle_ns": "int64",  # span - busy
    "utilisation_pct": "float64",  # 100 * busy / span (0.0 without kernels)
    "kernel_count": "int64",
    "top_kernel": "object",  # short name with the largest total kernel time ("" without kernels)
    "top_kernel_ns": "int64",
    "slowest": "bool",
}


def rank_device_id(rank: int, device_id: int) -> int:
    """Device id of ``device_id`` of ``rank`` in a merged bundle: ``rank * 100 + device_id``."""
    return rank * RANK_DEVICE_STRIDE + device_id


def rank_label(rank: int, device_id: int, name: str = "") -> str:
    """GPU name shown for a merged device: ``"rank 1 · GPU 0 · NVIDIA H100"`` (name optional)."""
    return f"rank {rank} · GPU {device_id}" + (f" · {name}" if name else "")


def rank_table(summaries: Sequence[Summary | None], files: Sequence[str]) -> pd.DataFrame:
    """Combined per-rank table of a multi-rank run.

    Args:
        summaries: one Summary per input file, in rank order; ``None`` for a file that failed
            (it gets no row, and the other ranks keep their numbers).
        files: the file names, same length and order.

    Returns:
        Frame with the columns and dtypes of ``RANK_TABLE``, one row per summary, in rank order.
        ``slowest`` is True on exactly one row (none when there are no rows): the rank with the
        longest GPU activity span (first kernel start to last kernel end on its own clock; in a
        synchronised run the other ranks wait for it); ties go to the larger busy union, then
        the lower rank.

    Raises:
        ValueError: ``summaries`` and ``files`` differ in length (a caller bug).
    """
    if len(summaries) != len(files):
        raise ValueError(f"{len(summaries)} summaries for {len(files)} files")
    rows = []
    for rank, (s, name) in enumerate(zip(summaries, files)):
        if s is None:
            continue
        top = s.top_kernels.iloc[0] if len(s.top_kernels) else None
        rows.append({
            "rank": rank, "file": str(name), "span_ns": int(s.gpu_activity_span_ns),
            "busy_ns": int(s.gpu_busy_union_ns), "idle_ns": int(s.gpu_idle_within_span_ns),
            "utilisation_pct": float(s.utilisation_pct), "kernel_count": int(s.kernel_count),
            "top_kernel": "" if top is None else str(top["name"]),
            "top_kernel_ns": 0 if top is None else int(top["total_ns"]), "slowest": False,
        })
    table = pd.DataFrame(rows, columns=list(RANK_TABLE)).astype(RANK_TABLE)
    if len(table):
        order = table.sort_values(["span_ns", "busy_ns", "rank"], ascending=[False, False, True], kind="stable")
        table.loc[order.index[0], "slowest"] = True
    return table


def _shift_global(values: pd.Series, rank: int) -> np.ndarray:
    return values.to_numpy(dtype=np.int64) + np.int64(rank << RANK_GLOBAL_SHIFT)


def merge_ranks(bundles: Sequence[TraceBundle], files: Sequence[str] | None = None) -> TraceBundle:
    """One bundle holding every rank, so the single-trace views work on it unchanged.

    Rank ``r`` is ``bundles[r]``. Times are kept as they are: each nsys export is already on its
    own session timeline (t = 0 = its capture start), so every rank is aligned on its own origin;
    the clocks of different hosts are not comparable, and nothing here pretends they are.

    Ids are rewritten so that no two ranks share one:
      * ``device_id`` -> ``rank * 100 + device_id`` (kernels, memops, graph launches); ``meta.gpus``
        names every merged device ``"rank r · GPU d[ · name]"``;
      * ``pid`` -> ``rank * 10_000_000 + pid`` and ``global_pid``/``global_tid`` -> ``(rank << 56) +
        id`` (kernels, CUDA API calls, NVTX), so correlation-id joins (keyed by pid) and NVTX
        thread lanes stay per rank;
      * NVTX mark names get the prefix ``"rank r · "``: dispatch marks of different ranks are
        never mixed into one dispatch sequence (dispatch analysis needs a single rank).
    Rows keep their order within a rank; ranks follow each other (rank 0 first).

    Args:
        bundles: the ranks' bundles (at least one, at most 127).
        files: file name per rank for ``meta.source`` (default ``rank0, rank1, ...``).

    Returns:
        A TraceBundle with the canonical schemas and ``meta.format == "nsys-ranks"``.

    Raises:
        TraceFormatError: no bundles, more than 127, or a device id of 100 or more (it would
            collide with the next rank's lanes).
    """
    if not bundles:
        raise TraceFormatError("no traces to merge as ranks")
    if len(bundles) > MAX_RANKS:
        raise TraceFormatError(f"{len(bundles)} traces: at most {MAX_RANKS} ranks can be merged into one view")
    files = list(files) if files is not None else [f"rank{r}" for r in range(len(bundles))]
    parts: dict[str, list[pd.DataFrame]] = {k: [] for k in
                                           ("kernels", "api_calls", "nvtx_ranges", "nvtx_marks", "memops",
                                            "graph_launches")}
    gpus: dict[int, str] = {}
    tables: set[str] = set()
    dropped = 0
    for rank, b in enumerate(bundles):
        devices = set(b.kernels["device_id"].tolist()) | set(b.memops["device_id"].tolist()) \
            | set(b.graph_launches["device_id"].tolist()) | set(b.meta.gpus)
        if devices and (min(devices) < 0 or max(devices) >= RANK_DEVICE_STRIDE):
            raise TraceFormatError(f"{files[rank]}: device id {max(devices)} is outside 0..{RANK_DEVICE_STRIDE - 1}: "
                                   "cannot be shown as a rank lane")
        for d in sorted(devices):
            gpus[rank_device_id(rank, d)] = rank_label(rank, d, b.meta.gpus.get(d, ""))
        pid_add = np.int64(rank * RANK_PID_STRIDE)
        dev_add = np.int64(rank * RANK_DEVICE_STRIDE)
        k = b.kernels
        parts["kernels"].append(k.assign(device_id=k["device_id"].to_numpy() + dev_add,
                                         global_pid=_shift_global(k["global_pid"], rank),
                                         pid=k["pid"].to_numpy() + pid_add))
        a = b.api_calls
        parts["api_calls"].append(a.assign(global_tid=_shift_global(a["global_tid"], rank),
                                           pid=a["pid"].to_numpy() + pid_add))
        r = b.nvtx_ranges
        parts["nvtx_ranges"].append(r.assign(global_tid=_shift_global(r["global_tid"], rank),
                                             pid=r["pid"].to_numpy() + pid_add))
        m = b.nvtx_marks
        parts["nvtx_marks"].append(m.assign(global_tid=_shift_global(m["global_tid"], rank),
                                            pid=m["pid"].to_numpy() + pid_add,
                                            name=(f"rank {rank} · " + m["name"].astype(str)).astype(object)
                                            if len(m) else m["name"].astype(object)))
        parts["memops"].append(b.memops.assign(device_id=b.memops["device_id"].to_numpy() + dev_add))
        g = b.graph_launches
        parts["graph_launches"].append(g.assign(device_id=g["device_id"].to_numpy() + dev_add))
        tables.update(b.meta.tables)
        dropped += b.meta.dropped_zero_ts_kernels
    schemas = {"kernels": KERNELS, "api_calls": API_CALLS, "nvtx_ranges": NVTX_RANGES, "nvtx_marks": NVTX_MARKS,
               "memops": MEMOPS, "graph_launches": GRAPH_LAUNCHES}
    frames = {}
    for key, schema in schemas.items():
        # Categories differ per rank: concatenate as strings, then conform back to the schema.
        pieces = [p.astype({c: object for c, t in schema.items() if t == "category"}) for p in parts[key]]
        frames[key] = conform(pd.concat(pieces, ignore_index=True), schema)
    versions = sorted({b.meta.nsys_version for b in bundles if b.meta.nsys_version})
    meta = TraceMeta(
        source=" + ".join(files), format=RANKS_FORMAT, nsys_version=", ".join(versions),
        schema_version=", ".join(sorted({b.meta.schema_version for b in bundles if b.meta.schema_version})),
        gpus=gpus, tables=tuple(sorted(tables)), dropped_zero_ts_kernels=dropped)
    return TraceBundle(meta=meta, **frames)


def per_rank_gpu_time(bundle: TraceBundle, work: pd.DataFrame | None = None) -> pd.DataFrame:
    """GPU time of each rank of a merged bundle (``merge_ranks``), each on its own clock.

    A span or union across ranks would mix clocks that are not comparable, so the ranks view
    reports these instead. Kernels as ``summary.timed_kernels`` counts them (no invalid rows), or
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
    for rank, w in _by_rank(work):
        t = gpu_time(w)  # its all-GPU row is this rank's union over its own window
        a = t[t["device_id"] == ALL_GPUS].iloc[0]
        rows.append((rank, int(a["window_ns"]), int(a["busy_ns"]), float(a["utilisation_pct"])))
    return pd.DataFrame({"rank": pd.Series([r[0] for r in rows], dtype="int64"),
                         "span_ns": pd.Series([r[1] for r in rows], dtype="int64"),
                         "busy_ns": pd.Series([r[2] for r in rows], dtype="int64"),
                         "utilisation_pct": pd.Series([r[3] for r in rows], dtype="float64")})


def _by_rank(work: pd.DataFrame):
    """(rank, that rank's rows of a gpu_work frame) by rank, for a merged bundle's device ids."""
    for rank, w in work.groupby(work["device_id"] // RANK_DEVICE_STRIDE, sort=True):
        yield int(rank), w

def gpu_time_per_rank(work: pd.DataFrame, kernels: pd.DataFrame) -> pd.DataFrame:
    """``gpu_time`` for a merged bundle, rank by rank: each device's idle and utilisation are measured
    in its own rank's GPU window (never a window spanning two clocks), and there is no ALL_GPUS row.

    Args:
        work: frame from ``gpu_time.gpu_work`` on the merged bundle. kernels: its KERNELS frame.

    Returns:
        GPU_TIME frame, one row per device, sorted by merged device id.
    """
    from dashboard.analysis.gpu_time import ALL_GPUS, gpu_time

    parts = []
    for rank, w in _by_rank(work):
        k = kernels[kernels["device_id"] // RANK_DEVICE_STRIDE == rank]
        t = gpu_time(w, k)
        parts.append(t[t["device_id"] != ALL_GPUS])
    if not parts:
        return gpu_time(work.iloc[:0], kernels.iloc[:0])
    return pd.concat(parts, ignore_index=True).sort_values("device_id", kind="stable").reset_index(drop=True)
