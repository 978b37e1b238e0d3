"""GPU busy / idle per device and for all GPUs, kernel time sums, and kernel -> API-call joins.

Definitions (the dashboard's, stated once in the README's "Definitions"; the seed summary keeps
kernel rows only, see summary_contract.md):

* GPU work: the intervals that count as busy, chosen by the busy source (``BUSY_SOURCES``): kernel
  rows; CUDA graph launches traced at graph level (no kernel rows: one opaque interval each);
  memcpy/memset. Kernel ends are clipped for same-stream overruns (``kernel_times.kernel_end_ns``).
* kernel time: Σ (end − start) of kernels. Concurrent streams add up, so it can exceed the span;
  it is never shown as utilisation.
* busy (per GPU): length of the union of that GPU's work intervals, over its own window (its first
  start to its last end); idle = window − busy; utilisation = busy / window.
* any GPU busy: the union over all GPUs, within the all-GPU window (first start to last end of any
  GPU); with one GPU it equals that GPU's busy.
* Multi-GPU headline utilisation: the mean of the per-GPU utilisations, with the lowest GPU named.
* streams: distinct ``kernel_times.STREAM_KEY`` (device, process, context, stream) among the kernels.

::

    dev 0  stream 7 [0,80) [90,100)     busy 90   window [0,100)  idle 10   90 %
    dev 1  stream 7 [0,80)              busy 80   window [0,80)   idle 0   100 %
    dev 2  stream 7      [10,90)        busy 80   window [10,90)  idle 0   100 %
    any GPU busy        [0,100)         busy 100  window [0,100)  idle 0   100 %   mean per GPU 96.7 %
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard.analysis.intervals import PART_ROWS, union_intervals
from dashboard.analysis.kernel_times import (
    STREAM_KEY,
    kernel_durations_at,
    stream_group_ids,
    timed_kernels,
    usable_kernel_mask,
)

ALL_GPUS = -(1 << 62)  # device_id of the all-GPU ("any GPU busy") row: never a device's id (-1 is "not recorded")

# Busy sources: what counts as GPU work (one choice, applied to every panel and the overview).
BUSY_KERNEL_ROWS = "kernel-rows"  # kernel rows only: the summary contract's definition
BUSY_KERNELS = "kernels"  # kernel rows + CUDA graphs traced at graph level (opaque): the default
BUSY_ALL = "kernels+memops"  # ... + memcpy/memset
BUSY_SOURCES: dict[str, str] = {
    BUSY_KERNEL_ROWS: "kernel rows only",
    BUSY_KERNELS: "kernels + graph-level CUDA graphs",
    BUSY_ALL: "kernels + graph-level CUDA graphs + memcpy/memset",
}

GPU_TIME: dict[str, str] = {
    "device_id": "int64",  # ALL_GPUS for the union over every device
    "kernels": "int64",
    "kernel_sum_ns": "int64",
    "busy_ns": "int64",
    "window_ns": "int64",  # the device's own first start to last end (all GPUs: over every device)
    "idle_ns": "int64",
    "utilisation_pct": "float64",  # NaN ("n/a") when the window is 0
    "streams": "int64",
}


def busy_source_label(busy_source: str, has_graphs: bool = True) -> str:
    """What a busy source counts, in words for legends and hints; without graph-level CUDA graph
    launches in the trace, "kernels" (the kernel rows are all the kernel work there is)."""
    if has_graphs:
        return BUSY_SOURCES[busy_source]
    return "kernels + memcpy/memset" if busy_parts(busy_source)[0] else "kernels"


def busy_parts(busy_source: str) -> tuple[bool, bool]:
    """``(include_memops, include_graphs)`` of a busy source (``BUSY_SOURCES``).

    Raises:
        ValueError: an unknown busy source.
    """
    if busy_source not in BUSY_SOURCES:
        raise ValueError(f"unknown busy source {busy_source!r}; one of {', '.join(BUSY_SOURCES)}")
    return busy_source == BUSY_ALL, busy_source != BUSY_KERNEL_ROWS


def gpu_work(
    kernels: pd.DataFrame,
    memops: pd.DataFrame | None = None,
    graph_launches: pd.DataFrame | None = None,
    *,
    include_memops: bool = False,
    include_graphs: bool = True,
    timed: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The GPU work intervals that count as busy.

    Args:
        kernels: KERNELS frame; rows without timestamps and invalid rows are left out, overrun ends
            are clipped (``kernel_times.timed_kernels``).
        memops: MEMOPS frame, counted when ``include_memops``.
        graph_launches: GRAPH_LAUNCHES frame (graph-level CUDA graph tracing), counted when
            ``include_graphs``: each launch is one opaque interval.
        timed: ``kernel_times.timed_kernels(kernels)`` when the caller keeps it (its columns are then shared).

    Returns:
        Frame (device_id, stream_id, start_ns, end_ns, kind) with kind a categorical of
        ``WORK_KINDS`` ("kernel", "memop", "graph"), in input order per kind; ids keep the frames' integer
        dtypes.
    """
    parts = [_work_part(timed_kernels(kernels) if timed is None else timed, "kernel")]
    if include_memops and memops is not None and not memops.empty:
        parts.append(_work_part(memops, "memop"))
    if include_graphs and graph_launches is not None and not graph_launches.empty:
        parts.append(_work_part(graph_launches, "graph"))
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


WORK_KINDS = pd.Index(["kernel", "memop", "graph"], dtype=object)


def _work_part(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    """One kind's rows of ``gpu_work``: its columns as they are (no copy: a 10M-kernel trace's work frame
    costs its ``kind`` codes) and ``kind`` as a categorical of ``WORK_KINDS``."""
    n = len(frame)
    return pd.DataFrame(
        {
            "device_id": frame["device_id"].to_numpy(),
            "stream_id": frame["stream_id"].to_numpy(),
            "start_ns": frame["start_ns"].to_numpy(np.int64),
            "end_ns": frame["end_ns"].to_numpy(np.int64),
            "kind": pd.Categorical.from_codes(
                np.full(n, WORK_KINDS.get_loc(kind), dtype=np.int8), categories=WORK_KINDS
            ),
        },
        copy=False,
    )


def has_gpu_work(bundle) -> bool:
    """Whether a TraceBundle holds any GPU work row: a kernel, a graph-level CUDA graph launch or a
    memcpy/memset (whatever the busy source counts). Without one, GPU times are unmeasured, never 0."""
    return not (bundle.kernels.empty and bundle.graph_launches.empty and bundle.memops.empty)


def run_has_gpu_work(run) -> bool:
    """``has_gpu_work`` for a run (anything with ``summary`` and ``bundle``, e.g. a LoadedTrace); a summary
    JSON: kernels in its totals. Without any, its GPU times are unmeasured, not 0 (the cards say n/a)."""
    b = getattr(run, "bundle", None)
    if b is None:
        s = run.summary if hasattr(run, "summary") else run
        return int(s.kernel_count) > 0
    return has_gpu_work(b)


def cuda_traced(run) -> bool:
    """Whether CUDA was traced at all in a run (anything with ``summary`` and ``bundle``, e.g. a LoadedTrace):
    any GPU work row (``has_gpu_work``) or CUDA API call; a summary JSON: kernels or CUDA API totals. Without
    it (an NVTX-only trace) the GPU was not measured: its kernel counts, totals and overlaps are unknown,
    where a CUDA-traced run without kernels had an idle GPU (a real 0)."""
    b = getattr(run, "bundle", None)
    if b is None:
        s = run.summary if hasattr(run, "summary") else run
        return int(s.kernel_count) > 0 or not s.api.empty
    # rows of a CUDA kind that were read but all left out (invalid times) still show CUDA was traced
    return (
        has_gpu_work(b) or not b.api_calls.empty or any(a.read > 0 for a in b.meta.accounts if a.kind in CUDA_ROW_KINDS)
    )


CUDA_ROW_KINDS = ("kernels", "CUDA API calls", "memcpy/memset", "CUDA graph launches")  # RowAccount kinds


def work_for_source(bundle, busy_source: str, timed: pd.DataFrame | None = None) -> pd.DataFrame:
    """``gpu_work`` of a TraceBundle for a busy source (``BUSY_SOURCES``); ``timed``: as ``gpu_work``'s."""
    memops, graphs = busy_parts(busy_source)
    return gpu_work(
        bundle.kernels, bundle.memops, bundle.graph_launches, include_memops=memops, include_graphs=graphs, timed=timed
    )


def stream_count(kernels: pd.DataFrame) -> int:
    """Distinct streams with kernels, keyed by ``kernel_times.STREAM_KEY`` (device, process, context,
    stream): two processes on one GPU that both use stream 7 are two streams."""
    g = stream_group_ids(kernels, usable_kernel_mask(kernels))
    return int(g.max()) + 1 if len(g) else 0  # the ids are 0, 1, ... (factorized)


def stream_sharing(kernels: pd.DataFrame) -> tuple[frozenset, frozenset]:
    """Which stream ids ``stream_names`` must qualify: ``(by_pid, by_ctx)``, the (device_id, stream_id)
    keys used by more than one process, and those one process uses in more than one context."""
    # The first row of each stream, from the factorized stream ids (numbered in order of first appearance):
    # a drop_duplicates of the four key columns hashed every row (10M kernels: 0.46 s, the first zoom's wait).
    n = len(kernels)
    g = stream_group_ids(kernels, np.ones(n, dtype=bool))
    first = np.full(int(g.max()) + 1 if n else 0, n, dtype=np.int64)
    np.minimum.at(first, g, np.arange(n))
    keys = kernels[list(STREAM_KEY)].iloc[first]
    per_stream = keys.groupby(["device_id", "stream_id"]).agg(pids=("pid", "nunique"), n=("pid", "size"))
    return (
        frozenset(per_stream.index[per_stream["pids"] > 1].tolist()),
        frozenset(per_stream.index[per_stream["n"] > per_stream["pids"]].tolist()),
    )


def stream_names(
    rows: pd.DataFrame, reference: pd.DataFrame | None = None, sharing: tuple[frozenset, frozenset] | None = None
) -> pd.Series:
    """The name of each row's stream (kernels keyed by ``kernel_times.STREAM_KEY``), for lanes and hovers:
    ``"stream 7"``; ``"pid 200 · stream 7"`` when another process uses stream 7 on the same device;
    ``"pid 200 · ctx 3 · stream 7"`` when one process has that stream id in two contexts.

    Args:
        rows: KERNELS rows to name (e.g. the kernels in view).
        reference: the frame that decides which stream ids are shared (default ``rows``): pass the
            whole trace so a lane keeps its name at every zoom.
        sharing: ``stream_sharing(reference)`` when already computed (then ``reference`` is unused).

    Returns:
        Series of str aligned with ``rows``.
    """
    shared_pid, shared_ctx = sharing or stream_sharing(rows if reference is None else reference)
    out = []
    for dev, pid, ctx, st in zip(
        rows["device_id"].tolist(), rows["pid"].tolist(), rows["context_id"].tolist(), rows["stream_id"].tolist()
    ):
        k = (dev, st)
        parts = (
            ([f"pid {pid}"] if k in shared_pid or k in shared_ctx else [])
            + ([f"ctx {ctx}"] if k in shared_ctx else [])
            + [f"stream {st}"]
        )
        out.append(" · ".join(parts))
    return pd.Series(out, index=rows.index, dtype=object)


def _kernels_per_device(kernels: pd.DataFrame, part_rows: int = PART_ROWS) -> tuple[dict, dict]:
    """``({device id: kernel rows}, {device id: kernel time, ns})``, kernel time from ``kernel_times.kernel_durations``
    (exact int64 sums), a part of the rows at a time."""
    dev = kernels["device_id"].to_numpy()
    ids, codes = None, None
    if len(dev) and dev.dtype.kind in "iu" and int(dev.min()) >= 0 and int(dev.max()) < 1 << 16:
        size = int(dev.max()) + 1  # device ids are small: they index the sums themselves
    else:
        codes, ids = pd.factorize(dev)  # a missing id (-1) counts in a last slot, left out as a grouping leaves it
        codes = np.where(codes < 0, len(ids), codes)
        size = len(ids) + 1
    count = np.zeros(size, np.int64)
    total = np.zeros(size, np.int64)
    for a in range(0, len(dev), part_rows):
        at = (dev if codes is None else codes)[a : a + part_rows]
        count += np.bincount(at, minlength=size)
        np.add.at(total, at, kernel_durations_at(kernels, slice(a, a + part_rows)))
    present = np.flatnonzero(count[: size if ids is None else len(ids)])
    keys = present if ids is None else np.asarray(ids)[present]
    return (
        {k: int(c) for k, c in zip(keys.tolist(), count[present].tolist())},
        {k: int(t) for k, t in zip(keys.tolist(), total[present].tolist())},
    )


def _streams_per_device(kernels: pd.DataFrame, part_rows: int = PART_ROWS) -> pd.Series:
    """Device id -> distinct streams among its timed kernels (a stream is on one device: each stream's rows
    write the same device into its slot)."""
    ok = usable_kernel_mask(kernels)
    columns = [c for c in STREAM_KEY if c in kernels]
    parts = []
    for a in range(0, len(kernels), part_rows):  # each part's distinct streams: 10M kernels hold a few MB at a time
        pick = np.zeros(len(kernels), dtype=bool)
        pick[a : a + part_rows] = ok[a : a + part_rows]
        g = stream_group_ids(kernels, pick)
        if len(g):
            rows = np.flatnonzero(pick)[np.unique(g, return_index=True)[1]]
            parts.append(pd.DataFrame({c: kernels[c].to_numpy()[rows] for c in columns}))
    if not parts:
        return pd.Series([], dtype=np.int64)
    streams = pd.concat(parts, ignore_index=True).drop_duplicates()
    return streams["device_id"].astype(np.int64).value_counts()


def device_unions(work: pd.DataFrame) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Busy union per device (keyed by device id: streams of all devices never mix).

    Returns:
        device id -> ``(starts_ns, ends_ns)``, disjoint and sorted. The expensive step of a
        timeline: compute it once per trace and busy source, then cut windows from it.
    """
    if work.empty:
        return {}
    dev = work["device_id"].to_numpy()
    s, e = work["start_ns"].to_numpy(), work["end_ns"].to_numpy()
    first = dev[0]
    if (dev == first).all():  # one GPU: its union straight from the columns, no copy of them
        return {int(first): union_intervals(s, e)}
    # one device's rows at a time (a grouping would hold every device's copy and index at once)
    out = {}
    for d in np.sort(pd.unique(dev)):
        rows = dev == d
        out[int(d)] = union_intervals(s[rows], e[rows])
    return out


def any_device_union(unions: dict[int, tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The union over every device of ``device_unions``' unions ("any GPU busy"): one device's own union, or
    theirs merged (a few intervals per busy stretch, not a row per kernel)."""
    if not unions:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    if len(unions) == 1:
        return next(iter(unions.values()))
    return union_intervals(
        np.concatenate([u[0] for u in unions.values()]), np.concatenate([u[1] for u in unions.values()])
    )


def gpu_time(
    work: pd.DataFrame,
    kernels: pd.DataFrame | None = None,
    unions: dict[int, tuple[np.ndarray, np.ndarray]] | None = None,
) -> pd.DataFrame:
    """Busy, idle and utilisation per device (each over its own window) and for any GPU.

    Args:
        work: frame from ``gpu_work``.
        kernels: KERNELS frame for the kernel count, kernel time and stream columns (optional).
        unions: each device's busy union of ``work`` (``device_unions``), when the caller keeps them.

    Returns:
        GPU_TIME frame: one row per device with work (sorted by id), then the ALL_GPUS row (busy =
        any GPU busy, window = all-GPU window). Empty (typed) when there is no work.
        ``utilisation_pct`` is NaN when a window is 0.
    """
    if work.empty:
        return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in GPU_TIME.items()})
    unions = device_unions(work) if unions is None else unions
    ws, we = work["start_ns"].to_numpy(), work["end_ns"].to_numpy()
    lo, hi = int(ws.min()), int(we.max())
    window = hi - lo
    ksum = kcount = streams = None
    if kernels is not None:
        kcount, ksum = _kernels_per_device(kernels)
        streams = _streams_per_device(kernels)

    def pct(busy: int, win: int) -> float:
        return 100.0 * busy / win if win > 0 else math.nan

    rows = []
    wdev = work["device_id"].to_numpy()
    for dev in sorted(unions):
        us, ue = unions[dev]
        busy = int((ue - us).sum())
        if len(unions) == 1:
            own = window
        else:
            mine = wdev == dev
            own = int(we[mine].max()) - int(ws[mine].min())
        rows.append(
            (
                int(dev),
                int(kcount.get(dev, 0)) if kcount is not None else 0,
                int(ksum.get(dev, 0)) if ksum is not None else 0,
                busy,
                own,
                own - busy,
                pct(busy, own),
                int(streams.get(dev, 0)) if streams is not None else 0,
            )
        )
    us, ue = any_device_union(unions)
    busy_all = int((ue - us).sum())
    rows.append(
        (
            ALL_GPUS,
            sum(r[1] for r in rows),
            sum(r[2] for r in rows),
            busy_all,
            window,
            window - busy_all,
            pct(busy_all, window),
            sum(r[7] for r in rows),
        )
    )
    return pd.DataFrame(rows, columns=list(GPU_TIME)).astype(GPU_TIME)


@dataclass(frozen=True)
class GpuOverview:
    """The headline GPU figures of one trace for one busy source (see the module's definitions).

    ``mean_utilisation_pct`` and ``lowest_utilisation_pct`` are None ("n/a") without GPU work;
    ``lowest_device`` is None then.
    """

    busy_source: str
    gpus: int  # devices with work
    span_ns: int  # all-GPU window: first start to last end of any GPU's work
    any_busy_ns: int  # union over all GPUs
    any_idle_ns: int  # span - any_busy
    any_utilisation_pct: float | None  # any_busy / span
    mean_utilisation_pct: float | None  # mean over GPUs of busy / own window
    lowest_device: int | None
    lowest_utilisation_pct: float | None
    per_gpu: pd.DataFrame  # GPU_TIME


def gpu_overview(
    work: pd.DataFrame, kernels: pd.DataFrame | None = None, busy_source: str = BUSY_KERNELS
) -> GpuOverview:
    """Span, any-GPU busy/idle and per-GPU utilisation (mean and lowest) of ``gpu_work`` output."""
    return overview_of(gpu_time(work, kernels), busy_source)


def overview_of(t: pd.DataFrame, busy_source: str = BUSY_KERNELS) -> GpuOverview:
    """``gpu_overview`` read off a ``gpu_time`` frame (GPU_TIME) computed already."""
    if t.empty:
        return GpuOverview(busy_source, 0, 0, 0, 0, None, None, None, None, t)
    devs = t[t["device_id"] != ALL_GPUS]
    allrow = t[t["device_id"] == ALL_GPUS].iloc[0]
    util = devs["utilisation_pct"]
    ok = devs[util.notna()]
    mean = float(ok["utilisation_pct"].mean()) if len(ok) else None
    low = ok.sort_values(["utilisation_pct", "device_id"], kind="stable").iloc[0] if len(ok) else None
    any_pct = float(allrow["utilisation_pct"])
    return GpuOverview(
        busy_source,
        len(devs),
        int(allrow["window_ns"]),
        int(allrow["busy_ns"]),
        int(allrow["idle_ns"]),
        None if math.isnan(any_pct) else any_pct,
        mean,
        None if low is None else int(low["device_id"]),
        None if low is None else float(low["utilisation_pct"]),
        t,
    )


def trace_gpu_overview(bundle, busy_source: str = BUSY_KERNELS) -> GpuOverview:
    """``gpu_overview`` of a TraceBundle: what the overview, the Per GPU table, the compare page and
    ``diff`` all show."""
    return gpu_overview(work_for_source(bundle, busy_source), bundle.kernels, busy_source)
